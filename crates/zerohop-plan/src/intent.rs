//! The intent file: `apiVersion: zerohop.dev/v1alpha1`, `kind: DataPathPlan`.
//! It says what the cluster should do, not how; every field that has a
//! sensible current default may be left out.

use schemars::JsonSchema;
use serde::Deserialize;
pub use serde_saphyr::Spanned;

/// The `apiVersion` this crate reads.
pub const API_VERSION: &str = zerohop_known::zerohop_api::API_VERSION;
/// The `kind` this crate reads.
pub const KIND: &str = "DataPathPlan";

/// The default image of the fabric tests: CoreWeave's public nccl-tests
/// image (CUDA, NCCL, Open MPI, `sshd`, nccl-tests built with MPI, and
/// the rdma-core and perftest tools).
pub const DEFAULT_VALIDATION_IMAGE: &str =
    "ghcr.io/coreweave/nccl-tests:12.8.1-devel-ubuntu22.04-nccl2.26.2-1-0708d2e";

/// The line of the intent file a value was written on; `None` for a value
/// the file left to its default.
pub fn line_of<T>(value: &Spanned<T>) -> Option<usize> {
    let line = value.referenced.line();
    (line > 0).then(|| usize::try_from(line).unwrap_or(usize::MAX))
}

/// A zero-copy data path plan for one cluster.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "DataPathPlan")]
pub struct DataPathPlan {
    /// Always `zerohop.dev/v1alpha1`.
    #[schemars(with = "String")]
    pub api_version: Spanned<String>,
    /// Always `DataPathPlan`.
    #[schemars(with = "String")]
    pub kind: Spanned<String>,
    /// Names the plan; used in generated object names.
    pub metadata: Metadata,
    /// What the cluster should do.
    pub spec: Spec,
}

/// Identifies the plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// A DNS-1123 label, e.g. `h100-roce`.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
}

/// The target platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// Vanilla Kubernetes: host configuration is rendered as files under `host/`.
    Kubernetes,
    /// OpenShift: host configuration is rendered as `MachineConfig`s.
    Openshift,
}

/// What the cluster should do.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    /// `kubernetes` or `openshift`; `zerohop plan --platform` overrides it.
    pub platform: Platform,
    /// Operator versions and namespaces; current releases by default.
    #[serde(default)]
    pub operators: Operators,
    /// Groups of identical GPU nodes.
    pub node_pools: Vec<NodePool>,
    /// How pods get RDMA devices.
    #[serde(default)]
    pub rdma: Rdma,
    /// The storage data path.
    #[serde(default)]
    pub storage: Storage,
    /// An example training workload sized to the pool.
    pub workload: Workload,
    /// The fabric tests rendered under `validate/` for `zerohop validate run`.
    #[serde(default)]
    pub validation: Validation,
    /// The zerohop agent, which keeps checking every node after the set is
    /// applied.
    #[serde(default)]
    pub agent: Agent,
}

/// Operator versions and namespaces.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Operators {
    /// NVIDIA Network Operator release, e.g. `v26.7.0`: the image tag of its
    /// components (`network-operator-v26.7.0`) and the release the README installs.
    #[serde(default = "defaults::network_operator_version")]
    #[schemars(with = "String")]
    pub network_operator_version: Spanned<String>,
    /// Namespace of the Network Operator (and of the SR-IOV operator it bundles on Kubernetes).
    #[serde(default = "defaults::network_operator_namespace")]
    #[schemars(with = "String")]
    pub network_operator_namespace: Spanned<String>,
    /// DOCA driver container tag (`ofedDriver.version`), e.g. `doca3.5.0-26.07-0.7.0.0-0`.
    #[serde(default = "defaults::doca_driver_version")]
    #[schemars(with = "String")]
    pub doca_driver_version: Spanned<String>,
    /// NVIDIA GPU Operator release (informational, shown in the README).
    #[serde(default = "defaults::gpu_operator_version")]
    #[schemars(with = "String")]
    pub gpu_operator_version: Spanned<String>,
    /// Namespace of the GPU Operator.
    #[serde(default = "defaults::gpu_operator_namespace")]
    #[schemars(with = "String")]
    pub gpu_operator_namespace: Spanned<String>,
    /// Namespace of the SR-IOV Network Operator; by default the Network
    /// Operator namespace on Kubernetes, `openshift-sriov-network-operator` on OpenShift.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub sriov_operator_namespace: Option<Spanned<String>>,
}

