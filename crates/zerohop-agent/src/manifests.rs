//! The agent's deployment: namespace, CRD, service account, least RBAC,
//! DaemonSet and, optionally, the Prometheus Operator's monitors.
//!
//! Every choice that widens what the pod can do is here with its reason:
//! - hostPath mounts are read-only, except Node Feature Discovery's
//!   `features.d`, where the agent writes its one file;
//! - the container runs as root (uid 0) with every capability dropped but
//!   `SYS_PTRACE`: uid 0 is the owner of the sysfs and procfs files it
//!   reads and of `features.d`, and `SYS_PTRACE` lets it read the host's
//!   mount table and NFS transport counters in `/proc/1/` (the kernel
//!   checks ptrace access to read another process's `mountinfo` and
//!   `mountstats`); no other capability is needed to read;
//! - the root file system is read-only and privilege escalation is off;
//! - the namespace is labelled `privileged` for Pod Security Admission,
//!   because the baseline level forbids hostPath volumes.
//!
//! The agent only reports: its RBAC cannot cordon, taint or evict.

use serde_json::{Value, json};

use crate::condition::CONDITION_TYPE;
use crate::report_object;

/// The port the agent listens on in the DaemonSet.
pub const PORT: u16 = 9477;
/// NFD's features directory on the host.
pub const FEATURES_DIR: &str = "/etc/kubernetes/node-feature-discovery/features.d";
/// The default image; the tag is zerohop's version.
pub const IMAGE_REPOSITORY: &str = "ghcr.io/zerohop/zerohop";

/// Which Prometheus Operator monitor to render, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Monitor {
    /// A `ServiceMonitor` and the headless `Service` it selects.
    Service,
    /// A `PodMonitor`.
    Pod,
}

/// What the rendered set is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The namespace of the DaemonSet.
    pub namespace: String,
    /// The image.
    pub image: String,
    /// Monitors to render.
    pub monitors: Vec<Monitor>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            namespace: "zerohop-system".to_owned(),
            image: format!("{IMAGE_REPOSITORY}:{}", env!("CARGO_PKG_VERSION")),
            monitors: Vec::new(),
        }
    }
}

const NAME: &str = "zerohop-agent";

fn labels() -> Value {
    json!({
        "app.kubernetes.io/name": NAME,
        "app.kubernetes.io/part-of": "zerohop",
    })
}

/// Every object, in the order to apply them.
pub fn objects(settings: &Settings) -> Vec<Value> {
    let ns = settings.namespace.as_str();
    let mut objects = vec![
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": ns,
                "labels": {
                    "app.kubernetes.io/part-of": "zerohop",
                    // hostPath volumes are outside the baseline level.
                    "pod-security.kubernetes.io/enforce": "privileged",
                    "pod-security.kubernetes.io/audit": "privileged",
                    "pod-security.kubernetes.io/warn": "privileged",
                },
            },
        }),
        report_object::crd(),
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": { "name": NAME, "namespace": ns, "labels": labels() },
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": NAME, "labels": labels() },
            "rules": [
                // Its own Node: the UID for owner references, and the
                // condition a previous agent left.
                { "apiGroups": [""], "resources": ["nodes"], "verbs": ["get"] },
                // The condition, by server-side apply on the status.
                { "apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"] },
                // The report objects (apply creates the first one).
                {
                    "apiGroups": [report_object::GROUP],
                    "resources": [report_object::PLURAL],
                    "verbs": ["get", "create", "patch"],
                },
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": NAME, "labels": labels() },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME },
            "subjects": [{ "kind": "ServiceAccount", "name": NAME, "namespace": ns }],
        }),
        // Events about Nodes live in `default`; the agent may write there
        // and nowhere else.
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": { "name": NAME, "namespace": "default", "labels": labels() },
            "rules": [{
                "apiGroups": ["events.k8s.io"],
                "resources": ["events"],
                "verbs": ["create", "get", "patch"],
            }],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": { "name": NAME, "namespace": "default", "labels": labels() },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME },
            "subjects": [{ "kind": "ServiceAccount", "name": NAME, "namespace": ns }],
        }),
        // For people and CI running `zerohop fleet`: bind it to whom needs it.
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": "zerohop-fleet-reader", "labels": labels() },
            "rules": [
                { "apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"] },
                {
                    "apiGroups": [report_object::GROUP],
                    "resources": [report_object::PLURAL],
                    "verbs": ["get", "list", "watch"],
                },
            ],
        }),
        daemon_set(settings),
    ];
    if settings.monitors.contains(&Monitor::Service) {
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": { "name": NAME, "namespace": ns, "labels": labels() },
            "spec": {
                "clusterIP": "None",
                "selector": { "app.kubernetes.io/name": NAME },
                "ports": [{ "name": "metrics", "port": PORT, "targetPort": "metrics" }],
            },
        }));
        objects.push(json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": { "name": NAME, "namespace": ns, "labels": labels() },
            "spec": {
                "selector": { "matchLabels": { "app.kubernetes.io/name": NAME } },
                "endpoints": [{ "port": "metrics", "path": "/metrics", "interval": "30s" }],
            },
        }));
    }
    if settings.monitors.contains(&Monitor::Pod) {
        objects.push(json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": { "name": NAME, "namespace": ns, "labels": labels() },
            "spec": {
                "selector": { "matchLabels": { "app.kubernetes.io/name": NAME } },
                "podMetricsEndpoints": [{ "port": "metrics", "path": "/metrics", "interval": "30s" }],
            },
        }));
    }
    objects
}

