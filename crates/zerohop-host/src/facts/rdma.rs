//! RDMA devices from `/sys/class/infiniband`: ports, rates, GIDs, the PCI
//! function and netdev behind each, plus the user/kernel ABI files, the
//! device nodes in `/dev/infiniband` and RDMA-CM's configfs defaults.

use std::collections::BTreeMap;

use zerohop_known::rdma_counters::{self, Counter, Dir};

use crate::facts::pci::is_address;
use crate::facts::{Fact, Gap, clip, parallel_map, read_parsed};
use crate::parse::rdma::{Gid, GidType, LinkLayer, PhysState, PortState, Rate};
use crate::root::HostRoot;

/// Where the kernel lists RDMA devices.
pub const CLASS_DIR: &str = "/sys/class/infiniband";
/// The verbs ABI version (`ib_uverbs`).
pub const VERBS_ABI: &str = "/sys/class/infiniband_verbs/abi_version";
/// The MAD ABI version (`ib_umad`).
pub const MAD_ABI: &str = "/sys/class/infiniband_mad/abi_version";
/// The device nodes user space opens.
pub const DEV_DIR: &str = "/dev/infiniband";
/// The peer-memory clients registered with the RDMA stack of MLNX_OFED
/// and DOCA-OFED: `ib_register_peer_memory_client()` adds one directory
/// per client, named as the client names itself (`nv_mem` and
/// `nv_mem_nc` for `nvidia-peermem`), with a `version` file, and removes
/// it when the client unregisters (Mellanox/nic-kernel
/// `drivers/infiniband/core/peer_mem.c` at
/// 258b12833a7a1d12e07b41fac8bf84a7f58ab097). The inbox kernel has no
/// peer-memory API and no such directory.
pub const PEER_MEMORY_DIR: &str = "/sys/kernel/mm/memory_peers";
/// The most peer-memory clients listed; real hosts have two to four.
const MAX_PEER_CLIENTS: usize = 64;
/// RDMA-CM's per-device defaults, when configfs is mounted and the
/// device's directory was created.
pub const CONFIGFS_DIR: &str = "/sys/kernel/config/rdma_cm";

/// A GID scan ends after this many unused entries in a row. The kernel
/// fills tables from the start (the default GIDs at 0 and 1, then a RoCE v1
/// and v2 pair per address, reusing freed slots first), so a run this long
/// is the end of the used part; stopping there keeps a host with thousands
/// of 256-entry tables fast.
pub const GID_SCAN_GAP: usize = 4;

/// The largest GID table the kernel creates (`mlx5`: 255 entries; IB: 128).
const MAX_GIDS: u32 = 256;

/// The used part of a port's GID table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GidTable {
    /// Non-zero entries, in index order.
    pub entries: Vec<GidEntry>,
    /// How many entries were read before the scan stopped.
    pub scanned: usize,
}

/// One non-zero GID.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GidEntry {
    /// The table index.
    pub index: u32,
    /// The GID.
    pub gid: Gid,
    /// `gid_attrs/types/<i>`, when readable; read for routable entries,
    /// and for link-local ones only when no routable entry is RoCE v2.
    pub kind: Option<GidType>,
    /// `gid_attrs/ndevs/<i>`: the netdev the GID belongs to; read for the
    /// first entry, since every entry of a port names the same netdev.
    pub ndev: Option<String>,
}

/// The error and congestion counters of a port that the doctor judges
/// ([`rdma_counters::JUDGED`]), as read from `counters/` and `hw_counters/`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortCounters {
    /// Each counter that was present and held a number, by file name.
    /// A file that reads `N/A (no PMA)` (a driver without a performance
    /// management agent) or anything else that is not a number is left out
    /// and named in [`PortCounters::unreadable`].
    pub values: BTreeMap<&'static str, u64>,
    /// Counters whose file exists but did not hold a number.
    pub unreadable: Vec<&'static str>,
    /// Whether the port has a `counters/` directory.
    pub has_counters: bool,
    /// Whether the port has a `hw_counters/` directory.
    pub has_hw_counters: bool,
}

impl PortCounters {
    /// The value of `counter`, when it was read.
    pub fn get(&self, counter: &Counter) -> Option<u64> {
        self.values.get(counter.file).copied()
    }
}

