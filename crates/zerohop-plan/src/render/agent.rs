//! The zerohop agent's deployment: namespace, the `DataPathReport` CRD,
//! service account, least RBAC, DaemonSet and, optionally, the Prometheus
//! Operator's monitors; on OpenShift also the SecurityContextConstraints
//! that admit it. `zerohop plan` renders it as a step of the set and
//! `zerohop agent --print-manifests` prints it alone.
//!
//! Every choice that widens what the pod can do is here with its reason:
//! - hostPath mounts are read-only, except Node Feature Discovery's
//!   `features.d`, where the agent writes its one file (NFD docs, "Feature
//!   files": nfd-worker reads every file in that directory as labels);
//! - the container runs as root (uid 0) with every capability dropped but
//!   `SYS_PTRACE`: uid 0 is the owner of the sysfs and procfs files it
//!   reads and of `features.d`, and `SYS_PTRACE` lets it read the host's
//!   mount table and NFS transport counters in `/proc/1/` (the kernel
//!   checks ptrace access to read another process's `mountinfo` and
//!   `mountstats`: `proc_mountinfo_open` → `mounts_open_common`,
//!   fs/proc_namespace.c); no other capability is needed to read;
//! - to read the kernel log (`/dev/kmsg`: the peermem, link-flap, NFS and
//!   AER evidence), the container is privileged, as node-problem-detector's
//!   is (`deployment/node-problem-detector.yaml` in
//!   kubernetes/node-problem-detector at
//!   6632ca67148f7a23df9cdbd98d9e89b388561a3a: `privileged: true` and a
//!   `/dev/kmsg` hostPath). A capability is not enough: runc lets an
//!   unprivileged container open only its default device list
//!   (`AllowedDevices`, libcontainer/specconv/spec_linux.go: null, zero,
//!   full, tty, random, urandom, console, ptmx, pts, tun), which `/dev/kmsg`
//!   (c 1:11) is not on, whatever its capabilities (node-problem-detector
//!   issue #698). `CAP_SYSLOG` is named all the same: with
//!   `kernel.dmesg_restrict=1` the kernel asks for it to open the device
//!   (`devkmsg_open` → `check_syslog_permissions`,
//!   kernel/printk/printk.c), and OpenShift's SCC admits only the
//!   capabilities it lists. `kernelLog: false` keeps the container
//!   unprivileged, and the kernel-log checks say `unknown`;
//! - the root file system is read-only and, unless the container is
//!   privileged, privilege escalation is off;
//! - the namespace is labelled `privileged` for Pod Security Admission,
//!   because the baseline level forbids hostPath volumes (Kubernetes docs,
//!   "Pod Security Standards", HostPath Volumes);
//! - on OpenShift, whose `restricted-v2` SCC admits neither hostPath nor
//!   uid 0, the agent's service account may `use` one SCC of its own that
//!   admits exactly this pod, as the NFD operator does for nfd-worker
//!   (`use` on `securitycontextconstraints` by `resourceNames`); the pod
//!   runs as `spc_t` because RHCOS's SELinux policy does not let
//!   `container_t` write host files such as `features.d`.
//!
//! The agent only reports: its RBAC cannot cordon, taint or evict, and a
//! `ValidatingAdmissionPolicy` (the `admission` module) holds each agent to its own
//! node's condition and report.

mod admission;
pub mod monitoring;

pub use admission::{NODE_NAME_KEY, POLICY_NAME};

use serde_json::{Value, json};
use zerohop_known::zerohop_api::{
    AGENT_NAME, AGENT_PORT, CONDITION_TYPE, FEATURES_DIR, GROUP, PLURAL, report_crd,
};

use super::{Step, to_yaml};
use crate::intent::{Monitor, Platform};
use crate::plan::{AgentPlan, Plan};

/// The file of the set that deploys the agent: after the host, network,
/// GPU and storage steps, so that its first passes judge a configured node,
/// and before the workload, so that the workload can wait for ready nodes.
pub(crate) const FILE: &str = "65-zerohop-agent.yaml";

