//! The loop of one io_uring worker: keeps `qd` reads in flight, reaps what
//! completed (resubmitting what came back short or was interrupted), and
//! hands each block to the sink.
#![expect(
    unsafe_code,
    reason = "the kernel reads into the arena's slots through raw pointers"
)]

use std::io;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use super::ring::Ring;
use super::slots::Slots;
use crate::buffers::Arena;
use crate::engine::{Clock, RunError, Shared};
use crate::plan::{Extent, Request, Requests};
use crate::sink::QueueLane;
use crate::stats::Stats;

/// Runs worker `index` over `extents` on `ring`, reading into the slots of
/// `arena` and handing each block to `lane`, until the requests run out.
pub(super) fn run<'a>(
    shared: &Shared<'a>,
    index: usize,
    extents: Vec<Extent>,
    arena: &Arena,
    ring: &mut Ring,
    lane: Box<dyn QueueLane + '_>,
    clock: Clock,
) -> Result<Stats, RunError> {
    let cfg = shared.cfg;
    let qd = cfg.queue_depth as usize;
    let mut worker = Loop {
        shared,
        arena,
        ring,
        lane,
        slots: Slots::new(qd),
        requests: shared.requests(extents, index, &clock),
        stats: Stats::new(clock.ramp_end),
        in_flight: 0,
        exhausted: false,
        reaped: Vec::with_capacity(qd),
        batch: (cfg.submit_batch as usize).clamp(1, qd),
        bs: cfg.block_size as usize,
    };
    loop {
        worker.slots.reclaim(&*worker.lane)?;
        worker.refill()?;
        if worker.in_flight == 0 {
            if worker.slots.wait_oldest(&*worker.lane)? {
                continue;
            }
            if worker.exhausted {
                break;
            }
            continue;
        }
        worker.await_completions()?;
        worker.reap()?;
    }
    let Loop {
        lane, mut stats, ..
    } = worker;
    // The sink finishes what it was handed (a GPU's copies) in the
    // worker's own time.
    drop(lane);
    stats.finish_thread();
    Ok(stats)
}

/// The state of the loop.
struct Loop<'w, 'a> {
    shared: &'w Shared<'a>,
    arena: &'w Arena,
    ring: &'w mut Ring,
    lane: Box<dyn QueueLane + 'w>,
    slots: Slots,
    requests: Requests<'a>,
    stats: Stats,
    /// Reads submitted and not yet complete.
    in_flight: usize,
    /// The requests ran out.
    exhausted: bool,
    /// Completions taken from the ring, kept to reuse the allocation.
    reaped: Vec<(usize, i32)>,
    /// Reads queued before each submission.
    batch: usize,
    bs: usize,
}

fn enter_failed(err: io::Error) -> RunError {
    RunError::Setup(format!("io_uring_enter failed: {err}"))
}

/// A mutable view of `len` bytes of slot `slot`.
///
/// # Safety
/// The slot must not be in flight (no read or copy is using it).
unsafe fn slot_mut<'a>(base: *mut u8, slot: usize, bs: usize, len: usize) -> &'a mut [u8] {
    // SAFETY: the caller owns the slot; it lies inside the arena at `base`.
    unsafe { std::slice::from_raw_parts_mut(base.add(slot * bs), len) }
}

