//! Writing an archive: `manifest.json`, `report.json`, then every file and
//! link under `root/`, sorted by path, in a tar stream compressed with
//! zstd. Every member has the same owner (0), modes (0644, links 0777) and
//! modification time (the recording's), so the same recording always
//! gives the same bytes.

use std::io::{self, Write};

use tar::{EntryType as TarType, Header};
use zerohop_host::memory::Node;

use crate::limits::{
    MAX_CONTENT_BYTES, MAX_ENTRIES, MAX_FILE_BYTES, MAX_MANIFEST_BYTES, MAX_MEMBERS,
};
use crate::manifest::{Entry, FORMAT_NAME, FORMAT_VERSION, Manifest, Member, Totals};
use crate::snapshot::{Meta, Snapshot};

/// The zstd level: level 3 (zstd's default) compresses a recording of a
/// large host about 40-fold in tens of milliseconds.
const LEVEL: i32 = 3;

/// Why an archive was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// More content than an archive holds.
    #[error(
        "the snapshot would hold {bytes} bytes of files, more than the {cap} bytes a snapshot may \
         hold (the largest file read is {largest}, {largest_bytes} bytes)"
    )]
    TooLarge {
        /// The bytes it would hold.
        bytes: u64,
        /// The cap.
        cap: u64,
        /// The largest file.
        largest: String,
        /// Its size.
        largest_bytes: u64,
    },
    /// More members than an archive holds.
    #[error(
        "the snapshot would hold {members} files and links, more than the {cap} a snapshot may hold"
    )]
    TooManyMembers {
        /// The members it would hold.
        members: usize,
        /// The cap.
        cap: usize,
    },
    /// A manifest larger than a reader opens.
    #[error(
        "the snapshot would list {entries} paths in {bytes} bytes, more than the {max_entries} \
         paths in {max_bytes} bytes a snapshot may list"
    )]
    TooManyEntries {
        /// The paths it would list.
        entries: usize,
        /// The manifest's size.
        bytes: usize,
        /// The cap on paths.
        max_entries: usize,
        /// The cap on the manifest's size.
        max_bytes: u64,
    },
    /// Compressing or writing failed.
    #[error("cannot write the archive: {0}")]
    Io(#[from] io::Error),
}

/// The archive of `snapshot`, compressed.
pub fn encode(snapshot: &Snapshot) -> Result<Vec<u8>, WriteError> {
    let mut entries = Vec::with_capacity(snapshot.tree.len());
    let mut files: Vec<(&str, &[u8])> = Vec::new();
    let mut links: Vec<(&str, &str)> = Vec::new();
    let mut bytes = snapshot.report.len() as u64;
    let mut largest = ("", 0u64);
    for (path, node) in snapshot.tree.nodes() {
        let (mut entry, content) = Entry::of(path, node);
        if content.is_some() {
            entry.skipped = Some(snapshot.tree.skipped(path)).filter(|&skipped| skipped > 0);
        }
        if let Some(content) = content {
            let size = content.len() as u64;
            bytes += size;
            if size > largest.1 {
                largest = (path, size);
            }
            files.push((path, content));
        }
        if let Node::Link(target) = node {
            links.push((path, target.as_str()));
        }
        entries.push(entry);
    }
    // Recording keeps at most one host read's bytes per file: a file over
    // the per-file cap cannot come from a recording, it is counted anyway.
    if bytes > MAX_CONTENT_BYTES || largest.1 > MAX_FILE_BYTES {
        return Err(WriteError::TooLarge {
            bytes,
            cap: MAX_CONTENT_BYTES,
            largest: largest.0.to_owned(),
            largest_bytes: largest.1,
        });
    }
    let members = 1 + files.len() + links.len();
    if members > MAX_MEMBERS {
        return Err(WriteError::TooManyMembers {
            members,
            cap: MAX_MEMBERS,
        });
    }
    let meta = &snapshot.meta;
    let manifest = Manifest {
        format: FORMAT_NAME.to_owned(),
        format_version: FORMAT_VERSION,
        zerohop_version: meta.zerohop_version.clone(),
        created_at: meta.created_at.clone(),
        created_unix: meta.created_unix,
        hostname: meta.hostname.clone(),
        kernel_release: meta.kernel_release.clone(),
        root: meta.root.clone(),
        live: meta.live,
        kernel_log: snapshot.tree.kernel_log().cloned(),
        totals: Totals { members, bytes },
        report: Member::of(&snapshot.report),
        entries,
    };
    let entries = manifest.entries.len();
    let manifest = serde_json::to_vec(&manifest).map_err(io::Error::other)?;
    if entries > MAX_ENTRIES || manifest.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(WriteError::TooManyEntries {
            entries,
            bytes: manifest.len(),
            max_entries: MAX_ENTRIES,
            max_bytes: MAX_MANIFEST_BYTES,
        });
    }

    let mut encoder = zstd::Encoder::new(Vec::new(), LEVEL)?;
    encoder.include_checksum(true)?;
    let mut tar = tar::Builder::new(encoder);
    let time = meta.created_unix;
    append_file(&mut tar, "manifest.json", &manifest, time)?;
    append_file(&mut tar, "report.json", &snapshot.report, time)?;
    // Files and links in one sorted sequence, as the tree keeps them.
    let (mut f, mut l) = (files.iter().peekable(), links.iter().peekable());
    loop {
        let take_file = match (f.peek(), l.peek()) {
            (Some(file), Some(link)) => file.0 < link.0,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_file {
            let (path, content) = f.next().expect("peeked");
            append_file(&mut tar, &member_name(path), content, time)?;
        } else {
            let (path, target) = l.next().expect("peeked");
            append_link(&mut tar, &member_name(path), target, time)?;
        }
    }
    let encoder = tar.into_inner()?;
    Ok(encoder.finish()?)
}

/// The member name of host path `path`.
pub(crate) fn member_name(path: &str) -> String {
    format!("root{path}")
}

fn header(kind: TarType, mode: u32, size: u64, time: u64) -> Header {
    let mut header = Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(time);
    header.set_size(size);
    header
}

fn append_file<W: Write>(
    tar: &mut tar::Builder<W>,
    name: &str,
    content: &[u8],
    time: u64,
) -> io::Result<()> {
    let mut header = header(TarType::Regular, 0o644, content.len() as u64, time);
    tar.append_data(&mut header, name, content)
}

fn append_link<W: Write>(
    tar: &mut tar::Builder<W>,
    name: &str,
    target: &str,
    time: u64,
) -> io::Result<()> {
    let mut header = header(TarType::Symlink, 0o777, 0, time);
    tar.append_link(&mut header, name, target)
}

/// `Meta` as a manifest writes it; kept here so that every field written
/// is one `Meta` has.
impl From<&Manifest> for Meta {
    fn from(manifest: &Manifest) -> Meta {
        Meta {
            zerohop_version: manifest.zerohop_version.clone(),
            created_at: manifest.created_at.clone(),
            created_unix: manifest.created_unix,
            hostname: manifest.hostname.clone(),
            kernel_release: manifest.kernel_release.clone(),
            root: manifest.root.clone(),
            live: manifest.live,
        }
    }
}
