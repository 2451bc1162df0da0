//! Reader processes: where the reads of a host tree run, so that a read
//! that never returns cannot keep this process from exiting.
//!
//! A read can block in the kernel for good, in uninterruptible sleep: a
//! request to a FUSE server that never answers (`request_wait_answer()` in
//! `fs/fuse/dev.c`, Linux v6.12: once the request reached the server, even
//! a fatal signal only leads to the final `wait_event()`), a `stat` of a
//! dead NFS server's mount point, an attribute of a wedged device. A thread
//! of this process blocked so cannot be abandoned in any way that lets the
//! process end: on exit every other thread must exit too, and the group
//! leader stays a zombie that its parent cannot reap until the thread group
//! is empty (`release_task()` and `delay_group_leader()` in
//! `kernel/exit.c` and `include/linux/sched/signal.h`, Linux v6.12). The
//! caller (`$(…)`, a CI step, a node-problem-detector plugin) waits for
//! ever, and `SIGKILL` does not help.
//!
//! So the reads of a directory or the live `/` run in reader processes:
//! this same executable, started with [`READER_ARG`], with a socket as its
//! standard input and nothing else of this process's (standard output and
//! error are `/dev/null`, every other descriptor is close-on-exec, its
//! working directory is `/`). Each read is one request and one answer, with
//! the root's deadline on the answer. A reader that misses it is killed
//! and abandoned: this process goes on, and exits on time, whatever the
//! abandoned reader is stuck in. Abandoned readers are counted as stuck
//! readers ([`crate::watchdog::stuck_readers`]) until they are reaped,
//! bounded by [`crate::watchdog::MAX_STUCK_READERS`] as stuck threads are.
//!
//! A reader that cannot be started (a process limit, `/proc` not mounted)
//! fails the read with that reason: reading in this process instead would
//! bring back the hang this exists to prevent.
//!
//! Only a program whose `main` calls [`serve_or_enable`] first can be
//! started as a reader; everywhere else (a library's tests) the reads run
//! on threads of this process under the watchdog, as before.

mod child;
pub(crate) mod request;
pub(crate) mod wire;

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::read_error::RootError;
use crate::read_error::{IoKind, ReadError};
use crate::reader::request::{Op, Opened, Request};
use crate::reader::wire::{Malformed, Reader};
use crate::watchdog::{self, MAX_STUCK_READERS, Watchdog};

/// The first argument that starts this executable as a reader.
pub const READER_ARG: &str = "__zerohop-reader";

/// The most idle readers kept for the next reads: one per thread that
/// reads at once (a pass reads on up to four).
const MAX_IDLE: usize = 8;

static ENABLED: AtomicBool = AtomicBool::new(false);
static NEXT_TREE: AtomicU64 = AtomicU64::new(1);
static IDLE: Mutex<Vec<ReaderProcess>> = Mutex::new(Vec::new());
static ABANDONED: Mutex<Vec<Abandoned>> = Mutex::new(Vec::new());

/// To be called first in `main`. Started as a reader (first argument
/// [`READER_ARG`]), serves reads until its caller goes away and exits;
/// otherwise returns, and the roots this process opens from then on read
/// through readers.
pub fn serve_or_enable() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == READER_ARG)
    {
        std::process::exit(child::serve());
    }
    ENABLED.store(true, Ordering::Release);
}

/// Whether roots opened now read through reader processes.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running reader and the socket to it.
struct ReaderProcess {
    process: Child,
    socket: UnixStream,
    /// The tree of its last request, whose paths it keeps (0: none).
    tree: u64,
}

/// A reader killed at a deadline, not reaped yet: its read has not
/// returned.
struct Abandoned {
    process: Child,
    path: String,
    watchdog: Arc<Watchdog>,
}

impl ReaderProcess {
    fn start() -> io::Result<ReaderProcess> {
        let (ours, theirs) = UnixStream::pair()?;
        let process = Command::new("/proc/self/exe")
            .arg(READER_ARG)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its working directory must not hold a mount busy while it
            // is stuck.
            .current_dir("/")
            .spawn()?;
        Ok(ReaderProcess {
            process,
            socket: ours,
            tree: 0,
        })
    }

