//! Judgements of nccl-tests output and `NCCL_DEBUG` logs.

mod below_rdma;
mod link_type;

use zerohop_core::{Finding, Remediation, Status};
use zerohop_known::nccl::IB_HCA;

use crate::declare_judgement;
use crate::judge::{Capture, Expectations, Verdict, grade, percent, rate};
use crate::nccl::NcclOutput;
use crate::nccl::collective::Collective;
use crate::nccl::log::NcclLog;
use crate::nccl::results::{FailureKind, TestRun};
use crate::nccl::version::{NcclVersion, path_type_name};
use crate::text::size_text;
use crate::verbs;

const DEBUG_COMMAND: &str = "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET all_reduce_perf -b 8 -e 8G -f 2 -g 1 2>&1 | tee nccl.log && zerohop validate parse nccl.log";

declare_judgement! {
    /// NCCL moves data between nodes over RDMA, not TCP sockets.
    ///
    /// ## What it checks
    /// The network NCCL picked (`Using network IB`, `Using network Socket`,
    /// or a plugin such as `AWS Libfabric`) and the transport of every
    /// channel that leaves the node (`Channel 00/0 : 3[3] -> 7[3] [send] via
    /// NET/IB/0/GDRDMA`). Needs `NCCL_DEBUG=INFO` with the `INIT` and `NET`
    /// subsystems.
    /// NCCL prints the channel lines in `src/transport/net.cc` and `Using
    /// network` when it loads its network (`src/init.cc`; both at
    /// NVIDIA/nccl v2.27.3-1).
    ///
    /// ## Why it matters
    /// When NCCL finds no usable RDMA device it silently falls back to
    /// `NET/Socket`: TCP through the kernel and host memory, a tenth of the
    /// bandwidth or less, and the job still runs. Only the log shows it.
    /// On an InfiniBand fabric the sockets run over IP over InfiniBand
    /// (`NET/Socket : Using [0]ib0:…`, named by the finding): the fabric is
    /// there, its RDMA is not used.
    ///
    /// ## How to fix
    /// Make the RDMA devices visible to NCCL: request the RDMA or SR-IOV
    /// resource in the pod so that `/dev/infiniband` and the device appear
    /// (`ibv_devinfo -l` inside the pod), do not set `NCCL_IB_DISABLE=1`,
    /// and check that `NCCL_IB_HCA` names existing devices. On fabrics
    /// without verbs (HPE Slingshot, AWS EFA) install the libfabric plugin
    /// (`aws-ofi-nccl`). `zerohop validate parse` on the new log shows the
    /// channels over `NET/IB` or the plugin.
    ///
    /// ## Example
    ///
    /// The capture `socket.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// h:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0
    /// h:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
    /// h:1:2 [0] NCCL INFO Using network Socket
    /// h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0
    /// ```
    ///
    /// `zerohop validate parse socket.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL101  nccl-socket-fallback  socket.log: 1 network channel connection(s) use NET/Socket: TCP through the kernel and host memory, not RDMA
    ///                  socket.log:4 = via NET/Socket
    ///                  socket.log:2 = NCCL_IB_DISABLE=1
    ///
    /// what to fix first
    ///   1. VAL101 nccl-socket-fallback (socket.log): 1 network channel connection(s) use NET/Socket: TCP through the kernel and host memory, not RDMA
    ///      fix: NCCL_IB_DISABLE=1 turns RDMA off: remove it
    ///        ibv_devinfo -l && ls -l /dev/infiniband
    ///        env | grep -E '^NCCL_(IB|NET|SOCKET)'
    ///        NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET all_reduce_perf -b 8 -e 8G -f 2 -g 1 2>&1 | tee nccl.log && zerohop validate parse nccl.log
    /// ```
    pub static NCCL_TRANSPORT = {
        id: "VAL101",
        name: "nccl-socket-fallback",
        group: Nccl,
        severity: Error,
    };
}

declare_judgement! {
    /// NCCL found the RDMA devices it should use.
    ///
    /// ## What it checks
    /// `NET/IB : No device found.` against `NET/IB : Using [0]mlx5_0:1/RoCE
    /// …` (or the OFI plugin's `Selected Provider is efa (found 32 nics)`):
    /// which RDMA devices and ports NCCL uses, and their link layer.
    /// NCCL's IB transport prints both lines at init
    /// (`src/transport/net_ib.cc`, `ncclIbInit`, NVIDIA/nccl v2.27.3-1; the
    /// transport moved to `src/transport/net_ib/init.cc` in 2.29).
    ///
    /// ## Why it matters
    /// Without a device NCCL falls back to sockets (see
    /// `nccl-socket-fallback`). The list of devices is also what to
    /// compare with the rails the node has: a missing rail halves the
    /// bandwidth without any error.
    ///
    /// ## How to fix
    /// Inside the pod, `ibv_devinfo -l` must list the devices and
    /// `ls /dev/infiniband` their `uverbs` nodes: request the RDMA shared
    /// device or the SR-IOV VF resource, and the `IPC_LOCK` capability.
    /// `NCCL_IB_HCA` filters devices by name prefix (`=mlx5_0:1` matches
    /// exactly); unset it to let NCCL take all. `zerohop topo` prints the
    /// value that pairs each GPU with its nearest NIC.
    ///
    /// ## Example
    ///
    /// The capture `nodevice.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// h:1:2 [0] NCCL INFO NET/IB : No device found.
    /// ```
    ///
    /// `zerohop validate parse nodevice.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL102  nccl-no-rdma-device  nodevice.log: NET/IB : No device found: NCCL sees no usable RDMA device
    ///                  nodevice.log:1 = NET/IB : No device found.
    ///
    /// what to fix first
    ///   1. VAL102 nccl-no-rdma-device (nodevice.log): NET/IB : No device found: NCCL sees no usable RDMA device
    ///      fix: give the pod its RDMA devices (the RDMA or SR-IOV resource, /dev/infiniband, IPC_LOCK) and check NCCL_IB_HCA; on fabrics without verbs install the libfabric plugin
    ///        ibv_devinfo -l && ls -l /dev/infiniband
    ///        echo "NCCL_IB_HCA=$NCCL_IB_HCA"
    ///        zerohop topo
    /// ```
    pub static NCCL_NO_RDMA_DEVICE = {
        id: "VAL102",
        name: "nccl-no-rdma-device",
        group: Nccl,
        severity: Error,
    };
}

declare_judgement! {
    /// NCCL turned GPUDirect RDMA on for every RDMA device.
    ///
    /// ## What it checks
    /// `NET/IB : GPU Direct RDMA Enabled|Disabled for HCA n 'mlx5_0'`, per
    /// HCA. NCCL 2.12 and earlier add `(no module)` when no peer-memory
    /// module (`nvidia_peermem`, `nv_peer_mem`) is loaded; later releases
    /// disable it when neither peer memory nor DMA-BUF is usable
    /// (`src/graph/topo.cc`, `src/transport/net_ib/gdr.cc`). The log's
    /// `DMA-BUF is available on GPU device N` and `dlvsym failed on
    /// ibv_reg_dmabuf_mr` lines tell which path is missing.
    ///
    /// ## Why it matters
    /// Without GPUDirect RDMA the NIC cannot read or write GPU memory: every
    /// byte is copied through a host buffer, which costs bandwidth, latency
    /// and CPU, and is exactly the copy the zero-copy path exists to avoid.
    ///
    /// ## How to fix
    /// Give the NIC a way into GPU memory on every node: load the peer
    /// memory module (`modprobe nvidia-peermem`; with the GPU Operator,
    /// `driver.rdma.enabled=true`), or use DMA-BUF: the open NVIDIA kernel
    /// module, Linux 5.12 or later, rdma-core 34 or later (for
    /// `ibv_reg_dmabuf_mr`) and NCCL 2.13 or later. `zerohop doctor --only
    /// GPU003` checks the node.
    ///
    /// ## Example
    ///
    /// The capture `nomodule.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)
    /// ```
    ///
    /// `zerohop validate parse nomodule.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL103  nccl-gdr-disabled  nomodule.log mlx5_0: GPUDirect RDMA disabled: no peer-memory module (no module)
    ///                  nomodule.log:1 = Disabled (no module)
    ///
    /// what to fix first
    ///   1. VAL103 nccl-gdr-disabled (nomodule.log mlx5_0): GPUDirect RDMA disabled: no peer-memory module (no module)
    ///      fix: load nvidia_peermem, or use DMA-BUF (open kernel module, Linux 5.12+, rdma-core 34+), on every node
    ///        lsmod | grep -E 'nvidia_peermem|nv_peer_mem' || modprobe nvidia-peermem
    ///        zerohop doctor --only GPU003
    /// ```
    pub static NCCL_GDR_HCA = {
        id: "VAL103",
        name: "nccl-gdr-disabled",
        group: Nccl,
        severity: Error,
    };
}

