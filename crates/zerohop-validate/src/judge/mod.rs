//! Judgements: what each kind of capture says about the data path, as
//! findings in the doctor's report format.
//!
//! A judgement is declared like a doctor check ([`declare_judgement!`]):
//! an ID (`VAL` and three digits; the hundreds digit is the group), a
//! kebab-case name, a group, a severity and a doc comment that is its
//! documentation. Each finding cites the capture and line it rests on.
//!
//! There is one entry point per kind of capture ([`judge_nccl`],
//! [`judge_perftest`], …), each a function of the capture's text and the
//! [`Expectations`] the text does not carry; [`judge`] detects the kind
//! first. `zerohop validate parse` calls [`judge`] on files; a later
//! `validate run` feeds collected logs to the same functions.

mod fabric;
mod gds;
mod input;
mod nccl;
mod perftest;
mod topology;

use std::fmt;

use zerohop_core::{Evidence, Finding, Location, Remediation, Report, RuleInfo, Status};

use crate::kind::{self, Kind};
use crate::nccl::collective::Collective;
use crate::notes::Notes;

pub use fabric::{NFS_TRANSPORT, ROCE_GID_V2};
pub use gds::{
    GDS_BACKENDS, GDS_COMPAT_MODE, GDS_GPU_SUPPORT, GDS_IOMMU, GDS_PLATFORM, GDSIO_THROUGHPUT,
    GDSIO_VERIFY, NVFS_ERRORS,
};
pub use input::CAPTURE_PARTIAL;
pub use nccl::{
    NCCL_BELOW_RDMA, NCCL_BUSBW, NCCL_BUSBW_DROP, NCCL_COMPLETION_ERROR, NCCL_GDR_DISTANCE,
    NCCL_GDR_HCA, NCCL_GPUDIRECT_CHANNELS, NCCL_LINK_TYPE, NCCL_NO_RDMA_DEVICE, NCCL_TESTS_ABORTED,
    NCCL_TRANSPORT, NCCL_WARNING, NCCL_WRONG_RESULTS,
};
pub use perftest::{
    PERFTEST_BANDWIDTH, PERFTEST_FAILED, PERFTEST_GPU_MEMORY, PERFTEST_LATENCY, PERFTEST_MTU,
    PERFTEST_ROCE_GID,
};
pub use topology::TOPO_GPU_NIC_DISTANCE;

/// The groups of judgements, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// Whether the capture could be read.
    Input,
    /// nccl-tests and `NCCL_DEBUG` logs.
    Nccl,
    /// perftest.
    Perftest,
    /// `nvidia-smi topo -m`.
    Topology,
    /// GPUDirect Storage: gdscheck, gdsio, nvidia-fs.
    Gds,
    /// RDMA fabric settings seen by other tools: GIDs, NFS mounts.
    Fabric,
}

impl Group {
    /// Every group, in report order.
    pub const ALL: [Group; 6] = [
        Group::Input,
        Group::Nccl,
        Group::Perftest,
        Group::Topology,
        Group::Gds,
        Group::Fabric,
    ];

    /// The kebab-case name used in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Group::Input => "input",
            Group::Nccl => "nccl",
            Group::Perftest => "perftest",
            Group::Topology => "topology",
            Group::Gds => "gds",
            Group::Fabric => "fabric",
        }
    }

    /// The hundreds digit of its judgements' IDs (`VAL1xx` for NCCL).
    pub const fn hundreds(self) -> u8 {
        match self {
            Group::Input => 0,
            Group::Nccl => 1,
            Group::Perftest => 2,
            Group::Topology => 3,
            Group::Gds => 4,
            Group::Fabric => 5,
        }
    }
}

/// The ID prefix of every judgement.
pub const ID_PREFIX: &str = "VAL";

/// A judgement: its metadata and its group.
#[derive(Debug)]
pub struct Judgement {
    /// ID, name, severity and documentation.
    pub info: RuleInfo,
    /// Its group.
    pub group: Group,
}

