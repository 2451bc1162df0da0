//! Work that may block forever (a read of a wedged device's sysfs file),
//! run on its own thread and waited for with a deadline.
//!
//! A job that misses its deadline is abandoned, not killed (a thread
//! blocked in the kernel cannot be): it keeps its thread until the read
//! returns. While it runs, the next job of the same runner is refused, so
//! a wedged device costs one thread, not one thread per interval.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use tokio::sync::oneshot;

/// How a job ended.
#[derive(Debug)]
pub enum Outcome<T> {
    /// It returned in time.
    Finished(T),
    /// It did not return within the deadline and was abandoned.
    TimedOut,
    /// The runner's previous job is still running (abandoned earlier), so
    /// this one was not started.
    Busy,
    /// It panicked (a bug), or no thread could be started; the text says which.
    Failed(String),
}

/// Runs one job at a time on a fresh thread, with a deadline.
#[derive(Debug)]
pub struct Bounded {
    name: &'static str,
    busy: Arc<AtomicBool>,
    abandoned: Arc<AtomicUsize>,
}

/// Where a job stands, shared by the job's thread and its waiter so that a
/// job finishing just as its deadline passes is counted exactly once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobState {
    Running,
    Abandoned,
    Done,
}

impl Bounded {
    /// A runner whose threads are named `zerohop-<name>`; `abandoned` counts
    /// the jobs that missed their deadline and have not returned yet.
    pub fn new(name: &'static str, abandoned: Arc<AtomicUsize>) -> Bounded {
        Bounded {
            name,
            busy: Arc::new(AtomicBool::new(false)),
            abandoned,
        }
    }

    /// Runs `job` on a new thread and waits at most `deadline` for it.
    pub async fn run<T: Send + 'static>(
        &self,
        deadline: Duration,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Outcome<T> {
        if self.busy.swap(true, Ordering::AcqRel) {
            return Outcome::Busy;
        }
        let (sender, mut receiver) = oneshot::channel();
        let state = Arc::new(Mutex::new(JobState::Running));
        let thread_state = Arc::clone(&state);
        let busy = Arc::clone(&self.busy);
        let abandoned = Arc::clone(&self.abandoned);
        let spawned = thread::Builder::new()
            .name(format!("zerohop-{}", self.name))
            .spawn(move || {
                let result = panic::catch_unwind(AssertUnwindSafe(job));
                let mut state = thread_state.lock().unwrap_or_else(|p| p.into_inner());
                if *state == JobState::Abandoned {
                    abandoned.fetch_sub(1, Ordering::AcqRel);
                }
                *state = JobState::Done;
                drop(state);
                // Free the runner before answering, so that a waiter that
                // starts the next job at once finds it free.
                busy.store(false, Ordering::Release);
                // The waiter may be gone (abandoned, or the agent stopping).
                let _ = sender.send(result);
            });
        if let Err(err) = spawned {
            self.busy.store(false, Ordering::Release);
            return Outcome::Failed(format!("cannot start a thread: {err}"));
        }
        let answer = match tokio::time::timeout(deadline, &mut receiver).await {
            Ok(answer) => answer,
            Err(_elapsed) => {
                let abandon = {
                    let mut job_state = state.lock().unwrap_or_else(|p| p.into_inner());
                    let running = *job_state == JobState::Running;
                    if running {
                        *job_state = JobState::Abandoned;
                        self.abandoned.fetch_add(1, Ordering::AcqRel);
                    }
                    running
                };
                if abandon {
                    return Outcome::TimedOut;
                }
                // It finished between the deadline and the lock: take its
                // answer rather than call it late.
                receiver.await
            }
        };
        match answer {
            Ok(Ok(value)) => Outcome::Finished(value),
            Ok(Err(panic)) => Outcome::Failed(panic_text(&*panic)),
            Err(_closed) => Outcome::Failed("the job's thread ended without an answer".into()),
        }
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    format!("internal error: {text}")
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    #[tokio::test]
    async fn a_job_that_returns_in_time_is_finished() {
        let runner = Bounded::new("test", Arc::default());
        match runner.run(Duration::from_secs(5), || 42).await {
            Outcome::Finished(42) => {}
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_blocked_job_is_abandoned_and_refuses_the_next_until_it_returns() {
        let abandoned = Arc::new(AtomicUsize::new(0));
        let runner = Bounded::new("test", Arc::clone(&abandoned));
        let (release, blocked) = mpsc::channel::<()>();
        let outcome = runner
            .run(Duration::from_millis(50), move || blocked.recv().is_ok())
            .await;
        assert!(matches!(outcome, Outcome::TimedOut), "{outcome:?}");
        assert_eq!(abandoned.load(Ordering::Acquire), 1);
        assert!(matches!(
            runner.run(Duration::from_secs(1), || true).await,
            Outcome::Busy
        ));
        release.send(()).unwrap();
        // The abandoned thread returns, gives the runner back and is no
        // longer counted.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while abandoned.load(Ordering::Acquire) != 0 || runner.busy.load(Ordering::Acquire) {
            assert!(
                std::time::Instant::now() < deadline,
                "the thread never returned"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(matches!(
            runner.run(Duration::from_secs(1), || 7).await,
            Outcome::Finished(7)
        ));
    }

    #[tokio::test]
    async fn a_panic_is_a_failure_not_a_crash() {
        let runner = Bounded::new("test", Arc::default());
        let outcome = runner
            .run(Duration::from_secs(5), || -> u32 { panic!("boom") })
            .await;
        match outcome {
            Outcome::Failed(text) => assert_eq!(text, "internal error: boom"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            runner.run(Duration::from_secs(1), || 1).await,
            Outcome::Finished(1)
        ));
    }
}
