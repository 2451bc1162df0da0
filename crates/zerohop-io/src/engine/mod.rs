//! Runs a read: checks the input, probes capabilities, opens the sink,
//! starts the workers of the chosen backend together and merges what they
//! measured.

mod pread;
mod setup;
mod summary;
mod uring;
mod validate;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use zerohop_host::HostRoot;

use crate::config::{EngineKind, ReadConfig};
use crate::env::Environment;
use crate::plan::{self, Extent};
use crate::report::RunReport;
use crate::sink::{self, BufferSink, DirectReader, DirectSink, Route};
use crate::sys::{self, Who};
use crate::target::{self, Target};

pub(crate) use crate::worker::{Clock, Shared, WorkerOutcome, fallback, join_all};
pub use crate::worker::{Control, RunError};
pub use uring::{iopoll_probe_verdict, probe as probe_uring};
pub use validate::validate;

/// The backend that actually runs, as the report names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// One io_uring per worker.
    Uring,
    /// A pread thread pool per worker.
    Pread,
    /// A sink that reads the files itself, by its backend's name.
    Sink(&'static str),
}

impl Backend {
    /// Its name in the report.
    fn name(self) -> &'static str {
        match self {
            Backend::Uring => "io_uring",
            Backend::Pread => "pread",
            Backend::Sink(name) => name,
        }
    }
}

/// Who runs the workers.
enum Workers<'a> {
    /// io_uring workers reading for a sink.
    Uring(&'a dyn BufferSink),
    /// pread pools reading for a sink.
    Pread(&'a dyn BufferSink),
    /// A sink reading the files itself.
    Direct(Box<dyn DirectReader + 'a>),
}

impl Workers<'_> {
    /// Runs worker `index`; a failure stops the others.
    fn run(
        &self,
        shared: &Shared<'_>,
        index: usize,
        extents: Vec<Extent>,
    ) -> Result<WorkerOutcome, RunError> {
        let result = match self {
            Workers::Uring(sink) => uring::worker(shared, *sink, index, extents),
            Workers::Pread(sink) => pread::worker(shared, *sink, index, extents),
            Workers::Direct(reader) => reader.worker(shared, index, extents),
        };
        if result.is_err() {
            shared.stop.store(true, Ordering::Relaxed);
        }
        result
    }
}

/// Runs a read on the machine it runs on.
pub fn run_read(cfg: &ReadConfig, control: &Control) -> Result<RunReport, RunError> {
    let root = HostRoot::live();
    let env = Environment::probe(&root);
    run_read_in(cfg, control, &root, env)
}

/// Runs a read, reading the host through `root` and taking capability
/// decisions (locked-memory budget) from `env`, so that tests can simulate
/// a machine with other limits.
pub fn run_read_in(
    cfg: &ReadConfig,
    control: &Control,
    root: &HostRoot,
    mut env: Environment,
) -> Result<RunReport, RunError> {
    validate(cfg)?;
    let targets: Vec<Target> = cfg
        .paths
        .iter()
        .map(|path| target::open_target(root, path, cfg.block_size, cfg.direct))
        .collect::<Result<_, _>>()?;
    let spec = sink::spec(cfg.sink);
    let mut fallbacks = Vec::new();

    let uring_ok = match uring::probe(&mut env.io_uring) {
        Ok(()) => true,
        Err(reason) => {
            if cfg.engine == EngineKind::Uring && matches!(spec.route, Route::Buffers(_)) {
                fallbacks.push(fallback(
                    "io_uring",
                    format!("{reason}; using the pread thread pool"),
                ));
            }
            false
        }
    };
    let backend = match spec.route {
        Route::Direct(name, _) => Backend::Sink(name),
        Route::Buffers(_) if cfg.engine == EngineKind::Uring && uring_ok => Backend::Uring,
        Route::Buffers(_) => Backend::Pread,
    };

    // Declared here so that the workers, which borrow them, drop first.
    let buffer_sink: Box<dyn BufferSink>;
    let direct_sink: Box<dyn DirectSink>;
    let workers = match spec.route {
        Route::Buffers(open) => {
            buffer_sink = match open(cfg, root, &mut env) {
                Ok(sink) => sink,
                Err(why) => return Ok(summary::skipped(cfg, &targets, env, backend, why.0)),
            };
            if backend == Backend::Uring {
                Workers::Uring(&*buffer_sink)
            } else {
                Workers::Pread(&*buffer_sink)
            }
        }
        Route::Direct(_, open) => {
            direct_sink = match open(cfg, root, &mut env) {
                Ok(sink) => sink,
                Err(why) => return Ok(summary::skipped(cfg, &targets, env, backend, why.0)),
            };
            match direct_sink.attach(&targets) {
                Ok(reader) => Workers::Direct(reader),
                Err(why) => return Ok(summary::skipped(cfg, &targets, env, backend, why.0)),
            }
        }
    };

    let numa_node = setup::numa_node(cfg, &env, &targets, &mut fallbacks);
    setup::drop_caches(cfg, &targets, &mut fallbacks);
    let fixed_buffers = setup::fixed_buffers(cfg, backend == Backend::Uring, &env, &mut fallbacks);

    let lens: Vec<u64> = targets.iter().map(|t| t.len).collect();
    let plan = plan::assign(&lens, cfg.workers as usize, cfg.block_size, cfg.pattern);
    let shared = Shared::new(
        cfg,
        &targets,
        control,
        root,
        numa_node,
        fixed_buffers,
        plan.len(),
    );
    let (results, cpu, ramp_end) = std::thread::scope(|scope| {
        let threads: Vec<_> = plan
            .into_iter()
            .enumerate()
            .map(|(index, extents)| {
                let (shared, workers) = (&shared, &workers);
                scope.spawn(move || workers.run(shared, index, extents))
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
        let results = join_all(threads, "worker");
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
    drop(workers);
    let interrupted = control.stop.load(Ordering::Relaxed);
    Ok(summary::summarise(
        cfg,
        &targets,
        env,
        backend,
        fallbacks,
        outcomes,
        summary::Ending {
            cpu,
            ramp_end,
            interrupted,
        },
    ))
}
