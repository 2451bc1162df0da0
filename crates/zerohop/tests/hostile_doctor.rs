//! `zerohop doctor` and `zerohop topo` on hostile hosts, as a user runs
//! them: special files where files belong, probe targets that never
//! answer, roots that are no host, listings too large to trust, host names
//! holding terminal escapes. Every run has a deadline and is killed past
//! it: a hang fails the test instead of stalling the suite.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// What a finished run of zerohop gave.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `program args` and kills it when it outlives `limit`.
fn run_within(limit: Duration, program: &str, args: &[&str]) -> Run {
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zerohop runs");
    // Drained on their own threads so a full pipe never stalls the child.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        took: start.elapsed(),
    }
}

fn zerohop(args: &[&str]) -> Run {
    run_within(Duration::from_secs(60), env!("CARGO_BIN_EXE_zerohop"), args)
}

/// A minimal host tree: `proc/` and `sys/`.
fn host() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("proc")).unwrap();
    fs::create_dir_all(dir.path().join("sys/class")).unwrap();
    dir
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a utf-8 temporary path")
}

/// A FIFO made with coreutils' `mkfifo`.
fn mkfifo(at: &Path) {
    let made = Command::new("mkfifo")
        .arg(at)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", at.display());
}

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zerohop-doctor/tests/fixtures")
        .join(case)
}

#[test]
fn a_fifo_as_proc_cmdline_is_refused_not_waited_on() {
    let dir = host();
    mkfifo(&dir.path().join("proc/cmdline"));
    let root = path(dir.path());
    let doctor = zerohop(&[
        "doctor", "--root", root, "--only", "KRN001", "--format", "json",
    ]);
    assert_eq!(doctor.code, Some(0), "{}", doctor.stderr);
    assert!(
        doctor
            .stdout
            .contains("/proc/cmdline is a fifo, not a regular file"),
        "{}",
        doctor.stdout
    );
    let topo = zerohop(&["topo", "--root", root]);
    assert_eq!(topo.code, Some(0), "{}", topo.stderr);
}

