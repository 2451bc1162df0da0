//! Judgements of perftest output.

use zerohop_core::{Finding, Remediation, Status};

use crate::declare_judgement;
use crate::judge::{Capture, Expectations, grade, percent, rate};
use crate::perftest::{Failure, FailureKind, PerftestOutput, PerftestRun};
use crate::text::size_text;
use crate::verbs;

declare_judgement! {
    /// The average bandwidth at the largest message size reaches the port's rate.
    ///
    /// ## What it checks
    /// `BW average` of the largest size of each bandwidth table (MB/sec
    /// and MiB/sec are converted to Gb/s), against the link rate given with
    /// `--link-rate` (twice that for a bidirectional test). perftest's
    /// banner says the link type but not the rate, so without `--link-rate`
    /// this only reports the measurement. It passes at `--min-efficiency`
    /// (80% by default), warns down to 50% and fails below. In duration
    /// mode (`-D`) the peak is not measured and prints 0.00.
    /// perftest prints `BW average` in MB/sec (2^20 bytes) or, with
    /// `--report_gbits`, Gb/sec (`print_report_bw` in
    /// `src/perftest_parameters.c`: `format_factor` is `0x100000` or
    /// `125000000`; linux-rdma/perftest 25.01.0-0.80).
    ///
    /// ## Why it matters
    /// `ib_write_bw` between two nodes is the floor of what NCCL can get on
    /// that rail: a port that trained at a lower speed, a PCIe link that
    /// trained narrower, a wrong MTU or a lossy fabric show here first.
    ///
    /// ## How to fix
    /// Compare with the port's rate (`ibstat`, `rdma link show`) and the
    /// PCIe link of the NIC (`lspci -vv` LnkSta): `zerohop doctor --only
    /// rdma,pcie,qos` checks both sides. Use large messages (`-s 1048576`
    /// or `-a`), several QPs (`-q 4`) and a duration (`-D 10`).
    ///
    /// ## Example
    ///
    /// The capture `bw.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///  #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
    ///  65536      5000           150.00             150.00              0.28
    /// ```
    ///
    /// `zerohop validate parse bw.txt` says:
    ///
    /// ```text
    /// perftest
    ///   fail           VAL201  perftest-bandwidth-low  bw.txt: average 150.0 Gb/s at 64 KiB, peak 150.0 Gb/s: 38% of the 400.0 Gb/s link
    ///                  bw.txt:2 = BW average 150.0 Gb/s
    ///                  command line = --link-rate 400 Gb/s
    ///
    /// what to fix first
    ///   1. VAL201 perftest-bandwidth-low (bw.txt): average 150.0 Gb/s at 64 KiB, peak 150.0 Gb/s: 38% of the 400.0 Gb/s link
    ///      fix: compare the port's rate and the NIC's PCIe link with what they should be, on both hosts
    ///        zerohop doctor --only rdma,pcie,qos
    ///        ibstat; rdma link show
    ///        ib_write_bw -d mlx5_0 -q 4 -D 10 -s 1048576 --report_gbits PEER_IP
    /// ```
    pub static PERFTEST_BANDWIDTH = {
        id: "VAL201",
        name: "perftest-bandwidth-low",
        group: Perftest,
        severity: Error,
    };
}

