//! Reads that give up after a deadline.
//!
//! Some sysfs attributes are backed by device registers: reading one on a
//! wedged device can block for a long time. On a live host every sysfs read
//! runs on a worker thread; when it does not answer in time the worker is
//! abandoned (it finishes or stays blocked on its own) and a fresh one takes
//! the next read, so one stuck file costs one timeout, not the whole run.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::Duration;

use crate::root::{ReadError, read_capped};

type Request = (PathBuf, usize, Sender<Result<Option<Vec<u8>>, ReadError>>);

/// A worker thread that performs bounded reads with a deadline.
pub(crate) struct Watchdog {
    timeout: Duration,
    worker: Mutex<Option<Sender<Request>>>,
}

impl Watchdog {
    /// A watchdog whose reads give up after `timeout`.
    pub(crate) fn new(timeout: Duration) -> Watchdog {
        Watchdog {
            timeout,
            worker: Mutex::new(None),
        }
    }

    /// Reads at most `cap` bytes of `path`, or fails with a timeout.
    pub(crate) fn read(
        &self,
        path: PathBuf,
        cap: usize,
        shown: &str,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        let (reply, answer) = mpsc::channel();
        {
            let mut worker = self
                .worker
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let sender = worker.get_or_insert_with(spawn_worker);
            if sender.send((path.clone(), cap, reply.clone())).is_err() {
                // The worker died (it cannot panic, but be safe): start another.
                let fresh = spawn_worker();
                let _ = fresh.send((path, cap, reply));
                *worker = Some(fresh);
            }
        }
        self.wait(answer, shown)
    }

    fn wait(
        &self,
        answer: Receiver<Result<Option<Vec<u8>>, ReadError>>,
        shown: &str,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        match answer.recv_timeout(self.timeout) {
            Ok(result) => result,
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                // Abandon the blocked worker; the next read gets a new one.
                *self
                    .worker
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
                Err(ReadError::Timeout {
                    path: shown.to_owned(),
                    seconds: self.timeout.as_secs_f64(),
                })
            }
        }
    }
}

fn spawn_worker() -> Sender<Request> {
    let (sender, requests) = mpsc::channel::<Request>();
    let spawned = thread::Builder::new()
        .name("zerohop-read".into())
        .spawn(move || {
            for (path, cap, reply) in requests {
                let shown = path.display().to_string();
                let _ = reply.send(read_capped(&path, cap, &shown, false));
            }
        });
    // If no thread can be spawned the sender's receiver is dropped, every
    // send fails and reads report a timeout instead of hanging.
    drop(spawned);
    sender
}
