//! The `doctor` target: a whole host tree in one input, written to a fresh
//! directory and read by the real doctor through `HostRoot`.
//!
//! The input is a text archive, so that byte mutations change file
//! contents, paths, links and file types alike:
//!
//! ```text
//! === proc/cmdline
//! ro quiet iommu=pt
//! === sys/bus/pci/devices/0000:3b:00.0 -> ../../../devices/pci0000:3a/0000:3b:00.0
//! === proc/driver/nvidia/version |fifo
//! === sys/class/net/ /
//! ```
//!
//! A header is a line starting with `=== `; a file's content is everything
//! up to the next header. ` -> TARGET` makes a symlink (its target may point
//! anywhere: the doctor must resolve it inside the root), ` |fifo` a FIFO
//! (opening one for reading blocks: the doctor must refuse it, not wait),
//! a trailing ` /` a directory, and `profile.json` at the top is the
//! doctor's profile of expectations. Paths are confined to the directory:
//! empty, `.` and `..` components are dropped.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, symlink};
use std::path::{Path, PathBuf};

use zerohop_doctor::topology::Topology;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};
use zerohop_input::{Follow, read_regular};

use crate::seeds::{MAX_SEED_BYTES, Sources, walk};
use crate::signature::signature;

/// Tokens of the archive and of the files the doctor reads.
pub const TOKENS: &[&[u8]] = &[
    b"\n=== ",
    b" -> ",
    b" |fifo",
    b" /",
    b" -> /",
    b" -> ..",
    b"/proc/self/",
    b"sys/bus/pci/devices/",
    b"0000:3b:00.0",
    b"mlx5_0",
    b"4: ACTIVE",
    b"0x15b3",
    b"0x10de",
    b"0x020000",
    b"0x030200",
    b"infiniband/",
    b"ports/1/",
    b"nvidia",
    b"\n",
    b"\x1b]0;x\x07",
    b"$(id)",
];

/// The most entries one input may create.
const MAX_ENTRIES: usize = 2_000;

/// One fixture root of the doctor's tests per seed, and the real
/// InfiniBand sysfs capture placed at `sys/class/infiniband`.
pub fn seeds(sources: &Sources) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let fixtures = sources.repo_dir("crates/zerohop-doctor/tests/fixtures");
    for check in sorted_dirs(&fixtures) {
        for case in sorted_dirs(&check) {
            seeds.push(archive(&case, ""));
        }
    }
    if let Some(capture) =
        sources.shared_dir("corpus/sys_class_infiniband_h100_gpud/sys-class-infiniband-h100.0")
    {
        seeds.push(archive(&capture, "sys/class/infiniband/"));
    }
    seeds.retain(|seed| !seed.is_empty() && seed.len() <= MAX_SEED_BYTES);
    seeds
}

pub(crate) fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// The archive of the tree under `dir`, each path prefixed with `prefix`.
fn archive(dir: &Path, prefix: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    for (relative, path) in files {
        let Ok(content) = fs::read(&path) else {
            continue;
        };
        let _ = writeln!(out, "=== {prefix}{relative}");
        out.extend_from_slice(&content);
        if !content.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    let mut links = Vec::new();
    collect_links(dir, dir, &mut links);
    for (relative, target) in links {
        let _ = writeln!(out, "=== {prefix}{relative} -> {target}");
    }
    out
}

fn collect_links(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let (Ok(target), Ok(relative)) = (fs::read_link(&path), path.strip_prefix(base)) {
                out.push((
                    relative.to_string_lossy().into_owned(),
                    target.to_string_lossy().into_owned(),
                ));
            }
        } else if meta.is_dir() {
            collect_links(base, &path, out);
        }
    }
}

/// What one header asks for.
enum Kind<'a> {
    File(&'a [u8]),
    Link(String),
    Fifo,
    Dir,
}

/// Parses the archive into entries: a confined relative path and its kind.
fn entries(input: &[u8]) -> Vec<(PathBuf, Kind<'_>)> {
    let mut headers = Vec::new();
    let mut at = 0;
    while at < input.len() {
        let line_end = input[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(input.len(), |p| at + p);
        if input[at..line_end].starts_with(b"=== ") {
            headers.push((at, line_end));
        }
        at = line_end + 1;
    }
    let mut out = Vec::new();
    for (index, &(start, end)) in headers.iter().enumerate().take(MAX_ENTRIES) {
        let header = String::from_utf8_lossy(&input[start + 4..end]);
        let content_start = (end + 1).min(input.len());
        let content_end = headers.get(index + 1).map_or(input.len(), |next| next.0);
        let content = &input[content_start..content_end.max(content_start)];
        let (name, kind) = if let Some((name, target)) = header.split_once(" -> ") {
            (name, Kind::Link(target.to_owned()))
        } else if let Some(name) = header.strip_suffix(" |fifo") {
            (name, Kind::Fifo)
        } else if let Some(name) = header.strip_suffix(" /") {
            (name, Kind::Dir)
        } else {
            (&*header, Kind::File(content))
        };
        if let Some(path) = confined(name) {
            out.push((path, kind));
        }
    }
    out
}

/// `name` as a path that stays inside the directory it is joined to: no
/// root, no `.` or `..`, no empty or NUL-holding components.
fn confined(name: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = name
        .split('/')
        .filter(|part| !part.is_empty() && *part != "." && *part != "..")
        .collect();
    if parts.is_empty() || parts.iter().any(|part| part.contains('\0')) {
        return None;
    }
    Some(parts.iter().collect())
}

/// Writes the entries under `dir`; an entry that cannot be made (its parent
/// is a file, a name is too long) is left out, as a real tree would lack it.
fn write_tree(dir: &Path, input: &[u8]) {
    for (relative, kind) in entries(input) {
        // A link the archive made earlier must not carry a later entry out
        // of the directory (`x -> /etc`, then `x/passwd`), and an entry
        // must not be written through one either.
        if !parents_are_directories(dir, &relative) {
            continue;
        }
        let path = dir.join(&relative);
        if let Some(parent) = path.parent()
            && fs::create_dir_all(parent).is_err()
        {
            continue;
        }
        let _ = match kind {
            // A new file only: what is there already (a FIFO, a link) is
            // neither opened nor followed.
            Kind::File(content) => OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&path)
                .and_then(|mut file| file.write_all(content)),
            Kind::Link(target) if !target.contains('\0') => symlink(target, &path),
            Kind::Link(_) => Ok(()),
            Kind::Dir => fs::create_dir_all(&path),
            Kind::Fifo => rustix::fs::mknodat(
                rustix::fs::CWD,
                &path,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
                0,
            )
            .map_err(std::io::Error::from),
        };
    }
}

