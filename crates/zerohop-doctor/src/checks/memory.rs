//! Hugepage pools per NUMA node, THP, locked memory.

use std::collections::BTreeSet;

use zerohop_core::Remediation;
use zerohop_host::facts::Memlock;

use crate::checks::{absent, bytes, need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::write_to;

const GIB_KIB: u64 = 1 << 20;

/// The memlock limit under which RDMA registration of large buffers fails.
pub(crate) const MEMLOCK_MIN: u64 = 16 << 30;

/// How many 1 GiB pages the doctor suggests reserving out of a memory of
/// `total_kib`: half of it, whole pages. Pages reserved at boot leave
/// the kernel, the page cache and every process that does not ask for
/// hugepages for good, so a suggestion keeps the other half for them.
pub(crate) fn gib_pages_to_suggest(total_kib: u64) -> u64 {
    total_kib / GIB_KIB / 2
}

/// A `MemTotal` in KiB as GiB with one decimal: `15.5 GiB`.
pub(crate) fn memory_gib(total_kib: u64) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a memory size shown to one decimal of a GiB"
    )]
    let gib = total_kib as f64 / GIB_KIB as f64;
    format!("{gib:.1} GiB")
}

/// The memory the suggestion for `node` is sized by: the node's own
/// `MemTotal`, else (for a host without node files) the host's.
pub(crate) fn memory_of(facts: &zerohop_host::Facts, node: Option<u32>) -> Option<(u64, String)> {
    if let Some(node) = node
        && let Some(total) = facts.memory.node_total_kib(node)
    {
        return Some((
            total,
            format!("/sys/devices/system/node/node{node}/meminfo"),
        ));
    }
    facts
        .memory
        .total_kib()
        .map(|total| (total, "/proc/meminfo".to_owned()))
}

declare_check! {
    /// Each NUMA node that hosts a GPU or NIC has 1 GiB hugepages.
    ///
    /// ## What it checks
    /// When the host has a 1 GiB hugepage pool (or the profile expects
    /// one), reads
    /// `/sys/devices/system/node/node<N>/hugepages/hugepages-1048576kB/nr_hugepages`
    /// for every node that an NVIDIA GPU or a network controller (not a VF)
    /// reports in its `numa_node` (every node when none reports one),
    /// against the profile's per-node expectation (fail) or, without one,
    /// against one page (warn). A fix never asks for more pages than the
    /// node's `MemTotal` (`node<N>/meminfo`) holds.
    ///
    /// ## Why it matters
    /// Pods pinned to a node by the Topology Manager take hugepages from that
    /// node. A pool that sits on the other socket makes them pending, or puts
    /// every RDMA buffer across the inter-socket link from its NIC.
    ///
    /// ## How to fix
    /// Reserve per node on the command line (`hugepages=0:16,1:16` after
    /// `hugepagesz=1G`, Linux 5.7 and later), or at run time with
    /// `echo 16 > /sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages`
    /// right after boot.
    ///
    /// ## Evidence
    /// `/sys/devices/system/node/node<N>/hugepages/hugepages-1048576kB/nr_hugepages`
    /// of the nodes `numa_node` of the GPUs and NICs names, and
    /// `node<N>/meminfo` for the size of a fix. Without the NUMA directory it is
    /// `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `mm/hugetlb.c` (`hugetlb_register_node`, and the boot
    /// reservation spread over `N_MEMORY` nodes by `for_each_node_mask_to_alloc`);
    /// `Documentation/admin-guide/mm/hugetlbpage.rst`.
    /// Real capture: crates/zerohop-doctor/tests/corpus_foundation.rs::telegraf_hugepage_pools_per_node
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/MEM001/fail-below-profile/`:
    ///
    /// ```text
    /// memory
    ///   fail           MEM001  hugepages-missing-on-node  node0: 2 1 GiB hugepages on node 0 that hosts gpus or nics, 4 needed
    ///                  /sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages = 2
    ///   fail           MEM001  hugepages-missing-on-node  node1: 2 1 GiB hugepages on node 1 that hosts gpus or nics, 4 needed
    ///                  /sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages = 2
    ///
    /// what to fix first
    ///   1. MEM001 hugepages-missing-on-node (node0): 2 1 GiB hugepages on node 0 that hosts gpus or nics, 4 needed
    ///      fix: reserve 1 GiB hugepages on every node that hosts a gpu or nic
    ///        echo 4 > /sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages
    ///   2. MEM001 hugepages-missing-on-node (node1): 2 1 GiB hugepages on node 1 that hosts gpus or nics, 4 needed
    ///      fix: reserve 1 GiB hugepages on every node that hosts a gpu or nic
    ///        echo 4 > /sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages
    /// ```
    pub static HUGEPAGES_MISSING_ON_NODE = {
        id: "MEM001",
        name: "hugepages-missing-on-node",
        group: Memory,
        severity: Error,
        requires: [],
        run: hugepages_on_nodes,
    };
}

