//! `zerohop topo`: each GPU's nearest RDMA NIC on the PCIe tree, the
//! distance classes of `nvidia-smi topo -m`, and the `NCCL_IB_HCA` value
//! that pins NCCL to those NICs; with `--compare FILE`, the pairs where a
//! saved `nvidia-smi topo -m` disagrees.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use zerohop_core::Document;
use zerohop_core::exit::ExitCode;
use zerohop_core::render::printable::printable;
use zerohop_doctor::render;
use zerohop_doctor::topology::{Distance, Topology, TopologyDocument};
use zerohop_host::Facts;
use zerohop_known::nccl;

use zerohop_validate::compare::{self, Comparison};
use zerohop_validate::smi_topo;

use crate::commands::doctor;
use crate::commands::host::HostArgs;
use crate::commands::validate::read_capture;
use crate::error::CliError;
use crate::output::{self, Format};

/// Arguments of `zerohop topo`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    host: HostArgs,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(&[Format::Human, Format::Json, Format::Svg, Format::Html]))]
    format: Format,
    /// Compare with what `nvidia-smi topo -m` printed on the same host
    /// (saved to FILE, `-` for standard input): lists the GPU/NIC pairs
    /// whose classes differ and exits 1 when any does.
    #[arg(long, value_name = "FILE")]
    compare: Option<PathBuf>,
}

/// Runs `zerohop topo`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    // The capture is read first: a missing file is a usage error, found
    // before the host is read.
    let matrix = match &args.compare {
        Some(path) => Some(smi_topo::parse(&read_capture(path).map_err(|why| {
            CliError::usage(format!("{}: {why}", printable(&path.display().to_string())))
        })?)),
        None => None,
    };
    let root = args.host.open()?;
    let facts = Facts::collect(&root);
    // The drawing's title: the host's name, else the root it was read from.
    let host = doctor::host_name(&root).unwrap_or_else(|| facts.root.clone());
    let topology = Topology::of(&facts);
    let comparison = matrix.map(|matrix| compare::compare(&topology, &matrix));
    output::to_stdout(|out| match args.format {
        Format::Json => {
            let body = Body {
                topology: topology.document(&facts.root),
                comparison: comparison.as_ref(),
            };
            serde_json::to_writer_pretty(&mut *out, &Document::new("topo", &body))?;
            writeln!(out)
        }
        Format::Svg => out.write_all(render::topology_svg(&facts, &topology, &host).as_bytes()),
        Format::Html => out.write_all(
            render::page::topology(&render::topology_svg(&facts, &topology, &host), &host)
                .as_bytes(),
        ),
        // Human, the only other value `--format` parses here.
        _ => {
            human(&topology, out)?;
            match &comparison {
                Some(comparison) => {
                    writeln!(out, "\ncompared with nvidia-smi topo -m:")?;
                    compare::render(comparison, out)
                }
                None => Ok(()),
            }
        }
    })
    .context("failed to write the topology")?;
    Ok(exit_code(comparison.as_ref()))
}

/// The fields of the topology document, with the comparison when one was
/// asked for.
#[derive(serde::Serialize)]
struct Body<'a> {
    #[serde(flatten)]
    topology: TopologyDocument<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    comparison: Option<&'a Comparison>,
}

/// 1 when the saved matrix disagrees with sysfs on any pair, as `diff`
/// does, and when no pair could be compared (a matrix of another host, or
/// of GPUs alone): a gate must not pass a matrix it could not check. 0
/// otherwise.
fn exit_code(comparison: Option<&Comparison>) -> i32 {
    match comparison {
        Some(comparison) if !comparison.disagreements.is_empty() || comparison.compared == 0 => {
            ExitCode::FAILED
        }
        _ => ExitCode::OK,
    }
}

