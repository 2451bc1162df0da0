//! End-to-end engine runs on small temporary files, in every backend and
//! mode, with the pattern verified.
//!
//! A machine without io_uring or `O_DIRECT` cannot test those backends: in
//! a user's clone the cases say what they skipped, in CI they fail
//! (`zerohop_testkit::prerequisite`), so a CI container that blocks
//! io_uring never passes without testing the engine.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use tempfile::TempDir;
use zerohop_host::HostRoot;
use zerohop_io::buffers::HugePages;
use zerohop_io::env::{Environment, Memlock};
use zerohop_io::prepare::{Replace, prepare};
use zerohop_io::{
    AccessPattern, Amount, Control, EngineKind, InputError, ReadConfig, RunError, RunReport,
    RunStatus, SinkKind, run_read, run_read_in,
};
use zerohop_testkit::prerequisite;

/// 3 MiB and a bit: exercises full blocks and an unaligned tail.
const LEN: u64 = 3 * (1 << 20) + 4096 + 100;

fn prepared(dir: &Path, name: &str, len: u64) -> PathBuf {
    let path = dir.join(name);
    prepare(&path, len, Replace::BenchFileOnly, &Control::default()).unwrap();
    path
}

/// A temporary directory under Cargo's target directory: a disk file
/// system, where `O_DIRECT` works, rather than a `/tmp` that may be a tmpfs
/// too old to take it.
fn scratch() -> TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Whether `O_DIRECT` works on `path`; when it does not, the caller skips
/// its `O_DIRECT` cases, which fails in CI.
fn direct_supported(path: &Path) -> bool {
    match zerohop_io::target::open_target(&HostRoot::live(), path, 4096, true) {
        Ok(_) => true,
        Err(err) => {
            prerequisite::missing(format_args!("O_DIRECT on {}: {err}", path.display()));
            false
        }
    }
}

/// Whether a run that asked for io_uring ran on it. Where the probe finds
/// io_uring the engine must use it; where it does not, the run fell back to
/// `pread`, which fails in CI and elsewhere says what was not tested.
fn ran_on_io_uring(report: &RunReport) -> bool {
    if report.environment.io_uring.status == "available" {
        assert_eq!(report.engine.backend, "io_uring", "{:?}", report.fallbacks);
        return true;
    }
    prerequisite::missing(format_args!(
        "io_uring is {} here, so the engine ran on pread",
        report.environment.io_uring.status
    ));
    assert_eq!(report.engine.backend, "pread");
    false
}

fn config(paths: Vec<PathBuf>, engine: EngineKind, direct: bool) -> ReadConfig {
    ReadConfig {
        engine,
        direct,
        block_size: 64 << 10,
        queue_depth: 8,
        verify: true,
        hugepages: HugePages::Off,
        ..ReadConfig::new(paths)
    }
}

fn assert_clean(report: &zerohop_io::RunReport, expected_bytes: u64) {
    assert_eq!(report.status, RunStatus::Completed);
    assert_eq!(report.bytes, expected_bytes, "{:?}", report.fallbacks);
    let verify = report.verify.as_ref().unwrap();
    assert_eq!(verify.corrupt_blocks, 0, "{:?}", verify.corruptions);
    assert_eq!(verify.checked_bytes, expected_bytes);
    assert!(report.latency_us.p50 > 0.0 && report.latency_us.p999 >= report.latency_us.p50);
    assert!(report.bw_bytes_per_s > 0.0);
}

#[test]
fn every_backend_and_mode_reads_the_pattern_back() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    let mut modes = vec![(EngineKind::Uring, false), (EngineKind::Pread, false)];
    if direct_supported(&path) {
        modes.extend([(EngineKind::Uring, true), (EngineKind::Pread, true)]);
    }
    for (engine, direct) in modes {
        for pattern in [AccessPattern::Seq, AccessPattern::Rand] {
            for workers in [1, 3] {
                let cfg = ReadConfig {
                    pattern,
                    workers,
                    ..config(vec![path.clone()], engine, direct)
                };
                let report = run_read(&cfg, &Control::default()).unwrap();
                let expected = match pattern {
                    AccessPattern::Seq => LEN,
                    // Random one-pass runs read as many whole blocks as the
                    // file has blocks, per worker.
                    AccessPattern::Rand => LEN.div_ceil(64 << 10) * (64 << 10) * u64::from(workers),
                };
                assert_clean(&report, expected);
                assert_eq!(report.workers.len(), workers as usize);
                if direct && pattern == AccessPattern::Seq {
                    assert_eq!(
                        report.workers.iter().map(|w| w.buffered_tails).sum::<u64>(),
                        1,
                        "{engine:?}"
                    );
                }
                if engine == EngineKind::Pread {
                    assert_eq!(report.engine.backend, "pread");
                } else {
                    ran_on_io_uring(&report);
                }
            }
        }
    }
}