declare_judgement! {
    /// Each GPU is close enough to its NIC for NCCL to use GPUDirect RDMA.
    ///
    /// ## What it checks
    /// `GPU Direct RDMA Disabled for GPU … / HCA … (distance D > L)` and
    /// `Enabled … (distance D <= L)`: NCCL uses GPUDirect RDMA only when the
    /// PCIe path between GPU and NIC is at most `NCCL_NET_GDR_LEVEL`, by
    /// default `PXB` (through PCIe switches, not the host bridge;
    /// `ncclTopoCheckGdr` in `src/graph/paths.cc`). The numbers are NCCL's
    /// path types, whose numbering changed in 2.8, 2.12, 2.26 and 2.27; the
    /// log's NCCL version names them. NCCL 2.29 and later print this only at
    /// TRACE level.
    ///
    /// ## Why it matters
    /// A GPU whose nearest NIC is behind the host bridge (`PHB`), on another
    /// host bridge (`NODE`) or on the other socket (`SYS`) sends through host
    /// memory, and that GPU's rail becomes the slowest link of every
    /// collective.
    ///
    /// ## How to fix
    /// Pair each GPU with the NIC under its own PCIe switch: `zerohop topo`
    /// shows the pairing and the `NCCL_IB_HCA` that selects it; on a
    /// Kubernetes node, request the VF on the GPU's NUMA node (topology
    /// manager `single-numa-node`). Raising `NCCL_NET_GDR_LEVEL` (to `PHB` or
    /// `SYS`) turns GPUDirect RDMA on across the host bridge; measure
    /// before keeping it, it can be slower than the copy.
    ///
    /// ## Example
    ///
    /// The capture `distance.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
    /// h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 17000 / HCA 0 (distance 6 > 4)
    /// ```
    ///
    /// `zerohop validate parse distance.log` says:
    ///
    /// ```text
    /// nccl
    ///   warn           VAL104  nccl-gdr-too-far  distance.log GPU 17000 / HCA 0: GPUDirect RDMA disabled: path PHB (6) is beyond NCCL_NET_GDR_LEVEL PXB (4)
    ///                  distance.log:2 = distance 6 > 4
    ///
    /// what to fix first
    ///   1. VAL104 nccl-gdr-too-far (distance.log GPU 17000 / HCA 0): GPUDirect RDMA disabled: path PHB (6) is beyond NCCL_NET_GDR_LEVEL PXB (4)
    ///      fix: pair each GPU with the NIC under its own PCIe switch (NCCL_IB_HCA from zerohop topo); raise NCCL_NET_GDR_LEVEL only after measuring
    ///        zerohop topo
    ///        nvidia-smi topo -m
    /// ```
    pub static NCCL_GDR_DISTANCE = {
        id: "VAL104",
        name: "nccl-gdr-too-far",
        group: Nccl,
        severity: Warning,
    };
}

declare_judgement! {
    /// Every network channel reads and writes GPU memory directly.
    ///
    /// ## What it checks
    /// The channels that leave the node over an RDMA network (`via
    /// NET/IB/0/GDRDMA`, `via NET/AWS Libfabric/3/GDRDMA`): each must carry
    /// `/GDRDMA`. A channel without it stages data in host memory. This is
    /// the proof of GPUDirect RDMA that bandwidth alone cannot give.
    /// NCCL appends `/GDRDMA` to a channel's line only when that connection
    /// uses GPUDirect RDMA (`req.useGdr` in `src/transport/net.cc`,
    /// NVIDIA/nccl v2.27.3-1).
    ///
    /// ## Why it matters
    /// A job can reach a fair bandwidth with GPUDirect RDMA off on some
    /// channels; it then uses more CPU and host memory bandwidth, and falls
    /// behind under load.
    ///
    /// ## How to fix
    /// See `nccl-gdr-disabled` (no peer memory or DMA-BUF) and
    /// `nccl-gdr-too-far` (GPU too far from its NIC). The first channel
    /// without `/GDRDMA` names the ranks and the NIC index to look at.
    ///
    /// ## Example
    ///
    /// The capture `nogdr.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
    /// h:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1
    /// ```
    ///
    /// `zerohop validate parse nogdr.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL105  nccl-channel-without-gdr  nogdr.log NET/IB: 1 of 2 channel connection(s) stage data in host memory (no /GDRDMA)
    ///                  nogdr.log:2 = no /GDRDMA
    ///
    /// what to fix first
    ///   1. VAL105 nccl-channel-without-gdr (nogdr.log NET/IB): 1 of 2 channel connection(s) stage data in host memory (no /GDRDMA)
    ///      fix: turn GPUDirect RDMA on for these NICs: peer memory or DMA-BUF on the node, and GPUs paired with nearby NICs
    ///        zerohop doctor --only GPU003,GPU005
    ///        zerohop topo
    /// ```
    pub static NCCL_GPUDIRECT_CHANNELS = {
        id: "VAL105",
        name: "nccl-channel-without-gdr",
        group: Nccl,
        severity: Error,
    };
}

declare_judgement! {
    /// No RDMA work request completed with an error.
    ///
    /// ## What it checks
    /// `NCCL WARN NET/IB : Got completion from peer … with status=12 …
    /// vendor err 129`, in the wordings of NCCL 2.12 to 2.30. The status is
    /// `ibv_wc_status` (`libibverbs/verbs.h`); the vendor error is the NIC's
    /// syndrome. Known meanings: status 12 (`IBV_WC_RETRY_EXC_ERR`, vendor
    /// err 129 on mlx5) the transport retry counter ran out, the peer never
    /// acknowledged (NVIDIA/nccl#426); status 4 (`IBV_WC_LOC_PROT_ERR`,
    /// vendor err 81) the NIC may not touch the memory, typically ACS on the
    /// GPU–NIC PCIe path (NVIDIA/nccl#523, NCCL's own hint); status 5
    /// (`IBV_WC_WR_FLUSH_ERR`, vendor err 249) a request flushed after an
    /// earlier error, a consequence only.
    ///
    /// ## Why it matters
    /// The job aborts (`transport/net.cc … -> 6`). On RoCE a retry-exceeded
    /// error right at the start means the NICs cannot reach each other over
    /// the GID they use; during the run it means packets are lost: a fabric
    /// without PFC/ECN, a flapping link, a wrong rail.
    ///
    /// ## How to fix
    /// For status 12: check PFC and ECN on every switch port of the rail
    /// (`zerohop doctor --only qos`), that both sides use the RoCE v2 GID of
    /// their rail's address (`show_gids`, `NCCL_IB_GID_INDEX`), that the
    /// rails can reach each other (`NCCL_CROSS_NIC=0` on rail-only fabrics),
    /// and run `ib_write_bw` between the two hosts on that rail. For status
    /// 4: disable ACS on the PCIe switches between GPU and NIC and check the
    /// IOMMU (`zerohop doctor --only pcie,kernel`).
    ///
    /// ## Example
    ///
    /// The capture `locprot.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// h:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 4, opcode 0, len 0, vendor err 81 (Send) localGid ::ffff:10.0.0.1 remoteGid ::ffff:10.0.0.2
    /// ```
    ///
    /// `zerohop validate parse locprot.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL106  nccl-ib-completion-error  locprot.log h: status 4 (IBV_WC_LOC_PROT_ERR), vendor err 81 (0x51): local protection error: the NIC may not touch the registered memory (vendor err 81 on mlx5)
    ///                  locprot.log:1 = NET/IB : Got completion from peer 10.0.0.2<1> with error 4, opcode 0, len 0, vendor err 81 (Send) localGid ::ffff:10.0.0.1 remoteGid ::ffff:10.0.0.2
    ///
    /// what to fix first
    ///   1. VAL106 nccl-ib-completion-error (locprot.log h): status 4 (IBV_WC_LOC_PROT_ERR), vendor err 81 (0x51): local protection error: the NIC may not touch the registered memory (vendor err 81 on mlx5)
    ///      fix: with GPU memory this is GPUDirect RDMA broken on the PCIe path: disable ACS on the PCIe switches between GPU and NIC (or set NCCL_NET_GDR_LEVEL=LOC to confirm), check the IOMMU is off or in passthrough, and that nvidia_peermem or DMA-BUF is in use
    ///        zerohop doctor --only rdma,qos
    ///        show_gids
    ///        ib_write_bw -d DEVICE -x GID_INDEX --report_gbits PEER_IP
    /// ```
    pub static NCCL_COMPLETION_ERROR = {
        id: "VAL106",
        name: "nccl-ib-completion-error",
        group: Nccl,
        severity: Error,
    };
}

declare_judgement! {
    /// NCCL logged no other warning.
    ///
    /// ## What it checks
    /// Every `NCCL WARN` line that is not a completion error, once per
    /// distinct text with how often it was logged, and the usual meaning of
    /// the common ones (memory registration, socket connections, queue pair
    /// setup, timeouts, GPU memory).
    /// NCCL writes these lines through its `WARN` macro
    /// (`src/include/debug.h`, NVIDIA/nccl v2.27.3-1).
    ///
    /// ## Why it matters
    /// NCCL warns just before it fails, or when it works around a problem
    /// (a device it could not open, a registration it retried).
    ///
    /// ## How to fix
    /// Follow the hint of the warning; the warning's source position
    /// (`ib_plugin.c:1615`) and the lines around it in the full log say more.
    /// Rerun with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET` for context.
    ///
    /// ## Example
    ///
    /// The capture `warn.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// h:1:2 [0] misc/ibvwrap.cc:106 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory
    /// ```
    ///
    /// `zerohop validate parse warn.log` says:
    ///
    /// ```text
    /// nccl
    ///   warn           VAL107  nccl-warning  warn.log misc/ibvwrap.cc:106: NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory
    ///                  warn.log:1 = Call to ibv_reg_mr failed with error Cannot allocate memory
    ///
    /// what to fix first
    ///   1. VAL107 nccl-warning (warn.log misc/ibvwrap.cc:106): NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory
    ///      fix: memory registration failed: raise the locked-memory limit (ulimit -l, IPC_LOCK in the pod) and check peer memory for GPU buffers
    ///        NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET all_reduce_perf -b 8 -e 8G -f 2 -g 1 2>&1 | tee nccl.log && zerohop validate parse nccl.log
    /// ```
    pub static NCCL_WARNING = {
        id: "VAL107",
        name: "nccl-warning",
        group: Nccl,
        severity: Warning,
    };
}

