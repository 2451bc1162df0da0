//! SR-IOV on the RDMA NICs: capability, VF count, VF drivers and RDMA
//! devices, the VF pool against the GPUs, and the RDMA netns mode.

use std::collections::{BTreeMap, HashSet};

use zerohop_core::Remediation;
use zerohop_host::facts::PciDevice;

use crate::checks::rdma::{MODULE_CHAIN, wants_rdma};
use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{join, write_to};

/// The NIC physical functions SR-IOV is judged on: those backing an RDMA
/// device, or every NIC's when no RDMA device maps to a PCI function (a
/// host whose RDMA stack is not loaded yet).
fn scoped_pfs<'a>(ctx: &Context<'a>) -> Vec<&'a PciDevice> {
    let pfs: Vec<&PciDevice> = ctx
        .facts
        .pci
        .list()
        .iter()
        .filter(|d| d.is_nic() && !d.is_vf())
        .collect();
    let rdma: HashSet<&str> = ctx
        .facts
        .rdma
        .list()
        .iter()
        .filter_map(|d| d.pci.as_deref())
        .collect();
    let backing: Vec<&PciDevice> = pfs
        .iter()
        .copied()
        .filter(|d| rdma.contains(d.address.as_str()))
        .collect();
    if backing.is_empty() { pfs } else { backing }
}

/// Whether SR-IOV is wanted: as the profile says (or implied by an
/// expected VF count), else when a scoped PF has VFs enabled.
fn wants_sriov(ctx: &Context<'_>, pfs: &[&PciDevice]) -> bool {
    ctx.profile.sriov.unwrap_or_else(|| {
        ctx.profile.vfs_per_pf.is_some()
            || pfs
                .iter()
                .any(|d| matches!(d.sriov, Ok(Some(s)) if s.num_vfs > 0))
    })
}

/// The scoped PFs when SR-IOV is wanted on them, else the not-applicable
/// outcome that ends the check.
fn wanted_pfs<'a>(ctx: &Context<'a>) -> Result<Vec<&'a PciDevice>, Box<Outcome>> {
    let pfs = scoped_pfs(ctx);
    if pfs.is_empty() || !wants_sriov(ctx, &pfs) {
        return Err(Box::new(Outcome::not_applicable(NOT_WANTED)));
    }
    Ok(pfs)
}

/// The VFs of the scoped PFs, by PF address.
fn vfs_by_pf<'a>(ctx: &Context<'a>, pfs: &[&PciDevice]) -> BTreeMap<&'a str, Vec<&'a PciDevice>> {
    let scoped: HashSet<&str> = pfs.iter().map(|d| d.address.as_str()).collect();
    let mut map: BTreeMap<&str, Vec<&PciDevice>> = BTreeMap::new();
    for device in ctx.facts.pci.list() {
        if let Some(pf) = device.physfn.as_deref().filter(|pf| scoped.contains(pf)) {
            map.entry(ctx.facts.pci.get(pf).map_or(pf, |d| d.address.as_str()))
                .or_default()
                .push(device);
        }
    }
    map
}

const NOT_WANTED: &str =
    "sr-iov not wanted: no rdma nic has vfs enabled and the profile does not ask for them";

declare_check! {
    /// The RDMA NICs can create SR-IOV virtual functions.
    ///
    /// ## What it checks
    /// When SR-IOV is wanted (the profile says so or expects a VF count, or
    /// a NIC already has VFs), `sriov_totalvfs` of each RDMA NIC's physical
    /// function (every NIC's when none backs an RDMA device) must be above 0.
    ///
    /// ## Why it matters
    /// `sriov_totalvfs` is what the firmware allows. Zero, or no SR-IOV
    /// files at all, means SR-IOV is off in the NIC firmware (or in the
    /// BIOS): no VF can be created, and the SR-IOV device plugin advertises
    /// nothing.
    ///
    /// ## How to fix
    /// Enable it in the firmware and reboot (or reset the NIC):
    /// `mlxconfig -d <pci> set SRIOV_EN=1 NUM_OF_VFS=<n>`; turn SR-IOV on in
    /// the BIOS too. The NIC Configuration Operator can do it fleet-wide.
    ///
    /// ## Evidence
    /// `sriov_totalvfs` of the RDMA NICs' physical functions under
    /// `/sys/bus/pci/devices`, and the profile; an unreadable file is
    /// `unknown`.
    ///
    /// ## Source
    /// `drivers/pci/iov.c` (`sriov_totalvfs_show()`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/corpus_rdma.rs::node_exporter_sys
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/SRIOV001/fail-sriov-disabled-in-firmware/`:
    ///
    /// ```text
    /// sriov
    ///   fail           SRIOV001  sriov-not-capable  0000:1c:00.0: nic 15b3:1021 allows 0 vfs: sr-iov off in firmware
    ///                  /sys/bus/pci/devices/0000:1c:00.0/sriov_totalvfs = 0
    ///
    /// what to fix first
    ///   1. SRIOV001 sriov-not-capable (0000:1c:00.0): nic 15b3:1021 allows 0 vfs: sr-iov off in firmware
    ///      fix: enable sr-iov in the nic firmware and the bios, then reboot
    ///        mlxconfig -d 0000:1c:00.0 set SRIOV_EN=1 NUM_OF_VFS=8
    /// ```
    pub static NOT_CAPABLE = {
        id: "SRIOV001",
        name: "sriov-not-capable",
        group: Sriov,
        severity: Error,
        requires: [],
        run: not_capable,
    };
}

