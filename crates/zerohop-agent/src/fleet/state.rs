//! Each node's state, from what its agent published: the condition, the
//! capability labels and the report object.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use zerohop_known::zerohop_api::{CONDITION_TYPE, LABEL_PREFIX};

use crate::capabilities::CAPABILITIES;
use crate::condition;

/// A node's state in the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// The condition is `False`: a check fails.
    NotReady,
    /// The condition's heartbeat is older than three intervals: the agent
    /// is gone, stuck or cut off, and the condition may be out of date.
    Stale,
    /// A GPU or RDMA node without the condition: no agent runs there.
    NoAgent,
    /// The condition is `Unknown`: the agent could not judge.
    Unknown,
    /// The condition is `True`.
    Ready,
}

impl State {
    /// Every state, worst first.
    pub const ALL: [State; 5] = [
        State::NotReady,
        State::Stale,
        State::NoAgent,
        State::Unknown,
        State::Ready,
    ];

    /// The name shown and written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ready => "Ready",
            State::NotReady => "NotReady",
            State::Unknown => "Unknown",
            State::Stale => "Stale",
            State::NoAgent => "NoAgent",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One node as `fleet` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The node's name.
    pub node: String,
    /// Its state.
    pub state: State,
    /// The condition's reason (the first root cause), or why the state.
    pub reason: String,
    /// The condition's message.
    pub message: String,
    /// How old the condition's heartbeat is.
    pub heartbeat_age: Option<Duration>,
    /// The failing check IDs: from the report object, else from the
    /// condition message.
    pub failing: BTreeSet<String>,
    /// The capability labels, by name (`gpudirect-rdma` → `ready`).
    pub capabilities: BTreeMap<&'static str, String>,
    /// Whether the node is cordoned (shown, never acted on).
    pub cordoned: bool,
}

/// Node labels and capacity that mark a node that should run the agent.
pub(crate) const DATA_PATH_LABELS: [&str; 5] = [
    "nvidia.com/gpu.present",
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-15b3.present",
    "feature.node.kubernetes.io/rdma.available",
    "feature.node.kubernetes.io/rdma.capable",
];

/// Whether the node has a GPU or an RDMA device, by the labels of the GPU
/// operator and NFD or by its extended resources.
pub fn is_data_path_node(node: &Node) -> bool {
    let labelled = node.metadata.labels.as_ref().is_some_and(|labels| {
        DATA_PATH_LABELS
            .iter()
            .any(|key| labels.get(*key).is_some_and(|v| v == "true"))
    });
    let resourced = node
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .is_some_and(|capacity| {
            capacity
                .iter()
                .any(|(key, quantity)| quantity.0 != "0" && is_device_resource(key))
        });
    labelled || resourced
}

/// Whether an extended resource is a GPU or an RDMA device.
pub(crate) fn is_device_resource(key: &str) -> bool {
    key == "nvidia.com/gpu" || key == "amd.com/gpu" || key.starts_with("rdma/")
}

/// The row of `node`, or `None` for a node that has no condition and no
/// GPU or RDMA device (not part of the data path, nothing to say).
/// `report` is its `DataPathReport` object, `interval` the agent interval
/// assumed when the report object does not say.
pub fn classify(
    node: &Node,
    report: Option<&Value>,
    now: Timestamp,
    interval: Duration,
) -> Option<Row> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let capabilities = capability_labels(node);
    let cordoned = node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_deref());
    let Some(ours) = conditions.and_then(condition::ours) else {
        if !is_data_path_node(node) {
            return None;
        }
        return Some(Row {
            node: name,
            state: State::NoAgent,
            reason: "NoCondition".to_owned(),
            message: format!(
                "a GPU or RDMA node without the {CONDITION_TYPE} condition: is the agent scheduled here?"
            ),
            heartbeat_age: None,
            failing: BTreeSet::new(),
            capabilities,
            cordoned,
        });
    };
    let interval = report
        .and_then(|r| r["pass"]["intervalSeconds"].as_u64())
        .filter(|s| *s > 0)
        .map_or(interval, Duration::from_secs);
    let heartbeat_age = ours
        .last_heartbeat_time
        .as_ref()
        .map(|t| condition::age(t.0, now));
    let stale = heartbeat_age.is_none_or(|age| age > interval * 3);
    let reason = ours.reason.clone().unwrap_or_default();
    let message = ours.message.clone().unwrap_or_default();
    let state = if stale {
        State::Stale
    } else {
        match ours.status.as_str() {
            "True" => State::Ready,
            "False" => State::NotReady,
            _ => State::Unknown,
        }
    };
    let failing = match report {
        Some(report) => failing_in_report(report),
        None => failing_in_message(&message),
    };
    Some(Row {
        node: name,
        state,
        reason,
        message,
        heartbeat_age,
        failing,
        capabilities,
        cordoned,
    })
}

fn capability_labels(node: &Node) -> BTreeMap<&'static str, String> {
    let mut found = BTreeMap::new();
    if let Some(labels) = &node.metadata.labels {
        for capability in &CAPABILITIES {
            if let Some(value) = labels.get(&format!("{LABEL_PREFIX}{}", capability.name)) {
                found.insert(capability.name, value.clone());
            }
        }
    }
    found
}

/// The IDs of the report object's failing findings.
fn failing_in_report(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["status"] == "fail")
        .filter_map(|f| f["id"].as_str())
        .filter(|id| is_check_id(id))
        .map(str::to_owned)
        .collect()
}

