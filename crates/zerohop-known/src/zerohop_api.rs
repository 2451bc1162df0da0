//! zerohop's own API: the group and version of the intent file and of the
//! per-node report object, that object's CustomResourceDefinition, the node
//! condition, the label prefix, the agent's name and port, and where Node
//! Feature Discovery reads feature files. The agent writes them, the
//! planner deploys the agent and `fleet` reads them back; the size caps are
//! here because the CRD's schema and the agent's writer must agree on them.

use serde_json::{Value, json};

/// The API group of zerohop's resources.
pub const GROUP: &str = "zerohop.dev";
/// The version served.
pub const VERSION: &str = "v1alpha1";
/// `apiVersion` of the objects.
pub const API_VERSION: &str = "zerohop.dev/v1alpha1";
/// The kind of the per-node report object.
pub const KIND: &str = "DataPathReport";
/// The resource name in URLs.
pub const PLURAL: &str = "datapathreports";

/// The node condition type the agent owns. Positive polarity: `True` means
/// the zero-copy data path is ready, so a scheduling gate or a
/// `NodeReadinessRule` can require it as is.
pub const CONDITION_TYPE: &str = "zerohop.dev/DataPathReady";
/// The prefix of the capability labels (`zerohop.dev/gpudirect-rdma`).
pub const LABEL_PREFIX: &str = "zerohop.dev/";

/// The agent's name: DaemonSet, ServiceAccount, RBAC objects and the field
/// manager of its writes.
pub const AGENT_NAME: &str = "zerohop-agent";
/// The port the agent listens on in the DaemonSet.
pub const AGENT_PORT: u16 = 9477;
/// The image repository of zerohop's own image.
pub const IMAGE_REPOSITORY: &str = "ghcr.io/zerohop/zerohop";

/// The default image of the agent: [`IMAGE_REPOSITORY`] at the version of
/// this build, so a rendered DaemonSet runs the zerohop that rendered it.
pub fn default_image() -> String {
    format!("{IMAGE_REPOSITORY}:{}", env!("CARGO_PKG_VERSION"))
}
/// Node Feature Discovery's features directory on the host: NFD's worker
/// reads every file there as labels (NFD docs, "Feature files").
pub const FEATURES_DIR: &str = "/etc/kubernetes/node-feature-discovery/features.d";

/// The most bytes of a condition or event message. The API server accepts
/// far more, but every Node watcher receives the Node on each write, and a
/// message is for people: the details are in the report object.
pub const MESSAGE_CAP: usize = 1024;
/// The largest report object written, in bytes of JSON: well under the API
/// server's 1.5 MiB request limit (etcd's default value size), and small
/// enough that listing a thousand of them stays cheap.
pub const BYTES_CAP: usize = 256 * 1024;
/// The most findings one report object lists, whatever their size.
pub const MAX_FINDINGS: usize = 2000;
/// The most bytes of a finding's subject in the report object.
pub const SUBJECT_CAP: usize = 256;
/// The most bytes of a finding's message or fix in the report object.
pub const TEXT_CAP: usize = 512;

/// The CustomResourceDefinition of `DataPathReport`.
pub fn report_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{PLURAL}.{GROUP}"),
            "labels": { "app.kubernetes.io/name": AGENT_NAME },
        },
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {
                "kind": KIND,
                "listKind": format!("{KIND}List"),
                "plural": PLURAL,
                "singular": "datapathreport",
                "shortNames": ["dpr"],
            },
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "additionalPrinterColumns": [
                    { "name": "Ready", "type": "string", "jsonPath": ".condition.status" },
                    { "name": "Reason", "type": "string", "jsonPath": ".condition.reason" },
                    { "name": "Fail", "type": "integer", "jsonPath": ".summary.fail" },
                    { "name": "Warn", "type": "integer", "jsonPath": ".summary.warn" },
                    { "name": "Pass", "type": "date", "jsonPath": ".pass.finishedAt" },
                ],
                "schema": { "openAPIV3Schema": schema() },
            }],
        },
    })
}

/// The structural schema of the object.
fn schema() -> Value {
    let string = |max: usize| json!({ "type": "string", "maxLength": max });
    let count = || json!({ "type": "integer", "minimum": 0.0 });
    let statuses = [
        "pass",
        "info",
        "warn",
        "fail",
        "unknown",
        "not-applicable",
        "blocked",
    ];
    let condition = json!({
        "description": "The same judgement as the node's zerohop.dev/DataPathReady condition.",
        "type": "object",
        "required": ["status"],
        "properties": {
            "status": { "type": "string", "enum": ["True", "False", "Unknown"] },
            "reason": string(128),
            "message": string(MESSAGE_CAP),
        },
    });
    let pass = json!({
        "type": "object",
        "properties": {
            "finishedAt": { "type": "string", "format": "date-time" },
            "durationSeconds": { "type": "number", "minimum": 0.0 },
            "intervalSeconds": count(),
            "zerohopVersion": string(64),
        },
    });
    let summary = json!({
        "type": "object",
        "properties": {
            "pass": count(), "info": count(), "warn": count(), "fail": count(),
            "unknown": count(), "notApplicable": count(), "blocked": count(),
        },
    });
    let finding = json!({
        "type": "object",
        "required": ["id", "status"],
        "properties": {
            "id": string(32),
            "name": string(128),
            "group": string(32),
            "status": { "type": "string", "enum": statuses },
            "subject": string(SUBJECT_CAP),
            "message": string(TEXT_CAP),
            "fix": string(TEXT_CAP),
            "blockedBy": string(SUBJECT_CAP),
        },
    });
    json!({
        "description": "The last result of zerohop's data path checks on one node, written by the zerohop agent running there.",
        "type": "object",
        "properties": {
            "apiVersion": { "type": "string" },
            "kind": { "type": "string" },
            "metadata": { "type": "object" },
            "node": string(253),
            "condition": condition,
            "pass": pass,
            "summary": summary,
            "findings": {
                "description": "Every finding that is not a pass, failures first, cut to fit the object size cap.",
                "type": "array",
                "maxItems": MAX_FINDINGS,
                "items": finding,
            },
            "omittedFindings": count(),
        },
    })
}
