//! The NUMA layout of a pool, the Topology Manager policy chosen from it,
//! and the example pod's exclusive CPUs, proved admissible with the
//! kubelet's own rules (`zerohop_known::topology`).
//!
//! The choice, for the best alignment a training job can get:
//!
//! - `single-numa-node` when one NUMA node holds every GPU and rail NIC of
//!   the pool: every pod the plan renders (the nccl-tests workers take every
//!   GPU of a node) then fits one node, and each gets its GPUs, VFs and
//!   pinned CPUs there;
//! - otherwise `best-effort`. A pod that takes rails on both sockets has
//!   no preferred merged hint: each rail's VFs sit on one NUMA node, so
//!   the rails' hints disagree, and `single-numa-node` and `restricted`
//!   both answer `TopologyAffinityError` (Kubernetes documentation,
//!   "Control Topology Management Policies on a node": `restricted` admits
//!   a pod only with a preferred merged hint). `best-effort` admits it,
//!   and still places every pod by the best hint: a perftest pod of one
//!   rail gets a GPU and CPUs on its NIC's NUMA node. `restricted` with
//!   the rails' NUMA nodes hidden (`excludeTopology`) would admit the
//!   spanning pod too, but then places a one-rail pod's GPU by its CPUs
//!   alone, on the first socket, and half the rails would be measured
//!   across the inter-socket link. The pod is not split per NUMA node: two
//!   pods on one node cannot reach each other's GPUs over NVLink (NCCL's
//!   P2P and SHM transports need the peers in one container's view), so
//!   the collective's intra-node part would drop to the NICs;
//! - `best-effort` as well when the layout is unknown: it admits every pod
//!   and aligns what it can, and nothing is claimed about the layout.
//!
//! Always with the `pod` scope: the hints of all the pod's containers are
//! merged into one placement (the `container` scope would place the
//! trainer and any sidecar apart).

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::{Location, Spanned};
use zerohop_known::cpuset::CpuSet;
use zerohop_known::topology::{Demand, GPU_RESOURCE, MAX_LAYOUT_NUMA_NODES, Policy, admit};

use super::Checker;
use super::values::{MALFORMED_CPU_LIST, VALUE_OUT_OF_RANGE};
use crate::intent::{NumaNodeSpec, RdmaMode};
use crate::plan::{NumaPlan, PoolPlan, RailPlan, numa_layout, rail_resource};
use crate::rule::declare_intent_rule;

declare_intent_rule! {
    /// A pool's NUMA layout contradicts itself or the pool: GPUs that do not add up, a CPU in two nodes, a NIC on a node the pool lacks.
    ///
    /// ## What it checks
    /// When a pool gives `numaNodes`: 1 to 16 of them; no CPU in two of
    /// them; their `gpus` adding up to the pool's `gpus`; and every NIC
    /// with a `numaNode` that is one of them. A NIC's `numaNode` without
    /// the pool's `numaNodes` is reported too.
    ///
    /// ## Why it matters
    /// The layout decides the Topology Manager policy and the example pod's
    /// CPUs, and is written into the pod's `zerohop.dev/numa-layout`
    /// annotation, which lint's ZL090 and `zerohop doctor --intent` read as
    /// the nodes' truth. A layout that cannot be the node's proves nothing:
    /// the policy chosen from it may refuse every pod, or pin CPUs on the
    /// wrong socket.
    ///
    /// ## How to fix
    /// Copy the layout from a node: the CPUs of each NUMA node from
    /// `/sys/devices/system/node/node<N>/cpulist` (or `lscpu`), the GPUs of
    /// each from `nvidia-smi topo -m` (NUMA Affinity), and each NIC's node
    /// from `/sys/class/net/<pf>/device/numa_node`; `zerohop topo` shows
    /// all three.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP025/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       gpus: 8
    ///       numaNodes:
    ///         - {cpus: "0-27,56-83", gpus: 4}
    ///         - {cpus: "28-55,84-111", gpus: 2}
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", rail: 0, subnet: 192.168.100.0/24, numaNode: 0}
    ///         - {pf: ens2f0np0, rdmaDevice: mlx5_1, deviceId: "1021", rail: 1, subnet: 192.168.101.0/24, numaNode: 1}
    ///   workload:
    ///     gpusPerPod: 8
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:9:13: the numa nodes of pool "h100" hold 6 gpus but the pool has 8 [ZP025]
    ///   help: give each numa node the gpus attached to it (nvidia-smi topo -m, NUMA Affinity)
    /// ```
    pub(crate) static INCONSISTENT_NUMA_LAYOUT = {
        id: "ZP025",
        name: "inconsistent-numa-layout",
        severity: Error,
    };
}

