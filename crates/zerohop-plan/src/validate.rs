//! Semantic checks of an intent, from the operators' admission webhooks
//! (which their Helm charts leave off), and the resolved [`Plan`].

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::Location;

use crate::devices::{self, MELLANOX_MAX_VFS, NicModel};
use crate::diagnostic::Diagnostic;
use crate::intent::{
    API_VERSION, CpuVendor, DataPathPlan, DeviceType, HugepageSize, Ipam, KIND, LinkType, Platform,
    RdmaMode, VfCount,
};

/// VF headroom over one per GPU, in percent.
const VF_HEADROOM_PERCENT: u32 = 20;

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
    /// IPAM of the rail networks.
    pub ipam: Ipam,
    /// Device plugin resource prefix.
    pub resource_prefix: String,
    /// NFS over RDMA, when wanted.
    pub nfs: Option<NfsPlan>,
    /// NVMe-oF discovery targets (`address`, `port`).
    pub nvme_targets: Vec<(String, u16)>,
    /// GPUDirect Storage.
    pub gds: bool,
    /// The example workload.
    pub workload: WorkloadPlan,
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
    /// Rail number.
    pub rail: u32,
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
}

/// NFS over RDMA.
#[derive(Debug, Clone)]
pub struct NfsPlan {
    /// Server.
    pub server: String,
    /// Export.
    pub export: String,
    /// Mount point.
    pub mount_point: String,
    /// nconnect.
    pub nconnect: u32,
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
    /// RDMA devices per pod.
    pub vfs: u32,
    /// Memory request/limit.
    pub memory: String,
    /// `/dev/shm` size.
    pub shm_size: String,
    /// Huge pages per pod (count, size).
    pub hugepages: Option<(HugepageSize, u32)>,
    /// `NCCL_SOCKET_IFNAME`.
    pub socket_ifname: String,
}