fn not_capable(ctx: &Context<'_>) -> Vec<Outcome> {
    need!(require(&ctx.facts.pci.devices, || Outcome::not_applicable(
        "/sys/bus/pci/devices is absent"
    )));
    let pfs = scoped_pfs(ctx);
    if pfs.is_empty() {
        return vec![Outcome::not_applicable("no network controller")];
    }
    if !wants_sriov(ctx, &pfs) {
        return vec![Outcome::not_applicable(NOT_WANTED)];
    }
    let vfs = ctx.profile.vfs_per_pf.unwrap_or(8);
    pfs.into_iter()
        .map(|pf| {
            let path = format!("{}/sriov_totalvfs", pf.sysfs());
            let fix = || {
                Remediation::new("enable sr-iov in the nic firmware and the bios, then reboot")
                    .command(join([
                        "mlxconfig",
                        "-d",
                        &pf.address,
                        "set",
                        "SRIOV_EN=1",
                        &format!("NUM_OF_VFS={vfs}"),
                    ]))
            };
            match &pf.sriov {
                Err(gap) => Outcome::gap(gap),
                Ok(None) => Outcome::fail(format!(
                    "{} has no sr-iov capability: sr-iov off in firmware or bios",
                    pf.label()
                ))
                .evidence(path, "<missing>")
                .fix(fix()),
                Ok(Some(s)) if s.total_vfs == 0 => Outcome::fail(format!(
                    "{} allows 0 vfs: sr-iov off in firmware",
                    pf.label()
                ))
                .evidence(path, "0")
                .fix(fix()),
                Ok(Some(s)) => Outcome::pass(format!("up to {} vfs", s.total_vfs))
                    .evidence(path, s.total_vfs.to_string()),
            }
            .subject(&pf.address)
        })
        .collect()
}

declare_check! {
    /// The RDMA NICs have the wanted number of VFs enabled.
    ///
    /// ## What it checks
    /// `sriov_numvfs` of each SR-IOV-capable RDMA NIC function: above 0, at
    /// most `sriov_totalvfs`, and equal to the profile's `vfs-per-pf` when
    /// given.
    ///
    /// ## Why it matters
    /// VFs do not survive a reboot unless something recreates them; a node
    /// that rebooted comes back with 0 VFs and every pod that asks for one
    /// stays pending. Fewer VFs than planned shrinks the pool silently.
    ///
    /// ## How to fix
    /// `echo <n> > /sys/bus/pci/devices/<pci>/sriov_numvfs` (write 0 first
    /// to change a non-zero count), persisted by the SR-IOV Network Operator
    /// (`SriovNetworkNodePolicy.numVfs`) or a udev rule / systemd unit.
    ///
    /// ## Evidence
    /// `sriov_numvfs` and `sriov_totalvfs` of the RDMA NICs' physical
    /// functions, and the profile's `vfs-per-pf`.
    ///
    /// ## Source
    /// `drivers/pci/iov.c` (`sriov_numvfs_show()`, `sriov_numvfs_store()`),
    /// Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/corpus_rdma.rs::node_exporter_sys
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/SRIOV002/fail-no-vfs/`:
    ///
    /// ```text
    /// sriov
    ///   fail           SRIOV002  sriov-vf-count-wrong  0000:1c:00.0: no vfs enabled (they do not survive a reboot unless recreated)
    ///                  /sys/bus/pci/devices/0000:1c:00.0/sriov_numvfs = 0
    ///                  /sys/bus/pci/devices/0000:1c:00.0/sriov_totalvfs = 8
    ///
    /// what to fix first
    ///   1. SRIOV002 sriov-vf-count-wrong (0000:1c:00.0): no vfs enabled (they do not survive a reboot unless recreated)
    ///      fix: set the vf count and persist it (sr-iov network operator policy numVfs)
    ///        echo 0 > /sys/bus/pci/devices/0000:1c:00.0/sriov_numvfs && echo 8 > /sys/bus/pci/devices/0000:1c:00.0/sriov_numvfs
    /// ```
    pub static VF_COUNT = {
        id: "SRIOV002",
        name: "sriov-vf-count-wrong",
        group: Sriov,
        severity: Error,
        requires: [NOT_CAPABLE],
        run: vf_count,
    };
}

