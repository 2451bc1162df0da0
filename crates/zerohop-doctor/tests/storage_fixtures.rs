//! The storage checks on inputs a fixture tree cannot hold: live probe
//! results, a 100 MB `cufile.json`, and hostile mount tables.

mod support;

use std::fs;
use std::path::Path;

use zerohop_core::Status;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::probe::{DirectIo, OsFailure, ProbeState, Probes};
use zerohop_host::{Facts, HostRoot};

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let real = dir.path().join(path);
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        fs::write(real, text).unwrap();
    }
    dir
}

fn run_on(facts: &Facts, profile: &Profile, id: &str) -> Vec<(Status, String)> {
    let report = zerohop_doctor::run(facts, profile, &Selection::parse([id]).unwrap());
    report
        .findings
        .iter()
        .filter(|f| f.id == id)
        .map(|f| (f.status, f.message.clone()))
        .collect()
}

fn probed(direct: DirectIo, io_uring: Result<(), OsFailure>, seccomp: Option<u8>) -> ProbeState {
    ProbeState::Done(Probes {
        target: "/data/shard-0".to_owned(),
        canonical: Some("/data/shard-0".to_owned()),
        direct,
        io_uring,
        seccomp,
    })
}

fn failure(name: &str, errno: i32) -> OsFailure {
    OsFailure {
        errno: Some(errno),
        name: name.to_owned(),
    }
}

const MOUNTINFO: &str =
    "21 0 8:1 / / rw - ext4 /dev/vda1 rw\n60 21 0:61 / /data rw - tmpfs tmpfs rw\n";
const EINVAL: i32 = 22;
const EPERM: i32 = 1;
const ENOSYS: i32 = 38;

#[test]
fn odirect_einval_fails_and_names_the_file_system() {
    let dir = tree(&[("proc/self/mountinfo", MOUNTINFO)]);
    let mut facts = Facts::collect(&HostRoot::at(dir.path()).unwrap());
    facts.probes = probed(
        DirectIo::OpenFailed {
            file: "/data/shard-0".into(),
            error: failure("EINVAL", EINVAL),
        },
        Ok(()),
        Some(0),
    );
    let got = run_on(&facts, &Profile::default(), "GDS006");
    // The probe's EINVAL is the failure, and the message says which file system refused.
    assert_eq!(got[0].0, Status::Fail);
    assert!(got[0].1.contains("tmpfs at /data"), "{}", got[0].1);

    facts.probes = probed(
        DirectIo::Read {
            file: "/data/shard-0".into(),
            bytes: 4096,
        },
        Ok(()),
        Some(0),
    );
    assert_eq!(
        run_on(&facts, &Profile::default(), "GDS006")[0].0,
        Status::Pass
    );

    facts.probes = ProbeState::NotLive;
    assert_eq!(
        run_on(&facts, &Profile::default(), "GDS006")[0].0,
        Status::NotApplicable
    );
}

/// One io_uring probe case: the sysctl, the probe's answer, the seccomp
/// mode, and the verdict with a word the message must hold.
struct UringCase {
    name: &'static str,
    sysctl: Option<&'static str>,
    refusal: Option<OsFailure>,
    seccomp: Option<u8>,
    status: Status,
    words: &'static str,
}

#[test]
fn io_uring_refusals_name_their_cause() {
    let case = |name, sysctl, refusal, seccomp, status, words| UringCase {
        name,
        sysctl,
        refusal,
        seccomp,
        status,
        words,
    };
    let cases = [
        case("ok", Some("0"), None, Some(0), Status::Pass, "succeeded"),
        case(
            "sysctl",
            Some("2"),
            Some(failure("EPERM", EPERM)),
            Some(0),
            Status::Fail,
            "io_uring_disabled=2",
        ),
        case(
            "group",
            Some("1"),
            Some(failure("EPERM", EPERM)),
            Some(0),
            Status::Fail,
            "io_uring_group",
        ),
        case(
            "seccomp",
            Some("0"),
            Some(failure("EPERM", EPERM)),
            Some(2),
            Status::Fail,
            "seccomp",
        ),
        case(
            "seccomp-enosys",
            None,
            Some(failure("ENOSYS", ENOSYS)),
            Some(2),
            Status::Fail,
            "seccomp",
        ),
        case(
            "kernel",
            None,
            Some(failure("ENOSYS", ENOSYS)),
            Some(0),
            Status::Fail,
            "CONFIG_IO_URING",
        ),
    ];
    for case in cases {
        let mut files = vec![("proc/self/mountinfo", MOUNTINFO)];
        if let Some(value) = case.sysctl {
            files.push(("proc/sys/kernel/io_uring_disabled", value));
        }
        let dir = tree(&files);
        let mut facts = Facts::collect(&HostRoot::at(dir.path()).unwrap());
        let result = case.refusal.map_or(Ok(()), Err);
        facts.probes = probed(
            DirectIo::Read {
                file: "/data/x".into(),
                bytes: 1,
            },
            result,
            case.seccomp,
        );
        let got = run_on(&facts, &Profile::default(), "URING002");
        assert_eq!(got[0].0, case.status, "{}: {}", case.name, got[0].1);
        assert!(got[0].1.contains(case.words), "{}: {}", case.name, got[0].1);
    }
}