/// One port of an RDMA device.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RdmaPort {
    /// The port number (from 1).
    pub number: u32,
    /// `state`.
    pub state: Fact<PortState>,
    /// `phys_state`.
    pub phys_state: Fact<PhysState>,
    /// `rate`.
    pub rate: Fact<Rate>,
    /// `link_layer`.
    pub link_layer: Fact<LinkLayer>,
    /// The netdev of the port: `gid_attrs/ndevs` for RoCE, else the
    /// device's `net/` entry for this port.
    pub netdev: Option<String>,
    /// The used GIDs; read for Ethernet (RoCE) ports only, `Ok(None)` for
    /// other ports or when the `gids` directory is absent.
    pub gids: Fact<GidTable>,
    /// RDMA-CM's `default_roce_mode` in configfs; `Ok(None)` when absent.
    pub roce_mode: Fact<GidType>,
    /// The error and congestion counters; `Ok(None)` when the port has
    /// neither `counters/` nor `hw_counters/`.
    pub counters: Fact<PortCounters>,
}

impl RdmaPort {
    /// Whether the port's link layer is Ethernet (RoCE).
    pub fn is_ethernet(&self) -> bool {
        matches!(self.link_layer, Ok(Some(LinkLayer::Ethernet)))
    }

    /// Whether the port is `4: ACTIVE`.
    pub fn is_active(&self) -> bool {
        matches!(self.state, Ok(Some(PortState::Active)))
    }
}

/// One RDMA device (`mlx5_0`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RdmaDevice {
    /// The device name.
    pub name: String,
    /// `node_type` (`1: CA`).
    pub node_type: Option<String>,
    /// `fw_ver`.
    pub fw_ver: Option<String>,
    /// `board_id` (`MT_0000000838`).
    pub board_id: Option<String>,
    /// `hca_type` (`MT4129`).
    pub hca_type: Option<String>,
    /// The PCI function behind the device (`device` link), when it has one
    /// (bonded and software devices do not).
    pub pci: Option<String>,
    /// The netdevs of the PCI function (`device/net/*`).
    pub netdevs: Vec<String>,
    /// The ports; `Ok(None)` when the device has no `ports` directory.
    pub ports: Fact<Vec<RdmaPort>>,
}

impl RdmaDevice {
    /// The device's sysfs directory.
    pub fn sysfs(&self) -> String {
        format!("{CLASS_DIR}/{}", self.name)
    }

    /// The sysfs directory of port `number`.
    pub fn port_dir(&self, number: u32) -> String {
        format!("{CLASS_DIR}/{}/ports/{number}", self.name)
    }

    /// The device family, for comparing like with like: `hca_type`
    /// (`MT4129` is a ConnectX-7), else the name without its index (`mlx5`).
    pub fn family(&self) -> String {
        match &self.hca_type {
            Some(hca) if !hca.is_empty() => hca.clone(),
            _ => self
                .name
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .trim_end_matches('_')
                .to_owned(),
        }
    }

    /// The ports, or none when unknown.
    pub fn port_list(&self) -> &[RdmaPort] {
        match &self.ports {
            Ok(Some(ports)) => ports,
            _ => &[],
        }
    }
}

/// The RDMA stack as sysfs, configfs and `/dev` show it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RdmaFacts {
    /// Every RDMA device, sorted by name; `Ok(None)` when
    /// `/sys/class/infiniband` is absent (no device, or `ib_core` not loaded).
    pub devices: Fact<Vec<RdmaDevice>>,
    /// `/sys/class/infiniband_verbs/abi_version`.
    pub verbs_abi: Fact<u32>,
    /// `/sys/class/infiniband_mad/abi_version`.
    pub mad_abi: Fact<u32>,
    /// The names in `/dev/infiniband`; `Ok(None)` when absent.
    pub device_nodes: Fact<Vec<String>>,
    /// Whether the root has a populated `/dev` (`/dev/null` exists):
    /// captures rarely do, and some hold only a cgroup mount there.
    pub has_dev: bool,
    /// Whether RDMA-CM's configfs directory exists.
    pub configfs: bool,
    /// The registered peer-memory clients ([`PEER_MEMORY_DIR`]);
    /// `Ok(None)` when the directory is absent.
    pub peer_memory: Fact<Vec<PeerMemoryClient>>,
}

/// One client registered with the peer-memory API.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PeerMemoryClient {
    /// The name it registered (`nv_mem`, `nv_mem_nc`).
    pub name: String,
    /// `<dir>/<name>/version`, when readable.
    pub version: Option<String>,
}