fn vf_count(ctx: &Context<'_>) -> Vec<Outcome> {
    let pfs = need!(wanted_pfs(ctx));
    let expected = ctx.profile.vfs_per_pf;
    pfs.into_iter()
        .filter_map(|pf| match &pf.sriov {
            Ok(Some(s)) if s.total_vfs > 0 => Some((pf, *s)),
            _ => None,
        })
        .map(|(pf, s)| {
            let path = format!("{}/sriov_numvfs", pf.sysfs());
            let want = expected.unwrap_or(s.total_vfs.min(8));
            let fix = Remediation::new(
                "set the vf count and persist it (sr-iov network operator policy numVfs)",
            )
            .command(format!(
                "{} && {}",
                write_to("0", &path),
                write_to(&want.to_string(), &path)
            ));
            let outcome = if s.num_vfs == 0 {
                Outcome::fail("no vfs enabled (they do not survive a reboot unless recreated)")
                    .fix(fix)
            } else if s.num_vfs > s.total_vfs {
                Outcome::fail(format!(
                    "{} vfs enabled, more than the {} allowed",
                    s.num_vfs, s.total_vfs
                ))
                .fix(fix)
            } else if expected.is_some_and(|e| e != s.num_vfs) {
                Outcome::fail(format!("{} vfs enabled, {want} expected", s.num_vfs)).fix(fix)
            } else {
                Outcome::pass(format!("{} of {} vfs enabled", s.num_vfs, s.total_vfs))
            };
            outcome
                .subject(&pf.address)
                .evidence(path, s.num_vfs.to_string())
                .evidence(
                    format!("{}/sriov_totalvfs", pf.sysfs()),
                    s.total_vfs.to_string(),
                )
        })
        .collect()
}

declare_check! {
    /// Each VF is bound to `mlx5_core` and has an RDMA device of its own.
    ///
    /// ## What it checks
    /// For every VF of an RDMA NIC, its `driver` link and whether an RDMA
    /// device in `/sys/class/infiniband` points at it. When RDMA is on the
    /// data path (as RDMA001 decides), `vfio-pci` or no driver fails (the VF is handed to a VM or
    /// to nothing); a VF on `mlx5_core` without an RDMA device fails, except
    /// in exclusive netns mode (`ib_core` `netns_mode=0`), where the RDMA
    /// device of a VF given to a pod lives in the pod's network namespace
    /// and `/sys/class/infiniband` of the host's does not show it
    /// (information).
    /// Findings are grouped per physical function and reason.
    ///
    /// ## Why it matters
    /// Pods get RDMA on a VF only through its own RDMA device (`mlx5_<n>`
    /// with `uverbs<n>`): the SR-IOV device plugin with `isRdma: true` hands
    /// out exactly that. A VF without one gives the pod a plain netdev and
    /// NCCL falls back to TCP.
    ///
    /// ## How to fix
    /// Bind the VFs to `mlx5_core` (`deviceType: netdevice` with
    /// `isRdma: true` in the `SriovNetworkNodePolicy`), make sure `mlx5_ib` is
    /// loaded, and that RoCE is enabled on the VFs (`devlink dev param set
    /// pci/<vf> name enable_roce value true cmode driverinit`).
    ///
    /// ## Evidence
    /// Each VF's `driver` link (the `virtfn*` links of its physical
    /// function), the `device` links of `/sys/class/infiniband`, and
    /// `/sys/module/ib_core/parameters/netns_mode`.
    ///
    /// ## Source
    /// `drivers/pci/iov.c` (`virtfn%u`, `physfn` links) and
    /// `drivers/infiniband/core/device.c` (`ib_class` is namespaced by
    /// network namespace, `.ns_type = &net_ns_type_operations`, so a device
    /// moved into a pod's namespace leaves the host's
    /// `/sys/class/infiniband`; `netns_mode`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/SRIOV003/fail-no-rdma-device-on-vf/`:
    ///
    /// ```text
    /// sriov
    ///   fail           SRIOV003  sriov-vf-not-rdma  0000:1c:00.0: 2 vf(s) on mlx5_core without an rdma device
    ///                  /sys/bus/pci/devices/0000:1c:00.0/virtfn* = 0000:1c:00.2 0000:1c:00.3
    ///                  /sys/bus/pci/devices/0000:1c:00.2/driver = mlx5_core
    ///
    /// what to fix first
    ///   1. SRIOV003 sriov-vf-not-rdma (0000:1c:00.0): 2 vf(s) on mlx5_core without an rdma device
    ///      fix: bind the vfs to mlx5_core with rdma enabled (sriov policy deviceType netdevice, isRdma true)
    ///        for vf in 0000:1c:00.2 0000:1c:00.3; do echo "$vf" > /sys/bus/pci/drivers/mlx5_core/bind; done
    ///        modprobe mlx5_ib && rdma link show
    /// ```
    pub static VF_NOT_RDMA = {
        id: "SRIOV003",
        name: "sriov-vf-not-rdma",
        group: Sriov,
        severity: Error,
        requires: [VF_COUNT, MODULE_CHAIN],
        run: vf_not_rdma,
    };
}

