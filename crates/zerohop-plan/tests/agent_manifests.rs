//! The agent's deployment, as `zerohop plan` renders it in the set and
//! `zerohop agent --print-manifests` prints it: valid objects (the built-in
//! kinds through the Kubernetes API types, the CRD through the repository's
//! validator), least privilege, read-only host mounts, and on OpenShift the
//! SCC that admits it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use zerohop_k8s::schema::CrdCatalog;
use zerohop_known::zerohop_api::{self, FEATURES_DIR};
use zerohop_plan::agent;
use zerohop_plan::{AgentPlan, Monitor, Platform};

const PLATFORMS: [Platform; 2] = [Platform::Kubernetes, Platform::Openshift];

fn all_monitors() -> AgentPlan {
    AgentPlan {
        monitors: vec![
            Monitor::ServiceMonitor,
            Monitor::PodMonitor,
            Monitor::PrometheusRule,
        ],
        ..AgentPlan::default()
    }
}

fn without_kernel_log() -> AgentPlan {
    AgentPlan {
        kernel_log: false,
        ..AgentPlan::default()
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
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };
    use k8s_openapi::api::apps::v1::DaemonSet;
    use k8s_openapi::api::core::v1::{Namespace, Service, ServiceAccount};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    round_trips::<NetworkPolicy>(&agent::monitoring::network_policy(
        "zerohop-system",
        "monitoring",
    ));
    for (platform, settings) in PLATFORMS
        .into_iter()
        .flat_map(|p| [(p, all_monitors()), (p, without_kernel_log())])
    {
        for object in &agent::objects(&settings, platform) {
            match object["kind"].as_str().unwrap() {
                "Namespace" => round_trips::<Namespace>(object),
                "ServiceAccount" => round_trips::<ServiceAccount>(object),
                "ClusterRole" => round_trips::<ClusterRole>(object),
                "ClusterRoleBinding" => round_trips::<ClusterRoleBinding>(object),
                "Role" => round_trips::<Role>(object),
                "RoleBinding" => round_trips::<RoleBinding>(object),
                "DaemonSet" => round_trips::<DaemonSet>(object),
                "Service" => round_trips::<Service>(object),
                "ValidatingAdmissionPolicy" => round_trips::<ValidatingAdmissionPolicy>(object),
                "ValidatingAdmissionPolicyBinding" => {
                    round_trips::<ValidatingAdmissionPolicyBinding>(object);
                }
                "CustomResourceDefinition"
                | "ServiceMonitor"
                | "PodMonitor"
                | "PrometheusRule"
                | "SecurityContextConstraints" => {}
                other => panic!("unexpected kind {other}"),
            }
        }
    }
}

#[test]
fn the_crd_is_valid_and_serves_the_objects_the_agent_writes() {
    let objects = agent::objects(&AgentPlan::default(), Platform::Kubernetes);
    let crd = of_kind(&objects, "CustomResourceDefinition")[0].clone();
    assert_eq!(crd, zerohop_api::report_crd());
    round_trips::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(&crd);
    let catalog = CrdCatalog::from_documents([crd]).expect("a valid CRD");
    assert!(catalog.knows(zerohop_api::API_VERSION, zerohop_api::KIND));
    assert!(catalog.skipped().is_empty(), "{:?}", catalog.skipped());
}

#[test]
fn the_yaml_stream_reads_back_as_the_objects() {
    for platform in PLATFORMS {
        let text = agent::render(&all_monitors(), platform);
        let documents: Vec<Value> = text
            .split("\n---\n")
            .skip(1)
            .map(|doc| serde_saphyr::from_str(doc).expect("each document is YAML"))
            .collect();
        assert_eq!(documents, agent::objects(&all_monitors(), platform));
    }
}

