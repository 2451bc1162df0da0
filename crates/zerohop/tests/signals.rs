//! SIGINT and SIGTERM as a shell sees them: every command exits with 128 +
//! the signal's number (130, 143), whatever it was doing.
//!
//! Each run is held where the signal must find it, with nothing left to
//! timing: a command that reads standard input waits on an open pipe, one
//! that writes waits on a pipe that is already full. The signal is sent once
//! the process catches SIGINT and SIGTERM (`SigCgt` in its status), and the
//! pipe is never drained, so the process cannot end by itself.

use std::fs;
use std::io::{self, PipeWriter, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use rustix::fs::{OFlags, fcntl_setfl};

const DEADLINE: Duration = Duration::from_secs(20);
const SIGINT: u32 = 2;
const SIGTERM: u32 = 15;

fn repo(relative: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", relative]
        .iter()
        .collect();
    path.to_string_lossy().into_owned()
}

fn fixture(case: &str) -> String {
    repo(&format!("zerohop-doctor/tests/fixtures/{case}"))
}

/// A pipe whose buffer is full: a process writing to it waits until
/// someone reads, and nobody does. The reader is returned to keep the pipe
/// open (a closed one would end the writer with EPIPE).
fn full_pipe() -> (io::PipeReader, PipeWriter) {
    let (reader, mut writer) = io::pipe().expect("pipe");
    fcntl_setfl(&writer, OFlags::NONBLOCK).expect("non-blocking");
    let block = [b'x'; 4096];
    loop {
        match writer.write(&block) {
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
            Err(err) => panic!("filling the pipe: {err}"),
        }
    }
    // The flag belongs to the open pipe, which the child shares: it must
    // wait on the full pipe, not be told to try again.
    fcntl_setfl(&writer, OFlags::empty()).expect("blocking");
    (reader, writer)
}

/// Whether process `pid` catches both SIGINT and SIGTERM.
fn catches_both(pid: u32) -> bool {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| [SIGINT, SIGTERM].iter().all(|s| mask & (1 << (s - 1)) != 0))
}

/// Sends `signal` to `child` once it catches it (or after the deadline,
/// which a build without handlers reaches), and waits for it to end.
fn signal(mut child: Child, signal: u32) -> ExitStatus {
    let deadline = Instant::now() + DEADLINE;
    while !catches_both(child.id()) && Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("ended before the signal was sent: {status:?}");
        }
        sleep(Duration::from_millis(2));
    }
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill runs");
    assert!(sent.success());
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("still running {DEADLINE:?} after the signal: killed");
}

/// `zerohop args`, writing to a full pipe.
fn writing(args: &[&str], sig: u32) -> ExitStatus {
    let (_reader, writer) = full_pipe();
    let child = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    signal(child, sig)
}

/// `zerohop args`, reading an open standard input that never ends.
fn reading(args: &[&str], sig: u32) -> ExitStatus {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdin = child.stdin.take();
    let status = signal(child, sig);
    drop(stdin);
    status
}

#[test]
fn sigterm_ends_every_command_with_143() {
    let root = fixture("PCI005/warn-shared-with-vf");
    let other = fixture("KRN001/pass-intel-on-pt");
    let runs: [(&str, ExitStatus); 5] = [
        (
            "doctor",
            writing(&["doctor", "--root", &root, "-v"], SIGTERM),
        ),
        ("diff", writing(&["diff", &root, &other, "--all"], SIGTERM)),
        (
            "snapshot",
            writing(&["snapshot", "--root", &root, "-o", "-"], SIGTERM),
        ),
        ("lint", reading(&["lint", "-"], SIGTERM)),
        ("validate", reading(&["validate", "parse", "-"], SIGTERM)),
    ];
    for (command, status) in runs {
        assert_eq!(status.code(), Some(143), "{command}: {status:?}");
    }
}

#[test]
fn sigint_ends_every_command_with_130() {
    let root = fixture("PCI005/warn-shared-with-vf");
    let runs: [(&str, ExitStatus); 3] = [
        (
            "doctor",
            writing(&["doctor", "--root", &root, "-v"], SIGINT),
        ),
        (
            "snapshot",
            writing(&["snapshot", "--root", &root, "-o", "-"], SIGINT),
        ),
        ("lint", reading(&["lint", "-"], SIGINT)),
    ];
    for (command, status) in runs {
        assert_eq!(status.code(), Some(130), "{command}: {status:?}");
    }
}