    /// Ends a reader that is not stuck (it exits at the end of its input).
    fn stop(mut self) {
        drop(self.socket);
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// An idle reader, or a new one.
fn take() -> io::Result<ReaderProcess> {
    match lock(&IDLE).pop() {
        Some(reader) => Ok(reader),
        None => ReaderProcess::start(),
    }
}

fn give_back(reader: ReaderProcess) {
    let mut idle = lock(&IDLE);
    if idle.len() < MAX_IDLE {
        idle.push(reader);
    } else {
        drop(idle);
        reader.stop();
    }
}

/// Ends the idle readers that keep `tree`'s paths: nothing will ask for
/// them again once the tree is dropped, and each reader's cache of a large
/// host's paths is megabytes held until the next pass (the agent's readers
/// held some 23 MiB between passes on a 2,080-device host). A reader that
/// keeps another tree is left for that tree's next read.
fn forget(tree: u64) {
    let done: Vec<ReaderProcess> = {
        let mut idle = lock(&IDLE);
        let (done, keep) = std::mem::take(&mut *idle)
            .into_iter()
            .partition(|reader| reader.tree == tree);
        *idle = keep;
        done
    };
    for reader in done {
        reader.stop();
    }
}

/// Reaps the abandoned readers whose reads have returned, so that their
/// paths are read again at the next pass and they no longer count as
/// stuck.
pub(crate) fn reap_returned() {
    let mut abandoned = lock(&ABANDONED);
    abandoned.retain_mut(|stuck| match stuck.process.try_wait() {
        Ok(None) => true,
        // Exited, or not ours to wait for any more: either way gone.
        Ok(Some(_)) | Err(_) => {
            watchdog::reader_returned();
            stuck.watchdog.returned(&stuck.path);
            false
        }
    });
}

/// A tree read by reader processes: the live `/` or a directory.
pub(crate) struct Remote {
    base: PathBuf,
    live: bool,
    /// The tree's number for this pass: a fresh tree gets a new one.
    id: u64,
}

impl Remote {
    /// The live `/`.
    pub(crate) fn live() -> Remote {
        Remote {
            base: PathBuf::from("/"),
            live: true,
            id: NEXT_TREE.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The tree under `dir`, looked at by a reader: the directory itself
    /// can sit on a hung mount.
    pub(crate) fn open(dir: &Path, watchdog: &Arc<Watchdog>) -> Result<Remote, RootError> {
        // The reader processes run in `/` (so that none holds a directory
        // busy): a relative root is made absolute here, against this
        // process's directory, as the user meant it. Messages still show it
        // as given.
        let base = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut remote = Remote {
            base,
            live: false,
            id: NEXT_TREE.fetch_add(1, Ordering::Relaxed),
        };
        let shown = dir.display().to_string();
        match remote.call(watchdog, Op::Open, &shown, Opened::decode) {
            Ok(Opened::Live) => {
                remote.live = true;
                Ok(remote)
            }
            Ok(Opened::Directory) => Ok(remote),
            Ok(Opened::Missing) => Err(RootError::Missing(dir.to_path_buf())),
            Ok(Opened::NotADirectory) => Err(RootError::NotADirectory(dir.to_path_buf())),
            Err(err) => Err(RootError::Unreadable {
                dir: dir.to_path_buf(),
                reason: err.to_string(),
            }),
        }
    }

    /// The same tree for a new pass: the readers forget what they learnt.
    pub(crate) fn fresh(&self) -> Remote {
        Remote {
            base: self.base.clone(),
            live: self.live,
            id: NEXT_TREE.fetch_add(1, Ordering::Relaxed),
        }
    }

    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    pub(crate) fn is_live(&self) -> bool {
        self.live
    }

    /// Runs `op` on `path` in a reader, within the watchdog's deadline.
    pub(crate) fn call<T>(
        &self,
        watchdog: &Arc<Watchdog>,
        op: Op,
        path: &str,
        decode: impl FnOnce(&mut Reader<'_>) -> Result<T, Malformed>,
    ) -> Result<T, ReadError> {
        if watchdog::stuck_readers() >= MAX_STUCK_READERS {
            reap_returned();
        }
        let stuck = watchdog::stuck_readers();
        if stuck >= MAX_STUCK_READERS {
            return Err(ReadError::GaveUp {
                path: path.to_owned(),
                stuck,
            });
        }
        if watchdog.is_stuck(path) {
            return Err(watchdog.timed_out(path));
        }
        let base = self.base.to_string_lossy();
        let request = Request {
            op,
            tree: self.id,
            live: self.live,
            base: &base,
            path,
        }
        .encode();
        let mut reader =
            take().map_err(|err| failed(path, "cannot start a reader process", &err))?;
        // Opening a tree keeps nothing of it in the reader.
        if op != Op::Open {
            reader.tree = self.id;
        }
        let answer = reader
            .socket
            .set_read_timeout(Some(watchdog.timeout()))
            .and_then(|()| reader.socket.set_write_timeout(Some(watchdog.timeout())))
            .and_then(|()| wire::send(&mut reader.socket, &request))
            .and_then(|()| wire::receive(&mut reader.socket));
        match answer {
            Ok(Some(message)) => {
                let mut input = Reader::new(&message);
                match decode(&mut input).and_then(|value| input.end().map(|()| value)) {
                    Ok(value) => {
                        give_back(reader);
                        Ok(value)
                    }
                    Err(Malformed) => {
                        reader.stop();
                        Err(failed(
                            path,
                            "the reader process sent a malformed answer",
                            &io::Error::from(io::ErrorKind::InvalidData),
                        ))
                    }
                }
            }
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                abandon(reader, path, watchdog);
                Err(watchdog.timed_out(path))
            }
            Ok(None) => {
                reader.stop();
                Err(failed(
                    path,
                    "the reader process ended",
                    &io::Error::from(io::ErrorKind::UnexpectedEof),
                ))
            }
            Err(err) => {
                reader.stop();
                Err(failed(path, "the reader process failed", &err))
            }
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        forget(self.id);
    }
}

/// Kills a reader whose read missed its deadline and keeps it to be
/// reaped once the read returns (the kill takes effect then).
fn abandon(mut reader: ReaderProcess, path: &str, watchdog: &Arc<Watchdog>) {
    let _ = reader.process.kill();
    watchdog.mark_stuck(path);
    watchdog::reader_abandoned();
    lock(&ABANDONED).push(Abandoned {
        process: reader.process,
        path: path.to_owned(),
        watchdog: Arc::clone(watchdog),
    });
}

fn failed(path: &str, what: &str, err: &io::Error) -> ReadError {
    ReadError::Io {
        path: path.to_owned(),
        kind: IoKind::Other,
        message: format!("{what}: {}", err.kind()),
    }
}
