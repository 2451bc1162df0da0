//! Faults only the kernel log shows: `nvidia-peermem` errors, RDMA link
//! flaps, NFS servers that stop answering, `nvidia-fs` errors, PCIe AER
//! errors and GPU faults (`Xid`), each judged over the window of the log
//! and shown with the lines that say so.
//!
//! The log is the live kernel's `/dev/kmsg`, or under `--root DIR` the
//! capture `DIR/var/log/zerohop/kmsg` (see
//! [`zerohop_host::facts::kernel_log`]). Without a readable log every check
//! here is `unknown`: silence from a log that was not read proves nothing.

use std::collections::{BTreeMap, BTreeSet};

use zerohop_core::Remediation;
use zerohop_host::facts::KernelLog;
use zerohop_host::parse::kmsg::Record;
use zerohop_known::kernel_log::{
    self as signatures, AerSeverity, LINK_FLAPS_FAIL, NvidiaFs, Peermem, ServerState,
};
use zerohop_known::xid::{self, XidAction};

use crate::checks::need;
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::quote;

/// The most lines shown as evidence of one finding: the first ones and
/// the last.
const MAX_LINES: usize = 5;

/// The kernel log, or the `unknown` outcome that ends a check.
fn log<'a>(ctx: &'a Context<'_>) -> Result<&'a KernelLog, Box<Outcome>> {
    ctx.facts
        .kernel_log
        .as_ref()
        .map_err(|gap| Box::new(Outcome::gap(gap)))
}

/// Adds `records` as evidence, at most [`MAX_LINES`] of them (the first
/// ones and the last), and what the log may lack.
fn with_lines(mut outcome: Outcome, log: &KernelLog, records: &[&Record]) -> Outcome {
    let shown: Vec<&Record> = if records.len() > MAX_LINES {
        let mut shown = records[..MAX_LINES - 1].to_vec();
        shown.extend(records.last());
        shown
    } else {
        records.to_vec()
    };
    for record in &shown {
        outcome = outcome.evidence(log.locate(record), record.shown());
    }
    if records.len() > shown.len() {
        outcome = outcome.evidence(
            log.source.clone(),
            format!(
                "{} more lines like these between the first and the last",
                records.len() - shown.len()
            ),
        );
    }
    with_notes(outcome, log)
}

/// Adds what the log may lack (a capture read from its end, records cut).
fn with_notes(mut outcome: Outcome, log: &KernelLog) -> Outcome {
    for note in &log.notes {
        outcome = outcome.evidence(log.source.clone(), note.clone());
    }
    outcome
}

/// `1 error`, `7 errors`.
fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A pass that says how much of the log was read.
fn clean(log: &KernelLog, what: &str) -> Outcome {
    with_notes(
        Outcome::pass(format!(
            "no {what} {}; {} in the window",
            log.span(),
            count(log.records.len(), "record")
        ))
        .evidence(
            log.source.clone(),
            format!("{} in the window", count(log.records.len(), "record")),
        ),
        log,
    )
}

