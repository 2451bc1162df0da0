//! The bench reads a captured host as it reads the live one: through a
//! `HostRoot`, with the host layer's parsers. Real captures from
//! `../shared/corpus` (hwloc's Linux test snapshots, see its `SOURCES.md`).

use zerohop_testkit::shared_data as support;

use zerohop_host::HostRoot;
use zerohop_io::buffers::{Arena, BufferKind, HugePages};
use zerohop_io::env::Environment;

/// hwloc's snapshot of a host with a 2 MiB and a 16 GiB hugetlb pool.
const HUGEPAGE_POOLS: &str = "hwloc_linux_snapshot_2i386-2t-hugepagesizecount.tar.bz2";
/// hwloc's snapshot of a POWER9 host whose GPUs' memory are NUMA nodes.
const GPU_NUMA_NODES: &str = "hwloc_linux_snapshot_nvidiagpunumanodes.tar.bz2";

#[test]
fn the_hugepage_pools_of_a_captured_host() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::untar(&corpus.join(HUGEPAGE_POOLS));
    let root = HostRoot::at(dir.path().join("2i386-2t-hugepagesizecount")).unwrap();
    let env = Environment::probe(&root);
    let pools: Vec<(u64, u64, u64)> = env
        .hugepages
        .pools
        .iter()
        .map(|p| (p.size_kib, p.total, p.free))
        .collect();
    // sys/kernel/mm/hugepages holds hugepages-2048kB and
    // hugepages-16777216kB, each with nr_hugepages 1 and free_hugepages 0;
    // pools are listed by page size.
    assert_eq!(pools, vec![(2048, 1, 0), (16_777_216, 1, 0)]);
    // The capture has no proc/self/limits: a limit that cannot be read
    // allows nothing, and no CapEff line grants CAP_IPC_LOCK.
    assert_eq!(env.memlock.budget(), Some(0));
}

#[test]
fn hugetlb_is_passed_over_when_the_captured_host_has_none_free() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::untar(&corpus.join(HUGEPAGE_POOLS));
    let root = HostRoot::at(dir.path().join("2i386-2t-hugepagesizecount")).unwrap();
    let mut notes = Vec::new();
    let arena = Arena::allocate(&root, 4 << 20, HugePages::Auto, None, &mut notes).unwrap();
    // free_hugepages is 0 in the 2 MiB pool and there is no 1 GiB pool at
    // all (its count reads as none free): the buffers are anonymous memory,
    // whatever this machine has reserved.
    assert_eq!(arena.kind(), BufferKind::Anonymous);
    let reasons: Vec<&str> = notes
        .iter()
        .filter(|n| n.feature == "hugepages")
        .map(|n| n.reason.as_str())
        .collect();
    assert_eq!(
        reasons,
        vec![
            "no reserved hugetlb pool could hold the buffers (1 GiB pages: 1 needed, 0 free; 2 MiB pages: 2 needed, 0 free); 4 KiB pages used"
        ]
    );
}

#[test]
fn the_numa_nodes_of_a_captured_host() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::untar(&corpus.join(GPU_NUMA_NODES));
    let root = HostRoot::at(dir.path().join("nvidiagpunumanodes")).unwrap();
    let env = Environment::probe(&root);
    // sys/devices/system/node/online is `0,8,250-255`: the two sockets and
    // the six GPUs' memory.
    assert_eq!(env.numa_nodes, vec![0, 8, 250, 251, 252, 253, 254, 255]);
}