fn daemon_set(settings: &Settings) -> Value {
    let args = [
        "agent".to_owned(),
        "--root=/host".to_owned(),
        format!("--listen=0.0.0.0:{PORT}"),
        format!("--features-dir={FEATURES_DIR}"),
        "--node-condition".to_owned(),
        "--report-object".to_owned(),
    ];
    let host = |name: &str, path: &str| json!({ "name": name, "hostPath": { "path": path, "type": "Directory" } });
    let mount =
        |name: &str, path: &str| json!({ "name": name, "mountPath": path, "readOnly": true });
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": { "name": NAME, "namespace": settings.namespace, "labels": labels() },
        "spec": {
            "selector": { "matchLabels": { "app.kubernetes.io/name": NAME } },
            // A bad rollout stops at a tenth of the nodes.
            "updateStrategy": { "type": "RollingUpdate", "rollingUpdate": { "maxUnavailable": "10%" } },
            "template": {
                "metadata": {
                    "labels": labels(),
                    "annotations": { "cluster-autoscaler.kubernetes.io/safe-to-evict": "true" },
                },
                "spec": {
                    "serviceAccountName": NAME,
                    "priorityClassName": "system-node-critical",
                    // Every node by default: selecting on a label that is
                    // never applied would silently run nowhere. Every
                    // taint is tolerated (GPU taints, NoExecute included).
                    "tolerations": [{ "operator": "Exists" }],
                    "terminationGracePeriodSeconds": 10,
                    "containers": [{
                        "name": "agent",
                        "image": settings.image,
                        "args": args,
                        "env": [{
                            "name": "NODE_NAME",
                            "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } },
                        }],
                        "ports": [{ "name": "metrics", "containerPort": PORT, "protocol": "TCP" }],
                        // Liveness is the process answering; the node's
                        // data path never makes the pod unhealthy.
                        "livenessProbe": {
                            "httpGet": { "path": "/healthz", "port": "metrics" },
                            "periodSeconds": 30,
                            "timeoutSeconds": 5,
                            "failureThreshold": 3,
                        },
                        "readinessProbe": {
                            "httpGet": { "path": "/readyz", "port": "metrics" },
                            "periodSeconds": 10,
                            "timeoutSeconds": 5,
                        },
                        "resources": {
                            "requests": { "cpu": "10m", "memory": "64Mi" },
                            "limits": { "cpu": "500m", "memory": "256Mi" },
                        },
                        "securityContext": {
                            "runAsUser": 0,
                            "runAsNonRoot": false,
                            "readOnlyRootFilesystem": true,
                            "allowPrivilegeEscalation": false,
                            "privileged": false,
                            "capabilities": { "drop": ["ALL"], "add": ["SYS_PTRACE"] },
                            "seccompProfile": { "type": "RuntimeDefault" },
                        },
                        "volumeMounts": [
                            mount("proc", "/host/proc"),
                            mount("sys", "/host/sys"),
                            mount("dev", "/host/dev"),
                            mount("etc", "/host/etc"),
                            { "name": "features", "mountPath": FEATURES_DIR },
                        ],
                    }],
                    "volumes": [
                        host("proc", "/proc"),
                        host("sys", "/sys"),
                        host("dev", "/dev"),
                        host("etc", "/etc"),
                        { "name": "features", "hostPath": { "path": FEATURES_DIR, "type": "DirectoryOrCreate" } },
                    ],
                },
            },
        },
    })
}

/// The objects as one multi-document YAML stream.
pub fn render(settings: &Settings) -> String {
    let mut out = format!(
        "# zerohop agent {}: apply with `kubectl apply -f`; the condition it writes is {CONDITION_TYPE}\n",
        env!("CARGO_PKG_VERSION")
    );
    for object in objects(settings) {
        out.push_str("---\n");
        // Serializing a JSON value cannot fail: its keys are strings.
        let text = serde_saphyr::to_string(&object).unwrap_or_default();
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}
