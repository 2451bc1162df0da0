//! `zerohop snapshot`, `doctor --snapshot`, `topo --snapshot` and `diff`
//! as a user runs them.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn zerohop(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("zerohop runs")
}

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zerohop-doctor/tests/fixtures/PCI001")
        .join(case)
        .canonicalize()
        .unwrap()
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap()
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}{}", text(&output.stdout), text(&output.stderr)))
}

/// Records `case` into `dir/name` and returns its path as text.
fn record(case: &str, dir: &Path, name: &str) -> String {
    let root = fixture(case);
    let out = dir.join(name);
    let run = zerohop(
        &[
            "snapshot",
            "--root",
            root.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        dir,
    );
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    out.to_str().unwrap().to_owned()
}

#[test]
fn doctor_and_topo_read_a_snapshot_as_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let archive = record("fail-nic-x8-of-x16", dir.path(), "node.zhsnap");
    let root = fixture("fail-nic-x8-of-x16");
    let root = root.to_str().unwrap();
    for (command, target) in [("doctor", "target"), ("topo", "root")] {
        let on_tree = zerohop(&[command, "--root", root, "--format", "json"], dir.path());
        let on_snapshot = zerohop(
            &[command, "--snapshot", &archive, "--format", "json"],
            dir.path(),
        );
        // The fixture's NIC trained at x8 of x16: the doctor fails on both.
        assert_eq!(
            on_tree.status.code(),
            on_snapshot.status.code(),
            "{command}"
        );
        let (mut a, mut b) = (json(&on_tree), json(&on_snapshot));
        assert_eq!(b[target], archive.as_str(), "{command}");
        a[target] = serde_json::Value::Null;
        b[target] = serde_json::Value::Null;
        // The doctor's pass (when, how long) is its own on each; the
        // findings are the same.
        for report in [&mut a, &mut b] {
            let pass = report.as_object_mut().unwrap().remove("pass");
            assert_eq!(pass.is_some(), command == "doctor", "{command}");
        }
        assert_eq!(a, b, "{command}");
    }
    let both = zerohop(
        &["doctor", "--root", root, "--snapshot", &archive],
        dir.path(),
    );
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn the_output_is_never_written_through_a_link_or_over_a_non_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture("pass-full-link");
    let root = root.to_str().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "keep").unwrap();
    symlink(&victim, dir.path().join("link.zhsnap")).unwrap();
    fs::create_dir(dir.path().join("dir.zhsnap")).unwrap();
    for (name, why) in [
        ("link.zhsnap", "is a symlink"),
        ("dir.zhsnap", "is a directory"),
    ] {
        let run = zerohop(&["snapshot", "--root", root, "-o", name], dir.path());
        assert_eq!(run.status.code(), Some(2), "{name}");
        assert!(text(&run.stderr).contains(why), "{}", text(&run.stderr));
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
    // A regular file is replaced whole (here with --force: it is no
    // snapshot), and readable by its owner only.
    fs::write(dir.path().join("old.zhsnap"), "old").unwrap();
    let run = zerohop(
        &["snapshot", "--root", root, "-o", "old.zhsnap", "--force"],
        dir.path(),
    );
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let meta = fs::metadata(dir.path().join("old.zhsnap")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
        0o600
    );
    assert!(meta.len() > 100);
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    // No temporary file is left behind.
    assert_eq!(names, ["dir.zhsnap", "link.zhsnap", "old.zhsnap", "victim"]);
}

/// `-o` replaces only what `zerohop snapshot` writes: a snapshot (and
/// `--redact-map` a redaction map), any other regular file only with
/// `--force`, as `plan -o` and `bench prepare` do.
#[test]
fn only_a_snapshot_is_replaced_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture("pass-full-link");
    let root = root.to_str().unwrap();
    fs::write(dir.path().join("notes.txt"), "the user's own notes\n").unwrap();
    let run = zerohop(&["snapshot", "--root", root, "-o", "notes.txt"], dir.path());
    assert_eq!(run.status.code(), Some(2), "{}", text(&run.stderr));
    assert!(
        text(&run.stderr).contains("is not a zerohop snapshot: not replaced (--force"),
        "{}",
        text(&run.stderr)
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "the user's own notes\n"
    );
    // A snapshot written before is replaced.
    record("pass-full-link", dir.path(), "node.zhsnap");
    record("fail-nic-x8-of-x16", dir.path(), "node.zhsnap");
    // A redaction map, the same way.
    let redact = |map: &str, force: bool| {
        let mut args = vec![
            "snapshot",
            "--root",
            root,
            "--redact",
            "-o",
            "r.zhsnap",
            "--redact-map",
            map,
        ];
        if force {
            args.push("--force");
        }
        zerohop(&args, dir.path())
    };
    assert_eq!(redact("map.json", false).status.code(), Some(0));
    assert_eq!(redact("map.json", false).status.code(), Some(0));
    let run = redact("notes.txt", false);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run.stderr));
    assert!(text(&run.stderr).contains("is not a zerohop redaction map"));
    assert_eq!(
        fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "the user's own notes\n"
    );
    assert_eq!(redact("notes.txt", true).status.code(), Some(0));
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["map.json", "node.zhsnap", "notes.txt", "r.zhsnap"]);
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

/// A host tree of `functions` PCI functions, for a recording that takes a
/// while.
fn many_functions(dir: &Path, functions: usize) {
    for n in 0..functions {
        let function = dir.join(format!(
            "sys/bus/pci/devices/0000:{:02x}:00.{}",
            n / 8,
            n % 8
        ));
        fs::create_dir_all(&function).unwrap();
        for (name, value) in [
            ("vendor", "0x15b3\n"),
            ("device", "0x1021\n"),
            ("class", "0x020000\n"),
            ("numa_node", "0\n"),
            ("current_link_width", "16\n"),
            ("max_link_width", "16\n"),
        ] {
            fs::write(function.join(name), value).unwrap();
        }
    }
}