declare_judgement! {
    /// The latency's tail stays near its median.
    ///
    /// ## What it checks
    /// For each latency table row: `t_typical` (the median), `t_avg`, the
    /// 99% and 99.9% percentiles. It warns when the 99.9th percentile is
    /// more than ten times the median.
    /// The columns are perftest's latency report (`print_report_lat` in
    /// `src/perftest_parameters.c`, linux-rdma/perftest 25.01.0-0.80); the
    /// factor ten is zerohop's threshold for a tail worth a look.
    ///
    /// ## Why it matters
    /// Collectives wait for the slowest message: a long tail (interrupt
    /// moderation, CPU frequency scaling, a noisy neighbour on the core,
    /// retransmissions) slows every step of training even when the median
    /// is fine.
    ///
    /// ## How to fix
    /// Pin the test to a core of the NIC's NUMA node (`taskset`, `numactl`),
    /// check the fabric for retransmissions (`ethtool -S IFACE | grep -i
    /// retrans`), and compare the two directions.
    ///
    /// ## Example
    ///
    /// The capture `lat.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///  #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
    ///  2       1000          1.00           90.00        2.00               3.00           4.00            9.00                   80.00
    /// ```
    ///
    /// `zerohop validate parse lat.txt` says:
    ///
    /// ```text
    /// perftest
    ///   warn           VAL202  perftest-latency-tail  lat.txt: 2 B: median 2 µs, average 3 µs, 99% 9 µs, 99.9% 80 µs: the 99.9th percentile is 40 times the median
    ///                  lat.txt:2 = t_typical 2 usec, 99.9% 80 usec
    ///
    /// what to fix first
    ///   1. VAL202 perftest-latency-tail (lat.txt): 2 B: median 2 µs, average 3 µs, 99% 9 µs, 99.9% 80 µs: the 99.9th percentile is 40 times the median
    ///      fix: pin the test to the NIC's NUMA node and look for retransmissions and interrupt moderation
    ///        numactl --cpunodebind=NODE ib_read_lat -d mlx5_0 PEER_IP
    ///        ethtool -S IFACE | grep -iE 'retrans|timeout'
    /// ```
    pub static PERFTEST_LATENCY = {
        id: "VAL202",
        name: "perftest-latency-tail",
        group: Perftest,
        severity: Warning,
    };
}

declare_judgement! {
    /// The test moved GPU memory (GPUDirect RDMA), not host memory.
    ///
    /// ## What it checks
    /// The CUDA lines of `--use_cuda` (`device name = [NVIDIA A40]`,
    /// `cuMemAlloc() of a … GPU buffer`), and `using DMA-BUF for GPU
    /// buffer` that recent perftest prints with `--use_cuda_dmabuf`.
    /// perftest prints these lines when it allocates its buffer in GPU memory
    /// (`src/cuda_memory.c`, linux-rdma/perftest 25.01.0-0.80; from 25.04
    /// the `cuMemAlloc()` line is no longer printed, and before the CUDA
    /// code moved to its own file, 4.5-0.20 printed it from
    /// `src/perftest_resources.c`).
    ///
    /// ## Why it matters
    /// A test on host memory proves the fabric, not the path into the GPU:
    /// GPUDirect RDMA (peer memory or DMA-BUF) is only exercised when the
    /// buffer is in GPU memory.
    ///
    /// ## How to fix
    /// Rerun with the GPU nearest the NIC: `ib_write_bw -d mlx5_0
    /// --use_cuda=0 --use_cuda_dmabuf …` (`zerohop topo` pairs GPUs and
    /// NICs); put `--use_cuda_dmabuf` after `--use_cuda` for older perftest.
    ///
    /// ## Example
    ///
    /// The capture `host.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///  #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
    ///  65536      5000           150.00             150.00              0.28
    /// ```
    ///
    /// `zerohop validate parse host.txt` says:
    ///
    /// ```text
    /// perftest
    ///   info           VAL203  perftest-host-memory  host.txt: host memory: the test proves the fabric, not GPUDirect RDMA (no --use_cuda)
    /// ```
    pub static PERFTEST_GPU_MEMORY = {
        id: "VAL203",
        name: "perftest-host-memory",
        group: Perftest,
        severity: Info,
    };
}

