//! Archives from anyone: each hostile shape is refused with its reason,
//! and before more than a cap's worth of it is read.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::time::{Duration, Instant, UNIX_EPOCH};

use zerohop_host::HostRoot;
use zerohop_host::memory::LiveLog;
use zerohop_snapshot::limits::{
    MAX_DIR_ENTRIES, MAX_ENTRIES, MAX_LONG_NAME_BYTES, MAX_MEMBERS, MAX_NAMES, MAX_TAR_BYTES,
    MAX_TREE_PATH_BYTES,
};
use zerohop_snapshot::manifest::{Entry, EntryType, Manifest};
use zerohop_snapshot::{OpenError, Snapshot, encode, open};

/// One tar member as this test writes it, names and all, unchecked.
#[derive(Clone)]
struct Raw {
    name: String,
    kind: tar::EntryType,
    data: Vec<u8>,
    link: String,
}

/// A small host: a file, a link to a directory, a listing.
fn good() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("sys/devices/pci0000:00/0000:00:01.0");
    fs::create_dir_all(&dev).unwrap();
    fs::write(dev.join("numa_node"), "0\n").unwrap();
    fs::write(dev.join("current_link_width"), "16\n").unwrap();
    fs::create_dir_all(dir.path().join("sys/bus/pci/devices")).unwrap();
    symlink(
        "../../../devices/pci0000:00/0000:00:01.0",
        dir.path().join("sys/bus/pci/devices/0000:00:01.0"),
    )
    .unwrap();
    fs::create_dir_all(dir.path().join("proc")).unwrap();
    fs::write(dir.path().join("proc/cmdline"), "ro iommu=pt\n").unwrap();
    let root = HostRoot::at(dir.path()).unwrap();
    let snapshot = Snapshot::capture(&root, UNIX_EPOCH + Duration::from_secs(1)).unwrap();
    encode(&snapshot).unwrap()
}

fn unpack(archive: &[u8]) -> Vec<Raw> {
    let decoder = zstd::Decoder::new(archive).unwrap();
    let mut tar = tar::Archive::new(decoder);
    tar.entries()
        .unwrap()
        .map(|entry| {
            let mut entry = entry.unwrap();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            Raw {
                name: String::from_utf8(entry.path_bytes().into_owned()).unwrap(),
                kind: entry.header().entry_type(),
                link: entry
                    .link_name_bytes()
                    .map(|l| String::from_utf8(l.into_owned()).unwrap())
                    .unwrap_or_default(),
                data,
            }
        })
        .collect()
}

/// Writes `members` with raw GNU headers: names are copied as given (the
/// tar crate's own checks would refuse `..`), each at most 100 bytes.
fn pack(members: &[Raw]) -> Vec<u8> {
    let mut out = zstd::Encoder::new(Vec::new(), 1).unwrap();
    for member in members {
        write_member(&mut out, member, member.data.len() as u64);
    }
    out.write_all(&[0; 1024]).unwrap();
    out.finish().unwrap()
}

fn write_member(out: &mut impl Write, member: &Raw, size: u64) {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(member.kind);
    header.set_size(size);
    header.set_mode(0o644);
    let gnu = header.as_gnu_mut().unwrap();
    gnu.name[..member.name.len()].copy_from_slice(member.name.as_bytes());
    gnu.linkname[..member.link.len()].copy_from_slice(member.link.as_bytes());
    header.set_cksum();
    out.write_all(header.as_bytes()).unwrap();
    out.write_all(&member.data).unwrap();
    let padding = (512 - member.data.len() % 512) % 512;
    out.write_all(&vec![0; padding]).unwrap();
}

fn manifest_of(members: &[Raw]) -> Manifest {
    serde_json::from_slice(&members[0].data).unwrap()
}

fn with_manifest(members: &mut [Raw], manifest: &Manifest) {
    members[0].data = serde_json::to_vec(manifest).unwrap();
}

