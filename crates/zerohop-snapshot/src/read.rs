//! Opening an archive, which may come from anyone: every cap is checked
//! before what it bounds is read, every member is matched against the
//! manifest (name, type, size, hash, link target) and nothing is written
//! anywhere. The result is a [`Snapshot`] in memory.
//!
//! The manifest comes first and is read first: its format version is
//! checked before anything else in it is trusted, and its totals and the
//! order of its entries before any member is read. The members follow the
//! manifest's order, so each is matched against the next entry that has
//! one. A member's size is checked against the manifest from its header,
//! before its content is read, and its hash after.
//!
//! The tar stream is read raw: a GNU long-name or long-link record is
//! capped at the longest path before it is read, and a PAX header, whose
//! `size` would override the one checked, is refused, as is anything after
//! the archive's end but the zeros that pad it.

use std::cell::Cell;
use std::io::{self, Read};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use serde::Deserialize;
use zerohop_host::facts::kernel_log::CAPTURE;
use zerohop_host::memory::{LiveLog, MemoryTree, check_link, check_path};
use zerohop_input::{Follow, NotRegular, os_reason, read_regular};

use crate::limits::{
    MAX_ARCHIVE_BYTES, MAX_CONTENT_BYTES, MAX_ENTRIES, MAX_FILE_BYTES, MAX_LONG_NAME_BYTES,
    MAX_MANIFEST_BYTES, MAX_MEMBERS, MAX_REPORT_BYTES, MAX_TAR_BYTES, MAX_TREE_PATH_BYTES,
    MAX_WINDOW_LOG,
};
use crate::manifest::{Entry, EntryType, FORMAT_NAME, FORMAT_VERSION, Manifest, sha256_hex};
use crate::snapshot::{Meta, Snapshot};

/// The longest reason the manifest may give for a kernel-log read cut
/// short: the reader writes one short sentence.
const MAX_NOTE_BYTES: usize = 1024;

/// The zstd frame's first four bytes.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Why an archive was refused. Messages name the member and the reason.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file could not be read.
    #[error("{0}")]
    File(String),
    /// Not a zstd stream, or not a tar inside, or no manifest first.
    #[error("not a zerohop snapshot: {0}")]
    NotASnapshot(String),
    /// Written in a format this zerohop does not read.
    #[error(
        "written by zerohop {written_by} in snapshot format {version}; this zerohop reads format \
         {FORMAT_VERSION} and older: open it with zerohop {written_by} or later"
    )]
    NewerFormat {
        /// The archive's format version.
        version: u32,
        /// The zerohop that wrote it.
        written_by: String,
    },
    /// Past one of the caps in [`crate::limits`].
    #[error("refused: {0}")]
    TooLarge(String),
    /// A member or an entry is unsafe or does not match the manifest.
    #[error("refused: {0}")]
    Invalid(String),
    /// The archive ends early or does not decompress.
    #[error("refused: the archive is truncated or corrupt: {0}")]
    Corrupt(String),
}

/// Opens the archive at `path`: a regular file of at most
/// [`MAX_ARCHIVE_BYTES`], read without waiting on a FIFO or a device.
/// Messages do not repeat the path: callers say which file they opened.
pub fn open_file(path: &Path) -> Result<Snapshot, OpenError> {
    let bytes = read_regular(path, Follow::Links, MAX_ARCHIVE_BYTES).map_err(|err| {
        OpenError::File(match err {
            NotRegular::Kind(kind) => format!("it is {kind}, not a snapshot file"),
            NotRegular::Io(err) => format!("cannot read it: {}", os_reason(&err)),
        })
    })?;
    if bytes.len() > MAX_ARCHIVE_BYTES {
        return Err(OpenError::TooLarge(format!(
            "it is larger than {MAX_ARCHIVE_BYTES} bytes, more than a snapshot may be"
        )));
    }
    open(&bytes)
}