/// Declares a judgement. The doc comment is its documentation and must
/// have the headings `## What it checks`, `## Why it matters`,
/// `## How to fix` and `## Example`, the last showing one of the captures
/// of `tests/judgements.rs` and what it gives (tests enforce them).
#[macro_export]
macro_rules! declare_judgement {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident = {
            id: $id:literal,
            name: $name:literal,
            group: $group:ident,
            severity: $severity:ident $(,)?
        };
    ) => {
        ::zerohop_core::declare_rule! {
            $(#[doc = $doc])*
            $vis static $ident: $crate::judge::Judgement = {
                id: $id,
                name: $name,
                group: $crate::judge::Group::$group.name(),
                severity: $severity,
                group: $crate::judge::Group::$group,
            };
        }
    };
}

/// Every judgement, in report order.
pub static JUDGEMENTS: &[&Judgement] = &[
    &CAPTURE_PARTIAL,
    &NCCL_TRANSPORT,
    &NCCL_NO_RDMA_DEVICE,
    &NCCL_GDR_HCA,
    &NCCL_GDR_DISTANCE,
    &NCCL_GPUDIRECT_CHANNELS,
    &NCCL_COMPLETION_ERROR,
    &NCCL_WARNING,
    &NCCL_WRONG_RESULTS,
    &NCCL_BUSBW,
    &NCCL_TESTS_ABORTED,
    &NCCL_BUSBW_DROP,
    &NCCL_BELOW_RDMA,
    &NCCL_LINK_TYPE,
    &PERFTEST_BANDWIDTH,
    &PERFTEST_LATENCY,
    &PERFTEST_GPU_MEMORY,
    &PERFTEST_FAILED,
    &PERFTEST_MTU,
    &PERFTEST_ROCE_GID,
    &TOPO_GPU_NIC_DISTANCE,
    &GDS_PLATFORM,
    &GDS_GPU_SUPPORT,
    &GDS_IOMMU,
    &GDS_COMPAT_MODE,
    &GDS_BACKENDS,
    &GDSIO_THROUGHPUT,
    &GDSIO_VERIFY,
    &NVFS_ERRORS,
    &ROCE_GID_V2,
    &NFS_TRANSPORT,
];

/// Every judgement's metadata, for `zerohop checks` and `zerohop explain`.
pub fn rules() -> impl Iterator<Item = &'static RuleInfo> {
    JUDGEMENTS.iter().map(|judgement| &judgement.info)
}

/// The share of the expected bandwidth a run must reach to pass, unless
/// told otherwise.
pub const DEFAULT_MIN_EFFICIENCY: f64 = 0.8;

/// Below this share of the expected bandwidth a run fails (between it and
/// the minimum efficiency, it warns).
pub const FAIL_EFFICIENCY: f64 = 0.5;

/// The link layer of a fabric's rails, as the cluster intent names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand (`linkType: IB`).
    InfiniBand,
    /// Ethernet, RDMA over RoCE v2 (`linkType: ETH`).
    Ethernet,
}

impl LinkLayer {
    /// The name NCCL gives it in `NET/IB : Using [0]mlx5_0:1/RoCE`
    /// (`NCCL_IB_LLSTR` in `src/transport/net_ib.cc`, NVIDIA/nccl
    /// v2.27.3-1: `IB` or `RoCE`).
    pub const fn nccl_name(self) -> &'static str {
        match self {
            LinkLayer::InfiniBand => "IB",
            LinkLayer::Ethernet => "RoCE",
        }
    }
}

/// The fabric of a node pool as the cluster intent (`--intent`) or the
/// plan rendered from it (`--plan`) describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFabric {
    /// How evidence names it: `intent cluster.yaml, pool gpu`.
    pub source: String,
    /// NIC ports (rails) per node.
    pub rails: u32,
    /// GPUs per node, when known.
    pub gpus_per_node: Option<u32>,
    /// The rails' link layer, when they all share one.
    pub link_layer: Option<LinkLayer>,
    /// The line rate of one rail in Gb/s, when the intent gives one for
    /// every rail (`linkRateGbps`; their mean when they differ).
    pub link_rate_gbps: Option<u32>,
}