fn refused(archive: &[u8]) -> String {
    match open(archive) {
        Ok(_) => panic!("a hostile archive was opened"),
        Err(err) => err.to_string(),
    }
}

fn index_of(members: &[Raw], name: &str) -> usize {
    members.iter().position(|m| m.name == name).unwrap()
}

const CMDLINE: &str = "root/proc/cmdline";

#[test]
fn the_good_archive_opens() {
    let members = unpack(&good());
    // Unpacked and packed again member for member, it still opens.
    assert!(open(&pack(&members)).is_ok());
    assert_eq!(members[0].name, "manifest.json");
    assert_eq!(members[1].name, "report.json");
}

#[test]
fn a_decompression_bomb_is_refused_at_the_cap() {
    // A valid archive followed, in its one zstd frame, by zeros past the
    // cap: 1 MiB at a time, a few bytes each compressed.
    let members = unpack(&good());
    let mut out = zstd::Encoder::new(Vec::new(), 1).unwrap();
    for member in &members {
        write_member(&mut out, member, member.data.len() as u64);
    }
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..(MAX_TAR_BYTES >> 20) + 64 {
        out.write_all(&zeros).unwrap();
    }
    let archive = out.finish().unwrap();
    assert!(archive.len() < 1 << 20, "{} bytes", archive.len());
    let started = Instant::now();
    let why = refused(&archive);
    assert!(why.contains("decompresses to more than"), "{why}");
    eprintln!("bomb refused in {:?}", started.elapsed());

    // A member whose header claims 1 GiB is refused from its header.
    let mut members = unpack(&good());
    let index = index_of(&members, CMDLINE);
    let mut out = zstd::Encoder::new(Vec::new(), 1).unwrap();
    for member in &members[..index] {
        write_member(&mut out, member, member.data.len() as u64);
    }
    members[index].data.clear();
    write_member(&mut out, &members[index], 1 << 30);
    let why = refused(&out.finish().unwrap());
    assert!(
        why.contains("holds 1073741824 bytes, the manifest says 12"),
        "{why}"
    );
}

#[test]
fn too_many_members_are_refused_before_they_are_read() {
    let mut members = unpack(&good());
    let mut manifest = manifest_of(&members);
    let base = manifest.totals.members;
    let template = manifest
        .entries
        .iter()
        .find(|e| e.path == "/proc/cmdline")
        .unwrap()
        .clone();
    let tiny = Raw {
        data: b"ro iommu=pt\n".to_vec(),
        ..members[index_of(&members, CMDLINE)].clone()
    };
    let mut extra = Vec::new();
    for n in 0..100_000 {
        let path = format!("/proc/m/{n}");
        manifest.entries.push(zerohop_snapshot::manifest::Entry {
            path: path.clone(),
            ..template.clone()
        });
        extra.push(Raw {
            name: format!("root{path}"),
            ..tiny.clone()
        });
    }
    manifest.totals.members += 100_000;
    manifest.totals.bytes += 100_000 * 12;
    with_manifest(&mut members, &manifest);
    members.extend(extra);
    let why = refused(&pack(&members));
    assert!(
        why.contains(&format!(
            "lists {} members, more than the {MAX_MEMBERS}",
            base + 100_000
        )),
        "{why}"
    );

    // A manifest that lists few members does not let more in.
    let mut manifest = manifest.clone();
    manifest.entries.truncate(manifest.entries.len() - 100_000);
    manifest.totals.members -= 100_000;
    manifest.totals.bytes -= 100_000 * 12;
    with_manifest(&mut members, &manifest);
    let why = refused(&pack(&members));
    assert!(
        why.contains(&format!("more members than the {base} the manifest lists")),
        "{why}"
    );
}

