//! The `ValidatingAdmissionPolicy` rendered with the agent, judged the way
//! the API server judges it: the request must match the policy's
//! resource rules and every match condition, then every validation must
//! hold (Kubernetes documentation, "Validating Admission Policy"). The CEL
//! expressions are evaluated by a CEL implementation (the `cel` crate)
//! against admission requests shaped as the API server builds them
//! (`admission.k8s.io/v1` `AdmissionRequest`: `resource`, `subResource`,
//! `name`, `operation`, `userInfo` with `extra`).

use serde_json::{Value, json};
use zerohop_plan::agent::{self, NODE_NAME_KEY, POLICY_NAME};
use zerohop_plan::{AgentPlan, Platform};

const AGENT: &str = "system:serviceaccount:zerohop-system:zerohop-agent";

/// What the API server makes of a request.
#[derive(Debug, PartialEq)]
enum Admission {
    /// The policy does not apply to it.
    NotMatched,
    /// Every validation held.
    Admitted,
    /// A validation failed, with its message.
    Refused(String),
}

fn policy() -> Value {
    let objects = agent::objects(&AgentPlan::default(), Platform::Kubernetes);
    let binding = objects
        .iter()
        .find(|o| o["kind"] == "ValidatingAdmissionPolicyBinding")
        .expect("a binding");
    assert_eq!(binding["spec"]["policyName"], POLICY_NAME);
    assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
    objects
        .into_iter()
        .find(|o| o["kind"] == "ValidatingAdmissionPolicy")
        .expect("a policy")
}

/// Evaluates one CEL expression with `request` and `variables` bound.
fn eval(expression: &str, request: &Value, variables: &Value) -> cel::Value {
    let program = cel::Program::compile(expression)
        .unwrap_or_else(|err| panic!("{expression}: does not parse: {err:?}"));
    let mut context = cel::Context::default();
    context.add_variable("request", request.clone()).unwrap();
    context
        .add_variable("variables", variables.clone())
        .unwrap();
    program
        .execute(&context)
        .unwrap_or_else(|err| panic!("{expression}: {err:?}"))
}

fn truth(expression: &str, request: &Value, variables: &Value) -> bool {
    match eval(expression, request, variables) {
        cel::Value::Bool(value) => value,
        other => panic!("{expression} gave {other:?}, not a bool"),
    }
}

/// Whether one of the policy's resource rules matches the request.
fn matches_rules(policy: &Value, request: &Value) -> bool {
    let resource = match request["subResource"].as_str() {
        Some(sub) if !sub.is_empty() => format!(
            "{}/{sub}",
            request["resource"]["resource"].as_str().unwrap()
        ),
        _ => request["resource"]["resource"].as_str().unwrap().to_owned(),
    };
    let has = |list: &Value, item: &Value| {
        list.as_array()
            .unwrap()
            .iter()
            .any(|entry| entry == item || entry == "*")
    };
    policy["spec"]["matchConstraints"]["resourceRules"]
        .as_array()
        .unwrap()
        .iter()
        .any(|rule| {
            has(&rule["apiGroups"], &request["resource"]["group"])
                && has(&rule["apiVersions"], &request["resource"]["version"])
                && has(&rule["operations"], &request["operation"])
                && has(&rule["resources"], &json!(resource))
        })
}

fn admit(policy: &Value, request: &Value) -> Admission {
    let spec = &policy["spec"];
    if !matches_rules(policy, request) {
        return Admission::NotMatched;
    }
    let none = json!({});
    for condition in spec["matchConditions"].as_array().unwrap() {
        if !truth(condition["expression"].as_str().unwrap(), request, &none) {
            return Admission::NotMatched;
        }
    }
    let mut variables = json!({});
    for variable in spec["variables"].as_array().unwrap() {
        let value = match eval(
            variable["expression"].as_str().unwrap(),
            request,
            &variables,
        ) {
            cel::Value::String(text) => Value::String(text.to_string()),
            other => panic!("variable {} gave {other:?}", variable["name"]),
        };
        variables[variable["name"].as_str().unwrap()] = value;
    }
    for validation in spec["validations"].as_array().unwrap() {
        if truth(
            validation["expression"].as_str().unwrap(),
            request,
            &variables,
        ) {
            continue;
        }
        let message = match validation["messageExpression"].as_str() {
            Some(expression) => match eval(expression, request, &variables) {
                cel::Value::String(text) => text.to_string(),
                other => panic!("{expression} gave {other:?}"),
            },
            None => validation["message"].as_str().unwrap().to_owned(),
        };
        return Admission::Refused(message);
    }
    Admission::Admitted
}

/// An admission request of `user` (with these extras) for `operation` on
/// the named object.
fn request(
    user: &str,
    extra: Option<Value>,
    operation: &str,
    (group, version, resource, sub): (&str, &str, &str, &str),
    name: &str,
) -> Value {
    let mut user_info =
        json!({ "username": user, "uid": "u-1", "groups": ["system:serviceaccounts"] });
    if let Some(extra) = extra {
        user_info["extra"] = extra;
    }
    json!({
        "uid": "req-1",
        "kind": { "group": group, "version": version, "kind": "Object" },
        "resource": { "group": group, "version": version, "resource": resource },
        "subResource": sub,
        "name": name,
        "operation": operation,
        "userInfo": user_info,
    })
}