declare_judgement! {
    /// perftest ran to its result.
    ///
    /// ## What it checks
    /// The failure lines of perftest and their root cause: `Couldn't
    /// allocate MR` (memory could not be registered: locked-memory limit,
    /// `IPC_LOCK`, or with `--use_cuda` no peer memory/DMA-BUF for GPU
    /// memory), `Couldn't connect to HOST:PORT` (no server, a firewall, a
    /// wrong address or GID), `Unable to find the Infiniband/RoCE device`,
    /// `Parser function exited with Error` (refused options),
    /// `Completion with error … Failed status N … syndrom 0xNN` (decoded like
    /// NCCL's completion errors). The socket and resource lines that follow a
    /// root cause are its consequences.
    ///
    /// ## Why it matters
    /// These are the failures the deployment guides' manual test meets
    /// first, and their messages do not say the cause.
    ///
    /// ## How to fix
    /// Follow the fix of the root cause; for memory registration
    /// `ulimit -l unlimited` (or `IPC_LOCK` in the pod's security context)
    /// and `modprobe nvidia-peermem` for GPU memory; for a connection start
    /// the server first, open TCP port 18515 (or `-p`), and with `-R` use the
    /// address of the RDMA interface.
    ///
    /// ## Example
    ///
    /// The capture `nosrv.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// Couldn't connect to 10.0.0.2:18515
    /// Unable to open file descriptor for socket connection
    /// ```
    ///
    /// `zerohop validate parse nosrv.txt` says:
    ///
    /// ```text
    /// perftest
    ///   fail           VAL204  perftest-failed  nosrv.txt: Couldn't connect to 10.0.0.2:18515: no server answered (not started yet, a firewall or NetworkPolicy, or a wrong address)
    ///                  nosrv.txt:1 = Couldn't connect to 10.0.0.2:18515
    ///                  nosrv.txt:2 = Unable to open file descriptor for socket connection
    ///
    /// what to fix first
    ///   1. VAL204 perftest-failed (nosrv.txt): Couldn't connect to 10.0.0.2:18515: no server answered (not started yet, a firewall or NetworkPolicy, or a wrong address)
    ///      fix: start the server side first, open its TCP port (18515, or -p) between the pods, and with -R use the RDMA interface's address
    ///        ib_write_bw -d mlx5_0 --report_gbits            # server, first
    ///        ib_write_bw -d mlx5_0 --report_gbits SERVER_IP  # client
    /// ```
    pub static PERFTEST_FAILED = {
        id: "VAL204",
        name: "perftest-failed",
        group: Perftest,
        severity: Error,
    };
}

declare_judgement! {
    /// The path MTU is the largest the fabric allows (4096 bytes).
    ///
    /// ## What it checks
    /// The banner's `Mtu` and `Changing to active mtu - N` after
    /// `Requested mtu is higher than active mtu`: the active MTU of the
    /// port. On RoCE it follows the netdev's MTU (4096 needs at least 4200).
    /// perftest takes the port's active MTU when the requested one is higher
    /// (`src/perftest_parameters.c`, linux-rdma/perftest 25.01.0-0.80); the
    /// 4200-byte netdev MTU is `zerohop_known::roce::MIN_MTU`, from the
    /// kernel's `iboe_get_mtu()` (`include/rdma/ib_addr.h`), which takes
    /// 96 bytes of RoCE headers off the netdev MTU.
    ///
    /// ## Why it matters
    /// An RDMA MTU of 1024 instead of 4096 quadruples the packets per byte:
    /// more headers, more work per message, lower bandwidth with many QPs.
    ///
    /// ## How to fix
    /// Raise the netdev MTU on both sides and on the switch ports (`ip link
    /// set dev IFACE mtu 9000`, or the SR-IOV network's `mtu`); `zerohop
    /// doctor --only QOS001` checks it.
    ///
    /// ## Example
    ///
    /// The capture `mtu.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///                     RDMA_Write BW Test
    ///  Mtu             : 1024[B]
    ///  Link type       : Ethernet
    ///  #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
    ///  65536      5000           90.00             90.00              0.28
    /// ```
    ///
    /// `zerohop validate parse mtu.txt` says:
    ///
    /// ```text
    /// perftest
    ///   warn           VAL205  perftest-mtu-small  mtu.txt: path MTU 1024 bytes, not 4096: the RoCE netdev's MTU is below 4200
    ///                  mtu.txt:2 = Mtu 1024[B]
    ///
    /// what to fix first
    ///   1. VAL205 perftest-mtu-small (mtu.txt): path MTU 1024 bytes, not 4096: the RoCE netdev's MTU is below 4200
    ///      fix: raise the MTU of the netdev (RoCE: at least 4200, usually 9000) on both hosts and the switch ports
    ///        ip link set dev IFACE mtu 9000
    ///        zerohop doctor --only QOS001
    /// ```
    pub static PERFTEST_MTU = {
        id: "VAL205",
        name: "perftest-mtu-small",
        group: Perftest,
        severity: Warning,
    };
}

