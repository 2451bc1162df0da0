//! A worker's ring: created with the best `IORING_SETUP_*` flags the kernel
//! accepts, with the worker's files and buffers registered when allowed,
//! and the few ways the loop enters the kernel.
#![expect(
    unsafe_code,
    reason = "io_uring submissions point the kernel at our buffers"
)]

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use io_uring::{IoUring, opcode, types};

use crate::buffers::Arena;
use crate::engine::{RunError, Shared, fallback};
use crate::plan::Extent;
use crate::report::Fallback;

/// A descriptor as the ring sees it.
#[derive(Debug, Clone, Copy)]
enum FileRef {
    Fixed(u32),
    Raw(RawFd),
}

/// A ring with its registrations.
pub(super) struct Ring {
    ring: IoUring,
    files: Vec<Option<FileRef>>,
    /// The worker's buffers are registered (`READ_FIXED`).
    pub(super) fixed_buffers: bool,
    /// The worker's files are registered.
    pub(super) registered_files: bool,
    /// The `IORING_SETUP_*` flags it was created with.
    pub(super) flags: Vec<&'static str>,
}

/// The `IORING_SETUP_*` combinations to try, best first.
///
/// The task-run flags suit O_DIRECT, whose completions only post a CQE. A
/// buffered read that misses the page cache is retried through task work
/// when its page unlocks; `DEFER_TASKRUN` holds that work until the next
/// wait and `COOP_TASKRUN` until the next kernel entry, and a cold buffered
/// pass then runs at a half to a sixth of its speed (measured: 0.4–1.4 GB/s
/// with them against 2.3 GB/s without, on the same 4 GiB file).
fn flag_sets(sqpoll: bool, iopoll: bool, direct: bool) -> Vec<Vec<&'static str>> {
    let mut optional = Vec::new();
    if sqpoll {
        optional.push("SQPOLL");
    }
    if iopoll {
        optional.push("IOPOLL");
    }
    // Task-run flags are IPI tuning that the kernel refuses with SQPOLL.
    let modern: &[&'static str] = if sqpoll || !direct {
        &[]
    } else {
        &["SINGLE_ISSUER", "DEFER_TASKRUN", "COOP_TASKRUN"]
    };
    let mut sets = vec![[optional.clone(), modern.to_vec()].concat()];
    if !modern.is_empty() {
        sets.push([optional.clone(), vec!["COOP_TASKRUN"]].concat());
        sets.push(optional.clone());
    }
    sets
}