declare_check! {
    /// The kernel log shows no `nvidia-peermem` errors.
    ///
    /// ## What it checks
    /// Every record of the window written by `nvidia-peermem`'s `peer_err()`
    /// (`nvidia-peermem <function>:<line> [ERROR ]…`, always at error level
    /// in `kernel-open/nvidia-peermem/nvidia-peermem.c`), and the module
    /// loader's refusals of `nvidia_peermem` or of the legacy
    /// `nv_peer_mem` (`Unknown symbol`, `disagrees about version of
    /// symbol`). A failure to load or to register with the peer-memory API
    /// of the MLNX_OFED/DOCA RDMA stack (`error while registering … client`,
    /// a bad module parameter, a symbol refused) fails as such, naming the
    /// module; other errors, such as `detected invalid context, skipping
    /// further processing` from `nv_get_p2p_free_callback`, fail with their
    /// count. The lines are the evidence.
    ///
    /// The log is `/dev/kmsg` on the live host, and under `--root DIR` the
    /// capture `DIR/var/log/zerohop/kmsg` (any of `cat /dev/kmsg`, `dmesg`,
    /// `journalctl -k` or a syslog file), or the running kernel's log when
    /// `DIR` is this host's root mounted elsewhere (`/host`). The window is
    /// `--log-window` (24h by default) before now, or before a capture's
    /// last record. Without a readable log the check is `unknown`, and says
    /// which gap it is: no capture, not captured in a snapshot, or
    /// unreadable.
    ///
    /// ## Why it matters
    /// `nvidia-peermem` is what lets the NIC read and write GPU memory when
    /// DMA-BUF is not used. Its `module_init` fails when the registration
    /// fails, so the kernel unloads it: a load that failed leaves only
    /// these lines behind, and every GPUDirect RDMA transfer falls back to
    /// host memory. Errors in its free callback mean GPU memory was
    /// released while the NIC still had it registered; node health
    /// monitors such as Lepton AI's GPUd treat repeated `invalid context`
    /// errors as a GPU-to-NIC communication fault.
    ///
    /// ## How to fix
    /// A load or registration failure: the module was built against
    /// another RDMA stack than the one loaded. After a MLNX_OFED/DOCA or
    /// kernel update, reinstall the NVIDIA driver (or restart the GPU
    /// Operator's driver pod) so that it is rebuilt, then `modprobe
    /// nvidia-peermem`; replace the legacy `nv_peer_mem` with it (drivers
    /// 470 and later). Runtime errors: restart the jobs that use GPUDirect
    /// RDMA; if they come back, update the NVIDIA driver or move to DMA-BUF
    /// (the open kernel module on Linux 5.12 or later), which does not use
    /// `nvidia-peermem`.
    ///
    /// ## Evidence
    /// The kernel log's records in the window, matched by
    /// `zerohop_known::kernel_log::peermem`. No record is a pass only
    /// when the log was read; no capture, a snapshot without the log, or
    /// an unreadable `/dev/kmsg` is `unknown`.
    ///
    /// ## Source
    /// NVIDIA/open-gpu-kernel-modules
    /// `kernel-open/nvidia-peermem/nvidia-peermem.c` at
    /// 0dd4d36d15d05151a2834c66e47b16a8bed177a8 (`peer_err()`,
    /// `nv_mem_client_init()` returning the registration's error); Linux
    /// `kernel/module/main.c` (v6.8) for the loader's `Unknown symbol` and
    /// `disagrees about version of symbol` lines.
    ///
    /// Real capture: crates/zerohop-doctor/tests/kernel_log.rs::dmesg_iso_capture_of_peermem_errors
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::legacy_nv_peer_mem_load_failure_is_read
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KLOG001/fail-invalid-context/`:
    ///
    /// ```text
    /// kernel-log
    ///   fail           KLOG001  peermem-errors  3 errors from nvidia-peermem in the last 24h of the capture (to 8125.000000 s after boot): mapping or freeing gpu memory for the nic failed
    ///                  /var/log/zerohop/kmsg:1 = [ 8120.104411] nvidia-peermem nv_get_p2p_free_callback:119 ERROR detected invalid context, skipping further processing
    ///                  /var/log/zerohop/kmsg:2 = [ 8120.115902] nvidia-peermem nv_get_p2p_free_callback:119 ERROR detected invalid context, skipping further processing
    ///                  /var/log/zerohop/kmsg:3 = [ 8120.127310] nvidia-peermem nv_get_p2p_free_callback:119 ERROR detected invalid context, skipping further processing
    ///
    /// what to fix first
    ///   1. KLOG001 peermem-errors: 3 errors from nvidia-peermem in the last 24h of the capture (to 8125.000000 s after boot): mapping or freeing gpu memory for the nic failed
    ///      fix: restart the jobs that use gpudirect rdma; if the errors return, update the nvidia driver or move to dma-buf (open kernel module, linux 5.12 or later), which does not use nvidia-peermem
    ///        cat /proc/driver/nvidia/version /sys/module/nvidia_peermem/version
    /// ```
    pub static PEERMEM_ERRORS = {
        id: "KLOG001",
        name: "peermem-errors",
        group: KernelLog,
        severity: Error,
        requires: [],
        run: peermem_errors,
    };
}

