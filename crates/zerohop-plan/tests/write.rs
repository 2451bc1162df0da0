//! Writing a set: all or nothing, never over a foreign directory.

use zerohop_plan::{Platform, WriteError, load, render, write_set};

#[test]
fn writes_replaces_and_refuses() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/infiniband.yaml"
    ))
    .expect("example");
    let set = render(&load("infiniband.yaml", &text, Some(Platform::Openshift)).expect("valid"));
    let root = tempfile::tempdir().expect("temp");
    let out = root.path().join("plan");
    let written = write_set(&set, &out).expect("first write");
    assert_eq!(written.len(), set.files.len());
    assert!(out.join("README.md").is_file());
    // A second run replaces the previous output and leaves no staging dirs.
    write_set(&set, &out).expect("rewrite");
    let entries: Vec<_> = std::fs::read_dir(root.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("plan")]);
    // A directory that is not ours is refused and left alone.
    let foreign = root.path().join("mine");
    std::fs::create_dir(&foreign).expect("mkdir");
    std::fs::write(foreign.join("keep.txt"), "x").expect("write");
    assert!(matches!(
        write_set(&set, &foreign),
        Err(WriteError::NotOurs { .. })
    ));
    assert!(foreign.join("keep.txt").is_file());
}
