//! The cuFile backend: each worker runs `qd` threads calling `cuFileRead`
//! straight into a registered GPU buffer (GPUDirect Storage).

use std::sync::Mutex;
use std::time::Instant;

use super::{RunError, Shared, WorkerOutcome, fallback};
use crate::plan::Extent;
use crate::stats::Stats;

/// One worker and its threads.
pub(super) fn worker(
    shared: &Shared<'_>,
    index: usize,
    extents: Vec<Extent>,
) -> Result<WorkerOutcome, RunError> {
    let cfg = shared.cfg;
    let (Some(device), Some(handles), Some(driver)) =
        (shared.gpu, shared.cufile, shared.cufile_driver)
    else {
        return Err(shared.setup_failed(RunError::Setup("cuFile was not opened".into())));
    };
    let clock = shared.begin(false);
    let requests = Mutex::new(shared.requests(extents, index, &clock));
    let results: Vec<Result<(Stats, bool), RunError>> = std::thread::scope(|scope| {
        let handles_ref = &handles;
        let requests = &requests;
        let threads: Vec<_> = (0..cfg.queue_depth)
            .map(|_| {
                scope.spawn(move || -> Result<(Stats, bool), RunError> {
                    let setup = |e: crate::gpu::cuda::CudaError| RunError::Setup(e.to_string());
                    device.make_current().map_err(setup)?;
                    let buffer = device.alloc(cfg.block_size as usize).map_err(setup)?;
                    let registered = driver.register_buffer(buffer.ptr(), cfg.block_size as usize);
                    let mut stats = Stats::new(clock.ramp_end);
                    let mut host = if cfg.verify {
                        vec![0u8; cfg.block_size as usize]
                    } else {
                        Vec::new()
                    };
                    let next = || requests.lock().ok().and_then(|mut r| r.next());
                    while let Some(request) = next() {
                        let submitted = Instant::now();
                        let n = handles_ref[request.target].read(
                            buffer.ptr(),
                            request.len as usize,
                            request.offset,
                        );
                        if n < 0 || n as u64 != request.len {
                            let err = std::io::Error::other(format!("cuFileRead returned {n}"));
                            return Err(shared.read_error(
                                request.target,
                                request.offset,
                                request.len,
                                err,
                            ));
                        }
                        let now = Instant::now();
                        if cfg.verify {
                            let out = &mut host[..request.len as usize];
                            buffer.copy_to_host(out).map_err(setup)?;
                            shared.verify(&mut stats, request.target, request.offset, out);
                        }
                        stats.record(submitted, now, request.len);
                        shared.progressed(request.len);
                    }
                    if registered {
                        driver.deregister_buffer(buffer.ptr());
                    }
                    stats.finish_thread();
                    Ok((stats, registered))
                })
            })
            .collect();
        super::join_all(threads, "cuFile")
    });
    let mut stats = Stats::new(clock.ramp_end);
    let mut all_registered = true;
    for result in results {
        let (s, registered) = result?;
        all_registered &= registered;
        stats.merge(&s);
    }
    let mut fallbacks = Vec::new();
    if !all_registered {
        fallbacks.push(fallback(
            "cufile_buffer_registration",
            "cuFileBufRegister refused a buffer; reads used cuFile's bounce buffers",
        ));
    }
    Ok(WorkerOutcome {
        stats,
        fallbacks,
        fixed_buffers: all_registered,
        registered_files: true,
        ring_flags: Vec::new(),
        buffers: None,
        numa_node: None,
    })
}