#[test]
fn a_100_mb_cufile_is_unknown_with_the_reason() {
    let dir = tree(&[("proc/self/mountinfo", MOUNTINFO)]);
    fs::create_dir_all(dir.path().join("etc")).unwrap();
    let file = fs::File::create(dir.path().join("etc/cufile.json")).unwrap();
    // Sparse: the doctor reads at most its cap (1 MiB) of it.
    file.set_len(100_000_000).unwrap();
    let facts = Facts::collect(&HostRoot::at(dir.path()).unwrap());
    let got = run_on(&facts, &Profile::default(), "GDS001");
    assert_eq!(got[0].0, Status::Unknown);
    assert!(
        got[0].1.contains("larger than 1048576 bytes"),
        "{}",
        got[0].1
    );
    // The checks that need the parsed file say why they cannot tell.
    let keys = run_on(&facts, &Profile::default(), "GDS002");
    assert_eq!(keys[0].0, Status::Unknown);
    assert!(keys[0].1.contains("larger than"), "{}", keys[0].1);
}

#[test]
fn a_truncated_cufile_fails_with_line_and_column() {
    let text = "{\n  // shipped comment\n  \"properties\": {\n    \"allow_compat_mode\": tr";
    let dir = tree(&[("etc/cufile.json", text)]);
    let facts = Facts::collect(&HostRoot::at(dir.path()).unwrap());
    let got = run_on(&facts, &Profile::default(), "GDS001");
    assert_eq!(got[0].0, Status::Fail);
    assert!(got[0].1.contains("line 4"), "{}", got[0].1);
    // GDS002 depends on GDS001: blocked, one alarm for one cause.
    assert_eq!(
        run_on(&facts, &Profile::default(), "GDS002")[0].0,
        Status::Blocked
    );
}

#[test]
fn hostile_mount_tables_do_not_panic() {
    let long_line = format!(
        "1 0 0:1 / /{} rw - nfs4 s:/x rw,proto=rdma\n",
        "\\040".repeat(20_000)
    );
    let inputs = [
        "- - - - - - - -\n".to_owned(),
        "1 0 0:1 / /x rw -\n".to_owned(),
        long_line,
        "\u{0}\u{1}garbage\n".to_owned(),
        "1 0 0:1 / /mnt/a\\0 rw - nfs srv:/a rw,proto=rdma,nconnect=99999999999999999999\n"
            .to_owned(),
    ];
    for input in inputs {
        let dir = tree(&[
            ("proc/self/mountinfo", &input),
            ("proc/self/mountstats", &input),
        ]);
        let report = support::doctor_with(
            dir.path(),
            &Profile::default(),
            &Selection::parse(["nfs", "gds", "nvme"]).unwrap(),
        );
        assert!(!report.findings.is_empty());
    }
}

#[test]
fn an_escaped_mount_point_matches_the_declared_path() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/NFS001/pass-escaped-mount-point");
    let profile: Profile =
        serde_json::from_str(&fs::read_to_string(dir.join("profile.json")).unwrap()).unwrap();
    let report = support::doctor_with(&dir, &profile, &Selection::parse(["NFS001"]).unwrap());
    let finding = &support::findings(&report, "NFS001")[0];
    // `\040` in mountinfo is the space the user typed in `--mount`.
    assert_eq!(finding.subject, "/mnt/my data");
    assert_eq!(finding.status, Status::Pass);
}
