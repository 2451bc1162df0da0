//! The rules, one module per area, and their list. Each rule is one
//! `declare_lint!` and the function that applies it; a new one is listed
//! in [`RULES`].

mod boot_order;
mod container_env;
mod facts;
mod gpu_operator;
mod images;
pub(crate) mod input;
mod machine_config;
mod nccl;
mod network_operator;
mod networks;
mod openshift_scc;
mod plugin_config;
mod pod_runtime;
pub(crate) mod resources;
mod roce_mtu;
pub(crate) mod schema;
mod sriov;
mod storage;
mod storage_network;
mod topology;
mod whereabouts;
mod workloads;

use zerohop_core::RuleInfo;

use crate::registry::Rule;

/// Every rule, in ID order.
pub static RULES: &[&Rule] = &[
    &input::INVALID_INPUT,
    &input::DUPLICATE_KEY,
    &input::YAML11_BOOLEAN,
    &input::LEADING_ZERO_OCTAL,
    &input::UNQUOTED_BASE_60,
    &input::NOT_A_KUBERNETES_OBJECT,
    &input::SKIPPED_PATH,
    &schema::UNKNOWN_FIELD,
    &schema::MISSING_REQUIRED_FIELD,
    &schema::INVALID_FIELD_VALUE,
    &schema::UNSERVED_API_VERSION,
    &gpu_operator::IGNORED_USE_OPEN_KERNEL_MODULES,
    &gpu_operator::DEPRECATED_CLUSTERPOLICY_FIELD,
    &gpu_operator::MULTIPLE_CLUSTERPOLICIES,
    &gpu_operator::CLUSTERPOLICY_WITH_GPUCLUSTER,
    &gpu_operator::GDS_WITHOUT_OPEN_KERNEL_MODULES,
    &gpu_operator::CLUSTERPOLICY_BESIDE_CHART_CLUSTERPOLICY,
    &gpu_operator::CLUSTERPOLICY_WITHOUT_IMAGES,
    &network_operator::NICCLUSTERPOLICY_NAME_IGNORED,
    &network_operator::REMOVED_NICCLUSTERPOLICY_FIELD,
    &network_operator::UNKNOWN_DOCA_DRIVER_ENV,
    &network_operator::DOCA_ENV_ON_WRONG_COMPONENT,
    &network_operator::SRIOV_DP_RESOURCE_WITHOUT_PREFIX,
    &network_operator::INVALID_RESOURCE_NAME,
    &network_operator::RDMA_SHARED_PLUGIN_WITH_EXCLUSIVE_MODE,
    &network_operator::RESOURCE_ADVERTISED_TWICE,
    &network_operator::NFSRDMA_WITHOUT_UNLOAD_STORAGE_MODULES,
    &sriov::VF_DEVICE_ID_IN_POLICY,
    &sriov::PF_DEVICE_ID_IN_VF_SELECTOR,
    &sriov::VF_SELECTOR_NEVER_MATCHES_POLICY,
    &sriov::VFIO_PCI_WITH_RDMA,
    &sriov::IB_POLICY_WITH_ETHERNET_NETWORK,
    &sriov::TOO_MANY_MELLANOX_VFS,
    &sriov::PF_NAMES_RANGE_BEYOND_NUM_VFS,
    &sriov::RDMA_NETWORK_WITHOUT_RDMA_CNI,
    &sriov::SELECTOR_ON_GPU_FEATURE_DISCOVERY_LABEL,
    &workloads::UNRESOLVED_NETWORK_ANNOTATION,
    &workloads::UNADVERTISED_RESOURCE_REQUEST,
    &workloads::NAD_RESOURCE_NOT_REQUESTED,
    &storage_network::WHEREABOUTS_RANGE_HOLDS_STORAGE_ADDRESS,
    &storage_network::WHEREABOUTS_NOT_INSTALLED,
    &storage_network::NCCL_POD_ON_STORAGE_NETWORK,
    &roce_mtu::ROCE_MTU_BELOW_MINIMUM,
    &workloads::RDMA_WITHOUT_IPC_LOCK,
    &workloads::HUGEPAGES_REQUEST_LIMIT_MISMATCH,
    &workloads::HUGEPAGES_WITHOUT_CPU_OR_MEMORY,
    &workloads::FEWER_VFS_THAN_GPUS,
    &workloads::RDMA_WITHOUT_NCCL_ENV,
    &workloads::ROCE_WITHOUT_LOSSLESS_TRAFFIC_CLASS,
    &openshift_scc::POD_BEYOND_RESTRICTED_SCC,
    &pod_runtime::GPU_POD_BEST_EFFORT,
    &pod_runtime::MULTI_GPU_CONTAINER_WITHOUT_SHM,
    &machine_config::MOUNT_UNIT_NAME_MISMATCH,
    &machine_config::NFS_RDMA_WITHOUT_PORT_20049,
    &machine_config::NFS_RDMA_WITHOUT_NCONNECT,
    &machine_config::ROLE_WITHOUT_POOL,
    &machine_config::ISOLCPUS_DOMAIN_ON_SHARED_POOL,
    &machine_config::NFS_RDMA_MOUNT_BEFORE_DOCA_DRIVER,
    &boot_order::PATH_UNIT_STARTS_MISSING_SERVICE,
    &boot_order::NVME_RDMA_AT_BOOT_BEFORE_DOCA_DRIVER,
    &storage::XFS_NOBARRIER,
    &storage::UNKNOWN_CUFILE_KEY,
    &storage::NFS_RDMA_MOUNT_OPTIONS,
    &storage::UNPUBLISHED_CSI_DRIVER,
    &topology::POD_NEVER_ADMITTED_BY_TOPOLOGY_MANAGER,
    &topology::GPU_POD_NOT_PINNED_BY_STATIC_CPU_MANAGER,
    &images::IMAGE_REPEATS_REPOSITORY,
    &images::PARTIAL_IMAGE_SPEC,
    &networks::HOST_LOCAL_IPAM_ACROSS_NODES,
    &nccl::NUMERIC_NCCL_NET_GDR_LEVEL,
    &networks::PREFIXED_SRIOV_NETWORK_RESOURCE,
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
