//! GPU ↔ RDMA NIC distances computed from sysfs paths, the classes
//! `nvidia-smi topo -m` prints, and the pairing NCCL should use.
//!
//! The distance of two PCI functions comes from the bridges above them
//! (each function's real sysfs path, nearest first):
//!
//! | class | meaning | from sysfs |
//! |---|---|---|
//! | `PIX` | at most one PCIe switch between them | their nearest common bridge is at most one level above each (a switch's upstream port, or the same port) |
//! | `PXB` | several PCIe switches, no host bridge | a common bridge further up |
//! | `PHB` | through a PCIe host bridge | no common bridge, same host bridge (root ports on one bus) |
//! | `NODE` | between host bridges of one NUMA node | different host bridges, same `numa_node` |
//! | `SYS` | across the inter-socket link | different `numa_node` |
//!
//! NCCL uses GPUDirect RDMA for a GPU–NIC pair only up to
//! `NCCL_NET_GDR_LEVEL`, `PXB` by default ([`nccl::NET_GDR_LEVEL_DEFAULT`]):
//! beyond it every transfer is staged through host memory.

use std::fmt;

use serde::Serialize;
use zerohop_host::facts::{PciDevice, RdmaDevice, RdmaPort};
use zerohop_host::parse::rdma::LinkLayer;
use zerohop_host::{Facts, Gap};
use zerohop_known::nccl;
use zerohop_known::pci::class;

/// How far apart two PCI functions are, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Distance {
    /// At most one PCIe switch between them.
    Pix,
    /// Several PCIe switches, without the host bridge.
    Pxb,
    /// Through a PCIe host bridge (the CPU).
    Phb,
    /// Between PCIe host bridges of one NUMA node.
    Node,
    /// Across the link between NUMA nodes (sockets).
    Sys,
}

impl Distance {
    /// The `nvidia-smi topo -m` name.
    pub fn as_str(self) -> &'static str {
        match self {
            Distance::Pix => "PIX",
            Distance::Pxb => "PXB",
            Distance::Phb => "PHB",
            Distance::Node => "NODE",
            Distance::Sys => "SYS",
        }
    }

    /// The class NCCL gives this path, the value of `NCCL_NET_GDR_LEVEL`
    /// that admits it: NCCL has no `NODE`, a path between host bridges of
    /// one CPU goes through the CPU node and is `PHB` to it.
    pub fn nccl_level(self) -> &'static str {
        match self {
            Distance::Node => Distance::Phb.as_str(),
            other => other.as_str(),
        }
    }

    /// Whether NCCL uses GPUDirect RDMA at this distance when
    /// `NCCL_NET_GDR_LEVEL` is unset ([`nccl::NET_GDR_LEVEL_DEFAULT`]).
    pub fn gdr_by_default(self) -> bool {
        [
            Distance::Pix,
            Distance::Pxb,
            Distance::Phb,
            Distance::Node,
            Distance::Sys,
        ]
        .into_iter()
        .find(|d| d.as_str() == nccl::NET_GDR_LEVEL_DEFAULT)
        .is_some_and(|level| self <= level)
    }
}

impl fmt::Display for Distance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An RDMA NIC that GPUs can be paired with: a physical function that
/// backs an RDMA device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Nic {
    /// The RDMA device (`mlx5_0`).
    pub name: String,
    /// Its PCI function.
    pub pci: String,
    /// The port NCCL should use: the fastest `ACTIVE` one, else the first.
    pub port: u32,
    /// Whether that port is `4: ACTIVE`; when it is not, no port of the
    /// NIC is, and NCCL cannot use it until one comes up.
    pub active: bool,
    /// Its NUMA node, when known.
    pub numa_node: Option<i32>,
}

/// The NIC chosen for one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pairing {
    /// The GPU's PCI address.
    pub gpu: String,
    /// The GPU's NUMA node, when known.
    pub gpu_numa_node: Option<i32>,
    /// The nearest NIC's RDMA device name, if any NIC exists.
    pub nic: Option<String>,
    /// Its distance; `None` when it cannot be told (different host bridges
    /// and an unknown NUMA node on a multi-node host).
    pub distance: Option<Distance>,
    /// The distance to every NIC, in NIC order.
    pub all: Vec<Option<Distance>>,
}

/// A list the topology is built from that could not be read: without it,
/// "no GPU" or "no NIC" would be a guess.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// The host path.
    pub path: String,
    /// Why, as a lowercase fragment.
    pub reason: String,
}