fn peermem_errors(ctx: &Context<'_>) -> Vec<Outcome> {
    let log = need!(log(ctx));
    let matches: Vec<(&Record, signatures::PeermemEvent<'_>)> = log
        .records
        .iter()
        .filter_map(|record| signatures::peermem(record.message()).map(|event| (record, event)))
        .collect();
    if matches.is_empty() {
        return vec![clean(log, "nvidia-peermem errors")];
    }
    let records: Vec<&Record> = matches.iter().map(|(record, _)| *record).collect();
    let failed: BTreeSet<&str> = matches
        .iter()
        .filter(|(_, event)| event.kind == Peermem::Registration)
        .map(|(_, event)| event.module)
        .collect();
    let registration = matches
        .iter()
        .filter(|(_, event)| event.kind == Peermem::Registration)
        .count();
    let outcome = if let Some(module) = failed.iter().next() {
        let modules: Vec<&str> = failed.iter().copied().collect();
        Outcome::fail(format!(
            "{} failed to load or to register with the rdma stack's peer-memory api {} ({}): gpudirect rdma through it is off",
            modules.join(" and "),
            log.span(),
            count(registration, "failure"),
        ))
        .fix(
            Remediation::new(
                "rebuild the peer-memory module against the loaded mlnx_ofed/doca rdma stack (reinstall the nvidia driver, or restart the gpu operator's driver pod, after a mlnx_ofed/doca or kernel update; the legacy nv_peer_mem is replaced by nvidia_peermem from driver 470), then load it",
            )
            .command(format!(
                "modprobe -r {module}; modprobe nvidia_peermem && grep nvidia_peermem /proc/modules && ls /sys/kernel/mm/memory_peers"
            )),
        )
    } else {
        Outcome::fail(format!(
            "{} from nvidia-peermem {}: mapping or freeing gpu memory for the nic failed",
            count(records.len(), "error"),
            log.span()
        ))
        .fix(
            Remediation::new(
                "restart the jobs that use gpudirect rdma; if the errors return, update the nvidia driver or move to dma-buf (open kernel module, linux 5.12 or later), which does not use nvidia-peermem",
            )
            .command("cat /proc/driver/nvidia/version /sys/module/nvidia_peermem/version"),
        )
    };
    vec![with_lines(outcome, log, &records)]
}

declare_check! {
    /// RDMA interfaces did not lose their link repeatedly.
    ///
    /// ## What it checks
    /// Link changes in the window, per interface: mlx5's `Link down` and
    /// `Link up` (`mlx5e_update_carrier()`, written `mlx5_core
    /// 0000:3b:00.0 enp59s0f0np0: Link down`) and systemd-networkd's `Lost
    /// carrier` and `Gained carrier` (`ib6: lost carrier`) when a syslog
    /// capture holds them. Counted are mlx5 interfaces, IP over InfiniBand
    /// interfaces (`ib…`) and the netdevs of the host's RDMA devices. Five
    /// or more losses fail, the threshold of Azure's node health checks
    /// (fault `NHC2005`, five in 24 hours); two to four warn; a single one
    /// (a port brought up at boot, a cable moved) passes.
    ///
    /// The log and its window are those of `peermem-errors` (KLOG001).
    ///
    /// ## Why it matters
    /// Every flap tears down the queue pairs on the port: NCCL and RDMA
    /// jobs see transport errors (`IBV_WC_RETRY_EXC_ERR`) and hang or die,
    /// and storage over RDMA stalls until the link and the paths come back.
    /// A port that flaps now and then looks healthy whenever it is looked
    /// at.
    ///
    /// ## How to fix
    /// Look at the physical path of the interface named: reseat or replace
    /// the cable or transceiver, move to another switch port, and read the
    /// port's counters (`mlxlink -d <pci> -c -e`, `link_downed` under
    /// `/sys/class/infiniband/<dev>/ports/<p>/counters/`). Drain the node
    /// while it flaps.
    ///
    /// ## Evidence
    /// The kernel log's link changes in the window (see KLOG001 for where
    /// the log is read), and the netdevs of `/sys/class/infiniband`. No log is
    /// `unknown`, with the kind of gap.
    ///
    /// ## Source
    /// `drivers/net/ethernet/mellanox/mlx5/core/en_main.c`
    /// (`mlx5e_update_carrier()`), Linux v6.8; systemd `src/network/networkd-link.c`
    /// (v255); Azure/azurehpc-health-checks
    /// `customTests/azure_ib_link_flapping.nhc` (threshold 5 in 24 hours).
    ///
    /// Real capture: crates/zerohop-doctor/tests/kernel_log.rs::syslog_capture_of_an_ib_link_flapping
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KLOG002/fail-ipoib-flapping/`:
    ///
    /// ```text
    /// kernel-log
    ///   fail           KLOG002  rdma-link-flaps  ib2: ib2 lost its link 5 times in the last 24h of the capture (to Mar  3 02:14:09): the link flaps (5 or more losses fail)
    ///                  /var/log/zerohop/kmsg:1 = Mar  3 02:10:07 gpu-node-07 systemd-networkd[811]: ib2: Lost carrier
    ///                  /var/log/zerohop/kmsg:2 = Mar  3 02:10:09 gpu-node-07 systemd-networkd[811]: ib2: Gained carrier
    ///                  /var/log/zerohop/kmsg:3 = Mar  3 02:11:07 gpu-node-07 systemd-networkd[811]: ib2: Lost carrier
    ///                  /var/log/zerohop/kmsg:4 = Mar  3 02:11:09 gpu-node-07 systemd-networkd[811]: ib2: Gained carrier
    ///                  /var/log/zerohop/kmsg:10 = Mar  3 02:14:09 gpu-node-07 systemd-networkd[811]: ib2: Gained carrier
    ///                  /var/log/zerohop/kmsg = 5 more lines like these between the first and the last
    ///
    /// what to fix first
    ///   1. KLOG002 rdma-link-flaps (ib2): ib2 lost its link 5 times in the last 24h of the capture (to Mar  3 02:14:09): the link flaps (5 or more losses fail)
    ///      fix: check the cable, transceiver and switch port of the interface, and drain the node while its link flaps
    ///        ip -s link show ib2
    ///        grep . /sys/class/infiniband/*/ports/*/counters/link_downed
    /// ```
    pub static LINK_FLAPS = {
        id: "KLOG002",
        name: "rdma-link-flaps",
        group: KernelLog,
        severity: Error,
        requires: [],
        run: link_flaps,
    };
}

/// One interface's link changes.
#[derive(Default)]
struct Flaps<'a> {
    downs: usize,
    pci: Option<&'a str>,
    records: Vec<&'a Record>,
}

fn link_flaps(ctx: &Context<'_>) -> Vec<Outcome> {
    let log = need!(log(ctx));
    let rdma_netdevs: BTreeSet<&str> = ctx
        .facts
        .rdma
        .list()
        .iter()
        .flat_map(|device| {
            device.netdevs.iter().map(String::as_str).chain(
                device
                    .port_list()
                    .iter()
                    .filter_map(|p| p.netdev.as_deref()),
            )
        })
        .collect();
    let mut interfaces: BTreeMap<&str, Flaps<'_>> = BTreeMap::new();
    for record in &log.records {
        let Some(change) = signatures::link_change(record.message()) else {
            continue;
        };
        let counted = change.pci.is_some()
            || signatures::is_ipoib_name(change.netdev)
            || rdma_netdevs.contains(change.netdev);
        if !counted {
            continue;
        }
        let flaps = interfaces.entry(change.netdev).or_default();
        flaps.downs += usize::from(!change.up);
        flaps.pci = flaps.pci.or(change.pci);
        flaps.records.push(record);
    }
    if interfaces.is_empty() {
        return vec![clean(log, "link changes of rdma interfaces")];
    }
    interfaces
        .into_iter()
        .map(|(netdev, flaps)| {
            let lost = format!(
                "{netdev} lost its link {} {}",
                times(flaps.downs),
                log.span()
            );
            let outcome = if flaps.downs >= LINK_FLAPS_FAIL {
                Outcome::fail(format!(
                    "{lost}: the link flaps ({LINK_FLAPS_FAIL} or more losses fail)"
                ))
                .fix(flap_fix(netdev, flaps.pci))
            } else if flaps.downs >= 2 {
                Outcome::warn(format!("{lost}: watch it for flapping"))
                    .fix(flap_fix(netdev, flaps.pci))
            } else {
                Outcome::pass(lost)
            };
            with_lines(outcome.subject(netdev), log, &flaps.records)
        })
        .collect()
}