/// What the captures do not say and the judgements need: the fabric's
/// link rate, its rails, the GPUs per node, the collective.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectations {
    /// Link rate of one rail (one NIC port), Gb/s. Without it, the planned
    /// fabric's rate, else NCCL logs give it (`speed=` of NET/IB devices,
    /// NCCL 2.23+); perftest never does.
    pub link_rate_gbps: Option<f64>,
    /// RDMA NICs (rails) NCCL uses per node. Without it, the NET/IB devices
    /// of an NCCL log are counted.
    pub rails: Option<u32>,
    /// GPUs (ranks) per node. Without it, the device list of nccl-tests
    /// or NCCL's `localRanks` are used.
    pub gpus_per_node: Option<u32>,
    /// The collective of an nccl-tests output that does not name it
    /// (nccl-tests before 2.17).
    pub collective: Option<Collective>,
    /// The share of the expected bandwidth that passes (0 to 1).
    pub min_efficiency: f64,
    /// The fabric the cluster intent plans; the options above override it.
    pub planned: Option<PlannedFabric>,
}

impl Expectations {
    /// GPUs per node from the command line, else from the plan.
    pub fn gpus_per_node(&self) -> Option<u32> {
        self.gpus_per_node
            .or_else(|| self.planned.as_ref().and_then(|p| p.gpus_per_node))
    }
}

impl Default for Expectations {
    fn default() -> Expectations {
        Expectations {
            link_rate_gbps: None,
            rails: None,
            gpus_per_node: None,
            collective: None,
            min_efficiency: DEFAULT_MIN_EFFICIENCY,
            planned: None,
        }
    }
}

/// One capture to judge: its name (the file as the user named it, or a
/// pod and container for collected logs) and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capture<'a> {
    /// How findings name it.
    pub name: &'a str,
    /// Its content.
    pub text: &'a str,
}

/// A capture whose kind could not be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrecognised {
    /// The capture's name.
    pub name: String,
}

impl fmt::Display for Unrecognised {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: not the output of a tool zerohop reads (nccl-tests, NCCL_DEBUG, perftest, nvidia-smi topo -m, gdscheck -p, gdsio, nvidia-fs stats, show_gids, mount)",
            self.name
        )
    }
}

impl std::error::Error for Unrecognised {}

/// Detects the kind of `capture` and judges it.
///
/// # Errors
/// [`Unrecognised`] when no tool's lines are in it.
pub fn judge(
    capture: &Capture<'_>,
    expectations: &Expectations,
) -> Result<(Kind, Vec<Finding>), Unrecognised> {
    let kind = kind::detect(capture.text).ok_or_else(|| Unrecognised {
        name: capture.name.to_owned(),
    })?;
    Ok((kind, judge_as(kind, capture, expectations)))
}

/// Judges `capture` as a capture of `kind`.
pub fn judge_as(kind: Kind, capture: &Capture<'_>, expectations: &Expectations) -> Vec<Finding> {
    match kind {
        Kind::Nccl => judge_nccl(capture, expectations),
        Kind::Perftest => judge_perftest(capture, expectations),
        Kind::NvidiaSmiTopo => judge_topology(capture),
        Kind::Gdscheck => judge_gdscheck(capture),
        Kind::Gdsio => judge_gdsio(capture),
        Kind::NvfsStats => judge_nvfs_stats(capture),
        Kind::ShowGids => judge_show_gids(capture),
        Kind::Mounts => judge_mounts(capture),
    }
}

/// Judges nccl-tests output and `NCCL_DEBUG` messages.
pub fn judge_nccl(capture: &Capture<'_>, expectations: &Expectations) -> Vec<Finding> {
    let output = crate::nccl::parse(capture.text);
    let mut findings = vec![input::partial(capture, Kind::Nccl, &output.notes)];
    findings.extend(nccl::judge(capture, &output, expectations));
    findings
}

/// Judges perftest output.
pub fn judge_perftest(capture: &Capture<'_>, expectations: &Expectations) -> Vec<Finding> {
    let output = crate::perftest::parse(capture.text);
    let mut findings = vec![input::partial(capture, Kind::Perftest, &output.notes)];
    findings.extend(perftest::judge(capture, &output, expectations));
    findings
}

/// Judges `nvidia-smi topo -m` output on its own.
pub fn judge_topology(capture: &Capture<'_>) -> Vec<Finding> {
    let matrix = crate::smi_topo::parse(capture.text);
    let mut findings = vec![input::partial(capture, Kind::NvidiaSmiTopo, &matrix.notes)];
    findings.extend(topology::judge(capture, &matrix));
    findings
}

