//! `deploy/kustomize`: the agent's base and its OpenShift and monitoring
//! overlays, as `kubectl kustomize` builds them, are the objects
//! `zerohop agent --print-manifests` renders for the same settings (and the
//! objects `zerohop plan` puts in its set).
//!
//! The files the overlays list (`agent.yaml`, `scc.yaml`,
//! `monitoring.yaml`, `network-policy.yaml`, `zerohop-fleet.json`) are
//! generated from the renderer: a test fails when one is stale, and
//! `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-plan --test agent_kustomize`
//! writes them again. The kustomizations and their patches are written by
//! hand, and the builds hold them to the renderer.
//!
//! `kubectl` that is not installed fails the test under CI (`.ci/run`
//! installs it from PyPI) and skips it visibly elsewhere.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use zerohop_plan::agent::{self, monitoring};
use zerohop_plan::{AgentPlan, Monitor, Platform};

/// The namespace of the monitoring stack the overlay's `NetworkPolicy`
/// admits (kube-prometheus and kube-prometheus-stack install there).
const MONITORING_NAMESPACE: &str = "monitoring";

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kustomize")
}

fn monitored() -> AgentPlan {
    AgentPlan {
        monitors: vec![Monitor::ServiceMonitor, Monitor::PrometheusRule],
        ..AgentPlan::default()
    }
}

fn key(object: &Value) -> (String, String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        text(&object["kind"]),
        text(&object["metadata"]["namespace"]),
        text(&object["metadata"]["name"]),
    )
}

/// The objects of a stream, in a fixed order, each number as the API
/// server reads it (kustomize prints the CRD's `minimum: 0.0` as `0`).
fn sorted(objects: Vec<Value>) -> Vec<Value> {
    let mut objects: Vec<Value> = objects.into_iter().map(numbers_by_value).collect();
    objects.sort_by_key(key);
    objects
}

fn numbers_by_value(value: Value) -> Value {
    match value {
        Value::Number(number) => match number.as_f64() {
            #[expect(clippy::cast_possible_truncation, reason = "integral, checked")]
            Some(float) if float.fract() == 0.0 && float.abs() < 9.0e15 => {
                Value::from(float as i64)
            }
            _ => Value::Number(number),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_by_value).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k, numbers_by_value(v)))
                .collect(),
        ),
        other => other,
    }
}

/// The same objects, whatever their order; a difference is shown object
/// by object.
fn assert_same(built: Vec<Value>, expected: Vec<Value>, what: &str) {
    let built = sorted(built);
    let expected = sorted(expected);
    let names = |objects: &[Value]| objects.iter().map(key).collect::<Vec<_>>();
    assert_eq!(names(&built), names(&expected), "{what}: other objects");
    for (built, expected) in built.iter().zip(&expected) {
        assert!(
            built == expected,
            "{what}: {:?} differs\nbuilt:    {}\nrendered: {}",
            key(expected),
            serde_json::to_string_pretty(built).unwrap_or_default(),
            serde_json::to_string_pretty(expected).unwrap_or_default(),
        );
    }
}

fn yaml_stream(objects: &[Value]) -> String {
    let mut out = String::from(
        "# Generated from the renderer of `zerohop agent --print-manifests`: do not edit;\n# ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-plan --test agent_kustomize writes it again.\n",
    );
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object).expect("YAML"));
    }
    out
}

/// Every generated file, with its expected contents.
fn generated() -> Vec<(PathBuf, String)> {
    let base = agent::objects(&AgentPlan::default(), Platform::Kubernetes);
    let openshift = agent::objects(&AgentPlan::default(), Platform::Openshift);
    let scc: Vec<Value> = openshift
        .into_iter()
        .filter(|o| o["kind"] == "SecurityContextConstraints")
        .collect();
    let monitors: Vec<Value> = agent::objects(&monitored(), Platform::Kubernetes)
        .into_iter()
        .filter(|o| !base.contains(o))
        .collect();
    let policy = monitoring::network_policy("zerohop-system", MONITORING_NAMESPACE);
    let mut dashboard = serde_json::to_string_pretty(&monitoring::dashboard()).expect("JSON");
    dashboard.push('\n');
    let root = deploy();
    vec![
        (root.join("base/agent.yaml"), yaml_stream(&base)),
        (root.join("overlays/openshift/scc.yaml"), yaml_stream(&scc)),
        (
            root.join("overlays/monitoring/monitoring.yaml"),
            yaml_stream(&monitors),
        ),
        (
            root.join("overlays/monitoring/network-policy.yaml"),
            yaml_stream(&[policy]),
        ),
        (
            root.join("overlays/monitoring/zerohop-fleet.json"),
            dashboard,
        ),
    ]
}

#[test]
fn the_generated_files_are_current() {
    let update = std::env::var_os("ZEROHOP_UPDATE_DOCS").is_some();
    for (path, expected) in generated() {
        if update {
            std::fs::write(&path, &expected).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let actual = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            actual == expected,
            "{} is stale; run `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-plan --test agent_kustomize`",
            path.display()
        );
    }
}

