//! The kernel-log checks (KLOG) on real logs from `../shared/corpus`, each
//! placed where `--root` reads a capture (`var/log/zerohop/kmsg`) in a
//! fresh root, on the live host's `/dev/kmsg`, and on hostile captures.
//! Every assertion says what in the data justifies it.

mod support;

use std::fs;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use zerohop_core::{Finding, Report, Status};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::facts::kernel_log::CAPTURE;
use zerohop_host::{CollectOptions, Facts, HostRoot};

const IDS: [&str; 5] = ["KLOG001", "KLOG002", "KLOG003", "KLOG004", "KLOG005"];

/// Writes `log` where `--root` reads a capture, in a new root.
fn root_with_capture(log: &[u8]) -> tempfile::TempDir {
    let root = support::scratch();
    let path = root.path().join(CAPTURE.trim_start_matches('/'));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, log).unwrap();
    root
}

/// Runs the kernel-log checks on `root` with `options`, failing the test
/// when they take longer than a minute: a hang must fail, not stall.
fn kernel_log_checks(root: &Path, options: CollectOptions) -> Report {
    let root = root.to_path_buf();
    let (done, answer) = mpsc::channel();
    thread::spawn(move || {
        let host = HostRoot::at(&root).expect("a directory root");
        let facts = Facts::collect_with(&host, options);
        let selection = Selection::parse(["kernel-log"]).unwrap();
        let _ = done.send(zerohop_doctor::run(&facts, &Profile::default(), &selection));
    });
    answer
        .recv_timeout(Duration::from_secs(60))
        .expect("the checks finished within a minute")
}

fn only<'a>(report: &'a Report, id: &str) -> &'a Finding {
    let findings = support::findings(report, id);
    assert_eq!(findings.len(), 1, "{id}: {findings:#?}");
    findings[0]
}

fn evidence(finding: &Finding) -> Vec<(&str, &str)> {
    finding
        .evidence
        .iter()
        .map(|e| (e.source.as_str(), e.value.as_str()))
        .collect()
}

const INVALID_CONTEXT: &str = "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing";

#[test]
fn dmesg_iso_capture_of_peermem_errors() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let log = fs::read(corpus.join("dmesg_nvidia_peermem_gpud.txt")).unwrap();
    let root = root_with_capture(&log);
    let report = kernel_log_checks(root.path(), CollectOptions::default());
    let finding = only(&report, "KLOG001");
    // Seven `kern :err` lines of nv_get_p2p_free_callback's `detected
    // invalid context` error, none a registration failure.
    assert_eq!(finding.status, Status::Fail);
    assert!(
        finding.message.starts_with("7 errors from nvidia-peermem"),
        "{}",
        finding.message
    );
    // The window ends at the last line, the upstream fixture's `test` line
    // at 16:28:07 UTC.
    assert!(
        finding
            .message
            .contains("of the capture (to 2025-02-10T16:28:07)"),
        "{}",
        finding.message
    );
    // Evidence: the first four error lines and the last (line 7), as
    // written, and the two between them counted; never the `test` line.
    let shown = evidence(finding);
    assert_eq!(shown.len(), 6, "{shown:#?}");
    assert_eq!(shown[0].0, "/var/log/zerohop/kmsg:1");
    assert_eq!(
        shown[0].1,
        format!("kern  :err   : 2025-02-10T16:28:06,502716+00:00 {INVALID_CONTEXT}")
    );
    assert_eq!(shown[4].0, "/var/log/zerohop/kmsg:7");
    assert!(shown[4].1.contains("16:28:06,570939"), "{}", shown[4].1);
    assert_eq!(
        shown[5].1,
        "2 more lines like these between the first and the last"
    );
    // Nothing else in the capture: no link, NFS, nvidia-fs or AER lines.
    for id in ["KLOG002", "KLOG003", "KLOG004", "KLOG005"] {
        assert_eq!(only(&report, id).status, Status::Pass, "{id}");
    }
}

#[test]
fn kmsg_capture_of_peermem_errors_and_its_window() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let log = fs::read(corpus.join("kmsg_nvidia_peermem_gpud.txt")).unwrap();
    let root = root_with_capture(&log);
    let report = kernel_log_checks(root.path(), CollectOptions::default());
    let finding = only(&report, "KLOG001");
    // Seven `/dev/kmsg` records of the same error (the capture gives them
    // level 6, and the check does not trust the level: every peer_err() is
    // an error), from 227.996636 s to 227.996662 s after boot.
    assert_eq!(finding.status, Status::Fail);
    assert!(
        finding.message.starts_with("7 errors"),
        "{}",
        finding.message
    );
    assert!(
        finding.message.contains("(to 227.996662 s after boot)"),
        "{}",
        finding.message
    );
    let shown = evidence(finding);
    // A record is shown as dmesg would: its time since boot, then the text.
    assert_eq!(
        shown[0],
        (
            "/var/log/zerohop/kmsg:1",
            &*format!("[  227.996636] {INVALID_CONTEXT}")
        )
    );
    assert_eq!(shown[4].1, format!("[  227.996662] {INVALID_CONTEXT}"));

    // A window of 10 µs before the last record (227.996662 s) holds the
    // records at 227.996661 and 227.996662: two errors.
    let narrow = CollectOptions {
        log_window: Duration::from_micros(10),
    };
    let report = kernel_log_checks(root.path(), narrow);
    let finding = only(&report, "KLOG001");
    assert!(
        finding
            .message
            .starts_with("2 errors from nvidia-peermem in the last 10us"),
        "{}",
        finding.message
    );
    let lines: Vec<&str> = evidence(finding)
        .iter()
        .map(|(source, _)| *source)
        .collect();
    assert_eq!(
        lines,
        ["/var/log/zerohop/kmsg:6", "/var/log/zerohop/kmsg:7"]
    );
}

