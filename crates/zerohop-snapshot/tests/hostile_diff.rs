//! `diff` of snapshots from anyone: bounded in time and output whatever
//! the files hold, and no terminal escape from either side reaches the
//! human output raw.

use std::fs;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use zerohop_core::render::printable::needs_escape;
use zerohop_host::HostRoot;
use zerohop_host::memory::{Content, Listing, Node, Reason};
use zerohop_snapshot::Snapshot;
use zerohop_snapshot::diff::{
    self, Diff, MAX_CHANGES, MAX_COMPARED_LINES, MAX_TEXT_CHARS, MAX_TOTAL_DIFF_LINES, Side,
};

/// A small host, recorded, with `extra` nodes added to what was read.
fn side(label: &str, extra: Vec<(String, Node)>) -> Side {
    side_with(label, "ro iommu=pt\n", None, extra)
}

/// The same host with `cmdline` as its `/proc/cmdline`, and an RDMA
/// device of that name if given.
fn side_with(label: &str, cmdline: &str, rdma: Option<&str>, extra: Vec<(String, Node)>) -> Side {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("proc")).unwrap();
    fs::write(dir.path().join("proc/cmdline"), cmdline).unwrap();
    if let Some(name) = rdma {
        let device = dir.path().join("sys/class/infiniband").join(name);
        fs::create_dir_all(device.join("ports/1")).unwrap();
        fs::write(device.join("fw_ver"), "28.39.1002\n").unwrap();
        fs::write(device.join("ports/1/state"), "4: ACTIVE\n").unwrap();
    }
    let root = HostRoot::at(dir.path()).unwrap();
    let mut snapshot = Snapshot::capture(&root, UNIX_EPOCH + Duration::from_secs(1)).unwrap();
    for (path, node) in extra {
        snapshot.tree.insert(path, node).unwrap();
    }
    Side::new(label, snapshot)
}

fn file(text: &str) -> Node {
    Node::File(Content::Read(Arc::from(text.as_bytes())))
}