#[test]
fn names_outside_the_root_are_refused() {
    let good = unpack(&good());
    for (name, reason) in [
        ("root/../../etc/passwd", "not a plain absolute path"),
        ("root/proc/../../etc/passwd", "not a plain absolute path"),
        ("/etc/passwd", "is outside root/"),
        ("root//etc/passwd", "not a plain absolute path"),
        ("etc/passwd", "is outside root/"),
    ] {
        let mut members = good.clone();
        let index = index_of(&members, CMDLINE);
        members[index].name = name.to_owned();
        let why = refused(&pack(&members));
        assert!(why.contains(reason), "{name}: {why}");
    }
}

#[test]
fn links_out_of_the_snapshot_are_refused() {
    let good = unpack(&good());
    let link = good
        .iter()
        .position(|m| m.kind == tar::EntryType::Symlink)
        .unwrap();
    for target in ["/", "/etc", "../../../../../etc/passwd", "../../../../.."] {
        let mut members = good.clone();
        members[link].link = target.to_owned();
        // The manifest agrees with the member: the link itself is refused.
        let mut manifest = manifest_of(&members);
        let path = members[link].name.trim_start_matches("root").to_owned();
        for entry in &mut manifest.entries {
            if entry.path == path {
                entry.target = Some(target.to_owned());
            }
        }
        with_manifest(&mut members, &manifest);
        let why = refused(&pack(&members));
        assert!(why.contains("points outside the tree"), "{target}: {why}");
    }
}

#[test]
fn a_manifest_that_does_not_match_the_members_is_refused() {
    let good = unpack(&good());
    let index = index_of(&good, CMDLINE);

    // The manifest lies about a size.
    let mut members = good.clone();
    members[index].data = b"ro iommu=pt quiet\n".to_vec();
    let why = refused(&pack(&members));
    assert!(
        why.contains("holds 18 bytes, the manifest says 12"),
        "{why}"
    );

    // The same size, other bytes: the hash tells.
    let mut members = good.clone();
    members[index].data = b"ro iommu=on\n".to_vec();
    let why = refused(&pack(&members));
    assert!(why.contains("does not match its SHA-256"), "{why}");

    // A member the manifest does not list.
    let mut members = good.clone();
    let mut stray = members[index].clone();
    stray.name = "root/proc/stray".to_owned();
    members.push(stray);
    let why = refused(&pack(&members));
    assert!(why.contains("more members than"), "{why}");
    let mut manifest = manifest_of(&members);
    manifest.totals.members += 1;
    with_manifest(&mut members, &manifest);
    let why = refused(&pack(&members));
    assert!(why.contains("do not match its entries"), "{why}");

    // The same member twice.
    let mut members = good.clone();
    members.insert(index + 1, members[index].clone());
    let mut manifest = manifest_of(&members);
    manifest.totals.members += 1;
    with_manifest(&mut members, &manifest);
    let why = refused(&pack(&members));
    assert!(why.contains("do not match its entries"), "{why}");
    let mut members = good.clone();
    let last = members.len() - 1;
    members[last] = members[index].clone();
    let why = refused(&pack(&members));
    assert!(why.contains("appears twice"), "{why}");

    // A member missing.
    let mut members = good.clone();
    members.remove(index);
    let why = refused(&pack(&members));
    assert!(why.contains("member root/proc/cmdline is missing"), "{why}");

    // A device where a file was.
    let mut members = good;
    members[index].kind = tar::EntryType::Char;
    members[index].data.clear();
    let why = refused(&pack(&members));
    assert!(why.contains("is a character device"), "{why}");
}

