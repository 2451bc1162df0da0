//! The rule registry: one declaration per rule, its doc comment its
//! documentation.

use zerohop_core::RuleInfo;

use crate::model::Workspace;
use crate::sink::Sink;

/// A lint rule: what it is, and the function that applies it to every
/// object of a run.
#[derive(Debug)]
pub struct Rule {
    /// ID, name, default severity and documentation.
    pub info: RuleInfo,
    /// Applies the rule; reports through the sink.
    pub(crate) check: fn(&Workspace<'_>, &mut Sink<'_>),
}

/// Declares a lint rule through [`zerohop_core::declare_rule!`], as the
/// doctor declares its checks: the doc comment is the documentation, the
/// group is `lint`.
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident = $id:literal, $name:literal, $severity:ident, $check:path;
    ) => {
        zerohop_core::declare_rule! {
            $(#[doc = $doc])*
            $vis static $ident: $crate::registry::Rule = {
                id: $id,
                name: $name,
                group: "lint",
                severity: $severity,
                check: $check,
            };
        }
    };
}
pub(crate) use declare_rule;

/// Every rule, in ID order.
pub static RULES: &[&Rule] = &[
    &crate::rules::input::INVALID_INPUT,
    &crate::rules::input::DUPLICATE_KEY,
    &crate::rules::input::YAML11_BOOLEAN,
    &crate::rules::input::LEADING_ZERO_OCTAL,
    &crate::rules::input::UNQUOTED_BASE_60,
    &crate::rules::input::NOT_A_KUBERNETES_OBJECT,
    &crate::rules::input::SKIPPED_PATH,
    &crate::rules::schema::UNKNOWN_FIELD,
    &crate::rules::schema::MISSING_REQUIRED_FIELD,
    &crate::rules::schema::INVALID_FIELD_VALUE,
    &crate::rules::schema::UNSERVED_API_VERSION,
    &crate::rules::gpu_operator::IGNORED_USE_OPEN_KERNEL_MODULES,
    &crate::rules::gpu_operator::DEPRECATED_CLUSTERPOLICY_FIELD,
    &crate::rules::gpu_operator::MULTIPLE_CLUSTERPOLICIES,
    &crate::rules::gpu_operator::CLUSTERPOLICY_WITH_GPUCLUSTER,
    &crate::rules::gpu_operator::GDS_WITHOUT_OPEN_KERNEL_MODULES,
    &crate::rules::gpu_operator::CLUSTERPOLICY_BESIDE_CHART_CLUSTERPOLICY,
    &crate::rules::gpu_operator::CLUSTERPOLICY_WITHOUT_IMAGES,
    &crate::rules::network_operator::NICCLUSTERPOLICY_NAME_IGNORED,
    &crate::rules::network_operator::REMOVED_NICCLUSTERPOLICY_FIELD,
    &crate::rules::network_operator::UNKNOWN_DOCA_DRIVER_ENV,
    &crate::rules::network_operator::DOCA_ENV_ON_WRONG_COMPONENT,
    &crate::rules::network_operator::SRIOV_DP_RESOURCE_WITHOUT_PREFIX,
    &crate::rules::network_operator::INVALID_RESOURCE_NAME,
    &crate::rules::network_operator::RDMA_SHARED_PLUGIN_WITH_EXCLUSIVE_MODE,
    &crate::rules::network_operator::RESOURCE_ADVERTISED_TWICE,
    &crate::rules::network_operator::NFSRDMA_WITHOUT_UNLOAD_STORAGE_MODULES,
    &crate::rules::sriov::VF_DEVICE_ID_IN_POLICY,
    &crate::rules::sriov::PF_DEVICE_ID_IN_VF_SELECTOR,
    &crate::rules::sriov::VF_SELECTOR_NEVER_MATCHES_POLICY,
    &crate::rules::sriov::VFIO_PCI_WITH_RDMA,
    &crate::rules::sriov::IB_POLICY_WITH_ETHERNET_NETWORK,
    &crate::rules::sriov::TOO_MANY_MELLANOX_VFS,
    &crate::rules::sriov::PF_NAMES_RANGE_BEYOND_NUM_VFS,
    &crate::rules::sriov::RDMA_NETWORK_WITHOUT_RDMA_CNI,
    &crate::rules::sriov::SELECTOR_ON_GPU_FEATURE_DISCOVERY_LABEL,
    &crate::rules::workloads::UNRESOLVED_NETWORK_ANNOTATION,
    &crate::rules::workloads::UNADVERTISED_RESOURCE_REQUEST,
    &crate::rules::workloads::NAD_RESOURCE_NOT_REQUESTED,
    &crate::rules::workloads::RDMA_WITHOUT_IPC_LOCK,
    &crate::rules::workloads::HUGEPAGES_REQUEST_LIMIT_MISMATCH,
    &crate::rules::workloads::HUGEPAGES_WITHOUT_CPU_OR_MEMORY,
    &crate::rules::workloads::FEWER_VFS_THAN_GPUS,
    &crate::rules::workloads::RDMA_WITHOUT_NCCL_ENV,
    &crate::rules::workloads::ROCE_WITHOUT_LOSSLESS_TRAFFIC_CLASS,
    &crate::rules::machine_config::MOUNT_UNIT_NAME_MISMATCH,
    &crate::rules::machine_config::NFS_RDMA_WITHOUT_PORT_20049,
    &crate::rules::machine_config::NFS_RDMA_WITHOUT_NCONNECT,
    &crate::rules::machine_config::ROLE_WITHOUT_POOL,
    &crate::rules::machine_config::ISOLCPUS_DOMAIN_ON_SHARED_POOL,
    &crate::rules::machine_config::NFS_RDMA_MOUNT_BEFORE_DOCA_DRIVER,
    &crate::rules::storage::XFS_NOBARRIER,
    &crate::rules::storage::UNKNOWN_CUFILE_KEY,
    &crate::rules::topology::POD_NEVER_ADMITTED_BY_TOPOLOGY_MANAGER,
    &crate::rules::topology::GPU_POD_NOT_PINNED_BY_STATIC_CPU_MANAGER,
    &crate::rules::images::IMAGE_REPEATS_REPOSITORY,
    &crate::rules::images::PARTIAL_IMAGE_SPEC,
    &crate::rules::networks::HOST_LOCAL_IPAM_ACROSS_NODES,
    &crate::rules::nccl::NUMERIC_NCCL_NET_GDR_LEVEL,
    &crate::rules::networks::PREFIXED_SRIOV_NETWORK_RESOURCE,
];

/// Every rule's metadata, in ID order, for `zerohop checks` and `zerohop
/// explain`.
pub fn rules() -> impl Iterator<Item = &'static RuleInfo> {
    RULES.iter().map(|rule| &rule.info)
}

/// The rule with this ID.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().copied().find(|rule| rule.info.id == id)
}
