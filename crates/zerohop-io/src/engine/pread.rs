//! The pread backend: each worker runs a pool of `qd` threads issuing
//! blocking `pread`s, so it keeps as many reads in flight as a ring would.
//! It is the fallback when io_uring is unavailable and the baseline to
//! compare it with.

use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::time::Instant;

use super::{Clock, RunError, Shared, WorkerOutcome};
use crate::plan::{Extent, Request, Requests};
use crate::sink::{self, BufferSink};
use crate::stats::Stats;

/// One worker and its thread pool.
pub(super) fn worker(
    shared: &Shared<'_>,
    sink: &dyn BufferSink,
    index: usize,
    extents: Vec<Extent>,
) -> Result<WorkerOutcome, RunError> {
    let cfg = shared.cfg;
    let threads = cfg.queue_depth as usize;
    let bs = cfg.block_size as usize;
    // A sink that goes on reading a slot after the hand-over (a GPU copy)
    // gives each thread more than one, read into in turn.
    let per_thread = sink::spec(cfg.sink).slots_per_reader as usize;
    let mut fallbacks = Vec::new();
    let mut buffers = shared
        .arena(threads * per_thread * bs, &mut fallbacks)
        .and_then(|arena| sink.hold(arena))
        .map_err(|err| shared.setup_failed(err))?;
    let kind = buffers.arena().kind();
    let numa_node = buffers.arena().numa_node();
    let clock = shared.begin(false);
    let requests = Mutex::new(shared.requests(extents, index, &clock));
    let memory = buffers.arena_mut().as_mut_slice();
    let results: Vec<Result<Stats, RunError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = memory
            .chunks_exact_mut(per_thread * bs)
            .take(threads)
            .map(|chunk| {
                let requests = &requests;
                scope.spawn(move || reader(shared, sink, requests, chunk, clock))
            })
            .collect();
        super::join_all(handles, "reader")
    });
    let mut stats = Stats::new(clock.ramp_end);
    for result in results {
        stats.merge(&result?);
    }
    drop(buffers);
    Ok(WorkerOutcome {
        stats,
        fallbacks,
        fixed_buffers: false,
        registered_files: false,
        ring_flags: Vec::new(),
        buffers: Some(kind),
        numa_node,
    })
}

/// Reads `request` into `buf` with blocking preads, finishing short reads.
fn read_block(
    shared: &Shared<'_>,
    request: Request,
    buf: &mut [u8],
    stats: &mut Stats,
) -> Result<(), RunError> {
    let target = &shared.targets[request.target];
    let unaligned_tail = shared.cfg.direct && !request.len.is_multiple_of(target.alignment);
    let file = match (&target.buffered, unaligned_tail) {
        (Some(buffered), true) => {
            stats.buffered_tails += 1;
            buffered
        }
        _ => &target.file,
    };
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], request.offset + done as u64) {
            Ok(0) => {
                return Err(shared.read_error(
                    request.target,
                    request.offset + done as u64,
                    request.len - done as u64,
                    std::io::ErrorKind::UnexpectedEof.into(),
                ));
            }
            Ok(n) => {
                if n < buf.len() - done {
                    stats.short_reads += 1;
                }
                done += n;
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => {
                return Err(shared.read_error(
                    request.target,
                    request.offset + done as u64,
                    request.len,
                    err,
                ));
            }
        }
    }
    Ok(())
}

/// One thread of the pool: reads into its slots in turn and hands each
/// block to the sink.
fn reader(
    shared: &Shared<'_>,
    sink: &dyn BufferSink,
    requests: &Mutex<Requests<'_>>,
    chunk: &mut [u8],
    clock: Clock,
) -> Result<Stats, RunError> {
    let bs = shared.cfg.block_size as usize;
    let mut stats = Stats::new(clock.ramp_end);
    let mut lane = sink.reader_lane(chunk.chunks_exact_mut(bs).collect())?;
    let next = || requests.lock().ok().and_then(|mut r| r.next());
    let mut k = 0;
    while let Some(request) = next() {
        let submitted = Instant::now();
        let len = request.len as usize;
        let buf = &mut lane.slot(k)?[..len];
        read_block(shared, request, buf, &mut stats)?;
        shared.verify(&mut stats, request.target, request.offset, buf);
        lane.deliver(k, len)?;
        stats.record(submitted, Instant::now(), request.len);
        shared.progressed(request.len);
        k = (k + 1) % lane.slots();
    }
    // A sink's lane finishes what it was handed (a GPU's copies) here.
    drop(lane);
    stats.finish_thread();
    Ok(stats)
}
