//! A recording root notes what its reads find, and the tree it records
//! answers the same reads the same way.

use std::fs;
use std::os::unix::fs::symlink;

use serde_json::json;
use zerohop_host::memory::{Content, Node, Reason};
use zerohop_host::{FileKind, HostRoot, IoKind, ReadError};

/// Every kind of read, on paths through relative, absolute, dangling and
/// looping links, a FIFO, a directory, a missing file and a large file.
fn reads(root: &HostRoot) -> Vec<String> {
    let paths = [
        "/proc/cmdline",
        "/sys/bus/pci/devices/0000:00:01.0/numa_node",
        "/sys/bus/pci/devices/0000:00:01.0/driver",
        "/sys/abs/numa_node",
        "/sys/dangling",
        "/sys/loop/x",
        "/sys/fifo",
        "/sys/devices",
        "/sys/absent",
        "/sys/absent/deeper",
        "/proc/big",
        "/sys/bus/pci/devices/0000:00:01.0/../../../../proc/cmdline",
    ];
    let mut seen = Vec::new();
    for path in paths {
        seen.push(format!("{path} read {:?}", root.read(path)));
        seen.push(format!("{path} small {:?}", root.read_with_cap(path, 4)));
        seen.push(format!("{path} list {:?}", root.list(path)));
        seen.push(format!("{path} link {:?}", root.link_name(path)));
        seen.push(format!("{path} canonical {:?}", root.canonical(path)));
        seen.push(format!("{path} exists {:?}", root.exists(path)));
    }
    seen
}

#[test]
fn a_recorded_tree_answers_as_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let dev = base.join("sys/devices/pci0000:00/0000:00:01.0");
    fs::create_dir_all(&dev).unwrap();
    fs::write(dev.join("numa_node"), "1\n").unwrap();
    fs::create_dir_all(base.join("sys/bus/pci/devices")).unwrap();
    fs::create_dir_all(base.join("sys/bus/pci/drivers/mlx5_core")).unwrap();
    symlink(
        "../../../devices/pci0000:00/0000:00:01.0",
        base.join("sys/bus/pci/devices/0000:00:01.0"),
    )
    .unwrap();
    symlink("../../../../bus/pci/drivers/mlx5_core", dev.join("driver")).unwrap();
    symlink("/sys/devices/pci0000:00/0000:00:01.0", base.join("sys/abs")).unwrap();
    symlink("nowhere", base.join("sys/dangling")).unwrap();
    symlink("loop", base.join("sys/loop")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        base.join("sys/fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR,
        0,
    )
    .unwrap();
    fs::create_dir_all(base.join("proc")).unwrap();
    fs::write(base.join("proc/cmdline"), "ro iommu=pt\n").unwrap();
    fs::write(base.join("proc/big"), "0123456789\n").unwrap();

    let root = HostRoot::at(base).unwrap();
    let (recording_root, recording) = root.recorded().unwrap();
    let live = reads(&recording_root);
    let tree = recording.take();
    let replayed = reads(&HostRoot::in_memory(tree.clone(), "snapshot"));
    for (live, replayed) in live.iter().zip(&replayed) {
        assert_eq!(live, replayed);
    }
    // The link is kept, and so is what it points to.
    assert!(matches!(
        tree.node("/sys/bus/pci/devices/0000:00:01.0"),
        Some(Node::Link(_))
    ));
    assert!(matches!(
        tree.node("/sys/devices/pci0000:00/0000:00:01.0/numa_node"),
        Some(Node::File(Content::Read(_)))
    ));
    // An absolute link is kept relative, pointing at the same place.
    assert_eq!(
        tree.node("/sys/abs"),
        Some(&Node::Link(
            "../sys/devices/pci0000:00/0000:00:01.0".to_owned()
        ))
    );
    assert_eq!(tree.node("/sys/fifo"), Some(&Node::Special(FileKind::Fifo)));
    assert_eq!(tree.node("/sys/absent"), Some(&Node::Absent));
    // A root in memory records nothing more.
    assert!(HostRoot::in_memory(tree, "snapshot").recorded().is_none());
}

#[test]
fn process_arguments_and_environment_are_withheld() {
    let dir = tempfile::tempdir().unwrap();
    let proc = dir.path().join("proc/4242");
    fs::create_dir_all(&proc).unwrap();
    fs::write(proc.join("environ"), "SECRET=1\0").unwrap();
    fs::write(proc.join("cmdline"), "app\0--password\0x\0").unwrap();
    fs::write(
        proc.join("limits"),
        "Max locked memory unlimited unlimited bytes\n",
    )
    .unwrap();
    symlink("4242", dir.path().join("proc/self")).unwrap();
    fs::write(dir.path().join("proc/cmdline"), "ro\n").unwrap();

    let root = HostRoot::at(dir.path()).unwrap();
    let (recording_root, recording) = root.recorded().unwrap();
    // The pass itself reads what it reads...
    assert!(
        recording_root
            .read_with_cap("/proc/self/environ", 64)
            .is_err()
    );
    assert!(recording_root.read("/proc/self/cmdline").is_err());
    recording_root.read("/proc/self/limits").unwrap();
    recording_root.read("/proc/cmdline").unwrap();
    // ...and the recording keeps none of the process's own.
    let tree = recording.take();
    for path in ["/proc/4242/environ", "/proc/4242/cmdline"] {
        assert_eq!(
            tree.node(path),
            Some(&Node::File(Content::Failed(Reason::Withheld))),
            "{path}"
        );
    }
    let replay = HostRoot::in_memory(tree, "snapshot");
    let err = replay.read_with_cap("/proc/self/environ", 64).unwrap_err();
    assert!(matches!(&err, ReadError::Withheld { .. }), "{err}");
    assert!(
        err.to_string().ends_with("withheld from snapshots"),
        "{err}"
    );
    assert_eq!(
        replay.read("/proc/cmdline").unwrap().as_deref(),
        Some("ro\n")
    );
    assert!(replay.read("/proc/self/limits").unwrap().is_some());
}

#[test]
fn an_io_reason_keeps_its_kind_and_one_written_without_reads_as_other() {
    let denied = Reason::Io {
        kind: IoKind::PermissionDenied,
        message: "permission denied".to_owned(),
    };
    let written = serde_json::to_value(&denied).unwrap();
    assert_eq!(
        written,
        json!({"reason": "io", "kind": "permission-denied", "message": "permission denied"})
    );
    assert_eq!(serde_json::from_value::<Reason>(written).unwrap(), denied);
    // Replayed, the read fails with the kind it failed with.
    assert!(matches!(
        denied.error("/sys/x", 64),
        ReadError::Io {
            kind: IoKind::PermissionDenied,
            ..
        }
    ));
    // An archive written before the kind was kept has none: any other
    // error, and written the same way again.
    let older = json!({"reason": "io", "message": "uncategorized error"});
    let read: Reason = serde_json::from_value(older.clone()).unwrap();
    assert_eq!(
        read,
        Reason::Io {
            kind: IoKind::Other,
            message: "uncategorized error".to_owned(),
        }
    );
    assert_eq!(serde_json::to_value(&read).unwrap(), older);
}