fn vf_not_rdma(ctx: &Context<'_>) -> Vec<Outcome> {
    let pfs = scoped_pfs(ctx);
    let by_pf = vfs_by_pf(ctx, &pfs);
    if by_pf.is_empty() {
        return vec![Outcome::not_applicable("no vfs on an rdma nic")];
    }
    let rdma_wanted = wants_rdma(ctx);
    let with_rdma: HashSet<&str> = ctx
        .facts
        .rdma
        .list()
        .iter()
        .filter_map(|d| d.pci.as_deref())
        .collect();
    // In exclusive mode an RDMA device given to a pod moves into the pod's
    // network namespace, and `/sys/class/infiniband` (a class namespaced
    // by network namespace) no longer shows it here.
    let exclusive = matches!(&ctx.facts.modules, Ok(Some(modules)) if modules
        .get("ib_core")
        .and_then(|m| m.parameters.get("netns_mode"))
        .is_some_and(|mode| matches!(mode.as_str(), "N" | "n" | "0")));
    let mut outcomes = Vec::new();
    for (pf, vfs) in by_pf {
        // Reason → VFs, so thousands of VFs make a handful of findings.
        let mut groups: BTreeMap<(u8, String), Vec<&str>> = BTreeMap::new();
        for vf in &vfs {
            let driver = vf.driver.as_deref().unwrap_or("<none>");
            let key = match driver {
                "mlx5_core" if with_rdma.contains(vf.address.as_str()) => {
                    (0, "bound to mlx5_core with an rdma device".to_owned())
                }
                "mlx5_core" if exclusive => (
                    1,
                    "on mlx5_core without an rdma device in this network namespace: in exclusive netns mode a vf's rdma device moves into its pod's".to_owned(),
                ),
                "mlx5_core" if rdma_wanted => (3, "on mlx5_core without an rdma device".to_owned()),
                "mlx5_core" => (0, "bound to mlx5_core".to_owned()),
                "vfio-pci" if rdma_wanted => (
                    3,
                    "bound to vfio-pci: no rdma for pods on this host".to_owned(),
                ),
                "<none>" if rdma_wanted => (3, "bound to no driver".to_owned()),
                other => (1, format!("bound to {other}")),
            };
            groups.entry(key).or_default().push(vf.address.as_str());
        }
        for ((severity, reason), members) in groups {
            let shown = shorten(&members);
            let message = format!("{} vf(s) {reason}", members.len());
            let fix = || {
                Remediation::new("bind the vfs to mlx5_core with rdma enabled (sriov policy deviceType netdevice, isRdma true)")
                    .command(format!("for vf in {}; do echo \"$vf\" > /sys/bus/pci/drivers/mlx5_core/bind; done", join(members.iter().copied())))
                    .command("modprobe mlx5_ib && rdma link show")
            };
            let outcome = match severity {
                0 => Outcome::pass(message),
                1 => Outcome::info(message),
                _ => Outcome::fail(message).fix(fix()),
            };
            let driver = vfs
                .iter()
                .find(|v| v.address == members[0])
                .and_then(|v| v.driver.as_deref())
                .unwrap_or("<none>");
            outcomes.push(
                outcome
                    .subject(pf)
                    .evidence(format!("/sys/bus/pci/devices/{pf}/virtfn*"), shown)
                    .evidence(
                        format!("/sys/bus/pci/devices/{}/driver", members[0]),
                        driver,
                    ),
            );
        }
    }
    outcomes
}

