//! Publishing each pass to the API server: the node condition, the events
//! and the report object, from the same snapshot.
//!
//! Each of the three is its own publisher with its own back-off: a report
//! object the server refuses (its CRD not installed, say) never holds back
//! the node condition, and a throttled event never delays either. Each
//! works on the latest snapshot only: when the API server is slow or
//! down, passes continue, `/metrics` keeps answering (and the features file
//! is written by the pass itself), and each publisher catches up with the
//! newest result when the server is back, after an exponential back-off
//! that honours the server's `Retry-After`. It never stops the agent.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::NodeCondition;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use serde_json::Value;
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

/// The first delay of each back-off, and its cap: an API server in
/// trouble is not asked again every interval by every node; a newer pass
/// replaces the one waiting meanwhile.
const FIRST_DELAY: Duration = Duration::from_secs(1);
const MAX_DELAY: Duration = Duration::from_secs(300);

/// What the agent reads of its Node once, before publishing anything.
#[derive(Debug, Default)]
struct NodeInfo {
    /// The Node's UID, for owner references and event subjects.
    uid: Option<String>,
    /// Our condition as the server has it.
    stored: Option<NodeCondition>,
}

/// Runs until the snapshot channel closes.
pub async fn run(
    client: Client,
    settings: Settings,
    snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    live: Arc<Live>,
) {
    let node = read_node(&client, &settings, &live).await;
    let readiness = node
        .stored
        .as_ref()
        .and_then(|c| Readiness::from_condition_status(&c.status));
    let conditions = async {
        if settings.condition {
            let publisher = ConditionPublisher {
                stored: node.stored.clone(),
                done: 0,
            };
            publish_latest(&client, &settings, snapshots.clone(), &live, publisher).await;
        }
    };
    let events = async {
        if settings.condition {
            let publisher = EventPublisher {
                uid: node.uid.clone(),
                readiness,
                failing: None,
                done: 0,
            };
            publish_latest(&client, &settings, snapshots.clone(), &live, publisher).await;
        }
    };
    let reports = async {
        if settings.report_object {
            let publisher = ReportPublisher {
                uid: node.uid.clone(),
                done: 0,
                written: None,
            };
            publish_latest(&client, &settings, snapshots.clone(), &live, publisher).await;
        }
    };
    tokio::join!(conditions, events, reports);
}

/// One kind of thing the agent publishes, with what it already published.
trait Publisher {
    /// The call, for logs and metrics.
    const CALL: ApiCall;

    /// Publishes `snapshot` if it is not yet; the error to back off on
    /// otherwise.
    async fn publish(
        &mut self,
        client: &Client,
        settings: &Settings,
        snapshot: &Snapshot,
        live: &Live,
    ) -> Result<(), ApiError>;
}

/// Publishes each newest snapshot with `publisher`, backing off on its
/// own after a failure, until the snapshot channel closes.
async fn publish_latest<P: Publisher>(
    client: &Client,
    settings: &Settings,
    mut snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    live: &Live,
    mut publisher: P,
) {
    let mut backoff = Backoff::new(FIRST_DELAY, MAX_DELAY);
    let mut last_error = None;
    loop {
        let latest = snapshots.borrow_and_update().clone();
        if let Some(snapshot) = latest {
            match publisher.publish(client, settings, &snapshot, live).await {
                Ok(()) => {
                    backoff.reset();
                    last_error = None;
                }
                Err(err) => {
                    report_error(&mut last_error, P::CALL, &err, &settings.node);
                    let delay = backoff.next_delay(jitter::unit(), err.retry_after);
                    // A new snapshot does not cut the back-off short: the
                    // server needs the pause whatever there is to say.
                    tokio::time::sleep(delay).await;
                    continue;
                }
            }
        }
        if snapshots.changed().await.is_err() {
            return;
        }
    }
}

