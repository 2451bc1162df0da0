//! NUMA nodes, their CPUs and hugepage pools.

use crate::facts::memory::{HugepagePool, pools};
use crate::facts::{Fact, GapKind, read_parsed};
use crate::parse::cpuset::CpuSet;
use crate::root::HostRoot;

/// One NUMA node.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NumaNode {
    /// Node number.
    pub id: u32,
    /// `cpulist`: the node's CPUs (empty for memory-only nodes such as GPU memory).
    pub cpus: Fact<CpuSet>,
    /// The node's hugepage pools.
    pub hugepages: Fact<Vec<HugepagePool>>,
}

impl NumaNode {
    /// The node's pool of `size_kib` pages.
    pub fn pool(&self, size_kib: u64) -> Option<&HugepagePool> {
        match &self.hugepages {
            Ok(Some(pools)) => pools.iter().find(|p| p.size_kib == size_kib),
            _ => None,
        }
    }
}

/// Reads `/sys/devices/system/node/node*`.
pub(crate) fn collect(root: &HostRoot) -> Fact<Vec<NumaNode>> {
    const DIR: &str = "/sys/devices/system/node";
    let Some(names) = root.list(DIR)? else {
        return Ok(None);
    };
    let mut nodes: Vec<NumaNode> = names
        .iter()
        .filter_map(|name| {
            let id: u32 = name.strip_prefix("node")?.parse().ok()?;
            let dir = format!("{DIR}/{name}");
            Some(NumaNode {
                id,
                cpus: read_parsed(root, &format!("{dir}/cpulist"), |text: &str| {
                    CpuSet::parse(text)
                })
                .or_else(|gap| {
                    if gap.kind == GapKind::Empty {
                        Ok(Some(CpuSet::default()))
                    } else {
                        Err(gap)
                    }
                }),
                hugepages: pools(root, &format!("{dir}/hugepages")),
            })
        })
        .collect();
    nodes.sort_by_key(|node| node.id);
    Ok(Some(nodes))
}
