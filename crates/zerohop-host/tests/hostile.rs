//! Hostile host trees: special files where regular files belong, links that
//! lead out of the tree, probe targets that never answer. Each read must
//! come back, at once or at its deadline, with an error that names the path
//! and what it is; nothing may hang. Every test bounds its own time.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rustix::fs::{CWD, FileType, Mode, mknodat};
use zerohop_host::probe::{self, DirectIo, MissingTarget, ProbeState};
use zerohop_host::{Facts, FileKind, HostRoot, ReadError};

/// Runs `work` on a thread and fails the test if it takes longer than
/// `limit`: a hang must fail, not stall the suite.
fn within<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, answer) = mpsc::channel();
    thread::spawn(move || done.send(work()));
    answer
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}"))
}

const QUICK: Duration = Duration::from_secs(10);

/// A host tree with `proc/` and `sys/`.
fn host() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("proc")).unwrap();
    fs::create_dir_all(dir.path().join("sys/class")).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    mknodat(CWD, path, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
}

/// Makes a device node, which needs `CAP_MKNOD`; `false` when this process
/// lacks it.
fn mknod(path: &Path, kind: FileType, major: u32, minor: u32) -> bool {
    let dev = rustix::fs::makedev(major, minor);
    match mknodat(CWD, path, kind, Mode::RUSR | Mode::WUSR, dev) {
        Ok(()) => true,
        Err(rustix::io::Errno::PERM | rustix::io::Errno::ACCESS) => false,
        Err(err) => panic!("mknod {}: {err}", path.display()),
    }
}

/// Reads `path` in the tree under `dir` within the quick bound.
fn read_in(dir: &Path, path: &'static str) -> Result<Option<String>, ReadError> {
    let root = HostRoot::at(dir).unwrap();
    within(QUICK, move || root.read(path))
}

fn assert_refused(result: Result<Option<String>, ReadError>, path: &str, kind: FileKind) {
    match result {
        Err(ReadError::NotAFile {
            path: named,
            kind: found,
        }) => {
            assert_eq!((named.as_str(), found), (path, kind));
        }
        other => panic!("{path}: expected it refused as {kind}, got {other:?}"),
    }
}

#[test]
fn a_fifo_as_proc_cmdline_is_refused_not_waited_on() {
    let dir = host();
    mkfifo(&dir.path().join("proc/cmdline"));
    let result = read_in(dir.path(), "/proc/cmdline");
    assert_refused(result.clone(), "/proc/cmdline", FileKind::Fifo);
    assert_eq!(
        result.unwrap_err().to_string(),
        "/proc/cmdline is a fifo, not a regular file"
    );
}

#[test]
fn a_fifo_read_through_the_facts_is_a_gap_never_absent() {
    let dir = host();
    mkfifo(&dir.path().join("proc/cmdline"));
    let root = HostRoot::at(dir.path()).unwrap();
    let facts = within(QUICK, move || Facts::collect(&root));
    let gap = facts
        .kernel
        .cmdline
        .expect_err("a fifo is not an absent file");
    assert_eq!(gap.path, "/proc/cmdline");
    assert!(gap.reason.contains("is a fifo"), "{}", gap.reason);
}

#[test]
fn a_terminal_device_as_proc_cmdline_is_refused() {
    // `c 4 5` is a virtual console: reading it waits for a key press.
    let dir = host();
    if mknod(
        &dir.path().join("proc/cmdline"),
        FileType::CharacterDevice,
        4,
        5,
    ) {
        assert_refused(
            read_in(dir.path(), "/proc/cmdline"),
            "/proc/cmdline",
            FileKind::CharDevice,
        );
    } else {
        eprintln!("mknod needs CAP_MKNOD: only the live-host half of this test ran");
    }
    // Without privileges a device node cannot be made, but the live root
    // reads the path it is given: `/dev/zero` never ends and `/dev/tty`
    // waits for input.
    for device in ["/dev/zero", "/dev/tty"] {
        if !Path::new(device).exists() {
            continue;
        }
        let result = within(QUICK, move || HostRoot::live().read(device));
        assert_refused(result, device, FileKind::CharDevice);
    }
}

#[test]
fn a_block_device_is_refused() {
    let dir = host();
    // `b 7 0` is the first loop device.
    if mknod(
        &dir.path().join("proc/meminfo"),
        FileType::BlockDevice,
        7,
        0,
    ) {
        assert_refused(
            read_in(dir.path(), "/proc/meminfo"),
            "/proc/meminfo",
            FileKind::BlockDevice,
        );
    } else {
        eprintln!("skipped: mknod of a block device needs CAP_MKNOD");
    }
}

