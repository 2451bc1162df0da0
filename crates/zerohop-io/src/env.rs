//! The machine facts recorded with every result: kernel, io_uring, locked
//! memory, huge pages, NUMA nodes and the GPU libraries found.

use serde::Serialize;
use zerohop_host::HostRoot;
use zerohop_host::facts::kernel;
use zerohop_host::facts::memory::MemoryFacts;
use zerohop_host::parse::cpuset::CpuSet;
use zerohop_known::memlock;
pub use zerohop_known::memlock::Memlock;

use crate::gpu::GpuEnvironment;

/// Facts about the machine the run happened on.
#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    /// `uname -r`.
    pub kernel: String,
    /// Online CPUs.
    pub cpus: usize,
    /// io_uring availability and features.
    pub io_uring: UringEnvironment,
    /// `RLIMIT_MEMLOCK` and `CAP_IPC_LOCK`.
    pub memlock: Memlock,
    /// Hugetlb pools and the THP mode.
    pub hugepages: HugepageEnvironment,
    /// NUMA nodes online, e.g. `[0, 1]`.
    pub numa_nodes: Vec<u32>,
    /// CUDA and cuFile.
    pub gpu: GpuEnvironment,
}

/// What io_uring offered.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UringEnvironment {
    /// `available`, or `unavailable` with the reason.
    pub status: String,
    /// `kernel.io_uring_disabled` (0 allowed, 1 privileged only, 2 off).
    pub disabled_sysctl: Option<u32>,
    /// `IORING_FEAT_*` flags the kernel reported.
    pub features: Vec<&'static str>,
    /// Opcodes the engine uses and whether the kernel supports them; an
    /// object from opcode name to `true` or `false` in the JSON document.
    #[serde(serialize_with = "as_object")]
    pub opcodes: Vec<(&'static str, bool)>,
}

/// Writes name–value pairs as one JSON object, in their order.
fn as_object<S: serde::Serializer>(
    pairs: &[(&'static str, bool)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(pairs.iter().map(|(name, value)| (*name, *value)))
}

/// One hugetlb pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HugepagePool {
    /// Page size in KiB.
    pub size_kib: u64,
    /// Pages reserved.
    pub total: u64,
    /// Pages free.
    pub free: u64,
}

/// Huge page facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HugepageEnvironment {
    /// The reserved pools.
    pub pools: Vec<HugepagePool>,
    /// Transparent huge page mode, e.g. `madvise`.
    pub thp: Option<String>,
}

/// A one-value file of the host, trimmed; absent when it cannot be read.
fn value(root: &HostRoot, path: &str) -> Option<String> {
    root.read_value(path).ok().flatten()
}

/// The locked-memory limits of this process. A limit that cannot be read
/// counts as 0 bytes, so that nothing is registered on a guess;
/// `CAP_IPC_LOCK` still lifts it.
pub fn memlock(root: &HostRoot) -> Memlock {
    match kernel::memlock(root) {
        Ok(Some(memlock)) => memlock,
        _ => Memlock {
            soft_bytes: Some(0),
            hard_bytes: Some(0),
            cap_ipc_lock: root
                .read("/proc/self/status")
                .ok()
                .flatten()
                .is_some_and(|status| memlock::has_cap_ipc_lock(&status)),
        },
    }
}

/// The NUMA nodes online, from the kernel's node list (`0-1`); none when
/// it cannot be read.
fn numa_nodes(root: &HostRoot) -> Vec<u32> {
    value(root, "/sys/devices/system/node/online")
        .and_then(|list| CpuSet::parse(&list).ok())
        .map(|nodes| nodes.0.into_iter().collect())
        .unwrap_or_default()
}

