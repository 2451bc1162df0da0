//! The bench engine given what an attacker, or an unlucky user, would give
//! it: FIFOs and devices where files are expected, links and other people's
//! files as the destination of `prepare`, a disk too small. Every call runs
//! under a deadline, so a hang fails the test instead of stalling the run.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use zerohop_host::HostRoot;
use zerohop_io::prepare::{PrepareReport, Replace, prepare};
use zerohop_io::target::{TargetKind, open_target};
use zerohop_io::{Control, InputError, ReadConfig, RunError, run_read};

/// Longer than any of these calls takes, far shorter than a hang.
const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `work` on its own thread and fails the test if it has not
/// returned by the deadline (the stuck thread is left behind; the test
/// process ends anyway).
fn within_deadline<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(work());
    });
    result
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what} did not return within {DEADLINE:?}"))
}

#[expect(unsafe_code, reason = "mkfifo has no safe wrapper in std")]
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c_path` is a NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

fn bench_file(dir: &Path, name: &str, len: u64) -> PathBuf {
    let path = dir.join(name);
    prepare(&path, len, Replace::BenchFileOnly, &Control::default()).unwrap();
    path
}

fn prepare_in_time(path: &Path, size: u64, replace: Replace) -> Result<PrepareReport, RunError> {
    let path = path.to_path_buf();
    within_deadline("prepare", move || {
        prepare(&path, size, replace, &Control::default())
    })
}

fn read_in_time(path: &Path) -> Result<zerohop_io::RunReport, RunError> {
    let cfg = ReadConfig {
        block_size: 4096,
        ..ReadConfig::new(vec![path.to_path_buf()])
    };
    within_deadline("bench read", move || run_read(&cfg, &Control::default()))
}

/// The names in `dir` other than `keep`: a temporary file left behind
/// shows up here.
fn leftovers(dir: &Path, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !keep.contains(&name.as_str()))
        .collect()
}

#[test]
fn a_fifo_given_to_read_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    for path in [fifo.clone(), {
        let link = dir.path().join("link-to-fifo");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        link
    }] {
        match read_in_time(&path) {
            Err(RunError::Input(InputError::NotAFile { kind: "fifo", .. })) => {}
            other => panic!("{}: expected a refusal, got {other:?}", path.display()),
        }
    }
}

#[test]
fn a_character_device_given_to_read_is_refused() {
    // /dev/zero would read forever, /dev/tty would wait for a keystroke.
    for device in ["/dev/zero", "/dev/null"] {
        match read_in_time(Path::new(device)) {
            Err(RunError::Input(InputError::NotAFile {
                kind: "character device",
                ..
            })) => {}
            other => panic!("{device}: expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn a_block_device_is_still_a_target() {
    // Any block device this user may open will do; CI runners often have none.
    let Ok(Some(names)) = HostRoot::live().list("/sys/class/block") else {
        eprintln!("no /sys/class/block: nothing to check");
        return;
    };
    let mut opened = false;
    for name in names {
        let dev = Path::new("/dev").join(name);
        let dev_for_thread = dev.clone();
        match within_deadline("open_target", move || {
            open_target(&HostRoot::live(), &dev_for_thread, 4096, false)
        }) {
            Ok(target) => {
                assert_eq!(target.kind, TargetKind::BlockDevice, "{}", dev.display());
                assert!(target.len >= 4096);
                opened = true;
            }
            // Without the privilege to open it, a device node must still
            // be refused for that reason, not for being a block device.
            Err(err @ (InputError::NotAFile { .. } | InputError::Changed { .. })) => {
                panic!("{}: refused as a target: {err}", dev.display());
            }
            Err(_) => {}
        }
    }
    if !opened {
        eprintln!("no block device can be opened by this user: only the refusals were checked");
    }
}

#[test]
fn prepare_does_not_overwrite_a_file_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let user_file = dir.path().join("userfile.db");
    std::fs::write(&user_file, b"SQLite format 3\0 precious rows").unwrap();
    match prepare_in_time(&user_file, 4096, Replace::BenchFileOnly) {
        Err(RunError::Input(err @ InputError::NotABenchFile { .. })) => {
            assert!(err.to_string().contains("--force"), "{err}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        std::fs::read(&user_file).unwrap(),
        b"SQLite format 3\0 precious rows"
    );
    assert_eq!(
        leftovers(dir.path(), &["userfile.db"]),
        Vec::<String>::new()
    );
    // An empty file is not a previous prepare either.
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(
        prepare_in_time(&empty, 4096, Replace::BenchFileOnly),
        Err(RunError::Input(InputError::NotABenchFile { .. }))
    ));
}

#[test]
fn prepare_with_force_replaces_a_regular_file_without_writing_through_hard_links() {
    let dir = tempfile::tempdir().unwrap();
    let user_file = dir.path().join("userfile.db");
    std::fs::write(&user_file, b"precious").unwrap();
    let other_name = dir.path().join("other-name");
    std::fs::hard_link(&user_file, &other_name).unwrap();
    let report = prepare_in_time(&user_file, 8192, Replace::AnyRegularFile).unwrap();
    assert!(report.complete && report.replaced);
    assert_eq!(std::fs::metadata(&user_file).unwrap().len(), 8192);
    // The file is replaced by name: the other link keeps the old data.
    assert_eq!(std::fs::read(&other_name).unwrap(), b"precious");
}

#[test]
fn prepare_does_not_follow_a_symlink_even_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.path().join("data");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    // A link to a previous bench file is refused too: the rule is about
    // links, not about what they point to.
    let bench = bench_file(dir.path(), "bench", 4096);
    let bench_link = dir.path().join("bench-link");
    std::os::unix::fs::symlink(&bench, &bench_link).unwrap();
    for (path, replace) in [
        (&link, Replace::BenchFileOnly),
        (&link, Replace::AnyRegularFile),
        (&bench_link, Replace::BenchFileOnly),
    ] {
        match prepare_in_time(path, 4096, replace) {
            Err(RunError::Input(InputError::Symlink { .. })) => {}
            other => panic!(
                "{} {replace:?}: expected a refusal, got {other:?}",
                path.display()
            ),
        }
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn prepare_refuses_special_files_without_opening_them() {
    let dir = tempfile::tempdir().unwrap();
    // Opening a FIFO for writing waits for a reader.
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    for (path, kind) in [
        (fifo.as_path(), "fifo"),
        (Path::new("/dev/full"), "character device"),
    ] {
        match prepare_in_time(path, 4096, Replace::AnyRegularFile) {
            Err(RunError::Input(InputError::NotRegular { kind: got, .. })) => {
                assert_eq!(got, kind);
            }
            other => panic!("{}: expected a refusal, got {other:?}", path.display()),
        }
    }
}

#[test]
fn prepare_checks_free_space_before_creating_anything() {
    let dir = tempfile::tempdir().unwrap();
    let previous = bench_file(dir.path(), "data", 4096);
    let before = std::fs::read(&previous).unwrap();
    // More than any filesystem here has free.
    let size = 1u64 << 62;
    match prepare_in_time(&previous, size, Replace::BenchFileOnly) {
        Err(RunError::Input(err @ InputError::NoSpace { .. })) => {
            let text = err.to_string();
            assert!(text.contains(&size.to_string()), "{text}");
            assert!(text.contains("available"), "{text}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(std::fs::read(&previous).unwrap(), before);
    assert_eq!(leftovers(dir.path(), &["data"]), Vec::<String>::new());
}

#[test]
fn an_interrupted_prepare_leaves_the_previous_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let previous = bench_file(dir.path(), "data", 4096);
    let before = std::fs::read(&previous).unwrap();
    let control = Control::default();
    let stopper = control.clone();
    // Raise the stop flag once the first chunks are written.
    let watcher = std::thread::spawn(move || {
        while stopper.progress.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        stopper.stop.store(true, Ordering::Relaxed);
    });
    let path = previous.clone();
    let report = within_deadline("prepare", move || {
        prepare(&path, 256 << 20, Replace::BenchFileOnly, &control)
    })
    .unwrap();
    watcher.join().unwrap();
    assert!(!report.complete && !report.replaced);
    assert_eq!(std::fs::read(&previous).unwrap(), before);
    assert_eq!(leftovers(dir.path(), &["data"]), Vec::<String>::new());
}

#[test]
fn a_bench_file_grown_with_other_data_is_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = bench_file(dir.path(), "data", 64 << 10);
    // Someone appended their own data to a bench file.
    let mut data = std::fs::read(&path).unwrap();
    data.extend_from_slice(&[0x55; 10_000]);
    std::fs::write(&path, &data).unwrap();
    assert!(matches!(
        prepare_in_time(&path, 4096, Replace::BenchFileOnly),
        Err(RunError::Input(InputError::NotABenchFile { .. }))
    ));
    assert_eq!(std::fs::read(&path).unwrap(), data);
}
