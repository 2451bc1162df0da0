//! `zerohop plan` run as a user or an attacker would run it: special files
//! as the intent, injection through the intent, a user's directory or an
//! unwritable place as the output, a full disk, eight runs at once. Every
//! run has a deadline: a hang fails the test instead of stalling the suite.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(20);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example() -> PathBuf {
    repo().join("examples/cluster.yaml")
}

fn zerohop() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zerohop"));
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Waits for `child` until `deadline`, killing it and failing the test
/// when it is still running then.
fn finish(mut child: Child, deadline: Instant) -> Output {
    loop {
        match child.try_wait().expect("wait") {
            Some(_) => return child.wait_with_output().expect("output"),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("zerohop did not finish within {DEADLINE:?}");
            }
            None => sleep(Duration::from_millis(10)),
        }
    }
}

fn run(command: &mut Command) -> Output {
    finish(command.spawn().expect("spawn"), Instant::now() + DEADLINE)
}

fn plan(intent: &Path, output: &Path) -> Output {
    run(zerohop().arg("plan").arg(intent).arg("-o").arg(output))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit 2 with one line on standard error that says what is wrong, not
/// an internal error and not the OS error twice.
fn assert_one_sentence_exit_2(output: &Output, mentions: &str) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.starts_with("error: "), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        !text.contains("os error") && !text.contains("internal"),
        "{text}"
    );
    assert!(text.contains(mentions), "{mentions:?} not in {text}");
}

/// The names in `dir` that a run could have left next to its output.
fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".zerohop-"))
        .collect()
}

