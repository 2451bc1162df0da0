//! Reads that give up after a deadline.
//!
//! Some sysfs attributes are backed by device registers or firmware
//! commands (PCIe link status, InfiniBand port queries): reading one on a
//! wedged device can block for a long time. On a live host every sysfs read
//! runs on a worker thread; when it does not answer in time the worker is
//! abandoned (it finishes or stays blocked on its own) and a fresh one takes
//! the next read, so one stuck file costs one timeout, not the whole run.
//! Idle workers are pooled, so the threads that collect devices in parallel
//! keep reading in parallel.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Duration;

use crate::root::{ReadError, read_capped};

type Answer = Result<Option<Vec<u8>>, ReadError>;

/// A reader thread and the two ends that talk to it.
struct Worker {
    requests: Sender<(PathBuf, usize)>,
    answers: Receiver<Answer>,
}

/// A pool of reader threads that perform bounded reads with a deadline.
pub(crate) struct Watchdog {
    timeout: Duration,
    idle: Mutex<Vec<Worker>>,
}

impl Watchdog {
    /// A watchdog whose reads give up after `timeout`.
    pub(crate) fn new(timeout: Duration) -> Watchdog {
        Watchdog {
            timeout,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Reads at most `cap` bytes of `path`, or fails with a timeout.
    pub(crate) fn read(&self, path: PathBuf, cap: usize, shown: &str) -> Answer {
        let timeout = || ReadError::Timeout {
            path: shown.to_owned(),
            seconds: self.timeout.as_secs_f64(),
        };
        let worker = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some(worker) = worker.or_else(spawn_worker) else {
            return Err(timeout());
        };
        if worker.requests.send((path, cap)).is_err() {
            return Err(timeout());
        }
        match worker.answers.recv_timeout(self.timeout) {
            Ok(answer) => {
                self.idle
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(worker);
                answer
            }
            // Dropping the worker abandons its thread: when the blocked read
            // returns, its answer has nowhere to go and the thread ends.
            Err(_) => Err(timeout()),
        }
    }
}

/// Starts a reader thread; `None` when the system has no threads to spare,
/// and the read reports a timeout instead of hanging.
fn spawn_worker() -> Option<Worker> {
    let (requests, incoming) = mpsc::channel::<(PathBuf, usize)>();
    let (reply, answers) = mpsc::channel();
    thread::Builder::new()
        .name("zerohop-read".into())
        .spawn(move || {
            for (path, cap) in incoming {
                let shown = path.display().to_string();
                if reply.send(read_capped(&path, cap, &shown, false)).is_err() {
                    break;
                }
            }
        })
        .ok()?;
    Some(Worker { requests, answers })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[test]
    fn a_blocking_file_times_out_and_later_reads_still_work() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("wedged");
        // Opening a FIFO for reading blocks until a writer comes: a file
        // that never answers, like an attribute of a wedged device.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "4: ACTIVE\n").unwrap();

        let watchdog = Watchdog::new(Duration::from_millis(200));
        let start = Instant::now();
        let blocked = watchdog.read(fifo.clone(), 64, "/sys/wedged");
        assert!(
            matches!(blocked, Err(ReadError::Timeout { .. })),
            "{blocked:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(2));
        let read = watchdog.read(plain, 64, "/sys/plain").unwrap();
        assert_eq!(read.as_deref(), Some(&b"4: ACTIVE\n"[..]));
        // Release the abandoned reader so the test leaves no thread behind.
        drop(std::fs::OpenOptions::new().write(true).open(&fifo));
    }
}