/// `once`, `twice`, `6 times`.
fn times(n: usize) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    }
}

fn flap_fix(netdev: &str, pci: Option<&str>) -> Remediation {
    let fix = Remediation::new(
        "check the cable, transceiver and switch port of the interface, and drain the node while its link flaps",
    )
    .command(format!("ip -s link show {}", quote(netdev)));
    match pci {
        Some(pci) => fix.command(format!("mlxlink -d {} -c -e", quote(pci))),
        None => fix.command("grep . /sys/class/infiniband/*/ports/*/counters/link_downed"),
    }
}

declare_check! {
    /// No NFS server stopped answering.
    ///
    /// ## What it checks
    /// The RPC client's liveness messages in the window, per server:
    /// `nfs: server <name> not responding, still trying` (a hard mount
    /// waiting), `… not responding, timed out` (a soft mount giving up with
    /// an error) and `nfs: server <name> OK` (`call_timeout()` and
    /// `call_decode()` in `net/sunrpc/clnt.c`; `lockd` too). A server whose
    /// last message is `not responding` fails; one that answered again
    /// after not responding warns.
    ///
    /// The log and its window are those of `peermem-errors` (KLOG001).
    ///
    /// ## Why it matters
    /// While a server does not answer, every read and write on its mounts
    /// blocks (hard mounts) or fails with `EIO` (soft mounts): data loaders
    /// stall and GPUs idle. A server that stalls now and then costs the
    /// same at random times, and NFS over RDMA adds the RDMA link and
    /// connection to what can stall.
    ///
    /// ## How to fix
    /// Check the server and the path to it: that it is up and not
    /// overloaded, the network or RDMA link between (`rdma-link-flaps`,
    /// KLOG002), and `nfsstat -m` for the mount's options. Prefer hard
    /// mounts for training data, so that a stall is a pause, not an error.
    ///
    /// ## Evidence
    /// The kernel log's `nfs:`/`lockd:` server messages in the window. No
    /// log is `unknown`, with the kind of gap.
    ///
    /// ## Source
    /// `net/sunrpc/clnt.c` (`call_timeout()`, `call_decode()`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::nfs_server_that_answered_again_warns
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KLOG003/fail-soft-mount-timed-out/`:
    ///
    /// ```text
    /// kernel-log
    ///   fail           KLOG003  nfs-server-not-responding  filer-b: nfs server filer-b stopped responding in the last 24h of the capture (to 61234.500000 s after boot) and has not answered since: i/o on its soft mounts fails with timeouts
    ///                  /var/log/zerohop/kmsg:1 = kern  :notice: [61234.500000] nfs: server filer-b not responding, timed out
    ///
    /// what to fix first
    ///   1. KLOG003 nfs-server-not-responding (filer-b): nfs server filer-b stopped responding in the last 24h of the capture (to 61234.500000 s after boot) and has not answered since: i/o on its soft mounts fails with timeouts
    ///      fix: check that the server is up and not overloaded, and the network or rdma path to it
    ///        ping -c 3 filer-b
    ///        nfsstat -m
    /// ```
    pub static NFS_NOT_RESPONDING = {
        id: "KLOG003",
        name: "nfs-server-not-responding",
        group: KernelLog,
        severity: Error,
        requires: [],
        run: nfs_not_responding,
    };
}

/// One server's liveness messages.
#[derive(Default)]
struct Silences<'a> {
    program: &'a str,
    stalls: usize,
    last: Option<ServerState>,
    records: Vec<&'a Record>,
}

fn nfs_not_responding(ctx: &Context<'_>) -> Vec<Outcome> {
    let log = need!(log(ctx));
    let mut servers: BTreeMap<&str, Silences<'_>> = BTreeMap::new();
    for record in &log.records {
        let Some(event) = signatures::nfs_server(record.message()) else {
            continue;
        };
        let server = servers.entry(event.server).or_default();
        server.program = event.program;
        server.stalls += usize::from(event.state != ServerState::Ok);
        server.last = Some(event.state);
        server.records.push(record);
    }
    servers.retain(|_, server| server.stalls > 0);
    if servers.is_empty() {
        return vec![clean(log, "nfs server that stopped responding")];
    }
    servers
        .into_iter()
        .map(|(name, server)| {
            let fix = Remediation::new(
                "check that the server is up and not overloaded, and the network or rdma path to it",
            )
            .command(format!("ping -c 3 {}", quote(name)))
            .command("nfsstat -m");
            let outcome = match server.last {
                Some(ServerState::Ok) => Outcome::warn(format!(
                    "{} server {name} stopped responding {} {}, and answered again",
                    server.program,
                    times(server.stalls),
                    log.span()
                )),
                Some(ServerState::TimedOut) => Outcome::fail(format!(
                    "{} server {name} stopped responding {} and has not answered since: i/o on its soft mounts fails with timeouts",
                    server.program,
                    log.span()
                )),
                _ => Outcome::fail(format!(
                    "{} server {name} stopped responding {} and has not answered since: i/o on its mounts is blocked",
                    server.program,
                    log.span()
                )),
            };
            with_lines(outcome.subject(name).fix(fix), log, &server.records)
        })
        .collect()
}