/// The first few addresses, and how many more.
fn shorten(addresses: &[&str]) -> String {
    const SHOWN: usize = 4;
    let mut text = addresses
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    if addresses.len() > SHOWN {
        text.push_str(&format!(" … and {} more", addresses.len() - SHOWN));
    }
    text
}

declare_check! {
    /// There are at least as many RDMA VFs as GPUs.
    ///
    /// ## What it checks
    /// The sum of `sriov_numvfs` over the RDMA NICs against the number of
    /// NVIDIA GPUs, when SR-IOV is wanted: one VF per GPU is the minimum for
    /// pods that each take a GPU and its rail's VF.
    ///
    /// ## Why it matters
    /// With fewer VFs than GPUs, the last GPU pods on the node stay pending
    /// on the VF resource, or are scheduled without RDMA. Plan pods × VFs
    /// plus 10–20 % headroom for restarts.
    ///
    /// ## How to fix
    /// Raise `numVfs` in the `SriovNetworkNodePolicy` (or `sriov_numvfs`), up
    /// to `sriov_totalvfs`; raise `NUM_OF_VFS` with `mlxconfig` when the
    /// firmware limit is too low.
    ///
    /// ## Evidence
    /// `sriov_numvfs` of the RDMA NICs and the NVIDIA GPUs of
    /// `/sys/bus/pci/devices`.
    ///
    /// ## Source
    /// `drivers/pci/iov.c` (`sriov_numvfs_show()`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/SRIOV004/warn-fewer-vfs-than-gpus/`:
    ///
    /// ```text
    /// sriov
    ///   warn           SRIOV004  sriov-vf-pool-small  2 vfs for 4 gpu(s): fewer than one per gpu
    ///                  /sys/bus/pci/devices/*/sriov_numvfs = 0000:1c:00.0=2
    ///
    /// what to fix first
    ///   1. SRIOV004 sriov-vf-pool-small: 2 vfs for 4 gpu(s): fewer than one per gpu
    ///      fix: raise numVfs in the sriov network node policy to at least one per gpu plus headroom
    ///        echo <n> > /sys/bus/pci/devices/<pf>/sriov_numvfs
    /// ```
    pub static VF_POOL_SMALL = {
        id: "SRIOV004",
        name: "sriov-vf-pool-small",
        group: Sriov,
        severity: Warning,
        requires: [VF_COUNT],
        run: vf_pool_small,
    };
}

fn vf_pool_small(ctx: &Context<'_>) -> Vec<Outcome> {
    let pfs = need!(wanted_pfs(ctx));
    let gpus = ctx.facts.pci.nvidia_gpus().count();
    if gpus == 0 {
        return vec![Outcome::not_applicable("no nvidia gpu to pair vfs with")];
    }
    let vfs: u32 = pfs
        .iter()
        .filter_map(|pf| pf.sriov.as_ref().ok().copied().flatten())
        .map(|s| s.num_vfs)
        .sum();
    let evidence = pfs
        .iter()
        .filter_map(|pf| {
            pf.sriov
                .as_ref()
                .ok()
                .copied()
                .flatten()
                .map(|s| format!("{}={}", pf.address, s.num_vfs))
        })
        .collect::<Vec<_>>()
        .join(" ");
    let outcome = if usize::try_from(vfs).unwrap_or(usize::MAX) >= gpus {
        Outcome::pass(format!("{vfs} vfs for {gpus} gpu(s)"))
    } else {
        Outcome::warn(format!("{vfs} vfs for {gpus} gpu(s): fewer than one per gpu")).fix(
            Remediation::new("raise numVfs in the sriov network node policy to at least one per gpu plus headroom")
                .command("echo <n> > /sys/bus/pci/devices/<pf>/sriov_numvfs"),
        )
    };
    vec![outcome.evidence("/sys/bus/pci/devices/*/sriov_numvfs", evidence)]
}

