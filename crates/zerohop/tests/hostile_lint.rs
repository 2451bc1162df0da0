//! `zerohop lint` under hostile input, end to end: the built binary is run
//! as CI runs it on a pull request, each run with a deadline (a hang fails
//! the test instead of stalling it).

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// How long one run may take: far more than any of them needs.
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `zerohop lint ARGS` with standard output and error captured (or
/// standard output sent to `stdout` when given) and a deadline: past it the
/// process is killed and the test fails.
fn lint_with(args: &[&str], envs: &[(&str, &str)], stdout: Option<Stdio>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zerohop"));
    command
        .arg("lint")
        .args(args)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(stdout.unwrap_or_else(Stdio::piped))
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn zerohop");
    // Drain the pipes while waiting, so that a large report cannot block
    // the child on a full pipe.
    let out = child.stdout.take().map(|mut pipe| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    });
    let mut err_pipe = child.stderr.take().expect("stderr");
    let err = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err_pipe.read_to_end(&mut bytes);
        bytes
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("zerohop lint {args:?} did not finish within {DEADLINE:?}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out
            .map(|handle| handle.join().expect("stdout reader"))
            .unwrap_or_default(),
        stderr: err.join().expect("stderr reader"),
    }
}

fn lint(args: &[&str]) -> Output {
    lint_with(args, &[], None)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: yes\n";

/// Makes a FIFO with the system's `mkfifo` (this crate links nothing that
/// could make one); `false` where the command is missing.
fn mkfifo(path: &Path) -> bool {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|status| status.success());
    if !made {
        eprintln!("skipped: `mkfifo` is not available");
    }
    made
}

#[test]
fn a_fifo_named_as_a_file_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("manifest.yaml");
    if !mkfifo(&fifo) {
        return;
    }
    let output = lint(&[path(&fifo)]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let report = text(&output.stdout);
    assert!(
        report.contains("error[ZL001]: not a regular file but a fifo; not read"),
        "{report}"
    );
    assert!(report.contains("pipe it to `zerohop lint -`"), "{report}");
}

#[test]
fn a_fifo_in_a_linted_directory_is_refused_and_the_rest_is_linted() {
    let dir = tempfile::tempdir().expect("tempdir");
    if !mkfifo(&dir.path().join("a.yaml")) {
        return;
    }
    fs::write(dir.path().join("b.yaml"), CONFIGMAP).expect("write");
    let output = lint(&[path(dir.path()), "--format", "json"]);
    assert_eq!(output.status.code(), Some(2));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let ids: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert_eq!(ids, ["ZL001", "ZL003"]);
}

#[test]
fn dev_zero_is_refused_not_printed() {
    // /dev/zero once printed 33 MB of NULs. A character device needs no
    // privilege to name, so this runs everywhere.
    let output = lint(&["/dev/zero", "/dev/null"]);
    assert_eq!(output.status.code(), Some(2));
    let report = text(&output.stdout);
    assert!(report.len() < 2000, "{} bytes", report.len());
    assert!(!report.contains('\0'));
    assert_eq!(
        report
            .matches("not a regular file but a character device")
            .count(),
        2,
        "{report}"
    );
}