declare_judgement! {
    /// Every result of nccl-tests was checked and correct.
    ///
    /// ## What it checks
    /// The `#wrong` (or legacy `error`) column of every row, the `rank=N
    /// #wrong=M` lines, and `# Out of bounds values : N OK|FAILED`. A run
    /// with validation off (`-c 0`, `N/A` in the column) is reported as not
    /// checked.
    /// nccl-tests counts the wrong elements of each size when validation is on
    /// (`src/common.cu`, `CheckData`; `datacheck = 1`, that is `-c 1`, by
    /// default; NVIDIA/nccl-tests v2.17.6).
    ///
    /// ## Why it matters
    /// Wrong elements mean data corruption on the path: a bad NIC, cable or
    /// GPU, or memory registered while it was being moved. Bandwidth means
    /// nothing when the data is wrong.
    ///
    /// ## How to fix
    /// Rerun with `-c 1` to find which sizes and ranks fail, then isolate
    /// the node: run the test on each node alone (NVLink only), then between
    /// pairs of nodes; check `dmesg` and the NIC's error counters
    /// (`ethtool -S`, `rdma statistic`) on the nodes involved.
    ///
    /// ## Example
    ///
    /// The capture `wrong.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// #  size count type redop root time algbw busbw #wrong time algbw busbw #wrong
    ///   8  2  float  sum  -1  1.0  0.1  0.1  3  1.0  0.1  0.1  0
    /// # Out of bounds values : 3 FAILED
    /// # Avg bus bandwidth    : 0.1
    /// ```
    ///
    /// `zerohop validate parse wrong.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL108  nccl-tests-wrong-results  wrong.log: 3 wrong element(s) at 1 size(s): 8 B
    ///                  wrong.log:2 = #wrong 3 at 8 B
    ///                  wrong.log:3 = out of bounds values 3
    ///
    /// what to fix first
    ///   1. VAL108 nccl-tests-wrong-results (wrong.log): 3 wrong element(s) at 1 size(s): 8 B
    ///      fix: data is corrupted on the path: isolate the node or link by running the test per node, then per node pair
    ///        all_reduce_perf -b 8 -e 1G -f 2 -g 8 -c 1   # one node, NVLink only
    ///        rdma statistic show; ethtool -S IFACE | grep -iE 'err|drop'
    /// ```
    pub static NCCL_WRONG_RESULTS = {
        id: "VAL108",
        name: "nccl-tests-wrong-results",
        group: Nccl,
        severity: Error,
    };
}

declare_judgement! {
    /// The bus bandwidth at the largest size reaches what the rails carry.
    ///
    /// ## What it checks
    /// The `busbw` (the better of out-of-place and in-place) of the largest
    /// size of each test, against the bus bandwidth the fabric can carry
    /// across nodes: `R × L / 8` GB/s for all-reduce, all-gather,
    /// reduce-scatter, broadcast and reduce, `R × L / 8 × (n−1) / (G·(n−G))`
    /// for all-to-all, `L / 8` for send/receive, with `R` rails of `L` Gb/s
    /// per node, `G` ranks per node and `n` ranks. These follow nccl-tests'
    /// own definition of busbw, the algorithm bandwidth times `2(n−1)/n`
    /// for all-reduce, `(n−1)/n` for all-gather, reduce-scatter and
    /// all-to-all, 1 for broadcast, reduce and send/receive, chosen to
    /// "reflect the speed of the hardware bottleneck" (`doc/PERFORMANCE.md`
    /// and `AlltoAllGetBw` in `src/alltoall.cu`, NVIDIA/nccl-tests v2.17.6,
    /// da0b547b1b9c6e3b1d4c15578087874522ae3761): for all-to-all only
    /// `(n−G)/n` of a rank's buffer leaves the node, over its `1/G` share of
    /// the rails. The rails and their rate come from `--rails` and
    /// `--link-rate`, from the cluster intent (`--intent`: the pool's
    /// workload rails and their `linkRateGbps`; `--plan`: the same, from the
    /// plan's nccl-tests job), or
    /// from the NCCL log (the NET/IB devices in use and their `speed=`). It
    /// passes at `--min-efficiency` (80% by default), warns down to 50%, and
    /// fails below. All-to-all and send/receive are reported against their
    /// figure but not graded, as `nccl-busbw-below-rdma` holds them to no
    /// floor: nccl-tests runs them as `ncclSend`/`ncclRecv` pairs, and NCCL
    /// gives each remote peer 2 channels per NIC (`ncclTopoGetNchannels`,
    /// `src/graph/paths.cc`, NVIDIA/nccl v2.27.3-1), so their rate follows
    /// the peers per NIC: a pair of one-GPU H100 nodes reached 13.6 GB/s
    /// in both, 10 nodes of 8 H100 on eight 400 Gb/s rails reached 92% of
    /// the all-to-all figure and 30% of the send/receive one. Without a
    /// rate, a collective, or on a single node, it only reports the
    /// measurement. nccl-tests' own `NCCL_TESTS_MIN_BW` verdict (`# Avg bus
    /// bandwidth : X FAILED`) fails it too.
    ///
    /// ## Why it matters
    /// A missing rail, a rail at a lower speed, GPUDirect RDMA off or a
    /// congested fabric all still complete the test; only the bandwidth
    /// against the fabric's rate shows them.
    ///
    /// ## How to fix
    /// Find the slow part: `zerohop doctor --only rdma,qos,gpu` on every
    /// node (port rates, MTU, PFC, GPUDirect), the GPUDirect judgements of
    /// this report (run with `NCCL_DEBUG=INFO`), then `ib_write_bw` between
    /// node pairs on each rail to find the one that lags.
    ///
    /// ## Example
    ///
    /// The capture `slow.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// # nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807
    /// # Collective test starting: all_reduce_perf
    /// # nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
    /// #
    /// # Using devices
    /// #  Rank  0 Group  0 Pid  1 on node-a device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
    /// #  Rank  1 Group  0 Pid  2 on node-b device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
    /// #
    /// #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    ///      1048576        262144     float     sum      -1    100.0   10.00   10.00      0    100.0   10.00   10.00      0
    ///   1073741824     268435456     float     sum      -1    30000   35.00   35.00      0    30000   35.00   35.00      0
    /// # Out of bounds values : 0 OK
    /// # Avg bus bandwidth    : 22.5
    /// #
    /// # Collective test concluded: all_reduce_perf
    /// ```
    ///
    /// `zerohop validate parse slow.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL109  nccl-busbw-low  slow.log all_reduce: busbw 35.00 GB/s at 1 GiB is 35% of the 100.0 GB/s the fabric carries for all_reduce: rails × link rate / 8 with 2 rail(s) of 400.0 Gb/s
    ///                  slow.log:11 = busbw 35.00 GB/s at 1 GiB
    ///                  command line = --rails 2
    ///                  command line = --link-rate 400 Gb/s
    ///                  nodes = 2
    ///
    /// what to fix first
    ///   1. VAL109 nccl-busbw-low (slow.log all_reduce): busbw 35.00 GB/s at 1 GiB is 35% of the 100.0 GB/s the fabric carries for all_reduce: rails × link rate / 8 with 2 rail(s) of 400.0 Gb/s
    ///      fix: find the slow part: node checks, GPUDirect in the NCCL log, then ib_write_bw per rail between node pairs
    ///        zerohop doctor --only rdma,qos,gpu
    ///        NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET all_reduce_perf -b 8 -e 8G -f 2 -g 1 2>&1 | tee nccl.log && zerohop validate parse nccl.log
    ///        ib_write_bw -d mlx5_0 --report_gbits -D 10 -s 1048576 PEER_IP
    /// ```
    pub static NCCL_BUSBW = {
        id: "VAL109",
        name: "nccl-busbw-low",
        group: Nccl,
        severity: Error,
    };
}

declare_judgement! {
    /// Each nccl-tests run finished.
    ///
    /// ## What it checks
    /// `HOST: Test NCCL failure FILE:LINE 'error / last error'`, `Test CUDA
    /// failure` and `Test timeout (Ns)` lines (`src/common.h`,
    /// `src/common.cu` of nccl-tests), and tables that end before their
    /// `# Avg bus bandwidth` summary (a killed job, a cut log).
    ///
    /// ## Why it matters
    /// A failed run has no bandwidth to judge. `remote process exited or
    /// there was a network error` on every rank of a node usually means one
    /// rank died or the fabric dropped a connection; the first failing host
    /// is where to look.
    ///
    /// ## How to fix
    /// Rerun with `NCCL_DEBUG=WARN` (or `INFO`) to get the reason NCCL gives
    /// before the failure (`nccl-ib-completion-error`, `nccl-warning`
    /// judge it). For a timeout (`-T`), look for a hung rank or a stalled
    /// fabric (PFC pause storms, `ethtool -S … | grep pause`). For a CUDA
    /// error, check the GPU (`nvidia-smi -q`, Xid errors in `dmesg`).
    ///
    /// ## Example
    ///
    /// The capture `aborted.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// #  size count type redop root time algbw busbw #wrong time algbw busbw #wrong
    ///   8  2  float  sum  -1  1.0  0.1  0.1  0  1.0  0.1  0.1  0
    /// ```
    ///
    /// `zerohop validate parse aborted.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL110  nccl-tests-aborted  aborted.log: the table stops after 1 row(s) without its summary: the test was killed or the log is cut
    ///                  aborted.log:2 = last row
    ///
    /// what to fix first
    ///   1. VAL110 nccl-tests-aborted (aborted.log): the table stops after 1 row(s) without its summary: the test was killed or the log is cut
    ///      fix: check how the job ended (OOM kill, activeDeadlineSeconds, preemption) and capture the whole log
    ///        kubectl describe pod LAUNCHER_POD; kubectl logs LAUNCHER_POD > nccl.log
    /// ```
    pub static NCCL_TESTS_ABORTED = {
        id: "VAL110",
        name: "nccl-tests-aborted",
        group: Nccl,
        severity: Error,
    };
}

