//! The resolved plan: a validated intent with every default filled in,
//! which is all the renderers read. Every string in it has passed its
//! grammar (`crate::grammar`), so it is what the intent meant; the
//! renderers still quote what they write into scripts and units.

use std::collections::BTreeMap;

use crate::grammar;
use crate::intent::{CpuVendor, HugepageSize, LinkType, Monitor, Platform, RdmaMode};
use zerohop_known::cpuset::CpuSet;
use zerohop_known::nic::NicModel;
use zerohop_known::topology::{Layout, Policy};

/// A validated intent with every default resolved; what the renderers read.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `metadata.name`.
    pub name: String,
    /// The target platform.
    pub platform: Platform,
    /// Network Operator release.
    pub network_operator_version: String,
    /// Network Operator namespace.
    pub network_operator_namespace: String,
    /// SR-IOV operator namespace.
    pub sriov_namespace: String,
    /// `ofedDriver.version`.
    pub doca_driver_version: String,
    /// GPU Operator release.
    pub gpu_operator_version: String,
    /// GPU Operator namespace.
    pub gpu_operator_namespace: String,
    /// Node pools.
    pub pools: Vec<PoolPlan>,
    /// Rail networks, by rail number.
    pub rails: BTreeMap<u32, RailPlan>,
    /// SR-IOV VFs or the shared RDMA device plugin.
    pub rdma_mode: RdmaMode,
    /// Device plugin resource prefix.
    pub resource_prefix: String,
    /// NFS over RDMA, when wanted.
    pub nfs: Option<NfsPlan>,
    /// NVMe-oF discovery targets (IP address, port).
    pub nvme_targets: Vec<(std::net::IpAddr, u16)>,
    /// Local NVMe volumes, when wanted.
    pub local_nvme: Option<LocalNvmePlan>,
    /// GPUDirect Storage.
    pub gds: bool,
    /// The example workload.
    pub workload: WorkloadPlan,
    /// The fabric tests under `validate/`.
    pub validation: ValidationPlan,
    /// The zerohop agent, unless the intent turned it off.
    pub agent: Option<AgentPlan>,
}

impl Plan {
    /// Every NIC of every pool by rail number, in pool order: built in one
    /// pass, so that no renderer scans all NICs once per rail.
    /// The fabric NCCL runs on in `pool`: the workload's rails among the
    /// pool's NICs (not a storage rail only the hosts use), their link
    /// type when all share one, and the per-rail line rate when every such
    /// NIC gives one (NICs of different rates count at their mean, as
    /// rails × rate is what the node carries). `zerohop validate` holds
    /// captures to it, from the intent or from the fabric tests' annotations.
    pub fn pool_fabric(&self, pool: &PoolPlan) -> PoolFabric {
        let mut rails: Vec<u32> = pool
            .nics
            .iter()
            .map(|nic| nic.rail)
            .filter(|rail| self.workload.rails.contains(rail))
            .collect();
        rails.sort_unstable();
        rails.dedup();
        let types: Vec<LinkType> = rails
            .iter()
            .filter_map(|rail| self.rails.get(rail))
            .map(|rail| rail.link_type)
            .collect();
        let link_type = match types.first() {
            Some(first) if types.iter().all(|t| t == first) => Some(*first),
            _ => None,
        };
        let rates: Option<Vec<u32>> = pool
            .nics
            .iter()
            .filter(|nic| rails.contains(&nic.rail))
            .map(|nic| nic.link_rate_gbps)
            .collect();
        let link_rate_gbps = rates.filter(|r| !r.is_empty()).map(|rates| {
            let sum: u64 = rates.iter().map(|r| u64::from(*r)).sum();
            u32::try_from(sum / rates.len() as u64).unwrap_or(u32::MAX)
        });
        PoolFabric {
            rails,
            link_type,
            link_rate_gbps,
        }
    }

