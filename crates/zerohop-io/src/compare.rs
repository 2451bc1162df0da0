//! `zerohop bench compare`: the same data read path by path, from the
//! buffered page-cache route to GPUDirect Storage, so that each hop's cost
//! (throughput, latency, CPU seconds per GB) shows side by side.

use std::io::{self, Write};
use std::sync::atomic::Ordering;

use serde::Serialize;
use zerohop_host::HostRoot;

use crate::config::{EngineKind, ReadConfig, SinkKind};
use crate::engine::{self, Control, RunError};
use crate::env::Environment;
use crate::report::{Fallback, RunReport, RunStatus};
use crate::target::{self, InputError};
use crate::units::format_bytes;

/// One path of the table.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// Short name, e.g. `direct_uring`.
    pub name: &'static str,
    /// What the path is.
    pub description: &'static str,
    /// `completed`, `interrupted` or `skipped`.
    pub status: RunStatus,
    /// Why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Bytes per second.
    pub bw_bytes_per_s: f64,
    /// Median read latency.
    pub p50_us: f64,
    /// 99th percentile read latency.
    pub p99_us: f64,
    /// CPU seconds (user + system) per GB.
    pub cpu_s_per_gb: f64,
    /// The full result of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<Box<RunReport>>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// The rows, in path order.
    pub rows: Vec<CompareRow>,
    /// The machine.
    pub environment: Environment,
}

/// The paths: name, description, `O_DIRECT`, sink.
const PATHS: [(&str, &str, bool, SinkKind); 4] = [
    (
        "buffered",
        "buffered read (page cache) + copy to host",
        false,
        SinkKind::Host,
    ),
    (
        "direct_uring",
        "O_DIRECT + io_uring into host memory",
        true,
        SinkKind::Host,
    ),
    (
        "direct_uring_gpu",
        "O_DIRECT + io_uring + pinned async copy to GPU",
        true,
        SinkKind::Gpu,
    ),
    (
        "gds",
        "GPUDirect Storage (cuFile) into GPU memory",
        true,
        SinkKind::Cufile,
    ),
];

/// Runs every path with `base` (block size, depth, workers, amount); the
/// direct and sink settings of `base` are replaced per row.
pub fn compare(base: &ReadConfig, control: &Control) -> Result<CompareReport, RunError> {
    engine::validate(base)?;
    let root = HostRoot::live();
    // Bad input stops everything before any I/O; a filesystem without
    // O_DIRECT only skips the direct rows.
    let mut direct_problem = None;
    for path in &base.paths {
        target::open_target(&root, path, base.block_size, false)?;
        match target::open_target(&root, path, base.block_size, true) {
            Ok(_) => {}
            Err(err @ (InputError::DirectUnsupported { .. } | InputError::Misaligned { .. })) => {
                direct_problem.get_or_insert(err.to_string());
            }
            Err(err) => return Err(err.into()),
        }
    }
    let mut rows = Vec::new();
    let mut environment = Environment::probe(&root);
    for (name, description, direct, sink) in PATHS {
        let skip = |reason: String| CompareRow {
            name,
            description,
            status: RunStatus::Skipped,
            reason: Some(reason),
            bw_bytes_per_s: 0.0,
            p50_us: 0.0,
            p99_us: 0.0,
            cpu_s_per_gb: 0.0,
            report: None,
        };
        if control.stop.load(Ordering::Relaxed) {
            rows.push(skip("interrupted before this path ran".into()));
            continue;
        }
        if let (true, Some(problem)) = (direct, &direct_problem) {
            rows.push(skip(problem.clone()));
            continue;
        }
        let cfg = ReadConfig {
            direct,
            sink,
            engine: EngineKind::Uring,
            ..base.clone()
        };
        let report = engine::run_read_in(&cfg, control, &root, Environment::probe(&root))?;
        environment.gpu = report.environment.gpu.clone();
        environment.io_uring = report.environment.io_uring.clone();
        rows.push(CompareRow {
            name,
            description,
            status: report.status,
            reason: report.skip_reason.clone(),
            bw_bytes_per_s: report.bw_bytes_per_s,
            p50_us: report.latency_us.p50,
            p99_us: report.latency_us.p99,
            cpu_s_per_gb: report.cpu_s_per_gb,
            report: Some(Box::new(report)),
        });
    }
    Ok(CompareReport { rows, environment })
}

impl CompareReport {
    /// Whether any row found corrupted data.
    pub fn verify_failed(&self) -> bool {
        self.rows
            .iter()
            .any(|r| r.report.as_ref().is_some_and(|r| r.verify_failed()))
    }

    /// Writes the table.
    pub fn write_human(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(
            w,
            "{:<48} {:>14} {:>10} {:>10} {:>9}",
            "path", "throughput", "p50 µs", "p99 µs", "CPU s/GB"
        )?;
        for row in &self.rows {
            if row.status == RunStatus::Skipped {
                writeln!(
                    w,
                    "{:<48} skipped: {}",
                    row.description,
                    row.reason.as_deref().unwrap_or("unknown")
                )?;
                continue;
            }
            writeln!(
                w,
                "{:<48} {:>12}/s {:>10.1} {:>10.1} {:>9.3}{}",
                row.description,
                format_bytes(row.bw_bytes_per_s),
                row.p50_us,
                row.p99_us,
                row.cpu_s_per_gb,
                if row.status == RunStatus::Interrupted {
                    "  (interrupted)"
                } else {
                    ""
                }
            )?;
        }
        // A fallback that several paths share (the buffers' page size, most
        // often) is said once: with the paths it concerns, or alone when it
        // concerns every path that ran.
        let ran: Vec<&CompareRow> = self
            .rows
            .iter()
            .filter(|r| r.status != RunStatus::Skipped && r.report.is_some())
            .collect();
        let mut shared: Vec<(&Fallback, Vec<&str>)> = Vec::new();
        for row in &ran {
            for f in row.report.iter().flat_map(|r| &r.fallbacks) {
                match shared.iter_mut().find(|(seen, _)| *seen == f) {
                    Some((_, names)) => names.push(row.name),
                    None => shared.push((f, vec![row.name])),
                }
            }
        }
        for (f, names) in shared {
            if names.len() == ran.len() {
                writeln!(w, "fallback {}: {}", f.feature, f.reason)?;
            } else {
                writeln!(
                    w,
                    "fallback {} ({}): {}",
                    f.feature,
                    names.join(", "),
                    f.reason
                )?;
            }
        }
        Ok(())
    }
}