/// Every GPU's nearest NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    /// The RDMA NICs, by name.
    pub nics: Vec<Nic>,
    /// One pairing per NVIDIA GPU, by address.
    pub pairings: Vec<Pairing>,
    /// The `NCCL_IB_HCA` value that selects the paired NICs (exact names,
    /// with ports), empty when no GPU has a NIC.
    pub nccl_ib_hca: String,
    /// The PCI functions when they could not be listed, or a function
    /// whose class or IDs could not be read: the GPUs are unknown, not
    /// absent.
    pub pci_unreadable: Option<Unreadable>,
    /// The RDMA devices when they could not be listed: the NICs are
    /// unknown, not absent.
    pub rdma_unreadable: Option<Unreadable>,
}

/// The fields of `zerohop topo`'s JSON document (which
/// [`zerohop_core::Document`] versions): the root it describes, then the
/// topology's fields.
#[derive(Debug, Serialize)]
pub struct TopologyDocument<'a> {
    /// The host root read (`/` for this machine).
    pub root: &'a str,
    /// The topology.
    #[serde(flatten)]
    pub topology: &'a Topology,
    /// [`Topology::nccl_net_gdr_level`].
    pub nccl_net_gdr_level: Option<&'static str>,
}

impl Topology {
    /// The JSON document of this topology, read from `root`.
    pub fn document<'a>(&'a self, root: &'a str) -> TopologyDocument<'a> {
        TopologyDocument {
            root,
            topology: self,
            nccl_net_gdr_level: self.nccl_net_gdr_level(),
        }
    }

    /// The GPUs whose paired NIC is beyond NCCL's default
    /// `NCCL_NET_GDR_LEVEL`: NCCL stages their traffic through host memory.
    pub fn beyond_default_gdr(&self) -> impl Iterator<Item = &Pairing> {
        self.pairings
            .iter()
            .filter(|p| p.distance.is_some_and(|d| !d.gdr_by_default()))
    }

    /// The `NCCL_NET_GDR_LEVEL` that lets NCCL use GPUDirect RDMA for every
    /// pairing (`PHB` or `SYS`); `None` when the default already does.
    pub fn nccl_net_gdr_level(&self) -> Option<&'static str> {
        self.beyond_default_gdr()
            .filter_map(|p| p.distance)
            .max()
            .map(Distance::nccl_level)
    }

    /// Computes the pairing from the facts. GPUs are NVIDIA display or 3D
    /// controllers; NICs are physical functions backing an RDMA device.
    pub fn of(facts: &Facts) -> Topology {
        let pci = &facts.pci;
        let multi_node = facts.numa_nodes().len() > 1;
        let mut nics: Vec<Candidate> = Vec::new();
        for device in facts.rdma.list() {
            let Some(function) = device.pci.as_deref().and_then(|a| pci.get(a)) else {
                continue;
            };
            if function.is_vf() || nics.iter().any(|c| c.nic.pci == function.address) {
                continue;
            }
            nics.push(Candidate::new(device, function));
        }
        nics.sort_by(|a, b| a.nic.name.cmp(&b.nic.name));
        let fabric = compute_fabric(&nics);
        let mut load = vec![0usize; nics.len()];
        let mut pairings = Vec::new();
        for gpu in pci.nvidia_gpus() {
            let all: Vec<Option<Distance>> = nics
                .iter()
                .map(|c| distance(gpu, c.function, multi_node))
                .collect();
            // Nearest first. Among equals: an ACTIVE port, then the fastest,
            // then the compute fabric's link layer, then the NIC with the
            // fewest GPUs so far (eight GPUs spread over eight equal NICs),
            // then the name.
            let best = (0..nics.len()).min_by_key(|&i| {
                let nic = &nics[i];
                (
                    all[i].is_none(),
                    all[i],
                    !nic.active,
                    std::cmp::Reverse(nic.rate_mbps),
                    fabric.is_some() && nic.link_layer != fabric,
                    load[i],
                    nic.nic.name.clone(),
                )
            });
            if let Some(index) = best {
                load[index] += 1;
            }
            pairings.push(Pairing {
                gpu: gpu.address.clone(),
                gpu_numa_node: known_node(gpu),
                nic: best.map(|i| nics[i].nic.name.clone()),
                distance: best.and_then(|i| all[i]),
                all,
            });
        }
        let nics: Vec<Nic> = nics.into_iter().map(|c| c.nic).collect();
        let nccl_ib_hca = nccl_ib_hca(&nics, &pairings);
        let unreadable = |gap: &Gap| Unreadable {
            path: gap.path.clone(),
            reason: gap.reason.clone(),
        };
        Topology {
            nics,
            pairings,
            nccl_ib_hca,
            pci_unreadable: pci
                .unidentified()
                .map(unreadable)
                .or_else(|| unidentified_display(facts)),
            rdma_unreadable: facts.rdma.devices.as_ref().err().map(unreadable),
        }
    }
}