fn human(diff: &Diff) -> String {
    let mut out = Vec::new();
    diff::write_human(diff, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// A line diff takes time in the product of the lines that differ: two
/// files of 20,000 different lines took minutes. It has a deadline, past
/// which the rest is shown as changed whole, and says so; a longer file is
/// not compared line by line at all.
#[test]
fn a_long_file_diff_is_cut_and_says_so() {
    let lines =
        |tag: &str, count: usize| -> String { (0..count).map(|n| format!("{tag}{n}\n")).collect() };
    let a = side(
        "a",
        vec![
            ("/h/slow".to_owned(), file(&lines("a", MAX_COMPARED_LINES))),
            (
                "/h/long".to_owned(),
                file(&lines("a", MAX_COMPARED_LINES + 1)),
            ),
        ],
    );
    let b = side(
        "b",
        vec![
            ("/h/slow".to_owned(), file(&lines("b", MAX_COMPARED_LINES))),
            (
                "/h/long".to_owned(),
                file(&lines("b", MAX_COMPARED_LINES + 1)),
            ),
        ],
    );
    let started = Instant::now();
    let diff = diff::compare(&a, &b, false);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(30), "{took:?}");
    let change = |path: &str| diff.files.iter().find(|c| c.path == path).unwrap();
    let long = change("/h/long");
    assert!(long.diff.is_none());
    assert!(
        long.cut
            .as_deref()
            .unwrap()
            .contains("not compared line by line: 20001 lines"),
        "{:?}",
        long.cut
    );
    let slow = change("/h/slow");
    let cut = slow.cut.as_deref().unwrap();
    assert!(cut.contains("more lines left out"), "{cut}");
    assert!(human(&diff).contains("(cut: "));
}

/// Fifteen one-line 4 MiB files made 126 MB of output: lines are cut.
#[test]
fn long_lines_are_cut() {
    let long = |c: char| c.to_string().repeat(4 << 20);
    let mut a = Vec::new();
    let mut b = Vec::new();
    for n in 0..15 {
        a.push((format!("/h/line{n:02}"), file(&long('a'))));
        b.push((format!("/h/line{n:02}"), file(&long('b'))));
    }
    let diff = diff::compare(&side("a", a), &side("b", b), false);
    let text = human(&diff);
    let json = serde_json::to_string(&diff).unwrap();
    assert!(text.len() < 1 << 20, "{} bytes", text.len());
    assert!(json.len() < 1 << 20, "{} bytes", json.len());
    let line = diff.files.iter().find(|c| c.path == "/h/line00").unwrap();
    assert!(
        line.cut
            .as_deref()
            .unwrap()
            .contains(&format!("cut at {MAX_TEXT_CHARS} characters")),
        "{:?}",
        line.cut
    );
}

/// The whole diff holds a bounded number of lines; files past it are
/// listed without theirs, and say so.
#[test]
fn the_diff_lines_of_all_files_are_bounded() {
    let many = |tag: &str| -> String { (0..300).map(|n| format!("{tag}{n}\n")).collect() };
    let mut a = Vec::new();
    let mut b = Vec::new();
    for n in 0..100 {
        a.push((format!("/h/many{n:03}"), file(&many("a"))));
        b.push((format!("/h/many{n:03}"), file(&many("b"))));
    }
    let diff = diff::compare(&side("a", a), &side("b", b), false);
    let shown: usize = diff
        .files
        .iter()
        .filter_map(|c| c.diff.as_deref())
        .map(|d| d.lines().count())
        .sum();
    assert!(shown <= MAX_TOTAL_DIFF_LINES, "{shown}");
    let last = diff.files.iter().find(|c| c.path == "/h/many099").unwrap();
    assert!(last.diff.is_none());
    assert!(
        last.cut.as_deref().unwrap().contains(&format!(
            "the diff already shows {MAX_TOTAL_DIFF_LINES} lines"
        )),
        "{:?}",
        last.cut
    );
}

/// Past [`MAX_CHANGES`] paths, the rest are counted.
#[test]
fn many_paths_are_counted_past_the_cap() {
    let extra: Vec<_> = (0..MAX_CHANGES + 10)
        .map(|n| (format!("/h/f{n:05}"), file("x\n")))
        .collect();
    let diff = diff::compare(&side("a", Vec::new()), &side("b", extra), false);
    assert_eq!(diff.files.len(), MAX_CHANGES);
    assert_eq!(diff.left_out.files, 10);
    assert!(human(&diff).contains("… and 10 more files"));
}

/// Terminal escapes from the kernel's command line, a file's content, a listed name, a link target,
/// an error message and a device name are escaped in the human output.
#[test]
fn control_characters_never_reach_the_terminal() {
    const TITLE: &str = "\u{1b}]0;owned\u{7}";
    const CLEAR: &str = "\u{1b}[2J";
    let hostile = |tag: &str| {
        vec![
            (format!("/h/name{CLEAR}{tag}"), file("x\n")),
            (
                "/h/dir".to_owned(),
                Node::Dir(Listing::Names(vec![format!("{CLEAR}{tag}")])),
            ),
            ("/h/link".to_owned(), Node::Link(format!("{TITLE}{tag}"))),
            (
                "/h/error".to_owned(),
                Node::Unknown(Reason::Io {
                    kind: zerohop_host::IoKind::Other,
                    message: format!("denied{CLEAR}{tag}"),
                }),
            ),
        ]
    };
    let a = side_with(
        &format!("a{TITLE}"),
        &format!("ro iommu=pt x={TITLE}a\n"),
        Some(&format!("mlx5_{CLEAR}a")),
        hostile("a"),
    );
    let b = side_with(
        "b",
        &format!("ro iommu=pt x={TITLE}b\n"),
        Some(&format!("mlx5_{CLEAR}b")),
        hostile("b"),
    );
    let diff = diff::compare(&a, &b, true);
    let text = human(&diff);
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| c != '\n' && needs_escape(c))
        .collect();
    assert!(raw.is_empty(), "{raw:?} in\n{text}");
    assert!(text.contains(r"\x1b]0;owned\x07"), "{text}");
    assert!(text.contains(r"mlx5_\x1b[2J"), "{text}");
}
