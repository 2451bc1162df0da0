//! Storage the Kubernetes way: NFS over RDMA through the NFS CSI driver
//! (`spec.storage.nfsRdma.via: csi`) and local NVMe volumes through the
//! local volume provisioner or a vendor CSI driver
//! (`spec.storage.localNvme`), each a StorageClass and a claim the example
//! workload mounts instead of a `hostPath`.
//!
//! The NFS CSI node plugin mounts a volume when a pod that uses it starts
//! on a node (NodePublishVolume; kubernetes-csi/csi-driver-nfs@f09798c0
//! `pkg/nfs/nodeserver.go`, `mount -t nfs -o <mountOptions>`), never at
//! boot. By the time the pod is scheduled, the DOCA driver container, which
//! the NicClusterPolicy of an earlier step starts with `ENABLE_NFSRDMA`,
//! has loaded its `rpcrdma`: the order holds without a unit of our own. A
//! mount before it fails (`proto=rdma` without `rpcrdma`), and the kubelet
//! retries it, the pod waiting in `ContainerCreating` with `FailedMount`
//! events until the driver is in.

use serde_json::{Value, json};
use zerohop_known::shell::quote;
use zerohop_known::storage::{
    LOCAL_VOLUME_CHART, NFS_CSI_CHART, NFS_CSI_DRIVER, NFS_CSI_NODE_DAEMONSET,
    NFS_CSI_SERVICE_ACCOUNTS, NO_PROVISIONER, PinnedChart, local_nvme_mount_options,
};

use super::{ManifestFile, Step};
use crate::intent::Platform;
use crate::plan::{LocalNvmePlan, NfsPlan, Plan};

/// The NFS CSI chart's Helm values.
const NFS_VALUES: &str = "helm/csi-driver-nfs-values.yaml";
/// The local volume provisioner's Helm values.
const LOCAL_VALUES: &str = "helm/local-static-provisioner-values.yaml";
/// The OpenShift grant of the `privileged` SCC to the drivers' accounts.
const SCC_FILE: &str = "44-storage-drivers-scc.yaml";
/// The StorageClasses, the NFS PersistentVolume and the claims.
const CLAIMS_FILE: &str = "46-storage-classes-and-claims.yaml";
/// Where both charts are installed, as their own documentation does
/// (csi-driver-nfs `charts/README.md`; the local provisioner's
/// `helm/README.md` example).
const DRIVER_NAMESPACE: &str = "kube-system";
/// The local volume provisioner's service account: the chart's
/// `fullname`, the release name here (`helm/provisioner/templates/_helpers.tpl`).
const LOCAL_SERVICE_ACCOUNT: &str = LOCAL_VOLUME_CHART.release;
/// The capacity a static NFS volume and its claim state: the API server
/// requires one, and neither the NFS CSI driver nor the server enforces it
/// on a volume it did not provision.
const NFS_NOMINAL_CAPACITY: &str = "1Ti";
/// Where the example pod mounts the NFS data, on either path.
pub(crate) const DATA_MOUNT_PATH: &str = "/data";
/// Where the example pod mounts its local NVMe volume.
pub(crate) const SCRATCH_MOUNT_PATH: &str = "/scratch";
/// The pod volume of the NFS data.
pub(crate) const DATA_VOLUME: &str = "data";
/// The pod volume of the local NVMe scratch space.
pub(crate) const SCRATCH_VOLUME: &str = "scratch";

/// The NFS StorageClass (and static volume) name.
pub(crate) fn nfs_class(plan: &Plan) -> String {
    format!("{}-nfs-rdma", plan.name)
}

/// The local NVMe StorageClass name.
pub(crate) fn local_class(plan: &Plan) -> String {
    format!("{}-local-nvme", plan.name)
}

/// The workload's claim on the NFS export.
pub(crate) fn data_claim(plan: &Plan) -> String {
    format!("{}-data", plan.workload.name)
}

/// The workload's claim on a local NVMe volume.
pub(crate) fn scratch_claim(plan: &Plan) -> String {
    format!("{}-scratch", plan.workload.name)
}

/// The NFS plan, when it goes through the CSI driver.
fn nfs_csi(plan: &Plan) -> Option<&NfsPlan> {
    plan.nfs.as_ref().filter(|nfs| nfs.via_csi())
}

/// The local NVMe plan, when the local volume provisioner serves it.
fn local_provisioner(plan: &Plan) -> Option<&LocalNvmePlan> {
    plan.local_nvme
        .as_ref()
        .filter(|local| local.provisioner.is_none())
}