/// Judges `gdscheck -p` output.
pub fn judge_gdscheck(capture: &Capture<'_>) -> Vec<Finding> {
    let check = crate::gds::gdscheck::parse(capture.text);
    let mut findings = vec![input::partial(capture, Kind::Gdscheck, &check.notes)];
    findings.extend(gds::judge_gdscheck(capture, &check));
    findings
}

/// Judges gdsio output.
pub fn judge_gdsio(capture: &Capture<'_>) -> Vec<Finding> {
    let output = crate::gds::gdsio::parse(capture.text);
    let mut findings = vec![input::partial(capture, Kind::Gdsio, &output.notes)];
    findings.extend(gds::judge_gdsio(capture, &output));
    findings
}

/// Judges `/proc/driver/nvidia-fs/stats`.
pub fn judge_nvfs_stats(capture: &Capture<'_>) -> Vec<Finding> {
    let stats = crate::gds::nvfs_stats::parse(capture.text);
    let mut findings = vec![input::partial(capture, Kind::NvfsStats, &stats.notes)];
    findings.extend(gds::judge_nvfs(capture, &stats));
    findings
}

/// Judges `show_gids` output.
pub fn judge_show_gids(capture: &Capture<'_>) -> Vec<Finding> {
    let gids = crate::gids::parse(capture.text);
    let mut findings = vec![input::partial(capture, Kind::ShowGids, &gids.notes)];
    findings.extend(fabric::judge_gids(capture, &gids));
    findings
}

/// Judges `mount` output.
pub fn judge_mounts(capture: &Capture<'_>) -> Vec<Finding> {
    let mounts = crate::mounts::parse(capture.text);
    let mut findings = vec![input::partial(capture, Kind::Mounts, &mounts.notes)];
    findings.extend(fabric::judge_mounts(capture, &mounts));
    findings
}

/// The report of a run of `zerohop validate`: findings grouped in report
/// order (a stable sort keeps each group's captures and lines in order).
pub fn report(mut findings: Vec<Finding>, target: impl Into<String>) -> Report {
    let rank = |finding: &Finding| {
        Group::ALL
            .iter()
            .position(|g| g.name() == finding.group)
            .unwrap_or(Group::ALL.len())
    };
    findings.sort_by_key(rank);
    Report::new("validate", target, findings)
}

/// A finding under construction.
#[derive(Debug, Clone)]
pub(crate) struct Verdict(Finding);

impl Judgement {
    /// A finding of this judgement about `subject` of `capture`.
    pub(crate) fn verdict(
        &self,
        capture: &Capture<'_>,
        status: Status,
        subject: &str,
        message: impl Into<String>,
    ) -> Verdict {
        let subject = if subject.is_empty() {
            capture.name.to_owned()
        } else {
            format!("{} {subject}", capture.name)
        };
        Verdict(Finding {
            id: self.info.id.to_owned(),
            name: self.info.name.to_owned(),
            group: self.info.group.to_owned(),
            status,
            severity: self.info.severity,
            subject,
            message: message.into(),
            evidence: Vec::new(),
            remediation: None,
            blocked_by: None,
            location: None,
            object: None,
        })
    }

    /// This judgement's problem status (its severity's): `fail` for an
    /// error, `warn` for a warning, `info` for information.
    pub(crate) fn problem(&self) -> Status {
        self.info.severity.status()
    }
}

impl Verdict {
    /// Evidence from line `line` of the capture; the first one also places
    /// the finding at that line.
    pub(crate) fn at(
        mut self,
        capture: &Capture<'_>,
        line: u32,
        value: impl Into<String>,
    ) -> Verdict {
        let source = if line == 0 {
            capture.name.to_owned()
        } else {
            format!("{}:{line}", capture.name)
        };
        if self.0.location.is_none() && line > 0 {
            self.0.location = Some(Location {
                file: capture.name.to_owned(),
                line,
                column: 1,
                end_line: None,
                end_column: None,
            });
        }
        self.0.evidence.push(Evidence::new(source, value));
        self
    }

    /// Evidence from outside the capture (an option, a default).
    pub(crate) fn evidence(
        mut self,
        source: impl Into<String>,
        value: impl Into<String>,
    ) -> Verdict {
        self.0.evidence.push(Evidence::new(source, value));
        self
    }

