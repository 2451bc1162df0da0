//! The `cufile` sink: GPUDirect Storage. cuFile reads the files itself,
//! straight into registered GPU buffers, with `--qd` threads per worker
//! calling `cuFileRead`; no host buffer is involved.

use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use zerohop_host::HostRoot;

use super::{DirectReader, DirectSink, Route, SinkSpec};
use crate::config::ReadConfig;
use crate::env::Environment;
use crate::gpu::cuda::{CudaDevice, CudaError};
use crate::gpu::cufile::{CufileApi, CufileDriver, DRIVER_OPEN_TIMEOUT, FileHandle};
use crate::gpu::{LibraryStatus, Unavailable};
use crate::plan::Extent;
use crate::stats::Stats;
use crate::target::Target;
use crate::worker::{RunError, Shared, WorkerOutcome, fallback};

/// What the engine knows of this sink before opening it.
pub(super) static SPEC: SinkSpec = SinkSpec {
    // One GPU buffer of a block per thread; no host slot.
    slots_per_reader: 1,
    route: Route::Direct("cufile", open),
};

fn open(
    cfg: &ReadConfig,
    root: &HostRoot,
    env: &mut Environment,
) -> Result<Box<dyn DirectSink>, Unavailable> {
    let device = super::gpu::open_device(cfg, env)?;
    match open_driver(root, &device) {
        Ok((driver, status)) => {
            env.gpu.cufile = status;
            Ok(Box::new(CufileSink { device, driver }))
        }
        Err(why) => {
            env.gpu.cufile = LibraryStatus::unavailable(&why);
            Err(why)
        }
    }
}

/// Loads libcufile and opens its driver, once CUDA found a GPU and the
/// host can run GPUDirect Storage.
fn open_driver(
    root: &HostRoot,
    device: &CudaDevice,
) -> Result<(CufileDriver, LibraryStatus), Unavailable> {
    if root
        .read("/proc/version")
        .ok()
        .flatten()
        .is_some_and(|v| v.to_lowercase().contains("microsoft"))
    {
        return Err(Unavailable(
            "GPUDirect Storage does not run under WSL".into(),
        ));
    }
    if !matches!(root.list("/run/udev"), Ok(Some(_))) {
        return Err(Unavailable(
            "/run/udev is not readable, which libcufile needs (mount it into the container)".into(),
        ));
    }
    let api = CufileApi::load()?;
    let status = LibraryStatus {
        status: "usable",
        library: Some(api.library_name().to_owned()),
        version: api.version(),
        device: None,
        reason: None,
    };
    let driver = CufileDriver::open(Arc::new(api), device, DRIVER_OPEN_TIMEOUT)?;
    Ok((driver, status))
}

/// A GPU with the cuFile driver open.
struct CufileSink {
    device: CudaDevice,
    driver: CufileDriver,
}

impl DirectSink for CufileSink {
    fn attach<'a>(
        &'a self,
        targets: &'a [Target],
    ) -> Result<Box<dyn DirectReader + 'a>, Unavailable> {
        let handles = targets
            .iter()
            .map(|t| self.driver.register(t.file.as_raw_fd()))
            .collect::<Result<_, _>>()?;
        Ok(Box::new(CufileReader {
            device: &self.device,
            driver: &self.driver,
            handles,
        }))
    }
}

/// The run's targets registered with cuFile, one handle per target.
struct CufileReader<'a> {
    device: &'a CudaDevice,
    driver: &'a CufileDriver,
    handles: Vec<FileHandle<'a>>,
}

impl DirectReader for CufileReader<'_> {
    fn worker(
        &self,
        shared: &Shared<'_>,
        index: usize,
        extents: Vec<Extent>,
    ) -> Result<WorkerOutcome, RunError> {
        let cfg = shared.cfg;
        let clock = shared.begin(false);
        let requests = Mutex::new(shared.requests(extents, index, &clock));
        let results: Vec<Result<(Stats, bool), RunError>> = std::thread::scope(|scope| {
            let requests = &requests;
            let threads: Vec<_> = (0..cfg.queue_depth)
                .map(|_| scope.spawn(move || self.thread(shared, requests, clock.ramp_end)))
                .collect();
            crate::worker::join_all(threads, "cuFile")
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
}

impl CufileReader<'_> {
    /// One thread: reads blocks into its own GPU buffer until the requests
    /// run out; says whether cuFile registered that buffer.
    fn thread(
        &self,
        shared: &Shared<'_>,
        requests: &Mutex<crate::plan::Requests<'_>>,
        ramp_end: Instant,
    ) -> Result<(Stats, bool), RunError> {
        let cfg = shared.cfg;
        let setup = |e: CudaError| RunError::Setup(e.to_string());
        self.device.make_current().map_err(setup)?;
        let buffer = self.device.alloc(cfg.block_size as usize).map_err(setup)?;
        let registered = self
            .driver
            .register_buffer(buffer.ptr(), cfg.block_size as usize);
        let mut stats = Stats::new(ramp_end);
        let mut host = if cfg.verify {
            vec![0u8; cfg.block_size as usize]
        } else {
            Vec::new()
        };
        let next = || requests.lock().ok().and_then(|mut r| r.next());
        while let Some(request) = next() {
            let submitted = Instant::now();
            let n = self.handles[request.target].read(
                buffer.ptr(),
                request.len as usize,
                request.offset,
            );
            if n < 0 || n as u64 != request.len {
                let err = std::io::Error::other(format!("cuFileRead returned {n}"));
                return Err(shared.read_error(request.target, request.offset, request.len, err));
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
            self.driver.deregister_buffer(buffer.ptr());
        }
        stats.finish_thread();
        Ok((stats, registered))
    }
}