/// Reads the Node, retrying with back-off until it succeeds: its UID and
/// our condition as a previous agent left it.
async fn read_node(client: &Client, settings: &Settings, live: &Live) -> NodeInfo {
    let mut backoff = Backoff::new(FIRST_DELAY, MAX_DELAY);
    let mut last_error = None;
    loop {
        match api::read_node(client, &settings.node).await {
            Ok(node) => {
                live.api_ok(ApiCall::ReadNode);
                let stored = node
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_deref())
                    .and_then(condition::ours)
                    .cloned();
                log::info(
                    "read the node",
                    &[
                        ("node", &settings.node),
                        (
                            "stored_condition",
                            stored.as_ref().map_or("none", |c| c.status.as_str()),
                        ),
                    ],
                );
                return NodeInfo {
                    uid: node.metadata.uid,
                    stored,
                };
            }
            Err(err) => {
                live.api_failed(ApiCall::ReadNode, &err);
                report_error(&mut last_error, ApiCall::ReadNode, &err, &settings.node);
                tokio::time::sleep(backoff.next_delay(jitter::unit(), err.retry_after)).await;
            }
        }
    }
}

/// The node condition: written when it changes and when its heartbeat is
/// due.
struct ConditionPublisher {
    /// Our condition as the server has it (read at start, then what we
    /// wrote).
    stored: Option<NodeCondition>,
    /// The last pass whose condition is published.
    done: u64,
}

impl Publisher for ConditionPublisher {
    const CALL: ApiCall = ApiCall::Condition;

    async fn publish(
        &mut self,
        client: &Client,
        settings: &Settings,
        snapshot: &Snapshot,
        live: &Live,
    ) -> Result<(), ApiError> {
        if self.done >= snapshot.sequence {
            return Ok(());
        }
        let Some(desired) = condition::next(
            self.stored.as_ref(),
            &snapshot.verdict,
            Timestamp::now(),
            settings.heartbeat(),
        ) else {
            self.done = snapshot.sequence;
            return Ok(());
        };
        if let Err(err) = condition::apply(client, &settings.node, &desired).await {
            live.api_failed(Self::CALL, &err);
            return Err(err);
        }
        live.api_ok(Self::CALL);
        let changed = self
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
        self.stored = Some(desired);
        self.done = snapshot.sequence;
        Ok(())
    }
}

/// Events are best effort: a failed event is logged and not retried, so
/// that a lost event never repeats later out of order; the failure only
/// holds back the next pass's events by this publisher's back-off.
struct EventPublisher {
    /// The Node's UID, for the events' subject.
    uid: Option<String>,
    /// The readiness events were last decided against; at start, the
    /// stored condition's.
    readiness: Option<Readiness>,
    /// The failing checks events were last decided against; `None` until
    /// the first pass of this process.
    failing: Option<BTreeMap<String, String>>,
    /// The last pass whose events were published (or attempted).
    done: u64,
}

impl Publisher for EventPublisher {
    const CALL: ApiCall = ApiCall::Event;

    async fn publish(
        &mut self,
        client: &Client,
        settings: &Settings,
        snapshot: &Snapshot,
        live: &Live,
    ) -> Result<(), ApiError> {
        if self.done >= snapshot.sequence {
            return Ok(());
        }
        let now: Observed = events::observe(&snapshot.verdict, snapshot.report.as_deref());
        let decisions = events::decide(
            self.readiness,
            self.failing.as_ref(),
            &now,
            &snapshot.verdict,
        );
        self.readiness = now.readiness;
        // A pass that did not finish says nothing about checks: keep the
        // last known failing set, so that its end is not announced as
        // recoveries.
        if snapshot.report.is_some() || self.failing.is_none() {
            self.failing = Some(now.failing);
        }
        self.done = snapshot.sequence;
        for decision in &decisions {
            match event_sink::publish(client, &settings.node, self.uid.as_deref(), decision).await {
                Ok(()) => live.api_ok(Self::CALL),
                Err(err) => {
                    // The rest of this pass's events are dropped with it:
                    // a server that refuses one is not sent more now.
                    live.api_failed(Self::CALL, &err);
                    return Err(err);
                }
            }
        }
        Ok(())
    }
}