declare_check! {
    /// The RDMA subsystem is in exclusive netns mode when VFs carry RDMA.
    ///
    /// ## What it checks
    /// When some VF has an RDMA device, the `ib_core` parameter
    /// `/sys/module/ib_core/parameters/netns_mode`: `N` (exclusive, each
    /// RDMA device lives in one network namespace) passes, `Y` (shared, the
    /// default) warns. The mode can also be changed at run time with
    /// `rdma system set netns exclusive`, which sysfs does not show, so the
    /// warning asks to confirm with `rdma system`.
    ///
    /// ## Why it matters
    /// The RDMA CNI moves a VF's RDMA device into the pod's namespace only in
    /// exclusive mode. In shared mode every pod sees every RDMA device of the
    /// host, and the SR-IOV network's RDMA isolation does not hold (the
    /// shared device plugin, without VFs, wants shared mode instead).
    ///
    /// ## How to fix
    /// `echo "options ib_core netns_mode=0" > /etc/modprobe.d/ib_core.conf`
    /// and reload, or `rdma system set netns exclusive` at boot before any
    /// pod starts (the SR-IOV Network Operator does it when a policy has
    /// `isRdma: true`).
    ///
    /// ## Evidence
    /// `/sys/module/ib_core/parameters/netns_mode` when a VF has an RDMA
    /// device; the file absent is `unknown`.
    ///
    /// ## Source
    /// `drivers/infiniband/core/device.c` (`module_param_named(netns_mode,
    /// ib_devices_shared_netns, bool, 0444)`, shared by default), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/SRIOV005/warn-shared/`:
    ///
    /// ```text
    /// sriov
    ///   warn           SRIOV005  rdma-netns-mode-shared  ib_core loaded in shared netns mode while 2 vf rdma device(s) go to pods: confirm with `rdma system`
    ///                  /sys/module/ib_core/parameters/netns_mode = Y
    ///
    /// what to fix first
    ///   1. SRIOV005 rdma-netns-mode-shared: ib_core loaded in shared netns mode while 2 vf rdma device(s) go to pods: confirm with `rdma system`
    ///      fix: switch the rdma subsystem to exclusive netns mode before pods start
    ///        rdma system set netns exclusive
    ///        echo 'options ib_core netns_mode=0' > /etc/modprobe.d/ib_core.conf
    /// ```
    pub static NETNS_MODE = {
        id: "SRIOV005",
        name: "rdma-netns-mode-shared",
        group: Sriov,
        severity: Warning,
        requires: [MODULE_CHAIN],
        run: netns_mode,
    };
}

fn netns_mode(ctx: &Context<'_>) -> Vec<Outcome> {
    const PATH: &str = "/sys/module/ib_core/parameters/netns_mode";
    let vf_rdma = ctx
        .facts
        .rdma
        .list()
        .iter()
        .filter(|d| {
            d.pci
                .as_deref()
                .and_then(|a| ctx.facts.pci.get(a))
                .is_some_and(PciDevice::is_vf)
        })
        .count();
    if vf_rdma == 0 {
        return vec![Outcome::not_applicable(
            "no rdma device on a vf: the netns mode does not matter",
        )];
    }
    let modules = need!(require(&ctx.facts.modules, || Outcome::unknown(
        "/proc/modules and /sys/module are absent: ib_core's netns_mode unknown"
    )));
    let value = modules
        .get("ib_core")
        .and_then(|m| m.parameters.get("netns_mode"));
    vec![match value.map(String::as_str) {
        Some("N" | "n" | "0") => Outcome::pass(format!("exclusive netns mode for {vf_rdma} vf rdma device(s)")),
        Some("Y" | "y" | "1") => Outcome::warn(format!(
            "ib_core loaded in shared netns mode while {vf_rdma} vf rdma device(s) go to pods: confirm with `rdma system`"
        ))
        .fix(Remediation::new("switch the rdma subsystem to exclusive netns mode before pods start")
            .command("rdma system set netns exclusive")
            .command("echo 'options ib_core netns_mode=0' > /etc/modprobe.d/ib_core.conf")),
        Some(other) => Outcome::unknown(format!("netns_mode `{other}` not understood")),
        None => Outcome::unknown("ib_core has no readable netns_mode parameter"),
    }
    .evidence(PATH, value.cloned().unwrap_or_else(|| "<missing>".to_owned()))]
}