declare_judgement! {
    /// RoCE uses a routable RoCE v2 GID.
    ///
    /// ## What it checks
    /// On RoCE (`Link type : Ethernet`), the local GID of the connection:
    /// an IPv4-mapped GID (`…:255:255:a:b:c:d`) is RoCE v2 on the rail's
    /// address; a link-local one (`fe80::…`, from the MAC address) is RoCE
    /// v1 or a port without an address.
    /// RoCE v2 GIDs are the IPv4-mapped addresses of the netdev (the kernel's
    /// `drivers/infiniband/core/roce_gid_mgmt.c` adds each address of the
    /// netdev through `rdma_ip2gid`; torvalds/linux
    /// 9938b04472d5c59f8bd8152a548533a8599596a2).
    ///
    /// ## Why it matters
    /// A link-local GID does not cross routers and, as RoCE v1, not even
    /// subnets; NCCL picks its GID the same way, so a test that works on
    /// one leaf can fail across leaves with retry-exceeded errors.
    ///
    /// ## How to fix
    /// Pick the RoCE v2 GID of the rail's IPv4 address: `show_gids` lists
    /// them; pass its index with `-x N` to perftest and `NCCL_IB_GID_INDEX=N`
    /// to NCCL, or use `-R` (rdma_cm), which picks it from the address.
    ///
    /// ## Example
    ///
    /// The capture `gid.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///                     RDMA_Write BW Test
    ///  Link type       : Ethernet
    ///  local address: LID 0000 QPN 0x0093 PSN 0xbf9bfe
    ///  GID: 254:128:00:00:00:00:00:00:12:176:16:255:254:52:10:173
    ///  #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
    ///  65536      5000           90.00             90.00              0.28
    /// ```
    ///
    /// `zerohop validate parse gid.txt` says:
    ///
    /// ```text
    /// perftest
    ///   warn           VAL206  perftest-gid-not-roce-v2  gid.txt: the connection uses a link-local GID (fe80::, from the MAC address): RoCE v1 or no address, not routable
    ///                  gid.txt:4 = local GID
    ///
    /// what to fix first
    ///   1. VAL206 perftest-gid-not-roce-v2 (gid.txt): the connection uses a link-local GID (fe80::, from the MAC address): RoCE v1 or no address, not routable
    ///      fix: use the RoCE v2 GID of the rail's IPv4 address: -x N for perftest, NCCL_IB_GID_INDEX=N for NCCL, or -R
    ///        show_gids
    ///        ib_write_bw -d mlx5_0 -x 3 --report_gbits PEER_IP
    /// ```
    pub static PERFTEST_ROCE_GID = {
        id: "VAL206",
        name: "perftest-gid-not-roce-v2",
        group: Perftest,
        severity: Warning,
    };
}

/// All perftest judgements of one capture.
pub(crate) fn judge(
    capture: &Capture<'_>,
    output: &PerftestOutput,
    expectations: &Expectations,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let several = output.runs.len() > 1;
    for run in &output.runs {
        let subject = run_subject(run, several);
        if let Some(finding) = bandwidth(capture, run, &subject, expectations) {
            findings.push(finding);
        }
        findings.extend(latency(capture, run, &subject));
        if let Some(finding) = mtu(capture, run, &subject, output) {
            findings.push(finding);
        }
        if let Some(finding) = roce_gid(capture, run, &subject) {
            findings.push(finding);
        }
    }
    findings.push(gpu_memory(capture, output));
    findings.push(failed(capture, output));
    findings
}

fn run_subject(run: &PerftestRun, several: bool) -> String {
    let device = run.device.clone().unwrap_or_default();
    let side = if run.server { "server" } else { "client" };
    match (several, device.is_empty()) {
        (true, true) => format!("{side} (line {})", run.line),
        (true, false) => format!("{device} {side}"),
        (false, _) => device,
    }
}

