//! Network Operator `NicClusterPolicy`, SR-IOV operator objects, and
//! NetworkAttachmentDefinitions.

use serde_json::{Value, json};
use zerohop_known::shell::quote;

use super::Step;
use crate::intent::{LinkType, Platform, RdmaMode};
use crate::plan::{Plan, RailPlan};
use zerohop_known::nic::MELLANOX_VENDOR_HEX as VENDOR;

/// Where NVIDIA publishes the Network Operator's images.
const NVIDIA_MELLANOX_REPOSITORY: &str = "nvcr.io/nvidia/mellanox";
/// Pods that may share one RDMA device in shared mode.
const RDMA_HCA_MAX: u32 = 63;
/// The label the Network Operator sets once the DOCA driver is up.
pub(crate) const MOFED_WAIT_LABEL: &str = "network.nvidia.com/operator.mofed.wait";

fn component_version(plan: &Plan) -> String {
    format!("network-operator-{}", plan.network_operator_version)
}

/// The one `NicClusterPolicy` the operator reconciles (`nic-cluster-policy`).
pub(crate) fn nic_cluster_policy_step(plan: &Plan) -> Step {
    let mut ofed = json!({
        "image": "doca-driver",
        "repository": NVIDIA_MELLANOX_REPOSITORY,
        "version": plan.doca_driver_version,
        "forcePrecompiled": false,
        "terminationGracePeriodSeconds": 300,
        "upgradePolicy": {
            "autoUpgrade": true,
            "maxParallelUpgrades": 1,
            "drain": {"enable": true, "force": true, "deleteEmptyDir": true, "timeoutSeconds": 300},
        },
        "startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 20},
        "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30},
        "readinessProbe": {"initialDelaySeconds": 10, "periodSeconds": 30},
    });
    // With inbox storage modules loaded (rpcrdma or nvme_rdma, pulled in
    // by anything that runs before the driver) the DOCA driver container
    // refuses to reload the stack unless UNLOAD_STORAGE_MODULES lets it
    // unload them first (Mellanox/doca-driver-build@445df1e8 `entrypoint.sh`
    // lines 1963–1966: "Storage modules are loaded for current driver,
    // terminating prior driver reload failure due to UNLOAD_STORAGE_MODULES
    // not set"). It loads rpcrdma only with ENABLE_NFSRDMA (same file);
    // other spellings are ignored.
    let mut env = Vec::new();
    if plan.nfs.is_some() {
        env.push(json!({"name": "ENABLE_NFSRDMA", "value": "true"}));
    }
    if plan.nfs.is_some() || !plan.nvme_targets.is_empty() {
        env.push(json!({"name": "UNLOAD_STORAGE_MODULES", "value": "true"}));
    }
    if !env.is_empty() {
        ofed["env"] = json!(env);
    }
    let mut spec = json!({"ofedDriver": ofed});
    if plan.rdma_mode == RdmaMode::Shared {
        spec["rdmaSharedDevicePlugin"] = json!({
            "image": "k8s-rdma-shared-dev-plugin",
            "repository": NVIDIA_MELLANOX_REPOSITORY,
            "version": component_version(plan),
            "config": rdma_shared_config(plan),
        });
    }
    if plan.platform == Platform::Kubernetes {
        // OpenShift ships Multus and the CNI plugins; Kubernetes gets them here.
        spec["secondaryNetwork"] = json!({
            "cniPlugins": {"image": "plugins", "repository": NVIDIA_MELLANOX_REPOSITORY, "version": component_version(plan)},
            "multus": {"image": "multus-cni", "repository": NVIDIA_MELLANOX_REPOSITORY, "version": component_version(plan)},
        });
    }
    let policy = json!({
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy"},
        "spec": spec,
    });
    Step {
        path: "20-nic-cluster-policy.yaml".to_owned(),
        objects: vec![policy],
        title: "Network Operator: DOCA driver and device plugins".to_owned(),
        checks: vec![
            "kubectl get nicclusterpolicy nic-cluster-policy -o jsonpath='{.status.state}'   # ready".to_owned(),
            format!("kubectl get nodes -l {MOFED_WAIT_LABEL}=false   # every gpu node listed"),
            format!("kubectl -n {} get pods -o wide | grep mofed   # 1/1 Running on every gpu node", quote(&plan.network_operator_namespace)),
        ],
    }
}

