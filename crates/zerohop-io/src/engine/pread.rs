//! The pread backend: each worker runs a pool of `qd` threads issuing
//! blocking `pread`s, so it keeps as many reads in flight as a ring would.
//! It is the fallback when io_uring is unavailable and the baseline to
//! compare it with.

use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::time::Instant;

use super::{Clock, RunError, Shared, WorkerOutcome};
use crate::gpu::cuda::StagingPair;
use crate::plan::{Extent, Request, Requests};
use crate::stats::Stats;

/// One worker and its thread pool.
pub(super) fn worker(
    shared: &Shared<'_>,
    index: usize,
    extents: Vec<Extent>,
) -> Result<WorkerOutcome, RunError> {
    let cfg = shared.cfg;
    let threads = cfg.queue_depth as usize;
    let bs = cfg.block_size as usize;
    // A GPU sink gives each thread two slots: one is read into while the
    // other is copied to the GPU.
    let per_thread = if shared.gpu.is_some() { 2 } else { 1 };
    let mut fallbacks = Vec::new();
    let mut buffers = super::buffers(shared, threads * per_thread * bs, &mut fallbacks)
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
                scope.spawn(move || reader(shared, requests, chunk, clock))
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

/// One thread of the pool.
fn reader(
    shared: &Shared<'_>,
    requests: &Mutex<Requests<'_>>,
    chunk: &mut [u8],
    clock: Clock,
) -> Result<Stats, RunError> {
    let mut stats = Stats::new(clock.ramp_end);
    let next = || requests.lock().ok().and_then(|mut r| r.next());
    match shared.gpu {
        None => {
            while let Some(request) = next() {
                let submitted = Instant::now();
                let buf = &mut chunk[..request.len as usize];
                read_block(shared, request, buf, &mut stats)?;
                shared.verify(&mut stats, request.target, request.offset, buf);
                stats.record(submitted, Instant::now(), request.len);
                shared.progressed(request.len);
            }
        }
        Some(device) => {
            device
                .make_current()
                .map_err(|e| RunError::Setup(e.to_string()))?;
            let (a, b) = chunk.split_at_mut(chunk.len() / 2);
            let mut pair =
                StagingPair::new(device, [a, b]).map_err(|e| RunError::Setup(e.to_string()))?;
            let mut k = 0;
            while let Some(request) = next() {
                let submitted = Instant::now();
                let slot = pair.slot(k).map_err(|e| RunError::Setup(e.to_string()))?;
                let buf = &mut slot[..request.len as usize];
                read_block(shared, request, buf, &mut stats)?;
                shared.verify(&mut stats, request.target, request.offset, buf);
                pair.start_copy(k, request.len as usize)
                    .map_err(|e| RunError::Setup(e.to_string()))?;
                stats.record(submitted, Instant::now(), request.len);
                shared.progressed(request.len);
                k ^= 1;
            }
        }
    }
    stats.finish_thread();
    Ok(stats)
}
