//! Runs a read: checks the input, probes capabilities, starts the workers of
//! the chosen backend together and merges what they measured.

mod cufile;
mod pread;
mod uring;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use crate::buffers::{Arena, BufferKind};
use crate::config::{Amount, CachePolicy, EngineKind, NumaPolicy, ReadConfig, SinkKind};
use crate::env::Environment;
use crate::gpu::cuda::{CudaApi, CudaDevice, PinnedArena};
use crate::gpu::cufile::{CufileApi, CufileDriver, DRIVER_OPEN_TIMEOUT, FileHandle};
use crate::gpu::{LibraryStatus, Unavailable};
use crate::pattern;
use crate::plan::{self, Extent, Requests};
use crate::report::{
    EngineReport, Fallback, FirstDone, RunReport, RunStatus, TargetReport, VerifyReport,
    WorkerReport,
};
use crate::stats::{Latency, Stats, secs};
use crate::sys::{self, Who};
use crate::target::{self, InputError, Target};

pub use uring::{iopoll_probe_verdict, probe as probe_uring};

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

/// Largest block size accepted.
const MAX_BLOCK_SIZE: u64 = 1 << 30;
/// Largest total buffer memory accepted.
const MAX_BUFFER_BYTES: u64 = 16 << 30;

/// Checks the numbers of a configuration.
pub fn validate(cfg: &ReadConfig) -> Result<(), InputError> {
    let range = |option, reason: &str| InputError::OutOfRange {
        option,
        reason: reason.to_owned(),
    };
    if cfg.paths.is_empty() {
        return Err(InputError::NoPaths);
    }
    if cfg.workers == 0 || cfg.workers > 1024 {
        return Err(range("--workers", "must be between 1 and 1024"));
    }
    if cfg.queue_depth == 0 || cfg.queue_depth > 4096 {
        return Err(range("--qd", "must be between 1 and 4096"));
    }
    if cfg.submit_batch == 0 || cfg.submit_batch > cfg.queue_depth {
        return Err(range(
            "--submit-batch",
            "must be between 1 (each read at once) and --qd (a full queue at once)",
        ));
    }
    if cfg.block_size == 0 || cfg.block_size > MAX_BLOCK_SIZE {
        return Err(range("--bs", "must be between 1 byte and 1 GiB"));
    }
    let per_thread = if cfg.sink == SinkKind::Gpu && cfg.engine == EngineKind::Pread {
        2
    } else {
        1
    };
    let total = cfg.block_size * u64::from(cfg.queue_depth) * u64::from(cfg.workers) * per_thread;
    if total > MAX_BUFFER_BYTES {
        return Err(range(
            "--bs",
            &format!(
                "× --qd × --workers needs {total} bytes of buffers, more than the 16 GiB allowed; lower one of them"
            ),
        ));
    }
    match cfg.amount {
        Amount::Bytes(0) => return Err(range("--size", "must be more than 0")),
        Amount::Time(t) if t.is_zero() => return Err(range("--time", "must be more than 0")),
        _ => {}
    }
    if (cfg.iopoll || cfg.sqpoll) && cfg.engine == EngineKind::Pread {
        return Err(InputError::Conflict(
            "--sqpoll and --iopoll are io_uring options; use them with --engine uring".into(),
        ));
    }
    if cfg.iopoll && !cfg.direct {
        return Err(InputError::Conflict(
            "--iopoll needs --direct: io_uring polls for completions only on O_DIRECT reads".into(),
        ));
    }
    Ok(())
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
    pub(crate) gpu: Option<&'a CudaDevice>,
    pub(crate) cufile: Option<&'a [FileHandle<'a>]>,
    pub(crate) cufile_driver: Option<&'a CufileDriver>,
    pub(crate) numa_node: Option<u32>,
    pub(crate) fixed_buffers: bool,
    barrier: Barrier,
    start: OnceLock<Instant>,
}

impl<'a> Shared<'a> {
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

