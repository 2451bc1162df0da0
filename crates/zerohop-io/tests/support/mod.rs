//! Test support: the real captures under `../shared/corpus`, unpacked into
//! temporary host roots. They are read in place and never copied into the
//! repository.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// The shared corpus directory, or `None` (with a printed reason) when
/// `../shared` is absent altogether; a `../shared` without the corpus
/// fails the test.
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

/// Unpacks the corpus archive `name` with the system `tar` into a new
/// temporary directory; panics when the corpus lacks it.
pub fn untar(corpus: &Path, name: &str) -> TempDir {
    let archive = corpus.join(name);
    assert!(archive.is_file(), "{} is missing", archive.display());
    let dir = tempfile::tempdir().expect("temporary directory");
    let status = Command::new("tar")
        .arg("-xf")
        .arg(&archive)
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
