//! Deadlines for every read of a host tree.
//!
//! In a program that can start reader processes (see [`crate::reader`]),
//! the reads of a directory tree run there, each with its deadline on the
//! answer, and only the bookkeeping below (the stuck paths, the counts and
//! their bound) applies. Elsewhere (a library's tests, a tree in memory)
//! they run in this process, in lanes:
//!
//! A read can block for good: an attribute of a wedged device (sysfs reads
//! device registers and firmware), a file on a hung NFS or FUSE mount, or a
//! path lookup that crosses one. A blocked system call cannot be
//! interrupted, so the only way past it is to stop waiting for the thread
//! that made it.
//!
//! Handing each read to another thread would do that, but costs about
//! 12 µs of wake-ups on a small VM, three times the read itself, and a
//! doctor pass makes 50,000 reads. So work runs in *lanes* instead: a whole
//! unit of work (a facts collection) runs on a pooled thread, its reads run
//! inline, each marking itself busy in a slot of its thread, and the thread
//! that waits for the lane looks at the slots four times per deadline. A
//! read that stays busy past the deadline is stuck: its path is remembered,
//! the lane is abandoned (its remaining reads fail at once, so it winds
//! down) and the unit starts again in a new lane, where the stuck path fails
//! at once with a timeout. One stuck file costs one deadline and one rerun
//! of the unit, and is reported as exactly that file timing out.
//!
//! Threads left blocked are counted ([`stuck_readers`]) and bounded
//! ([`MAX_STUCK_READERS`]): at the bound no lane starts and every read
//! fails at once ([`ReadError::GaveUp`]), so a host whose every file hangs
//! costs a bounded number of threads and deadlines, not one thread per
//! file. A stuck path is refused for as long as its read stays blocked,
//! and forgotten at the next pass once it has returned, so that a process
//! that never exits neither retries a hung file every pass nor refuses a
//! recovered one for ever.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use crate::read_error::ReadError;

/// The most reader threads left blocked in this process at one time. At
/// the bound, reads fail at once instead of starting more threads; the
/// reads already under way when it is reached (one per thread of a unit of
/// work at most) may still add to the count.
pub const MAX_STUCK_READERS: usize = 16;

/// The most times one unit of work is started again after a stuck read;
/// past it, its remaining reads fail at once. A host with this many hung
/// files is not going to answer the rest either.
const MAX_RERUNS: usize = MAX_STUCK_READERS;

/// How often per deadline the waiting thread looks at a lane's reads.
const TICKS_PER_DEADLINE: u64 = 4;

static STUCK: AtomicUsize = AtomicUsize::new(0);
static ABANDONED: AtomicU64 = AtomicU64::new(0);
static NEXT_LANE: AtomicU64 = AtomicU64::new(1);

/// Reader threads blocked right now in a read that missed its deadline, in
/// this whole process. A thread leaves the count when its read returns.
pub fn stuck_readers() -> usize {
    STUCK.load(Ordering::Relaxed)
}

/// Reads abandoned at their deadline since the process started: a counter
/// for monitoring (a host that keeps adding to it has a wedged device or a
/// hung mount).
pub fn abandoned_readers() -> u64 {
    ABANDONED.load(Ordering::Relaxed)
}

/// Notes a reader process abandoned at its deadline: a stuck reader until
/// [`reader_returned`].
pub(crate) fn reader_abandoned() {
    STUCK.fetch_add(1, Ordering::AcqRel);
    ABANDONED.fetch_add(1, Ordering::Relaxed);
}

/// Notes that an abandoned reader process was reaped: its read returned.
pub(crate) fn reader_returned() {
    STUCK.fetch_sub(1, Ordering::AcqRel);
}

/// The lane this thread last read in (0 before any): caches that must not
/// outlive a unit of work key their entries with it.
pub(crate) fn current_lane() -> u64 {
    SLOT.with(|slot| slot.borrow().as_ref().map_or(0, |(lane, _)| *lane))
}

/// Locks a mutex whose data stays consistent even if a holder panicked:
/// every critical section here is a few assignments.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The deadline of the reads of one host tree, and the paths that already
/// missed it.
pub(crate) struct Watchdog {
    timeout: Duration,
    /// Each path that missed the deadline, with how many of its reads are
    /// still blocked: at most [`MAX_STUCK_READERS`] and the paths whose
    /// reads returned since the last [`Watchdog::forget_returned`].
    stuck_paths: Mutex<HashMap<String, usize>>,
    /// Whether `stuck_paths` is non-empty, so that healthy runs skip the lock.
    any_stuck: AtomicBool,
}