#[test]
fn syslog_capture_of_an_ib_link_flapping() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let log = fs::read(corpus.join("syslog_ib_link_flap_azure_nhc.txt")).unwrap();
    let root = root_with_capture(&log);
    let report = kernel_log_checks(root.path(), CollectOptions::default());
    let finding = only(&report, "KLOG002");
    // systemd-networkd logged `ib6: lost carrier` six times (lines 3 to 8)
    // and `Gained carrier` six times (lines 9 to 14): over Azure's
    // threshold of five, which this upstream test file (`1dev_6flap`)
    // exercises.
    assert_eq!(finding.status, Status::Fail);
    assert_eq!(finding.subject, "ib6");
    assert!(
        finding.message.starts_with("ib6 lost its link 6 times"),
        "{}",
        finding.message
    );
    // The year-less syslog times end at Aug 17 06:18:06.
    assert!(
        finding.message.contains("(to Aug 17 06:18:06)"),
        "{}",
        finding.message
    );
    let shown = evidence(finding);
    let sources: Vec<&str> = shown.iter().map(|(source, _)| *source).collect();
    assert_eq!(
        sources,
        [
            "/var/log/zerohop/kmsg:3",
            "/var/log/zerohop/kmsg:4",
            "/var/log/zerohop/kmsg:5",
            "/var/log/zerohop/kmsg:6",
            "/var/log/zerohop/kmsg:14",
            "/var/log/zerohop/kmsg",
        ]
    );
    assert_eq!(
        shown[0].1,
        "Aug 17 06:18:01 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: lost carrier"
    );
    assert_eq!(
        shown[4].1,
        "Aug 17 06:18:06 jplc7eb7-vm-0 systemd-networkd[5398]: ib6: Gained carrier"
    );
    assert_eq!(
        shown[5].1,
        "7 more lines like these between the first and the last"
    );
    // The logrotate lines of the capture are no evidence of anything.
    for id in ["KLOG001", "KLOG003", "KLOG004", "KLOG005"] {
        assert_eq!(only(&report, id).status, Status::Pass, "{id}");
    }
}

#[test]
fn the_live_log_is_read_or_unknown_never_passed_unread() {
    let report = {
        let (done, answer) = mpsc::channel();
        thread::spawn(move || {
            let facts = Facts::collect(&HostRoot::live());
            let selection = Selection::parse(["kernel-log"]).unwrap();
            let _ = done.send(zerohop_doctor::run(&facts, &Profile::default(), &selection));
        });
        answer
            .recv_timeout(Duration::from_secs(60))
            .expect("the live checks finished within a minute")
    };
    let readable = fs::File::open("/dev/kmsg").is_ok();
    for id in IDS {
        for finding in support::findings(&report, id) {
            if readable {
                // This process may read the log: every check judged it, and
                // shows the device it read.
                assert_ne!(finding.status, Status::Unknown, "{id}: {}", finding.message);
                assert!(
                    finding
                        .evidence
                        .iter()
                        .all(|e| e.source.starts_with("/dev/kmsg")),
                    "{id}: {:?}",
                    finding.evidence
                );
            } else {
                // No device or no permission: unknown, with the reason.
                assert_eq!(finding.status, Status::Unknown, "{id}");
                assert!(finding.message.contains("kmsg"), "{}", finding.message);
            }
        }
    }
}

#[test]
fn a_fifo_at_the_capture_path_is_unknown_without_waiting() {
    let root = support::scratch();
    let path = root.path().join(CAPTURE.trim_start_matches('/'));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    let report = kernel_log_checks(root.path(), CollectOptions::default());
    for id in IDS {
        let finding = only(&report, id);
        // Opening a FIFO for reading waits for a writer: it is refused.
        assert_eq!(finding.status, Status::Unknown, "{id}");
        assert!(finding.message.contains("fifo"), "{}", finding.message);
    }
}

#[test]
fn binary_garbage_is_read_without_panic() {
    let garbage: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let root = root_with_capture(&garbage);
    let report = kernel_log_checks(root.path(), CollectOptions::default());
    for id in IDS {
        // No signature in noise: judged and clean.
        assert_eq!(only(&report, id).status, Status::Pass, "{id}");
    }
}

#[test]
fn a_huge_capture_is_read_from_its_end() {
    // 12 MiB of records, the last one an AER error: only the last 8 MiB
    // are read, and the error at the end is found.
    let mut log = String::new();
    let mut second = 0u64;
    while log.len() < 12 << 20 {
        second += 1;
        log.push_str(&format!(
            "[{second:>6}.000000] mlx5_core 0000:3b:00.0: health poll {second}\n"
        ));
    }
    log.push_str(&format!(
        "[{:>6}.000000] pcieport 0000:3a:00.0: AER: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)\n",
        second + 1
    ));
    let root = root_with_capture(log.as_bytes());
    let report = kernel_log_checks(root.path(), CollectOptions::default());
    let finding = only(&report, "KLOG005");
    assert_eq!(finding.status, Status::Fail);
    assert_eq!(finding.subject, "0000:3a:00.0");
    let shown = evidence(finding);
    assert!(shown[0].0.contains("of its last 8 MiB"), "{shown:?}");
    assert!(
        shown
            .iter()
            .any(|(_, value)| value.starts_with("only the last 8 MiB")),
        "{shown:?}"
    );
}
