//! The drawing and the report page of a large host, against the doctor's
//! other renderer of the same report.
//!
//! The host is the synthetic one of `full_pass` (2,080 PCI functions,
//! 2,064 RDMA devices), kept by it in `ZEROHOP_BENCH_TREE`:
//!
//! ```sh
//! ZEROHOP_BENCH_TREE=/dev/shm/zh-big cargo bench -p zerohop-doctor --bench full_pass
//! ZEROHOP_BENCH_TREE=/dev/shm/zh-big cargo bench -p zerohop-doctor --bench drawing
//! ```
//!
//! It reads the host once, runs the checks once, then times, interleaved
//! over 31 rounds: the topology and its SVG drawing (`topo --format svg`
//! less the reading), the doctor's HTML page around it (`doctor --format
//! html` less the reading and the checks), and the JSON report of the
//! same findings (`doctor --format json`'s renderer), the comparison.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use zerohop_doctor::render::{self, page};
use zerohop_doctor::topology::Topology;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};

const ROUNDS: usize = 31;

fn main() {
    zerohop_host::reader::serve_or_enable();
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let Some(tree) = std::env::var_os("ZEROHOP_BENCH_TREE").map(PathBuf::from) else {
        eprintln!("set ZEROHOP_BENCH_TREE to a host tree kept by the full_pass bench");
        return;
    };
    let root = HostRoot::at(&tree).unwrap();
    let start = Instant::now();
    let facts = Facts::collect(&root);
    let collect = start.elapsed();
    let report = zerohop_doctor::run(&facts, &Profile::default(), &Selection::all());
    let (mut draw, mut html, mut json) = (Vec::new(), Vec::new(), Vec::new());
    let (mut svg_bytes, mut page_bytes, mut json_bytes) = (0, 0, 0);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let topology = Topology::of(&facts);
        let svg = render::topology_svg(&facts, &topology, "synthetic");
        draw.push(start.elapsed());
        svg_bytes = svg.len();

        let start = Instant::now();
        let page = page::doctor(&report, &svg, "synthetic");
        html.push(start.elapsed());
        page_bytes = page.len();

        let start = Instant::now();
        let mut out = Vec::new();
        zerohop_core::render::json::write(&report, &mut out).unwrap();
        json.push(start.elapsed());
        json_bytes = out.len();
    }
    println!(
        "host: {} pci functions, {} rdma devices, {} findings; read once in {:.2?}",
        facts.pci.list().len(),
        facts.rdma.list().len(),
        report.findings.len(),
        collect
    );
    for (name, times, bytes) in [
        ("topology + svg drawing", &mut draw, svg_bytes),
        ("doctor html page", &mut html, page_bytes),
        ("json report (comparison)", &mut json, json_bytes),
    ] {
        times.sort();
        let median: Duration = times[times.len() / 2];
        println!(
            "{name:<26} median {median:>10.2?}  fastest {:>10.2?}  slowest {:>10.2?}  {bytes} bytes",
            times[0],
            times[times.len() - 1]
        );
    }
}