/// The IDs listed after `failing:` in a condition message the agent wrote
/// (`RDMA004 mlx5_0/1: …; 2 failing: GPU012, RDMA004`).
pub fn failing_in_message(message: &str) -> BTreeSet<String> {
    let Some((_, list)) = message.rsplit_once("failing:") else {
        return BTreeSet::new();
    };
    list.split(',')
        .map(str::trim)
        .filter(|id| is_check_id(id))
        .map(str::to_owned)
        .collect()
}

/// `RDMA004`: capital letters then digits.
fn is_check_id(text: &str) -> bool {
    let letters = text.chars().take_while(char::is_ascii_uppercase).count();
    letters > 0
        && text.len() > letters
        && text.len() <= 16
        && text[letters..].chars().all(|c| c.is_ascii_digit())
}

/// For each failing check, the nodes it fails on, sorted.
pub fn by_check(rows: &[Row]) -> BTreeMap<String, Vec<String>> {
    let mut checks: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in rows {
        for id in &row.failing {
            checks.entry(id.clone()).or_default().push(row.node.clone());
        }
    }
    for nodes in checks.values_mut() {
        nodes.sort();
    }
    checks
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use serde_json::json;

    use super::*;

    const INTERVAL: Duration = Duration::from_secs(300);

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn node(name: &str, labels: &[(&str, &str)], condition: Option<(&str, i64)>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                conditions: condition.map(|(status, beat)| {
                    vec![
                        NodeCondition {
                            type_: "Ready".into(),
                            status: "True".into(),
                            ..NodeCondition::default()
                        },
                        NodeCondition {
                            type_: CONDITION_TYPE.into(),
                            status: status.into(),
                            reason: Some("RdmaPortDown".into()),
                            message: Some(
                                "RDMA004 mlx5_0/1: fix; 2 failing: GPU012, RDMA004".into(),
                            ),
                            last_heartbeat_time: Some(Time(at(beat))),
                            last_transition_time: Some(Time(at(0))),
                        },
                    ]
                }),
                ..NodeStatus::default()
            }),
        }
    }

    #[test]
    fn states_follow_the_condition_and_its_heartbeat() {
        let now = at(1000);
        let ready = classify(&node("a", &[], Some(("True", 900))), None, now, INTERVAL).unwrap();
        assert_eq!(ready.state, State::Ready);
        let broken = classify(&node("b", &[], Some(("False", 900))), None, now, INTERVAL).unwrap();
        assert_eq!(broken.state, State::NotReady);
        assert_eq!(
            broken.failing.iter().collect::<Vec<_>>(),
            ["GPU012", "RDMA004"]
        );
        let unknown =
            classify(&node("c", &[], Some(("Unknown", 900))), None, now, INTERVAL).unwrap();
        assert_eq!(unknown.state, State::Unknown);
        // 1000 s old with a 300 s interval: older than three intervals.
        let stale = classify(&node("d", &[], Some(("True", 0))), None, now, INTERVAL).unwrap();
        assert_eq!(stale.state, State::Stale);
        assert_eq!(stale.heartbeat_age, Some(Duration::from_secs(1000)));
        // The report object's interval wins over the assumed one.
        let report = json!({ "pass": { "intervalSeconds": 600 }, "findings": [] });
        let fresh = classify(
            &node("d", &[], Some(("True", 0))),
            Some(&report),
            now,
            INTERVAL,
        )
        .unwrap();
        assert_eq!(fresh.state, State::Ready);
    }

    #[test]
    fn a_gpu_node_without_the_condition_has_no_agent_and_others_are_left_out() {
        let now = at(0);
        let gpu = node("g", &[("nvidia.com/gpu.present", "true")], None);
        assert_eq!(
            classify(&gpu, None, now, INTERVAL).unwrap().state,
            State::NoAgent
        );
        let plain = node("p", &[("kubernetes.io/os", "linux")], None);
        assert_eq!(classify(&plain, None, now, INTERVAL), None);
        let mut rdma = node("r", &[], None);
        rdma.status.as_mut().unwrap().capacity = Some(
            [(
                "rdma/rdma_shared_device_a".to_owned(),
                Quantity("63".into()),
            )]
            .into(),
        );
        assert_eq!(
            classify(&rdma, None, now, INTERVAL).unwrap().state,
            State::NoAgent
        );
    }

    #[test]
    fn failing_checks_come_from_the_report_object_when_there_is_one() {
        let report = json!({ "findings": [
            { "id": "NFS002", "status": "fail" },
            { "id": "QOS001", "status": "warn" },
            { "id": "not an id", "status": "fail" },
        ]});
        let row = classify(
            &node("b", &[], Some(("False", 900))),
            Some(&report),
            at(1000),
            INTERVAL,
        )
        .unwrap();
        assert_eq!(row.failing.iter().collect::<Vec<_>>(), ["NFS002"]);
        assert_eq!(failing_in_message("no check fails"), BTreeSet::new());
        assert_eq!(
            failing_in_message("x; 12 failing: A1, B2, and 10 more")
                .iter()
                .collect::<Vec<_>>(),
            ["A1", "B2"]
        );
    }

    #[test]
    fn capability_labels_are_read_back() {
        let labelled = node(
            "a",
            &[
                ("zerohop.dev/gpudirect-rdma", "degraded"),
                ("zerohop.dev/other", "x"),
            ],
            Some(("True", 900)),
        );
        let row = classify(&labelled, None, at(1000), INTERVAL).unwrap();
        assert_eq!(
            row.capabilities.get("gpudirect-rdma").map(String::as_str),
            Some("degraded")
        );
        assert_eq!(row.capabilities.len(), 1);
    }
}