fn hugepages_on_nodes(ctx: &Context<'_>) -> Vec<Outcome> {
    let facts = ctx.facts;
    let total = facts
        .memory
        .pool(GIB_KIB)
        .and_then(|p| p.total_known())
        .unwrap_or(0);
    let expected = ctx.profile.hugepages_1g_per_node;
    if total == 0 && expected.is_none() {
        return vec![Outcome::not_applicable(
            "no 1 GiB hugepages reserved (see KRN002)",
        )];
    }
    let nodes = need!(require(&facts.numa, || Outcome::unknown(
        "/sys/devices/system/node is absent: numa layout unknown"
    )));
    let device_nodes: BTreeSet<u32> = facts
        .pci
        .list()
        .iter()
        .filter(|d| (d.is_nvidia_gpu() || d.is_nic()) && !d.is_vf())
        .filter_map(|d| d.numa_node.as_ref().ok().copied().flatten())
        .filter_map(|n| u32::try_from(n).ok())
        .collect();
    let judged: Vec<_> = nodes
        .iter()
        .filter(|n| device_nodes.is_empty() || device_nodes.contains(&n.id))
        .collect();
    judged
        .into_iter()
        .map(|node| {
            let path = format!(
                "/sys/devices/system/node/node{}/hugepages/hugepages-1048576kB/nr_hugepages",
                node.id
            );
            let subject = format!("node{}", node.id);
            let got = match node.pool(GIB_KIB).map(|p| &p.total) {
                Some(Err(gap)) => return Outcome::gap(gap).subject(subject),
                Some(Ok(Some(n))) => *n,
                _ => 0,
            };
            let need = expected.unwrap_or(1);
            if got >= need {
                return Outcome::pass(format!("{got} 1 GiB hugepages on node {}", node.id))
                    .subject(subject);
            }
            let message = format!(
                "{got} 1 GiB hugepages on node {} that hosts gpus or nics, {need} needed",
                node.id
            );
            let outcome = if expected.is_some() {
                Outcome::fail(message)
            } else {
                Outcome::warn(message)
            };
            let outcome = outcome.evidence(&path, got.to_string());
            // The node's memory bounds what can be reserved on it.
            let fix = match memory_of(facts, Some(node.id)) {
                Some((total, source)) if total / GIB_KIB <= need => {
                    return outcome
                        .evidence(source, format!("MemTotal {}", memory_gib(total)))
                        .fix(Remediation::new(format!(
                            "node {} has {} of memory: {need} 1 GiB pages do not fit; lower the expectation or move the gpus and nics' workloads to a larger node",
                            node.id,
                            memory_gib(total)
                        )))
                        .subject(subject);
                }
                _ => Remediation::new("reserve 1 GiB hugepages on every node that hosts a gpu or nic")
                    .command(write_to(&need.to_string(), &path)),
            };
            outcome.fix(fix).subject(subject)
        })
        .collect()
}

