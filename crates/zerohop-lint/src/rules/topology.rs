//! The kubelet's CPU and Topology Managers against the pods of the same
//! input: pods they can never admit, pods they cannot pin.

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};
use zerohop_known::topology::{
    CPU_MANAGER_POLICY_KEY, Demand, LAYOUT_ANNOTATION, Layout, POLICY_KEY, Policy, SCOPE_KEY,
    STATIC_CPU_MANAGER, Scope, admit,
};

use super::facts::quantity;
use super::resources;
use crate::model::{Object, PodTemplate, Workspace, pod_templates};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};

/// The CPU and Topology Manager settings of one kubelet configuration of
/// the input.
struct Kubelet<'a> {
    object: Object<'a>,
    /// `topologyManagerPolicy`; `None` when the value is not one the
    /// kubelet knows (it would not start, another rule's business).
    policy: Option<Policy>,
    scope: Scope,
    /// `cpuManagerPolicy: static`.
    static_cpus: bool,
}

impl Kubelet<'_> {
    /// The object's name, or its file for a `KubeletConfiguration`, which has none.
    fn name(&self) -> &str {
        if self.object.name.is_empty() {
            self.object.file
        } else {
            self.object.name
        }
    }
}

/// Every kubelet configuration of the input: OpenShift `KubeletConfig`
/// (`spec.kubeletConfig`), a `KubeletConfiguration` file, and the Node
/// Tuning Operator's `PerformanceProfile`, which always runs the static CPU
/// manager and sets the Topology Manager policy from `spec.numa.topologyPolicy`,
/// `best-effort` by default, leaving the scope at the kubelet's default,
/// `container` (openshift/cluster-node-tuning-operator
/// `pkg/apis/performanceprofile/v2/performanceprofile_types.go`, `NUMA`;
/// `pkg/performanceprofile/controller/performanceprofile/components/kubeletconfig/kubeletconfig.go`).
fn kubelets<'a>(workspace: &Workspace<'a>) -> Vec<Kubelet<'a>> {
    let mut out = Vec::new();
    for object in &workspace.objects {
        let settings = if object.is("machineconfiguration.openshift.io", "KubeletConfig") {
            object.get(&[PathStep::Key("spec"), PathStep::Key("kubeletConfig")])
        } else if object.is("kubelet.config.k8s.io", "KubeletConfiguration") {
            Some(object.node)
        } else if object.is("performance.openshift.io", "PerformanceProfile") {
            let policy = object
                .str_at(&[
                    PathStep::Key("spec"),
                    PathStep::Key("numa"),
                    PathStep::Key("topologyPolicy"),
                ])
                .map_or(Some(Policy::BestEffort), Policy::parse);
            out.push(Kubelet {
                object: *object,
                policy,
                scope: Scope::Container,
                static_cpus: true,
            });
            continue;
        } else {
            continue;
        };
        let Some(settings) = settings else {
            continue;
        };
        let text = |key: &str| settings.get(key).and_then(Node::as_str);
        out.push(Kubelet {
            object: *object,
            policy: text(POLICY_KEY).map_or(Some(Policy::None), Policy::parse),
            scope: text(SCOPE_KEY)
                .and_then(Scope::parse)
                .unwrap_or(Scope::Container),
            static_cpus: text(CPU_MANAGER_POLICY_KEY) == Some(STATIC_CPU_MANAGER),
        });
    }
    out
}

