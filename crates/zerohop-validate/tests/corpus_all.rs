//! Every capture of `../shared/corpus/outputs` (including ones added after
//! this test was written) is recognised as its tool's output, read whole,
//! and judged into well-formed findings.

mod support;

use support::{capture, captures_under, judge};
use zerohop_validate::judge::CAPTURE_PARTIAL;
use zerohop_validate::kind::{self, Kind};

/// The tool each directory of `outputs/` holds.
fn expected_kind(path: &str) -> Kind {
    let file = path.rsplit('/').next().unwrap_or(path);
    match path.split('/').nth(1) {
        Some("nccl-tests") => Kind::Nccl,
        Some("perftest") => Kind::Perftest,
        Some("nvidia-smi-topo") => Kind::NvidiaSmiTopo,
        Some("gds") if file.starts_with("gdscheck") => Kind::Gdscheck,
        Some("gds") if file.starts_with("gdsio") => Kind::Gdsio,
        Some("gds") if file.starts_with("proc_driver_nvidia-fs") => Kind::NvfsStats,
        Some("rdma-nic") if file.starts_with("show_gids") => Kind::ShowGids,
        Some("rdma-nic") if file.starts_with("mount") => Kind::Mounts,
        _ => panic!("{path}: a capture of a tool this test does not know yet"),
    }
}

#[test]
fn every_capture_is_recognised_read_whole_and_judged() {
    let Some(paths) = captures_under("outputs") else {
        return;
    };
    assert!(paths.len() >= 49, "only {} captures found", paths.len());
    for path in &paths {
        let text = capture(path).unwrap_or_default();
        assert_eq!(kind::detect(&text), Some(expected_kind(path)), "{path}");
        let findings = judge(path, &text);
        // Every capture is read whole: none of them is cut in a way the
        // parsers cannot read past.
        let partial: Vec<_> = findings
            .iter()
            .filter(|f| f.id == CAPTURE_PARTIAL.info.id)
            .collect();
        assert_eq!(partial.len(), 1, "{path}");
        assert_eq!(
            partial[0].status,
            zerohop_core::Status::Pass,
            "{path}: {:#?}",
            partial[0]
        );
        assert!(findings.len() > 1, "{path}: nothing judged");
    }
}

#[test]
fn captures_of_other_tools_are_not_mistaken_for_one() {
    // Command outputs of the corpus that no judgement reads: lspci,
    // ibstat, lsmod, mountinfo, nvme … must not be recognised as a test.
    let Some(paths) = captures_under(".") else {
        return;
    };
    let others: Vec<&String> = paths
        .iter()
        .filter(|p| !p.starts_with("outputs/") && !p.contains('/') && p.ends_with(".txt"))
        .filter(|p| {
            !p.contains("nvidia_smi_topo") && !p.contains("gdscheck") && !p.contains("show_gids")
        })
        .collect();
    assert!(others.len() > 30, "{}", others.len());
    for path in others {
        let text = capture(path).unwrap_or_default();
        assert_eq!(kind::detect(&text), None, "{path}");
    }
}
