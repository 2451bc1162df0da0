//! Test support: the real captures under `../shared/corpus`, unpacked into
//! temporary host roots, and a way to run the doctor on them.
//!
//! The captures are read in place and never copied into the repository.
//! When `../shared` is absent, [`corpus`] returns `None` and the calling
//! test prints why and returns.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the support module"
)]

pub mod builder;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;
use zerohop_core::{Finding, Report, Status};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};

/// The shared corpus directory, or `None` (with a printed reason) when absent.
pub fn corpus() -> Option<PathBuf> {
    let shared = std::env::var_os("ZEROHOP_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let dir = shared.join("corpus");
    if dir.is_dir() {
        Some(dir)
    } else {
        // Only a clone without any `../shared` (a user's) may skip.
        assert!(
            // In CI (`CI` set) the data must be there: only a user's clone skips.
            !shared.exists() && std::env::var_os("CI").is_none(),
            "{} is beside the repository but lacks this test data: CI must not pass without it",
            shared.display()
        );
        eprintln!(
            "skipped: {} is absent (the shared corpus sits beside the repository in CI)",
            dir.display()
        );
        None
    }
}

/// A new temporary directory, on tmpfs when the machine has one: a capture
/// holds thousands of small files, and creating them on a disk file system
/// costs seconds per archive where tmpfs (like sysfs itself) costs
/// milliseconds.
pub fn scratch() -> TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("zerohop-test")
            .tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("temporary directory")
}

/// Unpacks a `.tar.gz`, `.tar.bz2` or `.tar.xz` archive with the system
/// `tar` into a new temporary directory.
pub fn untar(archive: &Path) -> TempDir {
    let dir = scratch();
    let status = Command::new("tar")
        .arg("-xf")
        .arg(archive)
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("tar runs");
    assert!(
        status.success(),
        "tar failed to unpack {}",
        archive.display()
    );
    dir
}

/// Unpacks a ttar text archive (prometheus' test fixture format) into a new
/// temporary directory.
pub fn unttar(archive: &Path) -> TempDir {
    let dir = scratch();
    let text = fs::read_to_string(archive).expect("readable ttar");
    let mut lines = text.lines();
    let mut path: Option<PathBuf> = None;
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("Directory: ") {
            fs::create_dir_all(dir.path().join(rest)).unwrap();
        } else if let Some(rest) = line.strip_prefix("Path: ") {
            path = Some(dir.path().join(rest));
        } else if let Some(rest) = line.strip_prefix("SymlinkTo: ") {
            let link = path.take().expect("SymlinkTo follows Path");
            fs::create_dir_all(link.parent().unwrap()).unwrap();
            let _ = symlink(rest, &link);
        } else if let Some(rest) = line.strip_prefix("Lines: ") {
            let count: usize = rest.trim().parse().expect("line count");
            let mut content = String::new();
            for index in 0..count {
                let raw = lines.next().unwrap_or("");
                let (raw, last_without_newline) = match raw.strip_suffix("EOF") {
                    Some(stripped) if index + 1 == count => (stripped, true),
                    _ => (raw, false),
                };
                content.push_str(&raw.replace("NULLBYTE", "\0"));
                if !last_without_newline {
                    content.push('\n');
                }
            }
            let file = path.take().expect("Lines follows Path");
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(&file, content).unwrap();
        }
    }
    dir
}

/// Runs the whole doctor on `root` with the default profile.
pub fn doctor(root: &Path) -> Report {
    doctor_with(root, &Profile::default(), &Selection::all())
}

/// Runs the doctor on `root` with a profile and a selection.
pub fn doctor_with(root: &Path, profile: &Profile, selection: &Selection) -> Report {
    let host = HostRoot::at(root).expect("a directory root");
    let facts = Facts::collect(&host);
    zerohop_doctor::run(&facts, profile, selection)
}

/// The findings of check `id`.
pub fn findings<'a>(report: &'a Report, id: &str) -> Vec<&'a Finding> {
    report.findings.iter().filter(|f| f.id == id).collect()
}

/// The statuses of check `id`'s findings.
pub fn statuses(report: &Report, id: &str) -> Vec<Status> {
    findings(report, id).iter().map(|f| f.status).collect()
}

/// Asserts the invariants every run must keep, whatever the input: every
/// check reported (the pod's when any was), no finding without a message, every problem
/// with a remediation, every unknown with evidence or a reason.
pub fn assert_well_formed(report: &Report) {
    // A node's run leaves the pod checks out unless they were selected.
    let pod = report.findings.iter().any(|f| f.group == "pod");
    for check in zerohop_doctor::checks::CHECKS
        .iter()
        .filter(|check| pod || check.group != zerohop_doctor::Group::Pod)
    {
        assert!(
            report.findings.iter().any(|f| f.id == check.info.id),
            "{} reported nothing on {}",
            check.info.id,
            report.target
        );
    }
    for finding in &report.findings {
        assert!(
            !finding.message.is_empty(),
            "{} has an empty message",
            finding.id
        );
        if finding.status.is_problem() {
            assert!(
                finding.remediation.is_some(),
                "{} {:?} has no remediation: {}",
                finding.id,
                finding.status,
                finding.message
            );
        }
    }
}