fn installed(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{program} is not installed: .ci/run installs it, and CI must not pass without it"
        );
        eprintln!("skipped: {program} is not installed (.ci/run installs it)");
    }
    found
}

/// `kubectl kustomize DIR`, read back as objects.
fn build(dir: &Path) -> Vec<Value> {
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .unwrap_or_else(|err| panic!("kubectl kustomize: {err}"));
    assert!(
        output.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .split("\n---\n")
        .filter(|doc| !doc.trim().is_empty())
        .map(|doc| serde_saphyr::from_str(doc).expect("kustomize prints YAML"))
        .collect()
}

#[test]
fn the_base_builds_to_the_rendered_objects() {
    if !installed("kubectl") {
        return;
    }
    assert_same(
        build(&deploy().join("base")),
        agent::objects(&AgentPlan::default(), Platform::Kubernetes),
        "base",
    );
}

/// The overlay's patches give what `--platform openshift` renders: the
/// SCC, the right to use it, and the pod's SELinux type.
#[test]
fn the_openshift_overlay_builds_to_the_rendered_objects() {
    if !installed("kubectl") {
        return;
    }
    assert_same(
        build(&deploy().join("overlays/openshift")),
        agent::objects(&AgentPlan::default(), Platform::Openshift),
        "openshift overlay",
    );
}

/// The monitoring overlay: the rendered monitors and alerts, the
/// NetworkPolicy, and the dashboard in a ConfigMap that Grafana's sidecar
/// finds by its label.
#[test]
fn the_monitoring_overlay_builds_to_the_rendered_objects() {
    if !installed("kubectl") {
        return;
    }
    let mut built = build(&deploy().join("overlays/monitoring"));
    let at = built
        .iter()
        .position(|o| o["kind"] == "ConfigMap")
        .expect("the dashboard's ConfigMap");
    let config_map = built.remove(at);
    assert_eq!(config_map["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(config_map["metadata"]["namespace"], "zerohop-system");
    let text = config_map["data"]["zerohop-fleet.json"]
        .as_str()
        .expect("the dashboard file");
    let dashboard: Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(dashboard, monitoring::dashboard());

    let mut expected = agent::objects(&monitored(), Platform::Kubernetes);
    expected.push(monitoring::network_policy(
        "zerohop-system",
        MONITORING_NAMESPACE,
    ));
    assert_same(built, expected, "monitoring overlay");
}

/// The NetworkPolicy selects the agent's pods and admits only the
/// monitoring namespace, on the agent's port only.
#[test]
fn only_the_monitoring_namespace_may_scrape() {
    let policy = monitoring::network_policy("zerohop-system", "openshift-monitoring");
    let daemon_set = agent::objects(&AgentPlan::default(), Platform::Kubernetes)
        .into_iter()
        .find(|o| o["kind"] == "DaemonSet")
        .unwrap();
    let pod_labels = &daemon_set["spec"]["template"]["metadata"]["labels"];
    for (key, value) in policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .unwrap()
    {
        assert_eq!(&pod_labels[key], value);
    }
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress"])
    );
    let rules = policy["spec"]["ingress"].as_array().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0]["from"],
        serde_json::json!([{ "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": "openshift-monitoring" } } }])
    );
    let port = &daemon_set["spec"]["template"]["spec"]["containers"][0]["ports"][0];
    assert_eq!(rules[0]["ports"][0]["port"], port["containerPort"]);
}

/// The overlay that docs/agent.md ("Monitoring") shows for a Prometheus
/// that selects by `release` puts the label on the monitor and the rule,
/// and on nothing else.
#[test]
fn a_release_label_patch_reaches_the_monitor_and_the_rule() {
    if !installed("kubectl") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // kustomize takes a base by a relative path only.
    let here = dir.path().canonicalize().expect("tempdir");
    let monitoring = deploy()
        .join("overlays/monitoring")
        .canonicalize()
        .expect("the monitoring overlay");
    let up = "../".repeat(here.components().count() - 1);
    let monitoring = format!(
        "{up}{}",
        monitoring.strip_prefix("/").expect("absolute").display()
    );
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "resources:\n  - {}\npatches:\n  - target: {{ group: monitoring.coreos.com, name: zerohop-agent }}\n    patch: |-\n      - op: add\n        path: /metadata/labels/release\n        value: kube-prometheus-stack\n",
            monitoring
        ),
    )
    .unwrap();
    let built = build(dir.path());
    let doc = std::fs::read_to_string(deploy().join("../../docs/agent.md")).unwrap();
    assert!(
        doc.contains("target: { group: monitoring.coreos.com, name: zerohop-agent }"),
        "docs/agent.md shows another patch"
    );
    for object in &built {
        let labelled = object["metadata"]["labels"]["release"] == "kube-prometheus-stack";
        let monitor = object["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("monitoring.coreos.com/"));
        assert_eq!(labelled, monitor, "{:?}", key(object));
    }
}