impl Loop<'_, '_> {
    /// Submits a read into every free slot, while requests last.
    fn refill(&mut self) -> Result<(), RunError> {
        while !self.exhausted {
            let Some(slot) = self.slots.take() else {
                break;
            };
            let Some(request) = self.requests.next() else {
                self.slots.give_back(slot);
                self.exhausted = true;
                break;
            };
            self.slots.start(slot, request);
            let target = &self.shared.targets[request.target];
            if self.shared.cfg.direct && !request.len.is_multiple_of(target.alignment) {
                // O_DIRECT cannot read a tail that is not a whole logical
                // block: read it through the buffered descriptor.
                let file = target.buffered.as_ref().unwrap_or(&target.file);
                // SAFETY: the slot was just taken from the free list.
                let buf =
                    unsafe { slot_mut(self.arena.as_ptr(), slot, self.bs, request.len as usize) };
                file.read_exact_at(buf, request.offset).map_err(|e| {
                    self.shared
                        .read_error(request.target, request.offset, request.len, e)
                })?;
                self.stats.buffered_tails += 1;
                self.complete(slot, Instant::now())?;
                continue;
            }
            // SAFETY: the slot is inside the arena.
            let buf = unsafe { self.arena.as_ptr().add(slot * self.bs) };
            self.ring
                .push(
                    slot,
                    request.target,
                    buf,
                    request.len as u32,
                    request.offset,
                )
                .map_err(|e| {
                    self.shared
                        .read_error(request.target, request.offset, request.len, e)
                })?;
            self.in_flight += 1;
            if self.ring.queued() >= self.batch {
                self.ring.flush().map_err(enter_failed)?;
            }
        }
        Ok(())
    }

    /// Sleeps only when nothing has completed. Every enter posts the reads
    /// that finished meanwhile, and reaping them at once refills the queue
    /// sooner than a sleep and a wake-up would (4 KiB random reads at qd 64
    /// on a virtio disk: 1.12× the IOPS of one submission per refill).
    fn await_completions(&mut self) -> Result<(), RunError> {
        if self.ring.completed() {
            if self.ring.queued() > 0 {
                self.ring.flush().map_err(enter_failed)?;
            }
        } else {
            self.ring.submit_and_wait().map_err(enter_failed)?;
        }
        Ok(())
    }

    /// Takes the posted completions: resubmits what came back short or was
    /// interrupted, fails on an error, completes the rest.
    fn reap(&mut self) -> Result<(), RunError> {
        let mut reaped = std::mem::take(&mut self.reaped);
        reaped.clear();
        self.ring.reap(&mut reaped);
        let now = Instant::now();
        self.stats.tick(now);
        for &(slot, result) in &reaped {
            let s = self.slots.get_mut(slot);
            let Request {
                target,
                offset,
                len,
            } = s.request;
            if result < 0 {
                let errno = -result;
                if errno == libc::EAGAIN || errno == libc::EINTR {
                    // SAFETY: `s.done < len <= bs`, so the offset stays inside
                    // this slot of the arena, which the read still owns.
                    let buf = unsafe { self.arena.as_ptr().add(slot * self.bs + s.done as usize) };
                    self.ring
                        .push(slot, target, buf, (len - s.done) as u32, offset + s.done)
                        .map_err(|e| self.shared.read_error(target, offset, len, e))?;
                    continue;
                }
                return Err(self.shared.read_error(
                    target,
                    offset + s.done,
                    len - s.done,
                    io::Error::from_raw_os_error(errno),
                ));
            }
            if result == 0 {
                return Err(self.shared.read_error(
                    target,
                    offset + s.done,
                    len - s.done,
                    io::Error::from(io::ErrorKind::UnexpectedEof),
                ));
            }
            s.done += result as u64;
            if s.done < len {
                self.stats.short_reads += 1;
                // SAFETY: the rest of the slot, still owned by this read.
                let buf = unsafe { self.arena.as_ptr().add(slot * self.bs + s.done as usize) };
                self.ring
                    .push(slot, target, buf, (len - s.done) as u32, offset + s.done)
                    .map_err(|e| self.shared.read_error(target, offset, len, e))?;
                continue;
            }
            self.in_flight -= 1;
            self.complete(slot, now)?;
        }
        self.reaped = reaped;
        Ok(())
    }

    /// A slot's read is whole: verifies and counts it, and hands it to the
    /// sink.
    fn complete(&mut self, slot: usize, now: Instant) -> Result<(), RunError> {
        let s = self.slots.get(slot);
        let len = s.request.len as usize;
        let data = self.arena.slice(slot * self.bs, len);
        self.shared
            .verify(&mut self.stats, s.request.target, s.request.offset, data);
        self.stats.record(s.submitted, now, s.request.len);
        self.shared.progressed(s.request.len);
        self.slots.deliver(&mut *self.lane, slot, len)
    }
}