fn bandwidth(
    capture: &Capture<'_>,
    run: &PerftestRun,
    subject: &str,
    expectations: &Expectations,
) -> Option<Finding> {
    let judgement = &PERFTEST_BANDWIDTH;
    let largest = run.bandwidth.iter().max_by_key(|r| r.bytes)?;
    let peak = if largest.peak_gbps > 0.0 {
        format!(", peak {} Gb/s", rate(largest.peak_gbps))
    } else {
        ", peak not measured (duration mode)".to_owned()
    };
    let at = format!(
        "average {} Gb/s at {}{peak}",
        rate(largest.average_gbps),
        size_text(largest.bytes)
    );
    let Some(link) = expectations
        .link_rate_gbps
        .filter(|rate| *rate > 0.0 && rate.is_finite())
    else {
        return Some(
            judgement
                .verdict(
                    capture,
                    Status::Info,
                    subject,
                    format!("{at}; pass --link-rate to compare with the port's rate (perftest does not print it)"),
                )
                .at(capture, largest.line, format!("BW average {} Gb/s", rate(largest.average_gbps)))
                .done(),
        );
    };
    let bidirectional = run
        .test
        .as_deref()
        .is_some_and(|t| t.contains("Bidirectional"));
    let expected = if bidirectional { 2.0 * link } else { link };
    let ratio = largest.average_gbps / expected;
    let status = grade(ratio, expectations, judgement);
    let mut verdict = judgement
        .verdict(
            capture,
            status,
            subject,
            format!(
                "{at}: {} of the {} Gb/s link{}",
                percent(ratio),
                rate(link),
                if bidirectional {
                    " in each direction"
                } else {
                    ""
                }
            ),
        )
        .at(
            capture,
            largest.line,
            format!("BW average {} Gb/s", rate(largest.average_gbps)),
        )
        .evidence("command line", format!("--link-rate {link} Gb/s"));
    if status.is_problem() {
        verdict = verdict.fix(
            Remediation::new("compare the port's rate and the NIC's PCIe link with what they should be, on both hosts")
                .command("zerohop doctor --only rdma,pcie,qos")
                .command("ibstat; rdma link show")
                .command("ib_write_bw -d mlx5_0 -q 4 -D 10 -s 1048576 --report_gbits PEER_IP"),
        );
    }
    Some(verdict.done())
}

fn latency(capture: &Capture<'_>, run: &PerftestRun, subject: &str) -> Vec<Finding> {
    let judgement = &PERFTEST_LATENCY;
    run.latency
        .iter()
        .map(|row| {
            let size = size_text(row.bytes);
            let (Some(typical), Some(p999)) = (row.typical, row.p999) else {
                return judgement
                    .verdict(
                        capture,
                        Status::Info,
                        subject,
                        format!("{size}: average {} µs (duration mode prints no percentiles)", row.average),
                    )
                    .at(capture, row.line, format!("t_avg {} usec", row.average))
                    .done();
            };
            let p99 = row.p99.unwrap_or(p999);
            let text = format!(
                "{size}: median {typical} µs, average {} µs, 99% {p99} µs, 99.9% {p999} µs",
                row.average
            );
            let value = format!("t_typical {typical} usec, 99.9% {p999} usec");
            if typical > 0.0 && p999 > 10.0 * typical {
                judgement
                    .verdict(
                        capture,
                        judgement.problem(),
                        subject,
                        format!("{text}: the 99.9th percentile is {:.0} times the median", p999 / typical),
                    )
                    .at(capture, row.line, value)
                    .fix(
                        Remediation::new("pin the test to the NIC's NUMA node and look for retransmissions and interrupt moderation")
                            .command("numactl --cpunodebind=NODE ib_read_lat -d mlx5_0 PEER_IP")
                            .command("ethtool -S IFACE | grep -iE 'retrans|timeout'"),
                    )
                    .done()
            } else {
                judgement
                    .verdict(capture, Status::Pass, subject, text)
                    .at(capture, row.line, value)
                    .done()
            }
        })
        .collect()
}

fn gpu_memory(capture: &Capture<'_>, output: &PerftestOutput) -> Finding {
    let judgement = &PERFTEST_GPU_MEMORY;
    match &output.cuda {
        Some(cuda)
            if cuda.allocated
                && output
                    .failures
                    .iter()
                    .any(|f| f.kind == FailureKind::MemoryRegistration) =>
        {
            let gpu = cuda.gpu.as_deref().unwrap_or("a GPU");
            judgement
                .verdict(
                    capture,
                    Status::Info,
                    "",
                    format!("GPU memory of {gpu} was allocated but could not be registered with the NIC (see perftest-failed)"),
                )
                .at(capture, cuda.line, format!("CUDA buffer on {gpu}"))
                .done()
        }
        Some(cuda) if cuda.allocated => {
            let gpu = cuda.gpu.as_deref().unwrap_or("a GPU");
            let path = if cuda.dmabuf {
                "registered through DMA-BUF"
            } else {
                "DMA-BUF not reported (nvidia_peermem, or a perftest that does not print it)"
            };
            judgement
                .verdict(
                    capture,
                    Status::Pass,
                    "",
                    format!("the buffer is GPU memory of {gpu}: the test exercises GPUDirect RDMA; {path}"),
                )
                .at(capture, cuda.line, format!("CUDA buffer on {gpu}"))
                .done()
        }
        Some(cuda) => judgement
            .verdict(
                capture,
                Status::Info,
                "",
                "CUDA was initialised but no GPU buffer was allocated",
            )
            .at(capture, cuda.line, "initializing CUDA")
            .done(),
        None => judgement
            .verdict(
                capture,
                Status::Info,
                "",
                "host memory: the test proves the fabric, not GPUDirect RDMA (no --use_cuda)",
            )
            .done(),
    }
}