/// The command that installs one of this module's Helm values files.
pub(crate) fn install_command(path: &str) -> Option<String> {
    match path {
        NFS_VALUES => Some(helm_install(&NFS_CSI_CHART, NFS_VALUES)),
        LOCAL_VALUES => Some(helm_install(&LOCAL_VOLUME_CHART, LOCAL_VALUES)),
        _ => None,
    }
}

/// `helm repo add` and `helm install` of a pinned chart, one line.
fn helm_install(chart: &PinnedChart, values: &str) -> String {
    format!(
        "helm repo add {} {} && helm install {} {}/{} --version {} --namespace {DRIVER_NAMESPACE} -f {values} --wait",
        chart.repository_name,
        chart.repository,
        chart.release,
        chart.repository_name,
        chart.chart,
        quote(chart.version),
    )
}

/// The NFS CSI chart's values: the controller on the first pool's nodes,
/// because it mounts the export itself, with the class's options, to make
/// the directory of each dynamically provisioned volume
/// (`pkg/nfs/controllerserver.go`, `CreateVolume` → `internalMount`), and
/// `proto=rdma` needs `rpcrdma`, which only those nodes load. No chart
/// StorageClass: the plan renders its own.
fn nfs_values(plan: &Plan) -> Value {
    let selector = plan
        .pools
        .first()
        .map(|pool| json!(pool.node_selector))
        .unwrap_or(json!({}));
    json!({
        "driver": {"name": NFS_CSI_DRIVER},
        "controller": {"nodeSelector": selector},
        "storageClass": {"create": false},
        "externalSnapshotter": {"enabled": false},
    })
}

/// The local volume provisioner's values: one class whose volumes are the
/// NVMe namespaces linked under `hostDir`, formatted with the plan's file
/// system by the kubelet on first use (`fsType` applies to block devices in
/// `Filesystem` mode, `helm/provisioner/values.yaml`), wiped with
/// `blkdiscard` when released; the DaemonSet on the pools' nodes. The
/// StorageClass is the plan's own, with the mount options GDS reads
/// through, which the provisioner copies into every volume it creates
/// (`pkg/discovery/discovery.go`, `getMountOptionsFromStorageClass`).
fn local_values(plan: &Plan, local: &LocalNvmePlan) -> Value {
    let selector = plan
        .pools
        .first()
        .map(|pool| json!(pool.node_selector))
        .unwrap_or(json!({}));
    json!({
        "classes": [{
            "name": local_class(plan),
            "hostDir": local.host_dir,
            "volumeMode": "Filesystem",
            "fsType": local.fs_type,
            "namePattern": "nvme*",
            "blockCleanerCommand": ["/scripts/blkdiscard.sh"],
        }],
        "nodeSelector": selector,
    })
}

/// The Helm values files of the storage drivers, on both platforms.
pub(crate) fn values_files(plan: &Plan) -> Vec<ManifestFile> {
    let mut files = Vec::new();
    if nfs_csi(plan).is_some() {
        files.push(super::install::values_file(
            NFS_VALUES,
            &helm_install(&NFS_CSI_CHART, NFS_VALUES),
            &nfs_values(plan),
        ));
    }
    if let Some(local) = local_provisioner(plan) {
        files.push(super::install::values_file(
            LOCAL_VALUES,
            &helm_install(&LOCAL_VOLUME_CHART, LOCAL_VALUES),
            &local_values(plan, local),
        ));
    }
    files
}

/// The storage class of NFS over RDMA: the CSI driver mounts every volume
/// with its `mountOptions`, the data-path options the doctor judges
/// ([`NfsPlan::kernel_options`]). Volumes it provisions are directories
/// of the export.
fn nfs_storage_class(plan: &Plan, nfs: &NfsPlan) -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": nfs_class(plan)},
        "provisioner": NFS_CSI_DRIVER,
        "parameters": {"server": nfs.server, "share": nfs.export},
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "Immediate",
        "mountOptions": nfs.kernel_options(),
    })
}

/// The export itself as a volume, with the same options: the training
/// data already on the server, which a provisioned (empty) directory is
/// not. Its handle is unique per server and export, as the driver asks
/// (`deploy/example/pv-nfs-csi.yaml`).
fn nfs_volume(plan: &Plan, nfs: &NfsPlan) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": nfs_class(plan),
            "annotations": {"pv.kubernetes.io/provisioned-by": NFS_CSI_DRIVER},
        },
        "spec": {
            "capacity": {"storage": NFS_NOMINAL_CAPACITY},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": nfs_class(plan),
            "mountOptions": nfs.kernel_options(),
            "csi": {
                "driver": NFS_CSI_DRIVER,
                "volumeHandle": format!("{}#{}##", nfs.server, nfs.export),
                "volumeAttributes": {"server": nfs.server, "share": nfs.export},
            },
        },
    })
}

