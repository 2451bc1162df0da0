//! The workload namespace, the cuFile configuration and the example pod.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zerohop_known::nccl;
use zerohop_known::shell::quote;
use zerohop_known::topology::{GPU_RESOURCE, LAYOUT_ANNOTATION};

use super::{Step, quantity};
use crate::intent::{HugepageSize, LinkType, RdmaMode};
use crate::plan::{Plan, RailPlan};

/// The pod annotation by which Multus attaches secondary networks: a
/// comma-separated list of NetworkAttachmentDefinition names in the pod's
/// namespace (the Network Plumbing Working Group's multi-network
/// specification, `k8s.v1.cni.cncf.io/networks`).
pub(crate) const NETWORKS_ANNOTATION: &str = "k8s.v1.cni.cncf.io/networks";

/// The traffic class RoCE pods put on their packets (`NCCL_IB_TC`, perftest
/// `--tclass`): the lossless class the plan's QoS gives PFC and DCQCN.
/// Verbs traffic leaves with class 0 (priority 0: no PFC) unless the
/// application sets one: NCCL sets none unless `NCCL_IB_TC` is given
/// (NVIDIA/nccl `src/transport/net_ib/connect.cc`, `NCCL_PARAM(IbTc,
/// "IB_TC", -1)`), and the PF-wide `traffic_class` file the host's QoS
/// script writes does not reach the VFs pods use.
pub(crate) const ROCE_TRAFFIC_CLASS: u8 =
    zerohop_known::roce::traffic_class(zerohop_known::roce::LOSSLESS_DSCP);

/// Where the pod finds `cufile.json`.
const CUFILE_DIR: &str = "/etc/cufile";

/// The service account the workload pod and the fabric tests run under.
pub(crate) const SERVICE_ACCOUNT: &str = "zerohop-workload";

/// The name of the OpenShift SCC that admits the workload's pods.
pub(crate) fn scc_name(plan: &Plan) -> String {
    format!("{}-workload", plan.name)
}

/// The workload namespace, first so that NADs can be rendered into it, and
/// the service account its pods run under; on OpenShift also the SCC that
/// admits them and the binding that lets the account use it.
pub(crate) fn namespace_step(plan: &Plan) -> Step {
    let ns = &plan.workload.namespace;
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": ns}}),
    ];
    let mut checks = vec![format!("kubectl get namespace {}", quote(ns))];
    if plan.platform == crate::intent::Platform::Openshift {
        let scc = scc_name(plan);
        objects.push(security_context_constraints(plan));
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": scc, "namespace": ns},
            "rules": [{
                "apiGroups": ["security.openshift.io"],
                "resources": ["securitycontextconstraints"],
                "resourceNames": [scc],
                "verbs": ["use"],
            }],
        }));
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": scc, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": scc},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": ns}],
        }));
        checks.push(format!(
            "oc -n {} auth can-i use securitycontextconstraints/{} --as=system:serviceaccount:{}:{SERVICE_ACCOUNT}   # yes",
            quote(ns),
            quote(&scc),
            quote(ns)
        ));
    }
    Step {
        path: "00-namespace.yaml".to_owned(),
        objects,
        title: "Workload namespace and the account its pods run under".to_owned(),
        checks,
    }
}