/// Why a container keeps its pod out of the Guaranteed class, or out of
/// exclusive CPUs: `None` when it has whole CPUs with requests equal to
/// limits for both CPU and memory (Kubernetes documentation, "Configure
/// Quality of Service for Pods": every container needs CPU and memory
/// limits, and requests equal to them; a request left out defaults to the
/// limit). `Some((field, problem))` otherwise.
fn not_pinnable(container: &Node) -> Option<(&'static str, String)> {
    let resources = container.get("resources");
    let limits = resources.and_then(|r| r.get("limits"));
    let requests = resources.and_then(|r| r.get("requests"));
    for key in ["cpu", "memory"] {
        let Some(limit) = limits.and_then(|l| l.get(key)) else {
            return Some(("limits", format!("has no {key} limit")));
        };
        if let Some(request) = requests.and_then(|r| r.get(key))
            && quantity(request) != quantity(limit)
        {
            return Some((
                "requests",
                format!(
                    "requests {key} {} but its limit is {}",
                    request.scalar_text().unwrap_or_default(),
                    limit.scalar_text().unwrap_or_default()
                ),
            ));
        }
    }
    let cpu = limits.and_then(|l| l.get("cpu"));
    let whole = cpu
        .and_then(quantity)
        .is_some_and(|c| c >= 1.0 && c.fract() == 0.0);
    if !whole {
        let text = cpu.and_then(Node::scalar_text).unwrap_or_default();
        return Some(("limits", format!("has cpu {text}, not whole cpus")));
    }
    None
}

/// What the pod (template) asks the hint providers for under `scope`:
/// one demand for the pod (its containers added up, an init container
/// counted alone when it asks more), or one per container. Exclusive CPUs
/// only with the static CPU manager and a Guaranteed pod.
fn demands(template: &PodTemplate<'_>, scope: Scope, static_cpus: bool) -> Vec<Demand> {
    let guaranteed = template
        .containers
        .iter()
        .all(|(_, c)| not_pinnable(c).is_none());
    let per_container: Vec<(bool, Demand)> = template
        .containers
        .iter()
        .enumerate()
        .map(|(index, (path, container))| {
            let init = matches!(path.first(), Some(PathStep::Key("initContainers")));
            let mut demand = Demand::default();
            for request in template.requests.iter().filter(|r| r.container == index) {
                if let Some(count) = request.count.and_then(|c| u64::try_from(c).ok()) {
                    demand.devices.insert(request.resource.to_owned(), count);
                }
            }
            if static_cpus && guaranteed {
                demand.cpus = container
                    .get("resources")
                    .and_then(|r| r.get("limits"))
                    .and_then(|l| l.get("cpu"))
                    .and_then(quantity)
                    .map(|c| c as u64);
            }
            (init, demand)
        })
        .collect();
    match scope {
        Scope::Container => per_container.into_iter().map(|(_, d)| d).collect(),
        Scope::Pod => {
            let mut apps = Demand::default();
            for (_, demand) in per_container.iter().filter(|(init, _)| !init) {
                for (resource, count) in &demand.devices {
                    *apps.devices.entry(resource.clone()).or_insert(0) += count;
                }
                if let Some(cpus) = demand.cpus {
                    apps.cpus = Some(apps.cpus.unwrap_or(0) + cpus);
                }
            }
            for (_, init) in per_container.iter().filter(|(init, _)| *init) {
                for (resource, count) in &init.devices {
                    let total = apps.devices.entry(resource.clone()).or_insert(0);
                    *total = (*total).max(*count);
                }
                if let Some(cpus) = init.cpus {
                    apps.cpus = Some(apps.cpus.unwrap_or(0).max(cpus));
                }
            }
            vec![apps]
        }
    }
}