declare_check! {
    /// The kernel log shows no `nvidia-fs` errors.
    ///
    /// ## What it checks
    /// Records of the window from the GPUDirect Storage driver: its
    /// messages, `nvidia-fs:…` (`nvfs_msg()` in NVIDIA/gds-nvidia-fs
    /// `src/nvfs-core.h`), judged by their level, and its set-up failures
    /// (`nvidia_fs: failed to register a major number`, `Failed to create
    /// the device`). Errors fail; warnings warn, and so do messages whose
    /// level the log does not give (plain `dmesg` and syslog lines), since
    /// the driver also writes information at the same prefix. Information
    /// and debug messages are not counted.
    ///
    /// The log and its window are those of `peermem-errors` (KLOG001).
    ///
    /// ## Why it matters
    /// cuFile reports little more than an error code when the kernel side
    /// of a GPUDirect Storage read fails; `nvidia-fs` says why in the
    /// kernel log: I/O not aligned or not `O_DIRECT`, GPU pages that could
    /// not be pinned or mapped, requests mixing CPU and GPU pages. A driver
    /// that failed to set itself up makes every cuFile call fall back to
    /// compatibility mode (bounce buffers through host memory).
    ///
    /// ## How to fix
    /// Read the lines shown: alignment and `O_DIRECT` errors point at the
    /// application's I/O; pinning and DMA mapping errors at the driver.
    /// Install the `nvidia-fs` that matches the CUDA release's GDS, reload
    /// it, and compare `/proc/driver/nvidia-fs/stats` and `gdscheck -p`.
    ///
    /// ## Evidence
    /// The kernel log's `nvidia-fs:` and `nvidia_fs:` records in the window,
    /// with their level when the log gives one. No log is `unknown`, with the
    /// kind of gap.
    ///
    /// ## Source
    /// NVIDIA/gds-nvidia-fs `src/nvfs-core.h` (`nvfs_msg()`, `nvfs_err`,
    /// `nvfs_warn`, `nvfs_info`) at e39115953c571f2506be9759fa37119ebe003b60,
    /// and `src/nvfs-core.c` (`nvfs_init()`).
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::nvidia_fs_lines_are_judged_by_level
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KLOG004/fail-driver-setup/`:
    ///
    /// ```text
    /// kernel-log
    ///   fail           KLOG004  nvidia-fs-log-errors  1 error from nvidia-fs in the last 24h of the capture (to 9.100100 s after boot)
    ///                  /var/log/zerohop/kmsg:2 = [    9.100100] nvidia_fs: failed to register a major number
    ///
    /// what to fix first
    ///   1. KLOG004 nvidia-fs-log-errors: 1 error from nvidia-fs in the last 24h of the capture (to 9.100100 s after boot)
    ///      fix: read the lines for the failing operation: alignment and o_direct errors are the application's, pinning and dma mapping errors the driver's; install the nvidia-fs of your cuda release's gds
    ///        cat /proc/driver/nvidia-fs/stats
    ///        /usr/local/cuda/gds/tools/gdscheck -p
    /// ```
    pub static NVIDIA_FS_ERRORS = {
        id: "KLOG004",
        name: "nvidia-fs-log-errors",
        group: KernelLog,
        severity: Error,
        requires: [],
        run: nvidia_fs_errors,
    };
}

/// The syslog level of errors and worse; warnings are one above.
const ERROR_LEVEL: u8 = 3;

