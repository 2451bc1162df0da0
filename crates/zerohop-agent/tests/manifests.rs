//! The deployment `zerohop agent --print-manifests` renders: valid objects
//! (the built-in kinds through the Kubernetes API types, the CRD through
//! the repository's validator), least privilege, and read-only host mounts.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use zerohop_agent::manifests::{self, Monitor, Settings};
use zerohop_agent::report_object;
use zerohop_k8s::schema::CrdCatalog;

fn all_monitors() -> Settings {
    Settings {
        monitors: vec![Monitor::Service, Monitor::Pod],
        ..Settings::default()
    }
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// Deserializes into the API type and back: a misspelt or unknown field
/// is dropped on the way and the comparison fails.
fn round_trips<T: DeserializeOwned + Serialize>(object: &Value) {
    let typed: T = serde_json::from_value(object.clone())
        .unwrap_or_else(|err| panic!("{}: {err}", object["kind"]));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &back, object,
        "{} has fields the API does not know",
        object["kind"]
    );
}

#[test]
fn built_in_objects_are_valid_api_objects() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    use k8s_openapi::api::core::v1::{Namespace, Service, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    let objects = manifests::objects(&all_monitors());
    for object in &objects {
        match object["kind"].as_str().unwrap() {
            "Namespace" => round_trips::<Namespace>(object),
            "ServiceAccount" => round_trips::<ServiceAccount>(object),
            "ClusterRole" => round_trips::<ClusterRole>(object),
            "ClusterRoleBinding" => round_trips::<ClusterRoleBinding>(object),
            "Role" => round_trips::<Role>(object),
            "RoleBinding" => round_trips::<RoleBinding>(object),
            "DaemonSet" => round_trips::<DaemonSet>(object),
            "Service" => round_trips::<Service>(object),
            "CustomResourceDefinition" | "ServiceMonitor" | "PodMonitor" => {}
            other => panic!("unexpected kind {other}"),
        }
    }
}

#[test]
fn the_crd_is_valid_and_serves_the_objects_the_agent_writes() {
    let objects = manifests::objects(&Settings::default());
    let crd = of_kind(&objects, "CustomResourceDefinition")[0].clone();
    assert_eq!(crd, report_object::crd());
    round_trips::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(&crd);
    let catalog = CrdCatalog::from_documents([crd]).expect("a valid CRD");
    assert!(catalog.knows(report_object::API_VERSION, report_object::KIND));
    assert!(catalog.skipped().is_empty(), "{:?}", catalog.skipped());
}

#[test]
fn the_yaml_stream_reads_back_as_the_objects() {
    let settings = all_monitors();
    let text = manifests::render(&settings);
    let documents: Vec<Value> = text
        .split("\n---\n")
        .skip(1)
        .map(|doc| serde_saphyr::from_str(doc).expect("each document is YAML"))
        .collect();
    assert_eq!(documents, manifests::objects(&settings));
}

#[test]
fn the_agent_can_only_report() {
    let objects = manifests::objects(&Settings::default());
    let mut granted: Vec<(String, String, String, String)> = Vec::new();
    for role in of_kind(&objects, "ClusterRole")
        .into_iter()
        .chain(of_kind(&objects, "Role"))
        .filter(|r| r["metadata"]["name"] == "zerohop-agent")
    {
        let scope = role["metadata"]["namespace"]
            .as_str()
            .unwrap_or("cluster")
            .to_owned();
        for rule in role["rules"].as_array().unwrap() {
            for resource in rule["resources"].as_array().unwrap() {
                for verb in rule["verbs"].as_array().unwrap() {
                    granted.push((
                        scope.clone(),
                        rule["apiGroups"][0].as_str().unwrap().to_owned(),
                        resource.as_str().unwrap().to_owned(),
                        verb.as_str().unwrap().to_owned(),
                    ));
                }
            }
        }
    }
    granted.sort();
    let expected: Vec<(String, String, String, String)> = [
        ("cluster", "", "nodes", "get"),
        ("cluster", "", "nodes/status", "patch"),
        ("cluster", "zerohop.dev", "datapathreports", "create"),
        ("cluster", "zerohop.dev", "datapathreports", "get"),
        ("cluster", "zerohop.dev", "datapathreports", "patch"),
        ("default", "events.k8s.io", "events", "create"),
        ("default", "events.k8s.io", "events", "get"),
        ("default", "events.k8s.io", "events", "patch"),
    ]
    .iter()
    .map(|(a, b, c, d)| ((*a).into(), (*b).into(), (*c).into(), (*d).into()))
    .collect();
    // No patch on nodes (cordon, taints, labels), no pods/eviction, no delete.
    assert_eq!(granted, expected);
}

#[test]
fn host_mounts_are_read_only_but_the_features_directory() {
    let objects = manifests::objects(&Settings::default());
    let daemon_set = of_kind(&objects, "DaemonSet")[0];
    let pod = &daemon_set["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    for mount in container["volumeMounts"].as_array().unwrap() {
        let writable = mount["mountPath"] == manifests::FEATURES_DIR;
        assert_eq!(
            mount["readOnly"].as_bool().unwrap_or(false),
            !writable,
            "{mount}"
        );
    }
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["privileged"], false);
    assert_eq!(
        security["capabilities"],
        json!({ "drop": ["ALL"], "add": ["SYS_PTRACE"] })
    );
    assert_eq!(pod["tolerations"], json!([{ "operator": "Exists" }]));
    assert!(pod.get("nodeSelector").is_none(), "every node by default");
    assert!(pod.get("hostNetwork").is_none() && pod.get("hostPID").is_none());
    assert_eq!(
        container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
        "spec.nodeName"
    );
    assert!(container["resources"]["limits"]["memory"].is_string());
    assert!(container["resources"]["requests"]["cpu"].is_string());
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    let namespace = of_kind(&objects, "Namespace")[0];
    assert_eq!(
        namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "privileged"
    );
}

#[test]
fn the_rendered_deployment() {
    insta::assert_snapshot!(manifests::render(&all_monitors()));
}
