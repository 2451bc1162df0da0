//! Publishing events about the node (`events.k8s.io/v1`, namespace
//! `default`, where events about cluster-scoped objects go).
//!
//! The event's name is derived from the node, the reason and the note, so
//! the same problem announced again (after a recovery, or by a restarted
//! agent) finds its earlier event and counts a repeat on it (`series`)
//! instead of creating a new object: `kubectl describe node` shows
//! `CheckFailing (x3)`, not three lines.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::events::Decision;
use zerohop_cluster::api::{ApiError, within};

/// Where events about cluster-scoped objects are written.
pub const NAMESPACE: &str = "default";
/// The controller named as the events' reporter.
pub const REPORTING_CONTROLLER: &str = "zerohop.dev/agent";
/// What the agent was doing when it saw the change.
pub const ACTION: &str = "Verify";

/// The event's name: the node, then a hash of reason and note.
pub fn event_name(node: &str, decision: &Decision) -> String {
    // FNV-1a: stable across builds and platforms, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in decision
        .reason
        .bytes()
        .chain([0])
        .chain(decision.note.bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // A DNS subdomain has at most 253 characters; keep room for the hash.
    let mut prefix: String = node.chars().take(200).collect();
    while prefix.ends_with(['.', '-']) {
        prefix.pop();
    }
    format!("{prefix}.zerohop.{hash:016x}")
}

/// The event object for `decision` about the Node `node`.
pub fn event_object(node: &str, uid: Option<&str>, decision: &Decision, now: Timestamp) -> Event {
    let instance: String = format!("zerohop-agent-{node}").chars().take(128).collect();
    Event {
        metadata: ObjectMeta {
            name: Some(event_name(node, decision)),
            namespace: Some(NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(now)),
        action: Some(ACTION.to_owned()),
        reason: Some(decision.reason.to_owned()),
        note: Some(decision.note.clone()),
        type_: Some(decision.type_.as_str().to_owned()),
        reporting_controller: Some(REPORTING_CONTROLLER.to_owned()),
        reporting_instance: Some(instance),
        regarding: Some(ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Node".to_owned()),
            name: Some(node.to_owned()),
            uid: uid.map(str::to_owned),
            ..ObjectReference::default()
        }),
        ..Event::default()
    }
}

/// Publishes `decision`: creates the event, or, when an event with its
/// name exists, counts one more occurrence on it.
pub async fn publish(
    client: &Client,
    node: &str,
    uid: Option<&str>,
    decision: &Decision,
) -> Result<(), ApiError> {
    let api: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
    let now = Timestamp::now();
    let event = event_object(node, uid, decision, now);
    match within(api.create(&PostParams::default(), &event)).await {
        Ok(_) => Ok(()),
        Err(err) if err.is_conflict() => {
            let name = event_name(node, decision);
            let existing = within(api.get(&name)).await?;
            let count = existing.series.as_ref().map_or(1, |s| s.count) + 1;
            let series = EventSeries {
                count,
                last_observed_time: MicroTime(now),
            };
            let patch = json!({ "series": series });
            within(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)))
                .await
                .map(drop)
        }
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventType;

    fn decision(note: &str) -> Decision {
        Decision {
            type_: EventType::Warning,
            reason: "CheckFailing",
            note: note.into(),
        }
    }

    #[test]
    fn names_are_stable_per_problem_and_valid_subdomains() {
        let a = event_name("gpu-node-1", &decision("RDMA004 fails"));
        assert_eq!(a, event_name("gpu-node-1", &decision("RDMA004 fails")));
        assert_ne!(a, event_name("gpu-node-1", &decision("GPU012 fails")));
        assert!(a.starts_with("gpu-node-1.zerohop."), "{a}");
        let long = event_name(&format!("{}-", "n".repeat(199)), &decision("x"));
        assert!(long.len() <= 253, "{}", long.len());
        assert!(!long.contains("-."), "{long}");
    }
}
