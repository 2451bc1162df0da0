//! What watches the agent's `/metrics`: the alerts (a Prometheus
//! Operator `PrometheusRule`), a Grafana dashboard of the fleet, and the
//! `NetworkPolicy` that lets only the monitoring namespace scrape.
//!
//! Every expression names only series the agent serves, with the labels
//! it gives them (`docs/metrics.md`); the agent's tests parse each one and
//! hold it to the metric catalog.

use serde_json::{Value, json};
use zerohop_known::zerohop_api::{AGENT_NAME, AGENT_PORT};

/// How long the data path must stay not ready before the alert fires:
/// longer than one pass (5 minutes by default), so that a node that is
/// being configured or rebooted does not page.
const NOT_READY_FOR: &str = "10m";

/// How old the last pass may be before the agent counts as stale: three
/// default intervals of 5 minutes, the rule `zerohop fleet` applies to the
/// node condition's heartbeat.
const STALE_AFTER_SECONDS: u32 = 3 * 5 * 60;

/// One alert: its name, expression, how long it must hold, severity and
/// what it means.
struct Alert {
    name: &'static str,
    expr: String,
    hold: &'static str,
    severity: &'static str,
    summary: &'static str,
    description: &'static str,
}

/// The alerts. `node` is on every series the agent serves, so each alert
/// names the node it is about.
fn alerts() -> Vec<Alert> {
    vec![
        Alert {
            name: "ZerohopDataPathNotReady",
            expr: r#"max by (node, reason) (zerohop_data_path_status{status="False"}) == 1"#.to_owned(),
            hold: NOT_READY_FOR,
            severity: "warning",
            summary: "the data path of {{ $labels.node }} is not ready: {{ $labels.reason }}",
            description: "zerohop doctor's judgement of the last passes: run `zerohop explain` on the reason, or read the node's DataPathReport (`kubectl get datapathreport {{ $labels.node }} -o yaml`)",
        },
        Alert {
            name: "ZerohopRdmaLinkFlapping",
            expr: r#"max by (node, device, port) (changes(zerohop_infiniband_state_id[15m])) >= 2 or max by (node, device, port) (increase(zerohop_infiniband_link_downed_total[15m])) >= 2 or max by (node) (zerohop_check_status{check="KLOG002", status="fail"}) == 1"#.to_owned(),
            hold: "0m",
            severity: "warning",
            summary: "an RDMA link of {{ $labels.node }} is flapping",
            description: "the port went down and up again within 15 minutes (its state, its link_downed counter, or the kernel log, check KLOG002): a bad cable or transceiver; `zerohop explain KLOG002`",
        },
        Alert {
            name: "ZerohopNfsFellBackToTcp",
            expr: r#"max by (node, mountpoint) (zerohop_nfs_transports{protocol="tcp"}) > 0 unless on (node, mountpoint) max by (node, mountpoint) (zerohop_nfs_transports{protocol="rdma"}) > 0 or max by (node) (zerohop_check_status{check="NFS001", status="fail"}) == 1"#.to_owned(),
            hold: "5m",
            severity: "critical",
            summary: "NFS on {{ $labels.node }} runs over TCP, not RDMA",
            description: "a data mount has TCP transports and no RDMA one (or check NFS001 fails): every read is copied through host memory; `zerohop explain NFS001`",
        },
        Alert {
            name: "ZerohopGpuDirectErrors",
            expr: r#"max by (node, check, name) (zerohop_check_status{check=~"KLOG001|KLOG004", status="fail"}) == 1"#.to_owned(),
            hold: "0m",
            severity: "critical",
            summary: "GPUDirect errors in the kernel log of {{ $labels.node }}: {{ $labels.name }}",
            description: "nvidia-peermem (KLOG001) or nvidia-fs (KLOG004) logged errors: GPUDirect RDMA or Storage falls back to copies or fails; `zerohop explain {{ $labels.check }}`",
        },
        Alert {
            name: "ZerohopKernelLogUnreadable",
            expr: r#"max by (node) (zerohop_check_status{check="KLOG002", status="unknown"}) == 1"#.to_owned(),
            hold: "30m",
            severity: "info",
            summary: "the agent on {{ $labels.node }} cannot read the kernel log",
            description: "the peermem, link-flap, NFS and AER checks say unknown: deploy the agent with kernelLog enabled (a privileged container with /dev/kmsg)",
        },
        Alert {
            name: "ZerohopAgentStale",
            expr: format!(
                "time() - max by (node) (zerohop_last_pass_timestamp_seconds) > {STALE_AFTER_SECONDS} or max by (node) (zerohop_abandoned_passes) > 0"
            ),
            hold: "15m",
            severity: "warning",
            summary: "the agent on {{ $labels.node }} has not finished a pass in 15 minutes",
            description: "a pass is blocked in a read of the host (a wedged device or a hung mount) or the agent is stuck; the node's condition is stale too",
        },
        Alert {
            name: "ZerohopAgentAbsent",
            expr: "max by (node) (zerohop_build_info offset 30m) unless on (node) max by (node) (zerohop_build_info)".to_owned(),
            hold: "10m",
            severity: "warning",
            summary: "the agent on {{ $labels.node }} is gone",
            description: "it served metrics 30 minutes ago and serves none now: its pod is not running (evicted, crash-looping, or the node left the DaemonSet)",
        },
        Alert {
            name: "ZerohopAgentsAbsent",
            expr: "absent(zerohop_build_info)".to_owned(),
            hold: "15m",
            severity: "warning",
            summary: "no zerohop agent is scraped",
            description: "no node's agent serves metrics: the DaemonSet is not deployed, or Prometheus does not select its monitor (kube-prometheus-stack selects on the release label: set monitorLabels)",
        },
    ]
}