    pub(crate) fn amount_for(&self, index: usize) -> Amount {
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

/// A worker's buffers, pinned for the GPU when there is a GPU sink.
pub(crate) enum Buffers<'a> {
    /// Host memory only.
    Plain(Arena),
    /// Pinned with `cuMemHostRegister`.
    Pinned(PinnedArena<'a>),
}

impl Buffers<'_> {
    pub(crate) fn arena(&self) -> &Arena {
        match self {
            Buffers::Plain(a) => a,
            Buffers::Pinned(p) => p.arena(),
        }
    }

    pub(crate) fn arena_mut(&mut self) -> &mut Arena {
        match self {
            Buffers::Plain(a) => a,
            Buffers::Pinned(p) => p.arena_mut(),
        }
    }
}

/// Allocates a worker's buffers and pins them when the sink is a GPU.
pub(crate) fn buffers<'a>(
    shared: &Shared<'a>,
    bytes: usize,
    fallbacks: &mut Vec<Fallback>,
) -> Result<Buffers<'a>, RunError> {
    let arena = allocate(shared, bytes, fallbacks)?;
    match shared.gpu {
        None => Ok(Buffers::Plain(arena)),
        Some(device) => device
            .pin_arena(arena)
            .map(Buffers::Pinned)
            .map_err(|e| RunError::Setup(format!("cannot pin the host buffers for the GPU: {e}"))),
    }
}