/// How failures of one kind are explained and fixed. `cuda`: the test used
/// GPU memory.
fn explain(failure: &Failure, cuda: bool) -> (String, Remediation) {
    match failure.kind {
        FailureKind::MemoryRegistration if cuda => (
            "GPU memory could not be registered with the NIC: GPUDirect RDMA has no way into GPU memory (no nvidia_peermem, no DMA-BUF)".to_owned(),
            Remediation::new("load nvidia_peermem or use --use_cuda_dmabuf with the open kernel module (Linux 5.12+); check IPC_LOCK and the locked-memory limit")
                .command("lsmod | grep -E 'nvidia_peermem|nv_peer_mem' || modprobe nvidia-peermem")
                .command("ulimit -l")
                .command("zerohop doctor --only GPU003,MEM004"),
        ),
        FailureKind::MemoryRegistration => (
            "memory could not be registered with the NIC: the locked-memory limit is too low or the container lacks IPC_LOCK".to_owned(),
            Remediation::new("raise the locked-memory limit (ulimit -l unlimited) or add IPC_LOCK to the pod's capabilities")
                .command("ulimit -l")
                .command("securityContext: {capabilities: {add: [IPC_LOCK]}}")
                .command("zerohop doctor --only MEM004"),
        ),
        FailureKind::Connect => (
            format!("{}: no server answered (not started yet, a firewall or NetworkPolicy, or a wrong address)", failure.text),
            Remediation::new("start the server side first, open its TCP port (18515, or -p) between the pods, and with -R use the RDMA interface's address")
                .command("ib_write_bw -d mlx5_0 --report_gbits            # server, first")
                .command("ib_write_bw -d mlx5_0 --report_gbits SERVER_IP  # client"),
        ),
        FailureKind::Device => (
            "the RDMA device is not there: no such device, or the pod lacks /dev/infiniband".to_owned(),
            Remediation::new("pass an existing device with -d and give the pod its RDMA resource")
                .command("ibv_devinfo -l && ls -l /dev/infiniband"),
        ),
        FailureKind::Options => (
            if failure.text.contains("without CUDA") {
                "perftest refused its options: this release needs --use_cuda=<gpu> before --use_cuda_dmabuf".to_owned()
            } else {
                format!("perftest refused its options: {}", failure.text)
            },
            Remediation::new("fix the command line; put --use_cuda=<gpu> before --use_cuda_dmabuf")
                .command("ib_write_bw -d mlx5_0 --use_cuda=0 --use_cuda_dmabuf --report_gbits PEER_IP"),
        ),
        FailureKind::Completion => {
            let (what, fix) = match failure.status {
                Some((status, syndrome)) => {
                    let meaning = verbs::meaning(status, syndrome);
                    (format!("a work request failed with {}: {}", verbs::describe(status, syndrome), meaning.what), meaning.fix)
                }
                None => ("a work request completed with an error".to_owned(), "read the status line that follows it"),
            };
            (
                what,
                Remediation::new(fix)
                    .command("zerohop doctor --only rdma,qos")
                    .command("show_gids"),
            )
        }
        FailureKind::Cuda => (
            format!("CUDA could not be used: {}", failure.text),
            Remediation::new("check the GPU and its driver in the pod (nvidia-smi), and DMA-BUF support for --use_cuda_dmabuf")
                .command("nvidia-smi -q | head -40"),
        ),
        FailureKind::Socket | FailureKind::Resources => (
            format!("the test could not set up its connection: {}", failure.text),
            Remediation::new("read the first error above this line; check that both sides run the same test and options")
                .command("ib_write_bw -d mlx5_0 --report_gbits SERVER_IP"),
        ),
    }
}

