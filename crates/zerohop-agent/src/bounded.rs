//! Work that may block forever (a read of a wedged device's sysfs file),
//! run on a thread of its own and waited for with a deadline.
//!
//! A job that misses its deadline is abandoned, not killed (a thread
//! blocked in the kernel cannot be): it keeps its thread until the read
//! returns. While it runs, the next job of the same runner is refused, so
//! a wedged device costs no thread beyond the runner's own.
//!
//! Each runner keeps one thread for all its jobs rather than starting one
//! per job. glibc's allocator gives a thread that starts allocating an
//! arena that a finished thread left, or a new one (`arena_get2()`,
//! `get_free_list()` and `__malloc_arena_thread_freeres()` in
//! `malloc/arena.c`; read in the copy of glibc at `glibc/malloc/arena.c`
//! of llvm/llvm-project, commit 2e8d27f0), and memory freed inside an
//! arena's heap stays resident unless the heap's top is free
//! (`heap_trim()`, same file). A pass on a large host allocates some 35 MB
//! and frees nearly all of it, so passes that land on a different arena
//! each time leave every arena they visit holding that much: on the
//! synthetic host of 2,064 RDMA devices the agent's resident memory reached
//! 88 MB in 19 passes with 14 MB of it in use. On one thread, each pass
//! reuses what the last one freed (BENCHMARKS.md, "agent: cost on a large
//! host").

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
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

/// A job as its thread runs it: the job and the sending of its answer.
type Job = Box<dyn FnOnce() + Send>;

/// Runs one job at a time on the runner's thread, with a deadline.
#[derive(Debug)]
pub struct Bounded {
    name: &'static str,
    busy: Arc<AtomicBool>,
    abandoned: Arc<AtomicUsize>,
    /// The runner's thread, started with the first job; it ends when the
    /// runner is dropped and its job, if any, has returned.
    worker: Mutex<Option<Sender<Job>>>,
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
            worker: Mutex::new(None),
        }
    }

    /// Runs `job` on the runner's thread and waits at most `deadline` for it.
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
        let work: Job = Box::new(move || {
            let result = panic::catch_unwind(AssertUnwindSafe(job));
            let mut state = lock(&thread_state);
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
        if let Err(err) = self.hand_over(work) {
            self.busy.store(false, Ordering::Release);
            return Outcome::Failed(format!("cannot start a thread: {err}"));
        }
        let answer = match tokio::time::timeout(deadline, &mut receiver).await {
            Ok(answer) => answer,
            Err(_elapsed) => {
                let abandon = {
                    let mut job_state = lock(&state);
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

impl Bounded {
    /// Gives `work` to the runner's thread, starting it if there is none.
    /// The runner is busy, so the thread is idle, waiting for a job.
    fn hand_over(&self, work: Job) -> std::io::Result<()> {
        let mut worker = lock(&self.worker);
        // A thread that is gone (none is, as jobs catch their panics)
        // hands the job back, and a new one takes it.
        let work = match worker.as_ref() {
            Some(jobs) => match jobs.send(work) {
                Ok(()) => return Ok(()),
                Err(returned) => returned.0,
            },
            None => work,
        };
        let (jobs, queue) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name(format!("zerohop-{}", self.name))
            .spawn(move || queue.into_iter().for_each(|job| job()))?;
        // Cannot fail: the thread holds the receiving end.
        let _ = jobs.send(work);
        *worker = Some(jobs);
        Ok(())
    }
}

/// Locks a mutex whose data stays consistent even if a holder panicked:
/// each critical section here is an assignment or two.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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
        let (on, abandoned_on) = mpsc::channel();
        let outcome = runner
            .run(Duration::from_millis(50), move || {
                let _ = on.send(thread::current().id());
                blocked.recv().is_ok()
            })
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
        // The thread that was blocked runs the next job: an abandoned job
        // costs no thread once it returns.
        let blocked_thread = abandoned_on.recv().unwrap();
        match runner
            .run(Duration::from_secs(1), || thread::current().id())
            .await
        {
            Outcome::Finished(id) => assert_eq!(id, blocked_thread),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn every_job_of_a_runner_runs_on_the_same_thread() {
        let runner = Bounded::new("test", Arc::default());
        let mut threads = Vec::new();
        for _ in 0..5 {
            match runner
                .run(Duration::from_secs(5), || thread::current().id())
                .await
            {
                Outcome::Finished(id) => threads.push(id),
                other => panic!("{other:?}"),
            }
        }
        // A panic does not cost the thread either.
        let outcome = runner
            .run(Duration::from_secs(5), || -> u32 { panic!("boom") })
            .await;
        assert!(matches!(outcome, Outcome::Failed(_)), "{outcome:?}");
        match runner
            .run(Duration::from_secs(5), || thread::current().id())
            .await
        {
            Outcome::Finished(id) => threads.push(id),
            other => panic!("{other:?}"),
        }
        assert!(threads.iter().all(|id| *id == threads[0]), "{threads:?}");
        assert_ne!(threads[0], thread::current().id());
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
