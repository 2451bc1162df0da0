//! Root-cause chains: on a host where `ib_core` is missing, the module chain
//! check is the one failure, everything that needs it reports `blocked`
//! with a pointer to it, and the plan of what to fix first names only it.

mod support;

use std::path::Path;

use zerohop_core::Status;
use zerohop_doctor::{Profile, Selection};

fn ib_core_missing() -> zerohop_core::Report {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/RDMA001/fail-ib-core-missing");
    let selection = Selection::parse(["rdma", "qos", "gpu", "sriov"]).unwrap();
    support::doctor_with(&root, &Profile::default(), &selection)
}

#[test]
fn one_root_failure_and_the_rest_blocked() {
    let report = ib_core_missing();
    let fails: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.status == Status::Fail)
        .collect();
    assert_eq!(fails.len(), 1, "{fails:#?}");
    assert_eq!(fails[0].id, "RDMA001");
    assert_eq!(fails[0].subject, "ib_core");
    // mlx5_ib, ib_uverbs, rdma_cm and rdma_ucm are missing too, but only
    // because ib_core is: they are named in the root finding, not raised.
    assert!(
        fails[0]
            .message
            .contains("mlx5_ib, ib_uverbs, rdma_cm, rdma_ucm"),
        "{}",
        fails[0].message
    );

    let blocked: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.status == Status::Blocked)
        .map(|f| f.id.as_str())
        .collect();
    for id in [
        "RDMA002", "RDMA003", "RDMA004", "RDMA005", "RDMA006", "RDMA007", "QOS001", "QOS002",
        "QOS003", "QOS004", "GPU003", "SRIOV003", "SRIOV005",
    ] {
        assert!(blocked.contains(&id), "{id} is not blocked: {blocked:?}");
    }
    for finding in report
        .findings
        .iter()
        .filter(|f| f.status == Status::Blocked)
    {
        assert_eq!(
            finding.blocked_by.as_deref(),
            Some("RDMA001"),
            "{}",
            finding.id
        );
    }
    // The GPU driver itself does not depend on RDMA: it is judged, and passes.
    assert_eq!(support::statuses(&report, "GPU001"), vec![Status::Pass]);
    assert_eq!(support::statuses(&report, "SRIOV002"), vec![Status::Pass]);
}

#[test]
fn fix_first_lists_only_the_root_cause() {
    let report = ib_core_missing();
    let plan: Vec<(&str, &str)> = report
        .fix_first()
        .map(|f| (f.id.as_str(), f.subject.as_str()))
        .collect();
    assert_eq!(plan, vec![("RDMA001", "ib_core")]);
}

#[test]
fn a_dependent_selected_alone_still_shows_its_root_cause() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/RDMA001/fail-ib-core-missing");
    let report = support::doctor_with(
        &root,
        &Profile::default(),
        &Selection::parse(["GPU003"]).unwrap(),
    );
    assert_eq!(support::statuses(&report, "GPU003"), vec![Status::Blocked]);
    // The prerequisite was not asked for, but it failed: it is reported as the cause.
    assert_eq!(support::statuses(&report, "RDMA001"), vec![Status::Fail]);
    assert_eq!(report.fix_first().count(), 1);
}