/// A claim in the workload's namespace.
fn claim(
    plan: &Plan,
    name: &str,
    class: &str,
    mode: &str,
    size: &str,
    volume: Option<&str>,
) -> Value {
    let mut spec = json!({
        "accessModes": [mode],
        "storageClassName": class,
        "resources": {"requests": {"storage": size}},
    });
    if let Some(volume) = volume {
        spec["volumeName"] = json!(volume);
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": plan.workload.namespace},
        "spec": spec,
    })
}

/// The local NVMe class: bound when the pod is scheduled, so that the
/// scheduler picks a node with a free disk; the GDS mount options.
/// A vendor CSI driver formats its volumes with the file system of
/// `csi.storage.k8s.io/fstype` (kubernetes-csi/external-provisioner
/// `pkg/controller/controller.go`, `prefixedFsTypeKey`).
fn local_storage_class(plan: &Plan, local: &LocalNvmePlan) -> Value {
    let mut class = json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": local_class(plan)},
        "provisioner": local.provisioner.as_deref().unwrap_or(NO_PROVISIONER),
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
        "mountOptions": local_nvme_mount_options(&local.fs_type),
    });
    if local.provisioner.is_some() {
        class["parameters"] = json!({"csi.storage.k8s.io/fstype": local.fs_type});
    }
    class
}

/// On OpenShift, the drivers' pods run privileged (the NFS node plugin
/// mounts with `Bidirectional` propagation in the host network,
/// `templates/csi-nfs-node.yaml`; the local provisioner reads `/dev`), which
/// the `privileged` SCC admits: its accounts may use it through the
/// cluster role every cluster has
/// (openshift/cluster-kube-apiserver-operator@becb0af3
/// `bindata/bootkube/scc-manifests/0000_20_kube-apiserver-operator_00_cr-scc-privileged.yaml`,
/// `system:openshift:scc:privileged`).
fn scc_binding(plan: &Plan) -> Option<Value> {
    let mut accounts: Vec<&str> = Vec::new();
    if nfs_csi(plan).is_some() {
        accounts.extend(NFS_CSI_SERVICE_ACCOUNTS);
    }
    if local_provisioner(plan).is_some() {
        accounts.push(LOCAL_SERVICE_ACCOUNT);
    }
    if accounts.is_empty() {
        return None;
    }
    let subjects: Vec<Value> = accounts
        .iter()
        .map(|name| json!({"kind": "ServiceAccount", "name": name, "namespace": DRIVER_NAMESPACE}))
        .collect();
    Some(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": format!("{}-storage-drivers-privileged", plan.name)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:openshift:scc:privileged"},
        "subjects": subjects,
    }))
}