#[test]
fn every_submit_batch_reads_the_pattern_back() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    let mut modes = vec![false];
    if direct_supported(&path) {
        modes.push(true);
    }
    for direct in modes {
        // One read per enter, a batch that does not divide the queue depth
        // (a remainder is left queued when the refill ends), and a whole
        // refill at once.
        for submit_batch in [1, 3, 8] {
            for pattern in [AccessPattern::Seq, AccessPattern::Rand] {
                let cfg = ReadConfig {
                    submit_batch,
                    pattern,
                    ..config(vec![path.clone()], EngineKind::Uring, direct)
                };
                let report = run_read(&cfg, &Control::default()).unwrap();
                let expected = match pattern {
                    AccessPattern::Seq => LEN,
                    AccessPattern::Rand => LEN.div_ceil(64 << 10) * (64 << 10),
                };
                assert_clean(&report, expected);
                if ran_on_io_uring(&report) {
                    assert_eq!(report.engine.submit_batch, Some(submit_batch));
                }
            }
        }
    }
}

#[test]
fn io_uring_uses_fixed_buffers_and_registered_files_when_allowed() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    let report = run_read(
        &config(vec![path], EngineKind::Uring, false),
        &Control::default(),
    )
    .unwrap();
    if !ran_on_io_uring(&report) {
        return;
    }
    let memlock_ok = report
        .environment
        .memlock
        .budget()
        .is_none_or(|limit| limit >= 8 * (64 << 10));
    assert_eq!(
        report.engine.fixed_buffers, memlock_ok,
        "{:?}",
        report.fallbacks
    );
    assert!(report.engine.registered_files);
    assert!(!report.engine.ring_flags.is_empty() || report.fallbacks.is_empty());
}

#[test]
fn a_memlock_limit_too_small_falls_back_to_unregistered_buffers() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    let root = HostRoot::live();
    let mut env = Environment::probe(&root);
    env.memlock = Memlock {
        soft_bytes: Some(64 << 10),
        hard_bytes: Some(64 << 10),
        cap_ipc_lock: false,
    };
    let report = run_read_in(
        &config(vec![path], EngineKind::Uring, false),
        &Control::default(),
        &root,
        env,
    )
    .unwrap();
    assert_clean(&report, LEN);
    assert!(!report.engine.fixed_buffers);
    if ran_on_io_uring(&report) {
        let f = report
            .fallbacks
            .iter()
            .find(|f| f.feature == "fixed_buffers")
            .expect("a fixed_buffers fallback");
        assert!(f.reason.contains("RLIMIT_MEMLOCK"), "{}", f.reason);
    }
}

#[test]
fn iopoll_is_dropped_with_a_reason_when_unsupported() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    if !direct_supported(&path) {
        return;
    }
    let direct = ReadConfig {
        iopoll: true,
        ..config(vec![path], EngineKind::Uring, true)
    };
    let report = run_read(&direct, &Control::default()).unwrap();
    assert_clean(&report, LEN);
    if report.engine.ring_flags.contains(&"IOPOLL") {
        eprintln!("this device has poll queues: IOPOLL was used");
    } else if ran_on_io_uring(&report) {
        let f = report
            .fallbacks
            .iter()
            .find(|f| f.feature == "iopoll")
            .expect("an iopoll fallback");
        assert!(!f.reason.is_empty());
    }
}

#[test]
fn sqpoll_runs_or_falls_back() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    let cfg = ReadConfig {
        sqpoll: true,
        ..config(vec![path], EngineKind::Uring, false)
    };
    let report = run_read(&cfg, &Control::default()).unwrap();
    assert_clean(&report, LEN);
    if ran_on_io_uring(&report) {
        assert!(
            report.engine.ring_flags.contains(&"SQPOLL")
                || report.fallbacks.iter().any(|f| f.feature == "sqpoll")
        );
    }
}

#[test]
fn a_file_per_worker_and_byte_and_time_budgets() {
    let dir = scratch();
    let paths: Vec<PathBuf> = (0..2)
        .map(|i| prepared(dir.path(), &format!("f{i}"), 1 << 20))
        .collect();
    let cfg = ReadConfig {
        workers: 2,
        amount: Amount::Bytes(5 << 20),
        ..config(paths.clone(), EngineKind::Uring, false)
    };
    let report = run_read(&cfg, &Control::default()).unwrap();
    assert_clean(&report, 5 << 20);
    assert!(report.workers.iter().all(|w| w.bytes > 0));
    let timed = ReadConfig {
        amount: Amount::Time(Duration::from_millis(200)),
        ramp: Duration::from_millis(50),
        cache: zerohop_io::CachePolicy::Keep,
        ..config(paths, EngineKind::Pread, false)
    };
    let report = run_read(&timed, &Control::default()).unwrap();
    assert!(report.bytes > 0);
    assert!(
        report.elapsed_s > 0.1 && report.elapsed_s < 2.0,
        "{}",
        report.elapsed_s
    );
}