/// Members follow the manifest's order, which is sorted by path: the
/// reader matches each against the next entry instead of looking it up.
#[test]
fn members_and_entries_out_of_order_are_refused() {
    let good = unpack(&good());
    let index = index_of(&good, CMDLINE);

    // Two members swapped: the one expected first is missing where it
    // should be.
    let mut members = good.clone();
    members.swap(index, index + 1);
    let why = refused(&pack(&members));
    assert!(why.contains("is missing"), "{why}");

    // The manifest's entries out of order, or one listed twice.
    let mut members = good.clone();
    let mut manifest = manifest_of(&members);
    manifest.entries.reverse();
    with_manifest(&mut members, &manifest);
    let why = refused(&pack(&members));
    assert!(why.contains("must be sorted by path, each once"), "{why}");
    let mut members = good;
    let mut manifest = manifest_of(&members);
    let twice = manifest.entries[1].clone();
    manifest.entries.insert(1, twice);
    with_manifest(&mut members, &manifest);
    let why = refused(&pack(&members));
    assert!(why.contains("must be sorted by path, each once"), "{why}");
}

/// `skipped` says how much of a file read from its end is not held: on
/// an entry without content it means nothing, and is refused.
#[test]
fn skipped_bytes_on_an_entry_without_content_are_refused() {
    let mut members = unpack(&good());
    let mut manifest = manifest_of(&members);
    let dir = manifest
        .entries
        .iter_mut()
        .find(|entry| entry.path == "/proc")
        .expect("the listing of /proc");
    dir.skipped = Some(u64::MAX);
    with_manifest(&mut members, &manifest);
    let why = refused(&pack(&members));
    assert!(why.contains("skipped bytes but no content"), "{why}");
}

#[test]
fn a_kernel_log_the_archive_does_not_hold_is_refused() {
    let good = unpack(&good());
    let live = |device: &str, cut: Option<&str>| LiveLog {
        device: device.to_owned(),
        overrun: false,
        cut: cut.map(str::to_owned),
    };
    for (log, reason) in [
        // The good host was recorded from a directory: no window.
        (
            live("/dev/kmsg", None),
            "no file read at /var/log/zerohop/kmsg",
        ),
        (live("dev/kmsg", None), "kernel_log device"),
        // Terminal escapes in a note that findings quote.
        (
            live("/dev/kmsg", Some("\u{1b}]0;owned\u{7}")),
            "not a short line of text",
        ),
    ] {
        let mut members = good.clone();
        let mut manifest = manifest_of(&members);
        manifest.kernel_log = Some(log);
        with_manifest(&mut members, &manifest);
        let why = refused(&pack(&members));
        assert!(why.contains(reason), "{why}");
    }
}

#[test]
fn a_truncated_or_damaged_archive_is_refused() {
    let archive = good();
    for cut in [archive.len() / 2, archive.len() - 1, 10] {
        let why = refused(&archive[..cut]);
        assert!(why.contains("truncated or corrupt"), "cut at {cut}: {why}");
    }
    let mut flipped = archive.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    let why = refused(&flipped);
    assert!(
        why.contains("truncated or corrupt") || why.contains("refused"),
        "{why}"
    );
    let why = refused(b"not an archive at all");
    assert!(why.contains("not zstd-compressed"), "{why}");
}

