//! The result of one pass, the one object every output is made from.
//!
//! A pass produces a [`Snapshot`]; `/metrics`, `/report`, the features
//! file, the node condition, the events and the report object are all
//! rendered from it, so they cannot disagree. Its encodings are made once,
//! on first use, and then served as shared bytes: a scrape copies nothing
//! and computes nothing.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use k8s_openapi::jiff::Timestamp;
use zerohop_core::Report;
use zerohop_core::render::json;

use crate::capabilities::{self, Capability, State};
use crate::counters::{self, Targets};
use crate::metrics::{self, Exposition};
use zerohop_doctor::verdict::{self, Verdict};

/// One pass's result.
#[derive(Debug)]
pub struct Snapshot {
    /// The node the agent runs on.
    pub node: String,
    /// The pass number since the agent started, from 1.
    pub sequence: u64,
    /// When the pass ended.
    pub finished_at: Timestamp,
    /// How long it took (up to its deadline when it did not finish).
    pub duration: Duration,
    /// The doctor's report, when the pass finished.
    pub report: Option<Arc<Report>>,
    /// The judgement.
    pub verdict: Verdict,
    /// The capability states (none when the pass did not finish).
    pub capabilities: Vec<(&'static Capability, State)>,
    /// What the counters sampler reads until the next pass.
    pub targets: Targets,
    exposition: OnceLock<Exposition>,
    report_json: OnceLock<Option<Bytes>>,
}

impl Snapshot {
    /// The snapshot of a pass that finished with `report`.
    pub fn completed(
        node: &str,
        sequence: u64,
        finished_at: Timestamp,
        duration: Duration,
        report: Report,
        targets: Targets,
    ) -> Snapshot {
        let verdict = verdict::judge(&report);
        let capabilities = capabilities::states(&report);
        Snapshot {
            node: node.to_owned(),
            sequence,
            finished_at,
            duration,
            report: Some(Arc::new(report)),
            verdict,
            capabilities,
            targets,
            exposition: OnceLock::new(),
            report_json: OnceLock::new(),
        }
    }

    /// The snapshot of a pass that produced no report; `why` says what
    /// happened (a lowercase fragment). The counter targets of the last
    /// finished pass are kept: the sampler has its own deadline.
    pub fn not_finished(
        node: &str,
        sequence: u64,
        finished_at: Timestamp,
        duration: Duration,
        why: &str,
        targets: Targets,
    ) -> Snapshot {
        Snapshot {
            node: node.to_owned(),
            sequence,
            finished_at,
            duration,
            report: None,
            verdict: verdict::not_judged(why),
            capabilities: Vec::new(),
            targets,
            exposition: OnceLock::new(),
            report_json: OnceLock::new(),
        }
    }

    /// The metrics of this pass, encoded on first use.
    pub fn exposition(&self) -> &Exposition {
        self.exposition
            .get_or_init(|| metrics::encode_snapshot(self))
    }

    /// The report as the doctor's JSON document, encoded on first use;
    /// `None` when the pass did not finish.
    pub fn report_json(&self) -> Option<&Bytes> {
        self.report_json
            .get_or_init(|| {
                let report = self.report.as_ref()?;
                let mut out = Vec::new();
                // Writing to a Vec cannot fail.
                json::write(report, &mut out).ok()?;
                Some(Bytes::from(out))
            })
            .as_ref()
    }
}

/// One counter sample, with its encoding made on first use.
#[derive(Debug)]
pub struct CounterSnapshot {
    /// The node.
    pub node: String,
    /// The sample.
    pub sample: counters::Sample,
    exposition: OnceLock<Exposition>,
}

impl CounterSnapshot {
    /// Wraps a sample.
    pub fn new(node: &str, sample: counters::Sample) -> CounterSnapshot {
        CounterSnapshot {
            node: node.to_owned(),
            sample,
            exposition: OnceLock::new(),
        }
    }

    /// The counters' metrics, encoded on first use.
    pub fn exposition(&self) -> &Exposition {
        self.exposition
            .get_or_init(|| metrics::encode_counters(&self.node, &self.sample))
    }
}