/// A display or 3D controller whose vendor is unknown (a capture without
/// its `vendor` file): it may be an NVIDIA GPU, so "no GPU" is unknown.
fn unidentified_display(facts: &Facts) -> Option<Unreadable> {
    facts
        .pci
        .list()
        .iter()
        .find(|d| {
            d.vendor.is_none() && matches!(d.class, Some(class::DISPLAY_3D | class::DISPLAY_VGA))
        })
        .map(|d| Unreadable {
            path: format!("{}/vendor", d.sysfs()),
            reason: format!(
                "display function {} has no vendor id: it may be an nvidia gpu",
                d.address
            ),
        })
}

/// A NIC while the pairing is computed: what ranks it among NICs at the
/// same distance, from the port NCCL would use.
struct Candidate<'a> {
    nic: Nic,
    function: &'a PciDevice,
    /// The port is `4: ACTIVE`.
    active: bool,
    /// The port's rate in Mb/s, 0 when unknown.
    rate_mbps: u64,
    /// The port's link layer, when known.
    link_layer: Option<LinkLayer>,
}

impl<'a> Candidate<'a> {
    fn new(device: &RdmaDevice, function: &'a PciDevice) -> Candidate<'a> {
        // The port NCCL should use: the fastest ACTIVE one, else the one
        // with the lowest number.
        let port = device.port_list().iter().min_by_key(|p| {
            let active = p.is_active();
            let rate = if active { rate_mbps(p) } else { 0 };
            (!active, std::cmp::Reverse(rate), p.number)
        });
        Candidate {
            nic: Nic {
                name: device.name.clone(),
                pci: function.address.clone(),
                port: port.map_or(1, |p| p.number),
                active: port.is_some_and(RdmaPort::is_active),
                numa_node: known_node(function),
            },
            function,
            active: port.is_some_and(RdmaPort::is_active),
            rate_mbps: port.map_or(0, rate_mbps),
            link_layer: port.and_then(|p| p.link_layer.clone().ok().flatten()),
        }
    }
}

/// A port's rate in Mb/s (`2.5 Gb/sec` is 2500), 0 when unknown.
fn rate_mbps(port: &RdmaPort) -> u64 {
    match &port.rate {
        // Rates are at most a few Tb/s: the product fits and rounding
        // to whole Mb/s keeps 2.5 and 14.0625 apart.
        Ok(Some(rate)) if rate.gbps.is_finite() && rate.gbps > 0.0 => {
            (rate.gbps * 1000.0).round().min(u64::MAX as f64) as u64
        }
        _ => 0,
    }
}

/// The compute fabric's link layer: the one most of the fastest ACTIVE
/// ports use (a host's 400 Gb/s InfiniBand rails, not its 100 GbE
/// storage ports); `None` when no port is active or the fastest split evenly.
fn compute_fabric(nics: &[Candidate<'_>]) -> Option<LinkLayer> {
    let fastest = nics
        .iter()
        .filter(|c| c.active)
        .map(|c| c.rate_mbps)
        .max()?;
    let layers: Vec<&LinkLayer> = nics
        .iter()
        .filter(|c| c.active && c.rate_mbps == fastest)
        .filter_map(|c| c.link_layer.as_ref())
        .collect();
    let count = |layer: &LinkLayer| layers.iter().filter(|l| **l == layer).count();
    let most = layers.iter().map(|l| count(l)).max()?;
    let mut leaders: Vec<&LinkLayer> = layers
        .iter()
        .copied()
        .filter(|l| count(l) == most)
        .collect();
    leaders.dedup();
    match leaders.as_slice() {
        [layer] => Some((*layer).clone()),
        _ => None,
    }
}

/// `=mlx5_0:1,mlx5_3:1`: the paired NICs in GPU order, each once. The
/// leading `=` makes NCCL match names exactly (else `mlx5_1` also selects
/// `mlx5_10`).
fn nccl_ib_hca(nics: &[Nic], pairings: &[Pairing]) -> String {
    let mut names: Vec<String> = Vec::new();
    for pairing in pairings {
        let Some(nic) = pairing
            .nic
            .as_deref()
            .and_then(|n| nics.iter().find(|x| x.name == n))
        else {
            continue;
        };
        let entry = format!("{}:{}", nic.name, nic.port);
        if !names.contains(&entry) {
            names.push(entry);
        }
    }
    if names.is_empty() {
        String::new()
    } else {
        format!("={}", names.join(","))
    }
}

/// The function's NUMA node, when the firmware says.
pub(crate) fn known_node(device: &PciDevice) -> Option<i32> {
    device
        .numa_node
        .as_ref()
        .ok()
        .copied()
        .flatten()
        .filter(|n| *n >= 0)
}

/// The host bridge a function hangs off, as the `domain:bus` of its root
/// port (or of the function itself when it sits on the root bus).
pub(crate) fn host_bridge(device: &PciDevice) -> &str {
    let top = device.parents.last().unwrap_or(&device.address);
    top.get(..7).unwrap_or(top)
}

/// The distance class of two functions. `multi_node`: the host has more
/// than one NUMA node, so an unknown node leaves cross-bridge distances
/// undecided.
pub fn distance(a: &PciDevice, b: &PciDevice, multi_node: bool) -> Option<Distance> {
    let common = a.parents.iter().enumerate().find_map(|(ia, bridge)| {
        b.parents
            .iter()
            .position(|p| p == bridge)
            .map(|ib| (ia, ib))
    });
    if let Some((ia, ib)) = common {
        return Some(if ia <= 1 && ib <= 1 {
            Distance::Pix
        } else {
            Distance::Pxb
        });
    }
    if host_bridge(a) == host_bridge(b) {
        return Some(Distance::Phb);
    }
    match (known_node(a), known_node(b)) {
        (Some(x), Some(y)) if x == y => Some(Distance::Node),
        (Some(_), Some(_)) => Some(Distance::Sys),
        _ if !multi_node => Some(Distance::Node),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use zerohop_host::facts::pci::parents_of;

    use super::*;

    fn function(real: &str, node: i32) -> PciDevice {
        let address = real.rsplit('/').next().unwrap().to_owned();
        PciDevice {
            parents: parents_of(real, &address),
            address,
            class: Some(0x0302),
            vendor: Some(0x10de),
            device: Some(0x2330),
            driver: None,
            numa_node: Ok(Some(node)),
            iommu_group: None,
            link: Ok(None),
            sriov: Ok(None),
            physfn: None,
            unidentified: None,
        }
    }

    #[test]
    fn classes_from_paths() {
        // Two downstream ports of one switch (upstream port 18:00.0).
        let gpu = function(
            "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1b:00.0",
            0,
        );
        let same_switch = function(
            "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1c:00.0",
            0,
        );
        // A second switch level below the first.
        let deeper = function(
            "/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:08.0/0000:1d:00.0/0000:1e:00.0/0000:1f:00.0",
            0,
        );
        let other_root_port = function("/sys/devices/pci0000:17/0000:17:02.0/0000:30:00.0", 0);
        let other_bridge = function("/sys/devices/pci0000:3a/0000:3a:01.0/0000:3b:00.0", 0);
        let other_socket = function("/sys/devices/pci0000:9a/0000:9a:01.0/0000:9b:00.0", 1);
        assert_eq!(distance(&gpu, &same_switch, true), Some(Distance::Pix));
        assert_eq!(distance(&gpu, &deeper, true), Some(Distance::Pxb));
        assert_eq!(distance(&gpu, &other_root_port, true), Some(Distance::Phb));
        assert_eq!(distance(&gpu, &other_bridge, true), Some(Distance::Node));
        assert_eq!(distance(&gpu, &other_socket, true), Some(Distance::Sys));
        let unknown = function("/sys/devices/pci0000:9a/0000:9a:01.0/0000:9b:00.0", -1);
        assert_eq!(distance(&gpu, &unknown, true), None);
        assert_eq!(distance(&gpu, &unknown, false), Some(Distance::Node));
    }

    #[test]
    fn nccl_admits_gpudirect_up_to_pxb_and_has_no_node() {
        // NCCL_NET_GDR_LEVEL defaults to PXB (src/graph/paths.cc).
        assert!(Distance::Pix.gdr_by_default());
        assert!(Distance::Pxb.gdr_by_default());
        assert!(!Distance::Phb.gdr_by_default());
        assert!(!Distance::Node.gdr_by_default());
        assert!(!Distance::Sys.gdr_by_default());
        assert_eq!(Distance::Node.nccl_level(), "PHB");
        assert_eq!(Distance::Sys.nccl_level(), "SYS");
    }

    #[test]
    fn nccl_list_is_exact_and_unique() {
        let nics = vec![
            Nic {
                name: "mlx5_0".into(),
                pci: "a".into(),
                port: 1,
                active: true,
                numa_node: None,
            },
            Nic {
                name: "mlx5_1".into(),
                pci: "b".into(),
                port: 1,
                active: true,
                numa_node: None,
            },
        ];
        let pairing = |nic: &str| Pairing {
            gpu: String::new(),
            gpu_numa_node: None,
            nic: Some(nic.into()),
            distance: Some(Distance::Pix),
            all: vec![],
        };
        assert_eq!(
            nccl_ib_hca(
                &nics,
                &[pairing("mlx5_1"), pairing("mlx5_0"), pairing("mlx5_1")]
            ),
            "=mlx5_1:1,mlx5_0:1"
        );
        assert_eq!(nccl_ib_hca(&nics, &[]), "");
    }
}
