//! Bad input anywhere under the root: every file the fixtures hold replaced
//! by something broken. The doctor must still give every check a status,
//! quote the path when it cannot tell, and never panic.

mod support;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use zerohop_core::Status;

use support::{assert_well_formed, doctor};

/// Copies `from` to `to`, passing each regular file's bytes through `mangle`.
fn copy_mangled(from: &Path, to: &Path, mangle: &dyn Fn(&[u8]) -> Vec<u8>) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().unwrap();
        let existing = fs::symlink_metadata(&dst).ok();
        if existing
            .as_ref()
            .is_some_and(|meta| !(kind.is_dir() && meta.is_dir()))
        {
            // Merged trees: the first fixture to provide a path keeps it.
            continue;
        }
        if kind.is_symlink() {
            symlink(fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_mangled(&src, &dst, mangle);
        } else if src.file_name().is_some_and(|n| n != "profile.json") {
            fs::write(&dst, mangle(&fs::read(&src).unwrap())).unwrap();
        }
    }
}

/// A way of breaking a file's content.
type Mangle = Box<dyn Fn(&[u8]) -> Vec<u8>>;

fn mangles() -> Vec<(&'static str, Mangle)> {
    vec![
        ("empty", Box::new(|_| Vec::new())),
        ("binary", Box::new(|_| vec![0, 0xff, 0xfe, 0x80, 0, 1, 2])),
        // Larger than the 4 MiB read cap.
        ("enormous", Box::new(|_| vec![b'7'; (4 << 20) + 1])),
        ("truncated", Box::new(|b| b[..b.len() / 2].to_vec())),
        (
            "garbage",
            Box::new(|_| b"-1 banana [x] 0-99999999999 ::: \n\n\t".to_vec()),
        ),
    ]
}

#[test]
fn broken_files_everywhere_give_statuses_not_panics() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut cases: Vec<_> = fs::read_dir(&fixtures)
        .unwrap()
        .flat_map(|check| fs::read_dir(check.unwrap().path()).unwrap())
        .map(|case| case.unwrap().path())
        .collect();
    cases.sort();
    for (name, mangle) in mangles() {
        // One merged tree per kind of damage keeps the run short while
        // covering every file every fixture holds.
        let dir = support::scratch();
        for case in &cases {
            copy_mangled(case, dir.path(), mangle.as_ref());
        }
        let report = doctor(dir.path());
        assert_well_formed(&report);
        for finding in report
            .findings
            .iter()
            .filter(|f| f.status == Status::Unknown)
        {
            assert!(
                !finding.evidence.is_empty() || finding.message.contains('/'),
                "{name}: {} unknown without a path: {}",
                finding.id,
                finding.message
            );
        }
    }
}

#[test]
fn symlink_loops_and_dangling_links() {
    let dir = support::scratch();
    let root = dir.path();
    fs::create_dir_all(root.join("sys/bus/pci/devices")).unwrap();
    fs::create_dir_all(root.join("sys/devices/pci0000:00")).unwrap();
    // A device entry that loops onto itself and one that points nowhere.
    symlink(
        "0000:00:01.0",
        root.join("sys/bus/pci/devices/0000:00:01.0"),
    )
    .unwrap();
    symlink(
        "../../../devices/pci0000:00/0000:00:02.0",
        root.join("sys/bus/pci/devices/0000:00:02.0"),
    )
    .unwrap();
    // /proc/cmdline as a loop.
    fs::create_dir_all(root.join("proc")).unwrap();
    symlink("cmdline", root.join("proc/cmdline")).unwrap();
    let report = doctor(root);
    assert_well_formed(&report);
    let krn001 = support::findings(&report, "KRN001");
    assert_eq!(krn001[0].status, Status::Unknown);
    assert!(
        krn001[0].message.contains("symlink loop"),
        "{}",
        krn001[0].message
    );
}