/// An interrupted snapshot stops before it writes (or finishes the write
/// it began): exit 143 (128 + SIGTERM) and never a temporary file left
/// beside the output.
#[test]
fn an_interrupted_snapshot_exits_143_and_leaves_no_temporary_file() {
    let host = tempfile::tempdir().unwrap();
    many_functions(host.path(), 2_000);
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["snapshot", "--root"])
        .arg(host.path())
        .args(["-o", "out.zhsnap"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // Signal only once the handler is in place, so that the test does not
    // depend on how fast the process starts.
    while !catches_sigterm(child.id()) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).starts_with("interrupted"),
        "{}",
        text(&output.stderr)
    );
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    // Nothing, or the whole archive: never a temporary file.
    assert!(names.is_empty() || names == ["out.zhsnap"], "{names:?}");
}

/// A side's name as given reaches the terminal escaped, in an error too.
#[test]
fn diff_escapes_the_names_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let pass = record("pass-full-link", dir.path(), "pass.zhsnap");
    let hostile = "x\u{1b}]0;owned\u{7}.zhsnap";
    fs::write(dir.path().join(hostile), "not an archive").unwrap();
    let run = zerohop(&["diff", &pass, hostile], dir.path());
    assert_eq!(run.status.code(), Some(2));
    let stderr = text(&run.stderr);
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(stderr.contains(r"x\x1b]0;owned\x07.zhsnap"), "{stderr:?}");
}

#[test]
fn a_hostile_archive_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    fs::create_dir(&work).unwrap();
    let archive = dir.path().join("bad.zhsnap");
    // A zstd frame of a tar whose first member is not the manifest.
    let good = record("pass-full-link", dir.path(), "good.zhsnap");
    let mut bytes = fs::read(&good).unwrap();
    let cut = bytes.len() / 2;
    bytes.truncate(cut);
    fs::write(&archive, &bytes).unwrap();
    for command in ["doctor", "topo"] {
        let run = zerohop(&[command, "--snapshot", archive.to_str().unwrap()], &work);
        assert_eq!(run.status.code(), Some(2), "{command}");
        assert!(
            text(&run.stderr).contains("truncated or corrupt"),
            "{}",
            text(&run.stderr)
        );
    }
    assert_eq!(fs::read_dir(&work).unwrap().count(), 0);
}

#[test]
fn diff_exit_codes_are_those_of_diff() {
    let dir = tempfile::tempdir().unwrap();
    let pass = record("pass-full-link", dir.path(), "pass.zhsnap");
    let fail = fixture("fail-nic-x8-of-x16");
    let same = zerohop(
        &["diff", &pass, fixture("pass-full-link").to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stdout));
    assert!(text(&same.stdout).contains("no differences"));

    let differ = zerohop(
        &["diff", &pass, fail.to_str().unwrap(), "--format", "json"],
        dir.path(),
    );
    assert_eq!(differ.status.code(), Some(1), "{}", text(&differ.stderr));
    let doc = json(&differ);
    // The two fixtures differ in one attribute: current_link_width 16 → 8.
    assert_eq!(doc["findings"][0]["id"], "PCI001");
    assert_eq!(doc["findings"][0]["a"], "pass");
    assert_eq!(doc["findings"][0]["b"], "fail");
    assert_eq!(doc["facts"].as_array().unwrap().len(), 1);
    assert_eq!(doc["facts"][0]["layer"], "pci");
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert!(
        files[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("current_link_width")
    );
    assert!(files[0]["diff"].as_str().unwrap().contains("-16\n+8"));

    let trouble = zerohop(&["diff", &pass, "missing.zhsnap"], dir.path());
    assert_eq!(trouble.status.code(), Some(2));
    assert!(text(&trouble.stderr).contains("missing.zhsnap"));
}

#[test]
fn a_redacted_snapshot_keeps_its_map_apart() {
    let dir = tempfile::tempdir().unwrap();
    // GDS004's cufile.json names 10.0.9.8, which the fixture's fib_trie
    // and routes do not hold as a local address: the check fails on both.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zerohop-doctor/tests/fixtures/GDS004/fail-address-of-another-node");
    let root = root.to_str().unwrap();
    let run = zerohop(
        &[
            "snapshot",
            "--root",
            root,
            "--redact",
            "-o",
            "node.zhsnap",
            "--redact-map",
            "map.json",
        ],
        dir.path(),
    );
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let map: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join("map.json")).unwrap()).unwrap();
    let originals: Vec<&str> = map
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["original"].as_str().unwrap())
        .collect();
    assert!(originals.contains(&"10.0.9.8"), "{map}");
    let on_tree = json(&zerohop(
        &["doctor", "--root", root, "--format", "json"],
        dir.path(),
    ));
    let on_snapshot = json(&zerohop(
        &["doctor", "--snapshot", "node.zhsnap", "--format", "json"],
        dir.path(),
    ));
    let statuses = |report: &serde_json::Value| -> Vec<(String, String)> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["id"].to_string(), f["status"].to_string()))
            .collect()
    };
    assert_eq!(statuses(&on_tree), statuses(&on_snapshot));
    // A map without redaction is refused before anything runs.
    let alone = zerohop(
        &[
            "snapshot",
            "--root",
            root,
            "-o",
            "x.zhsnap",
            "--redact-map",
            "m.json",
        ],
        dir.path(),
    );
    assert_eq!(alone.status.code(), Some(2), "{}", text(&alone.stderr));
    assert!(!dir.path().join("x.zhsnap").exists());
}
