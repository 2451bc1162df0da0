//! `zerohop validate parse` as a user runs it: on the corpus's captures,
//! with options, exit codes, JSON, standard input, `checks`/`explain`, and
//! hostile inputs (FIFOs, devices, directories, oversized files, terminal
//! controls), each run under a deadline so that a hang fails the test
//! instead of stalling CI.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The longest any run may take; a hang is a failure, not a stall.
const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `zerohop ARGS` with `stdin` as its standard input, killing it at
/// the deadline (and failing the test).
fn zerohop_with(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zerohop runs");
    let feeder = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("a stdin pipe");
        let bytes = bytes.to_vec();
        // zerohop stops reading at its limit: a broken pipe here is expected.
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    // Drain the pipes on threads so that a large report cannot block the child.
    let mut stdout = child.stdout.take().expect("a stdout pipe");
    let mut stderr = child.stderr.take().expect("a stderr pipe");
    let out = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let err = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited on") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("zerohop {args:?} ran past {DEADLINE:?}: killed");
        }
        thread::sleep(Duration::from_millis(10));
    };
    if let Some(feeder) = feeder {
        feeder.join().expect("stdin writer");
    }
    Output {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

fn zerohop(args: &[&str]) -> Output {
    zerohop_with(args, None)
}

/// A capture of `../shared/corpus/outputs`, or `None` (with a printed
/// reason) when `../shared` is absent; a missing capture fails.
fn capture(relative: &str) -> Option<String> {
    let path = zerohop_testkit::shared_data::shared_dir("corpus/outputs")?.join(relative);
    assert!(path.is_file(), "capture {} is missing", path.display());
    Some(path.to_string_lossy().into_owned())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_passing_capture_exits_0_and_a_failing_one_1() {
    let (Some(pass), Some(fail)) = (
        capture("perftest/ib_write_bw_client_cx-mlx5_5_roce-gid3_rdma-cm_4qp_gbits_oke.txt"),
        capture(
            "nccl-tests/nccl_debug_pytorch_8xA100_2nodes_polaris_NET-IB-no-device_NET-Socket-fallback.txt",
        ),
    ) else {
        return;
    };
    let out = zerohop(&["validate", "parse", &pass]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = zerohop(&["validate", "parse", &fail]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("VAL101"), "{stdout}");
    assert!(stdout.contains("what to fix first"), "{stdout}");
    // Not a terminal: no ANSI styles.
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
}

#[test]
fn json_is_the_doctor_report_format_and_deterministic() {
    let Some(path) = capture(
        "nccl-tests/nccl_warn_ib_completion_status12-vendor-err129_then_status5-vendor-err249_roce_issue-nccl-1814.txt",
    ) else {
        return;
    };
    let first = zerohop(&["validate", "parse", "--format", "json", &path]);
    let second = zerohop(&["validate", "parse", "--format", "json", &path]);
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(first.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&first.stdout).expect("JSON");
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["command"], "validate");
    assert_eq!(report["summary"]["fail"], 1);
    let failed = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["status"] == "fail")
        .unwrap();
    assert_eq!(failed["id"], "VAL106");
    // The finding cites the capture's first line, where the warning is.
    assert_eq!(failed["location"]["line"], 1);
    assert_eq!(failed["evidence"][0]["source"], format!("{path}:1"));
    assert!(
        failed["remediation"]["summary"]
            .as_str()
            .unwrap()
            .contains("PFC")
    );
}

#[test]
fn expectations_from_the_command_line_reach_the_judgements() {
    let Some(path) =
        capture("nccl-tests/all_reduce_perf_16xA100-SXM4-40GB_2nodes_oke-mpijob_8B-8G_pass.txt")
    else {
        return;
    };
    let out = zerohop(&[
        "validate",
        "parse",
        "--format",
        "json",
        "--link-rate",
        "100",
        "--rails",
        "16",
        "--collective",
        "all_reduce_perf",
        &path,
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let busbw = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "VAL109")
        .unwrap();
    assert_eq!(busbw["status"], "pass");
    assert!(
        busbw["message"]
            .as_str()
            .unwrap()
            .contains("119% of the 200.0 GB/s"),
        "{busbw}"
    );
    // A stricter efficiency than the run reaches fails nothing here but a
    // lower rate does: 8 rails of 400 Gb/s would be 400 GB/s, 59%.
    let out = zerohop(&[
        "validate",
        "parse",
        "--link-rate",
        "400",
        "--rails",
        "8",
        "--collective",
        "all_reduce",
        &path,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning does not fail the run"
    );
    assert!(text(&out.stdout).contains("59% of the 400.0 GB/s"));
}

#[test]
fn several_files_are_judged_together_and_an_unknown_one_exits_2() {
    let (Some(topo), Some(gids)) = (
        capture("nvidia-smi-topo/nvidia_smi_topo_m_4xA10_SYS_2xmlx5-PIX_no-nvlink.txt"),
        capture("rdma-nic/show_gids_mlx5_3_roce-v1-v2_sriov-vf-net1_openshift.txt"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    fs::write(&notes, "lunch at noon\n").unwrap();
    let notes = notes.to_string_lossy().into_owned();
    let out = zerohop(&["validate", "parse", "-v", &topo, &notes, &gids]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("notes.txt: not the output of a tool zerohop reads"),
        "{stderr}"
    );
    // The other two are still judged, grouped: topology before fabric.
    let stdout = text(&out.stdout);
    let topology = stdout.find("\ntopology\n").expect("a topology section");
    let fabric = stdout.find("\nfabric\n").expect("a fabric section");
    assert!(topology < fabric, "{stdout}");
    // Only unrecognised files: no empty report, the reasons on stderr.
    let out = zerohop(&["validate", "parse", &notes]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

#[test]
fn standard_input_is_read_for_a_dash() {
    let Some(path) = capture(
        "perftest/ib_write_bw_fail_use-cuda-dmabuf-before-use-cuda_parser-error_issue-perftest-336.txt",
    ) else {
        return;
    };
    let bytes = fs::read(path).unwrap();
    let out = zerohop_with(&["validate", "parse", "-"], Some(&bytes));
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("-: perftest refused its options"),
        "{stdout}"
    );
}

#[test]
fn bad_options_are_usage_errors() {
    for args in [
        &["validate", "parse", "--collective", "bogus_perf", "x"][..],
        &["validate", "parse", "--min-efficiency", "0", "x"],
        &["validate", "parse", "--link-rate", "-3", "x"],
        &["validate", "parse", "--rails", "0", "x"],
        &["validate", "parse"],
    ] {
        let out = zerohop(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = zerohop(&["validate", "parse", "--collective", "bogus_perf", "x"]);
    assert!(text(&out.stderr).contains("not an nccl-tests collective"));
}

#[test]
fn checks_and_explain_know_the_judgements() {
    let out = zerohop(&["checks"]);
    assert_eq!(out.status.code(), Some(0));
    let list = text(&out.stdout);
    assert!(list.contains("VAL001") && list.contains("VAL502"), "{list}");
    let out = zerohop(&["explain", "VAL109"]);
    assert_eq!(out.status.code(), Some(0));
    let doc = text(&out.stdout);
    assert!(doc.starts_with("# VAL109 nccl-busbw-low"), "{doc}");
    assert!(doc.contains("## How to fix"), "{doc}");
    let out = zerohop(&["explain", "nccl-socket-fallback"]);
    assert!(text(&out.stdout).starts_with("# VAL101"));
}

// Hostile input: nothing may block, grow without bound or reach the terminal.

#[test]
fn a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("capture.log");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    // A symlink to it is refused the same way: the type of what is opened counts.
    let link = dir.path().join("link.log");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    for path in [&fifo, &link] {
        let start = Instant::now();
        let out = zerohop(&["validate", "parse", &path.to_string_lossy()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("a fifo, not a regular file: refused"),
            "{}",
            text(&out.stderr)
        );
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}

#[test]
fn a_character_device_is_refused() {
    // `/dev/zero` needs no privilege and would never end if it were read.
    let out = zerohop(&["validate", "parse", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("a character device, not a regular file"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_directory_and_a_missing_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = zerohop(&["validate", "parse", &dir.path().to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a directory, not a regular file"));
    let out = zerohop(&["validate", "parse", "/no/such/capture.log"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot open"));
}

#[test]
fn an_oversized_file_is_refused_without_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("huge.log");
    // Sparse: 129 MiB of holes costs no disk.
    fs::File::create(&big).unwrap().set_len(129 << 20).unwrap();
    let start = Instant::now();
    let out = zerohop(&["validate", "parse", &big.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("over the 128 MiB a capture may have"),
        "{}",
        text(&out.stderr)
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn standard_input_is_bounded_too() {
    // 129 MiB through a pipe: cut one byte past the limit and refused.
    let bytes = vec![b'x'; 129 << 20];
    let out = zerohop_with(&["validate", "parse", "-"], Some(&bytes));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("over the 128 MiB"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn terminal_controls_in_a_capture_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.log");
    // An OSC sequence (retitles the terminal) is dropped with the other ANSI
    // escapes when the capture is read; a lone BEL, a C1 CSI and a
    // bidirectional override are kept as text and escaped on output.
    fs::write(
        &path,
        "h:1:2 [0] x.c:1 NCCL WARN retitled\u{1b}]0;pwned\u{7} bell\u{7} csi\u{9b}31m and \u{202e}reversed\n",
    )
    .unwrap();
    let out = zerohop(&["validate", "parse", &path.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(r"retitled bell\x07 csi\u{9b}31m and \u{202e}reversed"),
        "{stdout}"
    );
    assert!(!stdout.contains("pwned"), "{stdout}");
    for control in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
        assert!(!stdout.contains(control), "{stdout}");
    }
}

#[test]
fn binary_garbage_is_not_a_capture() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.bin");
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let bytes: Vec<u8> = (0..(1 << 20))
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    fs::write(&path, bytes).unwrap();
    let out = zerohop(&["validate", "parse", &path.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// The VAL109 finding of `all_reduce` in a JSON report.
fn all_reduce_busbw(out: &Output) -> serde_json::Value {
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "VAL109" && f["subject"].as_str().unwrap().ends_with("all_reduce"))
        .unwrap()
        .clone()
}

/// The intent's `linkRateGbps` is the rate of a rail, and its `linkType`
/// the link layer NCCL must use: the 80-GPU capture has no `NCCL_DEBUG`
/// lines, so the rate is the intent's and the link layer cannot be seen.
#[test]
fn the_intents_link_rate_is_the_rails_rate() {
    let Some(path) = capture(
        "nccl-tests/all-collectives_perf_80xH100_10nodes_nccl-tests2.17.8_reducing-maxBytes.txt",
    ) else {
        return;
    };
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster.yaml"),
    )
    .unwrap();
    let workload_nic = "linkType: ETH, mtu: 9000, vfs: one-per-gpu,";
    assert_eq!(
        example.matches(workload_nic).count(),
        8,
        "the example's eight workload rails"
    );
    let dir = tempfile::tempdir().unwrap();
    let intent = dir.path().join("cluster.yaml");
    let rated = example.replace(
        workload_nic,
        "linkType: ETH, linkRateGbps: 400, mtu: 9000, vfs: one-per-gpu,",
    );
    std::fs::write(&intent, rated).unwrap();
    // The same from the directory `zerohop plan -o` wrote from that intent:
    // its nccl-tests job carries the rate and the link type.
    let plan_dir = dir.path().join("plan");
    let out = zerohop(&[
        "plan",
        intent.to_str().unwrap(),
        "-o",
        plan_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for (option, given, source) in [
        ("--intent", &intent, "cluster.yaml, pool h100"),
        ("--plan", &plan_dir, "plan, pool h100"),
    ] {
        let out = zerohop(&[
            "validate",
            "parse",
            "--format",
            "json",
            option,
            given.to_str().unwrap(),
            &path,
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{option}: {}",
            text(&out.stderr)
        );
        let busbw = all_reduce_busbw(&out);
        // Line 101: 322.70 GB/s of 8 × 400 / 8 = 400 GB/s.
        assert_eq!(busbw["status"], "pass", "{option}: {busbw}");
        assert!(
            busbw["message"]
                .as_str()
                .unwrap()
                .contains("81% of the 400.0 GB/s"),
            "{option}: {busbw}"
        );
        assert!(
            busbw["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["source"].as_str().unwrap().ends_with(source)
                    && e["value"] == "400 Gb/s per rail (linkRateGbps)"),
            "{option}: {busbw}"
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let link = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "VAL113")
            .unwrap();
        // The log names no NET/IB device; without the planned link type
        // the rule would not apply at all.
        assert_eq!(link["status"], "unknown", "{option}: {link}");
    }

    // A rate the example's NICs do not give: the intent says nothing of
    // the rate, and the run is judged against the slowest RDMA link.
    let out = zerohop(&[
        "validate",
        "parse",
        "--format",
        "json",
        "--intent",
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/cluster.yaml")
            .to_str()
            .unwrap(),
        &path,
    ]);
    let busbw = all_reduce_busbw(&out);
    assert_eq!(busbw["status"], "info", "{busbw}");
    assert!(
        busbw["message"].as_str().unwrap().contains("--link-rate"),
        "{busbw}"
    );
}

#[test]
fn the_intent_and_the_plan_give_the_rails_and_gpus_per_node() {
    let Some(path) = capture(
        "nccl-tests/all-collectives_perf_80xH100_10nodes_nccl-tests2.17.8_reducing-maxBytes.txt",
    ) else {
        return;
    };
    let intent = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster.yaml");
    let intent = intent.to_str().unwrap();
    // The example pool: eight RoCE rails for the workload (the ninth is
    // the hosts' storage rail), eight GPUs per node.
    let out = zerohop(&[
        "validate",
        "parse",
        "--format",
        "json",
        "--intent",
        intent,
        "--link-rate",
        "400",
        &path,
    ]);
    // Every collective reaches what the rails carry, or (all-to-all,
    // send/receive) is reported without a grade: exit 0.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let busbw = all_reduce_busbw(&out);
    assert_eq!(busbw["status"], "pass", "{busbw}");
    assert!(
        busbw["message"]
            .as_str()
            .unwrap()
            .contains("81% of the 400.0 GB/s"),
        "{busbw}"
    );
    let evidence = busbw["evidence"].as_array().unwrap();
    assert!(
        evidence.iter().any(|e| e["source"]
            .as_str()
            .unwrap()
            .ends_with("cluster.yaml, pool h100")
            && e["value"] == "8 rail(s) of RoCE"),
        "{busbw}"
    );

    // The same from the directory `zerohop plan -o` wrote.
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    let plan_dir = plan_dir.to_str().unwrap();
    let out = zerohop(&["plan", intent, "-o", plan_dir]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = zerohop(&[
        "validate",
        "parse",
        "--format",
        "json",
        "--plan",
        plan_dir,
        "--link-rate",
        "400",
        &path,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let busbw = all_reduce_busbw(&out);
    assert!(
        busbw["message"]
            .as_str()
            .unwrap()
            .contains("with 8 rail(s)"),
        "{busbw}"
    );

    // --rails on the command line overrides the intent.
    let out = zerohop(&[
        "validate",
        "parse",
        "--format",
        "json",
        "--intent",
        intent,
        "--rails",
        "4",
        "--link-rate",
        "400",
        &path,
    ]);
    let busbw = all_reduce_busbw(&out);
    assert!(
        busbw["message"]
            .as_str()
            .unwrap()
            .contains("with 4 rail(s)"),
        "{busbw}"
    );

    // A pool the intent lacks, or --pool alone, is a usage error.
    let out = zerohop(&[
        "validate", "parse", "--intent", intent, "--pool", "nope", &path,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no such pool"),
        "{}",
        text(&out.stderr)
    );
    let out = zerohop(&["validate", "parse", "--pool", "h100", &path]);
    assert_eq!(out.status.code(), Some(2));
    let out = zerohop(&["validate", "parse", "--intent", "/nonexistent.yaml", &path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--intent"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_socket_run_without_debug_lines_is_flagged_by_default() {
    let Some(path) = capture(
        "nccl-tests/all_reduce_perf_2xL40S_2pods_openshift_NCCL_IB_DISABLE1_socket_nccl2.27.3.txt",
    ) else {
        return;
    };
    let out = zerohop(&["validate", "parse", &path]);
    // A warning: the capture cannot prove the transport.
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("warn")
            && stdout.contains("VAL112")
            && stdout.contains("cannot tell a fallback to TCP"),
        "{stdout}"
    );
}

#[test]
fn validate_run_reads_the_intent_before_it_touches_the_cluster() {
    let intent = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster.yaml");
    let dir = tempfile::tempdir().unwrap();
    let plan_dir = dir.path().join("plan");
    let plan_dir = plan_dir.to_str().unwrap();
    let out = zerohop(&["plan", intent.to_str().unwrap(), "-o", plan_dir]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // An intent that is not one is refused with its reason, and no
    // kubeconfig is ever read.
    let bad = dir.path().join("bad.yaml");
    fs::write(&bad, "kind: Pod\n").unwrap();
    let out = zerohop(&[
        "validate",
        "run",
        "--plan",
        plan_dir,
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--intent",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("--intent"), "{stderr}");
    assert!(!stderr.contains("kubeconfig"), "{stderr}");
}