declare_judgement! {
    /// The bus bandwidth holds as the message size grows.
    ///
    /// ## What it checks
    /// Over the rows of 1 MiB and more, the busbw at the largest size
    /// against the best busbw: below half of it, the bandwidth collapses at
    /// the sizes that matter for training.
    /// The bus bandwidth is nccl-tests' own figure (`doc/PERFORMANCE.md`,
    /// NVIDIA/nccl-tests v2.17.6); the half is zerohop's threshold for a
    /// collapse rather than noise.
    ///
    /// ## Why it matters
    /// Bandwidth that peaks and then falls points at congestion (a lossy
    /// RoCE fabric with pause frames or drops under sustained load), at a
    /// link that renegotiates, or at memory pressure; it is often missed
    /// when only the `Avg bus bandwidth` line is read.
    ///
    /// ## How to fix
    /// Check the fabric under load: PFC and ECN counters on the switch and
    /// the NICs (`ethtool -S IFACE | grep -E 'pause|ecn|discard'`), link
    /// errors, and rerun with more iterations (`-n 100`) to rule out noise.
    ///
    /// ## Example
    ///
    /// The capture `collapse.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// #  size count type redop root time algbw busbw #wrong time algbw busbw #wrong
    ///   1048576  262144  float  sum  -1  1.0  40.0  40.0  0  1.0  40.0  40.0  0
    ///   1073741824  268435456  float  sum  -1  1.0  4.0  4.0  0  1.0  4.0  4.0  0
    /// # Avg bus bandwidth    : 20
    /// ```
    ///
    /// `zerohop validate parse collapse.log` says:
    ///
    /// ```text
    /// nccl
    ///   warn           VAL111  nccl-busbw-collapse  collapse.log: bandwidth collapses at large sizes: busbw 4.00 GB/s at 1 GiB against a best of 40.00 GB/s at 1 MiB (10%)
    ///                  collapse.log:2 = busbw 40.00
    ///                  collapse.log:3 = busbw 4.00
    ///
    /// what to fix first
    ///   1. VAL111 nccl-busbw-collapse (collapse.log): bandwidth collapses at large sizes: busbw 4.00 GB/s at 1 GiB against a best of 40.00 GB/s at 1 MiB (10%)
    ///      fix: check the fabric under sustained load: pause frames, ECN marks and drops on NICs and switches; rerun with more iterations
    ///        ethtool -S IFACE | grep -iE 'pause|ecn|discard|drop'
    ///        all_reduce_perf -b 1G -e 16G -f 2 -n 100
    /// ```
    pub static NCCL_BUSBW_DROP = {
        id: "VAL111",
        name: "nccl-busbw-collapse",
        group: Nccl,
        severity: Warning,
    };
}

declare_judgement! {
    /// A multi-node run reaches at least what the slowest RDMA link of its GPUs carries.
    ///
    /// ## What it checks
    /// For a run across nodes whose fabric nobody named (no `--link-rate`
    /// and `--rails`, no `--intent`, no `speed=` in the NCCL log), the busbw
    /// of the largest size against one link of the slowest RDMA rate GPUs
    /// of that generation are deployed with: `L / 8` GB/s for the ring and
    /// tree collectives (all-reduce, all-gather, reduce-scatter, broadcast,
    /// reduce), whose bus bandwidth nccl-tests defines to "reflect the speed
    /// of the hardware bottleneck" (`doc/PERFORMANCE.md`, NVIDIA/nccl-tests
    /// v2.17.6). The GPU model is the device list of nccl-tests (`# Rank 0
    /// … NVIDIA L40S`), the node count its host names or NCCL's `nNodes`;
    /// `L` comes from the table `zerohop_known::gpu_fabric`, which names its
    /// source per generation, and says where a rate is chosen rather than
    /// documented: 400 Gb/s for B200 and GB200 (DGX B200 User Guide),
    /// 100 Gb/s for Hopper, Ada, RTX PRO, GB10 and Ampere (the slowest
    /// rate their NICs are deployed at), 100 Gb/s for Volta and Pascal
    /// (the DGX-1's EDR InfiniBand), 40 Gb/s for Kepler. Below
    /// `--min-efficiency` of it (80% by default) it warns.
    ///
    /// All-to-all and send/receive have no floor: nccl-tests runs them as
    /// `ncclSend`/`ncclRecv` pairs (`src/alltoall.cu`, `AlltoAllRunColl`;
    /// `src/sendrecv.cu`), on NCCL's point-to-point channels, 2 per remote
    /// peer and NIC (`ncclTopoGetNchannels`, `src/graph/paths.cc`,
    /// NVIDIA/nccl v2.27.3-1), so their rate follows the peers per NIC:
    /// one peer stays well below one link even over RDMA (13.6 GB/s for
    /// both on a pair of one-GPU H100 nodes, 15.2 GB/s for send/receive on
    /// 400 Gb/s rails in an 80-GPU capture), many peers fill it (50.6 GB/s
    /// for all-to-all in that capture). `nccl-busbw-low` reports them
    /// against the fabric without grading them either.
    /// An unnamed collective whose rows name a reduction (`sum`) is taken
    /// as all-reduce, unless more than two ranks report a busbw equal to
    /// the algbw: that is reduce or send/receive, which prints `sum` too.
    /// That one, and one whose rows reduce nothing (`none`, all-gather or
    /// all-to-all), is not judged until `--collective` names it.
    ///
    /// ## Why it matters
    /// A run that falls back to TCP (`NCCL_IB_DISABLE=1`, no RDMA device in
    /// the pod, IPoIB through the socket transport) completes and prints a
    /// table like any other; without `NCCL_DEBUG=INFO` nothing in it says
    /// which transport carried it. Bandwidth below the slowest RDMA link
    /// deployed with that GPU is the sign left. It is not proof: RDMA
    /// without GPUDirect, or on a congested link, can be as slow as sockets
    /// over a fast Ethernet, so the verdict says what the capture cannot
    /// tell, and the fix is the log line that tells it.
    ///
    /// ## How to fix
    /// Rerun with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`: the
    /// `nccl-socket-fallback` judgement then names the transport and its
    /// cause. Give the fabric (`--link-rate` and `--rails`, or `--intent
    /// cluster.yaml`) to judge the run against it exactly
    /// (`nccl-busbw-low`). When the log shows RDMA and the bandwidth stays
    /// this low, check GPUDirect RDMA and the links (`zerohop doctor --only
    /// rdma,gpu`).
    ///
    /// ## Example
    ///
    /// The capture `tcp.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// # nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
    /// #
    /// # Using devices
    /// #  Rank  0 Group  0 Pid  1 on node-a device  0 [0000:61:00] NVIDIA L40S
    /// #  Rank  1 Group  0 Pid  2 on node-b device  0 [0000:61:00] NVIDIA L40S
    /// #
    /// #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    ///      1048576        262144     float     sum      -1    166.4    6.30    6.30      0    167.9    6.24    6.24      0
    ///   1073741824     268435456     float     sum      -1   134471    7.98    7.98      0   134020    8.01    8.01      0
    /// # Out of bounds values : 0 OK
    /// # Avg bus bandwidth    : 7.1
    /// ```
    ///
    /// `zerohop validate parse tcp.log` says:
    ///
    /// ```text
    /// nccl
    ///   warn           VAL112  nccl-busbw-below-rdma  tcp.log: busbw 8.01 GB/s at 1 GiB across 2 nodes is 64% of the 12.50 GB/s one 100 Gb/s link carries, the slowest RDMA link taken for Ada Lovelace GPUs: without NCCL_DEBUG=INFO the capture cannot tell a fallback to TCP (NET/Socket, IPoIB) from RDMA running below its link rate
    ///                  tcp.log:9 = busbw 8.01 GB/s at 1 GiB
    ///                  tcp.log:4 = NVIDIA L40S on node-a, node-b
    ///                  slowest RDMA link = Ada Lovelace at 100 Gb/s (chosen: 100 GbE RoCE, common with PCIe GPUs of this generation)
    ///
    /// what to fix first
    ///   1. VAL112 nccl-busbw-below-rdma (tcp.log): busbw 8.01 GB/s at 1 GiB across 2 nodes is 64% of the 12.50 GB/s one 100 Gb/s link carries, the slowest RDMA link taken for Ada Lovelace GPUs: without NCCL_DEBUG=INFO the capture cannot tell a fallback to TCP (NET/Socket, IPoIB) from RDMA running below its link rate
    ///      fix: rerun with NCCL_DEBUG=INFO to see the transport, and give the fabric (--link-rate and --rails, or --intent) to judge the run against it exactly
    ///        NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET all_reduce_perf -b 8 -e 8G -f 2 -g 1 2>&1 | tee nccl.log && zerohop validate parse nccl.log
    ///        zerohop validate parse --intent cluster.yaml nccl.log
    /// ```
    pub static NCCL_BELOW_RDMA = {
        id: "VAL112",
        name: "nccl-busbw-below-rdma",
        group: Nccl,
        severity: Warning,
    };
}