impl Default for Operators {
    fn default() -> Operators {
        Operators {
            network_operator_version: defaults::network_operator_version(),
            network_operator_namespace: defaults::network_operator_namespace(),
            doca_driver_version: defaults::doca_driver_version(),
            gpu_operator_version: defaults::gpu_operator_version(),
            gpu_operator_namespace: defaults::gpu_operator_namespace(),
            sriov_operator_namespace: None,
        }
    }
}

/// A group of identical GPU nodes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodePool {
    /// A DNS-1123 label used in object names.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Node labels that select the pool's nodes.
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    pub node_selector: NodeSelector,
    /// `intel` or `amd`: selects the IOMMU kernel argument.
    pub cpu_vendor: CpuVendor,
    /// GPUs per node.
    #[schemars(with = "u32", range(min = 1, max = 16))]
    pub gpus: Spanned<u32>,
    /// The RDMA NICs, one entry per physical function (rail).
    pub nics: Vec<Nic>,
    /// Huge pages reserved at boot.
    #[serde(default)]
    pub hugepages: Option<Hugepages>,
    /// CPUs isolated from the kernel scheduler for workloads (`isolcpus`,
    /// `nohz_full`, `rcu_nocbs`), as a cpuset list such as `4-63,68-127`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub isolated_cpus: Option<Spanned<String>>,
    /// CPUs kept for the system and the kubelet, as a cpuset list (`0-3,64-67`).
    #[serde(default = "defaults::reserved_cpus")]
    #[schemars(with = "String")]
    pub reserved_cpus: Spanned<String>,
    /// The NUMA nodes of the pool's nodes, in NUMA id order (`lscpu`,
    /// `zerohop topo`): each with its CPUs and GPUs; give each NIC its
    /// `numaNode` too. From it the plan chooses the Topology Manager policy
    /// and sizes the example pod's CPUs; without it the policy is
    /// `best-effort`, which admits every pod but proves no alignment.
    #[serde(default)]
    pub numa_nodes: Option<Vec<NumaNodeSpec>>,
}

/// One NUMA node of a pool's nodes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NumaNodeSpec {
    /// Its logical CPUs as a cpuset list (`/sys/devices/system/node/nodeN/cpulist`),
    /// e.g. `0-27,56-83`.
    #[schemars(with = "String")]
    pub cpus: Spanned<String>,
    /// GPUs attached to it.
    #[schemars(with = "u32")]
    pub gpus: Spanned<u32>,
}

/// Labels, each key and value with its place in the file, in file order:
/// those that select a pool's nodes, and those of the agent's monitors.
#[derive(Debug, Default)]
pub struct NodeSelector(pub Vec<(Spanned<String>, Spanned<String>)>);

impl<'de> Deserialize<'de> for NodeSelector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<NodeSelector, D::Error> {
        struct Entries;

        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = NodeSelector;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of node labels")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<NodeSelector, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(NodeSelector(entries))
            }
        }

        deserializer.deserialize_map(Entries)
    }
}

/// The CPU vendor of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CpuVendor {
    /// `intel_iommu=on`.
    Intel,
    /// `amd_iommu=on`.
    Amd,
}

