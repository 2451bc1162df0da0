//! `zerohop topo --compare FILE`: zerohop's classes beside a saved
//! `nvidia-smi topo -m`, on a doctor fixture root (one GPU, `0000:1b:00.0`,
//! behind the same PCIe switch as `mlx5_0`: PIX) and small matrices written
//! here in `nvidia-smi`'s layout.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zerohop-doctor/tests/fixtures/GPU005/pass-same-switch")
}

fn topo(matrix: &str, extra: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("topo.txt");
    fs::write(&file, matrix).unwrap();
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["topo", "--root"])
        .arg(root())
        .arg("--compare")
        .arg(&file)
        .args(extra)
        .output()
        .unwrap()
}

/// The matrix with `class` in the GPU0/NIC0 cell.
fn matrix(class: &str) -> String {
    format!(
        "\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\n\
         GPU0\t X \t{class}\t0-31\t0\n\
         NIC0\t{class}\t X \n\
         \n\
         NIC Legend:\n\
         \n\
         \x20 NIC0: mlx5_0\n"
    )
}

#[test]
fn an_agreeing_matrix_exits_0_and_says_so() {
    let run = topo(&matrix("PIX"), &[]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("all 1 GPU/NIC pairs agree"), "{stdout}");
}

#[test]
fn a_disagreeing_pair_is_listed_with_both_classes_and_exits_1() {
    let run = topo(&matrix("SYS"), &[]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{stdout}");
    let row = stdout
        .lines()
        .find(|line| line.starts_with("GPU0 ") && line.contains("mlx5_0"))
        .unwrap_or_else(|| panic!("no disagreement row in {stdout}"));
    assert!(row.contains("PIX") && row.contains("SYS (line 2)"), "{row}");
    assert!(stdout.contains("1 of 1 GPU/NIC pairs disagree"), "{stdout}");
}

#[test]
fn json_carries_the_comparison_beside_the_topology() {
    let run = topo(&matrix("NODE"), &["--format", "json"]);
    assert_eq!(run.status.code(), Some(1));
    let document: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(document["schema_version"], 1);
    assert_eq!(document["comparison"]["compared"], 1);
    let disagreement = &document["comparison"]["disagreements"][0];
    assert_eq!(disagreement["nic"], "mlx5_0");
    assert_eq!(disagreement["nvidia_smi"], "NODE");
}

#[test]
fn a_missing_capture_is_a_usage_error_before_the_host_is_read() {
    let run = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args([
            "topo",
            "--root",
            "/nonexistent-root",
            "--compare",
            "/nonexistent/topo.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("/nonexistent/topo.txt"), "{stderr}");
}