/// Opens an archive held in `bytes`.
pub fn open(bytes: &[u8]) -> Result<Snapshot, OpenError> {
    if !bytes.starts_with(&ZSTD_MAGIC) {
        return Err(OpenError::NotASnapshot(
            "it is not zstd-compressed (a snapshot is a .zhsnap written by `zerohop snapshot`)"
                .to_owned(),
        ));
    }
    // One frame, as written: a second frame or a skippable one after it is
    // data after the archive's end.
    match zstd::zstd_safe::find_frame_compressed_size(bytes) {
        Ok(frame) if frame < bytes.len() => {
            return Err(OpenError::Invalid(format!(
                "{} bytes follow the archive's end (a snapshot is one zstd frame)",
                bytes.len() - frame
            )));
        }
        Ok(_) => {}
        Err(code) => {
            return Err(OpenError::Corrupt(
                zstd::zstd_safe::get_error_name(code).to_owned(),
            ));
        }
    }
    let mut decoder = zstd::Decoder::with_buffer(bytes).map_err(corrupt)?;
    decoder.window_log_max(MAX_WINDOW_LOG).map_err(corrupt)?;
    let exceeded = Rc::new(Cell::new(false));
    let mut stream = Capped {
        inner: decoder,
        left: MAX_TAR_BYTES,
        exceeded: Rc::clone(&exceeded),
    };
    let over = |err: OpenError| {
        if exceeded.get() {
            OpenError::TooLarge(format!(
                "the archive decompresses to more than {MAX_TAR_BYTES} bytes"
            ))
        } else {
            err
        }
    };
    let snapshot = read_tar(&mut stream).map_err(over)?;
    // The rest of the stream must decompress too: a truncated or damaged
    // frame fails its checksum here even after the last member. After the
    // end of the archive come only the zeros that pad it to a record.
    only_zeros(&mut stream).map_err(over)?;
    Ok(snapshot)
}

/// Reads `stream` to its end, refusing anything but zeros.
fn only_zeros(stream: &mut impl Read) -> Result<(), OpenError> {
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        let read = match stream.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(read) => read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(stream_error(&err)),
        };
        if buffer[..read].iter().any(|&byte| byte != 0) {
            return Err(OpenError::Invalid(
                "data follows the end of the archive".to_owned(),
            ));
        }
    }
}

