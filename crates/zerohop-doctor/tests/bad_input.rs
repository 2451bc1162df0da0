//! Bad input anywhere under the root: every file the fixtures hold replaced
//! by something broken. The doctor must still give every check a status,
//! quote the path when it cannot tell, and never panic or hang.

mod support;

use std::fs;
use std::os::unix::fs::symlink;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use zerohop_core::{Report, Status};
use zerohop_doctor::{Group, Profile, Selection};

use support::assert_well_formed;

/// Runs every check on `root`, the pod's included: broken files reach the
/// pod checks as much as the node's.
fn doctor(root: &Path) -> Report {
    let every = Selection::parse(Group::ALL.iter().map(|group| group.name())).unwrap();
    support::doctor_with(root, &Profile::default(), &every)
}

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

/// Every fixture root, sorted.
fn fixture_cases() -> Vec<PathBuf> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut cases: Vec<_> = fs::read_dir(&fixtures)
        .unwrap()
        .flat_map(|check| fs::read_dir(check.unwrap().path()).unwrap())
        .map(|case| case.unwrap().path())
        .collect();
    cases.sort();
    cases
}

#[test]
fn broken_files_everywhere_give_statuses_not_panics() {
    let cases = fixture_cases();
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

/// Puts a special file (or a link) at a path.
type Special<'a> = Box<dyn Fn(&Path) + 'a>;

/// Copies the tree `from` to `to` with every regular file (but a profile)
/// replaced by what `make` puts at its path.
fn copy_special(from: &Path, to: &Path, make: &dyn Fn(&Path)) {
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
            continue;
        }
        if kind.is_symlink() {
            symlink(fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_special(&src, &dst, make);
        } else if src.file_name().is_some_and(|n| n != "profile.json") {
            make(&dst);
        }
    }
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
}

/// Runs the doctor on `root`, failing when it takes over a minute.
fn doctor_within(root: &Path) -> Report {
    let root = root.to_path_buf();
    let (done, answer) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(doctor(&root));
    });
    answer
        .recv_timeout(Duration::from_secs(60))
        .expect("the doctor finished within a minute")
}

#[test]
fn special_files_everywhere_are_unknown_not_waited_on() {
    let cases = fixture_cases();
    let outside = tempfile::tempdir().unwrap();
    let outside_fifo = outside.path().join("fifo");
    mkfifo(&outside_fifo);
    let sockets = support::scratch();
    // A socket path must fit `sun_path` (108 bytes): bind it short, then
    // move it where the file was.
    let socket = |path: &Path| {
        let short = sockets.path().join("s");
        drop(UnixListener::bind(&short).unwrap());
        fs::rename(&short, path).unwrap();
    };
    let device = |path: &Path| {
        // `c 1 5` is /dev/zero: read, it never ends.
        let made = rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::RUSR,
            rustix::fs::makedev(1, 5),
        );
        if made.is_err() {
            // Without CAP_MKNOD: a FIFO, which blocks a reader just as well.
            mkfifo(path);
        }
    };
    let kinds: Vec<(&str, Option<&str>, Special<'_>)> = vec![
        ("fifo", Some("is a fifo"), Box::new(mkfifo)),
        ("socket", Some("is a socket"), Box::new(socket)),
        (
            "directory",
            Some("is a directory"),
            Box::new(|p| fs::create_dir(p).unwrap()),
        ),
        ("device", Some("not a regular file"), Box::new(device)),
        // Links out of the tree are resolved inside it, where nothing is:
        // read as absent, never as this machine's /dev/zero or the FIFO.
        (
            "link to /dev/zero",
            None,
            Box::new(|p| symlink("/dev/zero", p).unwrap()),
        ),
        (
            "link to an outside fifo",
            None,
            Box::new(|p| symlink(&outside_fifo, p).unwrap()),
        ),
    ];
    for (name, refusal, make) in kinds {
        let dir = support::scratch();
        for case in &cases {
            copy_special(case, dir.path(), make.as_ref());
        }
        let report = doctor_within(dir.path());
        assert_well_formed(&report);
        let unknown: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.status == Status::Unknown)
            .collect();
        for finding in &unknown {
            assert!(
                !finding.evidence.is_empty() || finding.message.contains('/'),
                "{name}: {} unknown without a path: {}",
                finding.id,
                finding.message
            );
        }
        let krn001 = &support::findings(&report, "KRN001")[0];
        assert_eq!(krn001.status, Status::Unknown, "{name}: {}", krn001.message);
        match refusal {
            Some(said) => {
                assert!(krn001.message.contains(said), "{name}: {}", krn001.message);
                assert!(
                    unknown.iter().filter(|f| f.message.contains(said)).count() > 10,
                    "{name}: few checks say {said}"
                );
            }
            None => assert!(
                krn001.message.contains("absent"),
                "{name}: {}",
                krn001.message
            ),
        }
    }
}