declare_check! {
    /// Reserved hugepage pools still have free pages.
    ///
    /// ## What it checks
    /// `nr_hugepages` and `free_hugepages` of every pool in
    /// `/sys/kernel/mm/hugepages`.
    ///
    /// ## Why it matters
    /// A pool with no free page makes new pods that request hugepages fail
    /// to start, and DPDK or RDMA applications fall back to small pages or
    /// abort. It often means a leaked reservation from a crashed workload.
    ///
    /// ## How to fix
    /// Find the holders (`grep -l huge /proc/*/maps`, hugetlbfs mounts with
    /// leftover files), clean them up, or grow the pool.
    ///
    /// ## Evidence
    /// `nr_hugepages` and `free_hugepages` under `/sys/kernel/mm/hugepages`.
    /// The directory absent from a capture is `unknown` (not captured, or no
    /// hugetlbfs); absent on the live host, the kernel has no pools.
    ///
    /// ## Source
    /// linux v6.12 `mm/hugetlb.c` (`hugetlb_sysfs_init`, `nr_hugepages_show`,
    /// `free_hugepages_show`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_foundation.rs::telegraf_hugepage_pools_per_node
    /// Real capture: crates/zerohop-doctor/tests/corpus_gaps.rs::gb10_capture_without_class_net_or_kernel_mm_is_unknown
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/MEM002/warn-exhausted/`:
    ///
    /// ```text
    /// memory
    ///   warn           MEM002  hugepages-exhausted  1 GiB pool: all 16 1 GiB hugepages are in use
    ///                  /sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages = 0
    ///
    /// what to fix first
    ///   1. MEM002 hugepages-exhausted (1 GiB pool): all 16 1 GiB hugepages are in use
    ///      fix: free leaked hugepages or grow the pool
    ///        grep -l huge /proc/[0-9]*/maps
    /// ```
    pub static HUGEPAGES_EXHAUSTED = {
        id: "MEM002",
        name: "hugepages-exhausted",
        group: Memory,
        severity: Warning,
        requires: [],
        run: hugepages_exhausted,
    };
}

fn hugepages_exhausted(ctx: &Context<'_>) -> Vec<Outcome> {
    let pools = need!(require(&ctx.facts.memory.hugepages, || {
        absent(
            ctx,
            "/sys/kernel/mm/hugepages",
            "the kernel has no hugepage pools",
        )
    }));
    let outcomes: Vec<Outcome> = pools
        .iter()
        .filter(|pool| pool.total_known().unwrap_or(0) > 0 || pool.total.is_err())
        .map(|pool| {
            let size = bytes(pool.size_kib * 1024);
            let dir = format!("/sys/kernel/mm/hugepages/hugepages-{}kB", pool.size_kib);
            match (&pool.total, &pool.free) {
                (Err(gap), _) | (_, Err(gap)) => Outcome::gap(gap),
                (Ok(Some(total)), Ok(Some(0))) => {
                    Outcome::warn(format!("all {total} {size} hugepages are in use"))
                        .evidence(format!("{dir}/free_hugepages"), "0")
                        .fix(
                            Remediation::new("free leaked hugepages or grow the pool")
                                .command("grep -l huge /proc/[0-9]*/maps"),
                        )
                }
                (Ok(Some(total)), Ok(Some(free))) => {
                    Outcome::pass(format!("{free} of {total} {size} hugepages free"))
                }
                _ => Outcome::unknown(format!("{size} pool has no free_hugepages file")),
            }
            .subject(format!("{size} pool"))
        })
        .collect();
    if outcomes.is_empty() {
        return vec![Outcome::not_applicable("no hugepages reserved")];
    }
    outcomes
}

