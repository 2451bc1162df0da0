//! The marker that makes a directory a `zerohop plan` output: the file
//! `.zerohop-plan`, listing every file written with its SHA-256, in the
//! format of `sha256sum` (so `sha256sum -c .zerohop-plan` checks it).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use rustix::io::Errno;
use sha2::{Digest, Sha256};
use zerohop_input::{Follow, NotRegular};

/// The marker's file name, in the output directory.
pub(crate) const MARKER: &str = ".zerohop-plan";

/// The first line of every marker.
const HEADER: &str = "# zerohop plan output";

/// The marker format this version writes and reads.
const FORMAT: &str = "# format: 1";

/// The most entries a directory may hold to be checked at all; an output
/// has a few dozen files.
const MAX_ENTRIES: usize = 10_000;

/// The deepest nesting checked; an output's deepest file is
/// `host/<pool>/etc/systemd/system/<unit>`.
const MAX_DEPTH: usize = 16;

/// The largest file hashed; a rendered file is a few KiB, so anything
/// larger was not written by the planner as it is.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// The marker's text for files written with these contents.
pub(crate) fn marker_text<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut text = format!(
        "{HEADER}\n# generator: zerohop {}\n{FORMAT}\n# `zerohop plan -o` replaces this directory only while it holds exactly these files, unchanged.\n# Check them with: sha256sum -c {MARKER}\n",
        env!("CARGO_PKG_VERSION")
    );
    for (path, contents) in files {
        // sha256sum's own escaping: a line whose name has a backslash or a
        // newline starts with a backslash, and those are written \\ and \n.
        if path.contains(['\\', '\n']) {
            let escaped = path.replace('\\', r"\\").replace('\n', r"\n");
            text.push_str(&format!("\\{}  {escaped}\n", sha256_hex(contents)));
        } else {
            text.push_str(&format!("{}  {path}\n", sha256_hex(contents)));
        }
    }
    text
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What an existing output directory holds, compared with its marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Existing {
    /// Nothing is there.
    Missing,
    /// An empty directory.
    Empty,
    /// A previous output, every file as it was written (some may have been
    /// deleted).
    Ours,
    /// Anything else, which is never replaced.
    Foreign(Foreign),
}

/// Why a directory is not replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Foreign {
    /// It is a file, a device or a socket.
    NotADirectory,
    /// It is a symbolic link, which is not followed.
    Link,
    /// It has files but no marker.
    NoMarker,
    /// Its marker is not one this version reads.
    UnknownMarker,
    /// It holds more entries, or deeper directories, than a plan output.
    Oversized,
    /// Files were added to it or changed since it was written.
    Changed {
        /// Paths the marker does not list (directories end in `/`).
        added: Vec<String>,
        /// Listed files whose contents differ.
        modified: Vec<String>,
    },
}

/// Compares the directory at `dir` with its marker. Nothing is followed:
/// a symbolic link anywhere in it counts as added.
pub(crate) fn inspect(dir: &Path) -> std::io::Result<Existing> {
    let metadata = match fs::symlink_metadata(dir) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Missing),
        Err(err) => return Err(err),
    };
    if metadata.is_symlink() {
        return Ok(Existing::Foreign(Foreign::Link));
    }
    if !metadata.is_dir() {
        return Ok(Existing::Foreign(Foreign::NotADirectory));
    }
    let mut entries = Vec::new();
    if !list(dir, "", 0, &mut entries)? {
        return Ok(Existing::Foreign(Foreign::Oversized));
    }
    if entries.is_empty() {
        return Ok(Existing::Empty);
    }
    if !entries
        .iter()
        .any(|e| e.path == MARKER && e.kind == Kind::File)
    {
        return Ok(Existing::Foreign(Foreign::NoMarker));
    }
    let Some(listed) = read_marker(&dir.join(MARKER))? else {
        return Ok(Existing::Foreign(Foreign::UnknownMarker));
    };
    let mut added = Vec::new();
    let mut modified = Vec::new();
    for entry in &entries {
        match entry.kind {
            _ if entry.path == MARKER => {}
            Kind::Dir => {
                // A directory is ours when a listed file lies under it.
                let prefix = format!("{}/", entry.path);
                if !listed.keys().any(|p| p.starts_with(&prefix)) {
                    added.push(prefix);
                }
            }
            Kind::Other => added.push(entry.path.clone()),
            Kind::File => match listed.get(&entry.path) {
                None => added.push(entry.path.clone()),
                Some(hash) => {
                    if file_hash(&dir.join(&entry.path))?.as_ref() != Some(hash) {
                        modified.push(entry.path.clone());
                    }
                }
            },
        }
    }
    if added.is_empty() && modified.is_empty() {
        Ok(Existing::Ours)
    } else {
        Ok(Existing::Foreign(Foreign::Changed { added, modified }))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    /// A symbolic link, FIFO, socket or device.
    Other,
}

