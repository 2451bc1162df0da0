//! What the node gives a GPU pod at run time: its QoS class, its
//! `/dev/shm`.

use std::collections::{BTreeMap, HashSet};

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use super::facts::quantity;
use super::resources::is_gpu_resource;
use crate::model::{PodTemplate, Workspace, pod_templates};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};

/// The GPUs each container of a template asks for, by container index, in
/// container order.
fn gpus_by_container(template: &PodTemplate<'_>) -> Vec<(usize, i64)> {
    let mut gpus: BTreeMap<usize, i64> = BTreeMap::new();
    for request in &template.requests {
        if is_gpu_resource(request.resource) {
            *gpus.entry(request.container).or_default() += request.count.unwrap_or(1);
        }
    }
    gpus.into_iter().collect()
}

/// Whether no container sets a CPU or memory request or limit above zero:
/// the pod is BestEffort. Kubernetes `pkg/apis/core/v1/helper/qos/qos.go`
/// (kubernetes/kubernetes at 0c4236dde84053bf6261946652105ca0ee87acc8),
/// `GetPodQOS`: only `cpu` and `memory` count
/// (`supportedQoSComputeResources`), over containers and init containers,
/// and "a pod is besteffort if none of its containers have specified any
/// requests or limits" of them.
fn is_best_effort(template: &PodTemplate<'_>) -> bool {
    !template.containers.iter().any(|(_, container)| {
        ["requests", "limits"].iter().any(|kind| {
            let Some(list) = container.get("resources").and_then(|r| r.get(kind)) else {
                return false;
            };
            ["cpu", "memory"].iter().any(|name| {
                list.get(name)
                    .and_then(quantity)
                    .is_some_and(|value| value > 0.0)
            })
        })
    })
}

declare_lint! {
    /// A GPU pod that requests no CPU or memory, so it is BestEffort: the first evicted, and never pinned.
    ///
    /// ## What it checks
    /// Pods and pod templates (MPIJob workers included) that request GPUs
    /// (`nvidia.com/gpu`, MIG devices) while none of their containers
    /// (init containers included) sets a `cpu` or `memory` request or limit.
    ///
    /// ## Why it matters
    /// The QoS class counts `cpu` and `memory` only: GPUs, VFs and the other
    /// extended resources do not, so such a pod is BestEffort ("a pod is
    /// besteffort if none of its containers have specified any requests or
    /// limits", kubernetes `pkg/apis/core/v1/helper/qos/qos.go`, `GetPodQOS`,
    /// at 0c4236dde84053bf6261946652105ca0ee87acc8). The scheduler reserves
    /// nothing for it, so eight GPUs share the node's CPUs with whatever
    /// lands there; the kubelet evicts BestEffort pods first under memory
    /// pressure (`pkg/kubelet/eviction/helpers.go`, ranking by QoS); the
    /// static CPU manager pins only Guaranteed pods, and the Topology Manager
    /// aligns no CPUs for it. A benchmark run that way measures the
    /// neighbours.
    ///
    /// ## How to fix
    /// Request CPU and memory for the containers that use the GPUs, with
    /// limits equal to requests for a Guaranteed pod.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL067/fail/`:
    ///
    /// ```text
    /// warning[ZL067]: container `worker` asks for 8 gpus but no container requests cpu or memory: the pod is besteffort, evicted first and never pinned
    ///   --> fail/input.yaml:19:13
    ///    |
    /// 19 |             resources:
    ///    |             ^^^^^^^^^
    ///    = object: MPIJob/ai-training/nccl-tests
    ///    = help: request cpu and memory, with limits equal to requests
    ///            resources:
    ///              requests: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
    ///              limits: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
    /// ```
    pub(crate) static GPU_POD_BEST_EFFORT = {
        id: "ZL067",
        name: "gpu-pod-best-effort",
        severity: Warning,
        check: gpu_pod_best_effort,
    };
}

fn gpu_pod_best_effort(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for template in pod_templates(workspace) {
        let gpus = gpus_by_container(template);
        let Some(&(container, count)) = gpus.first() else {
            continue;
        };
        if !is_best_effort(template) {
            continue;
        }
        let Some((container_path, node)) = template.containers.get(container) else {
            continue;
        };
        let name = node.get("name").and_then(Node::as_str).unwrap_or("");
        let mut rest = container_path.clone();
        rest.push(PathStep::Key("resources"));
        sink.report(
            &template.object,
            &template.path(&rest),
            format!(
                "container `{}` asks for {count} gpus but no container requests cpu or memory: the pod is besteffort, evicted first and never pinned",
                short(name)
            ),
            Remediation::new("request cpu and memory, with limits equal to requests").command(
                format!(
                    "resources:\n  requests: {{cpu: \"32\", memory: 256Gi, nvidia.com/gpu: \"{count}\"}}\n  limits: {{cpu: \"32\", memory: 256Gi, nvidia.com/gpu: \"{count}\"}}"
                ),
            ),
        );
    }
}

