//! `manifest.json`, the first member of every archive: what the snapshot
//! is (format version, zerohop version, time, host name, kernel), and one
//! entry per path the doctor's pass looked at, with what it found there:
//! a file with its size and SHA-256, a link with its target, a directory
//! with its names, an absence, or why it could not be read.

use std::sync::Arc;

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest, Sha256};
use zerohop_host::FileKind;
use zerohop_host::memory::{Content, Listing, LiveLog, Node, Reason};

use crate::limits::{MAX_DIR_ENTRIES, MAX_ENTRIES, MAX_NAMES};

/// The archive format this zerohop writes and the newest it reads.
/// Bumped when a reader of the previous version would misread an archive.
pub const FORMAT_VERSION: u32 = 1;

/// The value of [`Manifest::format`].
pub const FORMAT_NAME: &str = "zerohop-snapshot";

/// What a snapshot is, and every path it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// The archive format, see [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The zerohop that wrote it.
    pub zerohop_version: String,
    /// When it was recorded, RFC 3339 in UTC.
    pub created_at: String,
    /// The same instant in seconds since the Unix epoch; also every
    /// member's modification time.
    pub created_unix: u64,
    /// The host's name (`/proc/sys/kernel/hostname`), when readable.
    pub hostname: Option<String>,
    /// The kernel release (`/proc/sys/kernel/osrelease`), when readable.
    pub kernel_release: Option<String>,
    /// The root the doctor read: `/` for the live host, else a directory.
    pub root: String,
    /// Whether it was recorded on the live host, so that `/proc/self`
    /// describes a zerohop process there.
    pub live: bool,
    /// Present when the kernel log was read from its device while
    /// recording: which device, and whether the read lost records. The
    /// window read is the file at `/var/log/zerohop/kmsg`
    /// ([`CAPTURE`](zerohop_host::facts::kernel_log::CAPTURE)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_log: Option<LiveLog>,
    /// How many members follow the manifest and how many bytes they hold.
    pub totals: Totals,
    /// `report.json`, the doctor's report at recording time.
    pub report: Member,
    /// Every path, sorted. At most [`MAX_ENTRIES`], with at most
    /// [`MAX_NAMES`] names in all their listings: a manifest that lists
    /// more is refused as it is parsed, before the rest of it is held.
    #[serde(deserialize_with = "bounded_entries")]
    pub entries: Vec<Entry>,
}

/// Counts over the archive's members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Members after the manifest: the report, the files and the links.
    pub members: usize,
    /// Bytes of file content, the report included.
    pub bytes: u64,
}

/// A member's size and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Bytes.
    pub size: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
}

impl Member {
    /// The size and hash of `bytes`.
    pub fn of(bytes: &[u8]) -> Member {
        Member {
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
        }
    }
}

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink.
    Link,
    /// A FIFO, a socket, a device: never read.
    Special,
    /// Looked for and not there.
    Absent,
    /// Looking at it failed.
    Unknown,
}

/// One path and what the pass found there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The host path.
    pub path: String,
    /// What it is.
    #[serde(rename = "type")]
    pub kind: EntryType,
    /// A file read: its member's size in bytes (the member is `root` +
    /// the path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// A file read: its member's SHA-256, lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A link's target, relative to its directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// A directory listed: its names, at most [`MAX_DIR_ENTRIES`] as a
    /// listing of a host tree, each a plain name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "bounded_names"
    )]
    pub names: Option<Vec<String>>,
    /// A special file: what it is (`fifo`, `socket`, `character device`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub special: Option<String>,
    /// Why reading (a file), listing (a directory) or looking at it
    /// (unknown) failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Reason>,
    /// For a file read from its end (the kernel-log capture), the bytes
    /// before the part the member holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
}

/// The special kinds by name, as [`FileKind::name`] writes them.
const SPECIALS: [FileKind; 6] = [
    FileKind::Fifo,
    FileKind::Socket,
    FileKind::CharDevice,
    FileKind::BlockDevice,
    FileKind::Symlink,
    FileKind::Other,
];

impl Entry {
    /// The size and hash of the file's member, when it has one.
    pub fn member(&self) -> Option<Member> {
        Some(Member {
            size: self.size?,
            sha256: self.sha256.clone()?,
        })
    }

    fn bare(path: &str, kind: EntryType) -> Entry {
        Entry {
            path: path.to_owned(),
            kind,
            size: None,
            sha256: None,
            target: None,
            names: None,
            special: None,
            error: None,
            skipped: None,
        }
    }

