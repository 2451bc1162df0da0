//! The doctor's human report on a real host with many alike ports: the
//! class tree of an H100 node (`../shared/corpus/sys_class_infiniband_h100_gpud`,
//! see its SOURCES.md) whose eight InfiniBand and bond ports show the same
//! saturated error counters. The human report gives that verdict one line
//! and its fix one step; the JSON report keeps every finding.

use std::path::Path;
use std::process::{Command, Output};

use zerohop_testkit::shared_data::{copy_tree, corpus};

fn doctor(root: &Path, format: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["doctor", "--only", "RDMA008", "--format", format, "--root"])
        .arg(root)
        .output()
        .expect("zerohop runs")
}

#[test]
fn alike_ports_of_a_real_h100_share_a_line_and_a_step() {
    let Some(corpus) = corpus() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    copy_tree(
        &corpus.join("sys_class_infiniband_h100_gpud/sys-class-infiniband-h100.0"),
        &root.path().join("sys/class/infiniband"),
    );

    let json = doctor(root.path(), "json");
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let warns: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "warn")
        .map(|f| f["subject"].as_str().unwrap())
        .collect();
    // Every port but mlx5_1 (whose link_downed saturated, a fail) reads
    // excessive_buffer_overrun_errors 15 and port_rcv_errors 14.
    assert_eq!(
        warns,
        [
            "mlx5_0/1",
            "mlx5_4/1",
            "mlx5_5/1",
            "mlx5_6/1",
            "mlx5_7/1",
            "mlx5_8/1",
            "mlx5_9/1",
            "mlx5_bond_0/1"
        ]
    );

    let human = doctor(root.path(), "human");
    let text = String::from_utf8(human.stdout).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  warn") && l.contains("RDMA008"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].contains(
            "mlx5_0/1, mlx5_4/1, mlx5_5/1, mlx5_6/1, mlx5_7/1 and 3 more (8): excessive_buffer_overrun_errors"
        ),
        "{text}"
    );
    assert!(text.contains("the same values for the other 7"), "{text}");
    // The fail and the eight warns: two steps, each fix said once, with
    // the commands for the first port and a word for the others'.
    let plan = &text[text.find("what to fix first").expect("a plan")..];
    assert_eq!(plan.matches(". RDMA008").count(), 2, "{plan}");
    assert_eq!(plan.matches("fix: ").count(), 2, "{plan}");
    assert!(plan.contains("mlxlink -d mlx5_0 "), "{plan}");
    assert!(!plan.contains("mlxlink -d mlx5_4 "), "{plan}");
    assert!(
        plan.contains("(the commands for mlx5_0/1; the other 7 have their own"),
        "{plan}"
    );
    // Every port's commands are in the JSON report.
    let json_text = String::from_utf8(json.stdout).unwrap();
    assert!(json_text.contains("mlxlink -d mlx5_bond_0 "), "{json_text}");
    // The counts are the findings', not the lines'.
    assert!(text.contains("1 fail, 8 warn"), "{text}");
}