/// The names of a pod's memory-backed `emptyDir` volumes, or `None` when
/// the pod shares the host's IPC namespace (and so its `/dev/shm`).
fn memory_volumes<'a>(template: &PodTemplate<'a>) -> Option<HashSet<&'a str>> {
    let spec = |key: &'static str| template.object.get(&template.path(&[PathStep::Key(key)]));
    if spec("hostIPC").and_then(Node::as_bool) == Some(true) {
        return None;
    }
    Some(
        spec("volumes")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .filter(|volume| {
                volume
                    .get("emptyDir")
                    .and_then(|dir| dir.get("medium"))
                    .and_then(Node::as_str)
                    == Some("Memory")
            })
            .filter_map(|volume| volume.get("name").and_then(Node::as_str))
            .collect(),
    )
}

/// Whether the container mounts one of `memory` (a pod's memory-backed
/// volumes) at `/dev/shm`.
fn mounts_memory_shm(container: &Node, memory: &HashSet<&str>) -> bool {
    container
        .get("volumeMounts")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .filter(|mount| {
            mount
                .get("mountPath")
                .and_then(Node::as_str)
                .is_some_and(|path| path.trim_end_matches('/') == "/dev/shm")
        })
        .filter_map(|mount| mount.get("name").and_then(Node::as_str))
        .any(|name| memory.contains(name))
}

declare_lint! {
    /// A container with several GPUs keeps the runtime's 64 MiB `/dev/shm`, which NCCL's shared-memory segments outgrow.
    ///
    /// ## What it checks
    /// Containers of pods and pod templates (MPIJob workers included) that
    /// ask for two GPUs or more, for a memory-backed `emptyDir`
    /// (`medium: Memory`) mounted at `/dev/shm`, or `hostIPC: true` on the
    /// pod.
    ///
    /// ## Why it matters
    /// Several GPUs in one container means several ranks on one node
    /// (`torchrun --nproc-per-node=8`, one MPI rank per GPU), and NCCL
    /// connects them through shared memory: it creates
    /// `/dev/shm/nccl-XXXXXX` and `fallocate`s each segment to its full
    /// size, failing with "Error while creating shared memory segment"
    /// when it does not fit (NVIDIA/nccl `src/misc/shmutils.cc`,
    /// `ncclShmOpen`, at 761454383f0e6cd77e72805cb53517867d3f97f1). A pod's
    /// `/dev/shm` is the sandbox's tmpfs of 64 MiB (containerd
    /// `internal/cri/server/podsandbox/helpers_linux.go`, `defaultShmSize`,
    /// at 3b0b3e533ce1f60a60ab83905374d1ce43330063; CRI-O the same), and
    /// Kubernetes has no field to enlarge it. Eight ranks need more:
    /// `ncclCommInitRank` fails with `ncclSystemError` ("No space left on
    /// device") and the job never starts, or, with `NCCL_SHM_DISABLE`,
    /// falls back to slower transports.
    ///
    /// ## How to fix
    /// Mount a memory-backed `emptyDir` at `/dev/shm`, sized for the job (it
    /// counts against the container's memory limit).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL068/fail/`:
    ///
    /// ```text
    /// warning[ZL068]: container `trainer` runs 8 gpus with the runtime's 64 MiB /dev/shm: nccl's shared-memory segments do not fit
    ///   --> fail/input.yaml:13:5
    ///    |
    /// 13 |     resources:
    ///    |     ^^^^^^^^^
    ///    = object: Pod/ai-training/trainer
    ///    = help: mount a memory-backed emptyDir at /dev/shm
    ///            volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 64Gi}}]
    ///            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
    /// ```
    pub(crate) static MULTI_GPU_CONTAINER_WITHOUT_SHM = {
        id: "ZL068",
        name: "multi-gpu-container-without-shm",
        severity: Warning,
        check: multi_gpu_container_without_shm,
    };
}

fn multi_gpu_container_without_shm(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for template in pod_templates(workspace) {
        let gpus = gpus_by_container(template);
        if gpus.iter().all(|(_, count)| *count < 2) {
            continue;
        }
        let Some(memory) = memory_volumes(template) else {
            continue;
        };
        for (container, count) in gpus {
            let Some((container_path, node)) = template.containers.get(container) else {
                continue;
            };
            if count < 2 || mounts_memory_shm(node, &memory) {
                continue;
            }
            let name = node.get("name").and_then(Node::as_str).unwrap_or("");
            let mut rest = container_path.clone();
            rest.push(PathStep::Key("resources"));
            sink.report(
                &template.object,
                &template.path(&rest),
                format!(
                    "container `{}` runs {count} gpus with the runtime's 64 MiB /dev/shm: nccl's shared-memory segments do not fit",
                    short(name)
                ),
                Remediation::new("mount a memory-backed emptyDir at /dev/shm").command(
                    "volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 64Gi}}]\nvolumeMounts: [{name: dshm, mountPath: /dev/shm}]",
                ),
            );
        }
    }
}