/// One RDMA NIC port (physical function), usually one rail.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Nic {
    /// The PF's netdev name on the node, e.g. `ens1f0np0`: at most 15
    /// bytes, no `/`, `:`, white space or control character (the kernel's
    /// `dev_valid_name()`).
    #[schemars(
        with = "String",
        length(min = 1, max = 15),
        pattern(r"^[^/:\s\x00-\x1f\x7f]+$")
    )]
    pub pf: Spanned<String>,
    /// The RDMA device of the PF (`mlx5_0`), used for `NCCL_IB_HCA`: at
    /// most 63 bytes, no `/`, white space or control character.
    #[schemars(
        with = "String",
        length(min = 1, max = 63),
        pattern(r"^[^/\s\x00-\x1f\x7f]+$")
    )]
    pub rdma_device: Spanned<String>,
    /// The PCI device ID of the physical function (vendor 15b3), e.g. `1021` for ConnectX-7.
    #[schemars(with = "String")]
    pub device_id: Spanned<String>,
    /// `ETH` (RoCE v2) or `IB` (InfiniBand).
    #[serde(default = "defaults::link_type")]
    pub link_type: LinkType,
    /// MTU of the rail network: on Ethernet (RoCE) 4200 to 9216, the least
    /// that carries a 4096-byte RoCE path MTU up (9000 by default); on
    /// InfiniBand (IPoIB) up to 4092.
    #[serde(default = "defaults::mtu")]
    #[schemars(with = "u32", range(min = 1280, max = 9216))]
    pub mtu: Spanned<u32>,
    /// The port's line rate in Gb/s, as `/sys/class/infiniband/<dev>/ports/<n>/rate`
    /// shows it on the node (`400` for NDR InfiniBand or 400 GbE): the rate
    /// `zerohop doctor --intent` expects of the port and `zerohop validate
    /// --intent` holds NCCL's bus bandwidth to. 1 to 1600. Optional: the
    /// NIC model alone does not tell it (a ConnectX-7 runs at 100 to 400).
    #[serde(default)]
    #[schemars(with = "Option<u32>", range(min = 1, max = 1600))]
    pub link_rate_gbps: Option<Spanned<u32>>,
    /// VFs to create on this PF: a number, or `one-per-gpu` (one per GPU
    /// of the node plus 20 % headroom). Only with `rdma.mode: sriov`.
    #[serde(default)]
    #[schemars(with = "Option<VfCount>")]
    pub vfs: Option<Spanned<VfCount>>,
    /// The most VFs the firmware exposes (`sriov_totalvfs`); defaults to the NIC's limit.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub total_vfs: Option<Spanned<u32>>,
    /// Rail number; NICs with the same rail share one network.
    #[schemars(with = "u32")]
    pub rail: Spanned<u32>,
    /// Subnet of the rail network for pod addresses, e.g. `192.168.10.0/24`.
    #[schemars(with = "String")]
    pub subnet: Spanned<String>,
    /// 802.1Q VLAN of the rail network (Ethernet only).
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub vlan: Option<Spanned<u32>>,
    /// Device plugin resource name; by default `rdma_rail<N>`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub resource_name: Option<Spanned<String>>,
    /// VF driver binding; only `netdevice` supports RDMA on bare metal.
    #[serde(default)]
    #[schemars(with = "Option<DeviceType>")]
    pub device_type: Option<Spanned<DeviceType>>,
    /// The NUMA node the port is attached to (`/sys/class/net/<pf>/device/numa_node`);
    /// required when the pool gives `numaNodes`.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub numa_node: Option<Spanned<u32>>,
}

/// Link layer of a NIC port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum LinkType {
    /// Ethernet (RoCE v2).
    #[serde(rename = "ETH", alias = "eth")]
    Eth,
    /// InfiniBand.
    #[serde(rename = "IB", alias = "ib")]
    Ib,
}

impl LinkType {
    /// The intent's spelling (`IB`, `ETH`), also that of the fabric tests'
    /// link-type annotation.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkType::Eth => "ETH",
            LinkType::Ib => "IB",
        }
    }

    /// The link type spelled as [`LinkType::as_str`] gives it.
    pub fn parse(text: &str) -> Option<LinkType> {
        [LinkType::Eth, LinkType::Ib]
            .into_iter()
            .find(|link| link.as_str() == text)
    }
}

/// How many VFs to create on a PF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum VfCount {
    /// Exactly this many.
    Count(u32),
    /// `one-per-gpu`.
    Keyword(VfKeyword),
}

/// The keyword form of [`VfCount`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VfKeyword {
    /// One VF per GPU of the node plus 20 % headroom.
    OnePerGpu,
}

/// VF driver binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceType {
    /// Kernel netdevice with an RDMA device (the bare-metal RDMA setup).
    Netdevice,
    /// Bound to vfio-pci for a VM; no RDMA in the host.
    VfioPci,
}

/// Huge pages reserved at boot.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Hugepages {
    /// `1Gi` or `2Mi`.
    #[serde(default = "defaults::hugepage_size")]
    pub size: HugepageSize,
    /// Pages per node.
    #[schemars(with = "u32", range(min = 1))]
    pub count: Spanned<u32>,
}

/// A huge page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum HugepageSize {
    /// 1 GiB pages.
    #[serde(rename = "1Gi")]
    OneGi,
    /// 2 MiB pages.
    #[serde(rename = "2Mi")]
    TwoMi,
}