#[test]
fn a_fifo_as_the_intent_file_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().expect("temp");
    let fifo = dir.path().join("cluster.yaml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo failed");
    let output = plan(&fifo, &dir.path().join("out"));
    assert_one_sentence_exit_2(&output, "is a fifo, not a regular file");
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_terminal_device_as_the_intent_file_is_refused_not_waited_on() {
    // `mknod c 4 5` (a virtual console) needs root; without it the test
    // uses /dev/ptmx, a terminal device every Linux has.
    let dir = tempfile::tempdir().expect("temp");
    let node = dir.path().join("tty5");
    let made = Command::new("mknod")
        .arg(&node)
        .args(["c", "4", "5"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let device = if made {
        node
    } else {
        eprintln!("mknod is not permitted here: testing /dev/ptmx instead");
        PathBuf::from("/dev/ptmx")
    };
    let output = plan(&device, &dir.path().join("out"));
    // Opening a console that is not there fails at once; both are refusals.
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn an_endless_device_as_the_intent_file_is_refused_not_read() {
    let dir = tempfile::tempdir().expect("temp");
    let output = plan(Path::new("/dev/zero"), &dir.path().join("out"));
    assert_one_sentence_exit_2(&output, "/dev/zero is a character device");
}

#[test]
fn an_oversized_intent_file_is_refused_at_the_cap() {
    let dir = tempfile::tempdir().expect("temp");
    let big = dir.path().join("big.yaml");
    let mut text = fs::read_to_string(example()).expect("example");
    text.push_str(&"#\n".repeat(600_000));
    fs::write(&big, text).expect("write");
    let output = plan(&big, &dir.path().join("out"));
    assert_one_sentence_exit_2(&output, "is larger than 1048576 bytes");
}

#[test]
fn an_injected_pf_is_refused_at_its_field_and_nothing_runs_or_is_written() {
    let dir = tempfile::tempdir().expect("temp");
    let canary = dir.path().join("canary");
    let text = fs::read_to_string(example()).expect("example").replacen(
        "{pf: ens1f0np0,",
        &format!("{{pf: 'x$(touch${{IFS}}{})',", canary.display()),
        1,
    );
    let intent = dir.path().join("cluster.yaml");
    fs::write(&intent, text).expect("write");
    let out = dir.path().join("out");
    let output = plan(&intent, &out);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    // The error points at the pf of the example's first nic.
    let line = 1 + fs::read_to_string(example())
        .expect("example")
        .lines()
        .position(|l| l.contains("{pf: ens1f0np0,"))
        .expect("the example's first nic");
    assert!(
        text.contains(&format!("cluster.yaml:{line}:14: pf \"x$(touch${{IFS}}")),
        "{text}"
    );
    assert!(text.contains("nothing was written"), "{text}");
    assert!(!out.exists() && !canary.exists());
}

#[test]
fn terminal_controls_in_the_intent_path_are_escaped() {
    let dir = tempfile::tempdir().expect("temp");
    let intent = dir.path().join("x\u{1b}]0;owned\u{7}.yaml");
    let output = plan(&intent, &dir.path().join("out"));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(!text.contains(['\u{1b}', '\u{7}']), "{text:?}");
    assert!(text.contains(r"x\x1b]0;owned\x07.yaml"), "{text:?}");
}

#[test]
fn a_kustomize_directory_as_output_is_refused_and_kept() {
    let dir = tempfile::tempdir().expect("temp");
    let deploy = dir.path().join("deploy");
    fs::create_dir_all(deploy.join("overlays")).expect("mkdir");
    for name in [
        "README.md",
        "kustomization.yaml",
        "app.yaml",
        "overlays/kustomization.yaml",
    ] {
        fs::write(deploy.join(name), name).expect("write");
    }
    let output = plan(&example(), &deploy);
    assert_one_sentence_exit_2(&output, "is not a zerohop plan output");
    for name in [
        "README.md",
        "kustomization.yaml",
        "app.yaml",
        "overlays/kustomization.yaml",
    ] {
        assert_eq!(fs::read_to_string(deploy.join(name)).expect("kept"), name);
    }
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_plan_writes_and_rewrites_its_output_with_exit_0() {
    let dir = tempfile::tempdir().expect("temp");
    let out = dir.path().join("out");
    for _ in 0..2 {
        let output = plan(&example(), &out);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(String::from_utf8_lossy(&output.stdout).contains("00-namespace.yaml"));
    }
    assert!(out.join(".zerohop-plan").is_file());
    fs::write(out.join("notes.md"), "mine").expect("user file");
    let output = plan(&example(), &out);
    assert_one_sentence_exit_2(&output, "notes.md (added)");
    assert_eq!(
        fs::read_to_string(out.join("notes.md")).expect("kept"),
        "mine"
    );
}

#[test]
fn outputs_that_cannot_be_replaced_are_exit_2_in_one_sentence() {
    let dir = tempfile::tempdir().expect("temp");
    let file = dir.path().join("file");
    fs::write(&file, "mine").expect("write");
    for (output, mentions) in [
        (
            PathBuf::from("/dev/full"),
            "/dev/full exists and is not a directory",
        ),
        (PathBuf::from("."), ". cannot be the output directory"),
        (PathBuf::from("/"), "/ cannot be the output directory"),
        (file.clone(), "exists and is not a directory"),
        (file.join("out"), "not a directory"),
    ] {
        let result = run(zerohop()
            .current_dir(dir.path())
            .arg("plan")
            .arg(example())
            .arg("-o")
            .arg(&output));
        assert_one_sentence_exit_2(&result, mentions);
    }
    assert_eq!(fs::read_to_string(&file).expect("kept"), "mine");
    assert!(leftovers(dir.path()).is_empty());
}

/// Whether this process can write into a directory whose mode forbids it
/// (root, or CAP_DAC_OVERRIDE).
fn overrides_permissions(dir: &Path) -> bool {
    let probe = dir.join("probe");
    let wrote = fs::write(&probe, "").is_ok();
    let _ = fs::remove_file(&probe);
    wrote
}

#[test]
fn an_unwritable_parent_is_exit_2_not_an_internal_error() {
    let dir = tempfile::tempdir().expect("temp");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let intent = dir.path().join("cluster.yaml");
    fs::copy(example(), &intent).expect("copy");
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).expect("mkdir");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).expect("chmod");
    let out = locked.join("out");
    let mut command = zerohop();
    if overrides_permissions(&locked) {
        // As root the mode is no obstacle: run as nobody, when this
        // machine can switch users.
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("skipped: running as root and setpriv is not installed");
            return;
        }
        command = Command::new("setpriv");
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_zerohop"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    }
    let output = run(command.arg("plan").arg(&intent).arg("-o").arg(&out));
    assert_one_sentence_exit_2(&output, "permission denied");
    assert!(!out.exists() && leftovers(&locked).is_empty());
}

#[test]
fn a_file_size_limit_is_exit_2_and_leaves_nothing_behind() {
    // RLIMIT_FSIZE makes writes fail with EFBIG, without privileges; the
    // signal that would kill the process instead is ignored, as a shell
    // started with `trap '' XFSZ` passes on.
    let dir = tempfile::tempdir().expect("temp");
    let out = dir.path().join("out");
    let output = run(Command::new("sh")
        .args([
            "-c",
            "ulimit -f 4 && trap '' XFSZ && exec \"$0\" plan \"$1\" -o \"$2\"",
        ])
        .arg(env!("CARGO_BIN_EXE_zerohop"))
        .arg(example())
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped()));
    assert_one_sentence_exit_2(&output, "file too large");
    assert!(!out.exists() && leftovers(dir.path()).is_empty());
}

#[test]
fn a_full_disk_is_exit_2_and_leaves_nothing_behind() {
    // A 64 KiB tmpfs in a private mount namespace, when this machine lets
    // the test make one (root with CAP_SYS_ADMIN); it vanishes with the
    // namespace, whatever happens.
    let namespace = Command::new("unshare")
        .args(["--mount", "true"])
        .stderr(Stdio::null())
        .status();
    if !namespace.is_ok_and(|s| s.success()) {
        eprintln!(
            "skipped: no private mount namespace here (needs CAP_SYS_ADMIN); see the file size limit test"
        );
        return;
    }
    let dir = tempfile::tempdir().expect("temp");
    let script = "mount -t tmpfs -o size=64k zerohop-test \"$1\" || exit 99\n\"$2\" plan \"$3\" -o \"$1/out\"\nrc=$?\nls -A \"$1\"\nexit $rc";
    let output = run(Command::new("unshare")
        .args(["--mount", "sh", "-c", script, "sh"])
        .arg(dir.path())
        .arg(env!("CARGO_BIN_EXE_zerohop"))
        .arg(example())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped()));
    assert_one_sentence_exit_2(&output, "no space left on device");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "",
        "left on the full disk"
    );
}

