//! The example workload (its names, image, sizes and NCCL settings), the
//! fabric tests and the agent.

use std::collections::BTreeMap;

use super::values::{
    MALFORMED_IMAGE_REFERENCE, MALFORMED_INTERFACE_NAME, MALFORMED_NODE_LABEL, MALFORMED_SIZE,
    NAME_NOT_A_DNS_LABEL, VALUE_OUT_OF_RANGE,
};
use super::{Checker, DNS_LABEL_HELP};
use crate::grammar;
use crate::intent::{Agent, RdmaMode, Validation, Workload};
use crate::plan::{AgentPlan, PoolPlan, RailPlan, ValidationPlan, WorkloadPlan};
use crate::rule::declare_intent_rule;

declare_intent_rule! {
    /// The example pod asks for more GPUs, rails or huge pages than a node of the pool has, or for none.
    ///
    /// ## What it checks
    /// `spec.workload.gpusPerPod` (1 to the fewest `gpus` of any pool),
    /// `vfsPerPod` (1 to the number of rails) and `hugepages` (1 to the
    /// fewest huge pages any pool reserves, and only when a pool reserves
    /// some).
    ///
    /// ## Why it matters
    /// The scheduler places the pod only on a node whose allocatable
    /// resources hold its requests: a pod asking for 9 GPUs on 8-GPU nodes,
    /// for two devices of one rail, or for huge pages no node reserves
    /// stays Pending with "Insufficient". A pod asking for none of a
    /// resource does not test the path it was rendered to test.
    ///
    /// ## How to fix
    /// Size the pod to one node of the pool: at most its GPUs, one RDMA
    /// device per rail, and at most the huge pages its nodes reserve
    /// (`hugepages.count` of the pool).
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP050/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   workload:
    ///     gpusPerPod: 16
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:21:17: gpusPerPod 16 does not fit a node with 8 gpus [ZP050]
    ///   help: use 1 to the pool's gpus
    /// ```
    pub(crate) static WORKLOAD_DOES_NOT_FIT_POOL = {
        id: "ZP050",
        name: "workload-does-not-fit-pool",
        severity: Error,
    };
}

/// Checks the workload against the pools and rails it runs on.
pub(super) fn workload(
    c: &mut Checker,
    w: Workload,
    pools: &[PoolPlan],
    rails: &BTreeMap<u32, RailPlan>,
    resource_prefix: &str,
    rdma_mode: RdmaMode,
) -> WorkloadPlan {
    c.grammar(
        &NAME_NOT_A_DNS_LABEL,
        &w.namespace,
        "namespace",
        grammar::dns_label,
        DNS_LABEL_HELP,
    );
    c.grammar(
        &NAME_NOT_A_DNS_LABEL,
        &w.name,
        "name",
        grammar::dns_label,
        DNS_LABEL_HELP,
    );
    c.grammar(
        &MALFORMED_IMAGE_REFERENCE,
        &w.image,
        "image",
        grammar::image_reference,
        "give an image such as nvcr.io/nvidia/pytorch:25.08-py3",
    );
    for size in [&w.memory, &w.shm_size] {
        c.grammar(
            &MALFORMED_SIZE,
            size,
            "size",
            grammar::quantity,
            "write a size such as 256Gi",
        );
    }
    c.grammar(
        &MALFORMED_INTERFACE_NAME,
        &w.nccl_socket_ifname,
        "ncclSocketIfname",
        grammar::nccl_socket_ifname,
        "give interface names or prefixes, e.g. eth0 or ^docker,lo",
    );
    let min_gpus = pools.iter().map(|p| p.gpus).min().unwrap_or(0);
    if w.gpus_per_pod.value == 0 || w.gpus_per_pod.value > min_gpus {
        c.error(
            &WORKLOAD_DOES_NOT_FIT_POOL,
            &w.gpus_per_pod.referenced,
            format!(
                "gpusPerPod {} does not fit a node with {min_gpus} gpus",
                w.gpus_per_pod.value
            ),
            "use 1 to the pool's gpus",
        );
    }
    let vfs = w
        .vfs_per_pod
        .as_ref()
        .map_or(rails.len() as u32, |v| v.value);
    if let Some(v) = &w.vfs_per_pod
        && (v.value == 0 || v.value as usize > rails.len())
    {
        c.error(
            &WORKLOAD_DOES_NOT_FIT_POOL,
            &v.referenced,
            format!("vfsPerPod {} but there are {} rails", v.value, rails.len()),
            "request at most one rdma device per rail",
        );
    }
    let pool_hugepages = pools
        .iter()
        .filter_map(|p| p.hugepages)
        .min_by_key(|(_, n)| *n);
    let hugepages = match (&w.hugepages, pool_hugepages) {
        (Some(h), None) => {
            c.error(
                &WORKLOAD_DOES_NOT_FIT_POOL,
                &h.referenced,
                "workload hugepages but no pool reserves hugepages",
                "add hugepages to the node pool",
            );
            None
        }
        (Some(h), Some((size, count))) => {
            if h.value == 0 || h.value > count {
                c.error(
                    &WORKLOAD_DOES_NOT_FIT_POOL,
                    &h.referenced,
                    format!("{} hugepages per pod but nodes reserve {count}", h.value),
                    "request at most the pages a node reserves",
                );
            }
            Some((size, h.value))
        }
        (None, _) => None,
    };
    // The pod runs on the first pool (its nodeSelector), one device of each
    // of the first `vfs` rails.
    let pod_rails: Vec<u32> = rails.keys().take(vfs as usize).copied().collect();
    let cpus = match pools.first() {
        Some(pool) => super::topology::pod_cpus(
            c,
            w.cpus.as_ref(),
            &w.gpus_per_pod.referenced,
            w.gpus_per_pod.value,
            &pod_rails,
            pool,
            rails,
            resource_prefix,
            rdma_mode,
        ),
        None => w.cpus.as_ref().map_or(1, |c| c.value),
    };
    WorkloadPlan {
        name: w.name.value,
        namespace: w.namespace.value,
        image: w.image.value,
        gpus: w.gpus_per_pod.value,
        rails: pod_rails,
        cpus,
        memory: w.memory.value,
        shm_size: w.shm_size.value,
        hugepages,
        socket_ifname: w.nccl_socket_ifname.value,
    }
}