fn read_tar(stream: &mut Capped<impl Read>) -> Result<Snapshot, OpenError> {
    let mut archive = tar::Archive::new(stream);
    let mut members = archive
        .entries()
        .map_err(|err| stream_error(&err))?
        .raw(true);

    let manifest = match next_member(&mut members)? {
        Some(mut first) => {
            if first.name != b"manifest.json" || !is_regular(&first) {
                return Err(OpenError::NotASnapshot(
                    "its first member is not manifest.json".to_owned(),
                ));
            }
            let bytes = read_member(&mut first.entry, "manifest.json", MAX_MANIFEST_BYTES)?;
            parse_manifest(&bytes)?
        }
        None => return Err(OpenError::NotASnapshot("the archive is empty".to_owned())),
    };
    check_entries(&manifest)?;

    let report = match next_member(&mut members)? {
        Some(mut second) => {
            if second.name != b"report.json" || !is_regular(&second) {
                return Err(OpenError::Invalid(
                    "the second member is not report.json".to_owned(),
                ));
            }
            expect_size(&second.entry, "report.json", manifest.report.size)?;
            let bytes = read_member(&mut second.entry, "report.json", MAX_REPORT_BYTES)?;
            expect_hash(&bytes, "report.json", &manifest.report.sha256)?;
            bytes
        }
        None => return Err(truncated("report.json")),
    };

    // The members come in the manifest's order (both sorted by path), so
    // each is matched against the next entry that has one: no lookup, and
    // a member out of place is a duplicate, a missing member or a stray.
    let entries = &manifest.entries;
    let listed: Vec<usize> = (0..entries.len())
        .filter(|&index| is_member(&entries[index]))
        .collect();
    let mut contents: Vec<Option<Arc<[u8]>>> = vec![None; entries.len()];
    let mut next = 0;
    let mut count = 1;
    while let Some(Member {
        entry: mut member,
        name: name_bytes,
        link,
    }) = next_member(&mut members)?
    {
        count += 1;
        if count > manifest.totals.members {
            return Err(OpenError::Invalid(format!(
                "more members than the {} the manifest lists",
                manifest.totals.members
            )));
        }
        let name = std::str::from_utf8(&name_bytes)
            .map_err(|_| OpenError::Invalid("a member name is not UTF-8".to_owned()))?;
        let Some(path) = name.strip_prefix("root").filter(|p| p.starts_with('/')) else {
            return Err(OpenError::Invalid(format!(
                "member {} is outside root/ (a snapshot holds only host files there)",
                clip(name)
            )));
        };
        check_path(path)
            .map_err(|err| OpenError::Invalid(format!("member {}: {err}", clip(name))))?;
        let kind = member.header().entry_type();
        let what = match kind {
            tar::EntryType::Regular => "file",
            tar::EntryType::Symlink => "link",
            other => {
                return Err(OpenError::Invalid(format!(
                    "member {} is a {}, not a file or a link",
                    clip(name),
                    type_name(other)
                )));
            }
        };
        let Some(&index) = listed
            .get(next)
            .filter(|&&index| entries[index].path == path)
        else {
            return Err(out_of_place(
                entries,
                listed.get(next).copied(),
                path,
                name,
                what,
            ));
        };
        next += 1;
        let entry = &entries[index];
        match (kind, entry.size, &entry.sha256, &entry.target) {
            (tar::EntryType::Regular, Some(size), Some(sha256), _) => {
                expect_size(&member, name, size)?;
                let bytes = read_member(&mut member, name, MAX_FILE_BYTES)?;
                expect_hash(&bytes, name, sha256)?;
                contents[index] = Some(Arc::from(bytes));
            }
            (tar::EntryType::Symlink, None, None, Some(want)) if entry.kind == EntryType::Link => {
                expect_size(&member, name, 0)?;
                let target = link
                    .map(|t| String::from_utf8_lossy(&t).into_owned())
                    .unwrap_or_default();
                check_link(path, &target).map_err(|err| OpenError::Invalid(err.to_string()))?;
                if target != *want {
                    return Err(OpenError::Invalid(format!(
                        "link {} points to {:?}, the manifest says {:?}",
                        clip(name),
                        clip(&target),
                        clip(want)
                    )));
                }
            }
            _ => return Err(unlisted(&clip(name), what)),
        }
    }
    if let Some(&index) = listed.get(next) {
        return Err(truncated(&format!("root{}", entries[index].path)));
    }

    let mut tree = MemoryTree::with_capacity(entries.len());
    tree.set_process_view(manifest.live);
    tree.set_kernel_log(kernel_log(&manifest)?);
    let meta = Meta::from(&manifest);
    for (mut entry, content) in manifest.entries.into_iter().zip(contents) {
        let path = std::mem::take(&mut entry.path);
        let skipped = entry.skipped.unwrap_or(0);
        let node = entry
            .into_node(content)
            .map_err(|why| OpenError::Invalid(format!("entry {}: {why}", clip(&path))))?;
        tree.set_skipped(&path, skipped);
        tree.insert(path, node)
            .map_err(|err| OpenError::Invalid(err.to_string()))?;
    }
    Ok(Snapshot { meta, report, tree })
}

/// The manifest's kernel-log device, checked: a plain path, a reason of
/// at most [`MAX_NOTE_BYTES`] without control characters (both end up in
/// findings), and a window that the archive holds as a file.
fn kernel_log(manifest: &Manifest) -> Result<Option<LiveLog>, OpenError> {
    let Some(log) = &manifest.kernel_log else {
        return Ok(None);
    };
    check_path(&log.device)
        .map_err(|err| OpenError::Invalid(format!("the manifest's kernel_log device: {err}")))?;
    if let Some(cut) = &log.cut
        && (cut.len() > MAX_NOTE_BYTES || cut.chars().any(char::is_control))
    {
        return Err(OpenError::Invalid(format!(
            "the manifest's kernel_log cut is not a short line of text: {}",
            clip(cut)
        )));
    }
    let window = manifest.entries.iter().find(|entry| entry.path == CAPTURE);
    if window.is_none_or(|entry| entry.member().is_none()) {
        return Err(OpenError::Invalid(format!(
            "the manifest has a kernel_log but no file read at {CAPTURE}"
        )));
    }
    Ok(Some(log.clone()))
}

/// Whether the archive holds a member for `entry`: a file read whole
/// (size and hash), or a link.
fn is_member(entry: &Entry) -> bool {
    (entry.size.is_some() && entry.sha256.is_some())
        || (entry.kind == EntryType::Link && entry.target.is_some())
}

