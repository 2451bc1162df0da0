//! The machine facts recorded with every result: kernel, io_uring, locked
//! memory, huge pages, NUMA nodes and the GPU libraries found.

use std::path::Path;

use serde::Serialize;

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

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// The locked-memory limits from `/proc/self/limits` and `/proc/self/status`;
/// a limit that cannot be read counts as 0 bytes, so that nothing is
/// registered on a guess.
pub fn parse_memlock(limits: &str, status: &str) -> Memlock {
    let (soft_bytes, hard_bytes) = memlock::parse_limits(limits).unwrap_or((Some(0), Some(0)));
    Memlock {
        soft_bytes,
        hard_bytes,
        cap_ipc_lock: memlock::has_cap_ipc_lock(status),
    }
}

/// Parses a kernel CPU or node list such as `0-3,8,10-11`.
pub fn parse_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>())
                    && a <= b
                    && b - a < 65_536
                {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.trim().parse::<u32>().ok()),
        }
    }
    out
}

fn hugepage_pools() -> Vec<HugepagePool> {
    let Ok(dir) = std::fs::read_dir("/sys/kernel/mm/hugepages") else {
        return Vec::new();
    };
    let mut pools: Vec<HugepagePool> = dir
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let size_kib = name
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            let num = |f: &str| {
                std::fs::read_to_string(Path::new(&entry.path()).join(f))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0)
            };
            Some(HugepagePool {
                size_kib,
                total: num("nr_hugepages"),
                free: num("free_hugepages"),
            })
        })
        .collect();
    pools.sort_by_key(|p| p.size_kib);
    pools
}

/// The THP mode is the bracketed word of `always [madvise] never`.
fn thp_mode(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')?;
    Some(text[start + 1..start + end].to_owned())
}

impl Environment {
    /// Reads the machine facts; io_uring and GPU facts are filled in by the
    /// engine, which probes them.
    pub fn probe() -> Environment {
        let memlock = parse_memlock(
            &read("/proc/self/limits").unwrap_or_default(),
            &read("/proc/self/status").unwrap_or_default(),
        );
        Environment {
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            io_uring: UringEnvironment {
                disabled_sysctl: read("/proc/sys/kernel/io_uring_disabled")
                    .and_then(|s| s.parse().ok()),
                ..UringEnvironment::default()
            },
            memlock,
            hugepages: HugepageEnvironment {
                pools: hugepage_pools(),
                thp: read("/sys/kernel/mm/transparent_hugepage/enabled").and_then(|s| thp_mode(&s)),
            },
            numa_nodes: read("/sys/devices/system/node/online")
                .map(|s| parse_list(&s))
                .unwrap_or_default(),
            gpu: GpuEnvironment::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_unreadable_memlock_limit_allows_nothing() {
        let memlock = parse_memlock("", "CapEff:\t0000000000000000\n");
        assert_eq!(memlock.budget(), Some(0));
        assert_eq!(
            parse_memlock("", "CapEff:\t0000000000004000\n").budget(),
            None
        );
    }

    #[test]
    fn lists_and_thp_modes_are_parsed() {
        assert_eq!(parse_list("0-2,5\n"), vec![0, 1, 2, 5]);
        assert_eq!(parse_list(""), Vec::<u32>::new());
        assert_eq!(thp_mode("always [madvise] never"), Some("madvise".into()));
    }

    #[test]
    fn this_machine_is_described() {
        let env = Environment::probe();
        assert!(!env.kernel.is_empty());
        assert!(env.cpus >= 1);
    }

    proptest! {
        #[test]
        fn parsers_never_panic(text in ".{0,80}") {
            let _ = parse_list(&text);
            let _ = parse_memlock(&text, &text);
            let _ = thp_mode(&text);
        }
    }
}