declare_judgement! {
    /// NCCL used the link layer the cluster intent plans.
    ///
    /// ## What it checks
    /// With `--intent` (whose pool's workload rails all share one
    /// `linkType`), the link layer of every RDMA device NCCL lists in
    /// `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE …` against it: `IB`
    /// for `linkType: IB`, `RoCE` for `linkType: ETH`. NCCL prints the port's
    /// `ibv_port_attr.link_layer` there as `NCCL_IB_LLSTR` (`IB` for
    /// InfiniBand, `RoCE` for Ethernet; `src/transport/net_ib.cc`,
    /// `ncclIbInit`, NVIDIA/nccl v2.27.3-1,
    /// 72d2432094d6ae36abd6e511c3a16a2d052dbf94; the SHARP plugin appends
    /// `/SHARP`). A run that moved data with `NET/Socket` (`NCCL_IB_DISABLE=1`,
    /// no RDMA device in the pod) did not use the planned link at all, and
    /// the finding names IPoIB when the socket interfaces are InfiniBand's
    /// (`ib0`, `ibp12s0`: systemd names an `ARPHRD_INFINIBAND` netdev with
    /// the `ib` prefix, `src/udev/udev-builtin-net_id.c`); so does one that
    /// used an OFI plugin's provider. Without a planned link type it does
    /// not apply; without `NCCL_DEBUG=INFO` it cannot tell.
    ///
    /// ## Why it matters
    /// A plan for RoCE rails renders RoCE networks, GID indexes and
    /// traffic classes; a plan for InfiniBand renders IB networks and
    /// partitions. NCCL on ports of the other link layer runs over other
    /// NICs than the rails (an `NCCL_IB_HCA` that names the wrong devices,
    /// a management port), or over ports whose firmware link type differs
    /// from the intent; NCCL over sockets runs over no RDMA at all, IPoIB
    /// included, at a small share of the fabric's rate.
    ///
    /// ## How to fix
    /// Compare `ibv_devinfo`'s `link_layer` per device with the intent:
    /// point `NCCL_IB_HCA` at the rails' devices, set the port's link type
    /// in the NIC firmware (`mlxconfig -d DEV set LINK_TYPE_P1=1` for
    /// InfiniBand, `2` for Ethernet, then a reset); `zerohop doctor --intent
    /// cluster.yaml --only CONF002` checks each port. For sockets, give the
    /// pod the rails' RDMA resource and leave `NCCL_IB_DISABLE` unset.
    ///
    /// ## Example
    ///
    /// The capture `ib-for-roce.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`, judged with an intent
    /// whose rails are `linkType: ETH`:
    ///
    /// ```text
    /// h:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0
    /// h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>
    /// ```
    ///
    /// `zerohop validate parse --intent cluster.yaml ib-for-roce.log` says:
    ///
    /// ```text
    /// nccl
    ///   fail           VAL113  nccl-link-type-mismatch  ib-for-roce.log: the plan has RoCE rails (intent cluster.yaml, pool h100), NCCL used mlx5_0:1/IB mlx5_1:1/IB: the ports' firmware link type (LINK_TYPE) differs from the plan, or NCCL_IB_HCA picks NICs that are not the rails
    ///                  ib-for-roce.log:2 = mlx5_0:1/IB mlx5_1:1/IB
    ///                  intent cluster.yaml, pool h100 = linkType ETH
    ///
    /// what to fix first
    ///   1. VAL113 nccl-link-type-mismatch (ib-for-roce.log): the plan has RoCE rails (intent cluster.yaml, pool h100), NCCL used mlx5_0:1/IB mlx5_1:1/IB: the ports' firmware link type (LINK_TYPE) differs from the plan, or NCCL_IB_HCA picks NICs that are not the rails
    ///      fix: point NCCL at the rails the plan names, and set each port's link type in the NIC firmware as the intent says
    ///        ibv_devinfo | grep -E 'hca_id|link_layer'
    ///        echo "NCCL_IB_HCA=$NCCL_IB_HCA"
    ///        zerohop doctor --intent cluster.yaml --only CONF002
    /// ```
    pub static NCCL_LINK_TYPE = {
        id: "VAL113",
        name: "nccl-link-type-mismatch",
        group: Nccl,
        severity: Error,
    };
}

/// All NCCL judgements of one capture.
pub(crate) fn judge(
    capture: &Capture<'_>,
    output: &NcclOutput,
    expectations: &Expectations,
) -> Vec<Finding> {
    let log = &output.log;
    // One node by NCCL's count, or by every test's device list: no
    // channel leaves the node, so the network is not used.
    let single_node = log.shape.map_or_else(
        || {
            let lists: Vec<_> = output
                .tests
                .runs
                .iter()
                .filter(|r| !r.devices.is_empty())
                .collect();
            !lists.is_empty() && lists.iter().all(|r| r.hosts().len() == 1)
        },
        |shape| shape.nodes == 1,
    );
    let mut findings = Vec::new();
    findings.push(transport(capture, log, single_node));
    findings.push(link_type::judge(capture, log, expectations, single_node));
    if log.messages > 0 {
        findings.push(rdma_device(capture, log, single_node));
        findings.extend(gdr_hca(capture, log));
        findings.extend(gdr_distance(capture, log));
        findings.extend(gpudirect_channels(capture, log));
        findings.extend(completion_errors(capture, log));
        findings.extend(warnings(capture, log));
    }
    let runs: Vec<&TestRun> = output
        .tests
        .runs
        .iter()
        .filter(|run| !run.rows.is_empty())
        .collect();
    for run in &runs {
        let subject = run_subject(run, output.tests.runs.len());
        findings.push(wrong_results(capture, run, &subject, output));
        let judged = busbw(capture, run, &subject, log, expectations);
        // Against the fabric's own rate when it is known; else against the
        // slowest RDMA link taken for the GPUs.
        let exact = !matches!(judged.status, Status::Info | Status::Unknown);
        findings.push(judged);
        findings.push(below_rdma::judge(
            capture,
            run,
            &subject,
            log,
            expectations,
            exact,
        ));
        findings.push(busbw_drop(capture, run, &subject));
    }
    findings.extend(aborted(capture, output));
    findings
}

fn run_subject(run: &TestRun, runs: usize) -> String {
    match run.collective {
        Some((_, collective)) => collective.name().to_owned(),
        None if runs > 1 => format!("test at line {}", run.line),
        None => String::new(),
    }
}

fn transport(capture: &Capture<'_>, log: &NcclLog, single_node: bool) -> Finding {
    let judgement = &NCCL_TRANSPORT;
    if log.messages == 0 {
        return judgement
            .verdict(
                capture,
                Status::Unknown,
                "",
                "no NCCL_DEBUG=INFO messages: the transport cannot be told",
            )
            .fix(
                Remediation::new("rerun with NCCL_DEBUG=INFO and the INIT and NET subsystems")
                    .command(DEBUG_COMMAND),
            )
            .done();
    }
    let socket = log.net_channels.iter().find(|c| c.net == "Socket");
    let rdma: Vec<_> = log
        .net_channels
        .iter()
        .filter(|c| c.net != "Socket")
        .collect();
    let socket_network = log.networks.iter().find(|(_, n)| n == "Socket");
    let ipoib = log.ipoib_socket_interfaces();
    let over = if ipoib.is_empty() {
        String::new()
    } else {
        format!(" over IPoIB ({})", ipoib.join(", "))
    };
    if let Some(channels) = socket {
        let mut verdict = judgement
            .verdict(
                capture,
                judgement.problem(),
                "",
                format!(
                    "{} network channel connection(s) use NET/Socket{over}: TCP through the kernel and host memory, not RDMA",
                    channels.count
                ),
            )
            .at(capture, channels.line, "via NET/Socket");
        if let Some((line, interfaces)) = &log.socket_interfaces {
            verdict = verdict.at(
                capture,
                *line,
                format!("NET/Socket interfaces {}", interfaces.join(" ")),
            );
        }
        return socket_fix(verdict, capture, log).done();
    }
    if !rdma.is_empty() {
        let count: u64 = rdma.iter().map(|c| c.count).sum();
        let names: Vec<&str> = rdma.iter().map(|c| c.net.as_str()).collect();
        return judgement
            .verdict(
                capture,
                Status::Pass,
                "",
                format!(
                    "{count} network channel connection(s), all over NET/{}",
                    names.join(", NET/")
                ),
            )
            .at(capture, rdma[0].line, format!("via NET/{}", rdma[0].net))
            .done();
    }
    if let Some((line, _)) = socket_network {
        if single_node {
            return judgement
                .verdict(
                    capture,
                    Status::Info,
                    "",
                    "NCCL chose the Socket network, but the job runs on one node: no channel leaves it",
                )
                .at(capture, *line, "Using network Socket")
                .done();
        }
        let verdict = judgement
            .verdict(
                capture,
                judgement.problem(),
                "",
                format!("NCCL chose the Socket network: traffic between nodes goes over TCP{over}, not RDMA"),
            )
            .at(capture, *line, "Using network Socket");
        return socket_fix(verdict, capture, log).done();
    }
    if let Some((line, name)) = log.networks.first() {
        return judgement
            .verdict(
                capture,
                Status::Pass,
                "",
                format!("NCCL uses the {name} network"),
            )
            .at(capture, *line, format!("Using network {name}"))
            .done();
    }
    if single_node {
        return judgement
            .verdict(
                capture,
                Status::NotApplicable,
                "",
                "one node: no channel leaves it",
            )
            .done();
    }
    judgement
        .verdict(
            capture,
            Status::Unknown,
            "",
            "the log has no network or channel lines: NCCL_DEBUG_SUBSYS lacks INIT and NET, or the log is cut",
        )
        .fix(Remediation::new("rerun with NCCL_DEBUG=INFO and the INIT and NET subsystems").command(DEBUG_COMMAND))
        .done()
}

/// The fix for a socket fallback, with what the log says about its cause.
fn socket_fix(mut verdict: Verdict, capture: &Capture<'_>, log: &NcclLog) -> Verdict {
    let disabled = log
        .environment
        .iter()
        .find(|(_, name, value)| name == "NCCL_IB_DISABLE" && value == "1");
    let summary = if let Some((line, _, _)) = disabled {
        verdict = verdict.at(capture, *line, "NCCL_IB_DISABLE=1");
        "NCCL_IB_DISABLE=1 turns RDMA off: remove it"
    } else if log.no_ib_device.is_some() {
        "NCCL found no RDMA device: make the devices visible in the pod, or install the fabric's libfabric plugin (aws-ofi-nccl) where there are no verbs"
    } else {
        "make the RDMA devices visible to NCCL and keep NCCL_IB_DISABLE unset"
    };
    verdict.fix(
        Remediation::new(summary)
            .command("ibv_devinfo -l && ls -l /dev/infiniband")
            .command("env | grep -E '^NCCL_(IB|NET|SOCKET)'")
            .command(DEBUG_COMMAND),
    )
}