#[test]
fn a_corrupted_block_is_reported_with_file_and_offset() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    let mut data = std::fs::read(&path).unwrap();
    data[(1 << 20) + 300] ^= 0xff;
    std::fs::write(&path, &data).unwrap();
    for engine in [EngineKind::Uring, EngineKind::Pread] {
        let report = run_read(
            &config(vec![path.clone()], engine, false),
            &Control::default(),
        )
        .unwrap();
        assert!(report.verify_failed());
        let v = report.verify.unwrap();
        assert_eq!(v.corrupt_blocks, 1);
        assert_eq!(v.corruptions[0].path, path);
        assert_eq!(v.corruptions[0].block_offset, 1 << 20);
        assert_eq!(v.corruptions[0].offset, (1 << 20) + 300);
    }
}

#[test]
fn gpu_sinks_are_skipped_with_a_reason_without_cuda() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    for sink in [SinkKind::Gpu, SinkKind::Cufile] {
        let cfg = ReadConfig {
            sink,
            ..config(vec![path.clone()], EngineKind::Uring, false)
        };
        let report = run_read(&cfg, &Control::default()).unwrap();
        if report.status != RunStatus::Skipped {
            eprintln!("a GPU is present: {sink:?} ran");
            assert_clean(&report, LEN);
            continue;
        }
        let reason = report.skip_reason.unwrap();
        assert!(!reason.is_empty());
        assert_eq!(report.environment.gpu.cuda.status, "unavailable");
        assert_eq!(report.environment.gpu.cufile.status, "not_probed");
    }
}

#[test]
fn a_raised_stop_flag_gives_a_partial_result() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    let control = Control::default();
    control.stop.store(true, Ordering::Relaxed);
    let cfg = ReadConfig {
        amount: Amount::Time(Duration::from_secs(60)),
        ..config(vec![path], EngineKind::Uring, false)
    };
    let report = run_read(&cfg, &control).unwrap();
    assert_eq!(report.status, RunStatus::Interrupted);
}

#[test]
fn bad_input_is_refused_before_any_io() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", 8192);
    let input = |cfg: ReadConfig| match run_read(&cfg, &Control::default()) {
        Err(RunError::Input(err)) => err,
        other => panic!("expected an input error, got {other:?}"),
    };
    let base = config(vec![path.clone()], EngineKind::Uring, false);
    assert!(matches!(
        input(ReadConfig {
            workers: 0,
            ..base.clone()
        }),
        InputError::OutOfRange {
            option: "--workers",
            ..
        }
    ));
    assert!(matches!(
        input(ReadConfig {
            queue_depth: 0,
            ..base.clone()
        }),
        InputError::OutOfRange { option: "--qd", .. }
    ));
    for submit_batch in [0, base.queue_depth + 1] {
        assert!(matches!(
            input(ReadConfig {
                submit_batch,
                ..base.clone()
            }),
            InputError::OutOfRange {
                option: "--submit-batch",
                ..
            }
        ));
    }
    assert!(matches!(
        input(ReadConfig {
            block_size: 16384,
            ..base.clone()
        }),
        InputError::ShorterThanBlock { .. }
    ));
    assert!(matches!(
        input(ReadConfig {
            paths: vec![dir.path().into()],
            ..base.clone()
        }),
        InputError::IsDirectory { .. }
    ));
    assert!(matches!(
        input(ReadConfig {
            paths: vec![dir.path().join("nope")],
            ..base.clone()
        }),
        InputError::NotFound { .. }
    ));
    let err = input(ReadConfig {
        iopoll: true,
        ..base.clone()
    });
    assert!(
        matches!(&err, InputError::Conflict(why) if why.contains("--direct") && why.contains("O_DIRECT")),
        "{err}"
    );
    for (sqpoll, iopoll) in [(true, false), (false, true)] {
        let err = input(ReadConfig {
            engine: EngineKind::Pread,
            direct: true,
            sqpoll,
            iopoll,
            ..base.clone()
        });
        assert!(
            matches!(&err, InputError::Conflict(why) if why.contains("--engine uring")),
            "{err}"
        );
    }
    if direct_supported(&path) {
        let err = input(ReadConfig {
            direct: true,
            block_size: 1000,
            ..base
        });
        assert!(matches!(err, InputError::Misaligned { .. }), "{err}");
    }
}

#[test]
fn compare_runs_every_path_or_explains_why_not() {
    let dir = scratch();
    let path = prepared(dir.path(), "data", LEN);
    let cfg = config(vec![path], EngineKind::Uring, false);
    let report = zerohop_io::compare::compare(&cfg, &Control::default()).unwrap();
    assert_eq!(report.rows.len(), 4);
    assert_eq!(report.rows[0].status, RunStatus::Completed);
    for row in &report.rows {
        assert!(row.status != RunStatus::Skipped || row.reason.is_some());
    }
    let mut out = Vec::new();
    report.write_human(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("buffered read (page cache)"), "{text}");
}