declare_intent_rule! {
    /// The example pod can never be admitted on the pool's nodes under the Topology Manager policy the plan chooses.
    ///
    /// ## What it checks
    /// When the first pool gives its NUMA layout: the example pod (its
    /// `gpusPerPod` GPUs, one RDMA device of each of its `vfsPerPod`
    /// rails, and its exclusive CPUs, `cpus` or sized from the layout) put
    /// through the kubelet's hint merging on an empty node, under the
    /// policy the plan chooses for the pool, with the pod scope, by the
    /// same code as lint's ZL090 (`zerohop_known::topology`).
    ///
    /// ## Why it matters
    /// The kubelet admits a pod only when its resource managers' hints
    /// merge into one the policy accepts (kubernetes/kubernetes
    /// `pkg/kubelet/cm/topologymanager/policy.go`; Kubernetes
    /// documentation, "Control Topology Management Policies on a node");
    /// otherwise it fails the pod with `TopologyAffinityError` after the
    /// scheduler placed it, and a Job recreates it in a loop. More CPUs
    /// than the NUMA nodes of the GPUs hold outside `reservedCpus` can
    /// never be aligned with them.
    ///
    /// ## How to fix
    /// Leave `workload.cpus` out to have it sized from the layout, or give
    /// as many CPUs as the GPUs' NUMA nodes hold outside `reservedCpus`;
    /// or ask for fewer `gpusPerPod` or `vfsPerPod`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP051/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       gpus: 8
    ///       numaNodes:
    ///         - {cpus: "0-27,56-83", gpus: 4}
    ///         - {cpus: "28-55,84-111", gpus: 4}
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", rail: 0, subnet: 192.168.100.0/24, numaNode: 0}
    ///         - {pf: ens2f0np0, rdmaDevice: mlx5_1, deviceId: "1021", rail: 1, subnet: 192.168.101.0/24, numaNode: 1}
    ///   workload:
    ///     gpusPerPod: 8
    ///     cpus: 200
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:25:11: the example pod (8 gpus, 2 rdma devices, 200 cpus) can never be admitted on pool "h100" under topology manager policy best-effort: 200 exclusive cpus: the node has 112 in all [ZP051]
    ///   help: give workload.cpus so that the cpus span the same numa nodes as the gpus, or fewer gpusPerPod/vfsPerPod
    /// ```
    pub(crate) static POD_NEVER_ADMITTED = {
        id: "ZP051",
        name: "pod-never-admitted",
        severity: Error,
    };
}

/// CPUs per NUMA node the default pod size leaves to the node's daemon
/// sets (device plugins, CNI, the agent), which request CPU from the same
/// allocatable CPUs: a pod asking for all of them would stay Pending.
const DAEMON_SET_CPUS_PER_NUMA_NODE: u32 = 2;

/// Exclusive CPUs per GPU when the layout is unknown.
const CPUS_PER_GPU_WITHOUT_LAYOUT: u32 = 8;