impl Watchdog {
    /// A watchdog whose reads give up after `timeout`.
    pub(crate) fn new(timeout: Duration) -> Watchdog {
        Watchdog {
            timeout,
            stuck_paths: Mutex::new(HashMap::new()),
            any_stuck: AtomicBool::new(false),
        }
    }

    /// The deadline of one read.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The error of a read of `path` cut by the deadline.
    pub(crate) fn timed_out(&self, path: &str) -> ReadError {
        ReadError::Timeout {
            path: path.to_owned(),
            seconds: self.timeout.as_secs_f64(),
        }
    }

    /// Whether a read of `path` missed the deadline and is still refused.
    pub(crate) fn is_stuck(&self, path: &str) -> bool {
        self.any_stuck.load(Ordering::Acquire) && lock(&self.stuck_paths).contains_key(path)
    }

    /// Notes a read of `path` blocked past the deadline.
    pub(crate) fn mark_stuck(&self, path: &str) {
        let mut paths = lock(&self.stuck_paths);
        *paths.entry(path.to_owned()).or_default() += 1;
        self.any_stuck.store(true, Ordering::Release);
    }

    /// Notes that a blocked read of `path` returned. The path stays
    /// refused until [`Watchdog::forget_returned`]: the unit of work that
    /// was rerun without it must not meet it again.
    pub(crate) fn returned(&self, path: &str) {
        if let Some(blocked) = lock(&self.stuck_paths).get_mut(path) {
            *blocked = blocked.saturating_sub(1);
        }
    }

    /// Forgets the stuck paths whose reads have all returned, so that the
    /// next pass reads them again; those still blocked stay refused. The
    /// reader processes are reaped first (`reader::reap_returned`), by the
    /// caller: the reader sits above the watchdog.
    pub(crate) fn forget_returned(&self) {
        if !self.any_stuck.load(Ordering::Acquire) {
            return;
        }
        let mut paths = lock(&self.stuck_paths);
        paths.retain(|_, blocked| *blocked > 0);
        self.any_stuck.store(!paths.is_empty(), Ordering::Release);
    }

    /// Runs `work` in a lane and returns its result. `work` may run more
    /// than once: after a stuck read it runs again in a fresh lane, where
    /// the stuck path fails at once. Past the bounds it runs on this thread
    /// in a lane whose every read fails at once (no I/O, so it cannot block).
    pub(crate) fn run<R: Send + 'static>(
        self: &Arc<Watchdog>,
        work: impl Fn(Arc<Lane>) -> R + Send + Sync + 'static,
    ) -> R {
        let work = Arc::new(work);
        for _ in 0..=MAX_RERUNS {
            if stuck_readers() >= MAX_STUCK_READERS {
                break;
            }
            let lane = Arc::new(Lane::new(Arc::clone(self), false));
            let (job_lane, job_work) = (Arc::clone(&lane), Arc::clone(&work));
            let Some(running) = pool::start(move || job_work(job_lane)) else {
                // No thread to spare: reading on this thread could block it.
                break;
            };
            match self.wait(&lane, running) {
                Waited::Done(result) => return result,
                Waited::Panicked(payload) => panic::resume_unwind(payload),
                Waited::Abandoned => {}
            }
        }
        work(Arc::new(Lane::new(Arc::clone(self), true)))
    }

    /// Waits for a lane, abandoning it when one of its reads is stuck.
    fn wait<R>(&self, lane: &Lane, running: pool::Running<R>) -> Waited<R> {
        let tick = (self.timeout / TICKS_PER_DEADLINE as u32).max(Duration::from_millis(1));
        loop {
            match running.answer.recv_timeout(tick) {
                Ok(Ok(result)) => {
                    pool::give_back(running.worker);
                    return Waited::Done(result);
                }
                Ok(Err(payload)) => {
                    pool::give_back(running.worker);
                    return Waited::Panicked(payload);
                }
                // The worker catches panics and always answers: a vanished
                // worker is treated like a stuck one.
                Err(RecvTimeoutError::Disconnected) => {
                    lane.abandon();
                    return Waited::Abandoned;
                }
                Err(RecvTimeoutError::Timeout) => {
                    let epoch = lane.epoch.fetch_add(1, Ordering::AcqRel) + 1;
                    if lane.stuck_reads(epoch) > 0 {
                        lane.abandon();
                        return Waited::Abandoned;
                    }
                }
            }
        }
    }
}