#[test]
fn the_agent_can_only_report() {
    for platform in PLATFORMS {
        let granted = granted(&agent::objects(&AgentPlan::default(), platform));
        let mut expected: Vec<(String, String, String, String)> = [
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
        if platform == Platform::Openshift {
            // Its own SCC, by name, and nothing else of OpenShift's.
            expected.push((
                "cluster".into(),
                "security.openshift.io".into(),
                "securitycontextconstraints/zerohop-agent".into(),
                "use".into(),
            ));
            expected.sort();
        }
        // No patch on nodes (cordon, taints, labels), no pods/eviction, no delete.
        assert_eq!(granted, expected, "{platform:?}");
    }
}

/// (scope, API group, resource[/name], verb) of every rule of the agent's
/// own roles.
fn granted(objects: &[Value]) -> Vec<(String, String, String, String)> {
    let mut granted: Vec<(String, String, String, String)> = Vec::new();
    for role in of_kind(objects, "ClusterRole")
        .into_iter()
        .chain(of_kind(objects, "Role"))
        .filter(|r| r["metadata"]["name"] == "zerohop-agent")
    {
        let scope = role["metadata"]["namespace"]
            .as_str()
            .unwrap_or("cluster")
            .to_owned();
        for rule in role["rules"].as_array().unwrap() {
            for resource in rule["resources"].as_array().unwrap() {
                let mut resource = resource.as_str().unwrap().to_owned();
                if let Some(names) = rule["resourceNames"].as_array() {
                    let names: Vec<&str> = names.iter().map(|n| n.as_str().unwrap()).collect();
                    resource = format!("{resource}/{}", names.join(","));
                }
                for verb in rule["verbs"].as_array().unwrap() {
                    granted.push((
                        scope.clone(),
                        rule["apiGroups"][0].as_str().unwrap().to_owned(),
                        resource.clone(),
                        verb.as_str().unwrap().to_owned(),
                    ));
                }
            }
        }
    }
    granted.sort();
    granted
}

#[test]
fn host_mounts_are_read_only_but_the_features_directory() {
    let objects = agent::objects(&AgentPlan::default(), Platform::Kubernetes);
    let daemon_set = of_kind(&objects, "DaemonSet")[0];
    let pod = &daemon_set["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    for mount in container["volumeMounts"].as_array().unwrap() {
        let writable = mount["mountPath"] == FEATURES_DIR;
        assert_eq!(
            mount["readOnly"].as_bool().unwrap_or(false),
            !writable,
            "{mount}"
        );
    }
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["runAsUser"], 0);
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

/// The kernel log is read from `/dev/kmsg`: the device is mounted from the
/// host, `CAP_SYSLOG` is asked for (`kernel.dmesg_restrict=1`), and the
/// container is privileged, because the runtime's device list opens
/// `/dev/kmsg` to no unprivileged container. Without the kernel log the
/// container is unprivileged, with `SYS_PTRACE` only, and mounts no
/// `/dev/kmsg`.
#[test]
fn the_daemon_set_reads_the_kernel_log_unless_told_not_to() {
    for platform in PLATFORMS {
        let objects = agent::objects(&AgentPlan::default(), platform);
        let pod = &of_kind(&objects, "DaemonSet")[0]["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        let security = &container["securityContext"];
        assert_eq!(security["privileged"], true);
        assert!(
            security.get("allowPrivilegeEscalation").is_none(),
            "the API server refuses privileged with allowPrivilegeEscalation false"
        );
        assert_eq!(
            security["capabilities"],
            json!({ "drop": ["ALL"], "add": ["SYS_PTRACE", "SYSLOG"] })
        );
        let mounts = container["volumeMounts"].as_array().unwrap();
        let kmsg = mounts
            .iter()
            .find(|m| m["mountPath"] == "/dev/kmsg")
            .expect("/dev/kmsg is mounted");
        assert_eq!(kmsg["readOnly"], true);
        let volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == kmsg["name"])
            .unwrap();
        assert_eq!(
            volume["hostPath"],
            json!({ "path": "/dev/kmsg", "type": "CharDevice" })
        );

        let objects = agent::objects(&without_kernel_log(), platform);
        let pod = &of_kind(&objects, "DaemonSet")[0]["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        let security = &container["securityContext"];
        assert_eq!(security["privileged"], false);
        assert_eq!(security["allowPrivilegeEscalation"], false);
        assert_eq!(
            security["capabilities"],
            json!({ "drop": ["ALL"], "add": ["SYS_PTRACE"] })
        );
        assert!(
            !container["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["mountPath"] == "/dev/kmsg")
        );
    }
}

/// The SCC admits exactly the pod: every field the `SecurityContextConstraints`
/// type requires (openshift/api `security/v1/types.go`: the `allow*` flags,
/// `readOnlyRootFilesystem`, the strategies) is set, hostPath is allowed,
/// nothing privileged or host-namespaced is, and the pod asks for the
/// SELinux type the SCC forces.
/// With the kernel log the container is privileged, and the SCC allows
/// that, the escalation a privileged container implies (the SCC admission
/// plugin would otherwise default `allowPrivilegeEscalation` to false, which
/// the API server refuses beside `privileged`), `CAP_SYSLOG` and the
/// `/dev/kmsg` hostPath; without it, none of that.
#[test]
fn openshift_admits_the_agent_through_its_own_scc() {
    for settings in [AgentPlan::default(), without_kernel_log()] {
        openshift_admits(&settings);
    }
}

fn openshift_admits(settings: &AgentPlan) {
    let objects = agent::objects(settings, Platform::Openshift);
    let scc = of_kind(&objects, "SecurityContextConstraints");
    assert_eq!(scc.len(), 1);
    let scc = scc[0];
    for flag in [
        "allowHostIPC",
        "allowHostNetwork",
        "allowHostPID",
        "allowHostPorts",
    ] {
        assert_eq!(scc[flag], false, "{flag}");
    }
    let container = &of_kind(&objects, "DaemonSet")[0]["spec"]["template"]["spec"]["containers"][0];
    let privileged = container["securityContext"]["privileged"] == true;
    assert_eq!(privileged, settings.kernel_log);
    assert_eq!(scc["allowPrivilegedContainer"], privileged);
    assert_eq!(scc["allowPrivilegeEscalation"], privileged);
    assert!(
        scc["volumes"]
            .as_array()
            .unwrap()
            .contains(&json!("hostPath"))
    );
    assert_eq!(scc["allowHostDirVolumePlugin"], true);
    assert_eq!(scc["readOnlyRootFilesystem"], true);
    for strategy in [
        "runAsUser",
        "seLinuxContext",
        "fsGroup",
        "supplementalGroups",
    ] {
        assert!(scc[strategy]["type"].is_string(), "{strategy}");
    }
    let daemon_set = of_kind(&objects, "DaemonSet")[0];
    let pod = &daemon_set["spec"]["template"]["spec"];
    assert_eq!(
        pod["securityContext"]["seLinuxOptions"]["type"],
        scc["seLinuxContext"]["seLinuxOptions"]["type"]
    );
    assert_eq!(
        pod["containers"][0]["securityContext"]["capabilities"]["add"],
        scc["allowedCapabilities"]
    );
    // Kubernetes has no SCCs and its pods no SELinux type of ours.
    let plain = agent::objects(settings, Platform::Kubernetes);
    assert!(of_kind(&plain, "SecurityContextConstraints").is_empty());
    assert!(
        of_kind(&plain, "DaemonSet")[0]["spec"]["template"]["spec"]
            .get("securityContext")
            .is_none()
    );
}

#[test]
fn the_rendered_deployment() {
    insta::assert_snapshot!(agent::render(&all_monitors(), Platform::Kubernetes));
}

#[test]
fn the_rendered_deployment_on_openshift() {
    insta::assert_snapshot!(agent::render(&AgentPlan::default(), Platform::Openshift));
}

/// The intent's `spec.agent` decides whether the set deploys the agent and
/// with which monitors; the rendered objects are the same as
/// `agent --print-manifests` prints for the same settings.
#[test]
fn the_plan_deploys_the_agent_as_the_intent_says() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/cluster.yaml");
    let example = std::fs::read_to_string(path).unwrap();
    let with = |agent: &str| {
        let text = example.replacen("spec:\n", &format!("spec:\n  agent:\n{agent}"), 1);
        let plan = zerohop_plan::load("cluster.yaml", &text, Some(Platform::Openshift))
            .unwrap_or_else(|err| panic!("{err}"));
        zerohop_plan::render(&plan)
    };
    let agent_file = |set: &zerohop_plan::ManifestSet| {
        set.files
            .iter()
            .find(|f| f.path == "65-zerohop-agent.yaml")
            .map(|f| f.objects.clone())
    };

    let default = zerohop_plan::render(
        &zerohop_plan::load("cluster.yaml", &example, Some(Platform::Openshift)).unwrap(),
    );
    assert_eq!(
        agent_file(&default),
        Some(agent::objects(&AgentPlan::default(), Platform::Openshift)),
        "deployed by default"
    );

    let off = with("    enabled: false\n");
    assert_eq!(agent_file(&off), None);
    let readme = off.files.iter().find(|f| f.path == "README.md").unwrap();
    assert!(readme.contents.contains("spec.agent.enabled: false"));

    let monitored = with(
        "    namespace: node-checks\n    image: registry.example.com/zerohop:1.2\n    monitors: [podMonitor, serviceMonitor, podMonitor]\n",
    );
    let expected = AgentPlan {
        namespace: "node-checks".to_owned(),
        image: "registry.example.com/zerohop:1.2".to_owned(),
        monitors: vec![Monitor::ServiceMonitor, Monitor::PodMonitor],
        ..AgentPlan::default()
    };
    assert_eq!(
        agent_file(&monitored),
        Some(agent::objects(&expected, Platform::Openshift))
    );

    let labelled = with(
        "    monitors: [serviceMonitor, prometheusRule]\n    monitorLabels:\n      release: kube-prometheus-stack\n    kernelLog: false\n",
    );
    let expected = AgentPlan::new(
        "zerohop-system".to_owned(),
        zerohop_known::zerohop_api::default_image(),
        vec![Monitor::ServiceMonitor, Monitor::PrometheusRule],
    )
    .and_then(|plan| {
        plan.with_monitor_labels(
            [("release".to_owned(), "kube-prometheus-stack".to_owned())].into(),
        )
    })
    .map(|plan| AgentPlan {
        kernel_log: false,
        ..plan
    })
    .unwrap();
    assert_eq!(
        agent_file(&labelled),
        Some(agent::objects(&expected, Platform::Openshift))
    );

    for (bad, named) in [
        ("    namespace: Not_A_Label\n", "Not_A_Label"),
        (
            "    monitorLabels:\n      release: \"not a value\"\n",
            "not a value",
        ),
    ] {
        let bad = example.replacen("spec:\n", &format!("spec:\n  agent:\n{bad}"), 1);
        let err = zerohop_plan::load("cluster.yaml", &bad, None).unwrap_err();
        assert!(err.to_string().contains(named), "{err}");
    }
}

/// kube-prometheus-stack's Prometheus selects monitors and rules by its
/// `release` label: the configured labels are on each of them, beside the
/// agent's own, and on nothing else.
#[test]
fn monitor_labels_are_on_the_monitors_and_rules() {
    let settings = all_monitors()
        .with_monitor_labels([("release".to_owned(), "kps".to_owned())].into())
        .unwrap();
    let objects = agent::objects(&settings, Platform::Kubernetes);
    for object in &objects {
        let kind = object["kind"].as_str().unwrap();
        let labelled = ["ServiceMonitor", "PodMonitor", "PrometheusRule"].contains(&kind);
        assert_eq!(
            object["metadata"]["labels"].get("release").is_some(),
            labelled,
            "{kind}"
        );
        if labelled {
            assert_eq!(
                object["metadata"]["labels"]["app.kubernetes.io/name"],
                "zerohop-agent"
            );
        }
    }
    assert_eq!(
        objects
            .iter()
            .filter(|o| o["kind"] == "PrometheusRule")
            .count(),
        1
    );
    let refused = AgentPlan::default()
        .with_monitor_labels([("bad key!".to_owned(), "x".to_owned())].into())
        .unwrap_err();
    assert!(refused.contains("bad key!"), "{refused}");
}