/// The SCC that admits the workload's pods on OpenShift, which the
/// default `restricted-v2` refuses: it allows no capability but
/// `NET_BIND_SERVICE` and requires dropping `ALL`, and runs every container
/// under a UID of the namespace's range
/// (openshift/cluster-kube-apiserver-operator@05211dd6
/// `bindata/bootkube/scc-manifests/0000_20_kube-apiserver-operator_00_scc-restricted-v2.yaml`;
/// openshift/apiserver-library-go@8efb02d5 `pkg/securitycontextconstraints/capabilities/mustrunas.go`,
/// `ValidateContainer`: "capability may not be added"). The pods add
/// `IPC_LOCK` (RDMA registers pinned memory), the nccl-tests workers run
/// `sshd` as root and the launcher `mpirun` as root, and with NFS mounted
/// on the hosts the workload mounts the host's mount point (`hostPath`);
/// through CSI it mounts a claim (`persistentVolumeClaim`), which needs no
/// host access. Nothing else:
/// no host namespaces, no privileged container, no privilege escalation.
fn security_context_constraints(plan: &Plan) -> Value {
    let host_mount = plan
        .nfs
        .as_ref()
        .is_some_and(|nfs| nfs.host_mount_point().is_some());
    let mut volumes = vec![
        "configMap",
        "downwardAPI",
        "emptyDir",
        "projected",
        "secret",
    ];
    if host_mount {
        volumes.push("hostPath");
    }
    if !host_mount && plan.nfs.is_some() || plan.local_nvme.is_some() {
        volumes.push("persistentVolumeClaim");
    }
    json!({
        "apiVersion": "security.openshift.io/v1",
        "kind": "SecurityContextConstraints",
        "metadata": {
            "name": scc_name(plan),
            "annotations": {
                "kubernetes.io/description": format!("admits the zero-copy workload and its fabric tests in {}: IPC_LOCK, any uid (sshd and mpirun run as root)", plan.workload.namespace),
            },
        },
        // Required by the CRD (openshift/api `security/v1`, nullable): null
        // is "no priority", as OpenShift's own SCCs write it. Left out, the
        // server refuses the SCC ("priority: Required value").
        "priority": null,
        "allowHostDirVolumePlugin": host_mount,
        "allowHostIPC": false,
        "allowHostNetwork": false,
        "allowHostPID": false,
        "allowHostPorts": false,
        "allowPrivilegeEscalation": false,
        "allowPrivilegedContainer": false,
        "allowedCapabilities": ["IPC_LOCK"],
        "defaultAddCapabilities": [],
        "requiredDropCapabilities": [],
        "readOnlyRootFilesystem": false,
        "runAsUser": {"type": "RunAsAny"},
        "seLinuxContext": {"type": "MustRunAs"},
        "fsGroup": {"type": "RunAsAny"},
        "supplementalGroups": {"type": "RunAsAny"},
        "seccompProfiles": ["runtime/default"],
        "volumes": volumes,
        "users": [],
        "groups": [],
    })
}

/// `cufile.json` for GPUDirect Storage over NFS/RDMA. Compat mode is off
/// so a broken GDS path fails loudly instead of copying through the CPU.
pub(crate) fn cufile_json(plan: &Plan) -> String {
    let cufile = json!({
        "logging": {"dir": "/var/log/cufile", "level": "ERROR"},
        "profile": {"nvtx": false, "cufile_stats": 0},
        "execution": {
            "max_io_queue_depth": 128,
            "max_io_threads": 4,
            "parallel_io": true,
            "min_io_threshold_size_kb": 8192,
            "max_request_parallelism": 4,
        },
        "properties": {
            "max_direct_io_size_kb": 16384,
            "max_device_cache_size_kb": 131072,
            "max_device_pinned_mem_size_kb": 33554432,
            "use_poll_mode": false,
            "poll_mode_max_size_kb": 4,
            "allow_compat_mode": false,
            "gds_rdma_write_support": true,
            "rdma_dev_addr_list": [],
            "rdma_load_balancing_policy": "RoundRobin",
            "rdma_dynamic_routing": plan.rails.len() > 1,
        },
        "fs": {"generic": {"posix_unaligned_writes": false}},
        "denylist": {"drivers": [], "devices": [], "mounts": [], "filesystems": []},
    });
    let mut text = serde_json::to_string_pretty(&cufile).unwrap_or_default();
    text.push('\n');
    text
}

fn hugepage_resource(size: HugepageSize) -> (&'static str, u64) {
    match size {
        HugepageSize::OneGi => ("hugepages-1Gi", 1024),
        HugepageSize::TwoMi => ("hugepages-2Mi", 2),
    }
}