fn nvidia_fs_errors(ctx: &Context<'_>) -> Vec<Outcome> {
    let log = need!(log(ctx));
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut unleveled = Vec::new();
    for record in &log.records {
        match (signatures::nvidia_fs(record.message()), record.level) {
            (None, _) => {}
            (Some(NvidiaFs::InitFailure), _) => errors.push(record),
            (Some(NvidiaFs::Driver), Some(level)) if level <= ERROR_LEVEL => errors.push(record),
            (Some(NvidiaFs::Driver), Some(level)) if level == ERROR_LEVEL + 1 => {
                warnings.push(record);
            }
            (Some(NvidiaFs::Driver), Some(_)) => {}
            (Some(NvidiaFs::Driver), None) => unleveled.push(record),
        }
    }
    let fix = Remediation::new(
        "read the lines for the failing operation: alignment and o_direct errors are the application's, pinning and dma mapping errors the driver's; install the nvidia-fs of your cuda release's gds",
    )
    .command("cat /proc/driver/nvidia-fs/stats")
    .command("/usr/local/cuda/gds/tools/gdscheck -p");
    let outcome = if !errors.is_empty() {
        with_lines(
            Outcome::fail(format!(
                "{} from nvidia-fs {}",
                count(errors.len(), "error"),
                log.span()
            ))
            .fix(fix),
            log,
            &errors,
        )
    } else if !warnings.is_empty() || !unleveled.is_empty() {
        let mut lines = warnings.clone();
        lines.extend(&unleveled);
        lines.sort_by_key(|record| record.line);
        let mut what = Vec::new();
        if !warnings.is_empty() {
            what.push(count(warnings.len(), "warning"));
        }
        if !unleveled.is_empty() {
            what.push(format!(
                "{} without a level",
                count(unleveled.len(), "message")
            ));
        }
        let unsure = if unleveled.is_empty() {
            ""
        } else {
            ": the log does not say which are errors"
        };
        with_lines(
            Outcome::warn(format!(
                "{} from nvidia-fs {}{unsure}",
                what.join(" and "),
                log.span()
            ))
            .fix(fix),
            log,
            &lines,
        )
    } else {
        clean(log, "nvidia-fs errors")
    };
    vec![outcome]
}

declare_check! {
    /// No PCIe device reported AER errors.
    ///
    /// ## What it checks
    /// PCIe Advanced Error Reporting in the window, per reporting function:
    /// `PCIe Bus Error: severity=…` (`aer_print_error()` in
    /// `drivers/pci/pcie/aer.c`, prefixed with the function: `pcieport
    /// 0000:00:03.0: AER: PCIe Bus Error: …`). Uncorrected errors, fatal or
    /// not (`Uncorrected`, since 2023 `Uncorrectable`), fail; corrected
    /// ones (`Corrected`, `Correctable`) warn.
    ///
    /// The log and its window are those of `peermem-errors` (KLOG001).
    ///
    /// ## Why it matters
    /// An uncorrected error loses a transaction or resets the link: the GPU
    /// or NIC behind it drops off the bus (`Xid 79`, `mlx5` health
    /// recovery) or corrupts a transfer. Corrected errors are retried by
    /// the link, at a cost in bandwidth; a steady stream of them is a
    /// marginal link (riser, cable, retimer) on its way to worse, and the
    /// first place to look when a GPU-NIC path underperforms.
    ///
    /// ## How to fix
    /// Find the device behind the reporting port (`lspci -t`), reseat it
    /// or its riser, check that the slot trains at its full width and speed
    /// (PCI001), and update its firmware. Replace hardware that keeps
    /// reporting uncorrected errors.
    ///
    /// ## Evidence
    /// The kernel log's `PCIe Bus Error: severity=` records in the window,
    /// and the PCI functions they name. No log is `unknown`, with the kind of
    /// gap.
    ///
    /// ## Source
    /// `drivers/pci/pcie/aer.c` (`aer_print_error()`,
    /// `aer_error_severity_string[]`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::corrected_aer_errors_warn_per_port
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KLOG005/fail-uncorrected-fatal/`:
    ///
    /// ```text
    /// kernel-log
    ///   fail           KLOG005  pcie-aer-errors  0000:18:00.0: 0000:18:00.0 reported 1 aer error in the last 24h of the capture (to 7001.000300 s after boot), the worst uncorrected and fatal
    ///                  /var/log/zerohop/kmsg:2 = kern  :err   : [ 7001.000200] nvidia 0000:18:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)
    ///
    /// what to fix first
    ///   1. KLOG005 pcie-aer-errors (0000:18:00.0): 0000:18:00.0 reported 1 aer error in the last 24h of the capture (to 7001.000300 s after boot), the worst uncorrected and fatal
    ///      fix: reseat the device behind this port or its riser, check its link width and speed, update its firmware, and replace it if uncorrected errors return
    ///        lspci -vvv -s 0000:18:00.0 | grep -i -e lnksta -e uesta -e cesta
    /// ```
    pub static PCIE_AER_ERRORS = {
        id: "KLOG005",
        name: "pcie-aer-errors",
        group: KernelLog,
        severity: Error,
        requires: [],
        run: pcie_aer_errors,
    };
}

/// One function's AER reports.
struct Reports<'a> {
    worst: AerSeverity,
    records: Vec<&'a Record>,
}