fn failed(capture: &Capture<'_>, output: &PerftestOutput) -> Finding {
    let judgement = &PERFTEST_FAILED;
    let consequence =
        |kind: FailureKind| matches!(kind, FailureKind::Socket | FailureKind::Resources);
    let root = output
        .failures
        .iter()
        .find(|f| !consequence(f.kind))
        .or_else(|| output.failures.first());
    let cuda = output.cuda.as_ref().is_some_and(|c| c.allocated);
    if let Some(root) = root {
        let (message, fix) = explain(root, cuda);
        let mut verdict = judgement
            .verdict(capture, judgement.problem(), "", message)
            .at(capture, root.line, root.text.clone());
        for other in output
            .failures
            .iter()
            .filter(|f| f.line != root.line)
            .take(6)
        {
            verdict = verdict.at(capture, other.line, other.text.clone());
        }
        return verdict.fix(fix).done();
    }
    let rows: usize = output
        .runs
        .iter()
        .map(|r| r.bandwidth.len() + r.latency.len())
        .sum();
    if rows > 0 {
        return judgement
            .verdict(
                capture,
                Status::Pass,
                "",
                format!("the test completed with {rows} result row(s)"),
            )
            .done();
    }
    judgement
        .verdict(
            capture,
            Status::Unknown,
            "",
            "no result and no failure line: the capture stops before the test's end",
        )
        .fix(
            Remediation::new("capture the whole output of both sides")
                .command("ib_write_bw … 2>&1 | tee client.log"),
        )
        .done()
}

fn mtu(
    capture: &Capture<'_>,
    run: &PerftestRun,
    subject: &str,
    output: &PerftestOutput,
) -> Option<Finding> {
    let judgement = &PERFTEST_MTU;
    let (line, mtu) = run.mtu?;
    let roce = run.link_type.as_ref().is_some_and(|(_, l)| l == "Ethernet");
    if mtu >= 4096 {
        return Some(
            judgement
                .verdict(
                    capture,
                    Status::Pass,
                    subject,
                    format!("path MTU {mtu} bytes"),
                )
                .at(capture, line, format!("Mtu {mtu}[B]"))
                .done(),
        );
    }
    let mut verdict = judgement
        .verdict(
            capture,
            judgement.problem(),
            subject,
            format!(
                "path MTU {mtu} bytes, not 4096{}",
                if roce {
                    ": the RoCE netdev's MTU is below 4200"
                } else {
                    ""
                }
            ),
        )
        .at(capture, line, format!("Mtu {mtu}[B]"));
    if let Some((lowered, bytes)) = output.mtu_lowered {
        verdict = verdict.at(capture, lowered, format!("changed to active mtu {bytes}"));
    }
    Some(
        verdict
            .fix(
                Remediation::new("raise the MTU of the netdev (RoCE: at least 4200, usually 9000) on both hosts and the switch ports")
                    .command("ip link set dev IFACE mtu 9000")
                    .command("zerohop doctor --only QOS001"),
            )
            .done(),
    )
}

fn roce_gid(capture: &Capture<'_>, run: &PerftestRun, subject: &str) -> Option<Finding> {
    let judgement = &PERFTEST_ROCE_GID;
    let roce = run.link_type.as_ref().is_some_and(|(_, l)| l == "Ethernet");
    let (line, gid) = run.local_gid?;
    if !roce {
        return None;
    }
    let index = run
        .gid_index
        .map_or_else(String::new, |(_, index)| format!(" (GID index {index})"));
    if let Some(address) = gid.ipv4() {
        return Some(
            judgement
                .verdict(
                    capture,
                    Status::Pass,
                    subject,
                    format!("RoCE v2 GID of {address}{index}"),
                )
                .at(capture, line, format!("GID ::ffff:{address}"))
                .done(),
        );
    }
    let what = if gid.link_local() {
        "a link-local GID (fe80::, from the MAC address): RoCE v1 or no address, not routable"
    } else {
        "a GID that is not IPv4-mapped: check it is the RoCE v2 GID of the rail"
    };
    Some(
        judgement
            .verdict(capture, judgement.problem(), subject, format!("the connection uses {what}{index}"))
            .at(capture, line, "local GID")
            .fix(
                Remediation::new("use the RoCE v2 GID of the rail's IPv4 address: -x N for perftest, NCCL_IB_GID_INDEX=N for NCCL, or -R")
                    .command("show_gids")
                    .command("ib_write_bw -d mlx5_0 -x 3 --report_gbits PEER_IP"),
            )
            .done(),
    )
}