fn rdma_device(capture: &Capture<'_>, log: &NcclLog, single_node: bool) -> Finding {
    let judgement = &NCCL_NO_RDMA_DEVICE;
    if let Some(line) = log.no_ib_device {
        return judgement
            .verdict(
                capture,
                judgement.problem(),
                "",
                "NET/IB : No device found: NCCL sees no usable RDMA device",
            )
            .at(capture, line, "NET/IB : No device found.")
            .fix(
                Remediation::new("give the pod its RDMA devices (the RDMA or SR-IOV resource, /dev/infiniband, IPC_LOCK) and check NCCL_IB_HCA; on fabrics without verbs install the libfabric plugin")
                    .command("ibv_devinfo -l && ls -l /dev/infiniband")
                    .command("echo \"NCCL_IB_HCA=$NCCL_IB_HCA\"")
                    .command("zerohop topo"),
            )
            .done();
    }
    let used: Vec<_> = log
        .ib_devices
        .iter()
        .filter(|d| d.index.is_some())
        .collect();
    if let Some(first) = used.first() {
        let names: Vec<String> = used
            .iter()
            .map(|d| format!("{}:{}/{}", d.name, d.port, d.link_layer))
            .collect();
        return judgement
            .verdict(
                capture,
                Status::Pass,
                "",
                format!(
                    "NCCL uses {} rdma device(s): {}",
                    used.len(),
                    names.join(" ")
                ),
            )
            .at(capture, first.line, names.join(" "))
            .done();
    }
    if let Some((line, provider, nics)) = &log.ofi_provider {
        return judgement
            .verdict(
                capture,
                Status::Pass,
                "",
                format!("NCCL uses the OFI plugin with provider {provider} ({nics} NICs)"),
            )
            .at(capture, *line, format!("provider {provider}, {nics} nics"))
            .done();
    }
    if single_node {
        return judgement
            .verdict(
                capture,
                Status::NotApplicable,
                "",
                "one node: NCCL needs no network device",
            )
            .done();
    }
    judgement
        .verdict(
            capture,
            Status::Unknown,
            "",
            "the log does not say which rdma devices NCCL uses (no NET/IB lines)",
        )
        .fix(
            Remediation::new("rerun with NCCL_DEBUG=INFO and the INIT and NET subsystems")
                .command(DEBUG_COMMAND),
        )
        .done()
}

fn gdr_hca(capture: &Capture<'_>, log: &NcclLog) -> Vec<Finding> {
    let judgement = &NCCL_GDR_HCA;
    log.hca_gdr
        .iter()
        // A merged virtual NIC (`mlx5_0+mlx5_1`, NCCL 2.21+) has the
        // GPUDirect support of its parts, judged on their own.
        .filter(|hca| {
            !hca.name.contains('+')
                || !hca
                    .name
                    .split('+')
                    .all(|part| log.hca_gdr.iter().any(|h| h.name == part))
        })
        .map(|hca| {
            if hca.enabled {
                return judgement
                    .verdict(capture, Status::Pass, &hca.name, "GPUDirect RDMA enabled")
                    .at(capture, hca.line, "Enabled")
                    .done();
            }
            let mut verdict;
            if hca.no_module {
                verdict = judgement
                    .verdict(
                        capture,
                        judgement.problem(),
                        &hca.name,
                        "GPUDirect RDMA disabled: no peer-memory module (no module)",
                    )
                    .at(capture, hca.line, "Disabled (no module)");
            } else {
                let mut causes = vec!["neither nvidia_peermem nor DMA-BUF is usable".to_owned()];
                if log.gpu_dmabuf.is_none() {
                    causes.push("NCCL reported DMA-BUF on no GPU".to_owned());
                }
                if let Some((_, symbol)) = log.missing_symbols.iter().find(|(_, s)| s == "ibv_reg_dmabuf_mr") {
                    causes.push(format!("libibverbs lacks {symbol}"));
                }
                verdict = judgement
                    .verdict(
                        capture,
                        judgement.problem(),
                        &hca.name,
                        format!("GPUDirect RDMA disabled: {}", causes.join("; ")),
                    )
                    .at(capture, hca.line, "Disabled");
                // Only the verbs call DMA-BUF registration needs; the mlx5dv
                // symbols are for Data Direct NICs and do not explain it.
                for (line, symbol) in log
                    .missing_symbols
                    .iter()
                    .filter(|(_, s)| s == "ibv_reg_dmabuf_mr")
                {
                    verdict = verdict.at(capture, *line, format!("dlvsym failed on {symbol}"));
                }
            }
            verdict
                .fix(
                    Remediation::new("load nvidia_peermem, or use DMA-BUF (open kernel module, Linux 5.12+, rdma-core 34+), on every node")
                        .command("lsmod | grep -E 'nvidia_peermem|nv_peer_mem' || modprobe nvidia-peermem")
                        .command("zerohop doctor --only GPU003"),
                )
                .done()
        })
        .collect()
}

fn gdr_distance(capture: &Capture<'_>, log: &NcclLog) -> Vec<Finding> {
    let judgement = &NCCL_GDR_DISTANCE;
    let version = log.version.map(|(_, v)| v);
    log.gdr_paths
        .iter()
        .map(|path| {
            let subject = format!("GPU {} / HCA {}", path.gpu, path.hca);
            let distance = path_text(version, path.distance);
            let level = path_text(version, path.level);
            let value = format!("distance {} {} {}", path.distance, if path.enabled { "<=" } else { ">" }, path.level);
            if path.enabled {
                return judgement
                    .verdict(
                        capture,
                        Status::Pass,
                        &subject,
                        format!("GPUDirect RDMA enabled: path {distance} within NCCL_NET_GDR_LEVEL {level}"),
                    )
                    .at(capture, path.line, value)
                    .done();
            }
            judgement
                .verdict(
                    capture,
                    judgement.problem(),
                    &subject,
                    format!("GPUDirect RDMA disabled: path {distance} is beyond NCCL_NET_GDR_LEVEL {level}"),
                )
                .at(capture, path.line, value)
                .fix(
                    Remediation::new("pair each GPU with the NIC under its own PCIe switch (NCCL_IB_HCA from zerohop topo); raise NCCL_NET_GDR_LEVEL only after measuring")
                        .command("zerohop topo")
                        .command("nvidia-smi topo -m"),
                )
                .done()
        })
        .collect()
}

/// `PHB (6)`, or `6` when the release's numbering is unknown.
fn path_text(version: Option<NcclVersion>, number: u32) -> String {
    match path_type_name(version, number) {
        Some(name) => format!("{name} ({number})"),
        None => format!("{number} (NCCL version unknown, path type not named)"),
    }
}

fn gpudirect_channels(capture: &Capture<'_>, log: &NcclLog) -> Vec<Finding> {
    let judgement = &NCCL_GPUDIRECT_CHANNELS;
    log.net_channels
        .iter()
        .filter(|channels| channels.net != "Socket")
        .map(|channels| {
            let subject = format!("NET/{}", channels.net);
            match channels.first_without_gdr {
                None => judgement
                    .verdict(
                        capture,
                        Status::Pass,
                        &subject,
                        format!("all {} channel connection(s) use GPUDirect RDMA (GDRDMA)", channels.count),
                    )
                    .at(capture, channels.line, "/GDRDMA")
                    .done(),
                Some(line) => judgement
                    .verdict(
                        capture,
                        judgement.problem(),
                        &subject,
                        format!(
                            "{} of {} channel connection(s) stage data in host memory (no /GDRDMA)",
                            channels.count - channels.gdr,
                            channels.count
                        ),
                    )
                    .at(capture, line, "no /GDRDMA")
                    .fix(
                        Remediation::new("turn GPUDirect RDMA on for these NICs: peer memory or DMA-BUF on the node, and GPUs paired with nearby NICs")
                            .command("zerohop doctor --only GPU003,GPU005")
                            .command("zerohop topo"),
                    )
                    .done(),
            }
        })
        .collect()
}

fn completion_errors(capture: &Capture<'_>, log: &NcclLog) -> Vec<Finding> {
    let judgement = &NCCL_COMPLETION_ERROR;
    let has_cause = log
        .completion_errors
        .iter()
        .any(|e| !verbs::meaning(e.status, e.vendor_err).consequence);
    let mut findings: Vec<Finding> = log
        .completion_errors
        .iter()
        .map(|error| {
            let meaning = verbs::meaning(error.status, error.vendor_err);
            let subject = error.hca.clone().unwrap_or_else(|| error.host.clone());
            let described = verbs::describe(error.status, error.vendor_err);
            let times = if error.count > 1 {
                format!(" ({} times)", error.count)
            } else {
                String::new()
            };
            let (status, message) = if meaning.consequence && has_cause {
                (
                    Status::Info,
                    format!(
                        "{described}{times}: {}, after the error above",
                        meaning.what
                    ),
                )
            } else {
                (
                    judgement.problem(),
                    format!("{described}{times}: {}", meaning.what),
                )
            };
            let mut verdict = judgement.verdict(capture, status, &subject, message).at(
                capture,
                error.line,
                crate::text::excerpt(&error.text),
            );
            if status.is_problem() {
                verdict = verdict.fix(
                    Remediation::new(meaning.fix)
                        .command("zerohop doctor --only rdma,qos")
                        .command("show_gids")
                        .command("ib_write_bw -d DEVICE -x GID_INDEX --report_gbits PEER_IP"),
                );
            }
            verdict.done()
        })
        .collect();
    if findings.is_empty() {
        findings.push(
            judgement
                .verdict(capture, Status::Pass, "", "no completion errors logged")
                .done(),
        );
    }
    findings
}

/// Known warnings and what they usually mean.
const WARNING_HINTS: &[(&str, &str)] = &[
    (
        "ibv_reg_mr",
        "memory registration failed: raise the locked-memory limit (ulimit -l, IPC_LOCK in the pod) and check peer memory for GPU buffers",
    ),
    (
        "ibv_reg_dmabuf_mr",
        "DMA-BUF registration failed: check the open kernel module and rdma-core 34+",
    ),
    (
        "Cannot allocate memory",
        "memory could not be locked or registered: raise the locked-memory limit (ulimit -l, IPC_LOCK)",
    ),
    (
        "Connection refused",
        "a peer refused the bootstrap connection: it is not running or a firewall blocks the port (NCCL_SOCKET_IFNAME picks the interface)",
    ),
    (
        "connect to",
        "a peer could not be reached over the bootstrap network: check NCCL_SOCKET_IFNAME and firewalls",
    ),
    (
        "ibv_modify_qp",
        "a queue pair could not be connected: check the GID index (NCCL_IB_GID_INDEX) and that the rails reach each other",
    ),
    (
        "ibv_create_qp",
        "a queue pair could not be created: check the locked-memory limit and the device's resources",
    ),
    (
        "imeout",
        "an operation timed out: a peer hung or the fabric stalled",
    ),
    (
        "out of memory",
        "GPU memory ran out: smaller sizes (-e) or fewer GPUs per process",
    ),
    (
        IB_HCA,
        "the device filter matches nothing: check NCCL_IB_HCA against ibv_devinfo -l",
    ),
];