fn pcie_aer_errors(ctx: &Context<'_>) -> Vec<Outcome> {
    let log = need!(log(ctx));
    let mut devices: BTreeMap<Option<&str>, Reports<'_>> = BTreeMap::new();
    for record in &log.records {
        let Some(error) = signatures::aer(record.message()) else {
            continue;
        };
        let reports = devices.entry(error.device).or_insert(Reports {
            worst: error.severity,
            records: Vec::new(),
        });
        reports.worst = reports.worst.max(error.severity);
        reports.records.push(record);
    }
    if devices.is_empty() {
        return vec![clean(log, "pcie aer errors")];
    }
    devices
        .into_iter()
        .map(|(device, reports)| {
            let name = device.unwrap_or("a pcie function");
            let what = match ctx.facts.pci.get(device.unwrap_or("")) {
                Some(pci) => format!("{name} ({})", pci.label()),
                None => name.to_owned(),
            };
            let inspect = match device {
                Some(device) => format!(
                    "lspci -vvv -s {} | grep -i -e lnksta -e uesta -e cesta",
                    quote(device)
                ),
                None => "lspci -tv".to_owned(),
            };
            let errors = count(reports.records.len(), "aer error");
            let outcome = match reports.worst {
                AerSeverity::Fatal | AerSeverity::NonFatal => Outcome::fail(format!(
                    "{what} reported {errors} {}, the worst {}",
                    log.span(),
                    if reports.worst == AerSeverity::Fatal {
                        "uncorrected and fatal"
                    } else {
                        "uncorrected"
                    }
                ))
                .fix(
                    Remediation::new(
                        "reseat the device behind this port or its riser, check its link width and speed, update its firmware, and replace it if uncorrected errors return",
                    )
                    .command(inspect),
                ),
                AerSeverity::Corrected => Outcome::warn(format!(
                    "{what} reported {errors} {}, all corrected: a marginal link when they keep coming",
                    log.span()
                ))
                .fix(
                    Remediation::new(
                        "watch the rate of corrected errors; reseat the device or its riser when it keeps rising",
                    )
                    .command(inspect),
                ),
            };
            with_lines(outcome.subject(device.unwrap_or("")), log, &reports.records)
        })
        .collect()
}

declare_check! {
    /// No GPU reported a fault that takes it out of service.
    ///
    /// ## What it checks
    /// The NVIDIA driver's fault reports in the window, `NVRM: Xid
    /// (PCI:0000:cb:00): 109, pid=…, name=…, <details>`, per GPU, judged by
    /// NVIDIA's Xid catalog (its *immediate resolution* column, kept in
    /// `zerohop_known::xid`). A GPU that needs a reset (`RESET_GPU`: Xid 48
    /// double-bit ECC, 64 row-remap failure, 74 NVLink, 95 uncontained
    /// memory error, 109 context-switch timeout, 119/120 GSP timeout and
    /// error, 140, 143, fatal NVLink5 144–150 …), a reboot of the node (79:
    /// fallen off the bus; 151) or a look at its power (54) fails: drain
    /// it. Faults the application restarts from (`RESTART_APP`: 13, 31, 43,
    /// 94 …) warn. Information (`IGNORE`: 63 row remapped, 92, non-fatal
    /// NVLink5 errors …) passes as information. A number the catalog does
    /// not have in use warns. The address the driver writes (domain, bus,
    /// device) is tied to the GPU's PCI function; Xid 154 is judged by the
    /// recovery action it names.
    ///
    /// The log and its window are those of `peermem-errors` (KLOG001).
    ///
    /// ## Why it matters
    /// The data path ends in GPU memory: a GPU that fell off the bus, lost
    /// its GSP firmware or holds uncorrectable memory errors fails every
    /// job placed on it, and every GPUDirect RDMA or Storage transfer to it,
    /// until it is reset or the node rebooted, while the node still
    /// advertises it. GPUd, NVSentinel and DCGM all classify these lines;
    /// the node's condition must say the same.
    ///
    /// ## How to fix
    /// Drain the GPU's jobs (cordon the node), then reset the GPU
    /// (`nvidia-smi -r -i <pci>`) or reboot the node as the finding says;
    /// Xid 79 needs a reboot, and when it returns a reseat, the slot's
    /// power and the board's firmware. Faults that return after a reset
    /// go to NVIDIA support with `nvidia-bug-report.sh`. Application
    /// faults (warnings) point at the job: restart it and read the
    /// details in the line.
    ///
    /// ## Evidence
    /// The kernel log's `NVRM: Xid` records in the window and the PCI
    /// functions of `/sys/bus/pci/devices` that tie each to its GPU (an
    /// address no function matches is shown as logged). No record is a
    /// pass only when the log was read; no log is `unknown`, with the kind
    /// of gap.
    ///
    /// ## Source
    /// NVIDIA's Xid catalog
    /// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, r590),
    /// as transcribed by leptonai/gpud
    /// `components/accelerator/nvidia/xid/catalog_generated.go` at
    /// 73e270e3e0fd490ec5c33e144ad894de7d6c4d21; the line's format from
    /// NVIDIA/open-gpu-kernel-modules `krcReportXid_IMPL()` in
    /// `src/nvidia/src/kernel/gpu/rc/kernel_rc.c`.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::gpud_xid_capture_needs_a_gpu_reset
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KLOG006/fail-ctx-switch-timeout/`:
    ///
    /// ```text
    /// kernel-log
    ///   fail           KLOG006  gpu-xid-errors  0000:cb:00: 0000:cb:00 reported xid 13 x3 (graphics engine exception: restart the application), xid 109 (context switch timeout error: reset the gpu) in the last 24h of the capture (to 2024-08-30T11:43:14): the gpu is out of service until someone acts (reset the gpu); drain it
    ///                  /var/log/zerohop/kmsg:2 = [Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter
    ///                  /var/log/zerohop/kmsg:3 = [Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Global Exception on (GPC 7, TPC 7, SM 0): Multiple Warp Errors
    ///                  /var/log/zerohop/kmsg:4 = [Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 0x57c728=0x1f81fb60 0x57c72c=0x1174
    ///                  /var/log/zerohop/kmsg:5 = [Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005
    ///
    /// what to fix first
    ///   1. KLOG006 gpu-xid-errors (0000:cb:00): 0000:cb:00 reported xid 13 x3 (graphics engine exception: restart the application), xid 109 (context switch timeout error: reset the gpu) in the last 24h of the capture (to 2024-08-30T11:43:14): the gpu is out of service until someone acts (reset the gpu); drain it
    ///      fix: drain the gpu's jobs, then reset it (or reboot the node); contact nvidia support if the fault returns after the reset
    ///        nvidia-smi -r -i 0000:cb:00.0
    ///        nvidia-smi -q -i 0000:cb:00.0 | grep -i -A3 -e 'remapped rows' -e retired -e xid
    /// ```
    pub static GPU_XID_ERRORS = {
        id: "KLOG006",
        name: "gpu-xid-errors",
        group: KernelLog,
        severity: Error,
        requires: [],
        run: gpu_xid_errors,
    };
}