#[test]
fn a_terminal_device_as_proc_cmdline_is_refused_not_waited_on() {
    // `c 4 5` is a virtual console: a reader waits for a key press. Making
    // it needs CAP_MKNOD; without it the same test runs on a FIFO, which
    // blocks a reader the same way.
    let dir = host();
    let cmdline = dir.path().join("proc/cmdline");
    let device = Command::new("mknod")
        .arg(&cmdline)
        .args(["c", "4", "5"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let said = if device {
        "is a character device"
    } else {
        eprintln!("mknod needs CAP_MKNOD: testing with a FIFO instead");
        mkfifo(&cmdline);
        "is a fifo"
    };
    for command in ["doctor", "topo"] {
        let run = zerohop(&[command, "--root", path(dir.path()), "--format", "json"]);
        assert_eq!(run.code, Some(0), "{command}: {}", run.stderr);
        if command == "doctor" {
            assert!(run.stdout.contains(said), "{}", run.stdout);
        }
    }
}

#[test]
fn a_probe_of_a_fifo_is_reported_as_timed_out_not_waited_on() {
    // Opening a FIFO waits for a writer, as an open on a hung NFS mount
    // waits for the server. (A directory whose listing hangs needs a hung
    // mount, which a test cannot make without privileges; the listing runs
    // under the same deadline.)
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("data");
    mkfifo(&fifo);
    let run = zerohop(&[
        "doctor",
        "--only",
        "GDS006",
        "--probe",
        path(&fifo),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let finding = &report["findings"][0];
    assert_eq!(finding["id"], "GDS006");
    assert_eq!(finding["status"], "unknown", "{finding}");
    let message = finding["message"].as_str().unwrap();
    assert!(message.contains("timed out"), "{message}");
    assert!(run.took < Duration::from_secs(20), "took {:?}", run.took);
}

#[test]
fn a_missing_probe_target_is_an_input_error() {
    let run = zerohop(&[
        "doctor",
        "--only",
        "GDS006",
        "--probe",
        "/no/such/zerohop/data",
    ]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .contains("--probe /no/such/zerohop/data: no such file or directory"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_empty_directory_is_not_a_host_root() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["doctor", "topo"] {
        let run = zerohop(&[command, "--root", path(dir.path())]);
        assert_eq!(run.code, Some(2), "{command}: {}", run.stdout);
        assert!(
            run.stderr
                .contains("is not a host root: it holds neither proc/ nor sys/"),
            "{}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
}

#[test]
fn proc_itself_is_not_a_host_root() {
    if !Path::new("/proc/self").exists() {
        eprintln!("skipped: /proc is not mounted");
        return;
    }
    let run = zerohop(&["doctor", "--root", "/proc"]);
    assert_eq!(run.code, Some(2), "{}", run.stdout);
    assert!(
        run.stderr.contains("it is the proc file system itself"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unreadable_root_is_an_input_error() {
    let dir = host();
    let root = dir.path().join("host");
    fs::create_dir_all(root.join("proc")).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads a mode-000 directory anyway: drop the two capabilities
    // that let it, with util-linux's setpriv, to see what a user sees.
    let uid = fs::metadata(dir.path()).unwrap().uid();
    let run = if uid != 0 {
        zerohop(&["doctor", "--root", path(&root)])
    } else if Command::new("setpriv").arg("--version").output().is_ok() {
        run_within(
            Duration::from_secs(60),
            "setpriv",
            &[
                "--bounding-set=-dac_override,-dac_read_search",
                env!("CARGO_BIN_EXE_zerohop"),
                "doctor",
                "--root",
                path(&root),
            ],
        )
    } else {
        eprintln!("skipped: running as root without setpriv to drop CAP_DAC_OVERRIDE");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        return;
    };
    fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(run.code, Some(2), "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("cannot be read"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn topo_says_unknown_when_the_pci_listing_is_capped() {
    let dir = zerohop_testkit::shared_data::scratch();
    let devices = dir.path().join("sys/bus/pci/devices");
    fs::create_dir_all(&devices).unwrap();
    // One entry more than a listing returns (65,536).
    for index in 0..=65_536 {
        fs::File::create(devices.join(format!("{index:05x}"))).unwrap();
    }
    let root = path(dir.path());
    let human = zerohop(&["topo", "--root", root]);
    assert_eq!(human.code, Some(0), "{}", human.stderr);
    assert!(human.stdout.starts_with("unknown:"), "{}", human.stdout);
    assert!(
        human.stdout.contains("more than 65536 entries"),
        "{}",
        human.stdout
    );
    assert!(!human.stdout.contains("no nvidia gpu"), "{}", human.stdout);
    let json = zerohop(&["topo", "--root", root, "--format", "json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["pci_unreadable"]["path"], "/sys/bus/pci/devices");
    let doctor = zerohop(&[
        "doctor", "--root", root, "--only", "gpu,pcie", "--format", "json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    for finding in report["findings"].as_array().unwrap() {
        assert_eq!(finding["status"], "unknown", "{finding}");
    }
}

/// Copies `from` to `to` with `name` replaced by `renamed` in file names,
/// link targets and file contents.
fn copy_renamed(from: &Path, to: &Path, name: &str, renamed: &str) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let source = entry.path();
        let target = to.join(entry.file_name().to_string_lossy().replace(name, renamed));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            let link = fs::read_link(&source).unwrap();
            symlink(link.to_string_lossy().replace(name, renamed), &target).unwrap();
        } else if kind.is_dir() {
            copy_renamed(&source, &target, name, renamed);
        } else {
            let text = fs::read_to_string(&source).unwrap();
            fs::write(&target, text.replace(name, renamed)).unwrap();
        }
    }
}

#[test]
fn topo_shows_terminal_escapes_in_host_names_instead_of_sending_them() {
    // An RDMA device whose name sets the terminal's title (OSC 0) when
    // printed raw.
    let dir = tempfile::tempdir().unwrap();
    copy_renamed(
        &fixture("GPU005/pass-same-switch"),
        dir.path(),
        "mlx5_0",
        "mlx5_0\u{1b}]0;pwned\u{7}",
    );
    let run = zerohop(&["topo", "--root", path(dir.path())]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'),
        "raw control characters reached the output: {:?}",
        run.stdout
    );
    assert!(
        run.stdout.contains("mlx5_0\\x1b]0;pwned\\x07"),
        "{}",
        run.stdout
    );
    // JSON escapes them its own way and keeps the name as read.
    let json = zerohop(&["topo", "--root", path(dir.path()), "--format", "json"]);
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(document["nics"][0]["name"], "mlx5_0\u{1b}]0;pwned\u{7}");
}

#[test]
fn topo_json_is_versioned_like_the_report() {
    let run = zerohop(&[
        "topo",
        "--root",
        path(&fixture("GPU005/pass-same-switch")),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let document: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(document["schema_version"], 1);
    assert!(document.get("version").is_none(), "{document}");
    assert_eq!(document["nccl_ib_hca"], "=mlx5_0:1");
}