fn warnings(capture: &Capture<'_>, log: &NcclLog) -> Vec<Finding> {
    let judgement = &NCCL_WARNING;
    if log.warnings.is_empty() {
        return vec![
            judgement
                .verdict(capture, Status::Pass, "", "no other NCCL warnings")
                .done(),
        ];
    }
    log.warnings
        .iter()
        .map(|warning| {
            let hint = WARNING_HINTS
                .iter()
                .find(|(marker, _)| warning.text.contains(marker))
                .map_or("read the warning with the lines around it; rerun with NCCL_DEBUG_SUBSYS=INIT,NET for context", |(_, hint)| *hint);
            let times = if warning.count > 1 {
                format!(" ({} times)", warning.count)
            } else {
                String::new()
            };
            let subject = warning.source.clone().unwrap_or_default();
            judgement
                .verdict(
                    capture,
                    judgement.problem(),
                    &subject,
                    format!("NCCL WARN {}{times}", crate::text::excerpt(&warning.text)),
                )
                .at(capture, warning.line, crate::text::excerpt(&warning.text))
                .fix(Remediation::new(hint).command(DEBUG_COMMAND))
                .done()
        })
        .collect()
}

fn wrong_results(
    capture: &Capture<'_>,
    run: &TestRun,
    subject: &str,
    output: &NcclOutput,
) -> Finding {
    let judgement = &NCCL_WRONG_RESULTS;
    let bad: Vec<_> = run
        .rows
        .iter()
        .filter(|r| r.wrong().is_some_and(|w| w > 0))
        .collect();
    let out_of_bounds = run.out_of_bounds.filter(|o| o.count > 0);
    let ranks: Vec<_> = output
        .tests
        .wrong_ranks
        .iter()
        .filter(|r| r.wrong > 0)
        .collect();
    if !bad.is_empty() || out_of_bounds.is_some() || !ranks.is_empty() {
        let total: u64 = bad.iter().filter_map(|r| r.wrong()).sum();
        let sizes: Vec<String> = bad.iter().take(5).map(|r| size_text(r.size)).collect();
        let mut verdict = judgement.verdict(
            capture,
            judgement.problem(),
            subject,
            if bad.is_empty() {
                "nccl-tests found wrong results".to_owned()
            } else {
                format!(
                    "{total} wrong element(s) at {} size(s): {}",
                    bad.len(),
                    sizes.join(", ")
                )
            },
        );
        for row in bad.iter().take(5) {
            verdict = verdict.at(
                capture,
                row.line,
                format!(
                    "#wrong {} at {}",
                    row.wrong().unwrap_or(0),
                    size_text(row.size)
                ),
            );
        }
        if let Some(bounds) = out_of_bounds {
            verdict = verdict.at(
                capture,
                bounds.line,
                format!("out of bounds values {}", bounds.count),
            );
        }
        for rank in ranks.iter().take(5) {
            verdict = verdict.at(
                capture,
                rank.line,
                format!("rank {} #wrong {}", rank.rank, rank.wrong),
            );
        }
        return verdict
            .fix(
                Remediation::new("data is corrupted on the path: isolate the node or link by running the test per node, then per node pair")
                    .command("all_reduce_perf -b 8 -e 1G -f 2 -g 8 -c 1   # one node, NVLink only")
                    .command("rdma statistic show; ethtool -S IFACE | grep -iE 'err|drop'"),
            )
            .done();
    }
    let checked = run.rows.iter().any(|r| r.wrong().is_some());
    if !checked
        || run
            .params
            .as_ref()
            .is_some_and(|p| p.validation == Some(false))
    {
        let line = run.params.as_ref().map_or(run.rows[0].line, |p| p.line);
        return judgement
            .verdict(
                capture,
                Status::Info,
                subject,
                "results not checked: validation was off (-c 0), #wrong is N/A",
            )
            .at(capture, line, "validation 0")
            .done();
    }
    let mut verdict = judgement.verdict(
        capture,
        Status::Pass,
        subject,
        format!("all {} sizes checked, no wrong element", run.rows.len()),
    );
    if let Some(bounds) = run.out_of_bounds {
        verdict = verdict.at(capture, bounds.line, "out of bounds values 0");
    }
    verdict.done()
}

/// Where a value of the fabric comes from.
enum Origin {
    /// A line of the capture.
    Line(u32),
    /// An option of the command line.
    Option,
    /// The cluster intent or the plan, as evidence names it.
    Plan(String),
}

/// The rails and link rate the fabric offers, and where they come from.
struct Fabric {
    rails: u32,
    link_gbps: f64,
    /// Evidence: where each value comes from and what it says.
    sources: Vec<(Origin, String)>,
}

fn fabric(log: &NcclLog, expectations: &Expectations) -> Result<Fabric, &'static str> {
    let used: Vec<_> = log
        .ib_devices
        .iter()
        .filter(|d| d.index.is_some())
        .collect();
    let mut sources = Vec::new();
    let rails = if let Some(rails) = expectations.rails {
        sources.push((Origin::Option, format!("--rails {rails}")));
        rails
    } else if let Some(fabric) = &expectations.planned {
        let layer = fabric
            .link_layer
            .map_or(String::new(), |l| format!(" of {}", l.nccl_name()));
        sources.push((
            Origin::Plan(fabric.source.clone()),
            format!("{} rail(s){layer}", fabric.rails),
        ));
        fabric.rails
    } else if !used.is_empty() {
        sources.push((
            Origin::Line(used[0].line),
            format!("{} NET/IB device(s) in use", used.len()),
        ));
        u32::try_from(used.len()).unwrap_or(u32::MAX)
    } else {
        match &log.ofi_provider {
            Some((line, provider, nics)) if *nics > 0 => {
                sources.push((Origin::Line(*line), format!("{nics} {provider} nics")));
                *nics
            }
            _ => return Err("the number of rails (--rails)"),
        }
    };
    let speeds: Vec<u64> = used
        .iter()
        .filter_map(|d| d.speed_mbps)
        .filter(|speed| *speed > 0)
        .collect();
    let planned_rate = expectations
        .planned
        .as_ref()
        .and_then(|p| Some((p.source.clone(), p.link_rate_gbps?)));
    let link_gbps = match (expectations.link_rate_gbps, planned_rate) {
        (Some(rate), _) => {
            sources.push((Origin::Option, format!("--link-rate {rate} Gb/s")));
            rate
        }
        (None, Some((source, rate))) => {
            sources.push((
                Origin::Plan(source),
                format!("{rate} Gb/s per rail (linkRateGbps)"),
            ));
            f64::from(rate)
        }
        (None, None) if !speeds.is_empty() && speeds.len() == used.len() => {
            let average = speeds.iter().sum::<u64>() as f64 / speeds.len() as f64 / 1000.0;
            let line = used.iter().find(|d| d.speed_mbps.is_some()).map(|d| d.line);
            sources.push((
                line.map_or(Origin::Option, Origin::Line),
                format!("{} Gb/s per device (NET/IB speed=)", rate(average)),
            ));
            average
        }
        (None, None) => return Err("the link rate of a rail (--link-rate)"),
    };
    Ok(Fabric {
        rails,
        link_gbps,
        sources,
    })
}