declare_lint! {
    /// A pod that the Topology Manager configured in the input can never admit on its nodes' NUMA layout.
    ///
    /// ## What it checks
    /// Pods and pod templates that carry the `zerohop.dev/numa-layout`
    /// annotation (the NUMA nodes of the nodes they are meant for, with
    /// their CPUs and the devices each device plugin reports there; `zerohop
    /// plan` writes it), when the input configures the kubelet's Topology
    /// Manager with `restricted` or `single-numa-node` (a `KubeletConfig`, a
    /// `KubeletConfiguration` file, a `PerformanceProfile`): the pod's
    /// devices, and its CPUs when it is Guaranteed with whole CPUs under the
    /// static CPU manager, are put through the kubelet's hint merging on an
    /// empty node, per pod or per container as `topologyManagerScope` says.
    /// A finding needs every such configuration of the input to refuse the
    /// pod; a pod without the annotation is not checked.
    ///
    /// ## Why it matters
    /// Each hint provider prefers the narrowest NUMA masks that hold its
    /// request; `single-numa-node` admits a pod only when one NUMA node is
    /// preferred by all, `restricted` only when one mask is, since a merged
    /// hint is preferred only when every hint is preferred and all are
    /// equal (kubernetes/kubernetes
    /// `pkg/kubelet/cm/topologymanager/policy.go`, `mergePermutation`;
    /// Kubernetes documentation, "Control Topology Management Policies on a
    /// node"). Otherwise the kubelet fails the pod with
    /// `TopologyAffinityError` after the scheduler placed it, and a Job or
    /// Deployment recreates it in a loop. On an HGX board with 4 GPUs per
    /// socket, an 8-GPU pod never fits `single-numa-node`; with one VF of
    /// each rail it never fits `restricted` either, unless the VFs are
    /// advertised without their NUMA node (`excludeTopology`).
    ///
    /// ## How to fix
    /// Use `single-numa-node` only for pods one NUMA node holds; for pods
    /// spanning sockets use `restricted` with `topologyManagerScope: pod`,
    /// whole CPUs that span the same NUMA nodes as the GPUs, and
    /// `excludeTopology: true` on the rails' SriovNetworkNodePolicies, or
    /// split the pod per NUMA node.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL090/fail/`:
    ///
    /// ```text
    /// error[ZL090]: the pod can never be admitted under topologyManagerPolicy single-numa-node (pod scope) of KubeletConfig `h100-topology`: no single numa node holds them all: 8 nvidia.com/gpu on numa {0,1}; 96 exclusive cpus on numa {0,1}; the kubelet fails it with TopologyAffinityError
    ///   --> fail/training.yaml:23:5
    ///    |
    /// 23 |     zerohop.dev/numa-layout: '[{"cpus":56,"reservedCpus":8,"devices":{"nvidia.com/gpu":4}},{"cpus":56,"devices":{"nvidia.com/gpu":4}}]'
    ///    |     ^^^^^^^^^^^^^^^^^^^^^^^
    ///    = object: Pod/ai-training/trainer
    ///    = help: use single-numa-node only for pods one numa node holds; for pods spanning sockets use restricted with the pod scope, whole cpus spanning the gpus' numa nodes, and excludeTopology on the rail vfs
    /// ```
    pub(crate) static POD_NEVER_ADMITTED_BY_TOPOLOGY_MANAGER = {
        id: "ZL090",
        name: "pod-never-admitted-by-topology-manager",
        severity: Error,
        check: pod_never_admitted_by_topology_manager,
    };
}

fn pod_never_admitted_by_topology_manager(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let enforcing: Vec<Kubelet<'_>> = kubelets(workspace)
        .into_iter()
        .filter(|k| matches!(k.policy, Some(Policy::Restricted | Policy::SingleNumaNode)))
        .collect();
    if enforcing.is_empty() {
        return;
    }
    for template in pod_templates(workspace) {
        let layout = template
            .annotations()
            .and_then(|a| a.get(LAYOUT_ANNOTATION))
            .and_then(Node::as_str)
            .and_then(|text| Layout::parse(text).ok());
        let Some(layout) = layout else {
            continue;
        };
        let mut refusals = Vec::new();
        for kubelet in &enforcing {
            let policy = kubelet.policy.unwrap_or(Policy::None);
            let refused = demands(template, kubelet.scope, kubelet.static_cpus)
                .iter()
                .find_map(|demand| admit(&layout, policy, demand).err());
            match refused {
                Some(rejection) => refusals.push((kubelet, policy, rejection)),
                None => break,
            }
        }
        if refusals.len() < enforcing.len() || sink.counted_only(template.object.file) {
            continue;
        }
        let Some((kubelet, policy, rejection)) = refusals.first() else {
            continue;
        };
        let mut path = template.prefix.clone();
        path.extend([
            PathStep::Key("metadata"),
            PathStep::Key("annotations"),
            PathStep::Key(LAYOUT_ANNOTATION),
        ]);
        sink.report(
            &template.object,
            &path,
            format!(
                "the pod can never be admitted under topologyManagerPolicy {} ({} scope) of {} `{}`: {}; the kubelet fails it with TopologyAffinityError",
                policy.as_str(),
                kubelet.scope.as_str(),
                kubelet.object.kind,
                short(kubelet.name()),
                rejection.0
            ),
            Remediation::new("use single-numa-node only for pods one numa node holds; for pods spanning sockets use restricted with the pod scope, whole cpus spanning the gpus' numa nodes, and excludeTopology on the rail vfs"),
        );
    }
}