/// The SELinux type of the agent's pod on OpenShift.
const SELINUX_TYPE: &str = "spc_t";

/// The kernel log's device node, on the host and in the container.
const KMSG: &str = "/dev/kmsg";

/// The step of the set that deploys the agent, when the intent wants it.
pub(crate) fn step(plan: &Plan) -> Option<Step> {
    let agent = plan.agent.as_ref()?;
    let ns = zerohop_known::shell::quote(&agent.namespace);
    Some(Step {
        path: FILE.to_owned(),
        objects: objects(agent, plan.platform),
        title: "zerohop agent: every node keeps being checked".to_owned(),
        checks: vec![
            format!("kubectl -n {ns} rollout status daemonset/{AGENT_NAME} --timeout=10m"),
            // Ready, NotReady, Stale or NoAgent per node, and why.
            "zerohop fleet".to_owned(),
        ],
    })
}

/// Every object, in the order to apply them.
pub fn objects(agent: &AgentPlan, platform: Platform) -> Vec<Value> {
    let ns = agent.namespace.as_str();
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
        report_crd(),
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": { "name": AGENT_NAME, "namespace": ns, "labels": labels() },
        }),
        cluster_role(platform),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": AGENT_NAME, "labels": labels() },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AGENT_NAME },
            "subjects": [{ "kind": "ServiceAccount", "name": AGENT_NAME, "namespace": ns }],
        }),
        // Events about Nodes live in `default`; the agent may write there
        // and nowhere else.
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": { "name": AGENT_NAME, "namespace": "default", "labels": labels() },
            "rules": [{
                "apiGroups": ["events.k8s.io"],
                "resources": ["events"],
                "verbs": ["create", "get", "patch"],
            }],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": { "name": AGENT_NAME, "namespace": "default", "labels": labels() },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": AGENT_NAME },
            "subjects": [{ "kind": "ServiceAccount", "name": AGENT_NAME, "namespace": ns }],
        }),
        // For people and CI running `zerohop fleet`: bind it to whom needs it.
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": { "name": "zerohop-fleet-reader", "labels": labels() },
            "rules": [
                { "apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"] },
                {
                    "apiGroups": [GROUP],
                    "resources": [PLURAL],
                    "verbs": ["get", "list", "watch"],
                },
            ],
        }),
        daemon_set(agent, platform),
        admission::policy(ns),
        admission::binding(),
    ];
    if platform == Platform::Openshift {
        objects.push(security_context_constraints(ns, agent.kernel_log));
    }
    if agent.monitors.contains(&Monitor::ServiceMonitor) {
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": { "name": AGENT_NAME, "namespace": ns, "labels": labels() },
            "spec": {
                "clusterIP": "None",
                "selector": { "app.kubernetes.io/name": AGENT_NAME },
                "ports": [{ "name": "metrics", "port": AGENT_PORT, "targetPort": "metrics" }],
            },
        }));
        objects.push(json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": { "name": AGENT_NAME, "namespace": ns, "labels": monitor_labels(agent) },
            "spec": {
                "selector": { "matchLabels": { "app.kubernetes.io/name": AGENT_NAME } },
                "endpoints": [{ "port": "metrics", "path": "/metrics", "interval": "30s" }],
            },
        }));
    }
    if agent.monitors.contains(&Monitor::PodMonitor) {
        objects.push(json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": { "name": AGENT_NAME, "namespace": ns, "labels": monitor_labels(agent) },
            "spec": {
                "selector": { "matchLabels": { "app.kubernetes.io/name": AGENT_NAME } },
                "podMetricsEndpoints": [{ "port": "metrics", "path": "/metrics", "interval": "30s" }],
            },
        }));
    }
    if agent.monitors.contains(&Monitor::PrometheusRule) {
        objects.push(monitoring::prometheus_rule(ns, monitor_labels(agent)));
    }
    objects
}