fn busbw(
    capture: &Capture<'_>,
    run: &TestRun,
    subject: &str,
    log: &NcclLog,
    expectations: &Expectations,
) -> Finding {
    let judgement = &NCCL_BUSBW;
    let Some(largest) = run.largest() else {
        return judgement
            .verdict(capture, Status::Unknown, subject, "no table rows")
            .done();
    };
    let measured = largest.busbw();
    let at = format!(
        "busbw {} GB/s at {}",
        rate(measured),
        size_text(largest.size)
    );
    let reduced = run.reduced_max_bytes.map(|(line, bytes)| {
        (
            line,
            format!("sizes stop at {} (GPU memory)", size_text(bytes)),
        )
    });
    let with_reduced = |verdict: Verdict| match &reduced {
        Some((line, text)) => verdict.at(capture, *line, text.clone()),
        None => verdict,
    };
    let hosts = run.hosts();
    let nodes = if hosts.is_empty() {
        log.shape.map(|s| s.nodes)
    } else {
        u32::try_from(hosts.len()).ok()
    };
    let ranks_per_node = expectations
        .gpus_per_node()
        .or_else(|| {
            hosts
                .iter()
                .map(|h| run.devices.iter().filter(|d| d.host == *h).count())
                .max()
                .and_then(|n| u32::try_from(n).ok())
        })
        .or_else(|| log.shape.map(|s| s.local_ranks));
    let own_verdict_failed = run.avg_busbw.filter(|a| a.passed == Some(false));
    let info = |message: String| {
        let mut verdict = judgement
            .verdict(capture, Status::Info, subject, message)
            .at(capture, largest.line, at.clone());
        if let Some(avg) = own_verdict_failed {
            verdict = verdict.at(
                capture,
                avg.line,
                format!("avg bus bandwidth {} FAILED", avg.value),
            );
        }
        with_reduced(verdict).done()
    };
    if own_verdict_failed.is_some() {
        let avg = own_verdict_failed.map_or(0.0, |a| a.value);
        return with_reduced(
            judgement
                .verdict(
                    capture,
                    judgement.problem(),
                    subject,
                    format!("{at}; nccl-tests' own check failed: average {avg} GB/s is below 0.9 × NCCL_TESTS_MIN_BW"),
                )
                .at(capture, largest.line, at.clone())
                .at(capture, run.avg_busbw.map_or(0, |a| a.line), format!("avg bus bandwidth {avg} FAILED")),
        )
        .fix(busbw_fix())
        .done();
    }
    if nodes == Some(1) {
        return info(format!(
            "{at}: one node, so this measures NVLink/PCIe inside it, not the fabric"
        ));
    }
    let Some(collective) = run.collective.map(|(_, c)| c).or(expectations.collective) else {
        return info(format!(
            "{at}; the output does not name the collective (nccl-tests before 2.17): pass --collective to compare with the fabric"
        ));
    };
    let fabric = match fabric(log, expectations) {
        Ok(fabric) => fabric,
        Err(missing) => {
            return info(format!(
                "{at}; {missing} is not known: pass it to compare with the fabric"
            ));
        }
    };
    let Some(expected) = collective.fabric_busbw(
        fabric.rails,
        fabric.link_gbps,
        nodes.unwrap_or(2),
        ranks_per_node.unwrap_or(0),
    ) else {
        return info(format!(
            "{at}; no fabric expectation for {collective} with these counts"
        ));
    };
    if expected <= 0.0 || !expected.is_finite() {
        return info(format!("{at}; the fabric's rate is zero: pass --link-rate"));
    }
    let ratio = measured / expected;
    // Point-to-point collectives are reported against the rails, not
    // graded: their rate follows the peers per NIC (see
    // `Collective::point_to_point`), as `nccl-busbw-below-rdma` holds them
    // to no floor.
    let status = if collective.point_to_point() {
        Status::Info
    } else {
        grade(ratio, expectations, judgement)
    };
    let assumed = if nodes.is_none() {
        " (assuming more than one node)"
    } else {
        ""
    };
    let not_graded = if collective.point_to_point() {
        "; not graded: nccl-tests runs it as ncclSend/ncclRecv pairs, and NCCL gives each remote peer 2 channels per NIC, so its rate follows the peers per NIC, not the rails alone"
    } else {
        ""
    };
    let mut verdict = judgement
        .verdict(
            capture,
            status,
            subject,
            format!(
                "{at} is {} of the {} GB/s the fabric carries for {collective}: {}{assumed}{not_graded}",
                percent(ratio),
                rate(expected),
                describe_fabric(collective, &fabric),
            ),
        )
        .at(capture, largest.line, at.clone());
    for (origin, value) in &fabric.sources {
        verdict = match origin {
            Origin::Line(line) => verdict.at(capture, *line, value.clone()),
            Origin::Option => verdict.evidence("command line", value.clone()),
            Origin::Plan(source) => verdict.evidence(source.clone(), value.clone()),
        };
    }
    if let Some(nodes) = nodes {
        verdict = verdict.evidence("nodes", nodes.to_string());
    }
    if status.is_problem() {
        verdict = verdict.fix(busbw_fix());
    }
    with_reduced(verdict).done()
}

fn describe_fabric(collective: Collective, fabric: &Fabric) -> String {
    format!(
        "{} with {} rail(s) of {} Gb/s",
        collective.formula(),
        fabric.rails,
        rate(fabric.link_gbps)
    )
}

fn busbw_fix() -> Remediation {
    Remediation::new("find the slow part: node checks, GPUDirect in the NCCL log, then ib_write_bw per rail between node pairs")
        .command("zerohop doctor --only rdma,qos,gpu")
        .command(DEBUG_COMMAND)
        .command("ib_write_bw -d mlx5_0 --report_gbits -D 10 -s 1048576 PEER_IP")
}

fn busbw_drop(capture: &Capture<'_>, run: &TestRun, subject: &str) -> Finding {
    let judgement = &NCCL_BUSBW_DROP;
    let large: Vec<_> = run.rows.iter().filter(|r| r.size >= 1 << 20).collect();
    let (Some(peak), Some(last)) = (
        large.iter().max_by(|a, b| a.busbw().total_cmp(&b.busbw())),
        large.iter().max_by_key(|r| r.size),
    ) else {
        return judgement
            .verdict(
                capture,
                Status::NotApplicable,
                subject,
                "no sizes of 1 MiB or more",
            )
            .done();
    };
    if large.len() < 2 || peak.busbw() <= 0.0 {
        return judgement
            .verdict(
                capture,
                Status::NotApplicable,
                subject,
                "too few large sizes to compare",
            )
            .done();
    }
    let ratio = last.busbw() / peak.busbw();
    let text = format!(
        "busbw {} GB/s at {} against a best of {} GB/s at {}",
        rate(last.busbw()),
        size_text(last.size),
        rate(peak.busbw()),
        size_text(peak.size)
    );
    if ratio >= 0.5 {
        return judgement
            .verdict(
                capture,
                Status::Pass,
                subject,
                format!("{text} ({})", percent(ratio)),
            )
            .at(capture, last.line, format!("busbw {}", rate(last.busbw())))
            .done();
    }
    judgement
        .verdict(
            capture,
            judgement.problem(),
            subject,
            format!("bandwidth collapses at large sizes: {text} ({})", percent(ratio)),
        )
        .at(capture, peak.line, format!("busbw {}", rate(peak.busbw())))
        .at(capture, last.line, format!("busbw {}", rate(last.busbw())))
        .fix(
            Remediation::new("check the fabric under sustained load: pause frames, ECN marks and drops on NICs and switches; rerun with more iterations")
                .command("ethtool -S IFACE | grep -iE 'pause|ecn|discard|drop'")
                .command("all_reduce_perf -b 1G -e 16G -f 2 -n 100"),
        )
        .done()
}

/// What a failure message of NCCL usually means.
fn failure_hint(kind: FailureKind, message: &str) -> &'static str {
    match kind {
        FailureKind::Timeout => {
            "an operation ran longer than -T: a hung rank or a stalled fabric (pause storms); check every rank's log"
        }
        FailureKind::Cuda => {
            "a CUDA call failed: check the GPU (nvidia-smi -q, Xid errors in dmesg) and GPU memory (-e)"
        }
        FailureKind::Nccl
            if message.contains("remote process exited") || message.contains("network error") =>
        {
            "a peer died or the network dropped a connection: read the first failing host's log and the NCCL WARN lines (NCCL_DEBUG=WARN)"
        }
        FailureKind::Nccl if message.contains("system error") => {
            "a system call failed, often RDMA setup (locked memory, device permissions): NCCL_DEBUG=WARN names it"
        }
        FailureKind::Nccl if message.contains("invalid usage") => {
            "NCCL refused the arguments or the environment (NCCL_* variables): NCCL_DEBUG=WARN names it"
        }
        FailureKind::Nccl => "NCCL returned an error: rerun with NCCL_DEBUG=WARN to see its cause",
    }
}

fn aborted(capture: &Capture<'_>, output: &NcclOutput) -> Vec<Finding> {
    let judgement = &NCCL_TESTS_ABORTED;
    let tests = &output.tests;
    let mut findings = Vec::new();
    // One finding per distinct failure, with the hosts that reported it.
    let mut seen: Vec<(FailureKind, &str)> = Vec::new();
    for failure in &tests.failures {
        if seen.contains(&(failure.kind, failure.message.as_str())) {
            continue;
        }
        seen.push((failure.kind, failure.message.as_str()));
        let same: Vec<_> = tests
            .failures
            .iter()
            .filter(|f| f.kind == failure.kind && f.message == failure.message)
            .collect();
        let mut hosts: Vec<&str> = Vec::new();
        for failure in &same {
            if !hosts.contains(&failure.host.as_str()) {
                hosts.push(&failure.host);
            }
        }
        let what = match failure.kind {
            FailureKind::Nccl => format!("Test NCCL failure '{}'", failure.message),
            FailureKind::Cuda => format!("Test CUDA failure '{}'", failure.message),
            FailureKind::Timeout => format!("Test timeout after {}", failure.message),
        };
        findings.push(
            judgement
                .verdict(
                    capture,
                    judgement.problem(),
                    failure.host.as_str(),
                    format!("{what}, {} time(s) from {}", same.len(), hosts.join(", ")),
                )
                .at(capture, failure.line, what.clone())
                .fix(
                    Remediation::new(failure_hint(failure.kind, &failure.message))
                        .command(DEBUG_COMMAND),
                )
                .done(),
        );
    }
    for run in &tests.runs {
        if run.header_line.is_none() || run.complete() {
            continue;
        }
        let subject = run_subject(run, tests.runs.len());
        let last = run
            .rows
            .last()
            .map_or(run.header_line.unwrap_or(run.line), |r| r.line);
        let interrupted = tests.failures.iter().any(|f| f.line > run.line);
        if interrupted {
            // The failure above says why.
            continue;
        }
        findings.push(
            judgement
                .verdict(
                    capture,
                    judgement.problem(),
                    &subject,
                    format!(
                        "the table stops after {} row(s) without its summary: the test was killed or the log is cut",
                        run.rows.len()
                    ),
                )
                .at(capture, last, "last row")
                .fix(Remediation::new("check how the job ended (OOM kill, activeDeadlineSeconds, preemption) and capture the whole log").command("kubectl describe pod LAUNCHER_POD; kubectl logs LAUNCHER_POD > nccl.log"))
                .done(),
        );
    }
    let finished = tests.runs.iter().filter(|r| r.complete()).count();
    if findings.is_empty() && finished > 0 {
        let last = tests.runs.iter().rev().find_map(|r| r.avg_busbw);
        let mut verdict = judgement.verdict(
            capture,
            Status::Pass,
            "",
            format!("{finished} test(s) ran to their summary"),
        );
        if let Some(avg) = last {
            verdict = verdict.at(
                capture,
                avg.line,
                format!("avg bus bandwidth {}", avg.value),
            );
        }
        findings.push(verdict.done());
    }
    findings
}
