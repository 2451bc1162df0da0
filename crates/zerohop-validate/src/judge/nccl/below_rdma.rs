//! `nccl-busbw-below-rdma`: a multi-node run whose fabric nobody named,
//! held to the slowest RDMA link of its GPU generation.

use zerohop_core::{Finding, Remediation, Status};
use zerohop_known::gpu_fabric::{self, GpuGeneration};

use super::{DEBUG_COMMAND, NCCL_BELOW_RDMA};
use crate::judge::{Capture, Expectations, percent, rate};
use crate::nccl::collective::Collective;
use crate::nccl::log::NcclLog;
use crate::nccl::results::{Row, TestRun};
use crate::text::size_text;

/// The reduction operators of nccl-tests' `redop` column (`src/common.cu`,
/// `test_opnames`, NVIDIA/nccl-tests v2.17.6): a row that names one is not
/// all-gather, broadcast or all-to-all, which print `none`. `sendrecv_perf`
/// prints `sum` too; nccl-tests 2.17 names it (`# Collective test starting:
/// sendrecv_perf`), older versions do not.
const REDUCTIONS: [&str; 6] = ["sum", "prod", "max", "min", "avg", "mulsum"];

/// The finding of `run`; `exact` when `nccl-busbw-low` already judged it
/// against the fabric's own rate.
pub(super) fn judge(
    capture: &Capture<'_>,
    run: &TestRun,
    subject: &str,
    log: &NcclLog,
    expectations: &Expectations,
    exact: bool,
) -> Finding {
    let judgement = &NCCL_BELOW_RDMA;
    let not_applicable = |message: &str| {
        judgement
            .verdict(capture, Status::NotApplicable, subject, message)
            .done()
    };
    let unknown = |message: String| {
        judgement
            .verdict(capture, Status::Unknown, subject, message)
            .fix(fix())
            .done()
    };
    let Some(largest) = run.largest() else {
        return not_applicable("no table rows");
    };
    let hosts = run.hosts();
    let nodes = if hosts.is_empty() {
        log.shape.map(|s| s.nodes)
    } else {
        u32::try_from(hosts.len()).ok()
    };
    if nodes == Some(1) {
        return not_applicable("one node: no traffic crosses the fabric");
    }
    if exact {
        return not_applicable("judged against the fabric's own rate by nccl-busbw-low");
    }
    if log.net_channels.iter().any(|c| c.net == "Socket")
        || log.networks.iter().any(|(_, n)| n == "Socket")
    {
        return not_applicable("nccl-socket-fallback reports the socket transport");
    }
    let Some(nodes) = nodes else {
        return unknown(
            "neither nccl-tests' device list nor NCCL's nNodes is in the capture: whether the run crossed nodes cannot be seen".to_owned(),
        );
    };
    let Some(device) = run.devices.first() else {
        return unknown(
            "no device list (# Using devices): the GPU model, and so the slowest RDMA link it is deployed with, cannot be seen".to_owned(),
        );
    };
    let Some(generation) = gpu_fabric::generation(&device.name) else {
        return unknown(format!(
            "{} is not a GPU of a known RDMA generation: give --link-rate and --rails",
            device.name
        ));
    };
    let ranks_per_node = expectations.gpus_per_node().or_else(|| {
        hosts
            .iter()
            .map(|h| run.devices.iter().filter(|d| d.host == *h).count())
            .max()
            .and_then(|n| u32::try_from(n).ok())
    });
    let reduces = largest
        .redop
        .as_deref()
        .is_some_and(|op| REDUCTIONS.contains(&op));
    let named = run.collective.map(|(_, c)| c).or(expectations.collective);
    let collective = match named {
        Some(collective) => collective,
        // Reduce and send/receive (whose rows print `sum` too) report a
        // busbw equal to their algbw; all-reduce (2(n-1)/n) and
        // reduce-scatter ((n-1)/n) do not once there are more than two
        // ranks (nccl-tests `doc/PERFORMANCE.md`, `src/sendrecv.cu`).
        None if reduces && run.devices.len() > 2 && bus_equals_algorithm(largest) => {
            return unnamed(
                capture,
                subject,
                "the collective is not named and its busbw equals its algbw: reduce carries one link's rate, send/receive has no floor, and the table does not tell them apart",
            );
        }
        // A row that names a reduction is all-reduce, reduce-scatter or
        // reduce, each carrying one link's rate, or, with two ranks, an
        // older nccl-tests' send/receive, which the table cannot tell.
        None if reduces => Collective::AllReduce,
        None => {
            return unnamed(
                capture,
                subject,
                "the collective is not named and its rows reduce nothing: all-gather carries one link's rate, all-to-all has no floor, and the table does not tell them apart",
            );
        }
    };
    if collective.point_to_point() {
        return not_applicable(&format!(
            "no floor for {collective}: nccl-tests runs it as ncclSend/ncclRecv pairs, whose rate NCCL's point-to-point channels set, not the fabric alone"
        ));
    }
    let link = generation.slowest_rdma_gbps;
    let Some(floor) = collective.fabric_busbw(1, link, nodes, ranks_per_node.unwrap_or(0)) else {
        return unknown(format!(
            "no expectation for {collective} without the ranks per node: give --gpus-per-node"
        ));
    };
    let measured = largest.busbw();
    let at = format!(
        "busbw {} GB/s at {}",
        rate(measured),
        size_text(largest.size)
    );
    let ratio = measured / floor;
    let status = if ratio >= expectations.min_efficiency {
        Status::Pass
    } else {
        judgement.problem()
    };
    let mut message = format!(
        "{at} across {nodes} nodes is {} of the {} GB/s one {link:.0} Gb/s link carries, the slowest RDMA link taken for {} GPUs",
        percent(ratio),
        rate(floor),
        generation.architecture
    );
    if status.is_problem() {
        message.push_str(": ");
        message.push_str(&reason(log));
    }
    let mut verdict = judgement
        .verdict(capture, status, subject, message)
        .at(capture, largest.line, at)
        .at(
            capture,
            device.line,
            format!("{} on {}", device.name, hosts.join(", ")),
        )
        .evidence("slowest RDMA link", described(generation));
    if status.is_problem() {
        verdict = verdict.fix(fix());
    }
    verdict.done()
}