fn bound_to(node: &str) -> Option<Value> {
    Some(json!({
        "authentication.kubernetes.io/pod-name": ["zerohop-agent-x7k2p"],
        "authentication.kubernetes.io/pod-uid": ["8a3e"],
        NODE_NAME_KEY: [node],
        "authentication.kubernetes.io/node-uid": ["4c1f"],
    }))
}

const NODE_STATUS: (&str, &str, &str, &str) = ("", "v1", "nodes", "status");
const REPORTS: (&str, &str, &str, &str) = ("zerohop.dev", "v1alpha1", "datapathreports", "");

#[test]
fn the_agent_writes_its_own_node_and_report() {
    let policy = policy();
    for (operation, resource) in [
        ("UPDATE", NODE_STATUS),
        ("CREATE", REPORTS),
        ("UPDATE", REPORTS),
        ("DELETE", REPORTS),
    ] {
        let asked = request(AGENT, bound_to("gpu-17"), operation, resource, "gpu-17");
        assert_eq!(
            admit(&policy, &asked),
            Admission::Admitted,
            "{operation} {resource:?}"
        );
    }
}

#[test]
fn the_agent_cannot_write_another_node_or_report() {
    let policy = policy();
    for (operation, resource) in [
        ("UPDATE", NODE_STATUS),
        ("CREATE", REPORTS),
        ("UPDATE", REPORTS),
        ("DELETE", REPORTS),
    ] {
        let asked = request(AGENT, bound_to("gpu-17"), operation, resource, "gpu-18");
        match admit(&policy, &asked) {
            Admission::Refused(message) => {
                assert!(
                    message.contains("gpu-17") && message.contains("gpu-18"),
                    "{message}"
                );
            }
            other => panic!("{operation} {resource:?}: {other:?}"),
        }
    }
}

/// A token that names no node is not a pod's bound token (a long-lived
/// secret token, or a cluster without the node claim): refused, whatever
/// the object.
#[test]
fn a_token_without_its_node_is_refused() {
    let policy = policy();
    let without_key = Some(json!({ "authentication.kubernetes.io/pod-name": ["p"] }));
    let two_nodes = Some(json!({ NODE_NAME_KEY: ["gpu-17", "gpu-18"] }));
    let empty = Some(json!({ NODE_NAME_KEY: [] }));
    for extra in [None, without_key, two_nodes, empty] {
        let asked = request(AGENT, extra.clone(), "UPDATE", NODE_STATUS, "gpu-17");
        match admit(&policy, &asked) {
            Admission::Refused(message) => assert!(message.contains(NODE_NAME_KEY), "{message}"),
            other => panic!("{extra:?}: {other:?}"),
        }
    }
}

/// The policy is about the agent: people, the kubelet, other controllers
/// and another namespace's service account of the same name are not
/// matched, nor are the agent's other calls (reading its Node, events).
#[test]
fn others_and_other_calls_are_not_matched() {
    let policy = policy();
    for user in [
        "system:node:gpu-18",
        "kubernetes-admin",
        "system:serviceaccount:other:zerohop-agent",
        "system:serviceaccount:zerohop-system:zerohop-agent-2",
    ] {
        let asked = request(user, bound_to("gpu-17"), "UPDATE", NODE_STATUS, "gpu-18");
        assert_eq!(admit(&policy, &asked), Admission::NotMatched, "{user}");
    }
    let node_itself = request(
        AGENT,
        bound_to("gpu-17"),
        "UPDATE",
        ("", "v1", "nodes", ""),
        "gpu-18",
    );
    assert_eq!(admit(&policy, &node_itself), Admission::NotMatched);
    let event = request(
        AGENT,
        bound_to("gpu-17"),
        "CREATE",
        ("events.k8s.io", "v1", "events", ""),
        "gpu-18.1",
    );
    assert_eq!(admit(&policy, &event), Admission::NotMatched);
}

/// The match condition names the namespace the agent is deployed in.
#[test]
fn the_policy_follows_the_namespace() {
    let settings = AgentPlan::new(
        "node-checks".to_owned(),
        zerohop_known::zerohop_api::default_image(),
        Vec::new(),
    )
    .unwrap();
    let policy = agent::objects(&settings, Platform::Openshift)
        .into_iter()
        .find(|o| o["kind"] == "ValidatingAdmissionPolicy")
        .unwrap();
    let ours = "system:serviceaccount:node-checks:zerohop-agent";
    let asked = request(ours, bound_to("gpu-17"), "UPDATE", NODE_STATUS, "gpu-18");
    assert!(matches!(admit(&policy, &asked), Admission::Refused(_)));
    let theirs = request(AGENT, bound_to("gpu-17"), "UPDATE", NODE_STATUS, "gpu-18");
    assert_eq!(admit(&policy, &theirs), Admission::NotMatched);
}
