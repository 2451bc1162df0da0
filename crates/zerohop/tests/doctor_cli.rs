//! `zerohop doctor`, `checks` and `explain` as a user runs them: exit
//! codes, usage errors, determinism of the JSON report, broken pipes.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn zerohop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .output()
        .expect("zerohop runs")
}

fn fixture(case: &str) -> String {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "../zerohop-doctor/tests/fixtures",
        case,
    ]
    .iter()
    .collect();
    path.to_string_lossy().into_owned()
}

#[test]
fn root_that_is_not_a_directory_is_a_usage_error() {
    let file = fixture("KRN001/pass-intel-on-pt/proc/cmdline");
    let out = zerohop(&["doctor", "--root", &file]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a directory"), "{stderr}");
    let out = zerohop(&["doctor", "--root", "/no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_relative_root_is_read_from_the_working_directory() {
    // The files are read by helper processes that run in `/`: a relative
    // `--root` must still mean the directory under the user's own.
    let fixtures: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "../zerohop-doctor/tests/fixtures",
    ]
    .iter()
    .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args([
            "doctor",
            "--root",
            "KRN001/pass-intel-on-pt",
            "--only",
            "KRN001",
        ])
        .current_dir(&fixtures)
        .output()
        .expect("zerohop runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("KRN001"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn unknown_group_is_a_usage_error() {
    let out = zerohop(&["doctor", "--only", "kernel,bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`bogus`"));
}

#[test]
fn an_empty_or_relative_mount_is_a_usage_error() {
    let root = fixture("KRN001/pass-intel-on-pt");
    for (value, says) in [
        ("", "an empty path names no mount"),
        ("data", "a mount is an absolute path"),
        ("/data\u{1b}[2J", "control characters"),
    ] {
        let out = zerohop(&["doctor", "--root", &root, "--mount", value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--mount {value:?}: {stderr}");
        assert!(stderr.contains(says), "--mount {value:?}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "--mount {value:?}: nothing is checked"
        );
    }
    let out = zerohop(&[
        "doctor", "--root", &root, "--mount", "/data", "--only", "KRN001",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn exit_code_follows_failures() {
    let pass = zerohop(&[
        "doctor",
        "--root",
        &fixture("KRN001/pass-intel-on-pt"),
        "--only",
        "KRN001",
    ]);
    assert_eq!(
        pass.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&pass.stdout)
    );
    let fail = zerohop(&[
        "doctor",
        "--root",
        &fixture("KRN001/fail-off-with-sriov"),
        "--only",
        "KRN001",
        "--expect-sriov",
        "true",
    ]);
    assert_eq!(fail.status.code(), Some(1));
    let text = String::from_utf8_lossy(&fail.stdout);
    assert!(text.contains("what to fix first"), "{text}");
    // Not a terminal: no ANSI escapes.
    assert!(!text.contains('\u{1b}'), "{text}");
}

#[test]
fn json_report_is_versioned_and_deterministic_but_for_its_pass() {
    let root = fixture("PCI005/warn-shared-with-vf");
    let run = || {
        let out = zerohop(&["doctor", "--root", &root, "--format", "json"]);
        let mut report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        // When the pass ran and how long it took change from run to run;
        // the fixture holds no host name, so no node is named.
        let pass = report.as_object_mut().unwrap().remove("pass").unwrap();
        let started = &pass["started_at"];
        assert!(
            started.as_str().is_some_and(|t| t.ends_with('Z')),
            "{started}"
        );
        assert!(pass["duration_ms"].is_u64(), "{pass}");
        assert_eq!(pass.get("node"), None);
        report
    };
    let first = run();
    assert_eq!(first, run());
    assert_eq!(first["schema_version"], 1);
    assert_eq!(first["command"], "doctor");
    assert!(first["findings"].as_array().is_some_and(|f| !f.is_empty()));
}

#[test]
fn explain_and_checks_document_every_check() {
    let out = zerohop(&["explain", "krn001"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for heading in ["## What it checks", "## Why it matters", "## How to fix"] {
        assert!(text.contains(heading), "{text}");
    }
    assert_eq!(zerohop(&["explain", "NOPE999"]).status.code(), Some(2));
    let list = zerohop(&["checks"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("URING001"));
}

#[test]
fn broken_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args([
            "doctor",
            "--root",
            &fixture("PCI001/fail-nic-x8-of-x16"),
            "--verbose",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close our end before the report is written.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(stderr.is_empty(), "{stderr}");
    // The report has a fail, so the code is 1, not the internal-error 3.
    assert_eq!(status.code(), Some(1));
}

/// `--format npd` follows node-problem-detector's custom plugin protocol:
/// exit 0 OK, 1 NonOK, 2 Unknown, and one line of at most 80 bytes on
/// standard output, which NPD keeps as the condition message.
#[test]
fn npd_format_answers_as_a_node_problem_detector_plugin() {
    let run = |args: &[&str]| {
        let out = zerohop(args);
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(stdout.lines().count(), 1, "{stdout:?}");
        assert!(stdout.trim_end().len() <= 80, "{stdout:?}");
        (out.status.code(), stdout.trim_end().to_owned())
    };
    let ok = run(&[
        "doctor",
        "--root",
        &fixture("KRN001/pass-intel-on-pt"),
        "--only",
        "KRN001",
        "--format",
        "npd",
    ]);
    assert_eq!(ok, (Some(0), "ok: no check fails".to_owned()));
    let non_ok = run(&[
        "doctor",
        "--root",
        &fixture("KRN001/fail-off-with-sriov"),
        "--only",
        "KRN001",
        "--expect-sriov",
        "true",
        "--format",
        "npd",
    ]);
    assert_eq!(non_ok, (Some(1), "1 failing: KRN001".to_owned()));
    // A root that is not a host is Unknown, and the line says why.
    let (code, line) = run(&["doctor", "--root", "/no/such/dir", "--format", "npd"]);
    assert_eq!(code, Some(2));
    assert!(line.starts_with("unknown: root /no/such/dir"), "{line}");
}

/// `--profile` reads the agent's expectation file; the flags go over it.
#[test]
fn a_profile_file_sets_expectations_and_the_flags_override_it() {
    let dir = tempfile::tempdir().expect("temp");
    let profile = dir.path().join("profile.yaml");
    std::fs::write(&profile, "gds: true\n").expect("write");
    let profile = profile.to_string_lossy().into_owned();
    // The root lists one PCI function, a virtio NIC, and no GPU:
    // GPUDirect Storage expected there fails (GDS007).
    let root = fixture("PCI001/info-virtio-nic-without-link-files");
    let expected = zerohop(&[
        "doctor",
        "--root",
        &root,
        "--only",
        "gds",
        "--profile",
        &profile,
    ]);
    assert_eq!(
        expected.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&expected.stdout)
    );
    assert!(String::from_utf8_lossy(&expected.stdout).contains("GDS007"));
    let overridden = zerohop(&[
        "doctor",
        "--root",
        &root,
        "--only",
        "gds",
        "--profile",
        &profile,
        "--expect-gds",
        "false",
    ]);
    assert_eq!(
        overridden.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&overridden.stdout)
    );
    let missing = zerohop(&["doctor", "--root", &root, "--profile", &root]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not a regular file"));
}

#[test]
fn pod_judges_a_pod_tree_and_leaves_the_node_checks_out() {
    let root = fixture("POD005/fail-copied-environment");
    let out = zerohop(&["doctor", "--pod", "--root", &root, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "a pod check fails");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert!(findings.iter().all(|f| f["group"] == "pod"), "{report:#}");
    assert!(findings.iter().any(|f| f["id"] == "POD005"
        && f["subject"] == "NCCL_SOCKET_IFNAME"
        && f["status"] == "fail"));
    // The same tree judged as a node has no pod finding.
    let out = zerohop(&["doctor", "--root", &root, "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["group"] != "pod")
    );
}

#[test]
fn in_a_kubernetes_pod_the_doctor_judges_the_pod() {
    // The kubelet sets KUBERNETES_SERVICE_HOST in every container: read at
    // this machine's `/`, the doctor then judges the pod it runs in.
    let run = |pod: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zerohop"));
        command
            .args(["doctor", "--verbose"])
            .env_remove("KUBERNETES_SERVICE_HOST");
        if pod {
            command.env("KUBERNETES_SERVICE_HOST", "10.96.0.1");
        }
        command.output().expect("zerohop runs")
    };
    let out = run(true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stderr.contains("note: running in a kubernetes pod"),
        "{stderr}"
    );
    assert!(stdout.contains("POD005"), "{stdout}");
    assert!(!stdout.contains("KRN001"), "{stdout}");
    let out = run(false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("POD005"), "{stdout}");
    // --root judges the node even in a pod.
    let root = fixture("KRN001/pass-intel-on-pt");
    let out = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["doctor", "--verbose", "--root", &root])
        .env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("KRN001") && !stdout.contains("POD00"),
        "{stdout}"
    );
}
