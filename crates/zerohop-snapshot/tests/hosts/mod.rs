//! The host roots the snapshot tests record: every doctor fixture root,
//! and every host tree of the shared corpus, unpacked.

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::support;

/// Every doctor fixture root (`<check>/<case>`), sorted.
pub fn fixture_roots() -> Vec<PathBuf> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../zerohop-doctor/tests/fixtures");
    let mut roots = Vec::new();
    for check in fs::read_dir(fixtures).expect("the doctor's fixtures") {
        for case in fs::read_dir(check.unwrap().path()).unwrap() {
            roots.push(case.unwrap().path());
        }
    }
    roots.sort();
    roots
}

/// The directory under `dir` that holds `sys` or `proc`, as the corpus
/// tests find it.
fn host_root(dir: &Path) -> PathBuf {
    let mut queue = vec![(dir.to_path_buf(), 0)];
    while let Some((path, depth)) = queue.pop() {
        if path.join("sys").is_dir() || path.join("proc").is_dir() {
            return path;
        }
        if depth < 3 {
            for entry in fs::read_dir(&path).unwrap() {
                let entry = entry.unwrap().path();
                if entry.is_dir() && !entry.is_symlink() {
                    queue.push((entry, depth + 1));
                }
            }
        }
    }
    dir.to_path_buf()
}

/// One corpus capture unpacked: its file name, the directory holding it
/// (removed when dropped) and its host root.
pub struct CorpusHost {
    /// The capture's file name.
    pub name: String,
    /// Where it is unpacked.
    _dir: TempDir,
    /// The host root inside.
    pub root: PathBuf,
}

/// Every host tree archive of the shared corpus, unpacked one at a time
/// as the iterator goes; empty when `../shared` is absent (a user's
/// clone).
pub fn corpus_hosts() -> impl Iterator<Item = CorpusHost> {
    let mut archives: Vec<PathBuf> = match support::corpus() {
        Some(corpus) => fs::read_dir(&corpus)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                [".tar.gz", ".tar.bz2", ".tar.xz", ".ttar"]
                    .iter()
                    .any(|ext| name.ends_with(ext))
            })
            .collect(),
        None => Vec::new(),
    };
    archives.sort();
    // SOURCES.md lists two ghw, five hwloc, one libnvme and two ttar trees.
    assert!(archives.is_empty() || archives.len() >= 10, "{archives:?}");
    archives.into_iter().map(|archive| {
        let dir = if archive.extension().is_some_and(|e| e == "ttar") {
            support::unttar(&archive)
        } else {
            support::untar(&archive)
        };
        let root = host_root(dir.path());
        CorpusHost {
            name: archive.file_name().unwrap().to_string_lossy().into_owned(),
            _dir: dir,
            root,
        }
    })
}
