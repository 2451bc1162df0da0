//! The per-node `DataPathReport` object (its CustomResourceDefinition is
//! `zerohop_known::zerohop_api::report_crd`).
//!
//!
//! The node condition says ready or not and names the first root cause;
//! the report object holds the rest (the summary and every finding that is
//! not a pass), so that `zerohop fleet --by-check` and people with
//! `kubectl get datapathreports` can see which node fails what without
//! reaching each node. It is cluster-scoped, named after its node and owned
//! by it, so it is garbage-collected with the Node.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::Client;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use zerohop_cluster::api::{ApiError, report_resource, within};
use zerohop_core::{Finding, Report, Status};

use zerohop_doctor::verdict::{Verdict, cap};
use zerohop_known::zerohop_api::{
    API_VERSION, BYTES_CAP, KIND, MAX_FINDINGS, SUBJECT_CAP, TEXT_CAP,
};

use crate::condition::FIELD_MANAGER;

/// What a pass contributes to the report object.
#[derive(Debug, Clone, Copy)]
pub struct PassInfo<'a> {
    /// The node.
    pub node: &'a str,
    /// The Node's UID, for the owner reference; without it the object is
    /// written without an owner (and not garbage-collected).
    pub node_uid: Option<&'a str>,
    /// The verdict of the pass.
    pub verdict: &'a Verdict,
    /// The report, when the pass finished.
    pub report: Option<&'a Report>,
    /// When the pass ended.
    pub finished_at: Timestamp,
    /// How long it took.
    pub duration: Duration,
    /// The agent's interval between passes, so a reader can tell a stale
    /// object from a fresh one.
    pub interval: Duration,
}

/// The object for server-side apply: summary, condition, and the findings
/// that are not passes (failures first), cut to [`BYTES_CAP`] with the
/// number left out.
pub fn object(pass: &PassInfo<'_>) -> Value {
    let mut metadata = json!({ "name": pass.node });
    if let Some(uid) = pass.node_uid {
        metadata["ownerReferences"] = json!([{
            "apiVersion": "v1",
            "kind": "Node",
            "name": pass.node,
            "uid": uid,
        }]);
    }
    let mut object = json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "node": pass.node,
        "condition": {
            "status": pass.verdict.readiness.condition_status(),
            "reason": pass.verdict.reason,
            "message": pass.verdict.message,
        },
        "pass": {
            "finishedAt": pass.finished_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "durationSeconds": (pass.duration.as_secs_f64() * 1000.0).round() / 1000.0,
            "intervalSeconds": pass.interval.as_secs(),
            "zerohopVersion": env!("CARGO_PKG_VERSION"),
        },
    });
    let Some(report) = pass.report else {
        return object;
    };
    let s = &report.summary;
    object["summary"] = json!({
        "pass": s.pass, "info": s.info, "warn": s.warn, "fail": s.fail,
        "unknown": s.unknown, "notApplicable": s.not_applicable, "blocked": s.blocked,
    });
    let mut size = serde_json::to_vec(&object).map_or(0, |v| v.len()) + 64;
    let mut findings = Vec::new();
    let mut omitted = 0usize;
    for finding in listed(report) {
        let entry = entry(finding);
        let entry_size = serde_json::to_vec(&entry).map_or(0, |v| v.len()) + 1;
        if findings.len() >= MAX_FINDINGS || size + entry_size > BYTES_CAP {
            omitted += 1;
            continue;
        }
        size += entry_size;
        findings.push(entry);
    }
    object["findings"] = Value::Array(findings);
    object["omittedFindings"] = json!(omitted);
    object
}

/// The findings worth listing, worst first: fail, warn, blocked, unknown.
fn listed(report: &Report) -> impl Iterator<Item = &Finding> {
    [Status::Fail, Status::Warn, Status::Blocked, Status::Unknown]
        .into_iter()
        .flat_map(move |status| report.findings.iter().filter(move |f| f.status == status))
}

fn entry(finding: &Finding) -> Value {
    let mut entry = json!({
        "id": finding.id,
        "name": finding.name,
        "group": finding.group,
        "status": finding.status.as_str(),
        "message": cap(&finding.message, TEXT_CAP),
    });
    if !finding.subject.is_empty() {
        entry["subject"] = json!(cap(&finding.subject, SUBJECT_CAP));
    }
    if let Some(fix) = finding
        .remediation
        .as_ref()
        .filter(|r| !r.summary.is_empty())
    {
        entry["fix"] = json!(cap(&fix.summary, TEXT_CAP));
    }
    if let Some(by) = &finding.blocked_by {
        entry["blockedBy"] = json!(cap(by, SUBJECT_CAP));
    }
    entry
}

/// Applies a `DataPathReport` object server-side, as [`FIELD_MANAGER`].
pub async fn apply(client: &Client, object: &Value) -> Result<(), ApiError> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api = Api::<DynamicObject>::all_with(client.clone(), &report_resource());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    within(api.patch(name, &params, &Patch::Apply(object)))
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use zerohop_core::{Remediation, Severity};

    use super::*;
    use zerohop_doctor::verdict::judge;

    fn finding(id: &str, status: Status, message: String) -> Finding {
        Finding {
            id: id.into(),
            name: "check".into(),
            group: "rdma".into(),
            status,
            severity: Severity::Error,
            subject: "mlx5_0/1".into(),
            message,
            evidence: vec![],
            remediation: Some(Remediation::new("fix it")),
            blocked_by: None,
            location: None,
            object: None,
        }
    }

    #[test]
    fn a_huge_report_is_cut_under_the_cap_and_says_how_much_was_left_out() {
        let findings: Vec<Finding> = (0..20_000)
            .map(|i| {
                finding(
                    &format!("RDMA{:03}", i % 1000),
                    Status::Fail,
                    "x".repeat(5000),
                )
            })
            .collect();
        let report = Report::new("doctor", "/host", findings);
        let verdict = judge(&report);
        let value = object(&PassInfo {
            node: "n1",
            node_uid: Some("uid-1"),
            verdict: &verdict,
            report: Some(&report),
            finished_at: Timestamp::UNIX_EPOCH,
            duration: Duration::from_millis(1500),
            interval: Duration::from_secs(300),
        });
        let size = serde_json::to_vec(&value).unwrap().len();
        assert!(size <= BYTES_CAP, "{size}");
        let listed = value["findings"].as_array().unwrap().len();
        assert!(listed > 100, "{listed}");
        assert_eq!(value["omittedFindings"], json!(20_000 - listed));
        assert_eq!(
            value["findings"][0]["message"].as_str().unwrap().len(),
            TEXT_CAP
        );
    }

    #[test]
    fn passes_are_not_listed_and_failures_come_first() {
        let report = Report::new(
            "doctor",
            "/host",
            vec![
                finding("KRN001", Status::Unknown, "cannot read".into()),
                finding("KRN002", Status::Pass, "fine".into()),
                finding("RDMA004", Status::Fail, "port down".into()),
            ],
        );
        let verdict = judge(&report);
        let value = object(&PassInfo {
            node: "n1",
            node_uid: None,
            verdict: &verdict,
            report: Some(&report),
            finished_at: Timestamp::UNIX_EPOCH,
            duration: Duration::from_millis(1500),
            interval: Duration::from_secs(300),
        });
        let ids: Vec<&str> = value["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["RDMA004", "KRN001"]);
        assert!(value["metadata"].get("ownerReferences").is_none());
    }
}