/// How waiting for a lane ended.
enum Waited<R> {
    Done(R),
    Panicked(Box<dyn Any + Send>),
    Abandoned,
}

/// One run of a unit of work: the reads of every thread it uses.
pub(crate) struct Lane {
    id: u64,
    watchdog: Arc<Watchdog>,
    /// Advanced by the waiting thread every tick; a read records the epoch
    /// it started in.
    epoch: AtomicU64,
    abandoned: AtomicBool,
    /// Every read fails at once: the bounds on stuck threads were reached.
    give_up: bool,
    slots: Mutex<Vec<Arc<Slot>>>,
}

/// What one thread of a lane is reading.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    busy: bool,
    since: u64,
    path: String,
    /// Counted in [`STUCK`] until the read returns.
    stuck: bool,
}

thread_local! {
    /// This thread's slot and the lane it belongs to.
    static SLOT: RefCell<Option<(u64, Arc<Slot>)>> = const { RefCell::new(None) };
}

impl Lane {
    fn new(watchdog: Arc<Watchdog>, give_up: bool) -> Lane {
        Lane {
            id: NEXT_LANE.fetch_add(1, Ordering::Relaxed),
            watchdog,
            epoch: AtomicU64::new(0),
            abandoned: AtomicBool::new(false),
            give_up,
            slots: Mutex::new(Vec::new()),
        }
    }

    /// Runs one read of `path` on this thread, watched by the lane's
    /// waiting thread. Fails at once for a path that was stuck before, in
    /// an abandoned lane, and past the bounds (also when they are reached
    /// while the lane runs).
    pub(crate) fn read<R>(
        &self,
        path: &str,
        read: impl FnOnce() -> Result<R, ReadError>,
    ) -> Result<R, ReadError> {
        let stuck = stuck_readers();
        if self.give_up || stuck >= MAX_STUCK_READERS {
            return Err(ReadError::GaveUp {
                path: path.to_owned(),
                stuck,
            });
        }
        if self.abandoned.load(Ordering::Acquire) || self.watchdog.is_stuck(path) {
            return Err(self.watchdog.timed_out(path));
        }
        let slot = self.slot();
        {
            let mut state = lock(&slot.state);
            state.busy = true;
            state.since = self.epoch.load(Ordering::Acquire);
            state.path.clear();
            state.path.push_str(path);
        }
        let result = read();
        let mut state = lock(&slot.state);
        state.busy = false;
        if state.stuck {
            state.stuck = false;
            STUCK.fetch_sub(1, Ordering::AcqRel);
            self.watchdog.returned(&state.path);
        }
        result
    }

    fn slot(&self) -> Arc<Slot> {
        SLOT.with(|cell| {
            let mut cell = cell.borrow_mut();
            if let Some((id, slot)) = cell.as_ref()
                && *id == self.id
            {
                return Arc::clone(slot);
            }
            let slot = Arc::new(Slot::default());
            lock(&self.slots).push(Arc::clone(&slot));
            *cell = Some((self.id, Arc::clone(&slot)));
            slot
        })
    }

    /// Marks the reads busy for a whole deadline at `epoch` as stuck,
    /// each counted as a stuck reader and its path noted with the
    /// watchdog, and says how many there were.
    fn stuck_reads(&self, epoch: u64) -> usize {
        let mut stuck = 0;
        for slot in lock(&self.slots).iter() {
            let mut state = lock(&slot.state);
            // Started in epoch `since`, so busy for more than
            // `epoch - since - 1` ticks: a whole deadline at this margin.
            if state.busy && !state.stuck && epoch - state.since > TICKS_PER_DEADLINE {
                state.stuck = true;
                STUCK.fetch_add(1, Ordering::AcqRel);
                ABANDONED.fetch_add(1, Ordering::Relaxed);
                // Under the slot's lock, so that the read cannot return
                // (and be noted as returned) before it is noted as stuck.
                self.watchdog.mark_stuck(&state.path);
                stuck += 1;
            }
        }
        stuck
    }

    fn abandon(&self) {
        self.abandoned.store(true, Ordering::Release);
    }
}

/// Idle threads that run lanes, reused so that a small unit of work (one
/// read from outside any lane) costs a wake-up rather than a thread.
mod pool {
    use super::*;

    type Job = Box<dyn FnOnce() + Send>;

    static IDLE: Mutex<Vec<Sender<Job>>> = Mutex::new(Vec::new());