    /// How to fix it.
    pub(crate) fn fix(mut self, remediation: Remediation) -> Verdict {
        self.0.remediation = Some(remediation);
        self
    }

    /// The finding.
    pub(crate) fn done(self) -> Finding {
        self.0
    }
}

/// Gb/s or GB/s with the precision people read: `181.5`, `9.61`, `0.045`.
pub(crate) fn rate(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.1}")
    } else if value >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// A ratio as a percentage: `93%`.
pub(crate) fn percent(ratio: f64) -> String {
    format!("{:.0}%", ratio * 100.0)
}

/// The status of a measured bandwidth against an expected one.
pub(crate) fn grade(ratio: f64, expectations: &Expectations, judgement: &Judgement) -> Status {
    if ratio >= expectations.min_efficiency {
        Status::Pass
    } else if ratio >= FAIL_EFFICIENCY {
        Status::Warn
    } else {
        judgement.problem()
    }
}

/// The notes of a parse as evidence lines: `FILE:LINE` and what was not read.
pub(crate) fn note_evidence(mut verdict: Verdict, capture: &Capture<'_>, notes: &Notes) -> Verdict {
    for note in notes.items().iter().take(8) {
        verdict = verdict.at(capture, note.line, note.what.clone());
    }
    verdict
}

/// A finding of `judgement` about a test that left no capture to judge:
/// `zerohop validate run` when a pod was never scheduled, failed before it
/// printed anything, or the test could not be created at all.
pub fn without_capture(
    judgement: &Judgement,
    subject: &str,
    status: Status,
    message: impl Into<String>,
    fix: &str,
) -> Finding {
    let capture = Capture {
        name: subject,
        text: "",
    };
    judgement
        .verdict(&capture, status, "", message)
        .fix(Remediation::new(fix))
        .done()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn any_text_judged_as_any_kind_gives_well_formed_findings(
            text in "((# nThread |#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong|h:1:2 \\[0\\] NCCL (INFO|WARN) |NET/IB : Using \\[0\\]m:1/(IB|RoCE)(/SHARP)? |NET/IB : Using \\[0\\]=\\{\\[0\\] m:1/RoCE, |NET/Socket : Using \\[0\\]ib0:1<0> |Channel 0/0 : 0\\[0\\] -> 1\\[0\\] via NET/IB/0|GPU Direct RDMA Disabled for HCA 0 'm'|# Avg bus bandwidth : |#bytes #iterations BW peak\\[Gb/sec\\] |GPU0 |NIC0 | X |PIX|IoType: |Throughput: |Reads : err=|v2|[0-9. -]|\\PC){0,20}\n){0,8}",
            rate in proptest::option::of(0.0f64..1000.0),
            rails in proptest::option::of(0u32..64),
        ) {
            let expectations = Expectations {
                link_rate_gbps: rate,
                rails,
                collective: Some(Collective::AllToAll),
                planned: Some(PlannedFabric {
                    source: "intent i.yaml, pool p".to_owned(),
                    rails: rails.unwrap_or(1),
                    gpus_per_node: None,
                    link_layer: Some(LinkLayer::InfiniBand),
                    link_rate_gbps: Some(0),
                }),
                ..Expectations::default()
            };
            let capture = Capture { name: "x", text: &text };
            for kind in Kind::ALL {
                for finding in judge_as(kind, &capture, &expectations) {
                    prop_assert!(!finding.message.is_empty());
                    prop_assert!(!finding.status.is_problem() || finding.remediation.is_some(), "{finding:?}");
                    prop_assert!(!finding.message.contains("NaN") && !finding.message.contains("inf%"), "{finding:?}");
                }
            }
        }
    }

    #[test]
    fn an_unrecognised_capture_is_an_error_that_names_it() {
        let err = judge(
            &Capture {
                name: "notes.txt",
                text: "nothing a tool printed\n",
            },
            &Expectations::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("notes.txt: not the output"),
            "{err}"
        );
    }

    #[test]
    fn rates_and_percentages_read_well() {
        assert_eq!(rate(181.456), "181.5");
        assert_eq!(rate(9.614), "9.61");
        assert_eq!(rate(0.0454), "0.045");
        assert_eq!(percent(0.934), "93%");
    }
}
