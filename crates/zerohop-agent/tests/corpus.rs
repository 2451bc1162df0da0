//! The counters and the report object on real captures (`../shared`):
//! the `/sys/class/infiniband` tree of an H100 node with its port and RoCE
//! counters, the `mountstats` of an NFSv3 mount over RDMA with
//! `nconnect=16`, and the operators' CRD validator on the objects the agent
//! writes. The captures are read in place, or copied to a temporary
//! directory, never into the repository.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use zerohop_agent::counters::{self, nfs, rdma};
use zerohop_agent::metrics::{self, Format};
use zerohop_agent::report_object::{self, PassInfo};
use zerohop_core::Report;
use zerohop_doctor::verdict;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::parse::mountstats::parse_mountstats;
use zerohop_host::{Facts, HostRoot};
use zerohop_k8s::schema::CrdCatalog;
use zerohop_testkit::shared_data::{copy_tree, corpus};

const H100: &str = "sys_class_infiniband_h100_gpud/sys-class-infiniband-h100.0";

#[test]
fn every_counter_of_a_real_h100_port_has_a_metric() {
    let Some(corpus) = corpus() else { return };
    // Each file of the capture's counters/ and hw_counters/ is read, so a
    // counter the hardware has and the table lacks fails here.
    let known: HashSet<(&str, &str)> = rdma::SPECS.iter().map(|s| (s.dir.name(), s.file)).collect();
    let mut seen = 0;
    for device in fs::read_dir(corpus.join(H100)).unwrap() {
        let port = device.unwrap().path().join("ports/1");
        for dir in ["counters", "hw_counters"] {
            let Ok(entries) = fs::read_dir(port.join(dir)) else {
                continue;
            };
            for entry in entries {
                let name = entry.unwrap().file_name().into_string().unwrap();
                // `lifespan` is how long the driver caches values, not a counter.
                if name == "lifespan" {
                    continue;
                }
                assert!(
                    known.contains(&(dir, name.as_str())),
                    "{dir}/{name} has no metric"
                );
                seen += 1;
            }
        }
    }
    assert!(seen > 300, "{seen} counter files read");
}

#[test]
fn the_sampler_reads_the_ports_of_a_real_h100_node() {
    let Some(corpus) = corpus() else { return };
    let root = tempfile::tempdir().unwrap();
    copy_tree(
        &corpus.join(H100),
        &root.path().join("sys/class/infiniband"),
    );
    let host = HostRoot::at(root.path()).unwrap();
    let facts = Facts::collect(&host);
    let targets = counters::targets(&facts, false, &[]);
    // mlx5_0, 1, 4–9 and the BlueField bond: one port each.
    assert_eq!(targets.ports.len(), 9, "{targets:?}");
    let sample = counters::sample(&host, &targets);
    assert_eq!(sample.failures, 0);
    let mlx5_0 = sample
        .ports
        .iter()
        .find(|p| p.port.device == "mlx5_0")
        .unwrap();
    assert_eq!(mlx5_0.state, Some(4), "`4: ACTIVE`");
    let value = |file: &str| {
        let index = rdma::SPECS.iter().position(|s| s.file == file).unwrap();
        mlx5_0
            .values
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, v)| *v)
    };
    let words: u64 = fs::read_to_string(
        corpus
            .join(H100)
            .join("mlx5_0/ports/1/counters/port_rcv_data"),
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    // The kernel counts data in 4-byte words; the metric is in bytes.
    assert_eq!(value("port_rcv_data"), Some(words * 4));
    let link_downed: u64 = fs::read_to_string(
        corpus
            .join(H100)
            .join("mlx5_0/ports/1/counters/link_downed"),
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    assert_eq!(value("link_downed"), Some(link_downed));
    assert!(value("out_of_buffer").is_some(), "a RoCE hw counter");

    let text = metrics::assemble(Format::Classic, &[&metrics::encode_counters("n1", &sample)]);
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains(&format!(
        "zerohop_infiniband_port_data_received_bytes_total{{node=\"n1\",device=\"mlx5_0\",port=\"1\"}} {}",
        words * 4
    )));
    assert!(text.contains("# TYPE zerohop_infiniband_out_of_buffer_drops_total counter"));
    assert_well_formed(&text);
}

