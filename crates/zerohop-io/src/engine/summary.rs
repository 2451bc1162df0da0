//! The run's report, assembled from what the workers measured.

use std::time::Instant;

use super::{Backend, WorkerOutcome};
use crate::config::ReadConfig;
use crate::env::Environment;
use crate::report::{
    EngineReport, Fallback, FirstDone, RunReport, RunStatus, TargetReport, VerifyReport,
    WorkerReport,
};
use crate::stats::{Latency, Stats, secs};
use crate::sys::CpuTimes;
use crate::target::Target;

fn engine_report(cfg: &ReadConfig, backend: Backend) -> EngineReport {
    EngineReport {
        backend: backend.name(),
        // A sink that reads the files itself (cuFile) bypasses the page cache.
        direct: cfg.direct || matches!(backend, Backend::Sink(_)),
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

/// The report of a run whose sink cannot run here.
pub(super) fn skipped(
    cfg: &ReadConfig,
    targets: &[Target],
    env: Environment,
    backend: Backend,
    reason: String,
) -> RunReport {
    RunReport {
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

/// How a run ended, besides what its workers measured.
pub(super) struct Ending {
    /// CPU time of the whole process after the ramp.
    pub(super) cpu: CpuTimes,
    /// When the measurement started.
    pub(super) ramp_end: Instant,
    /// Whether the stop flag cut the run short.
    pub(super) interrupted: bool,
}

/// The report of a run that went through.
pub(super) fn summarise(
    cfg: &ReadConfig,
    targets: &[Target],
    env: Environment,
    backend: Backend,
    mut fallbacks: Vec<Fallback>,
    outcomes: Vec<WorkerOutcome>,
    ending: Ending,
) -> RunReport {
    let Ending {
        cpu,
        ramp_end,
        interrupted,
    } = ending;
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
