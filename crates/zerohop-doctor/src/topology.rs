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

use std::fmt;

use serde::Serialize;
use zerohop_core::SCHEMA_VERSION;
use zerohop_host::facts::PciDevice;
use zerohop_host::{Facts, Gap};

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
    /// The port NCCL should use: the first `ACTIVE` one, else the first.
    pub port: u32,
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

/// The JSON document of `zerohop topo`: versioned like every JSON document
/// zerohop writes, the root it describes, then the topology's fields.
#[derive(Debug, Serialize)]
pub struct TopologyDocument<'a> {
    /// Version of this format, [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The host root read (`/` for this machine).
    pub root: &'a str,
    /// The topology.
    #[serde(flatten)]
    pub topology: &'a Topology,
}

impl Topology {
    /// The JSON document of this topology, read from `root`.
    pub fn document<'a>(&'a self, root: &'a str) -> TopologyDocument<'a> {
        TopologyDocument {
            schema_version: SCHEMA_VERSION,
            root,
            topology: self,
        }
    }

    /// Computes the pairing from the facts. GPUs are NVIDIA display or 3D
    /// controllers; NICs are physical functions backing an RDMA device.
    pub fn of(facts: &Facts) -> Topology {
        let pci = &facts.pci;
        let multi_node = facts.numa_nodes().len() > 1;
        let mut nics: Vec<(Nic, &PciDevice)> = Vec::new();
        for device in facts.rdma.list() {
            let Some(function) = device.pci.as_deref().and_then(|a| pci.get(a)) else {
                continue;
            };
            if function.is_vf() || nics.iter().any(|(n, _)| n.pci == function.address) {
                continue;
            }
            let port = device
                .port_list()
                .iter()
                .find(|p| p.is_active())
                .or_else(|| device.port_list().first())
                .map_or(1, |p| p.number);
            nics.push((
                Nic {
                    name: device.name.clone(),
                    pci: function.address.clone(),
                    port,
                    numa_node: known_node(function),
                },
                function,
            ));
        }
        nics.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let mut load = vec![0usize; nics.len()];
        let mut pairings = Vec::new();
        for gpu in pci
            .list()
            .iter()
            .filter(|d| d.is_nvidia_gpu() && !d.is_vf())
        {
            let all: Vec<Option<Distance>> = nics
                .iter()
                .map(|(_, nic)| distance(gpu, nic, multi_node))
                .collect();
            // Nearest first; among equals the NIC with the fewest GPUs so
            // far, so eight GPUs spread over eight equidistant NICs.
            let best = (0..nics.len())
                .min_by_key(|&i| (all[i].is_none(), all[i], load[i], nics[i].0.name.clone()));
            if let Some(index) = best {
                load[index] += 1;
            }
            pairings.push(Pairing {
                gpu: gpu.address.clone(),
                gpu_numa_node: known_node(gpu),
                nic: best.map(|i| nics[i].0.name.clone()),
                distance: best.and_then(|i| all[i]),
                all,
            });
        }
        let nics: Vec<Nic> = nics.into_iter().map(|(nic, _)| nic).collect();
        let nccl_ib_hca = nccl_ib_hca(&nics, &pairings);
        let unreadable = |gap: &Gap| Unreadable {
            path: gap.path.clone(),
            reason: gap.reason.clone(),
        };
        Topology {
            nics,
            pairings,
            nccl_ib_hca,
            pci_unreadable: pci.unidentified().map(unreadable),
            rdma_unreadable: facts.rdma.devices.as_ref().err().map(unreadable),
        }
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

fn known_node(device: &PciDevice) -> Option<i32> {
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
fn host_bridge(device: &PciDevice) -> &str {
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
    fn nccl_list_is_exact_and_unique() {
        let nics = vec![
            Nic {
                name: "mlx5_0".into(),
                pci: "a".into(),
                port: 1,
                numa_node: None,
            },
            Nic {
                name: "mlx5_1".into(),
                pci: "b".into(),
                port: 1,
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