/// Whether every ancestor of `relative` under `dir` is a directory or not
/// there yet: none is a symlink or anything else.
fn parents_are_directories(dir: &Path, relative: &Path) -> bool {
    let mut path = dir.to_path_buf();
    let Some(parent) = relative.parent() else {
        return true;
    };
    for component in parent.components() {
        path.push(component);
        match fs::symlink_metadata(&path) {
            Ok(meta) if !meta.is_dir() => return false,
            _ => {}
        }
    }
    true
}

/// Where the trees are written: memory-backed `/dev/shm` when it can be
/// used, so that a million runs do not wear a disk.
fn scratch() -> std::io::Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("zerohop-fuzz-")
            .tempdir_in(shm)
    {
        return Ok(dir);
    }
    tempfile::Builder::new().prefix("zerohop-fuzz-").tempdir()
}

/// Writes the tree, runs every check of the doctor and the topology on it.
pub fn run(input: &[u8]) -> u64 {
    let Ok(dir) = scratch() else {
        return signature("no scratch directory");
    };
    write_tree(dir.path(), input);
    // The profile is a file of the tree too, and a mutant can make it a
    // FIFO: read it as zerohop reads the files users name.
    let profile: Profile = read_regular(&dir.path().join("profile.json"), Follow::NoLinks, 1 << 20)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let Ok(root) = HostRoot::at(dir.path()) else {
        return signature("not a root");
    };
    let facts = Facts::collect(&root);
    let report = zerohop_doctor::run(&facts, &profile, &Selection::all());
    let topology = Topology::of(&facts);
    let mut statuses: Vec<(&str, &str)> = report
        .findings
        .iter()
        .map(|f| (f.id.as_str(), f.status.as_str()))
        .collect();
    statuses.sort_unstable();
    statuses.dedup();
    signature((statuses, topology.pairings.len(), topology.nics.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archives_are_confined_to_their_directory() {
        let input = b"=== ../../etc/x\nA\n=== /abs/y -> /etc/shadow\n=== a/./b |fifo\n=== d /\n=== \nskip\n";
        let got: Vec<String> = entries(input)
            .iter()
            .map(|(path, _)| path.display().to_string())
            .collect();
        assert_eq!(got, ["etc/x", "abs/y", "a/b", "d"]);
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), input);
        assert_eq!(fs::read(dir.path().join("etc/x")).unwrap(), b"A\n");
        assert_eq!(
            fs::read_link(dir.path().join("abs/y")).unwrap(),
            Path::new("/etc/shadow")
        );
        assert!(dir.path().join("d").is_dir());
    }

    #[test]
    fn fixture_roots_round_trip() {
        let sources = Sources::of_this_checkout();
        let seeds = seeds(&sources);
        assert!(seeds.len() > 100, "{} fixture roots", seeds.len());
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &seeds[0]);
        assert!(fs::read_dir(dir.path()).unwrap().next().is_some());
    }

    #[test]
    fn a_fifo_as_the_profile_or_any_host_file_is_not_waited_on() {
        // The first input the long run found hanging: the harness itself
        // read the profile with a blocking open.
        let input = b"=== profile.json |fifo\n=== proc/cmdline |fifo\n=== sys/bus/pci/devices /\n";
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || send.send(run(input)));
        assert!(
            receive
                .recv_timeout(std::time::Duration::from_secs(30))
                .is_ok(),
            "the doctor waited on a fifo"
        );
    }

    #[test]
    fn entries_are_never_written_through_links_or_fifos() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        fs::write(&victim, "kept").unwrap();
        let input = format!(
            "=== out -> {dir}\n=== out/victim\nreplaced\n=== link -> {file}\n=== link\nreplaced\n=== pipe |fifo\n=== pipe\nblocked\n",
            dir = outside.path().display(),
            file = victim.display(),
        );
        let dir = tempfile::tempdir().unwrap();
        let (send, receive) = std::sync::mpsc::channel();
        let root = dir.path().to_path_buf();
        std::thread::spawn(move || {
            write_tree(&root, input.as_bytes());
            send.send(())
        });
        assert!(
            receive
                .recv_timeout(std::time::Duration::from_secs(10))
                .is_ok(),
            "writing a file over a fifo waited for a reader"
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "kept");
    }
}