/// Checks the manifest's totals against the caps and against its own
/// entries, and that its entries are sorted by path, each once: the order
/// the members must follow.
fn check_entries(manifest: &Manifest) -> Result<(), OpenError> {
    let totals = manifest.totals;
    if totals.members > MAX_MEMBERS {
        return Err(OpenError::TooLarge(format!(
            "the manifest lists {} members, more than the {MAX_MEMBERS} a snapshot may hold",
            totals.members
        )));
    }
    if totals.bytes > MAX_CONTENT_BYTES {
        return Err(OpenError::TooLarge(format!(
            "the manifest lists {} bytes of files, more than the {MAX_CONTENT_BYTES} a \
             snapshot may hold",
            totals.bytes
        )));
    }
    if let Some(pair) = manifest
        .entries
        .windows(2)
        .find(|pair| pair[0].path >= pair[1].path)
    {
        return Err(OpenError::Invalid(format!(
            "the manifest lists {} after {}: its entries must be sorted by path, each once",
            clip(&pair[1].path),
            clip(&pair[0].path)
        )));
    }
    let mut members = 1;
    let mut bytes = manifest.report.size;
    for entry in &manifest.entries {
        if let (Some(size), Some(_)) = (entry.size, &entry.sha256) {
            if size > MAX_FILE_BYTES {
                return Err(OpenError::TooLarge(format!(
                    "the manifest lists {} with {size} bytes, more than the {MAX_FILE_BYTES} a \
                     file may hold",
                    clip(&entry.path),
                )));
            }
            bytes = bytes.saturating_add(size);
        }
        members += usize::from(is_member(entry));
    }
    check_tree_size(&manifest.entries)?;
    if members != totals.members || bytes != totals.bytes {
        return Err(OpenError::Invalid(format!(
            "the manifest's totals ({} members, {} bytes) do not match its entries ({members} \
             members, {bytes} bytes)",
            totals.members, totals.bytes
        )));
    }
    Ok(())
}

/// Refuses entries whose tree would be larger than a snapshot's: past
/// [`MAX_ENTRIES`] nodes or [`MAX_TREE_PATH_BYTES`] of paths, counting the
/// directories the tree makes above each path where the manifest does not
/// list them. Counted on the sorted paths without building anything.
fn check_tree_size(entries: &[Entry]) -> Result<(), OpenError> {
    let mut size = TreeSize { nodes: 1, bytes: 0 };
    let mut previous = "";
    for entry in entries {
        let path = entry.path.as_str();
        size.add(previous, path);
        if size.nodes > MAX_ENTRIES || size.bytes > MAX_TREE_PATH_BYTES {
            return Err(OpenError::TooLarge(format!(
                "the manifest's paths and the directories above them come to more than \
                 {MAX_ENTRIES} paths or {MAX_TREE_PATH_BYTES} bytes of paths, more than a \
                 snapshot may hold (at {})",
                clip(path)
            )));
        }
        previous = path;
    }
    Ok(())
}

/// The nodes and path bytes of a tree built from sorted paths.
#[derive(Debug, PartialEq, Eq)]
struct TreeSize {
    nodes: usize,
    bytes: u64,
}