    /// Work handed to a thread: its answer, and the thread to give back.
    pub(super) struct Running<R> {
        pub(super) worker: Sender<Job>,
        pub(super) answer: Receiver<thread::Result<R>>,
    }

    /// Starts `work` on an idle thread or a new one; `None` when the system
    /// has no thread to spare.
    pub(super) fn start<R: Send + 'static>(
        work: impl FnOnce() -> R + Send + 'static,
    ) -> Option<Running<R>> {
        let (reply, answer) = mpsc::channel();
        let mut job: Job = Box::new(move || {
            // Caught here and raised again in the waiting thread, so a bug
            // fails the command as it would have without the watchdog.
            let _ = reply.send(panic::catch_unwind(AssertUnwindSafe(work)));
        });
        loop {
            let idle = lock(&IDLE).pop();
            let worker = match idle {
                Some(worker) => worker,
                None => spawn()?,
            };
            match worker.send(job) {
                Ok(()) => return Some(Running { worker, answer }),
                // That thread is gone; try the next one.
                Err(returned) => job = returned.0,
            }
        }
    }

    /// Returns a thread that answered to the idle pool.
    pub(super) fn give_back(worker: Sender<Job>) {
        lock(&IDLE).push(worker);
    }

    fn spawn() -> Option<Sender<Job>> {
        let (worker, jobs) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("zerohop-read".into())
            // Ends when its sender is dropped: after an abandoned job, once
            // the blocked read returns.
            .spawn(move || jobs.into_iter().for_each(|job| job()))
            .ok()?;
        Some(worker)
    }
}

#[cfg(test)]
mod tests {
    use std::fs::{File, OpenOptions};
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    use super::*;

    /// The stuck-reader count is process-wide: tests that change it run
    /// one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// A FIFO: opening it for reading blocks until a writer comes, like an
    /// attribute of a wedged device or a file on a hung mount.
    fn fifo(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        path
    }

    /// Opens the FIFO for writing without waiting, which lets a blocked
    /// reader's open return.
    fn release(fifo: &Path) {
        drop(
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(fifo),
        );
    }