    pub(crate) fn nics_by_rail(&self) -> BTreeMap<u32, Vec<&NicPlan>> {
        let mut by_rail: BTreeMap<u32, Vec<&NicPlan>> = BTreeMap::new();
        for nic in self.pools.iter().flat_map(|p| &p.nics) {
            by_rail.entry(nic.rail).or_default().push(nic);
        }
        by_rail
    }
}

/// The fabric NCCL runs on in one node pool ([`Plan::pool_fabric`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolFabric {
    /// The workload's rails, in order.
    pub rails: Vec<u32>,
    /// Their link type, when they share one.
    pub link_type: Option<LinkType>,
    /// The per-rail line rate in Gb/s, when every NIC on them gives one.
    pub link_rate_gbps: Option<u32>,
}

/// A node pool.
#[derive(Debug, Clone)]
pub struct PoolPlan {
    /// Name (DNS label).
    pub name: String,
    /// Node labels that select it.
    pub node_selector: BTreeMap<String, String>,
    /// CPU vendor.
    pub cpu_vendor: CpuVendor,
    /// GPUs per node.
    pub gpus: u32,
    /// NIC ports, in rail order.
    pub nics: Vec<NicPlan>,
    /// Huge pages: size and count.
    pub hugepages: Option<(HugepageSize, u32)>,
    /// Isolated CPUs.
    pub isolated_cpus: Option<String>,
    /// Reserved CPUs.
    pub reserved_cpus: String,
    /// The NUMA nodes, in NUMA id order; empty when the intent does not say.
    pub numa: Vec<NumaPlan>,
    /// The Topology Manager policy its kubelets run (always with the `pod`
    /// scope), chosen from the NUMA layout and the pods the plan renders.
    pub topology_policy: Policy,
}

/// One NUMA node of a pool's nodes.
#[derive(Debug, Clone)]
pub struct NumaPlan {
    /// Its logical CPUs.
    pub cpus: CpuSet,
    /// GPUs attached to it.
    pub gpus: u32,
}

/// One NIC port.
#[derive(Debug, Clone)]
pub struct NicPlan {
    /// PF netdev name.
    pub pf: String,
    /// RDMA device name.
    pub rdma_device: String,
    /// The NIC model.
    pub model: &'static NicModel,
    /// VFs to create (0 in shared mode).
    pub num_vfs: u32,
    /// The port's line rate in Gb/s, when the intent gives it.
    pub link_rate_gbps: Option<u32>,
    /// Rail number.
    pub rail: u32,
    /// NUMA node, when the intent gives the layout.
    pub numa_node: Option<u32>,
}

/// One rail network, shared by the NICs with that rail number.
#[derive(Debug, Clone)]
pub struct RailPlan {
    /// Rail number.
    pub rail: u32,
    /// Link type.
    pub link_type: LinkType,
    /// MTU.
    pub mtu: u32,
    /// Subnet (CIDR).
    pub subnet: String,
    /// VLAN (Ethernet only).
    pub vlan: Option<u32>,
    /// Resource name without prefix.
    pub resource_name: String,
    /// The hosts have addresses of their own on this rail: it is the NFS
    /// client's network, or a storage server the intent names is in its
    /// subnet. Pods then take addresses from the upper half of the subnet
    /// only, and the lower half is the hosts', the gateway's and the
    /// servers'.
    pub host_network: bool,
    /// The storage servers the intent names that are in the rail's subnet:
    /// never a pod's address, wherever they are.
    pub servers: Vec<std::net::IpAddr>,
}

/// NFS over RDMA.
#[derive(Debug, Clone)]
pub struct NfsPlan {
    /// Server, as an NFS source names it: a host name, an IPv4 address, or
    /// an IPv6 address in brackets.
    pub server: String,
    /// Exported path, normalized (no repeated or trailing slashes).
    pub export: String,
    /// How the nodes mount it: on the host, with its mount point
    /// (normalized as the export), or through the NFS CSI driver.
    pub via: NfsMount,
    /// The PF whose network reaches the server.
    pub nic: String,
    /// nconnect.
    pub nconnect: u32,
}