impl TreeSize {
    /// Counts `path`, which sorts after `previous`, and the directories
    /// above it that the paths before it did not make: those past the part
    /// it shares with `previous`. An upper bound: a directory is counted
    /// again only where a name that sorts between it and what it holds
    /// (`a-b` between `a` and `a/b`) came just before.
    fn add(&mut self, previous: &str, path: &str) {
        let shared = path
            .bytes()
            .zip(previous.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        for (end, _) in path.match_indices('/').skip(1) {
            // At `shared` itself the directory is `previous` when that
            // ends there.
            if end > shared || (end == shared && previous.len() != end) {
                self.nodes += 1;
                self.bytes += end as u64;
            }
        }
        self.nodes += 1;
        self.bytes += path.len() as u64;
    }
}

/// Why the member at `path` is not the one the manifest lists next
/// (`expected`, an index into `entries`): it came before (a duplicate), the
/// expected one is missing, or the manifest does not list it.
fn out_of_place(
    entries: &[Entry],
    expected: Option<usize>,
    path: &str,
    name: &str,
    what: &str,
) -> OpenError {
    let listed = entries
        .binary_search_by(|entry| entry.path.as_str().cmp(path))
        .is_ok_and(|index| is_member(&entries[index]));
    match expected {
        Some(expected) if listed && entries[expected].path.as_str() < path => {
            truncated(&format!("root{}", entries[expected].path))
        }
        _ if listed => OpenError::Invalid(format!("member {} appears twice", clip(name))),
        _ => unlisted(&clip(name), what),
    }
}

/// The manifest's format and version, read before the rest of it.
#[derive(Deserialize)]
struct Head {
    format: String,
    format_version: u32,
    #[serde(default)]
    zerohop_version: String,
}

fn parse_manifest(bytes: &[u8]) -> Result<Manifest, OpenError> {
    // Parsed whole once; its head alone only when that fails or when it
    // is not this format, to say why.
    let full = serde_json::from_slice::<Manifest>(bytes);
    if let Ok(manifest) = &full
        && manifest.format == FORMAT_NAME
        && manifest.format_version <= FORMAT_VERSION
    {
        return full.map_err(|err| OpenError::Invalid(err.to_string()));
    }
    let head: Head = serde_json::from_slice(bytes).map_err(|err| {
        OpenError::NotASnapshot(format!("manifest.json is not a snapshot manifest: {err}"))
    })?;
    if head.format != FORMAT_NAME {
        return Err(OpenError::NotASnapshot(format!(
            "manifest.json is for {:?}, not {FORMAT_NAME}",
            clip(&head.format)
        )));
    }
    if head.format_version > FORMAT_VERSION {
        return Err(OpenError::NewerFormat {
            version: head.format_version,
            written_by: clip(&head.zerohop_version),
        });
    }
    full.map_err(|err| {
        if err.is_data() {
            // Parsed, and refused: a value of the wrong type, or past a
            // cap the manifest's parser holds it to.
            OpenError::Invalid(format!("manifest.json: {err}"))
        } else {
            OpenError::Invalid(format!("manifest.json does not parse: {err}"))
        }
    })
}

/// Reads member `name`, whose header says how many bytes it holds: at
/// most `cap`, checked before reading, and exactly as many, checked after.
fn read_member<R: Read>(
    member: &mut tar::Entry<'_, R>,
    name: &str,
    cap: u64,
) -> Result<Vec<u8>, OpenError> {
    let size = member.size();
    if size > cap {
        return Err(OpenError::TooLarge(format!(
            "{} is larger than {cap} bytes",
            clip(name)
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    member
        .take(size)
        .read_to_end(&mut bytes)
        .map_err(|err| stream_error(&err))?;
    if bytes.len() as u64 != size {
        return Err(OpenError::Corrupt(
            "it ends in the middle of a member".to_owned(),
        ));
    }
    Ok(bytes)
}

/// One member as the archive holds it, with its name and link target
/// taken from the GNU long-name and long-link records before it where it
/// has them.
struct Member<'a, R: Read> {
    entry: tar::Entry<'a, R>,
    name: Vec<u8>,
    link: Option<Vec<u8>>,
}

/// The next member of the raw `entries`: long-name and long-link records
/// are read into the member that follows them, each at most
/// [`MAX_LONG_NAME_BYTES`] (checked from its header before it is read) and
/// once; a PAX header is refused, since its `size` would say how much of
/// the stream the member takes instead of the header the manifest is
/// checked against.
fn next_member<'a, R: Read>(
    entries: &mut tar::Entries<'a, R>,
) -> Result<Option<Member<'a, R>>, OpenError> {
    let (mut long_name, mut long_link): (Option<Vec<u8>>, Option<Vec<u8>>) = (None, None);
    loop {
        let Some(entry) = entries.next() else {
            if long_name.is_some() || long_link.is_some() {
                return Err(OpenError::Corrupt(
                    "it ends after a long name, before its member".to_owned(),
                ));
            }
            return Ok(None);
        };
        let mut entry = entry.map_err(|err| stream_error(&err))?;
        let slot = match entry.header().entry_type() {
            tar::EntryType::GNULongName => &mut long_name,
            tar::EntryType::GNULongLink => &mut long_link,
            tar::EntryType::XHeader | tar::EntryType::XGlobalHeader => {
                return Err(OpenError::Invalid(
                    "a member has a PAX header (a snapshot is written with GNU headers only, \
                     whose sizes the manifest is checked against)"
                        .to_owned(),
                ));
            }
            _ => {
                let name = match long_name {
                    Some(name) => name,
                    None => entry.header().path_bytes().into_owned(),
                };
                let link = match long_link {
                    Some(link) => Some(link),
                    None => entry
                        .header()
                        .link_name_bytes()
                        .map(|link| link.into_owned()),
                };
                return Ok(Some(Member { entry, name, link }));
            }
        };
        if slot.is_some() {
            return Err(OpenError::Invalid(
                "two long names in a row for one member".to_owned(),
            ));
        }
        let mut bytes = read_member(&mut entry, "a long-name record", MAX_LONG_NAME_BYTES)?;
        // GNU tar ends the name with a NUL.
        if bytes.last() == Some(&0) {
            bytes.pop();
        }
        *slot = Some(bytes);
    }
}

fn is_regular<R: Read>(member: &Member<'_, R>) -> bool {
    member.entry.header().entry_type() == tar::EntryType::Regular
}

fn expect_size<R: Read>(
    member: &tar::Entry<'_, R>,
    name: &str,
    size: u64,
) -> Result<(), OpenError> {
    let header = member.header().size().map_err(|err| stream_error(&err))?;
    // What the stream gives is what the header says (read raw, nothing
    // overrides it), and what the manifest says.
    if header != size || member.size() != size {
        return Err(OpenError::Invalid(format!(
            "{} holds {header} bytes, the manifest says {size}",
            clip(name)
        )));
    }
    Ok(())
}

fn expect_hash(bytes: &[u8], name: &str, want: &str) -> Result<(), OpenError> {
    if sha256_hex(bytes) != want {
        return Err(OpenError::Invalid(format!(
            "{} does not match its SHA-256 in the manifest (altered or damaged)",
            clip(name)
        )));
    }
    Ok(())
}

fn unlisted(shown: &str, what: &str) -> OpenError {
    OpenError::Invalid(format!("{what} {shown} is not in the manifest"))
}

fn truncated(member: &str) -> OpenError {
    OpenError::Corrupt(format!("member {} is missing", clip(member)))
}

fn corrupt(err: io::Error) -> OpenError {
    OpenError::Corrupt(err.to_string())
}

/// A read error of the stream (one past the cap is told apart by the
/// caller, which knows whether the cap was reached).
fn stream_error(err: &io::Error) -> OpenError {
    if err.kind() == io::ErrorKind::UnexpectedEof {
        OpenError::Corrupt("it ends in the middle of a member".to_owned())
    } else {
        OpenError::Corrupt(err.to_string())
    }
}

fn type_name(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Directory => "directory",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Char => "character device",
        tar::EntryType::Block => "block device",
        tar::EntryType::Fifo => "fifo",
        tar::EntryType::GNUSparse => "sparse file",
        _ => "special member",
    }
}

/// A name or value from the archive, shortened for a message.
fn clip(text: &str) -> String {
    const MAX: usize = 120;
    let printable: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    match printable.char_indices().nth(MAX) {
        Some((index, _)) => format!("{}…", &printable[..index]),
        None => printable,
    }
}

/// A reader that fails once more than `left` bytes came through it, and
/// says so in `exceeded` (the tar reader may wrap the error).
struct Capped<R> {
    inner: R,
    left: u64,
    exceeded: Rc<Cell<bool>>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // One byte more than the cap tells a stream at the cap from
            // one past it.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.exceeded.set(true);
                    Err(io::Error::from(io::ErrorKind::FileTooLarge))
                }
            };
        }
        let room = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..room])?;
        self.left -= read as u64;
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(paths: &[&str]) -> TreeSize {
        let mut size = TreeSize { nodes: 1, bytes: 0 };
        let mut previous = "";
        for path in paths {
            size.add(previous, path);
            previous = path;
        }
        size
    }

    #[test]
    fn a_tree_is_counted_from_its_sorted_paths() {
        // Listed directories are not counted twice.
        assert_eq!(size(&["/a", "/a/b", "/a/b/c"]).nodes, 4);
        // Directories the manifest leaves out are counted once.
        assert_eq!(size(&["/d/e/f", "/d/e/g", "/d/h"]).nodes, 6);
        assert_eq!(size(&["/d/e/f"]).bytes, 2 + 4 + 6);
        // A name sorting between a directory and its contents makes it
        // counted again: never fewer than the tree holds.
        assert_eq!(size(&["/a", "/a-b", "/a/c"]).nodes, 5);
    }
}
