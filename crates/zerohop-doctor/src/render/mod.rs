//! The data path drawn and the one-page report: `zerohop topo --format
//! svg|html` and `zerohop doctor --format html`.
//!
//! [`tree`] decides what the drawing shows, [`svg`] where it goes, [`page`]
//! wraps it and a report into one self-contained HTML page. Every string
//! from the host reaches the output through
//! [`zerohop_core::render::html::escape`].

pub mod page;
mod svg;
mod tree;

use zerohop_host::Facts;

use crate::topology::Topology;

/// The topology of the host whose `facts` gave `topology`, drawn as one
/// self-contained SVG document titled `host` (its name, or the root read).
pub fn topology_svg(facts: &Facts, topology: &Topology, host: &str) -> String {
    let tree = tree::Tree::of(facts, topology, host);
    svg::draw(&tree, topology, host)
}
