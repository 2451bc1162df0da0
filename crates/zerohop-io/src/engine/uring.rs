//! The io_uring backend: one ring per worker with `qd` reads in flight,
//! fixed buffers and registered files, optional SQPOLL and IOPOLL, each
//! dropped with the kernel's reason when refused.
#![expect(
    unsafe_code,
    reason = "io_uring submissions point the kernel at our buffers"
)]

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::time::Instant;

use io_uring::{IoUring, opcode, types};

use super::{Clock, RunError, Shared, WorkerOutcome, fallback};
use crate::buffers::Arena;
use crate::env::{Memlock, UringEnvironment};
use crate::gpu::cuda::CopyLane;
use crate::plan::{Extent, Request};
use crate::report::Fallback;
use crate::stats::Stats;

/// Creates a small ring to see whether io_uring works here, recording the
/// kernel's features and the opcodes we need.
pub fn probe(env: &mut UringEnvironment) -> Result<(), String> {
    let ring = match IoUring::new(4) {
        Ok(ring) => ring,
        Err(err) => {
            let reason = match (err.raw_os_error(), env.disabled_sysctl) {
                (Some(libc::EPERM), Some(d)) if d > 0 => {
                    format!("io_uring is disabled (kernel.io_uring_disabled = {d})")
                }
                (Some(libc::ENOSYS), _) => {
                    "io_uring is not in this kernel or blocked by seccomp (ENOSYS)".to_owned()
                }
                (Some(libc::EPERM), _) => {
                    "io_uring_setup was refused (EPERM; seccomp or a container profile)".to_owned()
                }
                _ => format!("io_uring_setup failed: {err}"),
            };
            env.status = format!("unavailable: {reason}");
            return Err(reason);
        }
    };
    let p = ring.params();
    let features = [
        (p.is_feature_single_mmap(), "single_mmap"),
        (p.is_feature_nodrop(), "nodrop"),
        (p.is_feature_submit_stable(), "submit_stable"),
        (p.is_feature_rw_cur_pos(), "rw_cur_pos"),
        (p.is_feature_cur_personality(), "cur_personality"),
        (p.is_feature_fast_poll(), "fast_poll"),
        (p.is_feature_poll_32bits(), "poll_32bits"),
        (p.is_feature_sqpoll_nonfixed(), "sqpoll_nonfixed"),
        (p.is_feature_ext_arg(), "ext_arg"),
        (p.is_feature_native_workers(), "native_workers"),
        (p.is_feature_resource_tagging(), "rsrc_tags"),
        (p.is_feature_skip_cqe_on_success(), "cqe_skip"),
        (p.is_feature_linked_file(), "linked_file"),
        (p.is_feature_recvsend_bundle(), "recvsend_bundle"),
        (p.is_feature_min_timeout(), "min_timeout"),
        (p.is_feature_no_iowait(), "no_iowait"),
    ];
    env.features = features
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
    let mut probe = io_uring::Probe::new();
    let probed = ring.submitter().register_probe(&mut probe).is_ok();
    env.opcodes = vec![
        ("read", probed && probe.is_supported(opcode::Read::CODE)),
        (
            "read_fixed",
            probed && probe.is_supported(opcode::ReadFixed::CODE),
        ),
    ];
    if probed && !probe.is_supported(opcode::Read::CODE) {
        let reason = "the kernel's io_uring has no non-vectored READ (needs Linux 5.6)".to_owned();
        env.status = format!("unavailable: {reason}");
        return Err(reason);
    }
    env.status = "available".to_owned();
    Ok(())
}

/// Whether `needed` bytes of fixed buffers fit in the locked-memory limit.
pub fn fixed_buffer_budget(needed: u64, memlock: Memlock) -> Result<(), String> {
    match memlock.budget() {
        Some(limit) if needed > limit => Err(format!(
            "{needed} bytes of buffers exceed RLIMIT_MEMLOCK of {limit} bytes; reading into unregistered buffers (raise `ulimit -l` or grant CAP_IPC_LOCK)"
        )),
        _ => Ok(()),
    }
}

