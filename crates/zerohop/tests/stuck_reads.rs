//! Reads that never return, as a dead NFS server or a wedged device makes
//! them: a file of the host tree is a FUSE file whose reads the server
//! never answers (`fuse_support`). The commands must print their report
//! and exit on time, naming the read they abandoned, and the agent must
//! exit promptly on SIGTERM and keep its stuck readers bounded across
//! passes. Every run has a deadline, and the FUSE server is stopped before
//! a run that outlived it is reaped, so a failure never stalls the suite.

mod agent_support;
mod fuse_support;

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use agent_support::{Agent, copy_tree, fixture, wait_until};
use fuse_support::{Hang, StuckFile};

/// A doctor fixture whose kernel checks read `/proc/cmdline`.
const HOST: &str = "KRN001/pass-intel-on-pt";
/// The file that never answers.
const STUCK: &str = "/proc/cmdline";
/// A read's deadline (`zerohop_host::root::READ_TIMEOUT`) and the room a
/// loaded CI machine needs on top of it.
const ON_TIME: Duration = Duration::from_secs(8);

/// A run of `zerohop` that finished, or `None` when it did not exit (and
/// was never reapable) within its limit: the process is killed and left
/// to be reaped once the stuck file is released.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn run(args: &[&str], limit: Duration) -> Option<Finished> {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zerohop runs");
    let stdout = drain(&mut child, true);
    let stderr = drain(&mut child, false);
    while start.elapsed() < limit {
        // Only a process whose every thread has exited can be waited for.
        if let Some(status) = child.try_wait().unwrap() {
            return Some(Finished {
                code: status.code(),
                stdout: stdout.join().unwrap(),
                stderr: stderr.join().unwrap(),
                took: start.elapsed(),
            });
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

/// Reads one of the child's pipes to its end on a thread of its own.
fn drain(child: &mut Child, stdout: bool) -> JoinHandle<String> {
    let mut pipe: Box<dyn Read + Send> = if stdout {
        Box::new(child.stdout.take().unwrap())
    } else {
        Box::new(child.stderr.take().unwrap())
    };
    thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// A copy of the fixture host with its `/proc/cmdline` stuck, or `None`
/// where FUSE cannot be mounted (see `fuse_support`).
fn stuck_host(dir: &Path, hang: Hang) -> Option<StuckFile> {
    copy_tree(&fixture(HOST), dir);
    StuckFile::mount(&dir.join(STUCK.trim_start_matches('/')), hang)
}

fn path(dir: &Path) -> &str {
    dir.to_str().expect("a utf-8 temporary path")
}

/// Asserts that a run ended on time and that its report says which read
/// was abandoned.
fn assert_on_time(what: &str, finished: Option<Finished>) -> Finished {
    let finished = finished.unwrap_or_else(|| panic!("{what} did not exit within {ON_TIME:?}"));
    assert!(finished.took < ON_TIME, "{what} took {:?}", finished.took);
    let said = format!("{}{}", finished.stdout, finished.stderr);
    assert!(
        said.contains(&format!("reading {STUCK} did not finish within 2 s")),
        "{what} does not name the abandoned read:\n{said}"
    );
    finished
}

#[test]
fn the_doctor_exits_on_time_and_names_the_read_it_abandoned() {
    let dir = tempfile::tempdir().unwrap();
    let Some(stuck) = stuck_host(dir.path(), Hang::Read) else {
        return;
    };
    let root = path(dir.path());
    let doctor = assert_on_time("doctor", run(&["doctor", "--root", root], ON_TIME));
    // The checks that read the file cannot tell; the run is no failure of
    // the host.
    assert_eq!(doctor.code, Some(0), "{}", doctor.stderr);
    assert!(stuck.held() >= 1, "the read did reach the server");
    let json = assert_on_time(
        "doctor --format json",
        run(&["doctor", "--root", root, "--format", "json"], ON_TIME),
    );
    assert!(
        json.stdout.contains("\"status\": \"unknown\""),
        "{}",
        json.stdout
    );
}

#[test]
fn a_stat_that_never_returns_is_abandoned_too() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_stuck) = stuck_host(dir.path(), Hang::Stat) else {
        return;
    };
    assert_on_time(
        "doctor",
        run(&["doctor", "--root", path(dir.path())], ON_TIME),
    );
}

#[test]
fn topo_snapshot_and_diff_exit_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_stuck) = stuck_host(&dir.path().join("host"), Hang::Read) else {
        return;
    };
    let root = dir.path().join("host");
    let root = path(&root);
    let topo = run(&["topo", "--root", root], ON_TIME);
    let topo = topo.unwrap_or_else(|| panic!("topo did not exit within {ON_TIME:?}"));
    assert!(topo.took < ON_TIME, "topo took {:?}", topo.took);
    let archive = dir.path().join("node.zhsnap");
    let snapshot = run(
        &["snapshot", "--root", root, "--output", path(&archive)],
        ON_TIME,
    );
    let snapshot = snapshot.unwrap_or_else(|| panic!("snapshot did not exit within {ON_TIME:?}"));
    assert!(snapshot.took < ON_TIME, "snapshot took {:?}", snapshot.took);
    assert!(
        fs::metadata(&archive).is_ok_and(|meta| meta.len() > 0),
        "{}",
        snapshot.stderr
    );
    assert_on_time("diff", run(&["diff", path(&fixture(HOST)), root], ON_TIME));
}