#[test]
fn a_terminal_device_in_a_linted_directory_is_refused_not_opened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tty = dir.path().join("tty5.yaml");
    // `mknod c 4 5` (a virtual console) needs privileges; without them the
    // same refusal is proved on a character device every system has,
    // named directly.
    let made = Command::new("mknod")
        .arg(&tty)
        .args(["c", "4", "5"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let target = if made {
        path(dir.path()).to_owned()
    } else {
        eprintln!("mknod is not permitted here: testing /dev/null named directly instead");
        "/dev/null".to_owned()
    };
    let output = lint(&[&target]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stdout).contains("not a regular file but a character device; not read"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn standard_input_is_still_read_and_bounded() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["lint", "-"])
        .stdin(fs::File::open("/dev/zero").expect("/dev/zero"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("reading /dev/zero as standard input did not stop at the size limit");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stdout).contains("input is larger than the 33554432-byte limit"),
        "{}",
        text(&output.stdout)
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["lint", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(CONFIGMAP.as_bytes())
        .expect("write");
    let output = child.wait_with_output().expect("output");
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains(" --> -:6:3"));
}

#[test]
fn a_symlink_to_proc_self_environ_in_a_linted_directory_is_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("env.yaml")).expect("symlink");
    std::os::unix::fs::symlink("/etc/shadow", dir.path().join("shadow.yaml")).expect("symlink");
    fs::write(dir.path().join("ok.yaml"), CONFIGMAP).expect("write");
    let secret = "ZEROHOP_TEST_SECRET=s3cr3t-token-value";
    let (name, value) = secret.split_once('=').expect("name=value");
    let output = lint_with(&[path(dir.path())], &[(name, value)], None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report = text(&output.stdout);
    assert!(!report.contains("s3cr3t"), "{report}");
    assert!(!report.contains("root:"), "{report}");
    assert_eq!(report.matches("info[ZL007]").count(), 2, "{report}");
    assert!(report.contains("symlink to `/proc/self/environ` leads outside the linted directory"));
}

#[test]
fn nothing_to_lint_is_a_usage_error_in_one_sentence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("manifests");
    let output = lint(&[path(&missing)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert_eq!(
        text(&output.stderr),
        format!("error: {}: no such file or directory\n", missing.display())
    );

    let output = lint(&[path(dir.path())]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: {}: no *.yaml, *.yml or *.json file to lint in this directory\n",
            dir.path().display()
        )
    );

    fs::write(dir.path().join("README.md"), "# docs\n").expect("write");
    let output = lint(&[path(dir.path())]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no *.yaml, *.yml or *.json file"));
}

#[test]
fn a_report_that_cannot_be_written_is_an_environment_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a.yaml");
    fs::write(&file, CONFIGMAP).expect("write");
    let Ok(full) = fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: /dev/full is not available");
        return;
    };
    let output = lint_with(&[path(&file)], &[], Some(Stdio::from(full)));
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert_eq!(
        stderr,
        "error: cannot write the report to standard output: No space left on device (os error 28)\n"
    );
}

#[test]
fn terminal_controls_in_manifests_do_not_reach_a_terminal() {
    // With colour forced on, as on a terminal, only the report's own
    // styles (`ESC [ … m`) may be written.
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(
        dir.path().join("policy.yaml"),
        "apiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: \"\\e]0;pwned\\a\\e[2J\"\nspec: {}\n",
    )
    .expect("write");
    fs::write(
        dir.path().join("raw.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \u{1b}]0;pwned\u{7}\ndata: {a: yes}\n",
    )
    .expect("write");
    let output = lint_with(&[path(dir.path())], &[("CLICOLOR_FORCE", "1")], None);
    let report = text(&output.stdout);
    assert!(report.contains("\u{1b}["), "colour is on: {report:?}");
    let mut rest = report.as_str();
    while let Some(at) = rest.find('\u{1b}') {
        let sequence = &rest[at + 1..];
        let end = sequence
            .find(|c: char| !(c == '[' || c == ';' || c.is_ascii_digit()))
            .expect("a complete sequence");
        assert!(
            sequence.starts_with('[') && sequence[end..].starts_with('m'),
            "a sequence that is not a style: {:?}",
            &rest[at..(at + 12).min(rest.len())]
        );
        rest = &sequence[end..];
    }
    assert!(!report.contains('\u{7}'), "{report:?}");
    assert!(report.contains(r"\x1b]0;pwned\x07"), "{report}");
}

#[test]
fn a_long_line_with_thousands_of_findings_prints_a_bounded_report() {
    // A 19 KB line with 2,000 findings once printed 56 MB, and with a 1 MB
    // line 4 GB.
    let items: Vec<String> = (0..2000).map(|i| format!("k{i}: yes")).collect();
    let padding = "x".repeat(1024 * 1024);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("one-line.yaml");
    fs::write(
        &file,
        format!(
            "{{apiVersion: v1, kind: ConfigMap, metadata: {{name: x, annotations: {{pad: {padding}}}}}, data: {{{}}}}}\n",
            items.join(", ")
        ),
    )
    .expect("write");
    let output = lint(&[path(&file)]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        output.stdout.len() < 2 * 1024 * 1024,
        "{} bytes",
        output.stdout.len()
    );
    let report = text(&output.stdout);
    assert!(report.contains("1000 more findings of this rule in this file are not listed"));
    assert!(report.contains("more findings on line 1 are shown below without it"));
}

#[test]
fn sarif_columns_count_code_points() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("wide.yaml");
    fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {\"ü😀\": x, k: yes}\n",
    )
    .expect("write");
    let output = lint(&[path(&file), "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_slice(&output.stdout).expect("sarif");
    let run = &log["runs"][0];
    assert_eq!(run["columnKind"], "unicodeCodePoints");
    assert_eq!(
        run["results"][0]["locations"][0]["physicalLocation"]["region"]["startColumn"],
        17
    );
}