/// How the nodes mount the NFS export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NfsMount {
    /// A systemd mount at this mount point on every node.
    Host(String),
    /// The NFS CSI driver, on the node a pod runs on.
    Csi,
}

impl NfsPlan {
    /// The host mount point, with `via: host`.
    pub fn host_mount_point(&self) -> Option<&str> {
        match &self.via {
            NfsMount::Host(point) => Some(point),
            NfsMount::Csi => None,
        }
    }

    /// Whether the NFS CSI driver mounts the export.
    pub fn via_csi(&self) -> bool {
        self.via == NfsMount::Csi
    }

    /// The options the mount passes to the kernel, as the kernel shows them
    /// back in the mount table:
    /// [`zerohop_known::storage::data_path_options`], the one list the
    /// doctor and `lint` judge by.
    pub fn kernel_options(&self) -> Vec<String> {
        zerohop_known::storage::data_path_options(self.nconnect)
    }

    /// The `Options=` of the mount unit: [`NfsPlan::kernel_options`] and
    /// `_netdev`, which only `mount(8)` and systemd read (a network file
    /// system: mounted after the network is up).
    pub fn mount_options(&self) -> String {
        let mut options = self.kernel_options();
        options.push("_netdev".to_owned());
        options.join(",")
    }
}

/// Local NVMe volumes for GPUDirect Storage.
#[derive(Debug, Clone)]
pub struct LocalNvmePlan {
    /// The directory the local volume provisioner discovers disks in.
    pub host_dir: String,
    /// `xfs` or `ext4`.
    pub fs_type: String,
    /// A vendor CSI driver, instead of the local volume provisioner.
    pub provisioner: Option<String>,
}

/// The example workload.
#[derive(Debug, Clone)]
pub struct WorkloadPlan {
    /// Pod name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Image.
    pub image: String,
    /// GPUs per pod.
    pub gpus: u32,
    /// The rails the pod takes one RDMA device of, in order.
    pub rails: Vec<u32>,
    /// Exclusive CPUs per pod (request and limit).
    pub cpus: u32,
    /// Memory request/limit.
    pub memory: String,
    /// `/dev/shm` size.
    pub shm_size: String,
    /// Huge pages per pod (count, size).
    pub hugepages: Option<(HugepageSize, u32)>,
    /// `NCCL_SOCKET_IFNAME`.
    pub socket_ifname: String,
}

/// The fabric tests rendered under `validate/`.
#[derive(Debug, Clone)]
pub struct ValidationPlan {
    /// Image of the perftest pods.
    pub perftest_image: String,
    /// Image of the nccl-tests `MPIJob`.
    pub nccl_tests_image: String,
    /// Nodes of the nccl-tests `MPIJob`.
    pub nccl_nodes: u32,
}

/// The zerohop agent's deployment, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPlan {
    /// Namespace of the DaemonSet.
    pub namespace: String,
    /// Image of the agent.
    pub image: String,
    /// Prometheus Operator monitors, each once, in a fixed order.
    pub monitors: Vec<Monitor>,
    /// Extra labels of the Prometheus Operator objects, by which a
    /// Prometheus selects them (kube-prometheus-stack selects on
    /// `release`).
    pub monitor_labels: BTreeMap<String, String>,
    /// Let the agent read the kernel log (`/dev/kmsg`): a privileged
    /// container, see [`crate::agent`].
    pub kernel_log: bool,
}