/// The RDMA shared device plugin config: one resource per rail, selecting
/// the rail's PFs by vendor and netdev name.
pub(crate) fn rdma_shared_config(plan: &Plan) -> String {
    let nics = plan.nics_by_rail();
    let list: Vec<Value> = plan
        .rails
        .values()
        .map(|rail| {
            let mut if_names: Vec<&str> = nics
                .get(&rail.rail)
                .into_iter()
                .flatten()
                .map(|n| n.pf.as_str())
                .collect();
            if_names.sort_unstable();
            if_names.dedup();
            json!({
                "resourceName": rail.resource_name,
                "resourcePrefix": plan.resource_prefix,
                "rdmaHcaMax": RDMA_HCA_MAX,
                "selectors": {"vendors": [VENDOR], "ifNames": if_names},
            })
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&json!({"configList": list})).unwrap_or_default();
    text.push('\n');
    text
}

/// SR-IOV objects (VF mode) or NADs (shared mode).
pub(crate) fn rdma_steps(plan: &Plan) -> Vec<Step> {
    match plan.rdma_mode {
        RdmaMode::Sriov => sriov_steps(plan),
        RdmaMode::Shared => vec![shared_nad_step(plan)],
    }
}

fn sriov_steps(plan: &Plan) -> Vec<Step> {
    let ns = quote(&plan.sriov_namespace);
    let mut steps = Vec::new();
    if plan.platform == Platform::Openshift {
        // OpenShift 4.16+ no longer creates it, and policies are not
        // reconciled without it; wait for the DOCA driver before configuring VFs.
        let config = json!({
            "apiVersion": "sriovnetwork.openshift.io/v1",
            "kind": "SriovOperatorConfig",
            "metadata": {"name": "default", "namespace": plan.sriov_namespace},
            "spec": {
                "enableInjector": true,
                "enableOperatorWebhook": true,
                "logLevel": 2,
                "configDaemonNodeSelector": {MOFED_WAIT_LABEL: "false"},
            },
        });
        steps.push(Step {
            path: "30-sriov-operator-config.yaml".to_owned(),
            objects: vec![config],
            title: "SR-IOV operator configuration (OpenShift)".to_owned(),
            checks: vec![format!("oc -n {ns} get pods -l app=sriov-network-config-daemon   # running on the gpu nodes")],
        });
    }
    let selector = merged_selector(plan);
    let pool_config = json!({
        "apiVersion": "sriovnetwork.openshift.io/v1",
        "kind": "SriovNetworkPoolConfig",
        "metadata": {"name": format!("{}-rdma-exclusive", plan.name), "namespace": plan.sriov_namespace},
        "spec": {
            "rdmaMode": "exclusive",
            "maxUnavailable": 1,
            "nodeSelector": {"matchLabels": selector},
        },
    });
    steps.push(Step {
        path: "31-sriov-network-pool-config.yaml".to_owned(),
        objects: vec![pool_config],
        title: "RDMA subsystem in exclusive mode: a pod sees only the RDMA devices the rdma CNI plugin of its networks moves in (reboots the nodes, one at a time)".to_owned(),
        checks: vec!["# on a node: rdma system   # netns exclusive".to_owned()],
    });
    let mut policies = Vec::new();
    for pool in &plan.pools {
        for nic in &pool.nics {
            let rail = &plan.rails[&nic.rail];
            let mut spec = json!({
                "resourceName": rail.resource_name,
                "nodeSelector": pool.node_selector,
                "priority": 90,
                "numVfs": nic.num_vfs,
                "mtu": rail.mtu,
                "deviceType": "netdevice",
                "isRdma": true,
                "linkType": match rail.link_type { LinkType::Eth => "eth", LinkType::Ib => "ib" },
                "nicSelector": {"vendor": VENDOR, "deviceID": nic.model.pf_device_id, "pfNames": [nic.pf]},
            });
            if rail.link_type == LinkType::Eth {
                spec["eSwitchMode"] = json!("legacy");
            }
            policies.push(json!({
                "apiVersion": "sriovnetwork.openshift.io/v1",
                "kind": "SriovNetworkNodePolicy",
                "metadata": {"name": format!("{}-rail{}", pool.name, nic.rail), "namespace": plan.sriov_namespace},
                "spec": spec,
            }));
        }
    }
    steps.push(Step {
        path: "32-sriov-network-node-policies.yaml".to_owned(),
        objects: policies,
        title: "VFs on every rail PF (one policy per PF; may reboot nodes for firmware changes)".to_owned(),
        checks: vec![
            format!("kubectl -n {ns} get sriovnetworknodestates -o custom-columns=NODE:.metadata.name,SYNC:.status.syncStatus   # Succeeded"),
            format!("kubectl get node {} -o jsonpath='{{.status.allocatable}}' | tr , '\\n' | grep {}   # one line per rail", super::NODE, quote(&plan.resource_prefix)),
        ],
    });
    let networks: Vec<Value> = plan
        .rails
        .values()
        .map(|rail| sriov_network(plan, rail))
        .collect();
    let mut checks = pod_range_notes(plan);
    checks.extend([
            format!(
                "kubectl -n {} get network-attachment-definitions",
                quote(&plan.workload.namespace)
            ),
            format!(
                "kubectl -n {} get network-attachment-definitions -o jsonpath='{{range .items[*]}}{{.metadata.name}} {{.spec.config}}{{\"\\n\"}}{{end}}' | grep -c '\"type\": *\"rdma\"'   # one per rail: the rdma plugin is chained",
                quote(&plan.workload.namespace)
            ),
    ]);
    steps.push(Step {
        path: "40-sriov-networks.yaml".to_owned(),
        objects: networks,
        title: "Rail networks; the SR-IOV operator renders one NetworkAttachmentDefinition each"
            .to_owned(),
        checks,
    });
    steps
}

fn merged_selector(plan: &Plan) -> Value {
    // A pool config selects every pool; pools share the labels they have in common.
    let mut common = plan
        .pools
        .first()
        .map(|p| p.node_selector.clone())
        .unwrap_or_default();
    for pool in &plan.pools[1.min(plan.pools.len())..] {
        common.retain(|k, v| pool.node_selector.get(k) == Some(v));
    }
    if common.is_empty() {
        common.insert(
            format!("feature.node.kubernetes.io/pci-{VENDOR}.present"),
            "true".to_owned(),
        );
    }
    json!(common)
}

/// The rail's IPAM: `whereabouts`, cluster-wide, the one the intent
/// allows, over the rail's subnet, never handing out an address that is not
/// the pods' to take. On a rail where the hosts have addresses of their own
/// ([`RailPlan::host_network`]: the storage network) pods take the upper
/// half of the subnet (`range_start`), and the storage servers the intent
/// names are excluded wherever they lie (`exclude`, a list of CIDRs).
/// Without them whereabouts allocates from the whole `range` and would give
/// a pod the NFS server's or a node's own address
/// (k8snetworkplumbingwg/whereabouts@3a262bd0, tag v0.9.4, `README.md`,
/// "Optional": `range_start`, `range_end`, `exclude`; it skips only the
/// network and broadcast addresses).
pub(crate) fn ipam(rail: &RailPlan) -> Value {
    let mut ipam = json!({"type": "whereabouts", "range": rail.subnet});
    let subnet = crate::grammar::Subnet::parse(&rail.subnet);
    if rail.host_network
        && let Some(start) = subnet.and_then(crate::grammar::Subnet::upper_half_start)
    {
        ipam["range_start"] = json!(start.to_string());
    }
    if !rail.servers.is_empty() {
        let exclude: Vec<String> = rail
            .servers
            .iter()
            .map(|server| {
                let bits = if server.is_ipv4() { 32 } else { 128 };
                format!("{server}/{bits}")
            })
            .collect();
        ipam["exclude"] = json!(exclude);
    }
    ipam
}

/// README lines that say, for each rail where the hosts have addresses of
/// their own, which addresses the pods take ([`ipam`]), so that the nodes',
/// the gateway's and the servers' are kept out of them.
fn pod_range_notes(plan: &Plan) -> Vec<String> {
    plan.rails
        .values()
        .filter_map(|rail| {
            let start = ipam(rail)["range_start"].as_str()?.to_owned();
            Some(format!(
                "# {}: pods take {} from {start} up; the nodes', the gateway's and the storage servers' addresses belong below it",
                network_name(rail),
                rail.subnet
            ))
        })
        .collect()
}

fn network_name(rail: &RailPlan) -> String {
    format!("rail{}", rail.rail)
}

/// The `metaPlugins` of a rail network: the CNI plugins chained after
/// sriov-cni (or ib-sriov-cni), as the operator writes them.
///
/// The SR-IOV Network Operator copies `spec.metaPlugins` verbatim after the
/// main plugin into the NAD's `plugins` list, so several plugins are JSON
/// objects separated by commas, without brackets
/// (k8snetworkplumbingwg/sriov-network-operator
/// `bindata/manifests/cni-config/sriov/sriov-cni-config.yaml`, and
/// `api/v1/helper.go` `RenderNetAttDef`).
///
/// The `rdma` plugin is what moves the VF's RDMA device into the pod's
/// network namespace: with the RDMA subsystem in `exclusive` mode (the
/// `SriovNetworkPoolConfig` this plan renders) sriov-cni moves only the
/// netdev, and without the `rdma` plugin the pod has no `mlx5_*` device
/// (k8snetworkplumbingwg/rdma-cni `README.md`, "moving the associated RDMA
/// interfaces of the provided network interface to the container's network
/// namespace"; sriov-network-operator `doc/rdma-configuration.md`, step 3
/// "Define network with RDMA CNI plugin"). The SR-IOV config daemon installs
/// the plugin's binary (`bindata/manifests/daemon/daemonset.yaml`,
/// init container `rdma-cni`).
fn meta_plugins(rail: &RailPlan) -> String {
    let rdma = json!({"type": "rdma"}).to_string();
    match rail.link_type {
        // ib-sriov-cni sets the MTU of the IPoIB child itself.
        LinkType::Ib => rdma,
        LinkType::Eth => format!("{}, {rdma}", json!({"type": "tuning", "mtu": rail.mtu})),
    }
}

fn sriov_network(plan: &Plan, rail: &RailPlan) -> Value {
    let name = network_name(rail);
    let metadata = json!({"name": name, "namespace": plan.sriov_namespace});
    match rail.link_type {
        LinkType::Ib => json!({
            "apiVersion": "sriovnetwork.openshift.io/v1",
            "kind": "SriovIBNetwork",
            "metadata": metadata,
            "spec": {
                "resourceName": rail.resource_name,
                "networkNamespace": plan.workload.namespace,
                "linkState": "auto",
                "ipam": ipam(rail).to_string(),
                "metaPlugins": meta_plugins(rail),
            },
        }),
        LinkType::Eth => {
            let mut spec = json!({
                "resourceName": rail.resource_name,
                "networkNamespace": plan.workload.namespace,
                "linkState": "auto",
                "spoofChk": "off",
                "trust": "on",
                "ipam": ipam(rail).to_string(),
                "metaPlugins": meta_plugins(rail),
            });
            if let Some(vlan) = rail.vlan {
                spec["vlan"] = json!(vlan);
            }
            json!({
                "apiVersion": "sriovnetwork.openshift.io/v1",
                "kind": "SriovNetwork",
                "metadata": metadata,
                "spec": spec,
            })
        }
    }
}

/// Shared mode: one NAD per rail, macvlan (Ethernet) or ipoib (InfiniBand)
/// over the PF, with the shared device plugin's resource.
fn shared_nad_step(plan: &Plan) -> Step {
    let nics = plan.nics_by_rail();
    let nads = plan
        .rails
        .values()
        .map(|rail| {
            let master = nics.get(&rail.rail).and_then(|n| n.first()).map(|n| n.pf.clone()).unwrap_or_default();
            let ipam = ipam(rail);
            let plugin = match rail.link_type {
                LinkType::Eth => json!({"type": "macvlan", "master": master, "mode": "bridge", "mtu": rail.mtu, "ipam": ipam}),
                LinkType::Ib => json!({"type": "ipoib", "master": master, "ipam": ipam}),
            };
            let config = json!({"cniVersion": "1.0.0", "name": network_name(rail), "plugins": [plugin]});
            json!({
                "apiVersion": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "metadata": {
                    "name": network_name(rail),
                    "namespace": plan.workload.namespace,
                    "annotations": {"k8s.v1.cni.cncf.io/resourceName": format!("{}/{}", plan.resource_prefix, rail.resource_name)},
                },
                "spec": {"config": serde_json::to_string_pretty(&config).unwrap_or_default()},
            })
        })
        .collect();
    Step {
        path: "40-network-attachment-definitions.yaml".to_owned(),
        objects: nads,
        title: "Rail networks over the shared RDMA devices".to_owned(),
        checks: pod_range_notes(plan)
            .into_iter()
            .chain([format!(
                "kubectl get node {} -o jsonpath='{{.status.allocatable}}' | tr , '\\n' | grep {}   # one line per rail",
                super::NODE,
                quote(&plan.resource_prefix)
            )])
            .collect(),
    }
}