declare_check! {
    /// Reports the transparent hugepage policy.
    ///
    /// ## What it checks
    /// The selected option in `/sys/kernel/mm/transparent_hugepage/enabled`
    /// and `defrag`.
    ///
    /// ## Why it matters
    /// With `always`, khugepaged compacts memory in the background and page
    /// faults may stall on compaction, which shows up as latency spikes in
    /// polling data-path threads. `madvise` or `never` leave large pages to
    /// the applications that ask for them.
    ///
    /// ## How to fix
    /// Set `transparent_hugepage=madvise` on the kernel command line, or
    /// `echo madvise > /sys/kernel/mm/transparent_hugepage/enabled`.
    ///
    /// ## Evidence
    /// The bracketed choice of `/sys/kernel/mm/transparent_hugepage/enabled`
    /// and `defrag`. Absent from a capture is `unknown`; absent on the live host,
    /// the kernel was built without transparent hugepages.
    ///
    /// ## Source
    /// linux v6.12 `mm/huge_memory.c` (`enabled_show`, `defrag_show`) and
    /// `Documentation/admin-guide/mm/transhuge.rst`.
    /// Real capture: crates/zerohop-doctor/tests/corpus_gaps.rs::gb10_capture_without_class_net_or_kernel_mm_is_unknown
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/MEM003/info-always/`:
    ///
    /// ```text
    /// memory
    ///   info           MEM003  thp-always  transparent hugepages always on: compaction can stall data-path threads
    /// ```
    pub static THP_POLICY = {
        id: "MEM003",
        name: "thp-always",
        group: Memory,
        severity: Info,
        requires: [],
        run: thp_policy,
    };
}

fn thp_policy(ctx: &Context<'_>) -> Vec<Outcome> {
    const PATH: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
    let enabled = need!(require(&ctx.facts.memory.thp_enabled, || {
        absent(ctx, PATH, "the kernel has no transparent hugepages")
    }));
    let defrag = ctx
        .facts
        .memory
        .thp_defrag
        .as_ref()
        .ok()
        .cloned()
        .flatten()
        .unwrap_or_else(|| "<unknown>".to_owned());
    let outcome = if enabled == "always" {
        Outcome::info("transparent hugepages always on: compaction can stall data-path threads")
            .fix(Remediation::new("prefer madvise").command(write_to("madvise", PATH)))
    } else {
        Outcome::pass(format!("transparent hugepages {enabled}"))
    };
    vec![
        outcome
            .evidence(PATH, enabled.as_str())
            .evidence("/sys/kernel/mm/transparent_hugepage/defrag", defrag),
    ]
}

declare_check! {
    /// The locked-memory limit allows registering RDMA buffers.
    ///
    /// ## What it checks
    /// The soft `Max locked memory` of this process in `/proc/self/limits`
    /// and `CAP_IPC_LOCK` in `CapEff` of `/proc/self/status`: unlimited, or
    /// any limit with the capability (which lifts it), passes; less than
    /// 16 GiB warns where RDMA is on the data path (as RDMA001 decides:
    /// a device, an RDMA mount or module, or the profile); elsewhere it is
    /// information. Only on the live host: in a
    /// container it is the container's limit, which is what workloads get.
    ///
    /// ## Why it matters
    /// RDMA memory registration pins pages and counts them against
    /// `RLIMIT_MEMLOCK`. A small limit makes `ibv_reg_mr` fail with ENOMEM,
    /// and NCCL or UCX fall back to slower paths or fail outright.
    ///
    /// ## How to fix
    /// Set `memlock` to `unlimited` in `/etc/security/limits.conf` (hosts),
    /// `LimitMEMLOCK=infinity` (systemd services), or give pods the
    /// `IPC_LOCK` capability (Kubernetes).
    ///
    /// ## Evidence
    /// `Max locked memory` of `/proc/self/limits` and `CapEff` of
    /// `/proc/self/status`, of this process only: on another root it does not
    /// apply.
    ///
    /// ## Source
    /// linux v6.12 `fs/proc/base.c` (`proc_pid_limits`), `mm/mlock.c`
    /// (`can_do_mlock`: `CAP_IPC_LOCK` lifts `RLIMIT_MEMLOCK`) and
    /// `drivers/infiniband/core/umem.c` (`ib_umem_get` pins against
    /// `RLIMIT_MEMLOCK` unless `CAP_IPC_LOCK`).
    /// Real capture: crates/zerohop-doctor/tests/live_probes.rs::this_machine_is_judged_by_what_its_kernel_answered
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/MEM004/not-applicable-not-live/`:
    ///
    /// ```text
    /// memory
    ///   not-applicable MEM004  memlock-too-low  memlock is a property of the running process: only checked on the live host
    /// ```
    pub static MEMLOCK_TOO_LOW = {
        id: "MEM004",
        name: "memlock-too-low",
        group: Memory,
        severity: Warning,
        requires: [],
        run: memlock,
    };
}