/// What the agent may do: read its own Node, patch its status (the
/// condition), and write the report objects; on OpenShift also `use` its
/// SCC.
fn cluster_role(platform: Platform) -> Value {
    let mut role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": { "name": AGENT_NAME, "labels": labels() },
        "rules": [
            // Its own Node: the UID for owner references, and the
            // condition a previous agent left.
            { "apiGroups": [""], "resources": ["nodes"], "verbs": ["get"] },
            // The condition, by server-side apply on the status.
            { "apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"] },
            // The report objects (apply creates the first one).
            {
                "apiGroups": [GROUP],
                "resources": [PLURAL],
                "verbs": ["get", "create", "patch"],
            },
        ],
    });
    if platform == Platform::Openshift
        && let Some(rules) = role["rules"].as_array_mut()
    {
        rules.push(json!({
            "apiGroups": ["security.openshift.io"],
            "resources": ["securitycontextconstraints"],
            "resourceNames": [AGENT_NAME],
            "verbs": ["use"],
        }));
    }
    role
}

/// The SCC that admits the agent's pod and nothing wider: hostPath
/// volumes, uid 0, its capabilities, `spc_t`, a read-only root file
/// system, no host namespaces, and a privileged container only to read the
/// kernel log (a privileged container escalates, so the SCC allows that
/// too). The fields the `SecurityContextConstraints` schema requires are
/// all given.
fn security_context_constraints(namespace: &str, kernel_log: bool) -> Value {
    let description = if kernel_log {
        format!(
            "admits the zerohop agent in {namespace}: read-only hostPath mounts of /proc, /sys, /dev, /dev/kmsg and /etc, uid 0, privileged to read the kernel log"
        )
    } else {
        format!(
            "admits the zerohop agent in {namespace}: read-only hostPath mounts of /proc, /sys, /dev and /etc, uid 0 with SYS_PTRACE only"
        )
    };
    json!({
        "apiVersion": "security.openshift.io/v1",
        "kind": "SecurityContextConstraints",
        "metadata": {
            "name": AGENT_NAME,
            "labels": labels(),
            "annotations": {
                "kubernetes.io/description": description,
            },
        },
        // Required by the CRD (openshift/api `security/v1`, nullable): null
        // is "no priority", as OpenShift's own SCCs write it. Left out, the
        // server refuses the SCC ("priority: Required value").
        "priority": null,
        "allowHostDirVolumePlugin": true,
        "allowHostIPC": false,
        "allowHostNetwork": false,
        "allowHostPID": false,
        "allowHostPorts": false,
        "allowPrivilegeEscalation": kernel_log,
        "allowPrivilegedContainer": kernel_log,
        "allowedCapabilities": capabilities(kernel_log),
        "defaultAddCapabilities": [],
        "requiredDropCapabilities": [],
        "readOnlyRootFilesystem": true,
        "runAsUser": { "type": "RunAsAny" },
        "seLinuxContext": { "type": "MustRunAs", "seLinuxOptions": { "type": SELINUX_TYPE } },
        "fsGroup": { "type": "RunAsAny" },
        "supplementalGroups": { "type": "RunAsAny" },
        "seccompProfiles": ["runtime/default"],
        "volumes": ["hostPath", "projected"],
        "users": [],
        "groups": [],
    })
}

/// The capabilities the agent uses: `SYS_PTRACE` to read `/proc/1/`, and
/// `SYSLOG` to open `/dev/kmsg` when `kernel.dmesg_restrict` is set.
fn capabilities(kernel_log: bool) -> Value {
    if kernel_log {
        json!(["SYS_PTRACE", "SYSLOG"])
    } else {
        json!(["SYS_PTRACE"])
    }
}

/// The container's security context: read-only root, uid 0, every
/// capability dropped but those [`capabilities`] names; privileged when it
/// reads the kernel log, because the runtime's device list admits
/// `/dev/kmsg` to no other container (the API server refuses a privileged
/// container with `allowPrivilegeEscalation: false`, so that is left out).
fn security_context(kernel_log: bool) -> Value {
    let mut context = json!({
        "runAsUser": 0,
        "runAsNonRoot": false,
        "readOnlyRootFilesystem": true,
        "allowPrivilegeEscalation": false,
        "privileged": false,
        "capabilities": { "drop": ["ALL"], "add": capabilities(kernel_log) },
        "seccompProfile": { "type": "RuntimeDefault" },
    });
    if kernel_log && let Some(fields) = context.as_object_mut() {
        fields.remove("allowPrivilegeEscalation");
        fields.insert("privileged".to_owned(), Value::Bool(true));
    }
    context
}