impl RdmaFacts {
    /// Reads the RDMA stack from `root`.
    pub fn collect(root: &HostRoot) -> RdmaFacts {
        let configfs_devices = root.list(CONFIGFS_DIR).ok().flatten();
        RdmaFacts {
            devices: devices(root, configfs_devices.as_deref().unwrap_or_default()),
            verbs_abi: read_parsed(root, VERBS_ABI, str::parse::<u32>),
            mad_abi: read_parsed(root, MAD_ABI, str::parse::<u32>),
            device_nodes: root.list(DEV_DIR).map_err(Gap::from),
            // Unreadable or not, the device nodes cannot be judged: the
            // check says unknown either way.
            has_dev: root.exists("/dev/null").unwrap_or(false),
            configfs: configfs_devices.is_some(),
            peer_memory: peer_memory(root),
        }
    }

    /// The devices, or none when unknown.
    pub fn list(&self) -> &[RdmaDevice] {
        match &self.devices {
            Ok(Some(devices)) => devices,
            _ => &[],
        }
    }

    /// The devices backed by PCI function `address`.
    pub fn on_pci<'a>(&'a self, address: &'a str) -> impl Iterator<Item = &'a RdmaDevice> + 'a {
        self.list()
            .iter()
            .filter(move |d| d.pci.as_deref() == Some(address))
    }
}

fn peer_memory(root: &HostRoot) -> Fact<Vec<PeerMemoryClient>> {
    let Some(names) = root.list(PEER_MEMORY_DIR)? else {
        return Ok(None);
    };
    Ok(Some(
        names
            .into_iter()
            .take(MAX_PEER_CLIENTS)
            .map(|name| PeerMemoryClient {
                version: root
                    .read_value(&format!("{PEER_MEMORY_DIR}/{name}/version"))
                    .ok()
                    .flatten()
                    .filter(|v| !v.is_empty()),
                name,
            })
            .collect(),
    ))
}

fn devices(root: &HostRoot, configfs: &[String]) -> Fact<Vec<RdmaDevice>> {
    let Some(names) = root.list(CLASS_DIR)? else {
        return Ok(None);
    };
    let found = parallel_map(&names, |name| {
        // A dangling or looping class link (the device's directory was not
        // captured, or the device is going away) is not a device to judge;
        // one that did not answer in time may be, so the list is unknown.
        match root.canonical(&format!("{CLASS_DIR}/{name}")) {
            Ok(Some(real)) => Ok(Some(device(root, name, &real, configfs.contains(name)))),
            Err(err) if err.is_timeout() => Err(Gap::from(err)),
            Ok(None) | Err(_) => Ok(None),
        }
    });
    let mut devices: Vec<RdmaDevice> = found
        .into_iter()
        .collect::<Result<Vec<_>, Gap>>()?
        .into_iter()
        .flatten()
        .collect();
    devices.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Some(devices))
}