#[test]
fn sixteen_rdma_transports_of_one_mount_are_summed() {
    let Some(corpus) = corpus() else { return };
    let text =
        fs::read_to_string(corpus.join("proc_self_mountstats_nfs3_proto_rdma_nconnect16.txt"))
            .unwrap();
    let stats = parse_mountstats(&text);
    let samples = nfs::sample(&stats, &[]);
    assert_eq!(samples.len(), 1);
    let rdma = &samples[0].protocols["rdma"];
    assert_eq!(rdma.transports, 16, "nconnect=16");
    // The sum of the `sends` field (position 5) over the 16 lines.
    let sends: u64 = text
        .lines()
        .filter(|l| l.trim_start().starts_with("xprt:"))
        .map(|l| l.split_whitespace().nth(7).unwrap().parse::<u64>().unwrap())
        .sum();
    let index = nfs::COMMON
        .iter()
        .position(|s| s.metric == "sends")
        .unwrap();
    assert_eq!(rdma.common[index], Some(sends));
    let chunks: u64 = text
        .lines()
        .filter(|l| l.trim_start().starts_with("xprt:"))
        .map(|l| {
            l.split_whitespace()
                .nth(12)
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(rdma.rdma[0], Some(chunks), "read chunks");
    let counters = counters::Sample {
        taken_at: Timestamp::UNIX_EPOCH,
        duration: Duration::ZERO,
        ports: vec![],
        mounts: samples,
        failures: 0,
    };
    let text = metrics::assemble(
        Format::OpenMetrics,
        &[&metrics::encode_counters("n1", &counters)],
    );
    assert_well_formed(&String::from_utf8(text).unwrap());
}

/// Every sample line is `name{labels} value` with a number, every family
/// has its HELP and TYPE once.
fn assert_well_formed(text: &str) {
    let mut families = HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap();
            assert!(families.insert(name.to_owned()), "{name} twice");
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (_, value) = line.rsplit_once(' ').unwrap();
        assert!(value.parse::<f64>().is_ok(), "{line}");
        assert!(line.contains("node=\"n1\""), "{line}");
    }
}

#[test]
fn the_report_objects_of_real_hosts_are_valid_against_the_shipped_crd() {
    let catalog = CrdCatalog::from_documents([zerohop_known::zerohop_api::report_crd()])
        .expect("the CRD loads");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../zerohop-doctor/tests/fixtures");
    let mut roots: Vec<PathBuf> = vec![
        fixtures.join("NFS001/fail-rdma-option-tcp-transports"),
        fixtures.join("RDMA004/fail-port-init"),
        fixtures.join("GPU003/fail-no-path"),
    ];
    let scratch = tempfile::tempdir().unwrap();
    if let Some(corpus) = corpus() {
        let h100 = scratch.path().join("h100");
        copy_tree(&corpus.join(H100), &h100.join("sys/class/infiniband"));
        roots.push(h100);
    }
    for root in roots {
        let facts = Facts::collect(&HostRoot::at(&root).unwrap());
        let report: Report = zerohop_doctor::run(&facts, &Profile::default(), &Selection::all());
        let verdict = verdict::judge(&report);
        let object = report_object::object(&PassInfo {
            node: "gpu-node-1",
            node_uid: Some("2d3b6c1e-0000-4000-8000-000000000001"),
            verdict: &verdict,
            report: Some(&report),
            finished_at: Timestamp::from_second(1_800_000_000).unwrap(),
            duration: Duration::from_millis(222),
            interval: Duration::from_secs(300),
        });
        let violations = catalog.validate(&object).expect("the kind is known");
        assert!(violations.is_empty(), "{}: {violations:?}", root.display());
        let Value::Array(findings) = &object["findings"] else {
            panic!()
        };
        assert_eq!(
            findings.len() + object["omittedFindings"].as_u64().unwrap() as usize,
            report.summary.fail
                + report.summary.warn
                + report.summary.blocked
                + report.summary.unknown
        );
    }
    // A report whose pass did not finish is valid too.
    let verdict = verdict::not_judged("the pass did not finish within 2m");
    let object = report_object::object(&PassInfo {
        node: "gpu-node-1",
        node_uid: None,
        verdict: &verdict,
        report: None,
        finished_at: Timestamp::UNIX_EPOCH,
        duration: Duration::from_secs(120),
        interval: Duration::from_secs(300),
    });
    assert_eq!(catalog.validate(&object).unwrap(), []);
    // The schema is strict enough to catch a writer's mistake.
    let mut wrong = object.clone();
    wrong["findings"] = serde_json::json!([{ "id": "RDMA004", "status": "failed" }]);
    wrong["condtion"] = serde_json::json!({});
    assert_eq!(catalog.validate(&wrong).unwrap().len(), 2);
}