struct Entry {
    /// Relative path, `/`-separated.
    path: String,
    kind: Kind,
}

/// Lists `dir` recursively into `out`, without following links. `false`
/// when it holds more than [`MAX_ENTRIES`] or nests deeper than
/// [`MAX_DEPTH`].
fn list(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<Entry>) -> std::io::Result<bool> {
    if depth > MAX_DEPTH {
        return Ok(false);
    }
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if out.len() >= MAX_ENTRIES {
            return Ok(false);
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}{name}");
        let file_type = entry.file_type()?;
        let kind = if file_type.is_dir() {
            Kind::Dir
        } else if file_type.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        out.push(Entry {
            path: path.clone(),
            kind,
        });
        if kind == Kind::Dir && !list(&entry.path(), &format!("{path}/"), depth + 1, out)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The contents of a regular file of at most [`MAX_FILE_BYTES`], or
/// `None` when it is larger or no longer a regular file: it is opened
/// without following a link or waiting on a FIFO put in its place since
/// the directory was listed.
fn read_regular(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let cap = usize::try_from(MAX_FILE_BYTES).unwrap_or(usize::MAX);
    match zerohop_input::read_regular(path, Follow::NoLinks, cap) {
        Ok(bytes) => Ok((bytes.len() <= cap).then_some(bytes)),
        Err(NotRegular::Kind(_)) => Ok(None),
        Err(NotRegular::Io(err)) if err.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
            Ok(None)
        }
        Err(NotRegular::Io(err)) => Err(err),
    }
}

/// The SHA-256 of a file as [`read_regular`] reads it.
fn file_hash(path: &Path) -> std::io::Result<Option<String>> {
    Ok(read_regular(path)?.map(|bytes| sha256_hex(&bytes)))
}

/// The files a marker lists with their hashes, or `None` when it is not
/// a marker of this format.
fn read_marker(path: &Path) -> std::io::Result<Option<BTreeMap<String, String>>> {
    let text = read_regular(path)?.and_then(|bytes| String::from_utf8(bytes).ok());
    Ok(text.as_deref().and_then(parse_marker))
}

/// The files listed in a marker's text, `None` unless it has this format.
fn parse_marker(text: &str) -> Option<BTreeMap<String, String>> {
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) || !text.lines().any(|l| l == FORMAT) {
        return None;
    }
    let mut files = BTreeMap::new();
    for line in lines.filter(|l| !l.starts_with('#')) {
        let (escaped, line) = match line.strip_prefix('\\') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let (hash, path) = line.split_once("  ")?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let path = if escaped {
            unescape(path)?
        } else {
            path.to_owned()
        };
        files.insert(path, hash.to_ascii_lowercase());
    }
    Some(files)
}

/// Reverses sha256sum's `\\` and `\n`.
fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_with_sha256sum_escaping() {
        let text = marker_text([
            ("README.md", b"hello\n".as_slice()),
            (
                r"host/p/etc/systemd/system/mnt-ai\x2ddata.mount",
                b"x".as_slice(),
            ),
        ]);
        assert!(text.contains(
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  README.md\n"
        ));
        assert!(text.contains(r"\2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881  host/p/etc/systemd/system/mnt-ai\\x2ddata.mount"));
        let files = parse_marker(&text).expect("parses");
        assert_eq!(files.len(), 2);
        assert!(files.contains_key(r"host/p/etc/systemd/system/mnt-ai\x2ddata.mount"));
        assert_eq!(parse_marker("# something else\n"), None);
        assert_eq!(
            parse_marker(&format!("{HEADER}\n{FORMAT}\nnot a line\n")),
            None
        );
    }

    #[test]
    fn sha256sum_accepts_the_marker() {
        let dir = tempfile::tempdir().expect("temp");
        let name = r"mnt-ai\x2ddata.mount";
        fs::write(dir.path().join("README.md"), "hello\n").expect("write");
        fs::write(dir.path().join(name), "x").expect("write");
        let text = marker_text([
            ("README.md", b"hello\n".as_slice()),
            (name, b"x".as_slice()),
        ]);
        fs::write(dir.path().join(MARKER), text).expect("write");
        let Ok(output) = std::process::Command::new("sha256sum")
            .args(["-c", "--strict", MARKER])
            .current_dir(dir.path())
            .output()
        else {
            eprintln!("skipped: sha256sum is not installed");
            return;
        };
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