/// One GPU's Xid reports.
struct Faults<'a> {
    /// The GPU's PCI function, when one on the bus matches the address.
    function: Option<&'a str>,
    /// What each Xid number asks for (`None`: not in the catalog), with
    /// how often it was reported.
    codes: BTreeMap<u32, (Option<XidAction>, usize)>,
    records: Vec<&'a Record>,
}

fn gpu_xid_errors(ctx: &Context<'_>) -> Vec<Outcome> {
    let log = need!(log(ctx));
    let functions = ctx.facts.pci.list();
    let mut gpus: BTreeMap<&str, Faults<'_>> = BTreeMap::new();
    for record in &log.records {
        let Some(event) = xid::parse(record.message()) else {
            continue;
        };
        let faults = gpus.entry(event.gpu).or_insert_with(|| Faults {
            function: functions
                .iter()
                .find(|f| event.names(&f.address))
                .map(|f| f.address.as_str()),
            codes: BTreeMap::new(),
            records: Vec::new(),
        });
        let code = faults
            .codes
            .entry(event.code)
            .or_insert((xid::action_of(&event), 0));
        // Xid 154 names a new recovery action each time: the worst counts.
        code.0 = code.0.max(xid::action_of(&event));
        code.1 += 1;
        faults.records.push(record);
    }
    if gpus.is_empty() {
        return vec![clean(log, "gpu xid errors")];
    }
    gpus.into_iter()
        .map(|(logged, faults)| {
            let subject = faults.function.unwrap_or(logged);
            let what = match faults.function.and_then(|f| ctx.facts.pci.get(f)) {
                Some(pci) => format!("{subject} ({})", pci.label()),
                None => subject.to_owned(),
            };
            let listed: Vec<String> = faults
                .codes
                .iter()
                .map(|(code, (action, times))| {
                    let name = xid::lookup(*code).map_or("not in nvidia's xid catalog", |e| e.name);
                    let action = action.map_or("unknown action", XidAction::says);
                    let times = if *times > 1 { format!(" x{times}") } else { String::new() };
                    format!("xid {code}{times} ({name}: {})", action)
                })
                .collect();
            let worst = faults.codes.values().filter_map(|(action, _)| *action).max();
            let unlisted = faults.codes.values().any(|(action, _)| action.is_none());
            let reported = format!("{what} reported {} {}", listed.join(", "), log.span());
            // nvidia-smi takes a PCI function: a GPU is function 0.
            let target = faults
                .function
                .map_or_else(|| format!("{logged}.0"), str::to_owned);
            let target = target.as_str();
            let outcome = match worst {
                Some(action) if action.needs_drain() => Outcome::fail(format!(
                    "{reported}: the gpu is out of service until someone acts ({}); drain it",
                    action.says()
                ))
                .fix(drain_fix(action, target)),
                _ if unlisted => Outcome::warn(format!(
                    "{reported}: an xid nvidia's catalog does not list in use; read its details"
                ))
                .fix(app_fix(target)),
                Some(XidAction::RestartApp) => Outcome::warn(format!(
                    "{reported}: the application's work on the gpu was torn down; the gpu itself recovers"
                ))
                .fix(app_fix(target)),
                _ => Outcome::info(format!("{reported}: information only")),
            };
            with_lines(outcome.subject(subject), log, &faults.records)
        })
        .collect()
}

fn drain_fix(action: XidAction, gpu: &str) -> Remediation {
    let query = format!(
        "nvidia-smi -q -i {} | grep -i -A3 -e 'remapped rows' -e retired -e xid",
        quote(gpu)
    );
    match action {
        XidAction::RebootNode => Remediation::new(
            "drain the node and reboot it; if the gpu falls off the bus again, reseat it, check the slot's power and the board's firmware, and contact nvidia support",
        )
        .command("nvidia-bug-report.sh   # before the reboot, for support")
        .command("systemctl reboot"),
        XidAction::InspectHardware => Remediation::new(
            "drain the node and check the board's auxiliary power cables and seating",
        )
        .command(query),
        _ => Remediation::new(
            "drain the gpu's jobs, then reset it (or reboot the node); contact nvidia support if the fault returns after the reset",
        )
        .command(format!("nvidia-smi -r -i {}", quote(gpu)))
        .command(query),
    }
}

fn app_fix(gpu: &str) -> Remediation {
    Remediation::new(
        "restart the application; if the fault returns, debug it with the xid's details (nvidia's xid catalog) or run dcgm diagnostics on the gpu",
    )
    .command(format!("nvidia-smi -q -i {}", quote(gpu)))
}
