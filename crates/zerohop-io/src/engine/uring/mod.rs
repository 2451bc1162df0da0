//! The io_uring backend: one ring per worker with `qd` reads in flight,
//! fixed buffers and registered files, optional SQPOLL and IOPOLL, each
//! dropped with the kernel's reason when refused.

mod probe;
mod ring;
mod run;
mod slots;

use std::io;
use std::time::{Duration, Instant};

use super::{RunError, Shared, WorkerOutcome, fallback};
use crate::buffers::Arena;
use crate::plan::Extent;
use crate::report::Fallback;
use crate::sink::BufferSink;
use ring::Ring;

pub use probe::{fixed_buffer_budget, iopoll_probe_verdict, probe};

/// One worker: sets up its buffers, ring and sink lane, waits for the
/// others, then keeps `qd` reads in flight.
pub(super) fn worker(
    shared: &Shared<'_>,
    sink: &dyn BufferSink,
    index: usize,
    extents: Vec<Extent>,
) -> Result<WorkerOutcome, RunError> {
    let cfg = shared.cfg;
    let mut fallbacks = Vec::new();
    let (qd, bs) = (cfg.queue_depth as usize, cfg.block_size as usize);
    let buffers = shared
        .arena(bs * qd, &mut fallbacks)
        .and_then(|arena| sink.hold(arena))
        .map_err(|err| shared.setup_failed(err))?;
    let arena = buffers.arena();
    let ready = setup(shared, &extents, arena, &mut fallbacks)
        .and_then(|ring| Ok((ring, sink.queue_lane(arena, qd, bs)?)));
    let clock = shared.begin(ready.is_err());
    let (mut ring, lane) = ready?;
    let stats = run::run(shared, index, extents, arena, &mut ring, lane, clock)?;
    let outcome = WorkerOutcome {
        stats,
        fallbacks,
        fixed_buffers: ring.fixed_buffers,
        registered_files: ring.registered_files,
        ring_flags: ring.flags.clone(),
        buffers: Some(arena.kind()),
        numa_node: arena.numa_node(),
    };
    // The ring's registrations go before the memory they point at.
    drop(ring);
    drop(buffers);
    Ok(outcome)
}

/// The worker's ring; with IOPOLL asked, one test read shows whether the
/// device can poll, and the ring is made again without it when it cannot.
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
            let deadline = Instant::now() + Duration::from_secs(2);
            loop {
                ring.submit_and_wait()?;
                if let Some(result) = ring.next_result() {
                    return Ok(result);
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