/// The host's hugetlb pools and THP mode, as the doctor reads them.
fn hugepages(root: &HostRoot) -> HugepageEnvironment {
    let memory = MemoryFacts::collect(root);
    let pools = match memory.hugepages {
        Ok(Some(pools)) => pools
            .iter()
            .map(|pool| HugepagePool {
                size_kib: pool.size_kib,
                // A count that cannot be read offers no pages.
                total: pool.total_known().unwrap_or(0),
                free: pool.free_known().unwrap_or(0),
            })
            .collect(),
        _ => Vec::new(),
    };
    HugepageEnvironment {
        pools,
        thp: memory.thp_enabled.ok().flatten(),
    }
}

impl Environment {
    /// Reads the machine facts through `root`; io_uring and GPU facts are
    /// filled in by the engine, which probes them.
    pub fn probe(root: &HostRoot) -> Environment {
        Environment {
            kernel: value(root, "/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            io_uring: UringEnvironment {
                disabled_sysctl: value(root, "/proc/sys/kernel/io_uring_disabled")
                    .and_then(|s| s.parse().ok()),
                ..UringEnvironment::default()
            },
            memlock: memlock(root),
            hugepages: hugepages(root),
            numa_nodes: numa_nodes(root),
            gpu: GpuEnvironment::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// A host tree holding `files` (path under the root, content).
    fn host(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        dir
    }

    fn probe(dir: &Path) -> Environment {
        Environment::probe(&HostRoot::at(dir).unwrap())
    }

    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
        Max locked memory         65536                131072               bytes     \n";

    #[test]
    fn the_facts_are_read_from_the_root() {
        let dir = host(&[
            ("proc/sys/kernel/osrelease", "6.8.0-45-generic\n"),
            ("proc/sys/kernel/io_uring_disabled", "1\n"),
            ("proc/self/limits", LIMITS),
            ("proc/self/status", "CapEff:\t0000000000000000\n"),
            ("sys/devices/system/node/online", "0-1,3\n"),
            (
                "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
                "8\n",
            ),
            (
                "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
                "6\n",
            ),
            (
                "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
                "1\n",
            ),
            (
                "sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages",
                "0\n",
            ),
            (
                "sys/kernel/mm/transparent_hugepage/enabled",
                "always [madvise] never\n",
            ),
        ]);
        let env = probe(dir.path());
        assert_eq!(env.kernel, "6.8.0-45-generic");
        assert_eq!(env.io_uring.disabled_sysctl, Some(1));
        assert_eq!(
            env.memlock,
            Memlock {
                soft_bytes: Some(65536),
                hard_bytes: Some(131072),
                cap_ipc_lock: false,
            }
        );
        assert_eq!(env.numa_nodes, vec![0, 1, 3]);
        assert_eq!(
            env.hugepages,
            HugepageEnvironment {
                pools: vec![
                    HugepagePool {
                        size_kib: 2048,
                        total: 8,
                        free: 6,
                    },
                    HugepagePool {
                        size_kib: 1 << 20,
                        total: 1,
                        free: 0,
                    },
                ],
                thp: Some("madvise".into()),
            }
        );
    }

    #[test]
    fn an_unreadable_memlock_limit_allows_nothing_but_the_capability_lifts_it() {
        let without = host(&[("proc/self/status", "CapEff:\t0000000000000000\n")]);
        assert_eq!(probe(without.path()).memlock.budget(), Some(0));
        // Bit 14 of CapEff is CAP_IPC_LOCK.
        let with = host(&[("proc/self/status", "CapEff:\t0000000000004000\n")]);
        assert_eq!(probe(with.path()).memlock.budget(), None);
    }

    #[test]
    fn a_bare_root_is_described_without_guesses() {
        let dir = host(&[]);
        let env = probe(dir.path());
        assert_eq!(env.kernel, "unknown");
        assert_eq!(env.io_uring.disabled_sysctl, None);
        assert!(env.numa_nodes.is_empty());
        assert!(env.hugepages.pools.is_empty());
        assert_eq!(env.hugepages.thp, None);
    }

    #[test]
    fn this_machine_is_described() {
        let env = Environment::probe(&HostRoot::live());
        assert!(!env.kernel.is_empty());
        assert!(env.cpus >= 1);
    }
}
