//! The admission policy that holds each agent to its own node.
//!
//! RBAC cannot name "the node this pod runs on": the agent's ClusterRole
//! lets it patch the status of every Node and write every
//! `DataPathReport`, so one compromised agent could mark the whole fleet
//! not ready. A `ValidatingAdmissionPolicy` can: since Kubernetes 1.30 a
//! service-account token bound to a pod carries the name of the pod's node,
//! and the API server puts it in the request's user info as the extra
//! `authentication.kubernetes.io/node-name` (`NodeNameKey`,
//! k8s.io/apiserver/pkg/authentication/serviceaccount/util.go; the
//! `ServiceAccountTokenPodNodeInfo` feature, beta and on by default in 1.30,
//! GA in 1.32). The policy admits the agent's writes to `nodes/status` and
//! to `datapathreports` only when the object's name is that node's (a
//! report is named after its node). A token without the claim is refused:
//! it is not the pod's own.
//!
//! A status patch reaches admission as an `UPDATE` of `nodes/status`; a
//! server-side apply that creates the report as a `CREATE`. The policy and
//! its binding are `admissionregistration.k8s.io/v1` (GA in 1.30).

use serde_json::{Value, json};
use zerohop_known::zerohop_api::{AGENT_NAME, GROUP, PLURAL};

/// The user-info extra that names the node a service-account token is
/// bound to.
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";

/// The name of the policy and of its binding.
pub const POLICY_NAME: &str = "zerohop-agent-own-node";

/// The policy: only the agent's service account is matched; its writes
/// must name its own node.
pub(super) fn policy(namespace: &str) -> Value {
    let user = format!("system:serviceaccount:{namespace}:{AGENT_NAME}");
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": { "name": POLICY_NAME, "labels": super::labels() },
        "spec": {
            // A policy that cannot be evaluated refuses: the agent waits
            // and retries, the fleet stays as it was.
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["nodes/status"],
                    },
                    {
                        "apiGroups": [GROUP],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE", "DELETE"],
                        "resources": [PLURAL],
                    },
                ],
            },
            "matchConditions": [{
                "name": "the-agent",
                "expression": format!("request.userInfo.username == '{user}'"),
            }],
            "variables": [{
                "name": "node",
                "expression": format!(
                    "has(request.userInfo.extra) && '{NODE_NAME_KEY}' in request.userInfo.extra && size(request.userInfo.extra['{NODE_NAME_KEY}']) == 1 ? request.userInfo.extra['{NODE_NAME_KEY}'][0] : ''"
                ),
            }],
            "validations": [
                {
                    "expression": "variables.node != ''",
                    "message": format!("the agent's token names no node ({NODE_NAME_KEY}): it is not a pod's token, or the cluster is older than Kubernetes 1.30"),
                    "reason": "Forbidden",
                },
                {
                    "expression": "request.name == variables.node",
                    "messageExpression": "'the agent on ' + variables.node + ' may write only its own node and report, not ' + request.name",
                    "reason": "Forbidden",
                },
            ],
        },
    })
}

/// The binding that enforces the policy everywhere.
pub(super) fn binding() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": { "name": POLICY_NAME, "labels": super::labels() },
        "spec": {
            "policyName": POLICY_NAME,
            "validationActions": ["Deny"],
        },
    })
}