#[test]
fn a_newer_format_is_refused_with_the_version_it_needs() {
    let mut members = unpack(&good());
    let mut manifest = manifest_of(&members);
    manifest.format_version = 2;
    manifest.zerohop_version = "0.9.0".to_owned();
    with_manifest(&mut members, &manifest);
    match open(&pack(&members)) {
        Err(err @ OpenError::NewerFormat { .. }) => {
            let why = err.to_string();
            assert!(
                why.contains("snapshot format 2") && why.contains("zerohop 0.9.0 or later"),
                "{why}"
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// An entry of `kind` at `path` with nothing else.
fn bare(path: String, kind: EntryType) -> Entry {
    Entry {
        path,
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

/// The good archive with `extra` entries (no members) in its manifest.
fn with_entries(extra: Vec<Entry>) -> Vec<u8> {
    let mut members = unpack(&good());
    let mut manifest = manifest_of(&members);
    manifest.entries.extend(extra);
    manifest.entries.sort_by(|a, b| a.path.cmp(&b.path));
    with_manifest(&mut members, &manifest);
    pack(&members)
}

/// A few deep absent paths in a small manifest would make the directories
/// above them, each a key of its own: 200 paths 2,000 names deep made
/// 400,000 directories and 1.6 GB of keys. The tree's size is counted from
/// the manifest before anything is built, and refused past its caps.
#[test]
fn deep_paths_cannot_make_a_large_tree() {
    let deep = |n: usize| {
        let mut path = format!("/d{n:03}");
        while path.len() < 4090 {
            path.push_str("/a");
        }
        bare(path, EntryType::Absent)
    };
    let archive = with_entries((0..200).map(deep).collect());
    assert!(archive.len() < 64 << 10, "{} bytes", archive.len());
    let why = refused(&archive);
    assert!(
        why.contains(&format!(
            "come to more than {MAX_ENTRIES} paths or {MAX_TREE_PATH_BYTES} bytes of paths"
        )),
        "{why}"
    );
    // A few are a tree like any other.
    let archive = with_entries((0..3).map(deep).collect());
    let snapshot = open(&archive).unwrap();
    assert!(snapshot.tree.len() < 7_000, "{}", snapshot.tree.len());
}

/// A manifest may list no more entries than a snapshot holds, however
/// small each one is.
#[test]
fn too_many_entries_are_refused_as_the_manifest_is_parsed() {
    let extra = (0..=MAX_ENTRIES)
        .map(|n| bare(format!("/x{n:07}"), EntryType::Absent))
        .collect();
    let why = refused(&with_entries(extra));
    assert!(
        why.contains(&format!("more than {MAX_ENTRIES} entries")),
        "{why}"
    );
}

/// The cap of a listing on a host tree holds for an archive's listings,
/// one by one and all together.
#[test]
fn listings_are_capped_as_on_a_tree() {
    let listing = |path: &str, count: usize| Entry {
        names: Some((0..count).map(|n| format!("n{n}")).collect()),
        ..bare(path.to_owned(), EntryType::Dir)
    };
    let why = refused(&with_entries(vec![listing("/wide", MAX_DIR_ENTRIES + 1)]));
    assert!(
        why.contains(&format!("a listing of more than {MAX_DIR_ENTRIES} names")),
        "{why}"
    );
    // At the cap, one listing opens.
    open(&with_entries(vec![listing("/wide", MAX_DIR_ENTRIES)])).unwrap();
    // Many listings at the cap come to more names than a snapshot holds.
    let many = (0..=MAX_NAMES / MAX_DIR_ENTRIES)
        .map(|n| listing(&format!("/wide{n:02}"), MAX_DIR_ENTRIES))
        .collect();
    let why = refused(&with_entries(many));
    assert!(
        why.contains(&format!("more than {MAX_NAMES} names in its listings")),
        "{why}"
    );
    // Names no directory holds.
    for name in ["", "..", "a/b", "a\0b"] {
        let mut entry = listing("/odd", 1);
        entry.names = Some(vec![name.to_owned()]);
        let why = refused(&with_entries(vec![entry]));
        assert!(why.contains("a name no directory holds"), "{name:?}: {why}");
    }
}

/// A PAX header's `size` would take the place of the header's, which the
/// manifest is checked against: content past the manifest's size and the
/// content cap. Any PAX header is refused, and a link carries no content.
#[test]
fn sizes_that_disagree_with_the_headers_are_refused() {
    let good = unpack(&good());
    let index = index_of(&good, CMDLINE);
    // A PAX `size` of 4 MiB before a member whose header and manifest say
    // 12, and whose hash is that of the 4 MiB.
    let mut members = good.clone();
    let big = vec![b'x'; 4 << 20];
    let mut manifest = manifest_of(&members);
    for entry in &mut manifest.entries {
        if entry.path == "/proc/cmdline" {
            entry.sha256 = Some(zerohop_snapshot::manifest::sha256_hex(&big));
        }
    }
    with_manifest(&mut members, &manifest);
    // A PAX record counts its own length: `16 size=4194304\n`.
    let body = format!(" size={}\n", big.len());
    let record = format!("{}{body}", body.len() + 2);
    let pax = Raw {
        name: "PaxHeaders/cmdline".to_owned(),
        kind: tar::EntryType::XHeader,
        data: record.into_bytes(),
        link: String::new(),
    };
    let mut out = zstd::Encoder::new(Vec::new(), 1).unwrap();
    for member in &members[..index] {
        write_member(&mut out, member, member.data.len() as u64);
    }
    write_member(&mut out, &pax, pax.data.len() as u64);
    let mut cmdline = members[index].clone();
    cmdline.data = big;
    write_member(&mut out, &cmdline, 12);
    let padding = (512 - cmdline.data.len() % 512) % 512;
    out.write_all(&vec![0; padding + 1024]).unwrap();
    let why = refused(&out.finish().unwrap());
    assert!(why.contains("has a PAX header"), "{why}");

    // A link whose header gives it content.
    let link = good
        .iter()
        .position(|m| m.kind == tar::EntryType::Symlink)
        .unwrap();
    let mut members = good.clone();
    members[link].data = b"hidden".to_vec();
    let why = refused(&pack(&members));
    assert!(why.contains("holds 6 bytes, the manifest says 0"), "{why}");
}

/// After the archive's end come only the zeros that pad it: not a member
/// after the end marker, not a second zstd frame.
#[test]
fn data_after_the_end_is_refused() {
    let members = unpack(&good());
    // Zeros are padding.
    let mut out = zstd::Encoder::new(Vec::new(), 1).unwrap();
    for member in &members {
        write_member(&mut out, member, member.data.len() as u64);
    }
    out.write_all(&[0; 1024 + 8192]).unwrap();
    assert!(open(&out.finish().unwrap()).is_ok());
    // A member after the end marker.
    let mut out = zstd::Encoder::new(Vec::new(), 1).unwrap();
    for member in &members {
        write_member(&mut out, member, member.data.len() as u64);
    }
    out.write_all(&[0; 1024]).unwrap();
    write_member(&mut out, &members[index_of(&members, CMDLINE)], 12);
    let why = refused(&out.finish().unwrap());
    assert!(why.contains("data follows the end of the archive"), "{why}");
    // A second frame, or a skippable one.
    let mut archive = good();
    archive.extend(zstd::encode_all(&b"more"[..], 1).unwrap());
    let why = refused(&archive);
    assert!(why.contains("bytes follow the archive's end"), "{why}");
    let mut archive = good();
    archive.extend([0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, b'm', b'o', b'r', b'e']);
    let why = refused(&archive);
    assert!(why.contains("12 bytes follow the archive's end"), "{why}");
}

/// A GNU long-name record holds a path: one longer than the longest path
/// is refused from its header, before it is read.
#[test]
fn long_name_records_are_capped() {
    let members = unpack(&good());
    let index = index_of(&members, CMDLINE);
    let long = Raw {
        name: "././@LongLink".to_owned(),
        kind: tar::EntryType::GNULongName,
        data: vec![b'a'; 100 << 10],
        link: String::new(),
    };
    let mut hostile = members.clone();
    hostile.insert(index, long.clone());
    let why = refused(&pack(&hostile));
    assert!(
        why.contains(&format!(
            "a long-name record is larger than {MAX_LONG_NAME_BYTES} bytes"
        )),
        "{why}"
    );
    // Two records for one member.
    let mut name = b"root/proc/cmdline".to_vec();
    name.push(0);
    let record = Raw { data: name, ..long };
    let mut twice = members.clone();
    twice.insert(index, record.clone());
    twice.insert(index, record.clone());
    let why = refused(&pack(&twice));
    assert!(why.contains("two long names in a row"), "{why}");
    // One, as the writer makes for a path over 100 bytes, opens.
    let mut once = members;
    once.insert(index, record);
    assert!(open(&pack(&once)).is_ok());
}
