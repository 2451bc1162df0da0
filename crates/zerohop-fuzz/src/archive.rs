//! The targets over snapshots: opening an archive from anyone
//! (`zerohop_snapshot::open`), and `diff` of two hosts whose files come
//! from the input.
//!
//! A compressed archive carries a checksum, so a mutant of one is refused
//! before its tar is looked at: the `snapshot` target mutates the tar
//! stream and compresses each mutant, so that the manifest's parser, the
//! member checks and the tree built from them see the mutations. The
//! `diff` target takes two texts from the input (split at its first NUL
//! byte, or in the middle) as the files, listings and link targets of two
//! recorded hosts, and writes their diff both ways.

use std::io::Read;
use std::sync::Arc;

use zerohop_host::HostRoot;
use zerohop_host::memory::{Content, Listing, MemoryTree, Node};
use zerohop_snapshot::diff::{self, Side};
use zerohop_snapshot::{Meta, Snapshot, encode, open};

use crate::seeds::{MAX_SEED_BYTES, Sources};
use crate::signature::signature;

/// How many doctor fixture roots are recorded as seeds of the `snapshot`
/// target: recording runs the doctor, and the fixtures differ little in
/// the archive's structure.
const RECORDED_ROOTS: usize = 24;

/// The tar streams of snapshots of doctor fixture roots and of the shared
/// corpus's host tree, uncompressed.
pub fn snapshot_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    let fixtures = sources.repo_dir("crates/zerohop-doctor/tests/fixtures");
    let mut roots = Vec::new();
    for check in crate::tree::sorted_dirs(&fixtures) {
        roots.extend(crate::tree::sorted_dirs(&check).into_iter().take(1));
    }
    roots.truncate(RECORDED_ROOTS);
    let mut seeds = Vec::new();
    for root in roots {
        let Ok(host) = HostRoot::at(&root) else {
            continue;
        };
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let Ok(snapshot) = Snapshot::capture(&host, time) else {
            continue;
        };
        let Ok(archive) = encode(&snapshot) else {
            continue;
        };
        let mut tar = Vec::new();
        if zstd::Decoder::new(&archive[..])
            .and_then(|mut decoder| decoder.read_to_end(&mut tar))
            .is_ok()
        {
            seeds.push(tar);
        }
    }
    seeds.retain(|seed| seed.len() <= MAX_SEED_BYTES);
    seeds
}

/// Tar and manifest tokens.
pub const SNAPSHOT_TOKENS: &[&[u8]] = &[
    b"manifest.json",
    b"report.json",
    b"root/",
    b"././@LongLink",
    b"\"type\":\"absent\"",
    b"\"type\":\"dir\"",
    b"\"type\":\"link\"",
    b"\"names\":[",
    b"\"target\":\"../",
    b"\"size\":",
    b"\"skipped\":",
    b"\"members\":",
    b"/a/a/a/a/a/a/a/a",
    b"ustar  \0",
    b"ustar\x0000",
    b"00000000000",
    b"\0\0\0\0\0\0\0\0",
];

/// Opens the mutated tar stream, compressed.
pub fn run_snapshot(bytes: &[u8]) -> u64 {
    let Ok(archive) = zstd::encode_all(bytes, 1) else {
        return signature("not compressed");
    };
    match open(&archive) {
        Ok(snapshot) => signature(("ok", snapshot.tree.len())),
        Err(err) => {
            // The kind of refusal, without the values it names.
            let text = err.to_string();
            let words: Vec<&str> = text.split_whitespace().take(4).collect();
            signature(("err", words))
        }
    }
}

/// Pairs of host files from the corpus and the doctor's fixtures, joined
/// by a NUL byte.
pub fn diff_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    let files = crate::seeds::host_files(
        sources,
        &["cmdline", "mountinfo", "meminfo", "modules", "cufile.json"],
        &["mountinfo", "meminfo", "cmdline"],
    );
    let mut seeds: Vec<Vec<u8>> = files
        .windows(2)
        .map(|pair| {
            let mut seed = pair[0].clone();
            seed.push(0);
            seed.extend_from_slice(&pair[1]);
            seed
        })
        .filter(|seed| seed.len() <= MAX_SEED_BYTES)
        .collect();
    seeds.push(b"a\nb\nc\n\0a\nc\nd\n".to_vec());
    seeds
}

/// Line and escape tokens.
pub const DIFF_TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r",
    b"\x1b]0;title\x07",
    b"\x1b[2J",
    b"\xe2\x80\xae",
    b"\0",
    b"@@ -1 +1 @@",
    b"--- a",
    b"+++ b",
    b"\\ No newline at end of file",
];

/// Compares two hosts built from the input's two halves.
pub fn run_diff(bytes: &[u8]) -> u64 {
    let (a, b) = match bytes.iter().position(|&b| b == 0) {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => bytes.split_at(bytes.len() / 2),
    };
    let diff = diff::compare(&side("a", a), &side("b", b), true);
    let mut human = Vec::new();
    let written = diff::write_human(&diff, &mut human).is_ok();
    let json = serde_json::to_vec(&diff).map_or(0, |json| json.len());
    signature((
        written,
        diff.files.len(),
        diff.facts.len(),
        diff.files.iter().filter(|f| f.cut.is_some()).count(),
        human.len().min(1 << 12) / 256,
        json.min(1 << 12) / 256,
    ))
}

/// A host holding `text` as its kernel command line, as a file, as a
/// listing (one name per line) and as a link target.
fn side(label: &str, text: &[u8]) -> Side {
    let mut tree = MemoryTree::new();
    let file = Node::File(Content::Read(Arc::from(text)));
    let _ = tree.insert("/proc/cmdline", file.clone());
    let _ = tree.insert("/etc/cufile.json", file);
    let names: Vec<String> = String::from_utf8_lossy(text)
        .lines()
        .filter(|name| !name.is_empty() && !name.contains('/') && name.len() <= 255)
        .map(str::to_owned)
        .collect();
    let _ = tree.insert("/sys/class/net", Node::Dir(Listing::Names(names)));
    let target: String = String::from_utf8_lossy(text)
        .chars()
        .filter(|&c| c != '/' && c != '\0')
        .take(200)
        .collect();
    if !target.is_empty() {
        let _ = tree.insert("/sys/class/infiniband/dev", Node::Link(target));
    }
    let snapshot = Snapshot {
        meta: Meta {
            zerohop_version: String::new(),
            created_at: String::new(),
            created_unix: 0,
            hostname: None,
            kernel_release: None,
            root: "/".to_owned(),
            live: false,
        },
        report: Vec::new(),
        tree,
    };
    Side::new(label, snapshot)
}
