//! A file whose reads never answer: a FUSE server in this test process,
//! mounted over one file of a host tree, that answers the kernel's `INIT`,
//! `GETATTR` and `OPEN` and holds every `READ` (or every `GETATTR`) for as
//! long as it runs. A process reading that file sleeps uninterruptibly in
//! `request_wait_answer()` (`fs/fuse/dev.c`), as it would on a dead NFS
//! server or a wedged device; `SIGKILL` does not end it. Dropping the
//! [`StuckFile`] stops the server, which closes its `/dev/fuse` descriptor:
//! the kernel aborts the connection and every held request fails, so no
//! process stays stuck after the test.
//!
//! The messages follow `include/uapi/linux/fuse.h` (protocol 7.31, which
//! every kernel since 5.4 speaks). Mounting needs root and `/dev/fuse`:
//! without them the test is skipped with a message, except under CI
//! (`CI=true`), where it fails, so that CI always runs it.

#![allow(dead_code, reason = "each test file uses part of the support")]

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags};

const FUSE_GETATTR: u32 = 3;
const FUSE_OPEN: u32 = 14;
const FUSE_READ: u32 = 15;
const FUSE_RELEASE: u32 = 18;
const FUSE_FLUSH: u32 = 25;
const FUSE_INIT: u32 = 26;
/// Requests that take no reply: `FORGET`, `INTERRUPT`, `DESTROY`,
/// `BATCH_FORGET`.
const NO_REPLY: [u32; 4] = [2, 36, 38, 42];
/// `FOPEN_DIRECT_IO`: every read goes to the server, none to the page cache.
const FOPEN_DIRECT_IO: u32 = 1;
/// The size the file claims.
const SIZE: u64 = 4096;

/// What the server never answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hang {
    /// Reads of the content: opening and `stat` work.
    Read,
    /// Every `stat` of the file, as a dead NFS server's mount point.
    Stat,
}

/// A FUSE file mounted over a file of a tree; unmounted when dropped.
pub struct StuckFile {
    target: PathBuf,
    stop: Arc<AtomicBool>,
    held: Arc<AtomicUsize>,
    server: Option<JoinHandle<()>>,
}

impl StuckFile {
    /// Mounts over `file`, an existing regular file. `None` (after saying
    /// why) where FUSE cannot be mounted and CI does not insist on it.
    pub fn mount(file: &Path, hang: Hang) -> Option<StuckFile> {
        let device = match rustix::fs::open(
            "/dev/fuse",
            OFlags::RDWR | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(device) => device,
            Err(err) => return unavailable(&format!("cannot open /dev/fuse: {err}")),
        };
        let options = format!(
            "fd={},rootmode=100000,user_id=0,group_id=0",
            device.as_raw_fd()
        );
        let options = CString::new(options).expect("no NUL in the options");
        if let Err(err) = rustix::mount::mount(
            "zerohop-stuck",
            file,
            "fuse",
            MountFlags::NOSUID | MountFlags::NODEV,
            Some(options.as_c_str()),
        ) {
            return unavailable(&format!("cannot mount FUSE over {}: {err}", file.display()));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(AtomicUsize::new(0));
        let server = {
            let (stop, held) = (Arc::clone(&stop), Arc::clone(&held));
            thread::spawn(move || serve(device, hang, &stop, &held))
        };
        Some(StuckFile {
            target: file.to_path_buf(),
            stop,
            held,
            server: Some(server),
        })
    }

    /// How many requests the server holds unanswered.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

impl Drop for StuckFile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
        let _ = rustix::mount::unmount(&self.target, UnmountFlags::DETACH);
    }
}

/// Skips the test with `why`, or fails it under CI.
fn unavailable(why: &str) -> Option<StuckFile> {
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("CI runs the FUSE tests as root with /dev/fuse: {why}");
    }
    eprintln!("skipped: {why} (needs root and /dev/fuse)");
    None
}

/// Answers requests until told to stop, then closes the device, which
/// aborts the connection and fails every request still held.
fn serve(device: OwnedFd, hang: Hang, stop: &AtomicBool, held: &AtomicUsize) {
    let mut buffer = vec![0u8; (1 << 20) + 4096];
    while !stop.load(Ordering::Acquire) {
        let len = match rustix::io::read(&device, &mut buffer) {
            Ok(len) => len,
            Err(Errno::AGAIN) | Err(Errno::INTR) => {
                thread::sleep(Duration::from_millis(2));
                continue;
            }
            // Unmounted, or the connection was aborted.
            Err(_) => return,
        };
        let request = &buffer[..len];
        if request.len() < 40 {
            continue;
        }
        let opcode = u32_at(request, 4);
        let unique = u64_at(request, 8);
        match opcode {
            FUSE_INIT => reply(&device, unique, 0, &init_out()),
            FUSE_GETATTR if hang == Hang::Stat => {
                held.fetch_add(1, Ordering::AcqRel);
            }
            FUSE_GETATTR => reply(&device, unique, 0, &attr_out()),
            FUSE_OPEN => reply(&device, unique, 0, &open_out()),
            FUSE_READ => {
                held.fetch_add(1, Ordering::AcqRel);
            }
            FUSE_FLUSH | FUSE_RELEASE => reply(&device, unique, 0, &[]),
            op if NO_REPLY.contains(&op) => {}
            _ => reply(&device, unique, -Errno::NOSYS.raw_os_error(), &[]),
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

/// `fuse_out_header` (length, error, unique) and the body.
fn reply(device: &OwnedFd, unique: u64, error: i32, body: &[u8]) {
    let mut out = Vec::with_capacity(16 + body.len());
    out.extend_from_slice(&(16 + body.len() as u32).to_le_bytes());
    out.extend_from_slice(&error.to_le_bytes());
    out.extend_from_slice(&unique.to_le_bytes());
    out.extend_from_slice(body);
    let _ = rustix::io::write(device, &out);
}

/// `fuse_init_out`: protocol 7.31, no optional features, 4 KiB writes.
fn init_out() -> Vec<u8> {
    let mut out = Vec::new();
    for value in [7u32, 31, 0, 0] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(&0u16.to_le_bytes()); // max_background
    out.extend_from_slice(&0u16.to_le_bytes()); // congestion_threshold
    out.extend_from_slice(&4096u32.to_le_bytes()); // max_write
    out.extend_from_slice(&1u32.to_le_bytes()); // time_gran
    out.extend_from_slice(&0u16.to_le_bytes()); // max_pages
    out.extend_from_slice(&0u16.to_le_bytes()); // map_alignment
    out.extend_from_slice(&[0u8; 32]); // unused
    out
}

/// `fuse_attr_out` of the root, a read-only regular file, never cached.
fn attr_out() -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0u64.to_le_bytes()); // attr_valid
    out.extend_from_slice(&0u32.to_le_bytes()); // attr_valid_nsec
    out.extend_from_slice(&0u32.to_le_bytes()); // dummy
    for value in [1u64, SIZE, 1, 0, 0, 0] {
        // ino, size, blocks, atime, mtime, ctime
        out.extend_from_slice(&value.to_le_bytes());
    }
    for value in [0u32, 0, 0, 0o100_444, 1, 0, 0, 0, 4096, 0] {
        // atimensec, mtimensec, ctimensec, mode, nlink, uid, gid, rdev,
        // blksize, flags
        out.extend_from_slice(&value.to_le_bytes());
    }
    out
}

/// `fuse_open_out`: handle 1, reads always sent to the server.
fn open_out() -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&1u64.to_le_bytes());
    out.extend_from_slice(&FOPEN_DIRECT_IO.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out
}