/// How pods get RDMA devices.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rdma {
    /// `sriov` (a VF per pod, RDMA netns `exclusive`) or `shared` (the RDMA
    /// shared device plugin, RDMA netns `shared`).
    #[serde(default)]
    #[schemars(with = "RdmaMode")]
    pub mode: Option<Spanned<RdmaMode>>,
    /// IP address management of the rail networks: `whereabouts`.
    #[serde(default)]
    #[schemars(with = "Ipam")]
    pub ipam: Option<Spanned<Ipam>>,
    /// Resource prefix. In `sriov` mode it is the SR-IOV Network
    /// Operator's: `openshift.io` on OpenShift (fixed), `nvidia.com` with
    /// the Network Operator chart on Kubernetes (another value is passed to
    /// the chart). In `shared` mode the RDMA shared device plugin's,
    /// `nvidia.com` by default.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub resource_prefix: Option<Spanned<String>>,
}

/// How pods get RDMA devices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RdmaMode {
    /// SR-IOV VFs, one RDMA device per VF, exclusive RDMA netns.
    #[default]
    Sriov,
    /// The RDMA shared device plugin over the PFs, shared RDMA netns.
    Shared,
}

/// IP address management of the rail networks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Ipam {
    /// Cluster-wide allocation (the `whereabouts` CNI plugin).
    #[default]
    Whereabouts,
    /// Per-node allocation (`host-local`): refused, because every node
    /// of a pool would hand out the same addresses of the rail's range.
    HostLocal,
}

/// The storage data path.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Storage {
    /// An NFS export mounted over RDMA on every node of the pools.
    #[serde(default)]
    pub nfs_rdma: Option<NfsRdma>,
    /// NVMe over Fabrics (RDMA) targets connected on every node.
    #[serde(default)]
    #[schemars(with = "Option<NvmeOf>")]
    pub nvme_of: Option<Spanned<NvmeOf>>,
    /// GPUDirect Storage (`nvidia-fs`, `cufile.json`).
    #[serde(default)]
    #[schemars(with = "bool")]
    pub gds: Option<Spanned<bool>>,
    /// Local NVMe disks of the nodes as PersistentVolumes of a
    /// StorageClass, for GPUDirect Storage on local NVMe.
    #[serde(default)]
    pub local_nvme: Option<LocalNvme>,
}

/// How the nodes reach the NFS export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NfsVia {
    /// A systemd mount on every node, started once the DOCA driver is
    /// ready, handed to pods as a `hostPath`.
    #[default]
    Host,
    /// The NFS CSI driver (`nfs.csi.k8s.io`): a StorageClass, a
    /// PersistentVolume of the export and a PersistentVolumeClaim the
    /// workload mounts; the kubelet mounts it on the node a pod runs on.
    Csi,
}

/// Local NVMe disks as PersistentVolumes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LocalNvme {
    /// The node directory the local volume provisioner discovers volumes
    /// in: one symbolic link per NVMe namespace (`/dev/disk/by-id/nvme-…`),
    /// which the kubelet formats with `fsType` on first use.
    #[serde(default = "defaults::local_nvme_dir")]
    #[schemars(with = "String", pattern(r"^/[^\\\x00-\x1f\x7f]+$"))]
    pub host_dir: Spanned<String>,
    /// `xfs` or `ext4`: the file systems GPUDirect Storage reads directly
    /// on NVMe.
    #[serde(default = "defaults::local_nvme_fs_type")]
    #[schemars(with = "String")]
    pub fs_type: Spanned<String>,
    /// A vendor CSI driver that provisions local NVMe volumes itself; by
    /// default the local volume provisioner
    /// (kubernetes-sigs/sig-storage-local-static-provisioner) discovers the
    /// disks under `hostDir`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub provisioner: Option<Spanned<String>>,
}

/// An NFS export mounted over RDMA.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NfsRdma {
    /// Server address (IP or DNS name) on the storage network.
    #[schemars(with = "String")]
    pub server: Spanned<String>,
    /// Exported path on the server, absolute, without `.` or `..`
    /// components, backslashes or control characters.
    #[schemars(with = "String", pattern(r"^/[^\\\x00-\x1f\x7f]*$"))]
    pub export: Spanned<String>,
    /// Absolute mount point on the nodes, e.g. `/mnt/ai-data`; the same
    /// rules as `export`, and not `/`. Required with `via: host`; with
    /// `via: csi` the kubelet picks each pod's mount point.
    #[serde(default)]
    #[schemars(with = "Option<String>", pattern(r"^/[^\\\x00-\x1f\x7f]+$"))]
    pub mount_point: Option<Spanned<String>>,
    /// `host` (default): a systemd mount on every node, given to pods as a
    /// `hostPath`. `csi`: the NFS CSI driver and a PersistentVolumeClaim,
    /// mounted on demand on the node a pod runs on.
    #[serde(default)]
    #[schemars(with = "NfsVia")]
    pub via: Option<Spanned<NfsVia>>,
    /// TCP-style connection count for RPC-over-RDMA (1–16).
    #[serde(default = "defaults::nconnect")]
    #[schemars(with = "u32", range(min = 1, max = 16))]
    pub nconnect: Spanned<u32>,
    /// The PF whose network reaches the server.
    #[schemars(with = "String")]
    pub nic: Spanned<String>,
}