/// The cuFile ConfigMap (with GDS) and the example pod.
pub(crate) fn workload_steps(plan: &Plan) -> Vec<Step> {
    let w = &plan.workload;
    let mut steps = Vec::new();
    if plan.gds {
        let config = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cufile-config", "namespace": w.namespace},
            "data": {"cufile.json": cufile_json(plan)},
        });
        steps.push(Step {
            path: "70-cufile-configmap.yaml".to_owned(),
            objects: vec![config],
            title: "GPUDirect Storage configuration (cufile.json)".to_owned(),
            checks: vec![format!(
                "kubectl -n {} get configmap cufile-config",
                quote(&w.namespace)
            )],
        });
    }
    let rails: Vec<&RailPlan> = w.rails.iter().filter_map(|r| plan.rails.get(r)).collect();
    let mut resources: BTreeMap<String, Value> = BTreeMap::new();
    resources.insert(GPU_RESOURCE.to_owned(), json!(w.gpus.to_string()));
    for rail in &rails {
        resources.insert(rail_resource(plan, rail), json!("1"));
    }
    resources.insert("cpu".to_owned(), json!(w.cpus.to_string()));
    // Quantities in the form the API server stores them, so that the
    // server keeps the pod as written (`quantity`).
    resources.insert("memory".to_owned(), json!(quantity::canonical(&w.memory)));
    if let Some((size, count)) = w.hugepages {
        let (name, mib) = hugepage_resource(size);
        resources.insert(
            name.to_owned(),
            json!(quantity::mebibytes(u64::from(count) * mib)),
        );
    }
    let mut env = nccl_env(plan, &rails);
    let mut mounts = vec![shm_mount()];
    let mut volumes = vec![shm_volume(plan)];
    if w.hugepages.is_some() {
        mounts.push(json!({"name": "hugepages", "mountPath": "/hugepages"}));
        volumes.push(json!({"name": "hugepages", "emptyDir": {"medium": "HugePages"}}));
    }
    let (data_mounts, data_volumes) = super::storage::pod_volumes(plan);
    mounts.extend(data_mounts);
    volumes.extend(data_volumes);
    if plan.gds {
        env.push(
            json!({"name": "CUFILE_ENV_PATH_JSON", "value": format!("{CUFILE_DIR}/cufile.json")}),
        );
        mounts.push(json!({"name": "cufile", "mountPath": CUFILE_DIR, "readOnly": true}));
        volumes.push(json!({"name": "cufile", "configMap": {"name": "cufile-config"}}));
    }
    let pool = plan.pools.first();
    let selector = pool.map(|p| json!(p.node_selector)).unwrap_or(json!({}));
    let mut annotations = json!({NETWORKS_ANNOTATION: networks_annotation(&rails)});
    if let Some(layout) = pool.and_then(|p| plan.numa_layout(p)) {
        annotations[LAYOUT_ANNOTATION] = json!(layout.to_json());
    }
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": w.name,
            "namespace": w.namespace,
            "annotations": annotations,
        },
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": SERVICE_ACCOUNT,
            "nodeSelector": selector,
            "containers": [{
                "name": "trainer",
                "image": w.image,
                "command": ["sleep", "infinity"],
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                // Requests equal limits, integer CPUs, one container: the pod
                // is Guaranteed, so the static CPU manager pins its CPUs and
                // gives the Topology Manager their NUMA hint (Kubernetes
                // documentation, "Configure Quality of Service for Pods" and
                // "Control CPU Management Policies on the Node"); extended
                // resources and huge pages demand it anyway.
                "resources": {"requests": resources, "limits": resources},
                "env": env,
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        },
    });
    let (ns, name) = (quote(&w.namespace), quote(&w.name));
    steps.push(Step {
        path: "90-workload-pod.yaml".to_owned(),
        objects: vec![pod],
        title: "Example workload: GPUs and one RDMA device per rail".to_owned(),
        checks: [
            format!("kubectl -n {ns} exec {name} -- ibv_devinfo | grep -E 'hca_id|state'   # PORT_ACTIVE per rail"),
            format!("kubectl -n {ns} exec {name} -- sh -c 'cat /proc/self/status | grep Cpus_allowed_list'   # pinned cores"),
            // The pod's own view, judged from inside it: what NCCL in this
            // pod will use (`zerohop doctor --pod`, docs/checks.md).
            format!("kubectl -n {ns} cp \"$(command -v zerohop)\" {name}:/tmp/zerohop && kubectl -n {ns} exec {name} -- /tmp/zerohop doctor --pod   # rdma devices, roce gids, memlock, /dev/shm, gpu-nic pairing, NCCL_* against the pod"),
        ]
        .into_iter()
        .chain(super::storage::pod_checks(plan))
        .collect(),
    });
    steps
}

