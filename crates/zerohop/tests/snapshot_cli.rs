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
    // A regular file is replaced whole, and readable by its owner only.
    fs::write(dir.path().join("old.zhsnap"), "old").unwrap();
    let run = zerohop(
        &["snapshot", "--root", root, "-o", "old.zhsnap"],
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