/// NVMe over Fabrics (RDMA) targets.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NvmeOf {
    /// Discovery controllers to connect to at boot.
    pub targets: Vec<NvmeTarget>,
}

/// One NVMe-oF discovery controller.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NvmeTarget {
    /// Target address (an IP address).
    #[schemars(with = "String")]
    pub address: Spanned<String>,
    /// Discovery port; 4420 by default.
    #[serde(default = "defaults::nvme_port")]
    #[schemars(with = "u16", range(min = 1))]
    pub port: Spanned<u16>,
}

/// An example workload that uses the data path.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Workload {
    /// Pod name.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Namespace of the pod (created by the plan).
    #[schemars(with = "String")]
    pub namespace: Spanned<String>,
    /// Container image.
    #[schemars(with = "String")]
    pub image: Spanned<String>,
    /// GPUs per pod.
    #[schemars(with = "u32", range(min = 1))]
    pub gpus_per_pod: Spanned<u32>,
    /// RDMA devices (VFs, or shared devices) per pod; one per rail by default.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub vfs_per_pod: Option<Spanned<u32>>,
    /// Exclusive CPUs per pod (request and limit, an integer, so that the
    /// pod is Guaranteed and the static CPU manager pins them). By default
    /// the CPUs outside `reservedCpus` (the isolated ones, when given) of
    /// the NUMA nodes the pod's GPUs need, less 2 per NUMA node for the
    /// node's daemon sets; without `numaNodes`, 8 per GPU.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub cpus: Option<Spanned<u32>>,
    /// Memory request and limit, e.g. `256Gi`.
    #[serde(default = "defaults::memory")]
    #[schemars(with = "String")]
    pub memory: Spanned<String>,
    /// `/dev/shm` size, e.g. `64Gi`.
    #[serde(default = "defaults::shm")]
    #[schemars(with = "String")]
    pub shm_size: Spanned<String>,
    /// Huge pages per pod, in pages of the pool's size.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub hugepages: Option<Spanned<u32>>,
    /// Netdev name pattern NCCL uses for its bootstrap socket.
    #[serde(default = "defaults::socket_ifname")]
    #[schemars(with = "String")]
    pub nccl_socket_ifname: Spanned<String>,
}

/// The fabric tests: perftest between two nodes per rail, nccl-tests over
/// several nodes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Validation {
    /// Image of the perftest pods: `ib_write_bw` built with CUDA
    /// (`--use_cuda`, `--use_cuda_dmabuf`) and a POSIX `sh`.
    #[serde(default = "defaults::validation_image")]
    #[schemars(with = "String")]
    pub perftest_image: Spanned<String>,
    /// Image of the nccl-tests `MPIJob`: Open MPI, `sshd`, `all_reduce_perf`
    /// built with MPI, and NCCL.
    #[serde(default = "defaults::validation_image")]
    #[schemars(with = "String")]
    pub nccl_tests_image: Spanned<String>,
    /// Nodes the nccl-tests `MPIJob` runs on (every GPU of each).
    #[serde(default = "defaults::nccl_nodes")]
    #[schemars(with = "u32", range(min = 2, max = 1024))]
    pub nccl_nodes: Spanned<u32>,
}

impl Default for Validation {
    fn default() -> Validation {
        Validation {
            perftest_image: defaults::validation_image(),
            nccl_tests_image: defaults::validation_image(),
            nccl_nodes: defaults::nccl_nodes(),
        }
    }
}

