//! The intent rules and the pass that checks an intent against them:
//! semantic checks from the operators' admission webhooks (which their
//! Helm charts leave off) and the grammar of every string that reaches a
//! manifest, a script, a unit or a command; and the resolved [`Plan`].
//!
//! Each rule is declared in the module that reports it; [`RULES`] lists
//! them all.

mod nic;
mod storage;
mod topology;
mod values;
mod workload;

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::{Location, Spanned};

use crate::diagnostic::Diagnostic;
use crate::grammar;
use crate::intent::{
    API_VERSION, DataPathPlan, Ipam, KIND, NodePool, Operators, Platform, RdmaMode,
};
use crate::parse::INVALID_INTENT;
use crate::plan::{Plan, PoolPlan};
use crate::rule::{Rule, declare_intent_rule};
use values::{
    MALFORMED_CPU_LIST, MALFORMED_IMAGE_REFERENCE, MALFORMED_NODE_LABEL, NAME_NOT_A_DNS_LABEL,
    VALUE_OUT_OF_RANGE,
};
use zerohop_core::RuleInfo;
use zerohop_known::operators::OPENSHIFT_SRIOV_NAMESPACE;
use zerohop_known::topology::Policy;

/// Every intent rule, in ID order.
pub static RULES: &[&Rule] = &[
    &INVALID_INTENT,
    &UNSUPPORTED_API_VERSION_OR_KIND,
    &values::NAME_NOT_A_DNS_LABEL,
    &values::MALFORMED_IMAGE_REFERENCE,
    &values::MALFORMED_INTERFACE_NAME,
    &values::MALFORMED_RESOURCE_NAME,
    &values::MALFORMED_NODE_LABEL,
    &values::MALFORMED_CPU_LIST,
    &values::MALFORMED_ADDRESS,
    &values::MALFORMED_PATH,
    &values::MALFORMED_SIZE,
    &values::VALUE_OUT_OF_RANGE,
    &INCOMPLETE_NODE_POOL,
    &LISTED_TWICE,
    &POOL_NAMED_LIKE_CLUSTER_POOL,
    &OVERLAPPING_POOL_SELECTORS,
    &POOL_SELECTED_BY_GPU_FEATURE_DISCOVERY_LABEL,
    &topology::INCONSISTENT_NUMA_LAYOUT,
    &nic::UNKNOWN_NIC_DEVICE_ID,
    &nic::INFINIBAND_ON_ETHERNET_NIC,
    &nic::VLAN_ON_INFINIBAND,
    &nic::VFIO_PCI_DEVICE_TYPE,
    &nic::UNUSABLE_VF_COUNT,
    &nic::INCONSISTENT_RAIL,
    &HOST_LOCAL_IPAM,
    &UNUSABLE_RESOURCE_PREFIX,
    &storage::CONFLICTING_STORAGE_PATHS,
    &storage::UNUSABLE_NFS_NIC,
    &storage::UNUSABLE_CSI_DRIVER,
    &storage::NFS_MOUNT_POINT_MISSING,
    &storage::UNUSED_MOUNT_POINT,
    &workload::WORKLOAD_DOES_NOT_FIT_POOL,
    &topology::POD_NEVER_ADMITTED,
];

/// Every intent rule's metadata, in ID order, for `zerohop checks` and
/// `zerohop explain`.
pub fn rules() -> impl Iterator<Item = &'static RuleInfo> {
    RULES.iter().map(|rule| &rule.info)
}

/// Collects every problem of an intent, in any order.
pub(crate) struct Checker {
    found: Vec<Diagnostic>,
}

impl Checker {
    /// Records a problem of `rule` at `location`.
    pub(crate) fn error(
        &mut self,
        rule: &'static Rule,
        location: &Location,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.found
            .push(Diagnostic::at(rule, location, message).help(help));
    }

    /// Checks `field` against `check`; a problem is reported under `rule`
    /// as `{what} {value:?} {problem}` at the field, with `help`. Returns
    /// what the check returns, `None` when the field is wrong.
    pub(crate) fn grammar<T>(
        &mut self,
        rule: &'static Rule,
        field: &Spanned<String>,
        what: &str,
        check: impl FnOnce(&str) -> Result<T, String>,
        help: &str,
    ) -> Option<T> {
        match check(&field.value) {
            Ok(value) => Some(value),
            Err(problem) => {
                self.error(
                    rule,
                    &field.referenced,
                    format!("{what} {:?} {problem}", field.value),
                    help,
                );
                None
            }
        }
    }
}

