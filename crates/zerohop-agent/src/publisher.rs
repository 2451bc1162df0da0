//! Publishing each pass to the API server: the node condition, the events
//! and the report object, from the same snapshot.
//!
//! The publisher works on the latest snapshot only: when the API server is
//! slow or down, passes continue, `/metrics` keeps answering, and the
//! publisher catches up with the newest result when the server is back,
//! after an exponential back-off. It never stops the agent.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::NodeCondition;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use tokio::sync::watch;

use crate::condition;
use crate::event_sink;
use crate::events::{self, Observed};
use crate::jitter;
use crate::log;
use crate::metrics::{ApiCall, Live};
use crate::report_object::{self, PassInfo};
use crate::snapshot::Snapshot;
use zerohop_cluster::api::{self, ApiError};
use zerohop_cluster::backoff::Backoff;
use zerohop_doctor::verdict::Readiness;

/// What to publish.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The node the agent runs on.
    pub node: String,
    /// The agent's interval between passes.
    pub interval: Duration,
    /// Write the node condition (and announce its transitions as events).
    pub condition: bool,
    /// Write the `DataPathReport` object.
    pub report_object: bool,
}

impl Settings {
    /// How old the stored condition's heartbeat may get before it is
    /// rewritten unchanged: four fifths of the interval, so that every
    /// pass writes one even when the jitter brings it early, and `fleet`
    /// (which calls a node stale after three intervals) never sees a
    /// healthy agent as stale.
    pub fn heartbeat(&self) -> Duration {
        self.interval.mul_f64(0.8)
    }
}

/// What the publisher knows of the server's state.
#[derive(Debug, Default)]
struct State {
    /// Whether the Node has been read once.
    node_read: bool,
    /// The Node's UID, for owner references and event subjects.
    uid: Option<String>,
    /// Our condition as the server has it.
    stored: Option<NodeCondition>,
    /// The readiness events were last decided against; at start, the
    /// stored condition's.
    readiness: Option<Readiness>,
    /// The failing checks events were last decided against; `None` until
    /// the first pass of this process.
    failing: Option<BTreeMap<String, String>>,
    /// The last pass whose events were published (or attempted).
    evented: u64,
    /// The last pass whose report object was written.
    reported: u64,
    /// The last pass whose condition is published.
    conditioned: u64,
    /// The last error message logged per call, so that a retried failure
    /// is logged once, not once per retry.
    last_errors: BTreeMap<&'static str, String>,
}

/// Runs until the snapshot channel closes.
pub async fn run(
    client: Client,
    settings: Settings,
    mut snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    live: Arc<Live>,
) {
    // Up to five minutes between tries: an API server in trouble is not
    // asked again every interval by every node; a newer pass replaces the
    // one waiting meanwhile.
    let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
    let mut state = State::default();
    loop {
        let latest = snapshots.borrow_and_update().clone();
        let done = match latest {
            Some(snapshot) => step(&client, &settings, &mut state, &snapshot, &live).await,
            None => read_node(&client, &settings, &mut state, &live).await,
        };
        if done {
            backoff.reset();
            if snapshots.changed().await.is_err() {
                return;
            }
        } else {
            let delay = backoff.next_delay(jitter::unit());
            // A new snapshot does not cut the back-off short: the server
            // needs the pause whatever there is to say.
            tokio::time::sleep(delay).await;
        }
    }
}

/// Reads the Node once: its UID and our condition as a previous agent left
/// it. Returns whether that is done.
async fn read_node(client: &Client, settings: &Settings, state: &mut State, live: &Live) -> bool {
    if state.node_read {
        return true;
    }
    match api::read_node(client, &settings.node).await {
        Ok(node) => {
            live.api(ApiCall::ReadNode, true);
            state.uid = node.metadata.uid.clone();
            state.stored = node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_deref())
                .and_then(condition::ours)
                .cloned();
            state.readiness = state
                .stored
                .as_ref()
                .and_then(|c| Readiness::from_condition_status(&c.status));
            state.node_read = true;
            state.last_errors.remove("read_node");
            log::info(
                "read the node",
                &[
                    ("node", &settings.node),
                    (
                        "stored_condition",
                        state.stored.as_ref().map_or("none", |c| c.status.as_str()),
                    ),
                ],
            );
            true
        }
        Err(err) => {
            live.api(ApiCall::ReadNode, false);
            let hint = if err.is_forbidden() {
                "the service account cannot get nodes: apply the ClusterRole from `zerohop agent --print-manifests`"
            } else if err.is_not_found() {
                "no Node has this name: NODE_NAME must come from the downward API (spec.nodeName)"
            } else {
                "retrying with back-off"
            };
            report_error(state, "read_node", &err, hint, &settings.node);
            false
        }
    }
}

