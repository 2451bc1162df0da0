//! The workload namespace, the cuFile configuration and the example pod.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zerohop_known::shell::quote;

use super::Step;
use crate::intent::{HugepageSize, LinkType, RdmaMode};
use crate::plan::Plan;

/// Where the pod finds `cufile.json`.
const CUFILE_DIR: &str = "/etc/cufile";

/// The workload namespace, first so that NADs can be rendered into it.
pub(crate) fn namespace_step(plan: &Plan) -> Step {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.workload.namespace}});
    Step {
        path: "00-namespace.yaml".to_owned(),
        objects: vec![namespace],
        title: "Workload namespace".to_owned(),
        checks: vec![format!(
            "kubectl get namespace {}",
            quote(&plan.workload.namespace)
        )],
    }
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
    let rails: Vec<_> = plan.rails.values().take(w.vfs as usize).collect();
    let mut resources: BTreeMap<String, Value> = BTreeMap::new();
    resources.insert("nvidia.com/gpu".to_owned(), json!(w.gpus.to_string()));
    for rail in &rails {
        resources.insert(
            format!("{}/{}", plan.resource_prefix, rail.resource_name),
            json!("1"),
        );
    }
    resources.insert("memory".to_owned(), json!(w.memory));
    if let Some((size, count)) = w.hugepages {
        let (name, mib) = hugepage_resource(size);
        resources.insert(
            name.to_owned(),
            json!(format!("{}Mi", u64::from(count) * mib)),
        );
    }
    let networks: Vec<String> = rails.iter().map(|r| format!("rail{}", r.rail)).collect();
    let hcas: Vec<&str> = match plan.rdma_mode {
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
            names
        }
        // In exclusive mode only the pod's own VFs are visible, under names
        // the host assigns; the mlx5 prefix selects exactly those.
        RdmaMode::Sriov => vec!["mlx5"],
    };
    let hca = if plan.rdma_mode == RdmaMode::Shared {
        format!("={}", hcas.join(","))
    } else {
        hcas.join(",")
    };
    let mut env = vec![
        json!({"name": "NCCL_IB_HCA", "value": hca}),
        json!({"name": "NCCL_NET_GDR_LEVEL", "value": "PXB"}),
        json!({"name": "NCCL_SOCKET_IFNAME", "value": w.socket_ifname}),
        json!({"name": "NCCL_DEBUG", "value": "INFO"}),
    ];
    if rails.iter().any(|r| r.link_type == LinkType::Eth) {
        // RoCE v2 GID of the IPv4 address.
        env.push(json!({"name": "NCCL_IB_GID_INDEX", "value": "3"}));
    }
    let mut mounts = vec![json!({"name": "dshm", "mountPath": "/dev/shm"})];
    let mut volumes =
        vec![json!({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": w.shm_size}})];
    if w.hugepages.is_some() {
        mounts.push(json!({"name": "hugepages", "mountPath": "/hugepages"}));
        volumes.push(json!({"name": "hugepages", "emptyDir": {"medium": "HugePages"}}));
    }
    if let Some(nfs) = &plan.nfs {
        mounts.push(
            json!({"name": "data", "mountPath": "/data", "mountPropagation": "HostToContainer"}),
        );
        volumes.push(
            json!({"name": "data", "hostPath": {"path": nfs.mount_point, "type": "Directory"}}),
        );
    }
    if plan.gds {
        env.push(
            json!({"name": "CUFILE_ENV_PATH_JSON", "value": format!("{CUFILE_DIR}/cufile.json")}),
        );
        mounts.push(json!({"name": "cufile", "mountPath": CUFILE_DIR, "readOnly": true}));
        volumes.push(json!({"name": "cufile", "configMap": {"name": "cufile-config"}}));
    }
    let selector = plan
        .pools
        .first()
        .map(|p| json!(p.node_selector))
        .unwrap_or(json!({}));
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": w.name,
            "namespace": w.namespace,
            "annotations": {"k8s.v1.cni.cncf.io/networks": networks.join(",")},
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": selector,
            "containers": [{
                "name": "trainer",
                "image": w.image,
                "command": ["sleep", "infinity"],
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                // Requests equal limits: extended resources and huge pages demand it,
                // and the Guaranteed class lets the static CPU manager pin cores.
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
        checks: vec![
            format!("kubectl -n {ns} exec {name} -- ibv_devinfo | grep -E 'hca_id|state'   # PORT_ACTIVE per rail"),
            format!("kubectl -n {ns} exec {name} -- sh -c 'cat /proc/self/status | grep Cpus_allowed_list'   # pinned cores"),
        ],
    });
    steps
}
