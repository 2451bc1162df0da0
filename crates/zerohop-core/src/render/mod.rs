//! Renderers that turn a [`Report`](crate::Report) into output.
//!
//! Renderers always emit ANSI styles; the binary writes through a stream that
//! strips them when standard output is not a terminal or `NO_COLOR` is set.

pub mod human;
pub mod json;
pub mod printable;
pub mod sarif;
pub mod snippet;
mod style;