/// The network (NetworkAttachmentDefinition, or SR-IOV network) of a rail,
/// as the pod annotation names it.
pub(crate) fn rail_network(rail: &RailPlan) -> String {
    format!("rail{}", rail.rail)
}

/// The annotation value that attaches the pod to `rails`.
pub(crate) fn networks_annotation(rails: &[&RailPlan]) -> String {
    let networks: Vec<String> = rails.iter().map(|r| rail_network(r)).collect();
    networks.join(",")
}

/// The extended resource of a rail's RDMA device (`nvidia.com/rdma_rail0`).
pub(crate) fn rail_resource(plan: &Plan, rail: &RailPlan) -> String {
    crate::plan::rail_resource(&plan.resource_prefix, rail)
}

/// The NCCL environment of a pod attached to `rails`: the RDMA devices it
/// may use, GPUDirect RDMA up to a PCIe switch, the bootstrap interface,
/// debug output that `zerohop validate` reads, and on RoCE the lossless
/// traffic class. The GID is left to NCCL, which picks a RoCE v2 GID
/// itself when `NCCL_IB_GID_INDEX` is unset (`connect.cc`,
/// `NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", -1)` with
/// `IB_ROCE_VERSION_NUM` 2; since NCCL 2.21); a fixed index is wrong on any
/// device whose GID table is ordered otherwise.
pub(crate) fn nccl_env(plan: &Plan, rails: &[&RailPlan]) -> Vec<Value> {
    let hca = match plan.rdma_mode {
        // The PFs' RDMA devices are visible in the pod in shared mode.
        RdmaMode::Shared => {
            let nics = plan.nics_by_rail();
            let mut names: Vec<&str> = rails
                .iter()
                .filter_map(|r| nics.get(&r.rail))
                .flatten()
                .map(|n| n.rdma_device.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            format!("={}", names.join(","))
        }
        // In exclusive mode only the pod's own VFs are visible, under names
        // the host assigns; the mlx5 prefix selects exactly those.
        RdmaMode::Sriov => "mlx5".to_owned(),
    };
    let mut env = vec![
        json!({"name": nccl::IB_HCA, "value": hca}),
        json!({"name": nccl::NET_GDR_LEVEL, "value": nccl::NET_GDR_LEVEL_DEFAULT}),
        json!({"name": "NCCL_SOCKET_IFNAME", "value": plan.workload.socket_ifname}),
        json!({"name": "NCCL_DEBUG", "value": "INFO"}),
    ];
    if rails.iter().any(|r| r.link_type == LinkType::Eth) {
        env.push(json!({"name": "NCCL_IB_TC", "value": ROCE_TRAFFIC_CLASS.to_string()}));
    }
    env
}

/// `/dev/shm` in memory, sized by the workload: NCCL's shared-memory
/// transport and its proxy buffers live there.
pub(crate) fn shm_volume(plan: &Plan) -> Value {
    let size = quantity::canonical(&plan.workload.shm_size);
    json!({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": size}})
}

/// The mount of [`shm_volume`].
pub(crate) fn shm_mount() -> Value {
    json!({"name": "dshm", "mountPath": "/dev/shm"})
}
