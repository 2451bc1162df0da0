//! `docs/metrics.md` lists exactly the metric families the agent can
//! serve: a family added without its documentation, or documentation
//! left for a family that is gone, fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use zerohop_agent::counters::Sample;
use zerohop_agent::counters::nfs::{self, MountSample, ProtocolSums};
use zerohop_agent::counters::rdma::{self, PortRef, PortSample};
use zerohop_agent::metrics::{self, ApiCall, Format, Live};
use zerohop_agent::snapshot::Snapshot;
use zerohop_cluster::api::ApiError;
use zerohop_core::{Finding, Report, Severity, Status};

/// The `# TYPE` names of a classic exposition.
fn families(text: &[u8]) -> BTreeSet<String> {
    String::from_utf8_lossy(text)
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split(' ').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_metric_family_is_documented_and_every_documented_one_exists() {
    // A pass with findings and capabilities, a sample with every counter.
    let report = Report::new(
        "doctor",
        "/host",
        vec![finding("RDMA004", "rdma"), finding("GPU003", "gpu")],
    );
    let snapshot = Snapshot::completed(
        "n1",
        1,
        Timestamp::UNIX_EPOCH,
        Duration::ZERO,
        report,
        Default::default(),
    );
    let sample = Sample {
        taken_at: Timestamp::UNIX_EPOCH,
        duration: Duration::ZERO,
        ports: vec![PortSample {
            port: PortRef {
                device: "mlx5_0".into(),
                port: 1,
            },
            state: Some(4),
            values: (0..rdma::SPECS.len()).map(|i| (i, 1)).collect(),
        }],
        mounts: vec![MountSample {
            mount_point: "/mnt".into(),
            export: "srv:/x".into(),
            protocols: BTreeMap::from([(
                "rdma".to_owned(),
                ProtocolSums {
                    transports: 1,
                    common: vec![Some(1); nfs::COMMON.len()],
                    rdma: vec![Some(1); nfs::RDMA.len()],
                },
            )]),
        }],
        failures: 0,
    };
    // A failed call, whose status has a family of its own.
    let calls = Live::default();
    calls.api_failed(
        ApiCall::Condition,
        &ApiError {
            code: Some(503),
            message: "the API server answered 503 and asks to retry after 5s".into(),
            retry_after: Some(Duration::from_secs(5)),
        },
    );
    let live = metrics::encode_live("n1", &calls);
    let counters = metrics::encode_counters("n1", &sample);
    let text = metrics::assemble(Format::Classic, &[&live, snapshot.exposition(), &counters]);
    let served = families(&text);

    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md"),
    )
    .unwrap();
    // The first column of every table row names a family.
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|line| line.strip_prefix("| `zerohop_"))
        .filter_map(|rest| rest.split('`').next())
        .map(|name| format!("zerohop_{name}"))
        .collect();
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&served).collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/metrics.md: {undocumented:?}"
    );
    assert!(
        stale.is_empty(),
        "in docs/metrics.md but never served: {stale:?}"
    );
}

fn finding(id: &str, group: &str) -> Finding {
    Finding {
        id: id.into(),
        name: "x".into(),
        group: group.into(),
        status: Status::Pass,
        severity: Severity::Error,
        subject: String::new(),
        message: "m".into(),
        evidence: vec![],
        remediation: None,
        blocked_by: None,
        location: None,
        object: None,
    }
}