fn memlock(ctx: &Context<'_>) -> Vec<Outcome> {
    const PATH: &str = "/proc/self/limits";
    let Some(fact) = &ctx.facts.kernel.memlock else {
        return vec![Outcome::not_applicable(
            "memlock is a property of the running process: only checked on the live host",
        )];
    };
    let limit = need!(require(fact, || Outcome::unknown(
        "/proc/self/limits is absent"
    )));
    let evidence = |limit: &Memlock| {
        let soft = limit
            .soft_bytes
            .map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
        if limit.cap_ipc_lock {
            format!("{soft} (CAP_IPC_LOCK in CapEff of /proc/self/status)")
        } else {
            soft
        }
    };
    vec![match (limit.budget(), limit.cap_ipc_lock) {
        (None, true) => Outcome::pass("CAP_IPC_LOCK lifts the memlock limit").evidence(PATH, evidence(limit)),
        (None, false) => Outcome::pass("memlock unlimited").evidence(PATH, "unlimited"),
        (Some(n), _) if n >= MEMLOCK_MIN => Outcome::pass(format!("memlock {}", bytes(n))).evidence(PATH, n.to_string()),
        // Without RDMA on this host, a small limit harms nothing yet.
        (Some(n), _) if !crate::checks::rdma::wants_rdma(ctx) => {
            Outcome::info(format!("memlock limit {}: too small for rdma registration if rdma is added", bytes(n)))
                .evidence(PATH, n.to_string())
        }
        (Some(n), _) => Outcome::warn(format!("memlock limit {} is below {}: rdma registration of large buffers fails", bytes(n), bytes(MEMLOCK_MIN)))
            .evidence(PATH, n.to_string())
            .fix(Remediation::new("raise the memlock limit to unlimited, or grant CAP_IPC_LOCK")
                .command("echo '* - memlock unlimited' >> /etc/security/limits.conf")
                .command("# systemd: LimitMEMLOCK=infinity; Kubernetes: securityContext.capabilities.add: [IPC_LOCK]")),
    }]
}

#[cfg(test)]
mod tests {
    use zerohop_core::Status;
    use zerohop_host::{Facts, HostRoot};

    use super::*;
    use crate::profile::Profile;

    /// Memlock is read from the live process only, so a fixture root cannot
    /// show it; judge a collected model with the limit set by hand.
    fn judge(limit: Memlock, rdma: bool) -> Status {
        let dir = tempfile::tempdir().unwrap();
        let mut facts = Facts::collect(&HostRoot::at(dir.path()).unwrap());
        facts.kernel.memlock = Some(Ok(Some(limit)));
        let profile = Profile {
            rdma: Some(rdma),
            ..Profile::default()
        };
        let outcomes = memlock(&Context {
            facts: &facts,
            profile: &profile,
        });
        assert_eq!(outcomes.len(), 1);
        outcomes[0].status
    }

    fn limit(soft_bytes: Option<u64>, cap_ipc_lock: bool) -> Memlock {
        Memlock {
            soft_bytes,
            hard_bytes: soft_bytes,
            cap_ipc_lock,
        }
    }

    #[test]
    fn memlock_thresholds() {
        // The fix MEM004 recommends for pods, CAP_IPC_LOCK, makes it pass.
        assert_eq!(judge(limit(Some(8 << 20), true), true), Status::Pass);
        assert_eq!(judge(limit(None, false), true), Status::Pass);
        assert_eq!(judge(limit(Some(MEMLOCK_MIN), false), true), Status::Pass);
        // 8 MiB is the default of many distributions.
        assert_eq!(judge(limit(Some(8 << 20), false), true), Status::Warn);
        // The same limit on a host without RDMA is only worth knowing.
        assert_eq!(judge(limit(Some(8 << 20), false), false), Status::Info);
    }
}
