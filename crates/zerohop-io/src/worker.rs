//! What the workers of a run share, and what each reports back: the
//! caller's controls, the shared state, a worker's outcome and the errors
//! of a run. The engine and the sinks both use it; it uses neither, so the
//! engine drives the sinks without the sinks reaching back into it.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::Instant;

use zerohop_host::HostRoot;

use crate::buffers::{Arena, BufferKind};
use crate::config::{Amount, ReadConfig};
use crate::pattern;
use crate::plan::{Extent, Requests};
use crate::report::Fallback;
use crate::stats::Stats;
use crate::target::{InputError, Target};

/// How the caller steers a running read: a stop flag (set it on Ctrl-C to
/// get the partial result) and a byte counter for a progress bar.
#[derive(Debug, Clone, Default)]
pub struct Control {
    /// Raise to stop all workers; the result covers what was read.
    pub stop: Arc<AtomicBool>,
    /// Bytes read so far, ramp included.
    pub progress: Arc<AtomicU64>,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input, found before any I/O.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A read failed.
    // The kernel's error is part of the message, so it is not also a
    // `source`: a reader that prints the chain would repeat it.
    #[error("{path}: read of {len} bytes at offset {offset} failed: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The offset.
        offset: u64,
        /// The length asked for.
        len: u64,
        /// The error.
        error: io::Error,
    },
    /// Writing the file of `bench prepare` failed; the destination is as
    /// it was.
    #[error(
        "{path}: writing the new file failed at offset {offset}: {error}; nothing was replaced"
    )]
    Write {
        /// The destination.
        path: PathBuf,
        /// The offset.
        offset: u64,
        /// The error.
        error: io::Error,
    },
    /// Setting up a worker failed in a way no fallback covers: the machine
    /// refused memory, a GPU call or an io_uring call.
    #[error("worker setup failed: {0}")]
    Setup(String),
    /// A thread of the run panicked: a bug in zerohop.
    #[error("a {0} thread panicked")]
    Panicked(String),
}

impl RunError {
    /// Whether the failure is a bug in zerohop rather than the input or
    /// the machine (which decides between exit codes 3 and 2).
    pub fn is_bug(&self) -> bool {
        matches!(self, RunError::Panicked(_))
    }
}

/// The time base shared by the workers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub(crate) ramp_end: Instant,
}

/// What the workers share.
pub(crate) struct Shared<'a> {
    pub(crate) cfg: &'a ReadConfig,
    pub(crate) targets: &'a [Target],
    pub(crate) stop: &'a AtomicBool,
    pub(crate) progress: &'a AtomicU64,
    /// The host, for what the buffers' allocation reads (free huge pages).
    pub(crate) root: &'a HostRoot,
    pub(crate) numa_node: Option<u32>,
    pub(crate) fixed_buffers: bool,
    barrier: Barrier,
    start: OnceLock<Instant>,
}