/// The storage steps: on OpenShift the SCC grant, the drivers' charts, then
/// the classes, the NFS volume and the claims. They follow the
/// NicClusterPolicy, whose DOCA driver loads `rpcrdma` for the mounts.
pub(crate) fn steps(plan: &Plan) -> Vec<Step> {
    let nfs = nfs_csi(plan);
    let local = plan.local_nvme.as_ref();
    if nfs.is_none() && local.is_none() {
        return Vec::new();
    }
    let ns = quote(&plan.workload.namespace);
    let mut steps = Vec::new();
    if plan.platform == Platform::Openshift
        && let Some(binding) = scc_binding(plan)
    {
        let name = binding["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        steps.push(Step {
            path: SCC_FILE.to_owned(),
            objects: vec![binding],
            title: "Storage drivers: their accounts may run privileged pods (SCC privileged)"
                .to_owned(),
            checks: vec![format!("oc get clusterrolebinding {}", quote(&name))],
        });
    }
    if nfs.is_some() {
        steps.push(Step {
            path: NFS_VALUES.to_owned(),
            objects: Vec::new(),
            title: format!(
                "NFS CSI driver {}: its node plugin mounts NFS over RDMA on the node a pod runs on",
                NFS_CSI_CHART.version
            ),
            checks: vec![
                format!("kubectl -n {DRIVER_NAMESPACE} rollout status ds/{NFS_CSI_NODE_DAEMONSET}"),
                format!("kubectl get csidriver {NFS_CSI_DRIVER}"),
            ],
        });
    }
    if local_provisioner(plan).is_some() {
        steps.push(Step {
            path: LOCAL_VALUES.to_owned(),
            objects: Vec::new(),
            title: format!(
                "Local volume provisioner {}: a PersistentVolume per NVMe namespace linked under the pool nodes' directory",
                LOCAL_VOLUME_CHART.version
            ),
            checks: vec![format!(
                "kubectl get pv -o custom-columns=NAME:.metadata.name,CLASS:.spec.storageClassName,NODE:.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0] | grep -- {}   # one per linked disk",
                quote(&local_class(plan))
            )],
        });
    }
    let mut objects = Vec::new();
    let mut checks = Vec::new();
    if let Some(nfs) = nfs {
        objects.push(nfs_storage_class(plan, nfs));
        objects.push(nfs_volume(plan, nfs));
        objects.push(claim(
            plan,
            &data_claim(plan),
            &nfs_class(plan),
            "ReadWriteMany",
            NFS_NOMINAL_CAPACITY,
            Some(&nfs_class(plan)),
        ));
        checks.push(format!(
            "kubectl -n {ns} get pvc {}   # Bound to {}",
            quote(&data_claim(plan)),
            nfs_class(plan)
        ));
    }
    if let Some(local) = local {
        objects.push(local_storage_class(plan, local));
        objects.push(claim(
            plan,
            &scratch_claim(plan),
            &local_class(plan),
            "ReadWriteOnce",
            "1Gi",
            None,
        ));
        checks.push(format!(
            "kubectl -n {ns} get pvc {}   # Pending until the workload pod is scheduled (WaitForFirstConsumer)",
            quote(&scratch_claim(plan))
        ));
    }
    steps.push(Step {
        path: CLAIMS_FILE.to_owned(),
        objects,
        title: "Storage classes and the workload's claims: NFS over RDMA through CSI, local NVMe for GDS".to_owned(),
        checks,
    });
    steps
}

/// The example pod's volumes and mounts of the storage data path: the NFS
/// export (a claim through CSI, or the host's mount as a `hostPath`) and
/// the local NVMe claim.
pub(crate) fn pod_volumes(plan: &Plan) -> (Vec<Value>, Vec<Value>) {
    let mut mounts = Vec::new();
    let mut volumes = Vec::new();
    if let Some(nfs) = &plan.nfs {
        if let Some(point) = nfs.host_mount_point() {
            mounts.push(json!({"name": DATA_VOLUME, "mountPath": DATA_MOUNT_PATH, "mountPropagation": "HostToContainer"}));
            volumes.push(
                json!({"name": DATA_VOLUME, "hostPath": {"path": point, "type": "Directory"}}),
            );
        } else {
            mounts.push(json!({"name": DATA_VOLUME, "mountPath": DATA_MOUNT_PATH}));
            volumes.push(json!({"name": DATA_VOLUME, "persistentVolumeClaim": {"claimName": data_claim(plan)}}));
        }
    }
    if plan.local_nvme.is_some() {
        mounts.push(json!({"name": SCRATCH_VOLUME, "mountPath": SCRATCH_MOUNT_PATH}));
        volumes.push(json!({"name": SCRATCH_VOLUME, "persistentVolumeClaim": {"claimName": scratch_claim(plan)}}));
    }
    (mounts, volumes)
}

/// The checks after the workload pod: its volumes are mounted (a mount the
/// node cannot make leaves it in `ContainerCreating` with `FailedMount`
/// events, such as NFS over RDMA before the DOCA driver loaded `rpcrdma`),
/// and the NFS one is on RDMA as the pod sees it.
pub(crate) fn pod_checks(plan: &Plan) -> Vec<String> {
    let mut checks = Vec::new();
    if plan.nfs.as_ref().is_some_and(NfsPlan::via_csi) || plan.local_nvme.is_some() {
        let (ns, name) = (quote(&plan.workload.namespace), quote(&plan.workload.name));
        checks.push(format!(
            "kubectl -n {ns} get events --field-selector {}   # none; ContainerCreating with FailedMount: the node cannot mount the volume",
            quote(&format!("involvedObject.name={},reason=FailedMount", plan.workload.name))
        ));
        if plan.nfs.is_some() {
            checks.push(format!(
                "kubectl -n {ns} exec {name} -- grep -- ' {DATA_MOUNT_PATH} ' /proc/mounts   # proto=rdma,port=20049"
            ));
        }
    }
    checks
}