/// The `DataPathReport` object, written when what it says changes: the
/// condition's heartbeat already says every pass that the agent lives, so
/// a steady node costs the API server one write per interval, not two.
struct ReportPublisher {
    /// The Node's UID, for the owner reference.
    uid: Option<String>,
    /// The last pass whose report object is published.
    done: u64,
    /// What the last written object said, its timing left out.
    written: Option<Value>,
}

/// The object without the pass's timing, which changes every pass.
fn without_timing(object: &Value) -> Value {
    let mut content = object.clone();
    if let Some(pass) = content.get_mut("pass").and_then(Value::as_object_mut) {
        pass.remove("finishedAt");
        pass.remove("durationSeconds");
    }
    content
}

impl Publisher for ReportPublisher {
    const CALL: ApiCall = ApiCall::ReportObject;

    async fn publish(
        &mut self,
        client: &Client,
        settings: &Settings,
        snapshot: &Snapshot,
        live: &Live,
    ) -> Result<(), ApiError> {
        if self.done >= snapshot.sequence {
            return Ok(());
        }
        let object = report_object::object(&PassInfo {
            node: &settings.node,
            node_uid: self.uid.as_deref(),
            verdict: &snapshot.verdict,
            report: snapshot.report.as_deref(),
            finished_at: snapshot.finished_at,
            duration: snapshot.duration,
            interval: settings.interval,
        });
        let content = without_timing(&object);
        if self.written.as_ref() == Some(&content) {
            self.done = snapshot.sequence;
            return Ok(());
        }
        if let Err(err) = report_object::apply(client, &object).await {
            live.api_failed(Self::CALL, &err);
            return Err(err);
        }
        live.api_ok(Self::CALL);
        self.done = snapshot.sequence;
        self.written = Some(content);
        Ok(())
    }
}

/// What to do about a failed call, for its log line.
fn hint(call: ApiCall, err: &ApiError) -> &'static str {
    match call {
        _ if err.retry_after.is_some() => {
            "the API server asked to wait: retrying after the delay it gave"
        }
        ApiCall::ReadNode if err.is_forbidden() => {
            "the service account cannot get nodes: apply the ClusterRole from `zerohop agent --print-manifests`"
        }
        ApiCall::ReadNode if err.is_not_found() => {
            "no Node has this name: NODE_NAME must come from the downward API (spec.nodeName)"
        }
        ApiCall::Condition if err.is_forbidden() => {
            "the service account cannot patch nodes/status: apply the ClusterRole from `zerohop agent --print-manifests`"
        }
        ApiCall::Event if err.is_forbidden() => {
            "the service account cannot create events.events.k8s.io in namespace default"
        }
        ApiCall::Event => "the event is dropped",
        ApiCall::ReportObject if err.is_not_found() => {
            "the DataPathReport CRD is not installed: apply it from `zerohop agent --print-manifests`"
        }
        ApiCall::ReportObject if err.is_forbidden() => {
            "the service account cannot apply datapathreports.zerohop.dev: apply the ClusterRole from `zerohop agent --print-manifests`"
        }
        _ => "retrying with back-off",
    }
}

/// Logs a failed call once per distinct error: `last` is the call's last
/// logged error, so that a retried failure is logged once, not once per
/// retry.
fn report_error(last: &mut Option<String>, call: ApiCall, err: &ApiError, node: &str) {
    let text = err.to_string();
    if last.as_ref() == Some(&text) {
        return;
    }
    log::warn(
        "kubernetes api call failed",
        &[
            ("call", call.label()),
            ("node", node),
            ("error", &text),
            ("hint", hint(call, err)),
        ],
    );
    *last = Some(text);
}