/// The zerohop agent: the doctor on every node as a DaemonSet, published as
/// metrics, a node condition, Node Feature Discovery labels, events and a
/// `DataPathReport` object (`docs/agent.md`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Agent {
    /// Render the agent (default `true`): without it nothing notices a data
    /// path that breaks after the set is applied.
    #[serde(default = "defaults::agent_enabled")]
    pub enabled: bool,
    /// Namespace of the DaemonSet.
    #[serde(default = "defaults::agent_namespace")]
    #[schemars(with = "String")]
    pub namespace: Spanned<String>,
    /// Image of the agent: zerohop's own, built from the workspace's
    /// `Containerfile`.
    #[serde(default = "defaults::agent_image")]
    #[schemars(with = "String")]
    pub image: Spanned<String>,
    /// Prometheus Operator monitors to render for `/metrics` (their CRDs
    /// must be installed).
    #[serde(default)]
    pub monitors: Vec<Monitor>,
    /// Extra labels of the monitors and the `PrometheusRule`, for the
    /// Prometheus that selects them (kube-prometheus-stack selects on
    /// `release: <its release name>`).
    #[serde(default)]
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    pub monitor_labels: NodeSelector,
    /// Let the agent read the kernel log, `/dev/kmsg` (default `true`): the
    /// peermem, link-flap, NFS and AER checks read it. The container runs
    /// privileged, because container runtimes let an unprivileged container
    /// open only a fixed list of devices, which `/dev/kmsg` is not on; with
    /// `false` the container keeps only `SYS_PTRACE` and those checks say
    /// `unknown`.
    #[serde(default = "defaults::agent_enabled")]
    pub kernel_log: bool,
}

impl Default for Agent {
    fn default() -> Agent {
        Agent {
            enabled: defaults::agent_enabled(),
            namespace: defaults::agent_namespace(),
            image: defaults::agent_image(),
            monitors: Vec::new(),
            monitor_labels: NodeSelector::default(),
            kernel_log: defaults::agent_enabled(),
        }
    }
}

/// A Prometheus Operator monitor of the agent's `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Monitor {
    /// A `ServiceMonitor` and the headless `Service` it selects.
    ServiceMonitor,
    /// A `PodMonitor`.
    PodMonitor,
    /// A `PrometheusRule` with the agent's alerts.
    PrometheusRule,
}

/// Current defaults (operator releases as of the CRD snapshots in use).
pub(crate) mod defaults {
    use serde_saphyr::{Location, Spanned};

    use super::{HugepageSize, LinkType};

    fn unspanned<T>(value: T) -> Spanned<T> {
        Spanned::new(value, Location::UNKNOWN, Location::UNKNOWN)
    }
    pub(crate) fn network_operator_version() -> Spanned<String> {
        unspanned("v26.7.0".to_owned())
    }
    pub(crate) fn network_operator_namespace() -> Spanned<String> {
        unspanned("nvidia-network-operator".to_owned())
    }
    pub(crate) fn doca_driver_version() -> Spanned<String> {
        unspanned("doca3.5.0-26.07-0.7.0.0-0".to_owned())
    }
    pub(crate) fn gpu_operator_version() -> Spanned<String> {
        unspanned("v26.7.0".to_owned())
    }
    pub(crate) fn gpu_operator_namespace() -> Spanned<String> {
        unspanned("gpu-operator".to_owned())
    }
    pub(crate) fn reserved_cpus() -> Spanned<String> {
        unspanned("0-1".to_owned())
    }
    pub(crate) fn link_type() -> LinkType {
        LinkType::Eth
    }
    pub(crate) fn mtu() -> Spanned<u32> {
        unspanned(9000)
    }
    pub(crate) fn hugepage_size() -> HugepageSize {
        HugepageSize::OneGi
    }
    pub(crate) fn nconnect() -> Spanned<u32> {
        unspanned(16)
    }
    pub(crate) fn local_nvme_dir() -> Spanned<String> {
        unspanned("/mnt/local-nvme".to_owned())
    }
    pub(crate) fn local_nvme_fs_type() -> Spanned<String> {
        unspanned("xfs".to_owned())
    }
    pub(crate) fn nvme_port() -> Spanned<u16> {
        unspanned(4420)
    }
    pub(crate) fn memory() -> Spanned<String> {
        unspanned("256Gi".to_owned())
    }
    pub(crate) fn shm() -> Spanned<String> {
        unspanned("64Gi".to_owned())
    }
    pub(crate) fn socket_ifname() -> Spanned<String> {
        unspanned("eth0".to_owned())
    }
    pub(crate) fn validation_image() -> Spanned<String> {
        unspanned(super::DEFAULT_VALIDATION_IMAGE.to_owned())
    }
    pub(crate) fn nccl_nodes() -> Spanned<u32> {
        unspanned(2)
    }
    pub(crate) fn agent_enabled() -> bool {
        true
    }
    pub(crate) fn agent_namespace() -> Spanned<String> {
        unspanned("zerohop-system".to_owned())
    }
    pub(crate) fn agent_image() -> Spanned<String> {
        unspanned(zerohop_known::zerohop_api::default_image())
    }
}
