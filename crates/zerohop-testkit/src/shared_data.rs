//! The data written by others that the tests read from `../shared`, beside
//! the repository: real captures (`corpus/`) and upstream CRDs and sample
//! objects (`reference/`), each with its `SOURCES.md`. They are read in
//! place, or unpacked into temporary directories, never copied into the
//! repository.
//!
//! The rule, once for every suite: a clone without any `../shared` (a
//! user's) skips visibly; in CI (see [`prerequisite`]) a missing `../shared`
//! fails; and wherever `../shared` is there, a missing part of it fails, so
//! that a renamed file never turns into a skipped test.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use crate::prerequisite;

/// `../shared`, or the directory `ZEROHOP_SHARED` names.
fn shared_root() -> PathBuf {
    std::env::var_os("ZEROHOP_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

/// What a test does about `relative` under the shared directory `shared`.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// The directory is there.
    Here(PathBuf),
    /// There is no shared directory at all: a user's clone skips.
    NoShared,
    /// The shared directory is there but lacks `relative`: the test fails.
    Lacking(PathBuf),
}

fn find(shared: &Path, relative: &str) -> Found {
    let dir = shared.join(relative);
    if dir.is_dir() {
        Found::Here(dir)
    } else if shared.exists() {
        Found::Lacking(dir)
    } else {
        Found::NoShared
    }
}

/// The directory `relative` of `../shared` (`"corpus"`,
/// `"reference/crds"`), or `None` (after saying the test skipped) in a
/// clone without any `../shared`. Panics in CI without `../shared`, and
/// wherever `../shared` is there without `relative`.
pub fn shared_dir(relative: &str) -> Option<PathBuf> {
    let shared = shared_root();
    match find(&shared, relative) {
        Found::Here(dir) => Some(dir),
        Found::Lacking(dir) => panic!(
            "{} is beside the repository but lacks {}: a test may not pass without its data",
            shared.display(),
            dir.display()
        ),
        Found::NoShared => {
            prerequisite::missing(format_args!(
                "{} is absent (the data written by others sits beside the repository in CI)",
                shared.display()
            ));
            None
        }
    }
}

/// `../shared/corpus`, the real captures; `None` as [`shared_dir`] says.
pub fn corpus() -> Option<PathBuf> {
    shared_dir("corpus")
}

/// `../shared/reference`, the upstream CRDs and sample objects; `None` as
/// [`shared_dir`] says.
pub fn reference() -> Option<PathBuf> {
    shared_dir("reference")
}

/// The text of `corpus/<relative>` (invalid UTF-8 replaced), or `None` as
/// [`shared_dir`] says. Panics when the corpus is there but the capture is
/// not.
pub fn capture(relative: &str) -> Option<String> {
    let path = corpus()?.join(relative);
    let bytes = fs::read(&path)
        .unwrap_or_else(|err| panic!("capture {} is missing: {err}", path.display()));
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Every capture file under `corpus/<relative>` (recursively, `SOURCES.md`
/// excepted), as paths relative to the corpus, in order; `None` as
/// [`shared_dir`] says.
pub fn captures_under(relative: &str) -> Option<Vec<String>> {
    let corpus = corpus()?;
    let mut out = Vec::new();
    walk(&corpus, &corpus.join(relative), &mut out);
    out.sort();
    Some(out)
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(base, &path, out);
        } else if path.file_name().is_some_and(|n| n != "SOURCES.md") {
            out.push(
                path.strip_prefix(base)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
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
/// `tar` into a new temporary directory; panics when the archive is
/// missing or does not unpack.
pub fn untar(archive: &Path) -> TempDir {
    assert!(archive.is_file(), "{} is missing", archive.display());
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
    let text = fs::read_to_string(archive)
        .unwrap_or_else(|err| panic!("{} is not a readable ttar: {err}", archive.display()));
    unttar_text(&text, dir.path());
    dir
}

fn unttar_text(text: &str, into: &Path) {
    let mut lines = text.lines();
    let mut path: Option<PathBuf> = None;
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("Directory: ") {
            fs::create_dir_all(into.join(rest)).unwrap();
        } else if let Some(rest) = line.strip_prefix("Path: ") {
            path = Some(into.join(rest));
        } else if let Some(rest) = line.strip_prefix("SymlinkTo: ") {
            let link = path.take().expect("SymlinkTo follows Path");
            fs::create_dir_all(link.parent().unwrap()).unwrap();
            // A ttar may name a link twice; the first one stands.
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
}

/// Copies a tree of files, directories and links (as links) into `to`, so
/// that a test can change a host root without touching the original.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            symlink(fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::{Found, find, unttar_text};

    #[test]
    fn only_a_clone_without_any_shared_directory_skips() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        assert_eq!(find(&shared, "corpus"), Found::NoShared);
        fs::create_dir_all(shared.join("reference")).unwrap();
        assert_eq!(
            find(&shared, "corpus"),
            Found::Lacking(shared.join("corpus"))
        );
        assert_eq!(
            find(&shared, "reference"),
            Found::Here(shared.join("reference"))
        );
        // A file where the directory should be is not the data.
        fs::write(shared.join("corpus"), "").unwrap();
        assert_eq!(
            find(&shared, "corpus"),
            Found::Lacking(shared.join("corpus"))
        );
    }

    #[test]
    fn a_ttar_unpacks_files_links_and_a_last_line_without_newline() {
        let dir = tempfile::tempdir().unwrap();
        let ttar = "\
Directory: sys/class/net
Path: sys/class/net/eth0/mtu
Lines: 1
9000
Path: sys/class/net/eth0/label
Lines: 2
a
bNULLBYTEcEOF
Path: sys/class/net/lo
SymlinkTo: ../../devices/virtual/net/lo
";
        unttar_text(ttar, dir.path());
        let net = dir.path().join("sys/class/net");
        assert_eq!(fs::read_to_string(net.join("eth0/mtu")).unwrap(), "9000\n");
        assert_eq!(
            fs::read_to_string(net.join("eth0/label")).unwrap(),
            "a\nb\0c"
        );
        assert_eq!(
            fs::read_link(net.join("lo")).unwrap(),
            std::path::Path::new("../../devices/virtual/net/lo")
        );
    }
}