impl AgentPlan {
    /// Settings given outside an intent file (`zerohop agent
    /// --print-manifests`), held to the same grammars as the intent's
    /// `spec.agent`; monitors are kept once each, in a fixed order.
    pub fn new(
        namespace: String,
        image: String,
        mut monitors: Vec<Monitor>,
    ) -> Result<AgentPlan, String> {
        grammar::dns_label(&namespace)
            .map_err(|problem| format!("namespace {namespace:?} {problem}"))?;
        grammar::image_reference(&image).map_err(|problem| format!("image {image:?} {problem}"))?;
        monitors.sort_unstable();
        monitors.dedup();
        Ok(AgentPlan {
            namespace,
            image,
            monitors,
            ..AgentPlan::default()
        })
    }

    /// The same settings with these labels on the Prometheus Operator
    /// objects, each held to the API server's label grammar.
    pub fn with_monitor_labels(
        mut self,
        labels: BTreeMap<String, String>,
    ) -> Result<AgentPlan, String> {
        for (key, value) in &labels {
            grammar::label(key, value).map_err(|problem| format!("monitor {problem}"))?;
        }
        self.monitor_labels = labels;
        Ok(self)
    }
}

impl Default for AgentPlan {
    fn default() -> AgentPlan {
        AgentPlan {
            namespace: "zerohop-system".to_owned(),
            image: zerohop_known::zerohop_api::default_image(),
            monitors: Vec::new(),
            monitor_labels: BTreeMap::new(),
            kernel_log: true,
        }
    }
}

/// The extended resource of a rail's RDMA device under `prefix`
/// (`nvidia.com/rdma_rail0`).
pub(crate) fn rail_resource(prefix: &str, rail: &RailPlan) -> String {
    format!("{prefix}/{}", rail.resource_name)
}

/// The NUMA layout of `pool`'s nodes as the kubelet's hint providers see
/// it: per NUMA node its CPUs, those of them reserved, its GPUs (the GPU
/// device plugin reports each GPU's NUMA node) and, with SR-IOV VFs, the
/// VFs of each rail (the SR-IOV network device
/// plugin reports the NUMA node of each VF,
/// k8snetworkplumbingwg/sriov-network-device-plugin `README.md`). The RDMA
/// shared device plugin reports none (Mellanox/k8s-rdma-shared-dev-plugin
/// issue 117). `None` when the intent gives no layout.
pub(crate) fn numa_layout(
    pool: &PoolPlan,
    rails: &BTreeMap<u32, RailPlan>,
    resource_prefix: &str,
    rdma_mode: RdmaMode,
) -> Option<Layout> {
    use zerohop_known::topology::{GPU_RESOURCE, NumaNode};
    if pool.numa.is_empty() {
        return None;
    }
    let reserved = CpuSet::parse(&pool.reserved_cpus).unwrap_or_default();
    let vfs_have_topology = rdma_mode == RdmaMode::Sriov;
    let nodes = pool
        .numa
        .iter()
        .enumerate()
        .map(|(index, numa)| {
            let mut devices = BTreeMap::new();
            if numa.gpus > 0 {
                devices.insert(GPU_RESOURCE.to_owned(), numa.gpus);
            }
            let local = pool
                .nics
                .iter()
                .filter(|n| vfs_have_topology && n.num_vfs > 0)
                .filter(|n| n.numa_node.is_some_and(|node| node as usize == index));
            for nic in local {
                if let Some(rail) = rails.get(&nic.rail) {
                    *devices
                        .entry(rail_resource(resource_prefix, rail))
                        .or_insert(0) += nic.num_vfs;
                }
            }
            NumaNode {
                cpus: u32::try_from(numa.cpus.0.len()).unwrap_or(u32::MAX),
                reserved_cpus: u32::try_from(numa.cpus.0.intersection(&reserved.0).count())
                    .unwrap_or(u32::MAX),
                devices,
            }
        })
        .collect();
    Some(Layout(nodes))
}

impl Plan {
    /// [`numa_layout`] of one of the plan's pools.
    pub(crate) fn numa_layout(&self, pool: &PoolPlan) -> Option<Layout> {
        numa_layout(pool, &self.rails, &self.resource_prefix, self.rdma_mode)
    }
}