impl<'a> Shared<'a> {
    /// The shared state of `workers` workers steered by `control`; the
    /// caller is the last party at the start barrier.
    pub(crate) fn new(
        cfg: &'a ReadConfig,
        targets: &'a [Target],
        control: &'a Control,
        root: &'a HostRoot,
        numa_node: Option<u32>,
        fixed_buffers: bool,
        workers: usize,
    ) -> Shared<'a> {
        Shared {
            cfg,
            targets,
            stop: &control.stop,
            progress: &control.progress,
            root,
            numa_node,
            fixed_buffers,
            barrier: Barrier::new(workers + 1),
            start: OnceLock::new(),
        }
    }

    /// Waits until every worker is set up, then starts the clock. A worker
    /// whose setup failed still comes here (so nobody waits forever) and
    /// stops the others.
    pub(crate) fn begin(&self, failed: bool) -> Clock {
        if failed {
            self.stop.store(true, Ordering::Relaxed);
        }
        self.barrier.wait();
        let start = *self.start.get_or_init(Instant::now);
        Clock {
            ramp_end: start + self.cfg.ramp,
        }
    }

    /// Ends the setup of a worker that failed: it still meets the others at
    /// the start (so nobody waits forever) and stops them.
    pub(crate) fn setup_failed(&self, err: RunError) -> RunError {
        self.begin(true);
        err
    }

    /// The request stream of worker `index` over `extents`, timed from the
    /// end of the clock's ramp.
    pub(crate) fn requests(
        &self,
        extents: Vec<Extent>,
        index: usize,
        clock: &Clock,
    ) -> Requests<'a> {
        let cfg = self.cfg;
        Requests::new(
            extents,
            cfg.block_size,
            cfg.pattern,
            self.amount_for(index),
            clock.ramp_end,
            cfg.seed,
            index,
            self.stop,
        )
    }

    fn amount_for(&self, index: usize) -> Amount {
        match self.cfg.amount {
            Amount::Bytes(total) => {
                let workers = u64::from(self.cfg.workers);
                let extra = if index == 0 { total % workers } else { 0 };
                Amount::Bytes((total / workers + extra).max(1))
            }
            other => other,
        }
    }

    /// Checks a completed block against the pattern.
    pub(crate) fn verify(&self, stats: &mut Stats, target: usize, offset: u64, data: &[u8]) {
        if !self.cfg.verify {
            return;
        }
        stats.verified_bytes += data.len() as u64;
        if let Some(bad) = pattern::first_mismatch(data, offset) {
            stats.corrupt(&self.targets[target].path, offset, bad);
        }
    }

    /// Counts bytes for the progress bar.
    pub(crate) fn progressed(&self, bytes: u64) {
        self.progress.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The error for a failed read.
    pub(crate) fn read_error(
        &self,
        target: usize,
        offset: u64,
        len: u64,
        error: io::Error,
    ) -> RunError {
        RunError::Read {
            path: self.targets[target].path.clone(),
            offset,
            len,
            error,
        }
    }

    /// Allocates a worker's buffers of `bytes` (for its sink to hold),
    /// turning allocation notes into fallbacks.
    pub(crate) fn arena(
        &self,
        bytes: usize,
        fallbacks: &mut Vec<Fallback>,
    ) -> Result<Arena, RunError> {
        let mut notes = Vec::new();
        let arena = Arena::allocate(
            self.root,
            bytes,
            self.cfg.hugepages,
            self.numa_node,
            &mut notes,
        )
        .map_err(|err| {
            RunError::Setup(format!("cannot allocate {bytes} bytes of buffers: {err}"))
        })?;
        for note in notes {
            let f = fallback(note.feature, note.reason);
            if !fallbacks.contains(&f) {
                fallbacks.push(f);
            }
        }
        Ok(arena)
    }
}

/// What a worker reports back.
#[derive(Debug)]
pub(crate) struct WorkerOutcome {
    pub(crate) stats: Stats,
    pub(crate) fallbacks: Vec<Fallback>,
    pub(crate) fixed_buffers: bool,
    pub(crate) registered_files: bool,
    pub(crate) ring_flags: Vec<&'static str>,
    pub(crate) buffers: Option<BufferKind>,
    pub(crate) numa_node: Option<u32>,
}

/// Joins scoped threads; a thread that panicked becomes a setup error
/// naming `what` thread it was.
pub(crate) fn join_all<T>(
    threads: Vec<std::thread::ScopedJoinHandle<'_, Result<T, RunError>>>,
    what: &str,
) -> Vec<Result<T, RunError>> {
    threads
        .into_iter()
        .map(|t| {
            t.join()
                .unwrap_or_else(|_| Err(RunError::Panicked(what.to_owned())))
        })
        .collect()
}

/// A feature the run did without, and why.
pub(crate) fn fallback(feature: &str, reason: impl Into<String>) -> Fallback {
    Fallback {
        feature: feature.to_owned(),
        reason: reason.into(),
    }
}
