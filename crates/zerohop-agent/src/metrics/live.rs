//! The agent's own counters: passes run, Kubernetes API calls, abandoned
//! passes, and the host reads left blocked past their deadline. They
//! change between passes, so they are encoded per scrape; they are a
//! handful of lines.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use zerohop_cluster::api::ApiError;
use zerohop_host::watchdog::{MAX_STUCK_READERS, abandoned_readers, stuck_readers};

use prometheus_client::encoding::NoLabelSet;

use super::{counters, gauge};

/// How a scheduled pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassOutcome {
    /// It finished and was published.
    Completed,
    /// It missed its deadline.
    TimedOut,
    /// It was not started: the previous pass is still blocked.
    Skipped,
    /// It panicked or could not start.
    Failed,
}

impl PassOutcome {
    const ALL: [PassOutcome; 4] = [
        PassOutcome::Completed,
        PassOutcome::TimedOut,
        PassOutcome::Skipped,
        PassOutcome::Failed,
    ];

    fn label(self) -> &'static str {
        match self {
            PassOutcome::Completed => "completed",
            PassOutcome::TimedOut => "timed_out",
            PassOutcome::Skipped => "skipped",
            PassOutcome::Failed => "failed",
        }
    }
}

/// A kind of Kubernetes API call the agent makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApiCall {
    /// Reading its Node at start.
    ReadNode,
    /// Applying the node condition.
    Condition,
    /// Creating or updating an event.
    Event,
    /// Applying the report object.
    ReportObject,
}

impl ApiCall {
    const ALL: [ApiCall; 4] = [
        ApiCall::ReadNode,
        ApiCall::Condition,
        ApiCall::Event,
        ApiCall::ReportObject,
    ];

    /// The `call` label of the metrics and logs.
    pub fn label(self) -> &'static str {
        match self {
            ApiCall::ReadNode => "read_node",
            ApiCall::Condition => "condition",
            ApiCall::Event => "event",
            ApiCall::ReportObject => "report_object",
        }
    }
}

/// Counters shared by the agent's tasks.
#[derive(Debug, Default)]
pub struct Live {
    passes: [AtomicU64; 4],
    api_ok: [AtomicU64; 4],
    api_error: [AtomicU64; 4],
    /// Failed calls by kind and the server's HTTP status (`None`: no
    /// answer). At most 4 kinds × the few hundred HTTP statuses.
    api_failures: Mutex<BTreeMap<(ApiCall, Option<u16>), u64>>,
    /// Passes (and counter samples) that missed their deadline and whose
    /// thread is still blocked; shared with their runners.
    pub abandoned: Arc<AtomicUsize>,
}

impl Live {
    /// Counts a pass.
    pub fn pass(&self, outcome: PassOutcome) {
        self.passes[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an API call that succeeded.
    pub fn api_ok(&self, call: ApiCall) {
        self.api_ok[call as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an API call that failed, with the server's status.
    pub fn api_failed(&self, call: ApiCall, err: &ApiError) {
        self.api_error[call as usize].fetch_add(1, Ordering::Relaxed);
        *self
            .api_failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((call, err.code))
            .or_default() += 1;
    }

    /// How many passes ended with `outcome`.
    pub fn passes(&self, outcome: PassOutcome) -> u64 {
        self.passes[outcome as usize].load(Ordering::Relaxed)
    }

    pub(super) fn rows(&self) -> LiveRows {
        LiveRows {
            passes: PassOutcome::ALL.map(|o| (o.label(), self.passes(o))),
            api: ApiCall::ALL.map(|c| {
                (
                    c.label(),
                    self.api_ok[c as usize].load(Ordering::Relaxed),
                    self.api_error[c as usize].load(Ordering::Relaxed),
                )
            }),
            failures: self
                .api_failures
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|((call, code), n)| {
                    let code = code.map_or_else(|| "none".to_owned(), |c| c.to_string());
                    (call.label(), code, *n)
                })
                .collect(),
            abandoned: self.abandoned.load(Ordering::Relaxed),
            stuck_reads: stuck_readers(),
            abandoned_reads: abandoned_readers(),
        }
    }
}

/// A copy of the live counters, for one encoding.
#[derive(Debug)]
pub(super) struct LiveRows {
    passes: [(&'static str, u64); 4],
    api: [(&'static str, u64, u64); 4],
    /// Failed calls: kind, HTTP status (or `none`), count.
    failures: Vec<(&'static str, String, u64)>,
    abandoned: usize,
    /// Host reads blocked past their deadline right now (the host layer's
    /// count, for the whole process).
    stuck_reads: usize,
    /// Host reads abandoned at their deadline since the agent started.
    abandoned_reads: u64,
}

impl Collector for LiveRows {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder
            .encode_descriptor(
                "build",
                "The zerohop agent's version",
                None,
                MetricType::Info,
            )?
            .encode_info(&[("version", env!("CARGO_PKG_VERSION"))])?;
        counters(
            &mut encoder,
            "passes",
            "Scheduled passes by outcome",
            self.passes.map(|(outcome, n)| ([("outcome", outcome)], n)),
        )?;
        counters(
            &mut encoder,
            "api_requests",
            "Kubernetes API calls by kind and outcome",
            self.api.iter().flat_map(|(call, ok, error)| {
                [
                    ([("call", *call), ("outcome", "ok")], *ok),
                    ([("call", *call), ("outcome", "error")], *error),
                ]
            }),
        )?;
        counters(
            &mut encoder,
            "api_errors",
            "Failed Kubernetes API calls by kind and the server's HTTP status (none: no answer)",
            self.failures
                .iter()
                .map(|(call, code, n)| ([("call", *call), ("code", code.as_str())], *n)),
        )?;
        gauge(
            &mut encoder,
            "abandoned_passes",
            "Passes or counter samples that missed their deadline and are still blocked in a read",
            self.abandoned as f64,
        )?;
        gauge(
            &mut encoder,
            "host_reads_stuck",
            "Reads of the host blocked past their deadline right now, each holding a reader process; at host_reads_stuck_limit every further read fails at once",
            self.stuck_reads as f64,
        )?;
        gauge(
            &mut encoder,
            "host_reads_stuck_limit",
            "The most host reads left blocked at once before further reads fail at once",
            MAX_STUCK_READERS as f64,
        )?;
        encoder
            .encode_descriptor(
                "host_reads_abandoned",
                "Reads of the host abandoned at their deadline: a wedged device or a hung mount",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&self.abandoned_reads, None)
    }
}