/// What the log shows of the transport of a run this slow.
fn reason(log: &NcclLog) -> String {
    let disabled = log
        .environment
        .iter()
        .any(|(_, name, value)| name == "NCCL_IB_DISABLE" && value == "1");
    if disabled {
        "NCCL_IB_DISABLE=1 turned RDMA off".to_owned()
    } else if log.messages == 0 {
        "without NCCL_DEBUG=INFO the capture cannot tell a fallback to TCP (NET/Socket, IPoIB) from RDMA running below its link rate".to_owned()
    } else if log.net_channels.is_empty() && log.networks.is_empty() {
        "the log names no network or channel (NCCL_DEBUG_SUBSYS without INIT and NET): the transport cannot be seen".to_owned()
    } else {
        "the log shows an RDMA transport, so the fabric or GPUDirect RDMA is slower than the slowest link taken for this GPU".to_owned()
    }
}

/// Whether a row's busbw is its algbw, as for reduce and send/receive
/// (factor 1), within the rounding of two printed decimals.
fn bus_equals_algorithm(row: &Row) -> bool {
    let measure = &row.in_place;
    measure.algbw > 0.0 && (measure.busbw / measure.algbw - 1.0).abs() < 0.02
}

/// The verdict on a run whose collective neither the capture nor the
/// options name, when its table leaves a collective without a floor open.
fn unnamed(capture: &Capture<'_>, subject: &str, message: &str) -> Finding {
    NCCL_BELOW_RDMA
        .verdict(capture, Status::Unknown, subject, message)
        .fix(
            Remediation::new("name the collective the capture ran")
                .command("zerohop validate parse --collective all_gather nccl.log"),
        )
        .done()
}

fn described(generation: &GpuGeneration) -> String {
    format!(
        "{} at {:.0} Gb/s ({})",
        generation.architecture, generation.slowest_rdma_gbps, generation.reference
    )
}

fn fix() -> Remediation {
    Remediation::new("rerun with NCCL_DEBUG=INFO to see the transport, and give the fabric (--link-rate and --rails, or --intent) to judge the run against it exactly")
        .command(DEBUG_COMMAND)
        .command("zerohop validate parse --intent cluster.yaml nccl.log")
}
