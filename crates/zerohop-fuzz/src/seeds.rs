//! Where the starting inputs come from: real captures in `../shared`
//! (the corpus of host files and the operators' CRDs and samples), the
//! repository's own examples and fixtures.

use std::fs;
use std::path::{Path, PathBuf};

/// The largest file taken as a seed; mutants may grow to twice this.
pub const MAX_SEED_BYTES: usize = 1 << 20;

/// The roots seeds are collected from.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The repository (workspace) root.
    pub repo: PathBuf,
    /// `../shared` beside the repository, when it is there.
    pub shared: Option<PathBuf>,
}

impl Sources {
    /// The sources of this checkout: the workspace this crate belongs to and
    /// `../shared` beside it (or `ZEROHOP_SHARED`).
    pub fn of_this_checkout() -> Sources {
        let shared = Sources::shared_of_this_checkout();
        Sources {
            shared: shared.join("corpus").is_dir().then_some(shared),
            repo: Sources::repo_of_this_checkout(),
        }
    }

    /// Where this checkout looks for `../shared`, whether or not it is
    /// there: `ZEROHOP_SHARED` when set, else the directory beside the
    /// repository (as every test's support module looks for it).
    pub fn shared_of_this_checkout() -> PathBuf {
        std::env::var_os("ZEROHOP_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| Sources::repo_of_this_checkout().join("../shared"))
    }

    fn repo_of_this_checkout() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    /// A directory of the repository.
    pub fn repo_dir(&self, relative: &str) -> PathBuf {
        self.repo.join(relative)
    }

    /// A directory of `../shared`, when present.
    pub fn shared_dir(&self, relative: &str) -> Option<PathBuf> {
        self.shared.as_ref().map(|shared| shared.join(relative))
    }
}

/// Every regular file under `dir` (symlinks not followed) whose path,
/// relative to `dir`, satisfies `wanted`, read whole, in path order; files
/// over [`MAX_SEED_BYTES`] are left out.
pub fn files_under(dir: &Path, wanted: impl Fn(&str) -> bool) -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    walk(dir, dir, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter(|(relative, _)| wanted(relative))
        .filter_map(|(_, path)| fs::read(path).ok())
        .filter(|bytes| bytes.len() <= MAX_SEED_BYTES)
        .collect()
}

/// Every regular file under `dir`, as `(path relative to dir, path)`.
pub fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            walk(base, &path, out);
        } else if meta.is_file() {
            let relative = path
                .strip_prefix(base)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            out.push((relative, path));
        }
    }
}

/// Whether the last component of `path` is `name`.
pub fn named(path: &str, name: &str) -> bool {
    path.rsplit('/').next() == Some(name)
}

/// Files named `name` in the doctor's fixture roots, and the corpus files
/// whose names contain each of `corpus`.
pub(crate) fn host_files(sources: &Sources, names: &[&str], corpus: &[&str]) -> Vec<Vec<u8>> {
    let mut seeds = files_under(
        &sources.repo_dir("crates/zerohop-doctor/tests/fixtures"),
        |path| names.iter().any(|name| named(path, name)),
    );
    if let Some(dir) = sources.shared_dir("corpus") {
        seeds.extend(files_under(&dir, |path| {
            corpus.iter().any(|part| path.contains(part))
                || names.iter().any(|name| named(path, name))
        }));
    }
    seeds
}