/// The `PrometheusRule` with the alerts, labelled for the Prometheus that
/// selects rules by label.
pub(super) fn prometheus_rule(namespace: &str, labels: Value) -> Value {
    let rules: Vec<Value> = alerts()
        .into_iter()
        .map(|alert| {
            json!({
                "alert": alert.name,
                "expr": alert.expr,
                "for": alert.hold,
                "labels": { "severity": alert.severity },
                "annotations": { "summary": alert.summary, "description": alert.description },
            })
        })
        .collect();
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": { "name": AGENT_NAME, "namespace": namespace, "labels": labels },
        "spec": { "groups": [{ "name": "zerohop-agent", "rules": rules }] },
    })
}

/// A panel of the dashboard: a title, a kind, its place on the 24-column
/// grid and its queries (expression, legend).
fn panel(title: &str, kind: &str, grid: [u32; 4], unit: &str, targets: &[(&str, &str)]) -> Value {
    let [x, y, w, h] = grid;
    let targets: Vec<Value> = targets
        .iter()
        .zip('A'..='Z')
        .map(|((expr, legend), ref_id)| {
            json!({
                "datasource": { "type": "prometheus", "uid": "${datasource}" },
                "expr": expr,
                "legendFormat": legend,
                "refId": ref_id.to_string(),
            })
        })
        .collect();
    json!({
        "title": title,
        "type": kind,
        "gridPos": { "x": x, "y": y, "w": w, "h": h },
        "datasource": { "type": "prometheus", "uid": "${datasource}" },
        "fieldConfig": { "defaults": { "unit": unit }, "overrides": [] },
        "targets": targets,
    })
}