fn daemon_set(agent: &AgentPlan, platform: Platform) -> Value {
    let args = [
        "agent".to_owned(),
        "--root=/host".to_owned(),
        format!("--listen=0.0.0.0:{AGENT_PORT}"),
        format!("--features-dir={FEATURES_DIR}"),
        "--node-condition".to_owned(),
        "--report-object".to_owned(),
    ];
    let host = |name: &str, path: &str| json!({ "name": name, "hostPath": { "path": path, "type": "Directory" } });
    let mount =
        |name: &str, path: &str| json!({ "name": name, "mountPath": path, "readOnly": true });
    let mut daemon_set = json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": { "name": AGENT_NAME, "namespace": agent.namespace, "labels": labels() },
        "spec": {
            "selector": { "matchLabels": { "app.kubernetes.io/name": AGENT_NAME } },
            // A bad rollout stops at a tenth of the nodes.
            "updateStrategy": { "type": "RollingUpdate", "rollingUpdate": { "maxUnavailable": "10%" } },
            "template": {
                "metadata": {
                    "labels": labels(),
                    "annotations": { "cluster-autoscaler.kubernetes.io/safe-to-evict": "true" },
                },
                "spec": {
                    "serviceAccountName": AGENT_NAME,
                    "priorityClassName": "system-node-critical",
                    // Every node by default: selecting on a label that is
                    // never applied would silently run nowhere. Every
                    // taint is tolerated (GPU taints, NoExecute included).
                    "tolerations": [{ "operator": "Exists" }],
                    "terminationGracePeriodSeconds": 10,
                    "containers": [{
                        "name": "agent",
                        "image": agent.image,
                        "args": args,
                        "env": [{
                            "name": "NODE_NAME",
                            "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } },
                        }],
                        "ports": [{ "name": "metrics", "containerPort": AGENT_PORT, "protocol": "TCP" }],
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
                        "securityContext": security_context(agent.kernel_log),
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
    });
    if agent.kernel_log {
        // The agent reads /dev/kmsg first, then the one under --root.
        let pod = &mut daemon_set["spec"]["template"]["spec"];
        if let Some(mounts) = pod["containers"][0]["volumeMounts"].as_array_mut() {
            mounts.push(json!({ "name": "kmsg", "mountPath": KMSG, "readOnly": true }));
        }
        if let Some(volumes) = pod["volumes"].as_array_mut() {
            volumes.push(
                json!({ "name": "kmsg", "hostPath": { "path": KMSG, "type": "CharDevice" } }),
            );
        }
    }
    if platform == Platform::Openshift {
        daemon_set["spec"]["template"]["spec"]["securityContext"] =
            json!({ "seLinuxOptions": { "type": SELINUX_TYPE } });
    }
    daemon_set
}

/// The objects as one multi-document YAML stream, for
/// `zerohop agent --print-manifests`.
pub fn render(agent: &AgentPlan, platform: Platform) -> String {
    format!(
        "# zerohop agent {}: apply with `kubectl apply -f`; the condition it writes is {CONDITION_TYPE}\n{}",
        env!("CARGO_PKG_VERSION"),
        to_yaml(&objects(agent, platform))
    )
}

/// The labels of the Prometheus Operator objects: the agent's own, then
/// the configured ones (a configured key wins).
fn monitor_labels(agent: &AgentPlan) -> Value {
    let mut labels = labels();
    if let Some(map) = labels.as_object_mut() {
        for (key, value) in &agent.monitor_labels {
            map.insert(key.clone(), Value::String(value.clone()));
        }
    }
    labels
}

fn labels() -> Value {
    json!({
        "app.kubernetes.io/name": AGENT_NAME,
        "app.kubernetes.io/part-of": "zerohop",
    })
}