/// Checks the agent's namespace and image; `None` when it is turned off.
pub(super) fn agent(c: &mut Checker, agent: Agent) -> Option<AgentPlan> {
    c.grammar(
        &NAME_NOT_A_DNS_LABEL,
        &agent.namespace,
        "agent namespace",
        grammar::dns_label,
        DNS_LABEL_HELP,
    );
    c.grammar(
        &MALFORMED_IMAGE_REFERENCE,
        &agent.image,
        "image",
        grammar::image_reference,
        "give an image reference such as ghcr.io/zerohop/zerohop:0.1.0",
    );
    let mut monitor_labels = BTreeMap::new();
    for (key, value) in agent.monitor_labels.0 {
        if let Err(problem) = grammar::label(&key.value, &value.value) {
            c.error(
                &MALFORMED_NODE_LABEL,
                &key.referenced,
                format!("monitor {problem}"),
                "labels are [prefix/]name: value, letters, digits, '-', '_' and '.'",
            );
        }
        monitor_labels.insert(key.value, value.value);
    }
    if !agent.enabled {
        return None;
    }
    // The grammars were checked above with their places in the file.
    let mut plan = AgentPlan::new(agent.namespace.value, agent.image.value, agent.monitors)
        .ok()?
        .with_monitor_labels(monitor_labels)
        .ok()?;
    plan.kernel_log = agent.kernel_log;
    Some(plan)
}

/// Checks the images and size of the fabric tests.
pub(super) fn validation(c: &mut Checker, v: Validation) -> ValidationPlan {
    for image in [&v.perftest_image, &v.nccl_tests_image] {
        c.grammar(
            &MALFORMED_IMAGE_REFERENCE,
            image,
            "image",
            grammar::image_reference,
            "give an image reference such as ghcr.io/org/nccl-tests:tag",
        );
    }
    if !(2..=1024).contains(&v.nccl_nodes.value) {
        c.error(
            &VALUE_OUT_OF_RANGE,
            &v.nccl_nodes.referenced,
            format!("ncclNodes {} is not 2 to 1024", v.nccl_nodes.value),
            "nccl-tests measures the fabric between at least 2 nodes",
        );
    }
    ValidationPlan {
        perftest_image: v.perftest_image.value,
        nccl_tests_image: v.nccl_tests_image.value,
        nccl_nodes: v.nccl_nodes.value,
    }
}
