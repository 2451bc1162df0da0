//! `zerohop bench` given hostile input, as a user runs it: FIFOs and
//! devices where files are expected, links and other people's files as the
//! destination of `prepare`, a full disk, terminal controls in a path. Each
//! run has a deadline and is killed past it, so a hang fails the test
//! instead of stalling CI.

use std::fs::Permissions;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Longer than any of these runs takes, far shorter than a hang.
const DEADLINE: Duration = Duration::from_secs(30);

/// Runs `command` to its end, capturing both outputs, or kills it at the
/// deadline and fails.
fn run_with_deadline(command: &mut Command) -> Output {
    command.stdout(Stdio::piped());
    try_run_with_deadline(command).expect("zerohop starts")
}

/// Like [`run_with_deadline`] with standard output as the caller set it
/// (captured only if piped), and an error when the command cannot start.
fn try_run_with_deadline(command: &mut Command) -> std::io::Result<Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    // Drain both pipes on threads so that a chatty child cannot block.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = wait_or_kill(&mut child);
    Ok(Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    })
}

fn wait_or_kill(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("zerohop did not finish within {DEADLINE:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn zerohop(args: &[&str]) -> Output {
    run_with_deadline(Command::new(env!("CARGO_BIN_EXE_zerohop")).args(args))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Checks an environment or input error: exit 2 and one line on standard
/// error that says `expected`, with the kernel's error at most once.
fn assert_refused(out: &Output, expected: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains(expected), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one sentence: {stderr}");
    assert!(stderr.matches("os error").count() <= 1, "{stderr}");
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn prepare(path: &Path, size: &str, extra: &[&str]) -> Output {
    let mut args = vec!["bench", "prepare", path.to_str().unwrap(), "--size", size];
    args.extend(extra);
    zerohop(&args)
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
fn prepare_refuses_to_overwrite_a_user_file() {
    let dir = tempfile::tempdir().unwrap();
    let user_file = dir.path().join("userfile.db");
    std::fs::write(&user_file, b"precious rows").unwrap();
    let out = prepare(&user_file, "4K", &[]);
    assert_refused(&out, "not written by `zerohop bench prepare`");
    assert!(text(&out.stderr).contains("--force"));
    assert_eq!(std::fs::read(&user_file).unwrap(), b"precious rows");
    assert_eq!(
        leftovers(dir.path(), &["userfile.db"]),
        Vec::<String>::new()
    );
}

#[test]
fn prepare_with_force_replaces_a_user_file_and_again_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("userfile.db");
    std::fs::write(&file, b"precious rows").unwrap();
    let out = prepare(&file, "4K", &["--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("replacing the previous file"));
    // Now a bench file, so replaced without --force.
    let out = prepare(&file, "8K", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 8192);
}

#[test]
fn prepare_does_not_write_through_a_symlink_even_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.path().join("data");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let out = prepare(&link, "4K", extra);
        assert_refused(&out, "is a symbolic link");
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
fn prepare_refuses_a_fifo_and_a_device_not_waits_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    assert_refused(&prepare(&fifo, "4K", &["--force"]), "is a fifo");
    assert_refused(
        &prepare(Path::new("/dev/full"), "4K", &["--force"]),
        "is a character device",
    );
}

#[test]
fn prepare_checks_free_space_before_creating_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    // 8 EiB: more than any filesystem here has.
    let out = prepare(&file, "8388608T", &[]);
    assert_refused(&out, "9223372036854775808 bytes (");
    assert!(text(&out.stderr).contains("available"));
    assert_eq!(leftovers(dir.path(), &[]), Vec::<String>::new());
}

#[test]
fn a_prepare_that_fails_while_writing_leaves_the_previous_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let out = prepare(&file, "64K", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let before = std::fs::read(&file).unwrap();
    // A file size limit makes the 8th MiB fail the way a full disk does,
    // after the free-space check passed; SIGXFSZ is ignored so the write
    // returns EFBIG instead of killing the process.
    let out = run_with_deadline(
        Command::new("sh")
            .arg("-c")
            .arg(r#"trap '' XFSZ; ulimit -f 4096 && exec "$0" bench prepare "$1" --size 8M"#)
            .arg(env!("CARGO_BIN_EXE_zerohop"))
            .arg(&file),
    );
    assert_refused(&out, "nothing was replaced");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(leftovers(dir.path(), &["data"]), Vec::<String>::new());
}

#[test]
fn read_and_compare_refuse_a_fifo_and_a_character_device() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    // A character device of our own when mknod is allowed (root), else the
    // system's /dev/zero given directly: the same refusal either way.
    let node = dir.path().join("zero");
    let made = Command::new("mknod")
        .args([node.to_str().unwrap(), "c", "1", "5"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let device = if made {
        node
    } else {
        eprintln!("mknod is not permitted here: using /dev/zero");
        Path::new("/dev/zero").to_path_buf()
    };
    for command in ["read", "compare"] {
        let out = zerohop(&["bench", command, fifo.to_str().unwrap(), "--bs", "4K"]);
        assert_refused(&out, "is a fifo, not a regular file or block device");
        let out = zerohop(&["bench", command, device.to_str().unwrap(), "--bs", "4K"]);
        assert_refused(
            &out,
            "is a character device, not a regular file or block device",
        );
    }
}

#[test]
fn json_documents_carry_the_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let prepared = prepare(&file, "256K", &["--format", "json"]);
    let read = zerohop(&[
        "bench",
        "read",
        file.to_str().unwrap(),
        "--bs",
        "64K",
        "--format",
        "json",
    ]);
    let compare = zerohop(&[
        "bench",
        "compare",
        file.to_str().unwrap(),
        "--bs",
        "64K",
        "--format",
        "json",
    ]);
    for out in [prepared, read, compare] {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["schema_version"], 1, "{doc}");
    }
}

#[test]
fn output_names_no_rust_types() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    assert_eq!(prepare(&file, "256K", &[]).status.code(), Some(0));
    let path = file.to_str().unwrap();
    let human = zerohop(&["bench", "read", path, "--bs", "64K", "--ramp", "10ms"]);
    let stdout = text(&human.stdout);
    assert!(stdout.contains("sink=host"), "{stdout}");
    let buffers = stdout
        .lines()
        .find(|l| l.starts_with("buffers"))
        .expect("a buffers line");
    assert!(
        ["hugetlb1g", "hugetlb2m", "anonymous"]
            .iter()
            .any(|kind| buffers.contains(kind)),
        "{buffers}"
    );
    for rust_name in ["Host", "Anonymous", "Hugetlb", "Gpu", "Some(", "None"] {
        assert!(!stdout.contains(rust_name), "{rust_name} in {stdout}");
    }
    let json = zerohop(&["bench", "read", path, "--bs", "64K", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["job"]["ramp_s"], 0.0, "durations are seconds");
    assert!(!text(&json.stdout).contains("\"secs\""));
    assert!(doc["environment"]["io_uring"]["opcodes"].is_object());
    // Without CUDA the GPU sink is skipped: said on stdout for people, on
    // stderr (lowercase, once) for a JSON reader.
    let human = zerohop(&["bench", "read", path, "--bs", "64K", "--sink", "gpu"]);
    if text(&human.stdout).starts_with("skipped:") {
        assert_eq!(text(&human.stderr), "");
        let json = zerohop(&[
            "bench", "read", path, "--bs", "64K", "--sink", "gpu", "--format", "json",
        ]);
        let stderr = text(&json.stderr);
        assert!(
            stderr.starts_with("warning: gpu sink skipped: "),
            "{stderr}"
        );
    }
}

#[test]
fn the_hugepage_fallback_is_said_at_most_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    assert_eq!(prepare(&file, "256K", &[]).status.code(), Some(0));
    let path = file.to_str().unwrap();
    for command in ["read", "compare"] {
        let out = zerohop(&["bench", command, path, "--bs", "64K"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let hugepage_lines = stdout
            .lines()
            .filter(|l| l.starts_with("fallback") && l.contains("hugepages"))
            .count();
        assert!(hugepage_lines <= 1, "{stdout}");
        assert!(!stdout.contains("hugepages_1g"), "{stdout}");
    }
}

#[test]
fn iopoll_without_direct_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    assert_eq!(prepare(&file, "64K", &[]).status.code(), Some(0));
    let out = zerohop(&["bench", "read", file.to_str().unwrap(), "--iopoll"]);
    assert_refused(&out, "--iopoll needs --direct");
    assert!(text(&out.stderr).contains("O_DIRECT"));
}

#[test]
fn environment_errors_exit_2_with_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    assert_refused(
        &zerohop(&["bench", "read", missing.to_str().unwrap()]),
        "no such file or device",
    );
    // Permission denied: a directory the user may not write in. Root
    // passes every permission check, so as root the run drops to `nobody`
    // (uid 65534) for it.
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let probe = dir.path().join("probe");
    std::fs::write(&probe, b"").unwrap();
    let root = std::fs::metadata(&probe).unwrap().uid() == 0;
    let target = locked.join("data");
    let mut command = Command::new(env!("CARGO_BIN_EXE_zerohop"));
    command.args(["bench", "prepare", target.to_str().unwrap(), "--size", "4K"]);
    command.stdout(Stdio::piped());
    if root {
        // nobody must reach the directory, not write in it.
        std::fs::set_permissions(dir.path(), Permissions::from_mode(0o755)).unwrap();
        command.uid(65534).gid(65534);
    } else {
        std::fs::set_permissions(&locked, Permissions::from_mode(0o555)).unwrap();
    }
    match try_run_with_deadline(&mut command) {
        Ok(out) => assert_refused(&out, "cannot create the new file in this directory"),
        // The test binary itself may be out of nobody's reach.
        Err(err) => eprintln!("cannot run zerohop as nobody here ({err}): skipped"),
    }
    // A full standard output.
    let file = dir.path().join("data");
    assert_eq!(prepare(&file, "64K", &[]).status.code(), Some(0));
    let out = try_run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_zerohop"))
            .args(["bench", "read", file.to_str().unwrap(), "--bs", "64K"])
            .stdout(std::fs::File::create("/dev/full").unwrap()),
    )
    .unwrap();
    assert_refused(&out, "cannot write to standard output");
}

#[test]
fn terminal_controls_in_a_path_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a\u{1b}]0;pwned\u{7}b");
    let out = prepare(&file, "4K", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!out.stdout.contains(&0x1b), "{:?}", text(&out.stdout));
    assert!(text(&out.stdout).contains(r"a\x1b]0;pwned\x07b"));
    let missing = dir.path().join("m\u{1b}[2J");
    let out = zerohop(&["bench", "read", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!out.stderr.contains(&0x1b), "{:?}", text(&out.stderr));
}
