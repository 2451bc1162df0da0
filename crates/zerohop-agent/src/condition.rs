//! The node condition: its desired value from a verdict, when to write it,
//! and the server-side apply body that writes only it.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use zerohop_cluster::api::{ApiError, within};

use zerohop_doctor::verdict::Verdict;
use zerohop_known::zerohop_api::{AGENT_NAME, CONDITION_TYPE};

/// The field manager of every write, so that server-side apply leaves the
/// conditions of the kubelet and of other agents alone.
pub const FIELD_MANAGER: &str = AGENT_NAME;

/// Our condition among a node's conditions, if it has one.
pub fn ours(conditions: &[NodeCondition]) -> Option<&NodeCondition> {
    conditions.iter().find(|c| c.type_ == CONDITION_TYPE)
}

/// The condition to write now, or `None` when the stored one already says
/// the same thing and its heartbeat is younger than `heartbeat`.
///
/// `stored` is the value on the API server (read at start, then what we
/// wrote): its `lastTransitionTime` is kept while the status does not
/// change, so an agent restart is not a transition.
pub fn next(
    stored: Option<&NodeCondition>,
    verdict: &Verdict,
    now: Timestamp,
    heartbeat: Duration,
) -> Option<NodeCondition> {
    let status = verdict.readiness.condition_status();
    let same_status = stored.is_some_and(|s| s.status == status);
    let same = same_status
        && stored.is_some_and(|s| {
            s.reason.as_deref() == Some(verdict.reason.as_str())
                && s.message.as_deref() == Some(verdict.message.as_str())
        });
    // A heartbeat in the future (a clock that was wrong, or stepped back)
    // is due now: trusting it would stop the heartbeats until then.
    let beat_due = stored
        .and_then(|s| s.last_heartbeat_time.as_ref())
        .is_none_or(|beat| beat.0 > now || age(beat.0, now) >= heartbeat);
    if same && !beat_due {
        return None;
    }
    let transition = match stored.and_then(|s| s.last_transition_time.clone()) {
        Some(time) if same_status => time,
        _ => Time(now),
    };
    Some(NodeCondition {
        type_: CONDITION_TYPE.to_owned(),
        status: status.to_owned(),
        reason: Some(verdict.reason.clone()),
        message: Some(verdict.message.clone()),
        last_heartbeat_time: Some(Time(now)),
        last_transition_time: Some(transition),
    })
}

/// The server-side apply body for `nodes/<name>/status`: our condition
/// only. `NodeStatus.conditions` is a list map keyed by `type`, so the
/// apply leaves every other condition as it is.
pub fn apply_body(node: &str, condition: &NodeCondition) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": node },
        "status": { "conditions": [condition] },
    })
}

/// How long ago `then` was; a time in the future counts as now.
pub fn age(then: Timestamp, now: Timestamp) -> Duration {
    let elapsed: SignedDuration = now.duration_since(then);
    Duration::try_from(elapsed).unwrap_or(Duration::ZERO)
}

/// Applies `condition` to `nodes/<node>/status`, server-side, as
/// [`FIELD_MANAGER`], forcing ownership of our fields only.
pub async fn apply(client: &Client, node: &str, condition: &NodeCondition) -> Result<(), ApiError> {
    let body = apply_body(node, condition);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    within(Api::<Node>::all(client.clone()).patch_status(node, &params, &Patch::Apply(&body)))
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use zerohop_doctor::verdict::Readiness;

    fn verdict(readiness: Readiness, reason: &str, message: &str) -> Verdict {
        Verdict {
            readiness,
            reason: reason.into(),
            message: message.into(),
            failing: BTreeSet::new(),
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    const BEAT: Duration = Duration::from_secs(300);

    #[test]
    fn the_first_write_starts_the_transition_clock() {
        let ready = verdict(Readiness::Ready, "DataPathReady", "no check fails");
        let written = next(None, &ready, at(0), BEAT).expect("first write");
        assert_eq!(written.status, "True");
        assert_eq!(written.last_transition_time, Some(Time(at(0))));
        assert_eq!(written.last_heartbeat_time, Some(Time(at(0))));
    }

    #[test]
    fn an_unchanged_condition_is_written_only_as_a_heartbeat() {
        let ready = verdict(Readiness::Ready, "DataPathReady", "no check fails");
        let stored = next(None, &ready, at(0), BEAT).unwrap();
        assert_eq!(next(Some(&stored), &ready, at(100), BEAT), None);
        let beat = next(Some(&stored), &ready, at(300), BEAT).expect("heartbeat");
        // A heartbeat is not a transition: an agent restart or a quiet
        // night keeps the time the status last changed.
        assert_eq!(beat.last_transition_time, Some(Time(at(0))));
        assert_eq!(beat.last_heartbeat_time, Some(Time(at(300))));
    }

    #[test]
    fn a_status_change_is_written_at_once_with_a_new_transition_time() {
        let ready = verdict(Readiness::Ready, "DataPathReady", "no check fails");
        let stored = next(None, &ready, at(0), BEAT).unwrap();
        let broken = verdict(Readiness::NotReady, "RdmaPortDown", "RDMA004: fix");
        let written = next(Some(&stored), &broken, at(10), BEAT).expect("change");
        assert_eq!(written.status, "False");
        assert_eq!(written.reason.as_deref(), Some("RdmaPortDown"));
        assert_eq!(written.last_transition_time, Some(Time(at(10))));
    }

    #[test]
    fn a_new_root_cause_with_the_same_status_keeps_the_transition_time() {
        let one = verdict(Readiness::NotReady, "RdmaPortDown", "RDMA004: fix");
        let stored = next(None, &one, at(0), BEAT).unwrap();
        let other = verdict(Readiness::NotReady, "IommuDisabled", "KRN001: fix");
        let written = next(Some(&stored), &other, at(20), BEAT).expect("message change");
        assert_eq!(written.last_transition_time, Some(Time(at(0))));
    }

    #[test]
    fn a_heartbeat_from_the_future_is_rewritten_not_trusted() {
        let ready = verdict(Readiness::Ready, "DataPathReady", "no check fails");
        let mut stored = next(None, &ready, at(0), BEAT).unwrap();
        stored.last_heartbeat_time = Some(Time(at(10_000)));
        let written = next(Some(&stored), &ready, at(50), BEAT).expect("rewritten");
        assert_eq!(written.last_heartbeat_time, Some(Time(at(50))));
        assert_eq!(written.last_transition_time, Some(Time(at(0))));
    }

    #[test]
    fn the_apply_body_names_only_our_condition() {
        let ready = verdict(Readiness::Ready, "DataPathReady", "no check fails");
        let condition = next(None, &ready, at(0), BEAT).unwrap();
        insta::assert_json_snapshot!(apply_body("gpu-node-1", &condition), @r#"
        {
          "apiVersion": "v1",
          "kind": "Node",
          "metadata": {
            "name": "gpu-node-1"
          },
          "status": {
            "conditions": [
              {
                "lastHeartbeatTime": "2027-01-15T08:00:00Z",
                "lastTransitionTime": "2027-01-15T08:00:00Z",
                "message": "no check fails",
                "reason": "DataPathReady",
                "status": "True",
                "type": "zerohop.dev/DataPathReady"
              }
            ]
          }
        }
        "#);
    }
}