declare_intent_rule! {
    /// The intent's `apiVersion` or `kind` is not one this planner reads.
    ///
    /// ## What it checks
    /// `apiVersion` must be `zerohop.dev/v1alpha1` and `kind` must be
    /// `DataPathPlan`.
    ///
    /// ## Why it matters
    /// The version says which format the rest of the file follows; a file
    /// of another version (or another kind of object, such as a manifest
    /// given by mistake) may read without a syntax error and still mean
    /// something else.
    ///
    /// ## How to fix
    /// Write `apiVersion: zerohop.dev/v1alpha1` and `kind: DataPathPlan`,
    /// or give `zerohop plan` the intent file rather than a manifest.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP002/fail/intent.yaml`:
    ///
    /// ```yaml
    /// apiVersion: zerohop.dev/v1
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:2:13: unsupported apiVersion "zerohop.dev/v1" [ZP002]
    ///   help: use "zerohop.dev/v1alpha1"
    /// ```
    pub(crate) static UNSUPPORTED_API_VERSION_OR_KIND = {
        id: "ZP002",
        name: "unsupported-api-version-or-kind",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A node pool without nodes to select or NICs to plan, or an intent without pools.
    ///
    /// ## What it checks
    /// That `spec.nodePools` lists at least one pool, and that every pool
    /// has a non-empty `nodeSelector` and at least one NIC in `nics`.
    ///
    /// ## Why it matters
    /// Every host setting, SR-IOV policy and rail network is rendered per
    /// pool and per NIC. With an empty selector the pool's
    /// SriovNetworkNodePolicies would select every node of the cluster
    /// (k8snetworkplumbingwg/sriov-network-operator `api/v1/helper.go`,
    /// `Selected`: a node matches when no label differs), with or without
    /// the NICs, while on OpenShift its MachineConfigPool would select none
    /// (openshift/machine-config-operator `pkg/helpers/helpers.go` skips a
    /// pool whose selector is empty). A pool without NICs has no rails to
    /// give its pods.
    ///
    /// ## How to fix
    /// Describe each pool of GPU nodes with a label its nodes carry (NFD's
    /// `feature.node.kubernetes.io/pci-10de.present: "true"`, or your own)
    /// and list its RDMA NIC ports, one per physical function.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP020/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics: []
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:9:13: pool "h100" has no nics [ZP020]
    ///   help: list the rdma nic ports (pfs)
    /// ```
    pub(crate) static INCOMPLETE_NODE_POOL = {
        id: "ZP020",
        name: "incomplete-node-pool",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A pool, a node label or a NIC is listed twice.
    ///
    /// ## What it checks
    /// Pool names across `spec.nodePools`, label keys within one pool's
    /// `nodeSelector`, and PF names within one pool's `nics`.
    ///
    /// ## Why it matters
    /// Each names something rendered once: a pool becomes objects and a
    /// directory named after it, a label key holds one value in a
    /// selector, and a PF gets one SR-IOV policy. The second entry would
    /// silently replace the first, or render two objects of the same name
    /// that overwrite each other when applied.
    ///
    /// ## How to fix
    /// Give each pool its own name, each label once, and list each physical
    /// function once (two ports of one NIC are two PFs, `ens1f0np0` and
    /// `ens1f1np1`).
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP021/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", rail: 0, subnet: 192.168.100.0/24}
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_1, deviceId: "1021", rail: 1, subnet: 192.168.101.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:16:16: pf "ens1f0np0" is listed twice in pool "h100" [ZP021]
    ///   help: list each physical function once
    /// ```
    pub(crate) static LISTED_TWICE = {
        id: "ZP021",
        name: "listed-twice",
        severity: Error,
    };
}

declare_intent_rule! {
    /// On OpenShift, a node pool named like a machine config pool every cluster has.
    ///
    /// ## What it checks
    /// With `platform: openshift`, pool names `master`, `worker` and
    /// `arbiter`.
    ///
    /// ## Why it matters
    /// On OpenShift each node pool becomes a MachineConfigPool of its name,
    /// and every cluster already has these three
    /// (openshift/machine-config-operator
    /// `manifests/*.machineconfigpool.yaml`). A pool named `worker` would
    /// put the pool's kernel arguments, huge pages, QoS script and mounts
    /// into the `worker` pool, and so onto every worker of the cluster,
    /// with or without GPUs.
    ///
    /// ## How to fix
    /// Name the pool after its nodes, e.g. `h100`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP022/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   platform: openshift
    ///   nodePools:
    ///     - name: worker
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:9:13: pool "worker" is a machine config pool of every openshift cluster; its tuning would reach all its nodes [ZP022]
    ///   help: name the pool after its nodes, e.g. "h100"
    /// ```
    pub(crate) static POOL_NAMED_LIKE_CLUSTER_POOL = {
        id: "ZP022",
        name: "pool-named-like-cluster-pool",
        severity: Error,
    };
}

declare_intent_rule! {
    /// On OpenShift, one pool's `nodeSelector` also selects the nodes of another pool.
    ///
    /// ## What it checks
    /// With `platform: openshift`, pairs of pools where every label of one
    /// pool's `nodeSelector` is also in the other's: the first selects all
    /// the nodes of the second. Two equal selectors are reported once, at
    /// the later pool.
    ///
    /// ## Why it matters
    /// Each pool becomes a custom MachineConfigPool, and "a node can be
    /// part of at most one pool" (openshift/machine-config-operator
    /// `docs/custom-pools.md`): for a node that two custom pools select,
    /// the Machine Config Operator gives up ("node … belongs to 2 custom
    /// roles, cannot proceed with this Node", `pkg/helpers/helpers.go`,
    /// `GetPoolsForNode`), and neither pool's kernel arguments, huge pages
    /// or mounts reach it.
    ///
    /// ## How to fix
    /// Give each pool a label of its own in its `nodeSelector`, one that
    /// the other pools' nodes do not carry.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP023/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   platform: openshift
    ///   nodePools:
    ///     - name: h100
    ///       nodeSelector:
    ///         feature.node.kubernetes.io/pci-10de.present: "true"
    ///     - name: h100-rack-b
    ///       nodeSelector:
    ///         feature.node.kubernetes.io/pci-10de.present: "true"
    ///         example.com/rack: b
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:9:13: the nodeSelector of pool "h100" also selects the nodes of pool "h100-rack-b"; on openshift a node belongs to one machine config pool [ZP023]
    ///   help: give each pool a label of its own in its nodeSelector
    /// ```
    pub(crate) static OVERLAPPING_POOL_SELECTORS = {
        id: "ZP023",
        name: "overlapping-pool-selectors",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A pool selects its nodes by a GPU Feature Discovery label, which appears only after the GPU stack is up.
    ///
    /// ## What it checks
    /// The keys of every pool's `nodeSelector` against the labels GPU
    /// Feature Discovery sets (`nvidia.com/gpu.product`,
    /// `nvidia.com/cuda.*` and the other "Generated Labels" of
    /// NVIDIA/k8s-device-plugin `docs/gpu-feature-discovery/README.md`).
    /// `nvidia.com/gpu.present`, which the GPU Operator sets as soon as it
    /// runs, is not counted. Lint's ZL048 says the same of hand-written
    /// SR-IOV and Network Operator objects.
    ///
    /// ## Why it matters
    /// The pool's selector becomes the SR-IOV policies' and the Network
    /// Operator's node selector. GFD starts once the GPU driver is up,
    /// which with GPUDirect RDMA waits for the NIC driver those objects
    /// deploy: until then the label is on no node, so no VFs are created
    /// and no NIC driver deployed, and the GPU driver keeps waiting.
    ///
    /// ## How to fix
    /// Select the pool on Node Feature Discovery's PCI label
    /// (`feature.node.kubernetes.io/pci-10de.present: "true"`), which
    /// exists before any operator runs, or on a label you set on the
    /// nodes.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP024/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nodeSelector:
    ///         nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:11:9: label "nvidia.com/gpu.product" is set by gpu feature discovery, which starts only after the gpu driver, a later step than the network [ZP024]
    ///   help: select the pool on feature.node.kubernetes.io/pci-10de.present: "true" or on a label you set on its nodes
    /// ```
    pub(crate) static POOL_SELECTED_BY_GPU_FEATURE_DISCOVERY_LABEL = {
        id: "ZP024",
        name: "pool-selected-by-gpu-feature-discovery-label",
        severity: Error,
    };
}

declare_intent_rule! {
    /// Rail networks allocate addresses with `host-local`, so pods on two nodes get the same address.
    ///
    /// ## What it checks
    /// `spec.rdma.ipam: host-local`.
    ///
    /// ## Why it matters
    /// `host-local` keeps its allocations on the node it runs on ("It
    /// stores the state locally on the host filesystem, therefore ensuring
    /// uniqueness of IP addresses on a single host", containernetworking/
    /// plugins `plugins/ipam/host-local/README.md`). A rail network spans
    /// every node of the pool, all with the same range, so the first pod
    /// on each node gets the same address, and RoCE connections and NCCL's
    /// bootstrap between those pods reach the wrong peer. Lint's ZL097
    /// says the same of hand-written networks.
    ///
    /// ## How to fix
    /// Use `ipam: whereabouts` (the default), which allocates across the
    /// cluster.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP036/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   rdma:
    ///     ipam: host-local
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:18:11: ipam host-local allocates from the same range on every node: pods on two nodes of a pool get the same address [ZP036]
    ///   help: use whereabouts, which allocates across the cluster
    /// ```
    pub(crate) static HOST_LOCAL_IPAM = {
        id: "ZP036",
        name: "host-local-ipam",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A `resourcePrefix` that is not a domain, or not the one the component advertising the rails uses.
    ///
    /// ## What it checks
    /// `spec.rdma.resourcePrefix`: a DNS subdomain with at least one dot,
    /// other than `intel.com`; and with `mode: sriov` on OpenShift, only
    /// `openshift.io`.
    ///
    /// ## Why it matters
    /// Pods request the rails as `<prefix>/<resourceName>`, so the prefix
    /// must be the one the device plugin advertises under. OpenShift's
    /// SR-IOV Network Operator builds every name from its own
    /// `RESOURCE_PREFIX`, `openshift.io` (k8snetworkplumbingwg/
    /// sriov-network-operator `api/v1/helper.go`; Mellanox/
    /// network-operator-docs `docs/openshift/deployment-guide-openshift.rst`),
    /// and the plan cannot change it there: pods asking for another prefix
    /// stay Pending. `intel.com` is the SR-IOV device plugin's default
    /// prefix, what a resource gets when nobody chose one; a name without a
    /// dot is not an extended resource name Kubernetes accepts.
    ///
    /// ## How to fix
    /// Leave `resourcePrefix` out (the plan uses `nvidia.com`, or
    /// `openshift.io` with SR-IOV on OpenShift), or give a domain you own.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP037/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   rdma:
    ///     resourcePrefix: intel.com
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:18:21: resourcePrefix "intel.com" is not a usable domain [ZP037]
    ///   help: use a domain you own, e.g. "nvidia.com"; "intel.com" is the sr-iov device plugin's default, not a choice
    /// ```
    pub(crate) static UNUSABLE_RESOURCE_PREFIX = {
        id: "ZP037",
        name: "unusable-resource-prefix",
        severity: Error,
    };
}

const DNS_LABEL_HELP: &str = "write it like \"h100-roce\", at most 63 characters";

/// Checks an intent and resolves it; every problem found is returned.
pub(crate) fn validate(
    intent: DataPathPlan,
    platform: Option<Platform>,
) -> Result<Plan, Vec<Diagnostic>> {
    let mut c = Checker { found: Vec::new() };
    if intent.api_version.value != API_VERSION {
        c.error(
            &UNSUPPORTED_API_VERSION_OR_KIND,
            &intent.api_version.referenced,
            format!("unsupported apiVersion {:?}", intent.api_version.value),
            format!("use {API_VERSION:?}"),
        );
    }
    if intent.kind.value != KIND {
        c.error(
            &UNSUPPORTED_API_VERSION_OR_KIND,
            &intent.kind.referenced,
            format!("unsupported kind {:?}", intent.kind.value),
            format!("use {KIND:?}"),
        );
    }
    let name = intent.metadata.name;
    c.grammar(
        &NAME_NOT_A_DNS_LABEL,
        &name,
        "name",
        grammar::dns_label,
        DNS_LABEL_HELP,
    );
    let spec = intent.spec;
    let platform = platform.unwrap_or(spec.platform);
    let ops = operators(&mut c, spec.operators, platform);
    let rdma_mode = spec.rdma.mode.as_ref().map_or(RdmaMode::Sriov, |m| m.value);
    // host-local keeps its allocations in each node's own store, so two
    // nodes hand out the same first address of the rail's subnet (CNI
    // plugins documentation, `plugins/ipam/host-local`: "allocates IPv4 and
    // IPv6 addresses out of a specified address range" per host); RoCE
    // between pods with one address fails. A rail network always spans the
    // pool's nodes.
    if let Some(ipam) = &spec.rdma.ipam
        && ipam.value == Ipam::HostLocal
    {
        c.error(
            &HOST_LOCAL_IPAM,
            &ipam.referenced,
            "ipam host-local allocates from the same range on every node: pods on two nodes of a pool get the same address",
            "use whereabouts, which allocates across the cluster",
        );
    }
    let resource_prefix = resource_prefix(&mut c, spec.rdma.resource_prefix, rdma_mode, platform);

    if spec.node_pools.is_empty() {
        c.error(
            &INCOMPLETE_NODE_POOL,
            &Location::UNKNOWN,
            "spec.nodePools is empty",
            "describe at least one pool of gpu nodes",
        );
    }
    let mut rails = nic::Rails::default();
    let mut pools = Vec::new();
    let mut pool_names = BTreeSet::new();
    let mut all_pfs: BTreeMap<String, bool> = BTreeMap::new();
    let mut pool_places = Vec::new();
    for pool in spec.node_pools {
        if !pool_names.insert(pool.name.value.clone()) {
            c.error(
                &LISTED_TWICE,
                &pool.name.referenced,
                format!("pool {:?} is listed twice", pool.name.value),
                "give each pool its own name",
            );
        }
        if platform == Platform::Openshift && CLUSTER_POOLS.contains(&pool.name.value.as_str()) {
            c.error(
                &POOL_NAMED_LIKE_CLUSTER_POOL,
                &pool.name.referenced,
                format!("pool {:?} is a machine config pool of every openshift cluster; its tuning would reach all its nodes", pool.name.value),
                "name the pool after its nodes, e.g. \"h100\"",
            );
        }
        pool_places.push(pool.name.referenced);
        pools.push(node_pool(&mut c, pool, rdma_mode, &mut rails, &mut all_pfs));
    }
    if platform == Platform::Openshift {
        overlapping_pools(&mut c, &pools, &pool_places);
    }
    let storage = storage::storage(&mut c, spec.storage, &all_pfs);
    let mut rails = rails.by_number;
    storage::mark_host_networks(&mut rails, &pools, &storage);
    for pool in &mut pools {
        pool.topology_policy = topology::policy(pool);
    }
    let workload = workload::workload(
        &mut c,
        spec.workload,
        &pools,
        &rails,
        &resource_prefix,
        rdma_mode,
    );
    let validation = workload::validation(&mut c, spec.validation);
    let agent = workload::agent(&mut c, spec.agent);

    if !c.found.is_empty() {
        return Err(c.found);
    }
    Ok(Plan {
        name: name.value,
        platform,
        network_operator_version: ops.network_operator_version,
        network_operator_namespace: ops.network_operator_namespace,
        sriov_namespace: ops.sriov_namespace,
        doca_driver_version: ops.doca_driver_version,
        gpu_operator_version: ops.gpu_operator_version,
        gpu_operator_namespace: ops.gpu_operator_namespace,
        pools,
        rails,
        rdma_mode,
        resource_prefix,
        nfs: storage.nfs,
        nvme_targets: storage.nvme_targets,
        gds: storage.gds,
        local_nvme: storage.local_nvme,
        workload,
        validation,
        agent,
    })
}

/// The prefix of the rails' resources: the one the component that
/// advertises them really uses.
fn resource_prefix(
    c: &mut Checker,
    written: Option<Spanned<String>>,
    mode: RdmaMode,
    platform: Platform,
) -> String {
    use zerohop_known::operators::{
        NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX, OPENSHIFT_SRIOV_RESOURCE_PREFIX,
    };
    let Some(prefix) = written else {
        return match (mode, platform) {
            (RdmaMode::Sriov, Platform::Openshift) => OPENSHIFT_SRIOV_RESOURCE_PREFIX,
            _ => NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX,
        }
        .to_owned();
    };
    if prefix.value == "intel.com"
        || !prefix.value.contains('.')
        || grammar::dns_subdomain(&prefix.value).is_err()
    {
        c.error(&UNUSABLE_RESOURCE_PREFIX, &prefix.referenced, format!("resourcePrefix {:?} is not a usable domain", prefix.value), "use a domain you own, e.g. \"nvidia.com\"; \"intel.com\" is the sr-iov device plugin's default, not a choice");
    } else if mode == RdmaMode::Sriov
        && platform == Platform::Openshift
        && prefix.value != OPENSHIFT_SRIOV_RESOURCE_PREFIX
    {
        c.error(
            &UNUSABLE_RESOURCE_PREFIX,
            &prefix.referenced,
            format!("resourcePrefix {:?} cannot be used with sr-iov on openshift", prefix.value),
            format!("openshift's sr-iov network operator advertises every vf as \"{OPENSHIFT_SRIOV_RESOURCE_PREFIX}/<resourceName>\"; remove resourcePrefix"),
        );
    }
    prefix.value
}

/// The operator settings, checked.
struct OperatorPlan {
    network_operator_version: String,
    network_operator_namespace: String,
    sriov_namespace: String,
    doca_driver_version: String,
    gpu_operator_version: String,
    gpu_operator_namespace: String,
}

fn operators(c: &mut Checker, ops: Operators, platform: Platform) -> OperatorPlan {
    c.grammar(
        &MALFORMED_IMAGE_REFERENCE,
        &ops.doca_driver_version,
        "docaDriverVersion",
        grammar::doca_driver_tag,
        "use a tag such as \"doca3.5.0-26.07-0.7.0.0-0\"",
    );
    for version in [&ops.network_operator_version, &ops.gpu_operator_version] {
        c.grammar(
            &MALFORMED_IMAGE_REFERENCE,
            version,
            "operator version",
            grammar::image_tag,
            "use a release such as \"v26.7.0\"",
        );
    }
    let namespaces = [
        Some(&ops.network_operator_namespace),
        Some(&ops.gpu_operator_namespace),
        ops.sriov_operator_namespace.as_ref(),
    ];
    for namespace in namespaces.into_iter().flatten() {
        c.grammar(
            &NAME_NOT_A_DNS_LABEL,
            namespace,
            "namespace",
            grammar::dns_label,
            DNS_LABEL_HELP,
        );
    }
    let sriov_namespace = ops
        .sriov_operator_namespace
        .map(|n| n.value)
        .unwrap_or_else(|| match platform {
            Platform::Kubernetes => ops.network_operator_namespace.value.clone(),
            Platform::Openshift => OPENSHIFT_SRIOV_NAMESPACE.to_owned(),
        });
    OperatorPlan {
        network_operator_version: ops.network_operator_version.value,
        network_operator_namespace: ops.network_operator_namespace.value,
        sriov_namespace,
        doca_driver_version: ops.doca_driver_version.value,
        gpu_operator_version: ops.gpu_operator_version.value,
        gpu_operator_namespace: ops.gpu_operator_namespace.value,
    }
}

/// The MachineConfigPools of every OpenShift cluster (openshift/machine-config-operator
/// `manifests/*.machineconfigpool.yaml`): a node pool of one of these names
/// would be that pool.
const CLUSTER_POOLS: [&str; 3] = ["master", "worker", "arbiter"];

/// On OpenShift each node pool becomes a MachineConfigPool, and a node may
/// belong to one custom pool only ("A node can be part of at most one
/// pool", openshift/machine-config-operator `docs/custom-pools.md`): a pool
/// whose labels another pool's selector also holds takes that pool's nodes
/// too.
fn overlapping_pools(c: &mut Checker, pools: &[PoolPlan], places: &[Location]) {
    for (index, pool) in pools.iter().enumerate() {
        for (other_index, other) in pools.iter().enumerate() {
            let wider = index != other_index
                && !pool.node_selector.is_empty()
                && pool
                    .node_selector
                    .iter()
                    .all(|(key, value)| other.node_selector.get(key) == Some(value));
            // Equal selectors are reported once, at the later pool.
            let equal = pool.node_selector == other.node_selector;
            if wider && (!equal || other_index < index) {
                c.error(
                    &OVERLAPPING_POOL_SELECTORS,
                    places.get(index).unwrap_or(&Location::UNKNOWN),
                    format!("the nodeSelector of pool {:?} also selects the nodes of pool {:?}; on openshift a node belongs to one machine config pool", pool.name, other.name),
                    "give each pool a label of its own in its nodeSelector",
                );
            }
        }
    }
}

fn node_pool(
    c: &mut Checker,
    pool: NodePool,
    rdma_mode: RdmaMode,
    rails: &mut nic::Rails,
    all_pfs: &mut BTreeMap<String, bool>,
) -> PoolPlan {
    // The pool name becomes a directory under host/ and part of object
    // names: a DNS label has no '/', no '.', and so no '..'.
    c.grammar(
        &NAME_NOT_A_DNS_LABEL,
        &pool.name,
        "pool name",
        grammar::dns_label,
        DNS_LABEL_HELP,
    );
    if pool.node_selector.0.is_empty() {
        c.error(
            &INCOMPLETE_NODE_POOL,
            &pool.name.referenced,
            format!("pool {:?} has an empty nodeSelector", pool.name.value),
            "select the gpu nodes, e.g. nvidia.com/gpu.present: \"true\"",
        );
    }
    let mut node_selector = BTreeMap::new();
    for (key, value) in pool.node_selector.0 {
        if zerohop_known::operators::is_gpu_feature_discovery_label(&key.value) {
            c.error(
                &POOL_SELECTED_BY_GPU_FEATURE_DISCOVERY_LABEL,
                &key.referenced,
                format!("label {:?} is set by gpu feature discovery, which starts only after the gpu driver, a later step than the network", key.value),
                format!("select the pool on {}: \"true\" or on a label you set on its nodes", zerohop_known::operators::nfd_pci_vendor_label("10de")),
            );
        }
        if let Err(problem) = grammar::label(&key.value, &value.value) {
            c.error(
                &MALFORMED_NODE_LABEL,
                &key.referenced,
                problem,
                "node labels are [prefix/]name: value, letters, digits, '-', '_' and '.'",
            );
        }
        if node_selector
            .insert(key.value.clone(), value.value)
            .is_some()
        {
            c.error(
                &LISTED_TWICE,
                &key.referenced,
                format!("label {:?} is listed twice", key.value),
                "give each label once",
            );
        }
    }
    let gpus = pool.gpus.value;
    if gpus == 0 || gpus > 16 {
        c.error(
            &VALUE_OUT_OF_RANGE,
            &pool.gpus.referenced,
            format!("gpus is {gpus}"),
            "give the gpus per node, 1 to 16",
        );
    }
    for cpus in [Some(&pool.reserved_cpus), pool.isolated_cpus.as_ref()]
        .into_iter()
        .flatten()
    {
        c.grammar(
            &MALFORMED_CPU_LIST,
            cpus,
            "cpus",
            grammar::cpu_list,
            "write it as in /sys: \"0-3,64-67\"",
        );
    }
    if pool.nics.is_empty() {
        c.error(
            &INCOMPLETE_NODE_POOL,
            &pool.name.referenced,
            format!("pool {:?} has no nics", pool.name.value),
            "list the rdma nic ports (pfs)",
        );
    }
    let numa = topology::numa_nodes(c, pool.numa_nodes, &pool.name, gpus);
    let mut pfs = BTreeSet::new();
    let mut nics = Vec::new();
    for nic in pool.nics {
        topology::nic_numa_node(c, nic.numa_node.as_ref(), &nic.pf, numa.len());
        if !pfs.insert(nic.pf.value.clone()) {
            c.error(
                &LISTED_TWICE,
                &nic.pf.referenced,
                format!(
                    "pf {:?} is listed twice in pool {:?}",
                    nic.pf.value, pool.name.value
                ),
                "list each physical function once",
            );
        }
        if let Some(resolved) = nic::nic(c, nic, gpus, rdma_mode, rails, all_pfs) {
            nics.push(resolved);
        }
    }
    nics.sort_by_key(|n| n.rail);
    PoolPlan {
        name: pool.name.value,
        node_selector,
        cpu_vendor: pool.cpu_vendor,
        gpus,
        nics,
        hugepages: pool.hugepages.map(|h| (h.size, h.count.value)),
        isolated_cpus: pool.isolated_cpus.map(|s| s.value),
        reserved_cpus: pool.reserved_cpus.value,
        numa,
        // Chosen once the workload is known.
        topology_policy: Policy::BestEffort,
    }
}
