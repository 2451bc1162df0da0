//! Writes the hostile archives whose cost `BENCHMARKS.md` measures (the
//! shapes of issue #26, each small on disk) into a directory:
//!
//! ```sh
//! cargo run --release -p zerohop-snapshot --example hostile_archives -- /dev/shm/zh-hostile
//! /usr/bin/time -v zerohop doctor --snapshot /dev/shm/zh-hostile/deep.zhsnap
//! /usr/bin/time -v zerohop doctor --snapshot /dev/shm/zh-hostile/wide.zhsnap
//! /usr/bin/time -v zerohop diff /dev/shm/zh-hostile/lines-{a,b}.zhsnap >/dev/null
//! /usr/bin/time -v zerohop diff /dev/shm/zh-hostile/long-{a,b}.zhsnap | wc -c
//! ```
//!
//! - `deep.zhsnap`: 200 absent paths 2,045 names deep;
//! - `wide.zhsnap`: one directory listing 1,500,000 names;
//! - `lines-a.zhsnap`, `lines-b.zhsnap`: one file of 50,000 short lines,
//!   every line different between the two;
//! - `long-a.zhsnap`, `long-b.zhsnap`: fifteen files of one 4 MiB line;
//! - `many-entries.zhsnap`, `many-names.zhsnap`: within the caps, the
//!   most a manifest of 32 MiB makes (300,000 absent paths; fifteen
//!   listings of 65,536 names), which opens.
//!
//! Each is a small host recorded with `Snapshot::capture`, its manifest
//! and members rewritten as the shape needs, packed again as zstd over
//! tar: the archives a reader from before the caps opened.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use zerohop_host::HostRoot;
use zerohop_snapshot::manifest::{Entry, EntryType, Manifest, sha256_hex};
use zerohop_snapshot::{Snapshot, encode};

/// One tar member: name, type, content, link target.
struct Raw {
    name: String,
    kind: tar::EntryType,
    data: Vec<u8>,
    link: String,
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .expect("usage: hostile_archives DIR");
    let out = Path::new(&out);
    fs::create_dir_all(out).unwrap();

    let deep = (0..200)
        .map(|n| {
            let mut path = format!("/d{n:03}");
            while path.len() < 4090 {
                path.push_str("/a");
            }
            bare(path, EntryType::Absent)
        })
        .collect();
    write(out, "deep.zhsnap", deep, Vec::new());

    let wide = Entry {
        names: Some((0..1_500_000).map(|n| format!("n{n}")).collect()),
        ..bare("/wide".to_owned(), EntryType::Dir)
    };
    write(out, "wide.zhsnap", vec![wide], Vec::new());

    // At the caps, and opened: the most a manifest makes.
    let many = (0..300_000)
        .map(|n| bare(format!("/many/{:0>56}", n), EntryType::Absent))
        .collect();
    write(out, "many-entries.zhsnap", many, Vec::new());
    let names = (0..15)
        .map(|listing| Entry {
            names: Some((0..65_536).map(|n| format!("n{n}")).collect()),
            ..bare(format!("/names{listing:02}"), EntryType::Dir)
        })
        .collect();
    write(out, "many-names.zhsnap", names, Vec::new());

    for side in ["a", "b"] {
        let lines: String = (0..50_000).map(|n| format!("{side}{n}\n")).collect();
        let (entries, members) = files(&[("/h/lines".to_owned(), lines.into_bytes())]);
        write(out, &format!("lines-{side}.zhsnap"), entries, members);

        let long: Vec<(String, Vec<u8>)> = (0..15)
            .map(|n| (format!("/h/long{n:02}"), side.repeat(4 << 20).into_bytes()))
            .collect();
        let (entries, members) = files(&long);
        write(out, &format!("long-{side}.zhsnap"), entries, members);
    }
}

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

/// Entries and members for files under `/h`, the directory listed.
fn files(files: &[(String, Vec<u8>)]) -> (Vec<Entry>, Vec<Raw>) {
    let mut entries = vec![Entry {
        names: Some(
            files
                .iter()
                .map(|(path, _)| path.trim_start_matches("/h/").to_owned())
                .collect(),
        ),
        ..bare("/h".to_owned(), EntryType::Dir)
    }];
    let mut members = Vec::new();
    for (path, data) in files {
        entries.push(Entry {
            size: Some(data.len() as u64),
            sha256: Some(sha256_hex(data)),
            ..bare(path.clone(), EntryType::File)
        });
        members.push(Raw {
            name: format!("root{path}"),
            kind: tar::EntryType::Regular,
            data: data.clone(),
            link: String::new(),
        });
    }
    (entries, members)
}

/// A small recorded host with `entries` added to its manifest and
/// `members` to its archive, written to `out/name`.
fn write(out: &Path, name: &str, entries: Vec<Entry>, extra: Vec<Raw>) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("proc")).unwrap();
    fs::write(dir.path().join("proc/cmdline"), "ro iommu=pt\n").unwrap();
    let root = HostRoot::at(dir.path()).unwrap();
    let snapshot = Snapshot::capture(&root, UNIX_EPOCH + Duration::from_secs(1)).unwrap();
    let mut members = unpack(&encode(&snapshot).unwrap());
    let mut manifest: Manifest = serde_json::from_slice(&members[0].data).unwrap();
    for entry in &extra {
        manifest.totals.members += 1;
        manifest.totals.bytes += entry.data.len() as u64;
    }
    manifest.entries.extend(entries);
    manifest.entries.sort_by(|a, b| a.path.cmp(&b.path));
    members[0].data = serde_json::to_vec(&manifest).unwrap();
    members.extend(extra);
    members[2..].sort_by(|a, b| a.name.cmp(&b.name));
    let archive = pack(&members);
    fs::write(out.join(name), &archive).unwrap();
    println!("{name}: {} bytes", archive.len());
}

fn unpack(archive: &[u8]) -> Vec<Raw> {
    let mut tar = tar::Archive::new(zstd::Decoder::new(archive).unwrap());
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

fn pack(members: &[Raw]) -> Vec<u8> {
    let mut builder = tar::Builder::new(zstd::Encoder::new(Vec::new(), 19).unwrap());
    for member in members {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(member.kind);
        header.set_size(member.data.len() as u64);
        header.set_mode(0o644);
        if member.kind == tar::EntryType::Symlink {
            builder
                .append_link(&mut header, &member.name, &member.link)
                .unwrap();
        } else {
            builder
                .append_data(&mut header, &member.name, &member.data[..])
                .unwrap();
        }
    }
    let mut encoder = builder.into_inner().unwrap();
    encoder.flush().unwrap();
    encoder.finish().unwrap()
}
