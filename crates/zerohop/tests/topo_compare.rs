//! `zerohop topo --compare FILE`: zerohop's classes beside a saved
//! `nvidia-smi topo -m`, on a doctor fixture root (one GPU, `0000:1b:00.0`,
//! behind the same PCIe switch as `mlx5_0`: PIX) and small matrices written
//! here in `nvidia-smi`'s layout.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use zerohop_testkit::shared_data::corpus;

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

/// A real `nvidia-smi topo -m` of another host (eight H100s, GPUs only,
/// from stas00/ml-engineering) against the one-GPU root: no pair can be
/// compared, and a gate must not pass it.
#[test]
fn a_matrix_that_compares_no_pair_exits_1() {
    let Some(corpus) = corpus() else { return };
    let matrix =
        fs::read_to_string(corpus.join("nvidia_smi_topo_m_8xH100_NV18_trimmed_ml-engineering.txt"))
            .unwrap();
    let run = topo(&matrix, &["--format", "json"]);
    let document: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(document["comparison"]["compared"], 0);
    assert_eq!(
        document["comparison"]["disagreements"],
        serde_json::json!([])
    );
    assert_eq!(run.status.code(), Some(1));
}

/// The fixture root with its one port `1: DOWN`: `NCCL_IB_HCA` still names
/// the paired NIC, and the output says that it has no ACTIVE port.
#[test]
fn a_paired_nic_without_an_active_port_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let copied = Command::new("cp")
        .arg("-a")
        .arg(root())
        .arg(dir.path().join("root"))
        .status()
        .unwrap();
    assert!(copied.success());
    let state = dir.path().join(
        "root/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1c:00.0/infiniband/mlx5_0/ports/1",
    );
    fs::write(state.join("state"), "1: DOWN\n").unwrap();
    fs::write(state.join("phys_state"), "3: Disabled\n").unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["topo", "--root"])
        .arg(dir.path().join("root"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("NCCL_IB_HCA==mlx5_0:1"), "{stdout}");
    assert!(
        stdout.contains("warning: 1 of the paired nic(s) have no ACTIVE port (mlx5_0:1)"),
        "{stdout}"
    );
}