/// Checks a pool's NUMA nodes: CPU lists, no CPU in two nodes, the GPUs
/// adding up to the pool's. Empty when the intent gives none.
pub(super) fn numa_nodes(
    c: &mut Checker,
    specs: Option<Vec<NumaNodeSpec>>,
    pool: &Spanned<String>,
    gpus: u32,
) -> Vec<NumaPlan> {
    let Some(specs) = specs else {
        return Vec::new();
    };
    if specs.is_empty() || specs.len() > MAX_LAYOUT_NUMA_NODES {
        c.error(
            &INCONSISTENT_NUMA_LAYOUT,
            &pool.referenced,
            format!("pool {:?} lists {} numa nodes", pool.value, specs.len()),
            format!("list 1 to {MAX_LAYOUT_NUMA_NODES} numa nodes, as lscpu shows them"),
        );
        return Vec::new();
    }
    let mut seen = BTreeSet::new();
    let mut nodes = Vec::new();
    for spec in specs {
        let cpus = c
            .grammar(
                &MALFORMED_CPU_LIST,
                &spec.cpus,
                "cpus",
                |text| CpuSet::parse(text).map_err(|e| e.to_string()),
                "write it as /sys/devices/system/node/nodeN/cpulist does: \"0-27,56-83\"",
            )
            .unwrap_or_default();
        if let Some(twice) = cpus.0.iter().find(|cpu| !seen.insert(**cpu)) {
            c.error(
                &INCONSISTENT_NUMA_LAYOUT,
                &spec.cpus.referenced,
                format!("cpu {twice} is in two numa nodes"),
                "give each numa node its own cpus",
            );
        }
        nodes.push(NumaPlan {
            cpus,
            gpus: spec.gpus.value,
        });
    }
    let listed: u32 = nodes.iter().map(|n| n.gpus).sum();
    if listed != gpus {
        c.error(
            &INCONSISTENT_NUMA_LAYOUT,
            &pool.referenced,
            format!(
                "the numa nodes of pool {:?} hold {listed} gpus but the pool has {gpus}",
                pool.value
            ),
            "give each numa node the gpus attached to it (nvidia-smi topo -m, NUMA Affinity)",
        );
    }
    nodes
}

/// Checks a NIC's `numaNode` against the pool's NUMA nodes.
pub(super) fn nic_numa_node(
    c: &mut Checker,
    numa_node: Option<&Spanned<u32>>,
    pf: &Spanned<String>,
    numa_nodes: usize,
) {
    match numa_node {
        Some(node) if numa_nodes == 0 => c.error(
            &INCONSISTENT_NUMA_LAYOUT,
            &node.referenced,
            format!(
                "pf {:?} gives a numaNode but its pool gives no numaNodes",
                pf.value
            ),
            "describe the pool's numaNodes (cpus and gpus of each), or remove numaNode",
        ),
        Some(node) if node.value as usize >= numa_nodes => c.error(
            &INCONSISTENT_NUMA_LAYOUT,
            &node.referenced,
            format!(
                "numaNode {} but the pool has {numa_nodes} numa nodes",
                node.value
            ),
            "give the numa node as /sys/class/net/<pf>/device/numa_node shows it",
        ),
        None if numa_nodes > 0 => c.error(
            &INCONSISTENT_NUMA_LAYOUT,
            &pf.referenced,
            format!("pf {:?} has no numaNode", pf.value),
            "give each nic its numa node: cat /sys/class/net/<pf>/device/numa_node",
        ),
        _ => {}
    }
}

/// The Topology Manager policy of a pool (see the module documentation).
pub(super) fn policy(pool: &PoolPlan) -> Policy {
    if pool.numa.is_empty() {
        return Policy::BestEffort;
    }
    let mut used: BTreeSet<u32> = pool.nics.iter().filter_map(|n| n.numa_node).collect();
    used.extend(
        pool.numa
            .iter()
            .zip(0u32..)
            .filter(|(numa, _)| numa.gpus > 0)
            .map(|(_, index)| index),
    );
    if used.len() <= 1 {
        Policy::SingleNumaNode
    } else {
        Policy::BestEffort
    }
}