    /// The entry for `node` at `path`; for a file read, its content too.
    pub fn of<'a>(path: &str, node: &'a Node) -> (Entry, Option<&'a [u8]>) {
        let mut content = None;
        let entry = match node {
            Node::File(file) => {
                let mut entry = Entry::bare(path, EntryType::File);
                match file {
                    Content::Read(bytes) => {
                        let member = Member::of(bytes);
                        entry.size = Some(member.size);
                        entry.sha256 = Some(member.sha256);
                        content = Some(&bytes[..]);
                    }
                    Content::NotRead => {}
                    Content::Failed(reason) => entry.error = Some(reason.clone()),
                }
                entry
            }
            Node::Dir(listing) => {
                let mut entry = Entry::bare(path, EntryType::Dir);
                match listing {
                    Listing::Names(names) => entry.names = Some(names.clone()),
                    Listing::NotListed => {}
                    Listing::Failed(reason) => entry.error = Some(reason.clone()),
                }
                entry
            }
            Node::Link(target) => Entry {
                target: Some(target.clone()),
                ..Entry::bare(path, EntryType::Link)
            },
            Node::Special(kind) => Entry {
                special: Some(kind.name().to_owned()),
                ..Entry::bare(path, EntryType::Special)
            },
            Node::Absent => Entry::bare(path, EntryType::Absent),
            Node::Unknown(reason) => Entry {
                error: Some(reason.clone()),
                ..Entry::bare(path, EntryType::Unknown)
            },
        };
        (entry, content)
    }

    /// The node this entry stands for, with the content of its member;
    /// `Err` with a lowercase fragment when its fields do not fit its type.
    pub fn into_node(self, content: Option<Arc<[u8]>>) -> Result<Node, String> {
        let kind = self.kind_name();
        let extra = |what: &str| Err(format!("a {kind} entry has {what}"));
        if self.kind != EntryType::Link && self.target.is_some() {
            return extra("a target");
        }
        if self.kind != EntryType::Dir && self.names.is_some() {
            return extra("names");
        }
        if self.kind != EntryType::Special && self.special.is_some() {
            return extra("a special kind");
        }
        if self.kind != EntryType::File && (self.size.is_some() || self.sha256.is_some()) {
            return extra("a size or hash");
        }
        if self.size.is_some() != self.sha256.is_some() {
            return extra("a size without a hash or a hash without a size");
        }
        if self.skipped.is_some() && self.size.is_none() {
            return extra("skipped bytes but no content");
        }
        let has_size = self.size.is_some();
        let has_names = self.names.is_some();
        Ok(match (self.kind, self.error) {
            (EntryType::File, None) => Node::File(match content {
                Some(bytes) => Content::Read(bytes),
                None => Content::NotRead,
            }),
            (EntryType::File, Some(_)) if has_size => {
                return extra("both content and an error");
            }
            (EntryType::File, Some(reason)) => Node::File(Content::Failed(reason)),
            (EntryType::Dir, None) => Node::Dir(match self.names {
                Some(names) => Listing::Names(names),
                None => Listing::NotListed,
            }),
            (EntryType::Dir, Some(_)) if has_names => {
                return extra("both names and an error");
            }
            (EntryType::Dir, Some(reason)) => Node::Dir(Listing::Failed(reason)),
            (EntryType::Link, None) => match self.target {
                Some(target) => Node::Link(target),
                None => return Err("a link entry has no target".to_owned()),
            },
            (EntryType::Special, None) => {
                let name = self.special.as_deref().unwrap_or_default();
                match SPECIALS.iter().find(|kind| kind.name() == name) {
                    Some(kind) => Node::Special(*kind),
                    None => return Err(format!("unknown special kind {name:?}")),
                }
            }
            (EntryType::Absent, None) => Node::Absent,
            (EntryType::Unknown, Some(reason)) => Node::Unknown(reason),
            (EntryType::Unknown, None) => return Err("an unknown entry has no error".to_owned()),
            (_, Some(_)) => return extra("an error"),
        })
    }

    fn kind_name(&self) -> &'static str {
        match self.kind {
            EntryType::File => "file",
            EntryType::Dir => "dir",
            EntryType::Link => "link",
            EntryType::Special => "special",
            EntryType::Absent => "absent",
            EntryType::Unknown => "unknown",
        }
    }
}

/// The manifest's entries, refused once past [`MAX_ENTRIES`] or, with the
/// names of their listings, past [`MAX_NAMES`] names.
fn bounded_entries<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Entry>, D::Error> {
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<Entry>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of entries")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Entry>, A::Error> {
            let mut entries = Vec::new();
            let mut names = 0usize;
            while let Some(entry) = seq.next_element::<Entry>()? {
                if entries.len() == MAX_ENTRIES {
                    return Err(A::Error::custom(format!(
                        "more than {MAX_ENTRIES} entries, more than a snapshot may hold"
                    )));
                }
                names += entry.names.as_ref().map_or(0, Vec::len);
                if names > MAX_NAMES {
                    return Err(A::Error::custom(format!(
                        "more than {MAX_NAMES} names in its listings, more than a snapshot may \
                         hold"
                    )));
                }
                entries.push(entry);
            }
            Ok(entries)
        }
    }
    deserializer.deserialize_seq(Entries)
}

/// A listing's names, refused once past [`MAX_DIR_ENTRIES`], as a listing
/// of a host tree is, or at a name that no directory holds (empty, `.`,
/// `..`, with `/` or NUL, over 255 bytes).
fn bounded_names<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<String>>, D::Error> {
    struct Names(Vec<String>);
    struct Visit;
    impl<'de> Visitor<'de> for Visit {
        type Value = Names;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of names")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Names, A::Error> {
            let mut names = Vec::new();
            while let Some(name) = seq.next_element::<String>()? {
                if names.len() == MAX_DIR_ENTRIES {
                    return Err(A::Error::custom(format!(
                        "a listing of more than {MAX_DIR_ENTRIES} names, more than a listing \
                         holds"
                    )));
                }
                if matches!(name.as_str(), "" | "." | "..")
                    || name.len() > 255
                    || name.contains(['/', '\0'])
                {
                    return Err(A::Error::custom(
                        "a listing with a name no directory holds (empty, `.`, `..`, with `/` \
                         or NUL, or over 255 bytes)",
                    ));
                }
                names.push(name);
            }
            Ok(Names(names))
        }
    }
    impl<'de> Deserialize<'de> for Names {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Names, D::Error> {
            deserializer.deserialize_seq(Visit)
        }
    }
    Ok(Option::<Names>::deserialize(deserializer)?.map(|names| names.0))
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    hex
}
