//! The result of a run: one JSON document with fio-like field names, and the
//! human summary.

use std::io::{self, Write};
use std::path::PathBuf;

use serde::Serialize;

use crate::buffers::BufferKind;
use crate::config::{ReadConfig, SinkKind};
use crate::env::Environment;
use crate::stats::{Corruption, Latency};
use crate::target::{DeviceInfo, TargetKind};
use crate::units::format_bytes;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Everything asked for was read.
    Completed,
    /// Stopped early (Ctrl-C); the figures cover what was read.
    Interrupted,
    /// Not run: a capability is missing (see `skip_reason`).
    Skipped,
}

/// A feature that was asked for or tried and not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fallback {
    /// What was dropped, e.g. `fixed_buffers`.
    pub feature: String,
    /// Why, e.g. the kernel's answer.
    pub reason: String,
}

/// The backend and the features actually used.
#[derive(Debug, Clone, Serialize)]
pub struct EngineReport {
    /// `io_uring`, `pread` or `cufile`.
    pub backend: &'static str,
    /// `O_DIRECT` in use.
    pub direct: bool,
    /// Reads in flight per worker.
    pub queue_depth: u32,
    /// Reads queued per io_uring submission (io_uring only).
    pub submit_batch: Option<u32>,
    /// Workers.
    pub workers: u32,
    /// Bytes per read.
    pub block_size: u64,
    /// Registered (fixed) buffers in use by every worker.
    pub fixed_buffers: bool,
    /// Registered files in use by every worker.
    pub registered_files: bool,
    /// `IORING_SETUP_*` flags the rings were created with.
    pub ring_flags: Vec<&'static str>,
    /// Memory behind the buffers.
    pub buffers: Option<BufferKind>,
    /// NUMA node of the buffers, if placed.
    pub numa_node: Option<u32>,
    /// Where the data went.
    pub sink: SinkKind,
}

/// What one worker did.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerReport {
    /// Worker number.
    pub worker: usize,
    /// Bytes read after the ramp.
    pub bytes: u64,
    /// Reads completed after the ramp.
    pub ios: u64,
    /// From the end of the ramp to this worker's last completion.
    pub elapsed_s: f64,
    /// Bytes per second over `elapsed_s`.
    pub bw_bytes_per_s: f64,
    /// Reads per second over `elapsed_s`.
    pub iops: f64,
    /// User CPU of the worker's threads.
    pub cpu_user_s: f64,
    /// System CPU of the worker's threads.
    pub cpu_sys_s: f64,
    /// Read latency.
    pub latency_us: Latency,
    /// Reads that came back short and were resubmitted.
    pub short_reads: u64,
    /// Unaligned tails read without `O_DIRECT`.
    pub buffered_tails: u64,
}

/// A file or device of the run.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    /// The path.
    pub path: PathBuf,
    /// File or block device.
    pub kind: TargetKind,
    /// Length in bytes.
    pub len: u64,
    /// The device behind it.
    pub device: DeviceInfo,
}

/// The `--verify` outcome.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// Bytes compared with the pattern.
    pub checked_bytes: u64,
    /// Blocks that differed.
    pub corrupt_blocks: u64,
    /// The first corruption of each worker that saw one.
    pub corruptions: Vec<Corruption>,
}

/// The stonewall figures: when the first worker finished.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FirstDone {
    /// From the end of the ramp to the first worker's last completion.
    pub elapsed_s: f64,
    /// All bytes read by then divided by that time (approximated by the
    /// aggregate rate when workers are balanced).
    pub bw_bytes_per_s: f64,
}