/// The CPUs of a NUMA node a Guaranteed pod can get: its isolated CPUs
/// when the pool isolates some, else those outside `reservedCpus`.
fn usable_cpus(pool: &PoolPlan, numa: &NumaPlan) -> u32 {
    let reserved = CpuSet::parse(&pool.reserved_cpus).unwrap_or_default();
    let isolated = pool
        .isolated_cpus
        .as_deref()
        .and_then(|list| CpuSet::parse(list).ok());
    let usable = match isolated {
        Some(isolated) => numa.cpus.0.intersection(&isolated.0).count(),
        None => numa.cpus.minus(&reserved).0.len(),
    };
    u32::try_from(usable).unwrap_or(u32::MAX)
}

/// The example pod's exclusive CPUs on `pool`: `written`, or sized from
/// the NUMA nodes its GPUs need; the pod (its GPUs, its rails' VFs and its
/// CPUs) must be admissible under the pool's policy on an empty node, else
/// the problem is reported at `at`.
#[expect(
    clippy::too_many_arguments,
    reason = "the pod's shape and the pool's resources"
)]
pub(super) fn pod_cpus(
    c: &mut Checker,
    written: Option<&Spanned<u32>>,
    at: &Location,
    gpus: u32,
    pod_rails: &[u32],
    pool: &PoolPlan,
    rails: &BTreeMap<u32, RailPlan>,
    resource_prefix: &str,
    rdma_mode: RdmaMode,
) -> u32 {
    if let Some(cpus) = written
        && cpus.value == 0
    {
        c.error(
            &VALUE_OUT_OF_RANGE,
            &cpus.referenced,
            "cpus is 0",
            "give the pod whole cpus, at least 1, so that the static cpu manager pins them",
        );
    }
    let Some(layout) = numa_layout(pool, rails, resource_prefix, rdma_mode) else {
        return written.map_or(gpus.saturating_mul(CPUS_PER_GPU_WITHOUT_LAYOUT), |c| {
            c.value
        });
    };
    let mut demand = Demand::default();
    demand
        .devices
        .insert(GPU_RESOURCE.to_owned(), u64::from(gpus));
    for rail in pod_rails.iter().filter_map(|r| rails.get(r)) {
        demand
            .devices
            .insert(rail_resource(resource_prefix, rail), 1);
    }
    let cpus = match written {
        Some(cpus) => cpus.value,
        None => {
            // The NUMA nodes the GPUs and VFs alone align to (what
            // `restricted` would prefer), else those the policy places
            // them on.
            let nodes = admit(&layout, Policy::Restricted, &demand)
                .or_else(|_| admit(&layout, pool.topology_policy, &demand))
                .unwrap_or_default();
            let mut cpus = 0u32;
            for numa in nodes.iter().filter_map(|n| pool.numa.get(*n as usize)) {
                cpus = cpus.saturating_add(
                    usable_cpus(pool, numa).saturating_sub(DAEMON_SET_CPUS_PER_NUMA_NODE),
                );
            }
            cpus.max(1)
        }
    };
    demand.cpus = Some(u64::from(cpus));
    if let Err(rejection) = admit(&layout, pool.topology_policy, &demand) {
        let place = written.map_or(at, |w| &w.referenced);
        c.error(
            &POD_NEVER_ADMITTED,
            place,
            format!(
                "the example pod ({gpus} gpus, {} rdma devices, {cpus} cpus) can never be admitted on pool {:?} under topology manager policy {}: {}",
                pod_rails.len(),
                pool.name,
                pool.topology_policy.as_str(),
                rejection.0
            ),
            "give workload.cpus so that the cpus span the same numa nodes as the gpus, or fewer gpusPerPod/vfsPerPod",
        );
    }
    cpus
}