#[test]
fn eight_concurrent_plans_into_one_directory_end_complete_and_leave_nothing() {
    let dir = tempfile::tempdir().expect("temp");
    let reference = dir.path().join("reference");
    assert_eq!(plan(&example(), &reference).status.code(), Some(0));
    let parent = dir.path().join("shared");
    fs::create_dir(&parent).expect("mkdir");
    let out = parent.join("out");
    for round in 0..3 {
        let children: Vec<Child> = (0..8)
            .map(|_| {
                zerohop()
                    .arg("plan")
                    .arg(example())
                    .arg("-o")
                    .arg(&out)
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let deadline = Instant::now() + DEADLINE;
        for child in children {
            let output = finish(child, deadline);
            assert_eq!(
                output.status.code(),
                Some(0),
                "round {round}: {}",
                stderr(&output)
            );
        }
        assert_eq!(
            tree(&out),
            tree(&reference),
            "round {round}: incomplete output"
        );
        assert!(
            leftovers(&parent).is_empty(),
            "round {round}: {:?}",
            leftovers(&parent)
        );
    }
}

/// Every file under `dir`, relative, with its contents.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).expect("list") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("inside").to_path_buf();
                files.push((relative, fs::read(&path).expect("read")));
            }
        }
    }
    files.sort();
    files
}

/// An intent with `count` more rails: big enough for a run to take a
/// while in a debug build, well within the 1 MiB cap.
fn large_intent(count: usize) -> String {
    let text = fs::read_to_string(example()).expect("example");
    let mut rails = String::new();
    for i in 0..count {
        rails.push_str(&format!(
            "      - {{pf: e{i}, rdmaDevice: mlx5_{i}, deviceId: \"1021\", vfs: 4, rail: {}, subnet: 10.{}.{}.0/24, numaNode: 0}}\n",
            100 + i,
            i / 256,
            i % 256
        ));
    }
    text.replacen(
        "      # Storage rail",
        &format!("{rails}      # Storage rail"),
        1,
    )
}

/// Whether process `pid` catches SIGTERM yet (`SigCgt` in its status).
fn catches_sigterm(pid: u32) -> bool {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (15 - 1)) != 0)
}

#[test]
fn a_terminated_plan_exits_143_and_leaves_no_staging_directory() {
    let dir = tempfile::tempdir().expect("temp");
    let intent = dir.path().join("large.yaml");
    fs::write(&intent, large_intent(2000)).expect("write");
    let out = dir.path().join("out");
    let child = zerohop()
        .arg("plan")
        .arg(&intent)
        .arg("-o")
        .arg(&out)
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + DEADLINE;
    // Signal only once the handler is in place, so that the test does not
    // depend on how fast the process starts.
    while !catches_sigterm(child.id()) && Instant::now() < deadline {
        sleep(Duration::from_millis(1));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let output = finish(child, deadline);
    // 128 + SIGTERM, as a shell counts it.
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));
    assert!(
        stderr(&output).starts_with("interrupted"),
        "{}",
        stderr(&output)
    );
    // Nothing, or the whole output with its marker: never half of it.
    assert!(!out.exists() || out.join(".zerohop-plan").is_file());
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}