/// The Grafana dashboard: fleet readiness, the failing checks per node,
/// the RDMA port and NFS-over-RDMA counters, and the agent's own health.
/// Its data source is a variable, chosen when it is imported.
pub fn dashboard() -> Value {
    let panels = vec![
        panel(
            "Nodes by data path state",
            "stat",
            [0, 0, 8, 5],
            "none",
            &[
                (
                    r#"count(zerohop_data_path_status{status="True"} == 1)"#,
                    "ready",
                ),
                (
                    r#"count(zerohop_data_path_status{status="False"} == 1)"#,
                    "not ready",
                ),
                (
                    r#"count(zerohop_data_path_status{status="Unknown"} == 1)"#,
                    "unknown",
                ),
            ],
        ),
        panel(
            "Fleet readiness over time",
            "timeseries",
            [8, 0, 16, 5],
            "none",
            &[(
                r#"sum by (status) (zerohop_data_path_status)"#,
                "{{status}}",
            )],
        ),
        panel(
            "Nodes not ready, and why",
            "table",
            [0, 5, 12, 8],
            "none",
            &[(
                r#"max by (node, reason) (zerohop_data_path_status{status="False"}) == 1"#,
                "{{node}}: {{reason}}",
            )],
        ),
        panel(
            "Failing checks per node",
            "table",
            [12, 5, 12, 8],
            "none",
            &[(
                r#"max by (node, check, name, group) (zerohop_check_status{status="fail"}) == 1"#,
                "{{node}} {{check}} {{name}}",
            )],
        ),
        panel(
            "RDMA throughput",
            "timeseries",
            [0, 13, 12, 8],
            "Bps",
            &[
                (
                    "sum by (node, device, port) (rate(zerohop_infiniband_port_data_received_bytes_total[5m]))",
                    "{{node}} {{device}}/{{port}} rx",
                ),
                (
                    "sum by (node, device, port) (rate(zerohop_infiniband_port_data_transmitted_bytes_total[5m]))",
                    "{{node}} {{device}}/{{port}} tx",
                ),
            ],
        ),
        panel(
            "RDMA link errors",
            "timeseries",
            [12, 13, 12, 8],
            "short",
            &[
                (
                    "sum by (node, device, port) (increase(zerohop_infiniband_symbol_error_total[5m]))",
                    "{{node}} {{device}}/{{port}} symbol errors",
                ),
                (
                    "sum by (node, device, port) (increase(zerohop_infiniband_link_downed_total[5m]))",
                    "{{node}} {{device}}/{{port}} link downed",
                ),
                (
                    "sum by (node, device, port) (increase(zerohop_infiniband_port_errors_received_total[5m]))",
                    "{{node}} {{device}}/{{port}} receive errors",
                ),
            ],
        ),
        panel(
            "RoCE congestion",
            "timeseries",
            [0, 21, 12, 8],
            "pps",
            &[
                (
                    "sum by (node, device, port) (rate(zerohop_infiniband_np_cnp_packets_sent_total[5m]))",
                    "{{node}} {{device}}/{{port}} CNPs sent",
                ),
                (
                    "sum by (node, device, port) (rate(zerohop_infiniband_rp_cnp_ignored_packets_received_total[5m]))",
                    "{{node}} {{device}}/{{port}} CNPs ignored",
                ),
                (
                    "sum by (node, device, port) (rate(zerohop_infiniband_out_of_buffer_drops_total[5m]))",
                    "{{node}} {{device}}/{{port}} out-of-buffer drops",
                ),
            ],
        ),
        panel(
            "Port state",
            "table",
            [12, 21, 12, 8],
            "none",
            &[(
                "max by (node, device, port) (zerohop_infiniband_state_id) != 4",
                "{{node}} {{device}}/{{port}}",
            )],
        ),
        panel(
            "NFS over RDMA throughput",
            "timeseries",
            [0, 29, 12, 8],
            "Bps",
            &[
                (
                    "sum by (node, mountpoint) (rate(zerohop_nfs_rdma_reply_bytes_total[5m]))",
                    "{{node}} {{mountpoint}} replies",
                ),
                (
                    "sum by (node, mountpoint) (rate(zerohop_nfs_rdma_request_bytes_total[5m]))",
                    "{{node}} {{mountpoint}} requests",
                ),
            ],
        ),
        panel(
            "NFS transports and copies",
            "timeseries",
            [12, 29, 12, 8],
            "short",
            &[
                (
                    "sum by (node, mountpoint, protocol) (zerohop_nfs_transports)",
                    "{{node}} {{mountpoint}} {{protocol}} transports",
                ),
                (
                    "sum by (node, mountpoint) (rate(zerohop_nfs_rdma_pullup_copies_total[5m]) + rate(zerohop_nfs_rdma_fixup_copies_total[5m]))",
                    "{{node}} {{mountpoint}} copies/s",
                ),
            ],
        ),
        panel(
            "Agent: age of the last pass",
            "timeseries",
            [0, 37, 12, 8],
            "s",
            &[(
                "time() - max by (node) (zerohop_last_pass_timestamp_seconds)",
                "{{node}}",
            )],
        ),
        panel(
            "Agent: API errors",
            "timeseries",
            [12, 37, 12, 8],
            "reqps",
            &[(
                r#"sum by (node, call) (rate(zerohop_api_requests_total{outcome="error"}[5m]))"#,
                "{{node}} {{call}}",
            )],
        ),
    ];
    json!({
        "title": "zerohop: GPU data path fleet",
        "uid": "zerohop-fleet",
        "tags": ["zerohop", "rdma", "gpu"],
        "schemaVersion": 39,
        "version": 1,
        "editable": true,
        "refresh": "1m",
        "time": { "from": "now-6h", "to": "now" },
        "templating": {
            "list": [{
                "name": "datasource",
                "label": "Prometheus",
                "type": "datasource",
                "query": "prometheus",
            }],
        },
        "panels": panels,
    })
}

/// The `NetworkPolicy` that admits connections to the agent's port only
/// from pods in `monitoring_namespace` (where Prometheus runs): `/metrics`
/// and `/report` show mount options, addresses and host names. The
/// kubelet's probes come from the node, which a `NetworkPolicy` never
/// blocks (Kubernetes documentation, "Network Policies": traffic to and
/// from the node where a pod runs is always allowed).
pub fn network_policy(namespace: &str, monitoring_namespace: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": AGENT_NAME, "namespace": namespace, "labels": super::labels() },
        "spec": {
            "podSelector": { "matchLabels": { "app.kubernetes.io/name": AGENT_NAME } },
            "policyTypes": ["Ingress"],
            "ingress": [{
                "from": [{
                    "namespaceSelector": {
                        "matchLabels": { "kubernetes.io/metadata.name": monitoring_namespace },
                    },
                }],
                "ports": [{ "port": AGENT_PORT, "protocol": "TCP" }],
            }],
        },
    })
}