#[test]
fn a_socket_is_refused() {
    let dir = host();
    let _listener = UnixListener::bind(dir.path().join("proc/cmdline")).unwrap();
    assert_refused(
        read_in(dir.path(), "/proc/cmdline"),
        "/proc/cmdline",
        FileKind::Socket,
    );
    // The live root opens what it is given: a socket cannot be opened at
    // all, and the error still says what it is.
    let live = dir.path().join("proc/cmdline").display().to_string();
    let shown = live.clone();
    let result = within(QUICK, move || HostRoot::live().read(&live));
    assert_refused(result, &shown, FileKind::Socket);
}

#[test]
fn a_directory_where_a_file_belongs_is_refused() {
    let dir = host();
    fs::create_dir_all(dir.path().join("proc/cmdline")).unwrap();
    assert_refused(
        read_in(dir.path(), "/proc/cmdline"),
        "/proc/cmdline",
        FileKind::Directory,
    );
}

#[test]
fn links_to_devices_and_fifos_outside_the_tree_stay_inside_it() {
    let outside = tempfile::tempdir().unwrap();
    let fifo = outside.path().join("fifo");
    mkfifo(&fifo);
    let dir = host();
    let proc = dir.path().join("proc");
    // Absolute targets restart at the root of the tree, and `..` stops at
    // it: neither reaches this machine's `/dev/zero` or the outside FIFO.
    symlink("/dev/zero", proc.join("cmdline")).unwrap();
    symlink(&fifo, proc.join("meminfo")).unwrap();
    let climbing: PathBuf = ["..", "..", "..", "..", "..", ".."]
        .iter()
        .collect::<PathBuf>()
        .join(fifo.strip_prefix("/").unwrap());
    symlink(&climbing, proc.join("modules")).unwrap();
    for path in ["/proc/cmdline", "/proc/meminfo", "/proc/modules"] {
        assert_eq!(read_in(dir.path(), path), Ok(None), "{path}");
    }
    // A link to a FIFO inside the tree is followed, and the FIFO refused.
    mkfifo(&dir.path().join("proc/real-fifo"));
    symlink("real-fifo", proc.join("mounts")).unwrap();
    assert_refused(
        read_in(dir.path(), "/proc/mounts"),
        "/proc/mounts",
        FileKind::Fifo,
    );
    // The live root follows links as the OS does, and refuses the FIFO.
    let link = outside.path().join("link");
    symlink(&fifo, &link).unwrap();
    let live = link.display().to_string();
    let shown = live.clone();
    let result = within(QUICK, move || HostRoot::live().read(&live));
    assert_refused(result, &shown, FileKind::Fifo);
}

#[test]
fn a_listing_past_the_cap_is_an_error_not_a_short_list() {
    let dir = tempfile::tempdir_in(shm()).unwrap();
    let devices = dir.path().join("sys/bus/pci/devices");
    fs::create_dir_all(&devices).unwrap();
    for index in 0..=zerohop_host::root::MAX_DIR_ENTRIES {
        fs::File::create(devices.join(format!("{index:05x}"))).unwrap();
    }
    let root = HostRoot::at(dir.path()).unwrap();
    let result = within(Duration::from_secs(60), move || {
        root.list("/sys/bus/pci/devices")
    });
    assert!(
        matches!(&result, Err(ReadError::TooManyEntries { cap, .. }) if *cap == zerohop_host::root::MAX_DIR_ENTRIES),
        "{result:?}"
    );
}

/// tmpfs when the machine has one: tens of thousands of files are created
/// there in a fraction of the time a disk takes.
fn shm() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

#[test]
fn a_probe_of_a_fifo_times_out_instead_of_hanging() {
    // Opening a FIFO for reading waits for a writer, as an open on a hung
    // NFS mount waits for the server: the probe must give up at its
    // deadline and say so. (A directory whose listing hangs cannot be made
    // without a hung mount, which a test cannot set up unprivileged; the
    // listing runs under the same deadline as the open.)
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("data");
    mkfifo(&fifo);
    let target = fifo.clone();
    let start = Instant::now();
    let state = within(QUICK, move || {
        probe::run_within(&HostRoot::live(), &target, Duration::from_millis(300))
    });
    let elapsed = start.elapsed();
    match state {
        Ok(ProbeState::Done(probes)) => match probes.direct {
            DirectIo::TimedOut { path, reason } => {
                assert_eq!(path, fifo.display().to_string());
                assert!(reason.contains("did not finish within"), "{reason}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        },
        other => panic!("expected probes, got {other:?}"),
    }
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    // Let the abandoned probe thread go.
    drop(
        OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo),
    );
}

#[test]
fn a_probe_of_a_missing_path_is_an_error() {
    let target = Path::new("/nonexistent/zerohop/data");
    let state = within(QUICK, move || probe::run(&HostRoot::live(), target));
    assert_eq!(state, Err(MissingTarget(target.to_path_buf())));
}