/// A name every device plugin and webhook accepts (survey §a.7).
fn resource_name_ok(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

fn dns_label_ok(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

/// A cpuset list: `0-3,8,10-11`.
fn cpuset_ok(list: &str) -> bool {
    !list.is_empty()
        && list.split(',').all(|part| match part.split_once('-') {
            Some((a, b)) => {
                matches!((a.parse::<u32>(), b.parse::<u32>()), (Ok(a), Ok(b)) if a <= b)
            }
            None => part.parse::<u32>().is_ok(),
        })
}

fn cidr_ok(cidr: &str) -> bool {
    let Some((address, prefix)) = cidr.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => prefix <= 32,
        Ok(std::net::IpAddr::V6(_)) => prefix <= 128,
        Err(_) => false,
    }
}

/// The regex of the Network Operator webhook for `ofedDriver.version`.
fn doca_version_ok(version: &str) -> bool {
    // doca<maj>.<min>[.<patch>]-<yy>.<mm>-<a>.<b>.<c>.<d>-<e>[-suffix] or a
    // plain OFED version; checked by hand to avoid a regex dependency.
    let Some(rest) = version.strip_prefix("doca") else {
        return version.starts_with("sha256:")
            || version.chars().next().is_some_and(|c| c.is_ascii_digit());
    };
    let parts: Vec<&str> = rest.splitn(4, '-').collect();
    let numeric = |s: &str, n: usize| {
        let pieces: Vec<&str> = s.split('.').collect();
        pieces.len() == n
            && pieces
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    parts.len() >= 4
        && (numeric(parts[0], 2) || numeric(parts[0], 3))
        && numeric(parts[1], 2)
        && numeric(parts[2], 4)
        && parts[3]
            .split('-')
            .next()
            .is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
}

struct Checker {
    found: Vec<Diagnostic>,
}

impl Checker {
    fn error(&mut self, location: &Location, message: impl Into<String>, help: impl Into<String>) {
        self.found
            .push(Diagnostic::at(location, message).help(help));
    }
}

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
    let name = &intent.metadata.name;
    if !dns_label_ok(&name.value) {
        c.error(
            &name.referenced,
            format!("name {:?} is not a dns-1123 label", name.value),
            "use lowercase letters, digits and '-', at most 63 characters",
        );
    }
    let spec = intent.spec;
    let platform = platform.unwrap_or(spec.platform);
    let ops = spec.operators;
    if !doca_version_ok(&ops.doca_driver_version.value) {
        c.error(
            &ops.doca_driver_version.referenced,
            format!(
                "docaDriverVersion {:?} is rejected by the network operator webhook",
                ops.doca_driver_version.value
            ),
            "use a tag such as \"doca3.5.0-26.07-0.7.0.0-0\"",
        );
    }
    let rdma_mode = spec.rdma.mode.as_ref().map_or(RdmaMode::Sriov, |m| m.value);
    let prefix = &spec.rdma.resource_prefix;
    if prefix.value == "intel.com"
        || !prefix.value.contains('.')
        || prefix.value.split('.').any(|l| !dns_label_ok(l))
    {
        c.error(&prefix.referenced, format!("resourcePrefix {:?} is not a usable domain", prefix.value), "use a domain you own, e.g. \"nvidia.com\"; \"intel.com\" is the sr-iov device plugin's default, not a choice");
    }

    if spec.node_pools.is_empty() {
        c.error(
            &Location::UNKNOWN,
            "spec.nodePools is empty",
            "describe at least one pool of gpu nodes",
        );
    }
    let mut rails: BTreeMap<u32, RailPlan> = BTreeMap::new();
    let mut pools = Vec::new();
    let mut pool_names = BTreeSet::new();
    let mut all_pfs: BTreeMap<String, bool> = BTreeMap::new();
    for pool in spec.node_pools {
        if !dns_label_ok(&pool.name.value) {
            c.error(
                &pool.name.referenced,
                format!("pool name {:?} is not a dns-1123 label", pool.name.value),
                "use lowercase letters, digits and '-'",
            );
        }
        if !pool_names.insert(pool.name.value.clone()) {
            c.error(
                &pool.name.referenced,
                format!("pool {:?} is listed twice", pool.name.value),
                "give each pool its own name",
            );
        }
        if pool.node_selector.is_empty() {
            c.error(
                &pool.name.referenced,
                format!("pool {:?} has an empty nodeSelector", pool.name.value),
                "select the gpu nodes, e.g. nvidia.com/gpu.present: \"true\"",
            );
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
            if !cpuset_ok(&cpus.value) {
                c.error(
                    &cpus.referenced,
                    format!("{:?} is not a cpu list", cpus.value),
                    "write it as in /sys: \"0-3,64-67\"",
                );
            }
        }
        if pool.nics.is_empty() {
            c.error(
                &pool.name.referenced,
                format!("pool {:?} has no nics", pool.name.value),
                "list the rdma nic ports (pfs)",
            );
        }
        let mut pfs = BTreeSet::new();
        let mut nics = Vec::new();
        for nic in pool.nics {
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
            let model = match devices::by_pf_id(&nic.device_id.value) {
                Some(model) => Some(model),
                None if devices::is_vf_id(&nic.device_id.value) => {
                    c.error(&nic.device_id.referenced, format!("device id {:?} is a virtual function id", nic.device_id.value), "give the physical function's device id, e.g. \"1021\" for connectx-7; the vf id is derived from it");
                    None
                }
                None => {
                    let known: Vec<String> = devices::MODELS
                        .iter()
                        .map(|m| format!("{} ({})", m.pf_device_id, m.name))
                        .collect();
                    c.error(
                        &nic.device_id.referenced,
                        format!("unknown device id {:?}", nic.device_id.value),
                        format!("the sr-iov operator supports {}", known.join(", ")),
                    );
                    None
                }
            };
            if let (Some(model), LinkType::Ib) = (model, nic.link_type)
                && !model.infiniband
            {
                c.error(
                    &nic.device_id.referenced,
                    format!("{} has no infiniband ports", model.name),
                    "use linkType: ETH",
                );
            }
            if let Some(device_type) = &nic.device_type
                && device_type.value == DeviceType::VfioPci
            {
                c.error(
                    &device_type.referenced,
                    "deviceType vfio-pci with rdma is rejected by the sr-iov operator webhook",
                    "use deviceType: netdevice (isRdma needs a kernel netdevice on bare metal)",
                );
            }
            let total = nic
                .total_vfs
                .as_ref()
                .map_or(MELLANOX_MAX_VFS, |t| t.value.min(MELLANOX_MAX_VFS));
            let num_vfs = match (&nic.vfs, rdma_mode) {
                (Some(vfs), RdmaMode::Shared) => {
                    c.error(
                        &vfs.referenced,
                        "vfs are set but rdma.mode is shared",
                        "remove vfs, or set rdma.mode: sriov",
                    );
                    0
                }
                (_, RdmaMode::Shared) => 0,
                (vfs, RdmaMode::Sriov) => {
                    let wanted = match vfs.as_ref().map(|v| v.value) {
                        Some(VfCount::Count(n)) => n,
                        None | Some(VfCount::Keyword(_)) => {
                            gpus + (gpus * VF_HEADROOM_PERCENT).div_ceil(100)
                        }
                    };
                    let location = vfs.as_ref().map_or(nic.pf.referenced, |v| v.referenced);
                    if wanted == 0 {
                        c.error(
                            &location,
                            "vfs is 0",
                            "give at least one vf per pf, or use rdma.mode: shared",
                        );
                    } else if wanted > total {
                        let limit = if total == MELLANOX_MAX_VFS {
                            "the sr-iov operator's cap of 128 vfs per mellanox pf".to_owned()
                        } else {
                            format!("totalVfs {total}")
                        };
                        c.error(&location, format!("{wanted} vfs exceed {limit}"), format!("use at most {total} vfs, or raise sriov_totalvfs in the nic firmware (NUM_OF_VFS)"));
                    }
                    wanted
                }
            };
            let resource_name = match &nic.resource_name {
                Some(name) => {
                    if !resource_name_ok(&name.value) {
                        c.error(&name.referenced, format!("resource name {:?} is rejected by some device plugin or webhook", name.value), "use letters, digits and '_' only, starting and ending with a letter or digit (e.g. rdma_rail0)");
                    }
                    name.value.clone()
                }
                None => format!("rdma_rail{}", nic.rail.value),
            };
            if !cidr_ok(&nic.subnet.value) {
                c.error(
                    &nic.subnet.referenced,
                    format!("{:?} is not a cidr", nic.subnet.value),
                    "write the subnet as 192.168.10.0/24",
                );
            }
            if let Some(vlan) = &nic.vlan {
                if nic.link_type == LinkType::Ib {
                    c.error(
                        &vlan.referenced,
                        "vlan on an infiniband rail",
                        "infiniband has partitions (pkeys), not vlans; remove vlan",
                    );
                } else if vlan.value == 0 || vlan.value > 4094 {
                    c.error(
                        &vlan.referenced,
                        format!("vlan {} is out of range", vlan.value),
                        "use 1 to 4094",
                    );
                }
            }
            let mtu = nic.mtu.value;
            let mtu_ok = match nic.link_type {
                LinkType::Eth => (1280..=9216).contains(&mtu),
                LinkType::Ib => (256..=4092).contains(&mtu),
            };
            if !mtu_ok {
                let range = if nic.link_type == LinkType::Eth {
                    "1280 to 9216 (9000 for roce)"
                } else {
                    "up to 4092 for ipoib (4092 with a 4096 ib mtu)"
                };
                c.error(
                    &nic.mtu.referenced,
                    format!("mtu {mtu} is out of range"),
                    format!("use {range}"),
                );
            }
            let rail = RailPlan {
                rail: nic.rail.value,
                link_type: nic.link_type,
                mtu,
                subnet: nic.subnet.value.clone(),
                vlan: nic.vlan.as_ref().map(|v| v.value),
                resource_name,
            };
            match rails.get(&rail.rail) {
                Some(existing)
                    if (
                        existing.link_type,
                        existing.mtu,
                        &existing.subnet,
                        existing.vlan,
                        &existing.resource_name,
                    ) != (
                        rail.link_type,
                        rail.mtu,
                        &rail.subnet,
                        rail.vlan,
                        &rail.resource_name,
                    ) =>
                {
                    c.error(
                        &nic.rail.referenced,
                        format!("rail {} is described differently by another nic", rail.rail),
                        "nics on one rail share link type, mtu, subnet, vlan and resource name",
                    );
                }
                Some(_) => {}
                None => {
                    if rails
                        .values()
                        .any(|r| r.resource_name == rail.resource_name)
                    {
                        c.error(
                            &nic.rail.referenced,
                            format!(
                                "resource name {:?} is used by two rails",
                                rail.resource_name
                            ),
                            "give each rail its own resource name",
                        );
                    }
                    rails.insert(rail.rail, rail);
                }
            }
            all_pfs.insert(nic.pf.value.clone(), nic.vlan.is_some());
            if let Some(model) = model {
                nics.push(NicPlan {
                    pf: nic.pf.value,
                    rdma_device: nic.rdma_device.value,
                    model,
                    num_vfs,
                    rail: nic.rail.value,
                });
            }
        }
        nics.sort_by_key(|n| n.rail);
        pools.push(PoolPlan {
            name: pool.name.value,
            node_selector: pool.node_selector,
            cpu_vendor: pool.cpu_vendor,
            gpus,
            nics,
            hugepages: pool.hugepages.map(|h| (h.size, h.count.value)),
            isolated_cpus: pool.isolated_cpus.map(|s| s.value),
            reserved_cpus: pool.reserved_cpus.value,
        });
    }

    let storage = spec.storage;
    let nfs = storage.nfs_rdma.map(|nfs| {
        let point = &nfs.mount_point.value;
        if !point.starts_with('/') || point == "/" || point.split('/').any(|p| p == "..") {
            c.error(&nfs.mount_point.referenced, format!("mount point {point:?} is not an absolute directory"), "use an absolute path such as /mnt/ai-data");
        }
        if !(1..=16).contains(&nfs.nconnect.value) {
            c.error(&nfs.nconnect.referenced, format!("nconnect {} is out of range", nfs.nconnect.value), "use 1 to 16");
        }
        match all_pfs.get(&nfs.nic.value) {
            None => c.error(&nfs.nic.referenced, format!("nic {:?} is not a pf of any pool", nfs.nic.value), "name the pf whose network reaches the nfs server"),
            Some(true) => c.error(&nfs.nic.referenced, format!("the network of {:?} has a vlan; nfs over rdma runs on the pf in the host network", nfs.nic.value), "serve nfs over rdma on an untagged network (remove vlan from that nic), or give the storage network its own pf"),
            Some(false) => {}
        }
        NfsPlan { server: nfs.server, export: nfs.export, mount_point: nfs.mount_point.value, nconnect: nfs.nconnect.value }
    });
    if let (Some(nvme), Some(_)) = (&storage.nvme_of, &nfs) {
        c.error(&nvme.referenced, "nvme-of together with nfs over rdma", "the doca driver container fails with ENABLE_NFSRDMA while nvme rdma modules are loaded; use one storage path per node");
    }
    let gds = storage.gds.as_ref().is_some_and(|g| g.value);
    if let (Some(gds_flag), true, Some(_)) = (&storage.gds, gds, &storage.nvme_of) {
        c.error(
            &gds_flag.referenced,
            "gds with nvme-of",
            "with the network operator's doca driver, gds is supported only with nfs over rdma",
        );
    }
    let nvme_targets = storage
        .nvme_of
        .map(|n| {
            n.value
                .targets
                .into_iter()
                .map(|t| (t.address, t.port))
                .collect()
        })
        .unwrap_or_default();

    let w = spec.workload;
    if !dns_label_ok(&w.namespace.value) {
        c.error(
            &w.namespace.referenced,
            format!("namespace {:?} is not a dns-1123 label", w.namespace.value),
            "use lowercase letters, digits and '-'",
        );
    }
    if !dns_label_ok(&w.name.value) {
        c.error(
            &w.name.referenced,
            format!("name {:?} is not a dns-1123 label", w.name.value),
            "use lowercase letters, digits and '-'",
        );
    }
    let min_gpus = pools.iter().map(|p| p.gpus).min().unwrap_or(0);
    if w.gpus_per_pod.value == 0 || w.gpus_per_pod.value > min_gpus {
        c.error(
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
                &h.referenced,
                "workload hugepages but no pool reserves hugepages",
                "add hugepages to the node pool",
            );
            None
        }
        (Some(h), Some((size, count))) => {
            if h.value == 0 || h.value > count {
                c.error(
                    &h.referenced,
                    format!("{} hugepages per pod but nodes reserve {count}", h.value),
                    "request at most the pages a node reserves",
                );
            }
            Some((size, h.value))
        }
        (None, _) => None,
    };
    let workload = WorkloadPlan {
        name: w.name.value,
        namespace: w.namespace.value,
        image: w.image,
        gpus: w.gpus_per_pod.value,
        vfs,
        memory: w.memory,
        shm_size: w.shm_size,
        hugepages,
        socket_ifname: w.nccl_socket_ifname,
    };

    if !c.found.is_empty() {
        return Err(c.found);
    }
    let sriov_namespace = ops
        .sriov_operator_namespace
        .unwrap_or_else(|| match platform {
            Platform::Kubernetes => ops.network_operator_namespace.clone(),
            Platform::Openshift => "openshift-sriov-network-operator".to_owned(),
        });
    Ok(Plan {
        name: name.value.clone(),
        platform,
        network_operator_version: ops.network_operator_version,
        network_operator_namespace: ops.network_operator_namespace,
        sriov_namespace,
        doca_driver_version: ops.doca_driver_version.value,
        gpu_operator_version: ops.gpu_operator_version,
        gpu_operator_namespace: ops.gpu_operator_namespace,
        pools,
        rails,
        rdma_mode,
        ipam: spec.rdma.ipam,
        resource_prefix: prefix.value.clone(),
        nfs,
        nvme_targets,
        gds,
        workload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_helpers() {
        assert!(resource_name_ok("rdma_rail0"));
        assert!(!resource_name_ok("rdma-rail0"));
        assert!(!resource_name_ok("_x"));
        assert!(cpuset_ok("0-3,8,10-11"));
        assert!(!cpuset_ok("3-0"));
        assert!(cidr_ok("192.168.10.0/24"));
        assert!(!cidr_ok("192.168.10.0"));
        assert!(doca_version_ok("doca3.5.0-26.07-0.7.0.0-0"));
        assert!(!doca_version_ok("doca3.3.1-26.01-1.0.0.0.500-0"));
    }
}