    fn wait_for_stuck(count: usize) {
        let start = Instant::now();
        while stuck_readers() != count {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "stuck readers stay at {}, expected {count}",
                stuck_readers()
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_stuck_read_times_out_and_the_work_reruns_without_it() {
        let _serial = lock(&SERIAL);
        let dir = tempfile::tempdir().unwrap();
        let wedged = fifo(dir.path(), "wedged");
        let before = stuck_readers();
        let abandoned = abandoned_readers();
        let watchdog = Arc::new(Watchdog::new(Duration::from_millis(200)));
        let opened = wedged.clone();
        let start = Instant::now();
        let (blocked, plain) = watchdog.run(move |lane| {
            (
                lane.read("/sys/wedged", || Ok(File::open(&opened).is_ok())),
                lane.read("/sys/plain", || Ok(7)),
            )
        });
        assert!(
            matches!(&blocked, Err(ReadError::Timeout { path, .. }) if path == "/sys/wedged"),
            "{blocked:?}"
        );
        assert_eq!(plain, Ok(7), "the rerun reads what did not block");
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(stuck_readers(), before + 1);
        assert_eq!(abandoned_readers(), abandoned + 1);
        // The same path fails at once from now on.
        let again = Instant::now();
        let repeated = watchdog.run(|lane| lane.read("/sys/wedged", || Ok(())));
        assert!(matches!(repeated, Err(ReadError::Timeout { .. })));
        assert!(again.elapsed() < Duration::from_millis(200));
        // When the blocked read returns, the thread leaves the count.
        release(&wedged);
        wait_for_stuck(before);
    }

    #[test]
    fn stuck_readers_are_bounded_and_further_reads_fail_at_once() {
        let _serial = lock(&SERIAL);
        let dir = tempfile::tempdir().unwrap();
        let before = stuck_readers();
        let watchdog = Arc::new(Watchdog::new(Duration::from_millis(100)));
        let mut fifos = Vec::new();
        for index in before..MAX_STUCK_READERS {
            let path = fifo(dir.path(), &format!("wedged{index}"));
            fifos.push(path.clone());
            let shown = format!("/sys/wedged{index}");
            let result =
                watchdog.run(move |lane| lane.read(&shown, || Ok(File::open(&path).is_ok())));
            // The read that reaches the bound is not even retried.
            assert!(
                result.as_ref().is_err_and(ReadError::is_timeout),
                "{result:?}"
            );
        }
        assert_eq!(stuck_readers(), MAX_STUCK_READERS);
        // At the bound, no thread is started and nothing is read.
        let start = Instant::now();
        let refused = watchdog.run(|lane| lane.read("/sys/healthy", || Ok(1)));
        assert!(
            matches!(refused, Err(ReadError::GaveUp { stuck, .. }) if stuck == MAX_STUCK_READERS),
            "{refused:?}"
        );
        assert!(start.elapsed() < Duration::from_millis(100));
        for path in &fifos {
            release(path);
        }
        wait_for_stuck(before);
        let healthy = watchdog.run(|lane| lane.read("/sys/healthy", || Ok(1)));
        assert_eq!(healthy, Ok(1));
    }

    #[test]
    fn a_stuck_path_is_refused_while_its_read_is_blocked_and_read_again_after() {
        let _serial = lock(&SERIAL);
        let dir = tempfile::tempdir().unwrap();
        let wedged = fifo(dir.path(), "wedged");
        let before = stuck_readers();
        let watchdog = Arc::new(Watchdog::new(Duration::from_millis(100)));
        // The first read of the path blocks, the later ones answer.
        let first = Arc::new(AtomicBool::new(true));
        let pass = || {
            let (first, opened) = (Arc::clone(&first), wedged.clone());
            watchdog.run(move |lane| {
                lane.read("/sys/wedged", || {
                    if first.swap(false, Ordering::AcqRel) {
                        Ok(File::open(&opened).is_ok())
                    } else {
                        Ok(true)
                    }
                })
            })
        };
        assert!(matches!(pass(), Err(ReadError::Timeout { .. })));
        // The next pass while the read is still blocked: refused at once,
        // without blocking a second thread.
        watchdog.forget_returned();
        let start = Instant::now();
        assert!(matches!(pass(), Err(ReadError::Timeout { .. })));
        assert!(start.elapsed() < Duration::from_millis(100));
        assert_eq!(stuck_readers(), before + 1);
        // The read returns: still refused in this pass, read at the next.
        release(&wedged);
        wait_for_stuck(before);
        assert!(matches!(pass(), Err(ReadError::Timeout { .. })));
        watchdog.forget_returned();
        assert_eq!(pass(), Ok(true));
        assert!(lock(&watchdog.stuck_paths).is_empty());
    }

    #[test]
    fn reads_fail_at_once_when_the_bound_is_reached_while_a_unit_runs() {
        let _serial = lock(&SERIAL);
        let dir = tempfile::tempdir().unwrap();
        let before = stuck_readers();
        let (go, wait) = mpsc::channel::<()>();
        let wait = Arc::new(Mutex::new(wait));
        let running = Arc::new(Watchdog::new(Duration::from_secs(2)));
        // A unit that reads, waits, and reads again.
        let unit = {
            let running = Arc::clone(&running);
            thread::spawn(move || {
                running.run(move |lane| {
                    lane.read("/sys/first", || Ok(()))?;
                    let _ = lock(&wait).recv();
                    lane.read("/sys/second", || Ok(()))
                })
            })
        };
        // Meanwhile other reads block until the bound is reached.
        let other = Arc::new(Watchdog::new(Duration::from_millis(100)));
        let mut fifos = Vec::new();
        for index in before..MAX_STUCK_READERS {
            let path = fifo(dir.path(), &format!("wedged{index}"));
            fifos.push(path.clone());
            let shown = format!("/sys/wedged{index}");
            let _ = other.run(move |lane| lane.read(&shown, || Ok(File::open(&path).is_ok())));
        }
        assert_eq!(stuck_readers(), MAX_STUCK_READERS);
        go.send(()).unwrap();
        let second = unit.join().unwrap();
        assert!(
            matches!(&second, Err(ReadError::GaveUp { path, .. }) if path == "/sys/second"),
            "{second:?}"
        );
        assert_eq!(stuck_readers(), MAX_STUCK_READERS, "no thread more");
        for path in &fifos {
            release(path);
        }
        wait_for_stuck(before);
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller() {
        let watchdog = Arc::new(Watchdog::new(Duration::from_secs(2)));
        let caught = panic::catch_unwind(AssertUnwindSafe(|| {
            watchdog.run(|_lane| -> u32 { panic!("a bug in a parser") })
        }));
        assert!(caught.is_err());
        // The thread that ran it is still good for the next unit of work.
        assert_eq!(watchdog.run(|lane| lane.read("/x", || Ok(3))), Ok(3));
    }
}
