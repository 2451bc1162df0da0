//! The kernel and memory checks on real boot command lines and hugepage
//! trees from `../shared/corpus` (see its SOURCES.md).

mod support;

use support::{evidence, place};

use zerohop_core::Status;
use zerohop_doctor::profile::HugepagesExpectation;
use zerohop_doctor::{Profile, Selection};

/// The CSIT Grace and Icelake testbeds request
/// `hugepagesz=1G hugepages=32 hugepagesz=2M hugepages=32768`: 32 pages of
/// 1 GiB. KRN002 and CONF003 quote those parameters in their order, as the
/// kernel pairs them, never regrouped by key (which reads as 32 × 2 MiB).
#[test]
fn csit_hugepage_parameters_are_quoted_in_their_order() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    for capture in [
        "proc_cmdline_grace_iommu_passthrough_hugepages_csit.txt",
        "proc_cmdline_icelake_intel_iommu_on_iommu_pt_hugepages_csit.txt",
    ] {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), &corpus, capture, "proc/cmdline");
        let profile = Profile {
            hugepages: Some(HugepagesExpectation {
                size_kib: 1 << 20,
                pages: 32,
                from: None,
            }),
            ..Profile::default()
        };
        let selection = Selection::parse(["KRN002", "CONF003"]).unwrap();
        let report = support::doctor_with(dir.path(), &profile, &selection);
        for id in ["KRN002", "CONF003"] {
            let finding = support::findings(&report, id)[0];
            assert_eq!(
                evidence(finding, "/proc/cmdline"),
                Some(
                    "default_hugepagesz=2M hugepagesz=1G hugepages=32 hugepagesz=2M hugepages=32768"
                ),
                "{capture} {id}: {finding:#?}"
            );
        }
        // 32 pages of 1 GiB are requested; the pool itself is not in the
        // capture.
        let krn002 = support::findings(&report, "KRN002")[0];
        assert_ne!(krn002.status, Status::Fail, "{capture}: {}", krn002.message);
    }
}

/// The CSIT Grace testbed isolates `1-71` with `isolcpus=1-71` alone: an
/// intent that isolates the same CPUs, as the plan renders it, finds that
/// `isolcpus=` lacks `managed_irq`; the lists themselves agree.
#[test]
fn csit_grace_isolation_against_the_intent() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        &corpus,
        "proc_cmdline_grace_iommu_passthrough_hugepages_csit.txt",
        "proc/cmdline",
    );
    let profile = Profile {
        cpus: Some(zerohop_doctor::profile::CpuExpectation {
            isolated: Some("1-71".to_owned()),
            ..Default::default()
        }),
        ..Profile::default()
    };
    let report = support::doctor_with(
        dir.path(),
        &profile,
        &Selection::parse(["CONF004"]).unwrap(),
    );
    let finding = support::findings(&report, "CONF004")[0];
    assert_eq!(finding.status, Status::Fail, "{}", finding.message);
    assert!(
        finding.message.contains("managed_irq"),
        "{}",
        finding.message
    );
    assert!(
        !finding.message.contains("expected 1-71"),
        "{}",
        finding.message
    );
}