declare_lint! {
    /// A GPU pod that the static CPU manager cannot pin: not Guaranteed, or not whole CPUs.
    ///
    /// ## What it checks
    /// When the input configures `cpuManagerPolicy: static` (a
    /// `KubeletConfig`, a `KubeletConfiguration` file, or a
    /// `PerformanceProfile`, which always does): pods and pod templates
    /// that request GPUs, container by container (init containers
    /// included): CPU and memory limits present, requests (when written)
    /// equal to them, and the CPU a whole number.
    ///
    /// ## Why it matters
    /// The static policy gives exclusive CPUs only to containers of
    /// Guaranteed pods with integer CPU requests (Kubernetes documentation,
    /// "Control CPU Management Policies on the Node"); a pod is Guaranteed
    /// only when every container has CPU and memory limits equal to its
    /// requests ("Configure Quality of Service for Pods"). Otherwise the
    /// training process shares CPUs with everything else on the node, its
    /// data loaders and NCCL proxy threads are preempted, and the Topology
    /// Manager gets no CPU hint, so nothing keeps the CPUs on the GPUs'
    /// NUMA nodes.
    ///
    /// ## How to fix
    /// Give every container whole CPUs and memory, with requests equal to
    /// limits (or limits only).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL091/fail/`:
    ///
    /// ```text
    /// warning[ZL091]: container `trainer` has no cpu limit: the gpu pod is not pinned by the static cpu manager of KubeletConfiguration `fail/training.yaml`, and the topology manager gets no cpu hint
    ///   --> fail/training.yaml:21:9
    ///    |
    /// 21 |         limits:
    ///    |         ^^^^^^
    ///    = object: Pod/ai-training/trainer
    ///    = help: give every container whole cpus and memory with requests equal to limits
    ///            resources:
    ///              requests: {cpu: "32", memory: 256Gi}
    ///              limits: {cpu: "32", memory: 256Gi}
    /// ```
    pub(crate) static GPU_POD_NOT_PINNED_BY_STATIC_CPU_MANAGER = {
        id: "ZL091",
        name: "gpu-pod-not-pinned-by-static-cpu-manager",
        severity: Warning,
        check: gpu_pod_not_pinned,
    };
}

fn gpu_pod_not_pinned(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let Some(kubelet) = kubelets(workspace).into_iter().find(|k| k.static_cpus) else {
        return;
    };
    for template in pod_templates(workspace) {
        if !template
            .requests
            .iter()
            .any(|r| resources::is_gpu_resource(r.resource))
        {
            continue;
        }
        let problem = template
            .containers
            .iter()
            .find_map(|(path, container)| Some((path, container, not_pinnable(container)?)));
        let Some((container_path, container, (field, problem))) = problem else {
            continue;
        };
        if sink.counted_only(template.object.file) {
            continue;
        }
        let name = container.get("name").and_then(Node::as_str).unwrap_or("?");
        let mut path = template.path(container_path);
        path.push(PathStep::Key("resources"));
        if container
            .get("resources")
            .and_then(|r| r.get(field))
            .is_some()
        {
            path.push(PathStep::Key(field));
        }
        sink.report(
            &template.object,
            &path,
            format!(
                "container `{name}` {problem}: the gpu pod is not pinned by the static cpu manager of {} `{}`, and the topology manager gets no cpu hint",
                kubelet.object.kind,
                short(kubelet.name())
            ),
            Remediation::new("give every container whole cpus and memory with requests equal to limits")
                .command("resources:\n  requests: {cpu: \"32\", memory: 256Gi}\n  limits: {cpu: \"32\", memory: 256Gi}"),
        );
    }
}