fn build(entries: u32, flags: &[&'static str]) -> io::Result<IoUring> {
    let mut builder = IoUring::builder();
    builder.setup_cqsize(entries * 2);
    for flag in flags {
        match *flag {
            "SQPOLL" => builder.setup_sqpoll(1000),
            "IOPOLL" => builder.setup_iopoll(),
            "SINGLE_ISSUER" => builder.setup_single_issuer(),
            "DEFER_TASKRUN" => builder.setup_defer_taskrun(),
            _ => builder.setup_coop_taskrun(),
        };
    }
    builder.build(entries)
}

impl Ring {
    /// A ring for the reads of `extents` into `arena`, with IOPOLL when
    /// `iopoll`; every flag or registration the kernel refuses becomes a
    /// fallback.
    pub(super) fn new(
        shared: &Shared<'_>,
        extents: &[Extent],
        arena: &Arena,
        iopoll: bool,
        fallbacks: &mut Vec<Fallback>,
    ) -> Result<Ring, RunError> {
        let cfg = shared.cfg;
        let entries = cfg.queue_depth.next_power_of_two();
        let mut sqpoll = cfg.sqpoll;
        let mut iopoll = iopoll;
        let ring = loop {
            let sets = flag_sets(sqpoll, iopoll, cfg.direct);
            let mut last_err = None;
            let mut built = None;
            for set in &sets {
                match build(entries, set) {
                    Ok(ring) => {
                        built = Some((ring, set.clone()));
                        break;
                    }
                    Err(err) => last_err = Some(err),
                }
            }
            match (built, last_err) {
                (Some(ring), _) => break ring,
                (None, Some(err)) if sqpoll => {
                    fallbacks.push(fallback(
                        "sqpoll",
                        format!("the kernel refused IORING_SETUP_SQPOLL: {err}"),
                    ));
                    sqpoll = false;
                }
                (None, Some(err)) if iopoll => {
                    fallbacks.push(fallback(
                        "iopoll",
                        format!("the kernel refused IORING_SETUP_IOPOLL: {err}"),
                    ));
                    iopoll = false;
                }
                (None, err) => {
                    return Err(RunError::Setup(format!(
                        "io_uring_setup failed: {}",
                        err.map_or_else(String::new, |e| e.to_string())
                    )));
                }
            }
        };
        let (ring, flags) = ring;
        let mut files = vec![None; shared.targets.len()];
        let mut fds = Vec::new();
        for e in extents {
            if files[e.target].is_none() {
                files[e.target] = Some(FileRef::Raw(shared.targets[e.target].file.as_raw_fd()));
                fds.push((e.target, shared.targets[e.target].file.as_raw_fd()));
            }
        }
        let mut registered_files = false;
        if cfg.registered_files && !fds.is_empty() {
            let raw: Vec<RawFd> = fds.iter().map(|(_, fd)| *fd).collect();
            match ring.submitter().register_files(&raw) {
                Ok(()) => {
                    registered_files = true;
                    for (index, (target, _)) in fds.iter().enumerate() {
                        files[*target] = Some(FileRef::Fixed(index as u32));
                    }
                }
                Err(err) => fallbacks.push(fallback(
                    "registered_files",
                    format!("IORING_REGISTER_FILES failed: {err}"),
                )),
            }
        }
        let mut fixed_buffers = false;
        if shared.fixed_buffers {
            let bs = cfg.block_size as usize;
            let iovecs: Vec<libc::iovec> = (0..cfg.queue_depth as usize)
                // SAFETY: every slot lies inside the arena (qd × bs bytes).
                .map(|slot| libc::iovec {
                    iov_base: unsafe { arena.as_ptr().add(slot * bs) }.cast(),
                    iov_len: bs,
                })
                .collect();
            // SAFETY: the iovecs cover the arena, which outlives the ring (the
            // ring is dropped first in `worker`), and is anonymous memory.
            match unsafe { ring.submitter().register_buffers(&iovecs) } {
                Ok(()) => fixed_buffers = true,
                Err(err) => {
                    let hint = if err.raw_os_error() == Some(libc::ENOMEM) {
                        " (RLIMIT_MEMLOCK too small?)"
                    } else {
                        ""
                    };
                    fallbacks.push(fallback(
                        "fixed_buffers",
                        format!("IORING_REGISTER_BUFFERS failed: {err}{hint}"),
                    ));
                }
            }
        }
        Ok(Ring {
            ring,
            files,
            fixed_buffers,
            registered_files,
            flags,
        })
    }

    /// Whether the ring was created with `flag`.
    pub(super) fn has(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// Queues a read of `len` bytes at `offset` into `buf` (slot `slot`).
    pub(super) fn push(
        &mut self,
        slot: usize,
        target: usize,
        buf: *mut u8,
        len: u32,
        offset: u64,
    ) -> io::Result<()> {
        let file =
            self.files[target].ok_or_else(|| io::Error::other("file not opened by this worker"))?;
        let entry = match (file, self.fixed_buffers) {
            (FileRef::Fixed(i), true) => {
                opcode::ReadFixed::new(types::Fixed(i), buf, len, slot as u16)
                    .offset(offset)
                    .build()
            }
            (FileRef::Fixed(i), false) => opcode::Read::new(types::Fixed(i), buf, len)
                .offset(offset)
                .build(),
            (FileRef::Raw(fd), true) => {
                opcode::ReadFixed::new(types::Fd(fd), buf, len, slot as u16)
                    .offset(offset)
                    .build()
            }
            (FileRef::Raw(fd), false) => opcode::Read::new(types::Fd(fd), buf, len)
                .offset(offset)
                .build(),
        }
        .user_data(slot as u64);
        loop {
            // SAFETY: `buf..buf+len` is inside this worker's arena slot `slot`,
            // which no one else touches until its completion is reaped; the
            // arena outlives the ring.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return Ok(());
            }
            // The queue is full (only possible with SQPOLL lagging): flush.
            self.ring.submit()?;
        }
    }

    /// Submits what is queued and posts the completions that are ready,
    /// without waiting.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        if self.has("SQPOLL") {
            // The kernel thread submits; `submit` wakes it if it sleeps.
            return interrupted_is_ok(self.ring.submit());
        }
        let queued = self.ring.submission().len() as u32;
        // GETEVENTS runs the deferred task work that posts finished reads.
        // SAFETY: no extended argument is passed, so there is nothing for
        // the kernel to read beyond the registers.
        interrupted_is_ok(unsafe {
            self.ring
                .submitter()
                .enter::<libc::sigset_t>(queued, 0, IORING_ENTER_GETEVENTS, None)
        })
    }

    /// Submits and waits for at least one completion.
    pub(super) fn submit_and_wait(&mut self) -> io::Result<()> {
        interrupted_is_ok(self.ring.submit_and_wait(1))
    }

    /// Reads queued and not yet submitted.
    pub(super) fn queued(&mut self) -> usize {
        self.ring.submission().len()
    }

    /// Whether completions wait to be reaped.
    pub(super) fn completed(&mut self) -> bool {
        !self.ring.completion().is_empty()
    }

    /// The result of the next posted completion, if any.
    pub(super) fn next_result(&mut self) -> Option<i32> {
        self.ring.completion().next().map(|c| c.result())
    }

    /// Moves the posted completions into `reaped` as (slot, result).
    pub(super) fn reap(&mut self, reaped: &mut Vec<(usize, i32)>) {
        reaped.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data() as usize, c.result())),
        );
    }
}

/// `IORING_ENTER_GETEVENTS` from `<linux/io_uring.h>`.
const IORING_ENTER_GETEVENTS: u32 = 1;

/// An enter cut short by a signal or by a momentary lack of resources did
/// no harm: the loop enters again.
fn interrupted_is_ok(result: io::Result<usize>) -> io::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(err)
            if matches!(
                err.raw_os_error(),
                Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
            ) =>
        {
            Ok(())
        }
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_run_flags_only_for_direct_io_without_sqpoll() {
        let has_task_run =
            |set: &Vec<&str>| set.contains(&"DEFER_TASKRUN") || set.contains(&"COOP_TASKRUN");
        assert!(
            flag_sets(true, false, true)
                .iter()
                .all(|set| !has_task_run(set))
        );
        // Buffered reads are retried through task work: no deferral.
        assert!(
            flag_sets(false, false, false)
                .iter()
                .all(|set| !has_task_run(set))
        );
        let direct = flag_sets(false, false, true);
        assert!(has_task_run(&direct[0]));
        assert_eq!(direct.last().unwrap(), &Vec::<&str>::new());
    }
}