#[test]
fn the_agent_exits_promptly_on_sigterm_with_a_read_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host");
    copy_tree(&fixture(HOST), &host);
    let mut agent = Agent::start(
        &[
            "--root",
            path(&host),
            "--interval",
            "1s",
            "--counters-interval",
            "1s",
        ],
        &[],
    );
    // Declared after the agent, so released before it is reaped.
    let Some(stuck) = StuckFile::mount(&host.join(STUCK.trim_start_matches('/')), Hang::Read)
    else {
        return;
    };
    // Several passes meet the stuck file: the first abandons its read, the
    // next ones refuse the path while that read is blocked, so the count
    // of stuck readers stays at one.
    let stuck_readers = |agent: &Agent| -> Option<f64> {
        let metrics = agent.get("/metrics", None).body;
        metrics.lines().find_map(|line| {
            let value = line.strip_prefix("zerohop_host_reads_stuck{")?;
            value.rsplit(' ').next()?.trim().parse().ok()
        })
    };
    assert!(
        wait_until(Duration::from_secs(20), || stuck_readers(&agent)
            == Some(1.0)),
        "no stuck read reported: {}\n{}",
        agent.get("/metrics", None).body,
        agent.log()
    );
    let passes = |agent: &Agent| agent.log().matches("pass published").count();
    let before = passes(&agent);
    assert!(
        wait_until(Duration::from_secs(20), || passes(&agent) >= before + 3),
        "passes stopped: {}",
        agent.log()
    );
    assert_eq!(stuck_readers(&agent), Some(1.0), "stuck readers accumulate");
    assert_eq!(stuck.held(), 1, "one read reached the server, once");
    let (_status, took) = agent.terminate(Duration::from_secs(2)).unwrap_or_else(|| {
        panic!(
            "the agent did not exit within 2 s of SIGTERM:\n{}",
            agent.log()
        )
    });
    // Which exit code a signal gives is decided elsewhere; what matters
    // here is that the process ended and was reaped.
    assert!(took < Duration::from_secs(2), "{took:?}");
}

/// The reader processes `pid` has started and not reaped.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|child| child.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[test]
fn the_agent_keeps_no_reader_between_passes() {
    // A reader keeps the paths of the pass it last served; on a large host
    // that is megabytes per reader, held for the whole interval if the
    // reader outlives its pass. With an hour between passes and between
    // counter samples, the first of each ends and nothing runs after it.
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host");
    copy_tree(&fixture(HOST), &host);
    let agent = Agent::start(
        &[
            "--root",
            path(&host),
            "--interval",
            "1h",
            "--counters-interval",
            "1h",
        ],
        &[],
    );
    assert!(
        wait_until(Duration::from_secs(20), || agent
            .log()
            .contains("pass published")),
        "no pass: {}",
        agent.log()
    );
    let pid = agent.child.id();
    assert!(
        wait_until(Duration::from_secs(10), || children(pid).is_empty()),
        "readers outlive the pass: {:?}\n{}",
        children(pid),
        agent.log()
    );
}