/// What the result of the IOPOLL test read means: `Err(reason)` when polled
/// reads do not work on this device.
pub fn iopoll_probe_verdict(result: i32) -> Result<(), String> {
    match -result {
        libc::EOPNOTSUPP => Err("polled reads return EOPNOTSUPP: the device has no poll queues (NVMe with nvme.poll_queues > 0 is needed)".into()),
        errno if result < 0 => Err(format!("polled test read failed: {}", io::Error::from_raw_os_error(errno))),
        _ => Ok(()),
    }
}

/// A descriptor as the ring sees it.
#[derive(Debug, Clone, Copy)]
enum FileRef {
    Fixed(u32),
    Raw(RawFd),
}

/// A ring with its registrations.
struct Ring {
    ring: IoUring,
    files: Vec<Option<FileRef>>,
    fixed_buffers: bool,
    registered_files: bool,
    flags: Vec<&'static str>,
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
    fn new(
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

    fn has(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// Queues a read of `len` bytes at `offset` into `buf` (slot `slot`).
    fn push(
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
    fn flush(&mut self) -> io::Result<()> {
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
    fn submit_and_wait(&mut self) -> io::Result<()> {
        interrupted_is_ok(self.ring.submit_and_wait(1))
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

/// The in-flight state of one buffer slot.
#[derive(Debug, Clone, Copy)]
struct Slot {
    request: Request,
    done: u64,
    submitted: Instant,
}

/// One worker: sets up, waits for the others, then keeps `qd` reads in flight.
pub(super) fn worker(
    shared: &Shared<'_>,
    index: usize,
    extents: Vec<Extent>,
) -> Result<WorkerOutcome, RunError> {
    let cfg = shared.cfg;
    let mut fallbacks = Vec::new();
    let bytes = cfg.block_size as usize * cfg.queue_depth as usize;
    let buffers =
        super::buffers(shared, bytes, &mut fallbacks).map_err(|err| shared.setup_failed(err))?;
    let arena_ref = buffers.arena();
    let kind = arena_ref.kind();
    let numa_node = arena_ref.numa_node();
    let setup = setup(shared, &extents, arena_ref, &mut fallbacks);
    let lane = match (shared.gpu, &setup) {
        (Some(device), Ok(_)) => {
            match device.lane(cfg.queue_depth as usize, cfg.block_size as usize) {
                Ok(lane) => Some(lane),
                Err(err) => return Err(shared.setup_failed(RunError::Setup(err.to_string()))),
            }
        }
        _ => None,
    };
    let clock = shared.begin(setup.is_err());
    let mut ring = setup?;
    let stats = run(shared, index, extents, arena_ref, &mut ring, lane, clock)?;
    let outcome = WorkerOutcome {
        stats,
        fallbacks,
        fixed_buffers: ring.fixed_buffers,
        registered_files: ring.registered_files,
        ring_flags: ring.flags.clone(),
        buffers: Some(kind),
        numa_node,
    };
    drop(ring);
    drop(buffers);
    Ok(outcome)
}

fn setup(
    shared: &Shared<'_>,
    extents: &[Extent],
    arena: &Arena,
    fallbacks: &mut Vec<Fallback>,
) -> Result<Ring, RunError> {
    let cfg = shared.cfg;
    // `validate` refused --iopoll without --direct.
    let ring = Ring::new(shared, extents, arena, cfg.iopoll, fallbacks)?;
    if !ring.has("IOPOLL") {
        return Ok(ring);
    }
    // The ring accepts IOPOLL on any device; reads then fail on devices
    // without poll queues. Try one aligned read to find out.
    let Some(first) = extents.first() else {
        return Ok(ring);
    };
    let mut ring = ring;
    let len = shared.targets[first.target].alignment.min(cfg.block_size) as u32;
    let verdict = ring
        .push(0, first.target, arena.as_ptr(), len, first.start)
        .and_then(|()| {
            // A failed polled read may need more than one enter to be reaped.
            let deadline = Instant::now() + std::time::Duration::from_secs(2);
            loop {
                ring.submit_and_wait()?;
                if let Some(cqe) = ring.ring.completion().next() {
                    return Ok(cqe.result());
                }
                if Instant::now() > deadline {
                    return Err(io::Error::other("no completion within 2 s"));
                }
            }
        });
    match verdict
        .map_err(|e| e.to_string())
        .and_then(iopoll_probe_verdict)
    {
        Ok(()) => Ok(ring),
        Err(reason) => {
            fallbacks.push(fallback("iopoll", reason));
            drop(ring);
            Ring::new(shared, extents, arena, false, fallbacks)
        }
    }
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

fn run(
    shared: &Shared<'_>,
    index: usize,
    extents: Vec<Extent>,
    arena: &Arena,
    ring: &mut Ring,
    mut lane: Option<CopyLane<'_>>,
    clock: Clock,
) -> Result<Stats, RunError> {
    let cfg = shared.cfg;
    let bs = cfg.block_size as usize;
    let qd = cfg.queue_depth as usize;
    let mut requests = shared.requests(extents, index, &clock);
    let mut stats = Stats::new(clock.ramp_end);
    let mut free: Vec<usize> = (0..qd).rev().collect();
    let now = Instant::now();
    let idle = Request {
        target: 0,
        offset: 0,
        len: 0,
    };
    let mut slots = vec![
        Slot {
            request: idle,
            done: 0,
            submitted: now
        };
        qd
    ];
    let mut copying: VecDeque<usize> = VecDeque::new();
    let mut inflight = 0usize;
    let mut exhausted = false;
    let mut reaped: Vec<(usize, i32)> = Vec::with_capacity(qd);
    let batch = (cfg.submit_batch as usize).clamp(1, qd);

    // Hands a completed slot to the sink and frees it (or queues its copy).
    let finish = |slot: usize,
                  s: Slot,
                  now: Instant,
                  stats: &mut Stats,
                  free: &mut Vec<usize>,
                  copying: &mut VecDeque<usize>,
                  lane: &mut Option<CopyLane<'_>>|
     -> Result<(), RunError> {
        let len = s.request.len as usize;
        let data = arena.slice(slot * bs, len);
        shared.verify(stats, s.request.target, s.request.offset, data);
        stats.record(s.submitted, now, s.request.len);
        shared.progressed(s.request.len);
        match lane {
            Some(lane) => {
                // SAFETY: the slot is pinned (the arena is) and is not read
                // into again until `is_done`/`wait` says the copy finished.
                unsafe { lane.copy(slot, data.as_ptr(), len) }
                    .map_err(|e| RunError::Setup(e.to_string()))?;
                copying.push_back(slot);
            }
            None => free.push(slot),
        }
        Ok(())
    };

    loop {
        if let Some(l) = &lane {
            while let Some(&slot) = copying.front() {
                if !l
                    .is_done(slot)
                    .map_err(|e| RunError::Setup(e.to_string()))?
                {
                    break;
                }
                copying.pop_front();
                free.push(slot);
            }
        }
        while !exhausted {
            let Some(slot) = free.pop() else { break };
            let Some(request) = requests.next() else {
                free.push(slot);
                exhausted = true;
                break;
            };
            let target = &shared.targets[request.target];
            slots[slot] = Slot {
                request,
                done: 0,
                submitted: Instant::now(),
            };
            let unaligned_tail = cfg.direct && !request.len.is_multiple_of(target.alignment);
            if unaligned_tail {
                // O_DIRECT cannot read a tail that is not a whole logical
                // block: read it through the buffered descriptor.
                let file = target.buffered.as_ref().unwrap_or(&target.file);
                // SAFETY: the slot was just taken from the free list.
                let buf = unsafe { slot_mut(arena.as_ptr(), slot, bs, request.len as usize) };
                file.read_exact_at(buf, request.offset).map_err(|e| {
                    shared.read_error(request.target, request.offset, request.len, e)
                })?;
                stats.buffered_tails += 1;
                finish(
                    slot,
                    slots[slot],
                    Instant::now(),
                    &mut stats,
                    &mut free,
                    &mut copying,
                    &mut lane,
                )?;
                continue;
            }
            // SAFETY: the slot is inside the arena.
            let buf = unsafe { arena.as_ptr().add(slot * bs) };
            ring.push(
                slot,
                request.target,
                buf,
                request.len as u32,
                request.offset,
            )
            .map_err(|e| shared.read_error(request.target, request.offset, request.len, e))?;
            inflight += 1;
            if ring.ring.submission().len() >= batch {
                ring.flush().map_err(enter_failed)?;
            }
        }
        if inflight == 0 {
            match (&lane, copying.front()) {
                (Some(l), Some(&slot)) => {
                    l.wait(slot).map_err(|e| RunError::Setup(e.to_string()))?;
                    continue;
                }
                _ if exhausted => break,
                _ => continue,
            }
        }
        // Sleep only when nothing has completed. Every enter posts the
        // reads that finished meanwhile, and reaping them at once refills
        // the queue sooner than a sleep and a wake-up would (4 KiB random
        // reads at qd 64 on a virtio disk: 1.12× the IOPS of one
        // submission per refill).
        if !ring.ring.completion().is_empty() {
            if !ring.ring.submission().is_empty() {
                ring.flush().map_err(enter_failed)?;
            }
        } else {
            ring.submit_and_wait().map_err(enter_failed)?;
        }
        reaped.clear();
        reaped.extend(
            ring.ring
                .completion()
                .map(|c| (c.user_data() as usize, c.result())),
        );
        let now = Instant::now();
        stats.tick(now);
        for &(slot, result) in &reaped {
            let s = &mut slots[slot];
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
                    let buf = unsafe { arena.as_ptr().add(slot * bs + s.done as usize) };
                    ring.push(slot, target, buf, (len - s.done) as u32, offset + s.done)
                        .map_err(|e| shared.read_error(target, offset, len, e))?;
                    continue;
                }
                return Err(shared.read_error(
                    target,
                    offset + s.done,
                    len - s.done,
                    io::Error::from_raw_os_error(errno),
                ));
            }
            if result == 0 {
                return Err(shared.read_error(
                    target,
                    offset + s.done,
                    len - s.done,
                    io::Error::from(io::ErrorKind::UnexpectedEof),
                ));
            }
            s.done += result as u64;
            if s.done < len {
                stats.short_reads += 1;
                // SAFETY: the rest of the slot, still owned by this read.
                let buf = unsafe { arena.as_ptr().add(slot * bs + s.done as usize) };
                ring.push(slot, target, buf, (len - s.done) as u32, offset + s.done)
                    .map_err(|e| shared.read_error(target, offset, len, e))?;
                continue;
            }
            inflight -= 1;
            let done = *s;
            finish(
                slot,
                done,
                now,
                &mut stats,
                &mut free,
                &mut copying,
                &mut lane,
            )?;
        }
    }
    drop(lane);
    stats.finish_thread();
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iopoll_without_poll_queues_is_explained() {
        let reason = iopoll_probe_verdict(-libc::EOPNOTSUPP).unwrap_err();
        assert!(reason.contains("no poll queues"), "{reason}");
        assert!(iopoll_probe_verdict(4096).is_ok());
        assert!(
            iopoll_probe_verdict(-libc::EIO)
                .unwrap_err()
                .contains("failed")
        );
    }

    #[test]
    fn a_small_memlock_limit_refuses_fixed_buffers_unless_privileged() {
        let small = Memlock {
            soft_bytes: Some(64 << 10),
            hard_bytes: Some(64 << 10),
            cap_ipc_lock: false,
        };
        let reason = fixed_buffer_budget(32 << 20, small).unwrap_err();
        assert!(reason.contains("RLIMIT_MEMLOCK"), "{reason}");
        assert!(fixed_buffer_budget(32 << 10, small).is_ok());
        assert!(
            fixed_buffer_budget(
                32 << 20,
                Memlock {
                    cap_ipc_lock: true,
                    ..small
                }
            )
            .is_ok()
        );
        assert!(
            fixed_buffer_budget(
                32 << 20,
                Memlock {
                    soft_bytes: None,
                    ..small
                }
            )
            .is_ok()
        );
    }

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