/// Allocates a worker's buffers, turning allocation notes into fallbacks.
fn allocate(
    shared: &Shared<'_>,
    bytes: usize,
    fallbacks: &mut Vec<Fallback>,
) -> Result<Arena, RunError> {
    let mut notes = Vec::new();
    let arena = Arena::allocate(bytes, shared.cfg.hugepages, shared.numa_node, &mut notes)
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

pub(crate) fn fallback(feature: &str, reason: impl Into<String>) -> Fallback {
    Fallback {
        feature: feature.to_owned(),
        reason: reason.into(),
    }
}

/// The GPU side of a run, once probed.
enum SinkSetup {
    Host,
    Gpu(CudaDevice),
    Cufile(CudaDevice, CufileDriver),
}

fn open_gpu(cfg: &ReadConfig, env: &mut Environment) -> Result<SinkSetup, Unavailable> {
    if cfg.sink == SinkKind::Host {
        let why = "the sink is host memory";
        env.gpu.cuda = LibraryStatus::not_probed(why);
        env.gpu.cufile = LibraryStatus::not_probed(why);
        return Ok(SinkSetup::Host);
    }
    let device = CudaApi::load()
        .and_then(|api| CudaDevice::open(Arc::new(api), cfg.gpu))
        .inspect_err(|why| {
            env.gpu.cuda = LibraryStatus::unavailable(why);
            env.gpu.cufile =
                LibraryStatus::not_probed("CUDA found no GPU, so cuFile was not opened");
        })?;
    env.gpu.cuda = LibraryStatus {
        status: "usable",
        library: Some(device.library_name().to_owned()),
        version: Some(device.driver_version.clone()),
        device: Some(format!("{} ({})", device.name, device.pci_bus_id)),
        reason: None,
    };
    if cfg.sink == SinkKind::Gpu {
        env.gpu.cufile = LibraryStatus::not_probed("the sink copies through host memory");
        return Ok(SinkSetup::Gpu(device));
    }
    let cufile = open_cufile(&device);
    match cufile {
        Ok((driver, status)) => {
            env.gpu.cufile = status;
            Ok(SinkSetup::Cufile(device, driver))
        }
        Err(why) => {
            env.gpu.cufile = LibraryStatus::unavailable(&why);
            Err(why)
        }
    }
}

fn open_cufile(device: &CudaDevice) -> Result<(CufileDriver, LibraryStatus), Unavailable> {
    if std::fs::read_to_string("/proc/version")
        .is_ok_and(|v| v.to_lowercase().contains("microsoft"))
    {
        return Err(Unavailable(
            "GPUDirect Storage does not run under WSL".into(),
        ));
    }
    if std::fs::read_dir("/run/udev").is_err() {
        return Err(Unavailable(
            "/run/udev is not readable, which libcufile needs (mount it into the container)".into(),
        ));
    }
    if std::env::var_os("CUFILE_LOGFILE_PATH").is_none() {
        // libcufile otherwise writes cufile.log into the working directory.
        sys::set_cufile_log(&std::env::temp_dir().join("zerohop-cufile.log"));
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

/// Runs a read with the machine's own environment.
pub fn run_read(cfg: &ReadConfig, control: &Control) -> Result<RunReport, RunError> {
    run_read_in(cfg, control, Environment::probe())
}

/// Runs a read, taking capability decisions (locked-memory budget) from
/// `env`, so that tests can simulate a machine with other limits.
pub fn run_read_in(
    cfg: &ReadConfig,
    control: &Control,
    mut env: Environment,
) -> Result<RunReport, RunError> {
    validate(cfg)?;
    let targets: Vec<Target> = cfg
        .paths
        .iter()
        .map(|path| target::open_target(path, cfg.block_size, cfg.direct))
        .collect::<Result<_, _>>()?;
    let mut fallbacks = Vec::new();

    let uring_ok = match uring::probe(&mut env.io_uring) {
        Ok(()) => true,
        Err(reason) => {
            if cfg.engine == EngineKind::Uring && cfg.sink != SinkKind::Cufile {
                fallbacks.push(fallback(
                    "io_uring",
                    format!("{reason}; using the pread thread pool"),
                ));
            }
            false
        }
    };
    let backend = match (cfg.sink, cfg.engine) {
        (SinkKind::Cufile, _) => Backend::Cufile,
        (_, EngineKind::Uring) if uring_ok => Backend::Uring,
        _ => Backend::Pread,
    };

    let sink = match open_gpu(cfg, &mut env) {
        Ok(sink) => sink,
        Err(why) => return Ok(skipped(cfg, &targets, env, backend, why.0)),
    };
    let (gpu, driver) = match &sink {
        SinkSetup::Host => (None, None),
        SinkSetup::Gpu(device) => (Some(device), None),
        SinkSetup::Cufile(device, driver) => (Some(device), Some(driver)),
    };
    let handles: Option<Vec<FileHandle<'_>>> = match driver {
        None => None,
        Some(driver) => match targets
            .iter()
            .map(|t| driver.register(std::os::fd::AsRawFd::as_raw_fd(&t.file)))
            .collect()
        {
            Ok(handles) => Some(handles),
            Err(why) => return Ok(skipped(cfg, &targets, env, backend, why.0)),
        },
    };

    let numa_node = match cfg.numa {
        NumaPolicy::Off => None,
        NumaPolicy::Node(node) if env.numa_nodes.is_empty() || env.numa_nodes.contains(&node) => {
            Some(node)
        }
        NumaPolicy::Node(node) => {
            fallbacks.push(fallback(
                "numa_placement",
                format!(
                    "node {node} is not online (online: {})",
                    env.numa_nodes
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            None
        }
        NumaPolicy::Device => {
            let node = targets[0].device.numa_node;
            if node.is_none() {
                fallbacks.push(fallback(
                    "numa_placement",
                    "the device reports no NUMA node (numa_node is -1 or absent in sysfs)",
                ));
            }
            node
        }
    };

    if !cfg.direct && cfg.cache == CachePolicy::Drop {
        for t in &targets {
            if let Err(err) = sys::drop_cached_pages(&t.file) {
                fallbacks.push(fallback(
                    "drop_cache",
                    format!(
                        "{}: posix_fadvise(DONTNEED) failed: {err}",
                        t.path.display()
                    ),
                ));
            }
        }
    }

    // Fixed buffers are charged to RLIMIT_MEMLOCK for all workers together.
    let mut fixed_buffers = cfg.fixed_buffers && backend == Backend::Uring;
    if fixed_buffers {
        let needed = cfg.block_size * u64::from(cfg.queue_depth) * u64::from(cfg.workers);
        if let Err(reason) = uring::fixed_buffer_budget(needed, env.memlock) {
            fallbacks.push(fallback("fixed_buffers", reason));
            fixed_buffers = false;
        }
    }

    let lens: Vec<u64> = targets.iter().map(|t| t.len).collect();
    let plan = plan::assign(&lens, cfg.workers as usize, cfg.block_size, cfg.pattern);
    let shared = Shared {
        cfg,
        targets: &targets,
        stop: &control.stop,
        progress: &control.progress,
        gpu,
        cufile: handles.as_deref(),
        cufile_driver: driver,
        numa_node,
        fixed_buffers,
        barrier: Barrier::new(plan.len() + 1),
        start: OnceLock::new(),
    };
    let (results, cpu, ramp_end) = std::thread::scope(|scope| {
        let workers: Vec<_> = plan
            .into_iter()
            .enumerate()
            .map(|(index, extents)| {
                let shared = &shared;
                scope.spawn(move || run_worker(backend, shared, index, extents))
            })
            .collect();
        let clock = shared.begin(false);
        let mut cpu_start = sys::cpu_times(Who::Process);
        while Instant::now() < clock.ramp_end && !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(
                Duration::from_millis(5)
                    .min(clock.ramp_end.saturating_duration_since(Instant::now())),
            );
            cpu_start = sys::cpu_times(Who::Process);
        }
        let results = join_all(workers, "worker");
        (
            results,
            sys::cpu_times(Who::Process).since(cpu_start),
            clock.ramp_end,
        )
    });
    let mut outcomes = Vec::new();
    for result in results {
        outcomes.push(result?);
    }
    drop(handles);
    let interrupted = control.stop.load(Ordering::Relaxed);
    Ok(summarise(
        cfg,
        &targets,
        env,
        backend,
        fallbacks,
        outcomes,
        cpu,
        ramp_end,
        interrupted,
    ))
}

/// The backend that actually runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Uring,
    Pread,
    Cufile,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Uring => "io_uring",
            Backend::Pread => "pread",
            Backend::Cufile => "cufile",
        }
    }
}

fn run_worker(
    backend: Backend,
    shared: &Shared<'_>,
    index: usize,
    extents: Vec<Extent>,
) -> Result<WorkerOutcome, RunError> {
    let result = match backend {
        Backend::Uring => uring::worker(shared, index, extents),
        Backend::Pread => pread::worker(shared, index, extents),
        Backend::Cufile => cufile::worker(shared, index, extents),
    };
    if result.is_err() {
        shared.stop.store(true, Ordering::Relaxed);
    }
    result
}

fn engine_report(cfg: &ReadConfig, backend: Backend) -> EngineReport {
    EngineReport {
        backend: backend.name(),
        direct: cfg.direct || backend == Backend::Cufile,
        queue_depth: cfg.queue_depth,
        submit_batch: (backend == Backend::Uring).then_some(cfg.submit_batch),
        workers: cfg.workers,
        block_size: cfg.block_size,
        fixed_buffers: false,
        registered_files: false,
        ring_flags: Vec::new(),
        buffers: None,
        numa_node: None,
        sink: cfg.sink,
    }
}

fn target_reports(targets: &[Target]) -> Vec<TargetReport> {
    targets
        .iter()
        .map(|t| TargetReport {
            path: t.path.clone(),
            kind: t.kind,
            len: t.len,
            device: t.device.clone(),
        })
        .collect()
}

fn skipped(
    cfg: &ReadConfig,
    targets: &[Target],
    env: Environment,
    backend: Backend,
    reason: String,
) -> RunReport {
    RunReport {
        schema_version: crate::report::SCHEMA_VERSION,
        status: RunStatus::Skipped,
        skip_reason: Some(reason),
        bytes: 0,
        elapsed_s: 0.0,
        bw_bytes_per_s: 0.0,
        iops: 0.0,
        cpu_user_s: 0.0,
        cpu_sys_s: 0.0,
        cpu_s_per_gb: 0.0,
        latency_us: Latency::default(),
        engine: engine_report(cfg, backend),
        fallbacks: Vec::new(),
        verify: None,
        first_done: FirstDone {
            elapsed_s: 0.0,
            bw_bytes_per_s: 0.0,
        },
        job: cfg.clone(),
        targets: target_reports(targets),
        workers: Vec::new(),
        environment: env,
    }
}

fn rate(amount: f64, seconds: f64) -> f64 {
    if seconds > 0.0 { amount / seconds } else { 0.0 }
}

#[expect(
    clippy::too_many_arguments,
    reason = "assembles the report from every part of the run"
)]
fn summarise(
    cfg: &ReadConfig,
    targets: &[Target],
    env: Environment,
    backend: Backend,
    mut fallbacks: Vec<Fallback>,
    outcomes: Vec<WorkerOutcome>,
    cpu: sys::CpuTimes,
    ramp_end: Instant,
    interrupted: bool,
) -> RunReport {
    let mut engine = engine_report(cfg, backend);
    engine.fixed_buffers = !outcomes.is_empty() && outcomes.iter().all(|o| o.fixed_buffers);
    engine.registered_files = !outcomes.is_empty() && outcomes.iter().all(|o| o.registered_files);
    engine.ring_flags = outcomes
        .first()
        .map(|o| o.ring_flags.clone())
        .unwrap_or_default();
    engine.buffers = outcomes.first().and_then(|o| o.buffers);
    engine.numa_node = outcomes.first().and_then(|o| o.numa_node);
    let mut total = Stats::new(ramp_end);
    let mut workers = Vec::new();
    let mut corruptions = Vec::new();
    let mut first_done: Option<f64> = None;
    for (index, outcome) in outcomes.iter().enumerate() {
        for f in &outcome.fallbacks {
            if !fallbacks.contains(f) {
                fallbacks.push(f.clone());
            }
        }
        let s = &outcome.stats;
        total.merge(s);
        corruptions.extend(s.first_corruption.clone());
        let elapsed = s
            .finished
            .map_or(0.0, |f| secs(f.saturating_duration_since(ramp_end)));
        if s.ios > 0 {
            first_done = Some(first_done.map_or(elapsed, |f: f64| f.min(elapsed)));
        }
        workers.push(WorkerReport {
            worker: index,
            bytes: s.bytes,
            ios: s.ios,
            elapsed_s: elapsed,
            bw_bytes_per_s: rate(s.bytes as f64, elapsed),
            iops: rate(s.ios as f64, elapsed),
            cpu_user_s: secs(s.cpu.user),
            cpu_sys_s: secs(s.cpu.system),
            latency_us: Latency::from_histogram(&s.latency_ns),
            short_reads: s.short_reads,
            buffered_tails: s.buffered_tails,
        });
    }
    fallbacks.extend(crate::segments::split_reads(
        cfg.direct,
        cfg.block_size,
        engine.buffers,
        env.hugepages.thp.as_deref(),
        targets.iter().map(|t| &t.device),
    ));
    let elapsed = total
        .finished
        .map_or(0.0, |f| secs(f.saturating_duration_since(ramp_end)));
    let cpu_total = secs(cpu.user) + secs(cpu.system);
    RunReport {
        schema_version: crate::report::SCHEMA_VERSION,
        status: if interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Completed
        },
        skip_reason: None,
        bytes: total.bytes,
        elapsed_s: elapsed,
        bw_bytes_per_s: rate(total.bytes as f64, elapsed),
        iops: rate(total.ios as f64, elapsed),
        cpu_user_s: secs(cpu.user),
        cpu_sys_s: secs(cpu.system),
        cpu_s_per_gb: rate(cpu_total, total.bytes as f64 / 1e9),
        latency_us: Latency::from_histogram(&total.latency_ns),
        engine,
        fallbacks,
        verify: cfg.verify.then_some(VerifyReport {
            checked_bytes: total.verified_bytes,
            corrupt_blocks: total.corrupt_blocks,
            corruptions,
        }),
        first_done: FirstDone {
            elapsed_s: first_done.unwrap_or(0.0),
            bw_bytes_per_s: workers.iter().map(|w| w.bw_bytes_per_s).sum(),
        },
        job: cfg.clone(),
        targets: target_reports(targets),
        workers,
        environment: env,
    }
}
