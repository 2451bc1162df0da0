//! Semantic checks of an intent, from the operators' admission webhooks
//! (which their Helm charts leave off) and from the grammar of every
//! string that reaches a manifest, a script, a unit or a command; and the
//! resolved [`Plan`].

mod nic;
mod storage;
mod topology;
mod workload;

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::{Location, Spanned};

use crate::diagnostic::Diagnostic;
use crate::grammar;
use crate::intent::{
    API_VERSION, DataPathPlan, Ipam, KIND, NodePool, Operators, Platform, RdmaMode,
};
use crate::plan::{Plan, PoolPlan};
use zerohop_known::operators::OPENSHIFT_SRIOV_NAMESPACE;
use zerohop_known::topology::Policy;

/// Collects every problem of an intent, in any order.
pub(crate) struct Checker {
    found: Vec<Diagnostic>,
}

impl Checker {
    /// Records a problem at `location`.
    pub(crate) fn error(
        &mut self,
        location: &Location,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.found
            .push(Diagnostic::at(location, message).help(help));
    }

    /// Checks `field` against `check`; a problem is reported as
    /// `{what} {value:?} {problem}` at the field, with `help`. Returns what
    /// the check returns, `None` when the field is wrong.
    pub(crate) fn grammar<T>(
        &mut self,
        field: &Spanned<String>,
        what: &str,
        check: impl FnOnce(&str) -> Result<T, String>,
        help: &str,
    ) -> Option<T> {
        match check(&field.value) {
            Ok(value) => Some(value),
            Err(problem) => {
                self.error(
                    &field.referenced,
                    format!("{what} {:?} {problem}", field.value),
                    help,
                );
                None
            }
        }
    }
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
            &intent.api_version.referenced,
            format!("unsupported apiVersion {:?}", intent.api_version.value),
            format!("use {API_VERSION:?}"),
        );
    }
    if intent.kind.value != KIND {
        c.error(
            &intent.kind.referenced,
            format!("unsupported kind {:?}", intent.kind.value),
            format!("use {KIND:?}"),
        );
    }
    let name = intent.metadata.name;
    c.grammar(&name, "name", grammar::dns_label, DNS_LABEL_HELP);
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
            &ipam.referenced,
            "ipam host-local allocates from the same range on every node: pods on two nodes of a pool get the same address",
            "use whereabouts, which allocates across the cluster",
        );
    }
    let resource_prefix = resource_prefix(&mut c, spec.rdma.resource_prefix, rdma_mode, platform);

    if spec.node_pools.is_empty() {
        c.error(
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
                &pool.name.referenced,
                format!("pool {:?} is listed twice", pool.name.value),
                "give each pool its own name",
            );
        }
        if platform == Platform::Openshift && CLUSTER_POOLS.contains(&pool.name.value.as_str()) {
            c.error(
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
    let rails = rails.by_number;
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
        c.error(&prefix.referenced, format!("resourcePrefix {:?} is not a usable domain", prefix.value), "use a domain you own, e.g. \"nvidia.com\"; \"intel.com\" is the sr-iov device plugin's default, not a choice");
    } else if mode == RdmaMode::Sriov
        && platform == Platform::Openshift
        && prefix.value != OPENSHIFT_SRIOV_RESOURCE_PREFIX
    {
        c.error(
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
        &ops.doca_driver_version,
        "docaDriverVersion",
        grammar::doca_driver_tag,
        "use a tag such as \"doca3.5.0-26.07-0.7.0.0-0\"",
    );
    for version in [&ops.network_operator_version, &ops.gpu_operator_version] {
        c.grammar(
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
        c.grammar(namespace, "namespace", grammar::dns_label, DNS_LABEL_HELP);
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
    c.grammar(&pool.name, "pool name", grammar::dns_label, DNS_LABEL_HELP);
    if pool.node_selector.0.is_empty() {
        c.error(
            &pool.name.referenced,
            format!("pool {:?} has an empty nodeSelector", pool.name.value),
            "select the gpu nodes, e.g. nvidia.com/gpu.present: \"true\"",
        );
    }
    let mut node_selector = BTreeMap::new();
    for (key, value) in pool.node_selector.0 {
        if zerohop_known::operators::is_gpu_feature_discovery_label(&key.value) {
            c.error(
                &key.referenced,
                format!("label {:?} is set by gpu feature discovery, which starts only after the gpu driver, a later step than the network", key.value),
                format!("select the pool on {}: \"true\" or on a label you set on its nodes", zerohop_known::operators::nfd_pci_vendor_label("10de")),
            );
        }
        if let Err(problem) = grammar::label(&key.value, &value.value) {
            c.error(
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
                &key.referenced,
                format!("label {:?} is listed twice", key.value),
                "give each label once",
            );
        }
    }
    let gpus = pool.gpus.value;
    if gpus == 0 || gpus > 16 {
        c.error(
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
            cpus,
            "cpus",
            grammar::cpu_list,
            "write it as in /sys: \"0-3,64-67\"",
        );
    }
    if pool.nics.is_empty() {
        c.error(
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