fn device(root: &HostRoot, name: &str, real: &str, in_configfs: bool) -> RdmaDevice {
    let dir = format!("{CLASS_DIR}/{name}");
    let value = |file: &str| {
        root.read_value(&format!("{dir}/{file}"))
            .ok()
            .flatten()
            .filter(|v| !v.is_empty())
    };
    // The real directory is `<pci function>/infiniband/<name>`: the function
    // is the component before `infiniband` (what the `device` link names).
    let pci = real
        .rsplit('/')
        .skip_while(|part| *part != "infiniband")
        .nth(1)
        .filter(|part| is_address(part))
        .map(str::to_owned);
    let netdevs = if pci.is_some() {
        root.list(&format!("{dir}/device/net"))
            .ok()
            .flatten()
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let ports = ports(root, name, &netdevs, in_configfs);
    RdmaDevice {
        name: name.to_owned(),
        node_type: value("node_type"),
        fw_ver: value("fw_ver"),
        board_id: value("board_id"),
        hca_type: value("hca_type"),
        pci,
        netdevs,
        ports,
    }
}

fn ports(
    root: &HostRoot,
    device: &str,
    netdevs: &[String],
    in_configfs: bool,
) -> Fact<Vec<RdmaPort>> {
    let dir = format!("{CLASS_DIR}/{device}/ports");
    let Some(names) = root.list(&dir)? else {
        return Ok(None);
    };
    let mut ports = Vec::new();
    for name in names {
        let Ok(number) = name.parse::<u32>() else {
            return Err(Gap::malformed(
                &format!("{dir}/{name}"),
                format!("`{}` is not a port number", clip(&name)),
            ));
        };
        ports.push(port(root, device, number, netdevs, in_configfs));
    }
    ports.sort_by_key(|p| p.number);
    Ok(Some(ports))
}

fn port(
    root: &HostRoot,
    device: &str,
    number: u32,
    netdevs: &[String],
    in_configfs: bool,
) -> RdmaPort {
    let dir = format!("{CLASS_DIR}/{device}/ports/{number}");
    let link_layer = read_parsed(root, &format!("{dir}/link_layer"), |t| {
        Ok::<_, String>(LinkLayer::parse(t))
    });
    let ethernet = matches!(link_layer, Ok(Some(LinkLayer::Ethernet)));
    let gids = if ethernet {
        gid_table(root, &dir)
    } else {
        Ok(None)
    };
    let gid_netdev = match &gids {
        Ok(Some(table)) => table.entries.iter().find_map(|e| e.ndev.clone()),
        _ => None,
    };
    let netdev = gid_netdev.or_else(|| port_netdev(root, netdevs, number));
    let roce_mode = if in_configfs {
        read_parsed(
            root,
            &format!("{CONFIGFS_DIR}/{device}/ports/{number}/default_roce_mode"),
            |t| Ok::<_, String>(GidType::parse(t)),
        )
    } else {
        Ok(None)
    };
    RdmaPort {
        number,
        state: read_parsed(root, &format!("{dir}/state"), PortState::parse),
        phys_state: read_parsed(root, &format!("{dir}/phys_state"), PhysState::parse),
        rate: read_parsed(root, &format!("{dir}/rate"), Rate::parse),
        link_layer,
        netdev,
        gids,
        roce_mode,
        counters: counters(root, &dir),
    }
}

/// Reads the judged counters of the port at `port_dir`: one listing per
/// directory, then only the files that exist.
fn counters(root: &HostRoot, port_dir: &str) -> Fact<PortCounters> {
    let mut found = PortCounters::default();
    for dir in [Dir::Counters, Dir::HwCounters] {
        let Some(names) = root.list(&format!("{port_dir}/{}", dir.name()))? else {
            continue;
        };
        match dir {
            Dir::Counters => found.has_counters = true,
            Dir::HwCounters => found.has_hw_counters = true,
        }
        for counter in rdma_counters::JUDGED
            .iter()
            .filter(|c| c.dir == dir && names.iter().any(|n| n == c.file))
        {
            // Newer kernels fail the read of a PortCounters file when the
            // device has no performance management agent; older ones print
            // `N/A (no PMA)`. Either way that counter is unknown, not the
            // port's others. A read that did not answer in time is.
            match root.read_value(&counter.path_in(port_dir)) {
                Ok(Some(text)) => match text.trim().parse::<u64>() {
                    Ok(value) => {
                        found.values.insert(counter.file, value);
                    }
                    Err(_) => found.unreadable.push(counter.file),
                },
                Ok(None) => {}
                Err(err) if err.is_timeout() => return Err(Gap::from(err)),
                Err(_) => found.unreadable.push(counter.file),
            }
        }
    }
    if found.has_counters || found.has_hw_counters {
        Ok(Some(found))
    } else {
        Ok(None)
    }
}

/// The netdev of port `number` among the function's netdevs: the only one,
/// or the one whose `dev_port` is `number - 1` (mlx4 puts both ports on one function).
fn port_netdev(root: &HostRoot, netdevs: &[String], number: u32) -> Option<String> {
    match netdevs {
        [] => None,
        [only] => Some(only.clone()),
        many => many
            .iter()
            .find(|name| {
                root.read_value(&format!("/sys/class/net/{name}/dev_port"))
                    .ok()
                    .flatten()
                    .and_then(|v| v.parse::<u32>().ok())
                    == Some(number.saturating_sub(1))
            })
            .cloned(),
    }
}

fn gid_table(root: &HostRoot, port_dir: &str) -> Fact<GidTable> {
    let gids_dir = format!("{port_dir}/gids");
    let mut table = GidTable {
        entries: Vec::new(),
        scanned: 0,
    };
    let mut unused_run = 0;
    // Entries are read in index order until one is missing (the end of the
    // table) or a run of unused ones; listing a 256-entry directory per port
    // would cost more than the entries in use.
    for index in 0..MAX_GIDS {
        if unused_run == GID_SCAN_GAP {
            break;
        }
        let path = format!("{gids_dir}/{index}");
        // Unused entries read as zeros; some drivers refuse the read instead.
        let gid = match root.read_value(&path) {
            Ok(Some(text)) => Gid::parse(&text).map_err(|err| {
                Gap::malformed(&path, format!("cannot parse `{}`: {err}", clip(&text)))
            })?,
            Ok(None) if index == 0 => return Ok(None),
            Ok(None) => break,
            Err(_) => Gid([0; 8]),
        };
        table.scanned += 1;
        if gid.is_zero() {
            unused_run += 1;
            continue;
        }
        unused_run = 0;
        table.entries.push(GidEntry {
            index,
            gid,
            kind: None,
            ndev: None,
        });
    }
    let attr = |kind: &str, index: u32| {
        root.read_value(&format!("{port_dir}/gid_attrs/{kind}/{index}"))
            .ok()
            .flatten()
            .filter(|v| !v.is_empty())
    };
    // The types of routable entries decide; link-local ones only matter
    // when no routable entry is RoCE v2. One netdev names the port.
    let mut routable_v2 = false;
    for entry in table.entries.iter_mut().filter(|e| !e.gid.is_link_local()) {
        entry.kind = attr("types", entry.index).map(|t| GidType::parse(&t));
        routable_v2 |= entry.kind == Some(GidType::RoceV2);
    }
    if !routable_v2 {
        for entry in table.entries.iter_mut().filter(|e| e.gid.is_link_local()) {
            entry.kind = attr("types", entry.index).map(|t| GidType::parse(&t));
        }
    }
    if let Some(first) = table.entries.first_mut() {
        first.ndev = attr("ndevs", first.index);
    }
    Ok(Some(table))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    use proptest::prelude::*;

    use super::*;

    fn write(base: &Path, path: &str, text: &str) {
        let path = base.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn bad_trees_become_gaps_not_panics() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        fs::create_dir_all(base.join("sys/class/infiniband")).unwrap();
        // A dangling class link and a link loop are not devices.
        symlink(
            "../../devices/gone/infiniband/ghost0",
            base.join("sys/class/infiniband/ghost0"),
        )
        .unwrap();
        symlink("loop1", base.join("sys/class/infiniband/loop0")).unwrap();
        symlink("loop0", base.join("sys/class/infiniband/loop1")).unwrap();
        // A port without `state`, a rate that is not a number, a GID that is not one.
        write(base, "sys/class/infiniband/mlx5_0/ports/1/rate", "fast\n");
        write(
            base,
            "sys/class/infiniband/mlx5_0/ports/1/link_layer",
            "Ethernet\n",
        );
        write(
            base,
            "sys/class/infiniband/mlx5_0/ports/1/gids/0",
            "not a gid\n",
        );
        write(
            base,
            "sys/class/infiniband/mlx5_0/ports/x/state",
            "4: ACTIVE\n",
        );
        write(
            base,
            "sys/class/infiniband/mlx5_1/ports/1/state",
            "4: ACTIVE\n",
        );
        write(
            base,
            "sys/class/infiniband/mlx5_1/ports/1/link_layer",
            "Ethernet\n",
        );
        for index in 0..20 {
            write(
                base,
                &format!("sys/class/infiniband/mlx5_1/ports/1/gids/{index}"),
                "0000:0000:0000:0000:0000:0000:0000:0000\n",
            );
        }
        let root = HostRoot::at(base).unwrap();
        let facts = RdmaFacts::collect(&root);
        let names: Vec<&str> = facts.list().iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, vec!["mlx5_0", "mlx5_1"]);
        // `ports/x` is not a port number: the device's ports are a gap.
        assert!(facts.list()[0].ports.is_err());
        let port = &facts.list()[1].port_list()[0];
        let table = port.gids.clone().unwrap().unwrap();
        assert!(table.entries.is_empty());
        assert_eq!(table.scanned, GID_SCAN_GAP);

        fs::remove_dir_all(base.join("sys/class/infiniband/mlx5_0/ports/x")).unwrap();
        let facts = RdmaFacts::collect(&root);
        let port = &facts.list()[0].port_list()[0];
        assert_eq!(port.state, Ok(None));
        assert!(
            port.rate
                .as_ref()
                .unwrap_err()
                .reason
                .contains("cannot parse `fast`")
        );
        assert!(
            port.gids
                .as_ref()
                .unwrap_err()
                .reason
                .contains("cannot parse `not a gid`")
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn any_port_files_are_read_without_panic(
            state in "(?s).{0,20}", phys in "(?s).{0,20}", rate in "(?s).{0,30}", layer in "(?s).{0,12}", gid in "(?s).{0,48}",
        ) {
            let dir = tempfile::tempdir().unwrap();
            let base = dir.path();
            for (file, text) in [("state", &state), ("phys_state", &phys), ("rate", &rate), ("link_layer", &layer), ("gids/0", &gid)] {
                write(base, &format!("sys/class/infiniband/mlx5_0/ports/1/{file}"), text);
            }
            write(base, "sys/class/infiniband/mlx5_0/ports/1/link_layer", if layer.len() % 2 == 0 { "Ethernet" } else { &layer });
            let facts = RdmaFacts::collect(&HostRoot::at(base).unwrap());
            prop_assert_eq!(facts.list().len(), 1);
        }
    }
}
