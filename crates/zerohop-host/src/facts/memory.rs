//! Meminfo (host-wide and per NUMA node), hugepage pools and transparent
//! hugepages.

use std::collections::BTreeMap;

use crate::facts::{Fact, Gap, read_parsed};
use crate::parse::meminfo::Meminfo;
use crate::parse::selected::selected;
use crate::root::HostRoot;

/// One hugepage pool of one size, host-wide or on one NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HugepagePool {
    /// Page size in KiB (2048, 1048576).
    pub size_kib: u64,
    /// `nr_hugepages`: pages reserved.
    pub total: Fact<u64>,
    /// `free_hugepages`: pages not in use.
    pub free: Fact<u64>,
}

impl HugepagePool {
    /// The reserved count when known.
    pub fn total_known(&self) -> Option<u64> {
        self.total.as_ref().ok().copied().flatten()
    }

    /// The free count when known.
    pub fn free_known(&self) -> Option<u64> {
        self.free.as_ref().ok().copied().flatten()
    }
}

/// Memory facts.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemoryFacts {
    /// `/proc/meminfo`.
    pub meminfo: Fact<Meminfo>,
    /// Host-wide pools from `/sys/kernel/mm/hugepages`.
    pub hugepages: Fact<Vec<HugepagePool>>,
    /// `/sys/kernel/mm/transparent_hugepage/enabled`, the option in effect.
    pub thp_enabled: Fact<String>,
    /// `/sys/kernel/mm/transparent_hugepage/defrag`, the option in effect.
    pub thp_defrag: Fact<String>,
    /// `MemTotal` of each NUMA node in KiB, from
    /// `/sys/devices/system/node/node<N>/meminfo`; nodes without the
    /// field are left out. `Ok(None)` when the node directory is absent.
    pub node_memtotal_kib: Fact<BTreeMap<u32, u64>>,
}

impl MemoryFacts {
    /// Reads the memory facts from `root`.
    pub fn collect(root: &HostRoot) -> MemoryFacts {
        MemoryFacts {
            meminfo: root
                .read("/proc/meminfo")
                .map(|text| text.map(|text| Meminfo::parse(&text)))
                .map_err(Gap::from),
            hugepages: pools(root, "/sys/kernel/mm/hugepages"),
            thp_enabled: choice(root, "/sys/kernel/mm/transparent_hugepage/enabled"),
            thp_defrag: choice(root, "/sys/kernel/mm/transparent_hugepage/defrag"),
            node_memtotal_kib: node_memtotal(root),
        }
    }

    /// `MemTotal` of `/proc/meminfo` in KiB, when read.
    pub fn total_kib(&self) -> Option<u64> {
        match &self.meminfo {
            Ok(Some(meminfo)) => meminfo.get("MemTotal"),
            _ => None,
        }
    }

    /// `MemTotal` of NUMA node `node` in KiB, when read.
    pub fn node_total_kib(&self, node: u32) -> Option<u64> {
        match &self.node_memtotal_kib {
            Ok(Some(nodes)) => nodes.get(&node).copied(),
            _ => None,
        }
    }

    /// The host-wide pool of `size_kib` pages, if the kernel has one.
    pub fn pool(&self, size_kib: u64) -> Option<&HugepagePool> {
        match &self.hugepages {
            Ok(Some(pools)) => pools.iter().find(|p| p.size_kib == size_kib),
            _ => None,
        }
    }
}

fn node_memtotal(root: &HostRoot) -> Fact<BTreeMap<u32, u64>> {
    const DIR: &str = "/sys/devices/system/node";
    let Some(names) = root.list(DIR)? else {
        return Ok(None);
    };
    let mut totals = BTreeMap::new();
    for (node, name) in names
        .iter()
        .filter_map(|name| Some((name.strip_prefix("node")?.parse::<u32>().ok()?, name)))
    {
        if let Some(text) = root.read(&format!("{DIR}/{name}/meminfo"))?
            && let Some(total) = Meminfo::parse(&text).get("MemTotal")
        {
            totals.insert(node, total);
        }
    }
    Ok(Some(totals))
}

/// Reads the `hugepages-<size>kB` pools under `dir`.
pub(crate) fn pools(root: &HostRoot, dir: &str) -> Fact<Vec<HugepagePool>> {
    let Some(names) = root.list(dir)? else {
        return Ok(None);
    };
    let mut pools: Vec<HugepagePool> = names
        .iter()
        .filter_map(|name| {
            let size_kib = name
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            let count =
                |file: &str| read_parsed(root, &format!("{dir}/{name}/{file}"), str::parse::<u64>);
            Some(HugepagePool {
                size_kib,
                total: count("nr_hugepages"),
                free: count("free_hugepages"),
            })
        })
        .collect();
    pools.sort_by_key(|pool| pool.size_kib);
    Ok(Some(pools))
}

fn choice(root: &HostRoot, path: &str) -> Fact<String> {
    match root.read_value(path)? {
        None => Ok(None),
        Some(text) => selected(&text)
            .map(|option| Some(option.to_owned()))
            .ok_or_else(|| Gap::empty(path)),
    }
}