/// Publishes `snapshot` where it is not yet. Returns whether everything
/// is published.
async fn step(
    client: &Client,
    settings: &Settings,
    state: &mut State,
    snapshot: &Snapshot,
    live: &Live,
) -> bool {
    if !read_node(client, settings, state, live).await {
        return false;
    }
    let mut done = true;
    if settings.condition && state.conditioned < snapshot.sequence {
        done &= write_condition(client, settings, state, snapshot, live).await;
    }
    if settings.condition && state.evented < snapshot.sequence {
        publish_events(client, settings, state, snapshot, live).await;
    }
    if settings.report_object && state.reported < snapshot.sequence {
        done &= write_report(client, settings, state, snapshot, live).await;
    }
    done
}

async fn write_condition(
    client: &Client,
    settings: &Settings,
    state: &mut State,
    snapshot: &Snapshot,
    live: &Live,
) -> bool {
    let now = Timestamp::now();
    let Some(desired) = condition::next(
        state.stored.as_ref(),
        &snapshot.verdict,
        now,
        settings.heartbeat(),
    ) else {
        state.conditioned = snapshot.sequence;
        return true;
    };
    match condition::apply(client, &settings.node, &desired).await {
        Ok(()) => {
            live.api(ApiCall::Condition, true);
            let changed = state
                .stored
                .as_ref()
                .is_none_or(|s| s.status != desired.status || s.reason != desired.reason);
            if changed {
                log::info(
                    "condition written",
                    &[
                        ("status", &desired.status),
                        ("reason", desired.reason.as_deref().unwrap_or_default()),
                    ],
                );
            }
            state.stored = Some(desired);
            state.conditioned = snapshot.sequence;
            state.last_errors.remove("condition");
            true
        }
        Err(err) => {
            live.api(ApiCall::Condition, false);
            let hint = if err.is_forbidden() {
                "the service account cannot patch nodes/status: apply the ClusterRole from `zerohop agent --print-manifests`"
            } else {
                "retrying with back-off"
            };
            report_error(state, "condition", &err, hint, &settings.node);
            false
        }
    }
}

/// Events are best effort: a failed event is logged and not retried, so
/// that a lost event never holds back the condition or repeats later out
/// of order.
async fn publish_events(
    client: &Client,
    settings: &Settings,
    state: &mut State,
    snapshot: &Snapshot,
    live: &Live,
) {
    let now: Observed = events::observe(&snapshot.verdict, snapshot.report.as_deref());
    let decisions = events::decide(
        state.readiness,
        state.failing.as_ref(),
        &now,
        &snapshot.verdict,
    );
    for decision in &decisions {
        match event_sink::publish(client, &settings.node, state.uid.as_deref(), decision).await {
            Ok(()) => live.api(ApiCall::Event, true),
            Err(err) => {
                live.api(ApiCall::Event, false);
                let hint = if err.is_forbidden() {
                    "the service account cannot create events.events.k8s.io in namespace default"
                } else {
                    "the event is dropped"
                };
                report_error(state, "event", &err, hint, &settings.node);
            }
        }
    }
    state.readiness = now.readiness;
    // A pass that did not finish says nothing about checks: keep the last
    // known failing set, so that its end is not announced as recoveries.
    if snapshot.report.is_some() || state.failing.is_none() {
        state.failing = Some(now.failing);
    }
    state.evented = snapshot.sequence;
}

async fn write_report(
    client: &Client,
    settings: &Settings,
    state: &mut State,
    snapshot: &Snapshot,
    live: &Live,
) -> bool {
    let object = report_object::object(&PassInfo {
        node: &settings.node,
        node_uid: state.uid.as_deref(),
        verdict: &snapshot.verdict,
        report: snapshot.report.as_deref(),
        finished_at: snapshot.finished_at,
        duration: snapshot.duration,
        interval: settings.interval,
    });
    match report_object::apply(client, &object).await {
        Ok(()) => {
            live.api(ApiCall::ReportObject, true);
            state.reported = snapshot.sequence;
            state.last_errors.remove("report_object");
            true
        }
        Err(err) => {
            live.api(ApiCall::ReportObject, false);
            let hint = if err.is_not_found() {
                "the DataPathReport CRD is not installed: apply it from `zerohop agent --print-manifests`"
            } else if err.is_forbidden() {
                "the service account cannot apply datapathreports.zerohop.dev: apply the ClusterRole from `zerohop agent --print-manifests`"
            } else {
                "retrying with back-off"
            };
            report_error(state, "report_object", &err, hint, &settings.node);
            false
        }
    }
}

/// Logs a failed call once per distinct error.
fn report_error(state: &mut State, call: &'static str, err: &ApiError, hint: &str, node: &str) {
    let text = err.to_string();
    if state.last_errors.get(call) == Some(&text) {
        return;
    }
    log::warn(
        "kubernetes api call failed",
        &[
            ("call", call),
            ("node", node),
            ("error", &text),
            ("hint", hint),
        ],
    );
    state.last_errors.insert(call, text);
}