/// The whole result of `zerohop bench read`.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// How the run ended.
    pub status: RunStatus,
    /// Why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// Bytes read after the ramp, all workers.
    pub bytes: u64,
    /// From the end of the ramp to the last completion.
    pub elapsed_s: f64,
    /// Aggregate bytes per second.
    pub bw_bytes_per_s: f64,
    /// Aggregate reads per second.
    pub iops: f64,
    /// User CPU of the whole process over the measured window.
    pub cpu_user_s: f64,
    /// System CPU of the whole process (io_uring kernel threads included).
    pub cpu_sys_s: f64,
    /// CPU seconds (user + system) per GB (10^9 bytes) read.
    pub cpu_s_per_gb: f64,
    /// Read latency, submit to completion.
    pub latency_us: Latency,
    /// Backend and features used.
    pub engine: EngineReport,
    /// Everything that was dropped, and why.
    pub fallbacks: Vec<Fallback>,
    /// The `--verify` outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyReport>,
    /// Figures at the time the first worker finished.
    pub first_done: FirstDone,
    /// What was asked for.
    pub job: ReadConfig,
    /// The files or devices read.
    pub targets: Vec<TargetReport>,
    /// Per-worker detail.
    pub workers: Vec<WorkerReport>,
    /// The machine.
    pub environment: Environment,
}

impl RunReport {
    /// Whether `--verify` found a corrupted block.
    pub fn verify_failed(&self) -> bool {
        self.verify.as_ref().is_some_and(|v| v.corrupt_blocks > 0)
    }

    /// Writes the human summary.
    pub fn write_human(&self, w: &mut dyn Write) -> io::Result<()> {
        let e = &self.engine;
        if self.status == RunStatus::Skipped {
            writeln!(
                w,
                "skipped: {}",
                self.skip_reason.as_deref().unwrap_or("unknown reason")
            )?;
            return Ok(());
        }
        let mut features = Vec::new();
        if e.fixed_buffers {
            features.push("fixed buffers".to_owned());
        }
        if e.registered_files {
            features.push("registered files".to_owned());
        }
        features.extend(e.ring_flags.iter().map(|f| f.to_lowercase()));
        writeln!(
            w,
            "engine     {} {} bs={} qd={}{} workers={} sink={}{}",
            e.backend,
            if e.direct { "O_DIRECT" } else { "buffered" },
            format_bytes(e.block_size as f64),
            e.queue_depth,
            e.submit_batch
                .map(|b| format!(" batch={b}"))
                .unwrap_or_default(),
            e.workers,
            e.sink,
            if features.is_empty() {
                String::new()
            } else {
                format!(" ({})", features.join(", "))
            }
        )?;
        if let Some(kind) = e.buffers {
            writeln!(
                w,
                "buffers    {kind}{}",
                e.numa_node
                    .map(|n| format!(" on NUMA node {n}"))
                    .unwrap_or_default()
            )?;
        }
        writeln!(
            w,
            "read       {} in {:.2} s{}",
            format_bytes(self.bytes as f64),
            self.elapsed_s,
            if self.status == RunStatus::Interrupted {
                " (interrupted)"
            } else {
                ""
            }
        )?;
        writeln!(
            w,
            "throughput {}/s, {:.0} IOPS",
            format_bytes(self.bw_bytes_per_s),
            self.iops
        )?;
        let l = &self.latency_us;
        writeln!(
            w,
            "latency    p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
            l.p50, l.p99, l.p999, l.max
        )?;
        writeln!(
            w,
            "cpu        {:.2} s user, {:.2} s sys, {:.3} s per GB",
            self.cpu_user_s, self.cpu_sys_s, self.cpu_s_per_gb
        )?;
        if self.workers.len() > 1 {
            for worker in &self.workers {
                writeln!(
                    w,
                    "  worker {:<3} {}/s, {:.0} IOPS, p99 {:.1} µs",
                    worker.worker,
                    format_bytes(worker.bw_bytes_per_s),
                    worker.iops,
                    worker.latency_us.p99
                )?;
            }
        }
        if let Some(v) = &self.verify {
            if v.corrupt_blocks == 0 {
                writeln!(
                    w,
                    "verify     ok, {} checked",
                    format_bytes(v.checked_bytes as f64)
                )?;
            } else {
                writeln!(
                    w,
                    "verify     FAILED: {} corrupt block(s)",
                    v.corrupt_blocks
                )?;
                for c in &v.corruptions {
                    writeln!(
                        w,
                        "  {}: block at offset {}, first wrong byte at offset {}",
                        c.path.display(),
                        c.block_offset,
                        c.offset
                    )?;
                }
            }
        }
        for f in &self.fallbacks {
            writeln!(w, "fallback   {}: {}", f.feature, f.reason)?;
        }
        Ok(())
    }
}