/// The table, the NICs and `NCCL_IB_HCA`. Names and addresses come from the
/// host tree, so each goes through [`printable`]: a device name holding an
/// escape sequence is shown, not obeyed, by the terminal.
fn human(topology: &Topology, out: &mut dyn Write) -> std::io::Result<()> {
    if topology.pairings.is_empty() {
        return match &topology.pci_unreadable {
            Some(gap) => writeln!(
                out,
                "unknown: {}: {}, so whether this host has nvidia gpus is unknown",
                printable(&gap.path),
                printable(&gap.reason)
            ),
            None => writeln!(out, "no nvidia gpu on the pci bus"),
        };
    }
    if topology.nics.is_empty() {
        return match &topology.rdma_unreadable {
            Some(gap) => writeln!(
                out,
                "{} nvidia gpu(s); unknown: cannot list the rdma devices ({})",
                topology.pairings.len(),
                printable(&gap.reason)
            ),
            None => writeln!(
                out,
                "{} nvidia gpu(s), no rdma device backed by a pci function",
                topology.pairings.len()
            ),
        };
    }
    let show = |d: Option<Distance>| d.map_or("?", Distance::as_str);
    let node = |n: Option<i32>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
    let names: Vec<String> = topology
        .nics
        .iter()
        .map(|nic| printable(&nic.name).into_owned())
        .collect();
    let nic_width = names.iter().map(String::len).max().unwrap_or(4).max(4);
    let mut header = format!(
        "{:<14}{:<6}{:<w$}  {:<6}",
        "GPU",
        "NUMA",
        "NIC",
        "DIST",
        w = nic_width
    );
    for name in &names {
        header.push_str(&format!("  {name:<nic_width$}"));
    }
    writeln!(out, "{}", header.trim_end())?;
    for pairing in &topology.pairings {
        let mut row = format!(
            "{:<14}{:<6}{:<w$}  {:<6}",
            printable(&pairing.gpu),
            node(pairing.gpu_numa_node),
            printable(pairing.nic.as_deref().unwrap_or("-")),
            show(pairing.distance),
            w = nic_width
        );
        for distance in &pairing.all {
            row.push_str(&format!("  {:<w$}", show(*distance), w = nic_width));
        }
        writeln!(out, "{}", row.trim_end())?;
    }
    writeln!(out)?;
    for (nic, name) in topology.nics.iter().zip(&names) {
        writeln!(
            out,
            "{name:<nic_width$}  {}  numa {}  port {}",
            printable(&nic.pci),
            node(nic.numa_node),
            nic.port,
        )?;
    }
    writeln!(out)?;
    writeln!(out, "NCCL_IB_HCA={}", printable(&topology.nccl_ib_hca))?;
    let down: Vec<String> = topology
        .nics
        .iter()
        .filter(|nic| {
            !nic.active
                && topology
                    .pairings
                    .iter()
                    .any(|p| p.nic.as_ref() == Some(&nic.name))
        })
        .map(|nic| format!("{}:{}", printable(&nic.name), nic.port))
        .collect();
    if !down.is_empty() {
        writeln!(
            out,
            "warning: {} of the paired nic(s) have no ACTIVE port ({}): nccl cannot use them until a port comes up (see RDMA004)",
            down.len(),
            down.join(", ")
        )?;
    }
    if let Some(level) = topology.nccl_net_gdr_level() {
        writeln!(
            out,
            "warning: {} of {} gpu(s) reach their nic only beyond {}, nccl's default {}: nccl turns gpudirect rdma off for them and stages their traffic through host memory",
            topology.beyond_default_gdr().count(),
            topology.pairings.len(),
            nccl::NET_GDR_LEVEL_DEFAULT,
            nccl::NET_GDR_LEVEL,
        )?;
        writeln!(
            out,
            "{}={level}   # lets nccl use gpudirect rdma through the cpu; peer-to-peer through the root complex can be slower than staging, so compare all_reduce_perf with and without it",
            nccl::NET_GDR_LEVEL,
        )?;
    }
    writeln!(
        out,
        "legend: PIX one pcie switch, PXB several switches, PHB host bridge, NODE same numa node, SYS across sockets, ? unknown"
    )
}
