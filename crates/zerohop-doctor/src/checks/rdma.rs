//! The RDMA stack: the module chain, the user/kernel ABI, device nodes,
//! port state and rate, netdev carrier and RoCE v2 GIDs.

use std::borrow::Cow;
use std::collections::BTreeMap;

use zerohop_core::Remediation;
use zerohop_host::facts::pci::vendor;
use zerohop_host::facts::rdma::{CLASS_DIR, DEV_DIR, MAD_ABI, VERBS_ABI};
use zerohop_host::facts::{Modules, RdmaDevice, RdmaPort};
use zerohop_host::parse::rdma::{GidType, PhysState, PortState};
use zerohop_known::nic;

use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{join, quote};
use crate::profile::GpuDirect;

/// Whether RDMA is part of the data path: as the profile says, else when
/// the host shows it in use or in place ([`rdma_evidence`]).
pub(crate) fn wants_rdma(ctx: &Context<'_>) -> bool {
    ctx.profile
        .rdma
        .unwrap_or_else(|| rdma_evidence(ctx).is_some())
}

/// Loaded modules that exist only to run RDMA: a verbs provider of an
/// RDMA NIC, or a consumer of RDMA (NFS and NVMe over RDMA, the user
/// verbs and RDMA-CM interfaces). `ib_core` alone is not among them:
/// distributions load it with any NIC driver that can offer RDMA.
const RDMA_MODULES: [&str; 9] = [
    "mlx5_ib",
    "mlx4_ib",
    "irdma",
    "bnxt_re",
    "rpcrdma",
    "xprtrdma",
    "nvme_rdma",
    "ib_uverbs",
    "rdma_ucm",
];

/// What shows that this host uses RDMA, as a reason for messages: an RDMA
/// device, a Mellanox/NVIDIA network controller, an NFS mount over RDMA,
/// an NVMe-oF controller over RDMA, or a loaded RDMA module
/// ([`RDMA_MODULES`] or `mlx5_core`, from `/proc/modules`: loaded, not
/// built in).
pub(crate) fn rdma_evidence(ctx: &Context<'_>) -> Option<String> {
    let facts = ctx.facts;
    if let Some(device) = facts.rdma.list().first() {
        return Some(format!("rdma device {}", device.name));
    }
    if let Some(nic) = facts
        .pci
        .list()
        .iter()
        .find(|d| d.is_nic() && d.vendor == Some(vendor::MELLANOX))
    {
        return Some(format!(
            "mellanox/nvidia network controller {}",
            nic.address
        ));
    }
    if let Some(mount) = facts.mounts.nfs_mounts().into_iter().find(|m| {
        m.is_rdma()
            || m.stats
                .as_ref()
                .is_some_and(|s| s.transports_of("rdma") > 0)
    }) {
        return Some(format!("nfs mount {} over rdma", mount.mount_point));
    }
    if let Some(controller) = facts
        .nvme
        .list()
        .iter()
        .flat_map(|s| &s.controllers)
        .find(|c| c.transport.as_deref() == Some("rdma"))
    {
        return Some(format!("nvme-of controller {} over rdma", controller.name));
    }
    if let Ok(Some(modules)) = &facts.modules
        && let Some(name) = RDMA_MODULES
            .iter()
            .chain(&["mlx5_core"])
            .find(|name| modules.get(name).is_some_and(|m| m.loadable))
    {
        return Some(format!("module {name} loaded"));
    }
    None
}

/// Whether the host has ConnectX-4 or later functions, `mlx5_*` RDMA
/// devices or a loaded `mlx5_core`, which need the `mlx5` modules.
fn needs_mlx5(ctx: &Context<'_>) -> bool {
    ctx.facts
        .rdma
        .list()
        .iter()
        .any(|d| d.name.starts_with("mlx5"))
        || ctx.facts.pci.list().iter().any(|d| {
            d.is_nic()
                && d.vendor == Some(vendor::MELLANOX)
                && !d
                    .device
                    .is_some_and(|id| nic::MLX4_DEVICE_IDS.contains(&id))
        })
        || matches!(&ctx.facts.modules, Ok(Some(modules)) if modules.get("mlx5_core").is_some_and(|m| m.loadable))
}

/// Every port of every RDMA device, with its device.
pub(crate) fn ports<'a>(ctx: &Context<'a>) -> impl Iterator<Item = (&'a RdmaDevice, &'a RdmaPort)> {
    ctx.facts
        .rdma
        .list()
        .iter()
        .flat_map(|d| d.port_list().iter().map(move |p| (d, p)))
}

/// `mlx5_0/1`: how findings name a port.
pub(crate) fn port_name(device: &RdmaDevice, port: &RdmaPort) -> String {
    format!("{}/{}", device.name, port.number)
}

/// The outcome for a host without RDMA devices: `fail` when RDMA is
/// expected, `not-applicable` otherwise.
pub(crate) fn no_devices(ctx: &Context<'_>) -> Outcome {
    if ctx.profile.rdma == Some(true) {
        Outcome::fail("rdma expected, but /sys/class/infiniband lists no device")
            .evidence(CLASS_DIR, "<missing>")
            .fix(
                Remediation::new(
                    "install and load the nic's rdma driver (doca-ofed or the inbox mlx5_ib)",
                )
                .command("modprobe mlx5_ib && ls /sys/class/infiniband"),
            )
    } else {
        Outcome::not_applicable("no rdma device on this host")
    }
}

/// The modules of the RDMA stack and the modules each needs loaded first.
const STACK: [(&str, &[&str]); 6] = [
    ("mlx5_core", &[]),
    ("ib_core", &[]),
    ("mlx5_ib", &["mlx5_core", "ib_core"]),
    ("ib_uverbs", &["ib_core"]),
    ("rdma_cm", &["ib_core"]),
    ("rdma_ucm", &["rdma_cm", "ib_uverbs"]),
];

declare_check! {
    /// The RDMA kernel modules are loaded, each with what it depends on.
    ///
    /// ## What it checks
    /// Looks up `mlx5_core`, `ib_core`, `mlx5_ib`, `ib_uverbs`, `rdma_cm`
    /// and `rdma_ucm` in `/proc/modules` and `/sys/module` (built-in code
    /// counts as loaded). The `mlx5` pair is required when the host has a
    /// ConnectX-4 or later function, an `mlx5_*` RDMA device or a loaded
    /// `mlx5_core`; the core modules whenever RDMA is on the data path: the
    /// profile says so, or (without the profile saying) the host has an
    /// RDMA device (`/sys/class/infiniband`), a Mellanox/NVIDIA network
    /// controller, an NFS mount over RDMA (`proto=rdma`, or `xprt: rdma`
    /// in `/proc/self/mountstats`), an NVMe-oF controller over RDMA, or a
    /// loaded RDMA module (`mlx5_ib`, `mlx4_ib`, `irdma`, `bnxt_re`,
    /// `rpcrdma`, `xprtrdma`, `nvme_rdma`, `ib_uverbs`, `rdma_ucm` in
    /// `/proc/modules`). The reason RDMA is wanted is shown. `ib_uverbs` and
    /// `rdma_ucm`, which only user space opens, are required only where user
    /// space wants RDMA: the profile expects RDMA, a GPUDirect RDMA path or
    /// GPUs, or the host has an NVIDIA GPU; the kernel's own consumers (NFS
    /// and NVMe over RDMA) need `ib_core`, `rdma_cm` and the HCA driver
    /// only. A missing module whose own dependencies are loaded is the root
    /// cause and fails; the modules that cannot load because of it are named
    /// in the same finding. Without `/proc/modules`, a module absent from a
    /// capture's `/sys/module` is `unknown`. `/sys/module/<m>/version` tells
    /// DOCA/MLNX_OFED builds from inbox ones.
    ///
    /// ## Why it matters
    /// The chain is `mlx5_core` → `mlx5_ib` → `ib_core` → `rdma_cm` (→
    /// `rpcrdma` for NFS over RDMA), and `nvidia` + `ib_core` →
    /// `nvidia_peermem`. Without `ib_core` nothing above it loads: no RDMA
    /// device, no verbs, no RDMA-CM, no GPUDirect RDMA. Every later RDMA,
    /// RoCE, SR-IOV and peer-memory check depends on this one and reports
    /// `blocked` when it fails.
    ///
    /// ## How to fix
    /// `modprobe mlx5_ib ib_uverbs rdma_ucm` loads the chain with its
    /// dependencies. When the modules are missing from disk, install DOCA-OFED
    /// (`doca-ofed` package) or deploy the Network Operator's `NicClusterPolicy`
    /// with `ofedDriver`; check `dmesg` for symbol version errors after a
    /// kernel update (rebuild with DKMS).
    ///
    /// ## Evidence
    /// `/proc/modules` and `/sys/module/*`, and what shows RDMA in use
    /// (`/sys/class/infiniband`, the PCI functions, `/proc/self/mountinfo` and
    /// `mountstats`, NVMe-oF controllers). The user-space modules (`ib_uverbs`,
    /// `rdma_ucm`) are required only where user space wants RDMA: the profile
    /// expects RDMA, a GPUDirect RDMA path or GPUs, or the host has an NVIDIA
    /// GPU. Without either module list the chain is `unknown`.
    ///
    /// ## Source
    /// `net/sunrpc/Kconfig` (`SUNRPC_XPRT_RDMA` depends on `SUNRPC &&
    /// INFINIBAND && INFINIBAND_ADDR_TRANS`), `drivers/nvme/host/Kconfig`
    /// (`NVME_RDMA`) and `drivers/infiniband/core/Makefile` (`ib_uverbs`,
    /// `rdma_ucm`), Linux v6.8; the real client's `lsmod` shows `rpcrdma` among the
    /// users of `rdma_cm`, `ib_core` and `sunrpc` only.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::nfs_over_rdma_needs_no_user_space_verbs
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::nfs_over_rdma_client_wants_rdma
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/RDMA001/fail-ib-core-missing/`:
    ///
    /// ```text
    /// rdma
    ///   fail           RDMA001  rdma-module-chain-broken  ib_core: ib_core is not loaded, so mlx5_ib, ib_uverbs, rdma_cm, rdma_ucm cannot load either (rdma in use: mellanox/nvidia network controller 0000:1c:00.0)
    ///                  /proc/modules = <no ib_core>
    ///                  /sys/module/ib_core = <missing>
    ///
    /// what to fix first
    ///   1. RDMA001 rdma-module-chain-broken (ib_core): ib_core is not loaded, so mlx5_ib, ib_uverbs, rdma_cm, rdma_ucm cannot load either (rdma in use: mellanox/nvidia network controller 0000:1c:00.0)
    ///      fix: load the rdma module chain; install doca-ofed if the modules are missing
    ///        modprobe -a ib_core mlx5_ib ib_uverbs rdma_cm rdma_ucm
    ///        dmesg | grep -i -e mlx5 -e ib_core | tail   # symbol errors after a kernel update: rebuild with dkms
    /// ```
    pub static MODULE_CHAIN = {
        id: "RDMA001",
        name: "rdma-module-chain-broken",
        group: Rdma,
        severity: Error,
        requires: [],
        run: module_chain,
    };
}

fn module_chain(ctx: &Context<'_>) -> Vec<Outcome> {
    let reason = match ctx.profile.rdma {
        Some(true) => "the profile expects rdma".to_owned(),
        Some(false) => {
            return vec![Outcome::not_applicable("rdma not expected (profile)")];
        }
        None => match rdma_evidence(ctx) {
            Some(reason) => format!("rdma in use: {reason}"),
            None => {
                return vec![Outcome::not_applicable(
                    "no rdma device, mellanox nic, rdma mount or rdma module, and rdma not expected",
                )];
            }
        },
    };
    let modules = need!(require(&ctx.facts.modules, || Outcome::unknown(format!(
        "{reason}, but /proc/modules and /sys/module are absent: cannot tell which modules are loaded"
    ))));
    let mlx5 = needs_mlx5(ctx);
    let userspace = userspace_rdma(ctx);
    let required: Vec<(&str, &[&str])> = STACK
        .iter()
        .copied()
        .filter(|(name, _)| mlx5 || !name.starts_with("mlx5"))
        .filter(|(name, _)| userspace.is_some() || !USERSPACE.contains(name))
        .collect();
    let missing: Vec<&str> = required
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !modules.present(n))
        .collect();
    if missing.is_empty() {
        // The user-space modules are listed when loaded, wanted or not.
        let loaded: Vec<String> = STACK
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| required.iter().any(|(r, _)| r == n) || modules.present(n))
            .map(|n| describe(modules, n))
            .collect();
        let user = match &userspace {
            Some(why) => format!("; user-space rdma wanted: {why}"),
            None if USERSPACE.iter().all(|m| modules.present(m)) => String::new(),
            None => format!(
                "; {} not required: kernel rdma consumers (nfs, nvme over rdma) do not use them, and no gpu or profile asks for user-space rdma",
                USERSPACE.join(", ")
            ),
        };
        return vec![
            Outcome::pass(format!("{} loaded ({reason}){user}", loaded.join(", ")))
                .evidence("/proc/modules", loaded.join(" ")),
        ];
    }
    if !modules.lists_loaded() {
        return vec![Outcome::unknown(format!(
            "{} not in /sys/module, and /proc/modules is not in the root: a capture's /sys/module may hold only some modules ({reason})",
            missing.join(", ")
        ))
        .evidence("/proc/modules", "<missing>")];
    }
    let roots: Vec<&str> = required
        .iter()
        .filter(|(name, deps)| missing.contains(name) && deps.iter().all(|d| !missing.contains(d)))
        .map(|(name, _)| *name)
        .collect();
    roots
        .into_iter()
        .map(|root| {
            let blocked: Vec<&str> = missing.iter().copied().filter(|m| *m != root && depends_on(m, root)).collect();
            let message = if blocked.is_empty() {
                format!("{root} is not loaded ({reason})")
            } else {
                format!("{root} is not loaded, so {} cannot load either ({reason})", blocked.join(", "))
            };
            let load = join(["modprobe", "-a", root].into_iter().chain(blocked.iter().copied()));
            Outcome::fail(message)
                .subject(root)
                .evidence("/proc/modules", format!("<no {root}>"))
                .evidence(format!("/sys/module/{root}"), "<missing>")
                .fix(Remediation::new("load the rdma module chain; install doca-ofed if the modules are missing")
                    .command(load)
                    .command("dmesg | grep -i -e mlx5 -e ib_core | tail   # symbol errors after a kernel update: rebuild with dkms"))
        })
        .collect()
}

/// The modules only user space needs: the verbs (`ib_uverbs`, which
/// `libibverbs` opens) and RDMA-CM's user interface (`rdma_ucm`, for
/// `librdmacm`). The kernel's own RDMA consumers do without them: NFS
/// over RDMA (`SUNRPC_XPRT_RDMA`) depends on `INFINIBAND` and
/// `INFINIBAND_ADDR_TRANS` (`ib_core`, `rdma_cm`) only (Linux
/// `net/sunrpc/Kconfig`, v6.8), as NVMe over RDMA does (`NVME_RDMA`,
/// `drivers/nvme/host/Kconfig`).
const USERSPACE: [&str; 2] = ["ib_uverbs", "rdma_ucm"];

/// Why user-space RDMA is wanted, if it is: the profile expects RDMA or a
/// GPUDirect RDMA path, the profile expects GPUs, or the host has an
/// NVIDIA GPU (NCCL, UCX and GPUDirect RDMA open the verbs from user
/// space), unless the profile says GPUDirect RDMA is not used.
fn userspace_rdma(ctx: &Context<'_>) -> Option<String> {
    let profile = ctx.profile;
    if profile.rdma == Some(true) {
        return Some("the profile expects rdma".to_owned());
    }
    match profile.gpudirect {
        Some(GpuDirect::None) => return None,
        Some(GpuDirect::DmaBuf | GpuDirect::Peermem) => {
            return Some("the profile expects gpudirect rdma".to_owned());
        }
        None => {}
    }
    if profile.gpus.as_ref().is_some_and(|gpus| gpus.count > 0) {
        return Some("the profile expects gpus, whose rdma runs from user space".to_owned());
    }
    let facts = ctx.facts;
    if let Some(gpu) = facts.pci.nvidia_gpus().next() {
        return Some(format!(
            "nvidia gpu {} (gpudirect rdma runs from user space)",
            gpu.address
        ));
    }
    matches!(&facts.nvidia.gpus, Ok(Some(list)) if !list.is_empty())
        .then(|| "the nvidia driver lists gpus (gpudirect rdma runs from user space)".to_owned())
}

/// Whether `module` needs `root`, directly or through another module.
fn depends_on(module: &str, root: &str) -> bool {
    STACK
        .iter()
        .find(|(name, _)| *name == module)
        .is_some_and(|(_, deps)| deps.iter().any(|d| *d == root || depends_on(d, root)))
}

/// `mlx5_core (24.10-1.1.4)` when the module declares a version.
fn describe(modules: &Modules, name: &str) -> String {
    match modules.get(name).and_then(|m| m.version.as_deref()) {
        Some(version) => format!("{name} ({version})"),
        None => name.to_owned(),
    }
}

declare_check! {
    /// The user/kernel RDMA ABI files are present.
    ///
    /// ## What it checks
    /// `/sys/class/infiniband_verbs/abi_version` (written by `ib_uverbs`, the
    /// ABI `libibverbs` speaks) must exist and be non-zero, or verbs fail.
    /// `/sys/class/infiniband_mad/abi_version` (from `ib_umad`, used by
    /// `ibstat`, `ibdiagnet` and subnet managers) only warns when absent.
    ///
    /// ## Why it matters
    /// A missing or zero ABI version means user space cannot open the
    /// devices: `ibv_devinfo` prints "No IB devices found" and NCCL falls
    /// back to TCP sockets. A mismatch between kernel OFED modules and user
    /// libraries shows here first.
    ///
    /// ## How to fix
    /// `modprobe ib_uverbs ib_umad`; make sure `rdma-core` (or DOCA-OFED's
    /// user space) matches the kernel modules: install both from the same
    /// release.
    ///
    /// ## Evidence
    /// `/sys/class/infiniband_verbs/abi_version` and
    /// `/sys/class/infiniband_mad/abi_version`; a file absent while no module
    /// list shows whether `ib_uverbs`/`ib_umad` is loaded (a partial capture) is
    /// `unknown`, not missing.
    ///
    /// ## Source
    /// `drivers/infiniband/core/uverbs_main.c` (`abi_version`,
    /// `IB_USER_VERBS_ABI_VERSION`) and `drivers/infiniband/core/user_mad.c`
    /// (`IB_USER_MAD_ABI_VERSION`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/RDMA002/fail-verbs-abi-missing/`:
    ///
    /// ```text
    /// rdma
    ///   fail           RDMA002  rdma-abi-missing  verbs: no verbs abi: ib_uverbs exposes no device to user space
    ///                  /sys/class/infiniband_verbs/abi_version = <missing>
    ///   pass           RDMA002  rdma-abi-missing  mad: mad abi version 5
    ///
    /// what to fix first
    ///   1. RDMA002 rdma-abi-missing (verbs): no verbs abi: ib_uverbs exposes no device to user space
    ///      fix: load ib_uverbs and install user space from the same release as the kernel modules
    ///        modprobe ib_uverbs
    ///        ibv_devinfo   # must list the devices
    /// ```
    pub static ABI_MISSING = {
        id: "RDMA002",
        name: "rdma-abi-missing",
        group: Rdma,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: abi,
    };
}

fn abi(ctx: &Context<'_>) -> Vec<Outcome> {
    let rdma = &ctx.facts.rdma;
    need!(require(&rdma.devices, || no_devices(ctx)));
    if rdma.list().is_empty() {
        return vec![no_devices(ctx)];
    }
    let modules_known = matches!(ctx.facts.modules, Ok(Some(_)));
    let verbs = match &rdma.verbs_abi {
        Err(gap) => Outcome::gap(gap),
        Ok(Some(0)) => Outcome::fail("verbs abi version is 0: user space cannot use the devices")
            .evidence(VERBS_ABI, "0")
            .fix(abi_fix()),
        Ok(Some(version)) => Outcome::pass(format!("verbs abi version {version}"))
            .evidence(VERBS_ABI, version.to_string()),
        Ok(None) if !modules_known => {
            Outcome::unknown("verbs abi file absent and the module list unknown: a partial capture")
                .evidence(VERBS_ABI, "<missing>")
        }
        Ok(None) => Outcome::fail("no verbs abi: ib_uverbs exposes no device to user space")
            .evidence(VERBS_ABI, "<missing>")
            .fix(abi_fix()),
    };
    let mad = match &rdma.mad_abi {
        Err(gap) => Outcome::gap(gap),
        Ok(Some(version)) if *version > 0 => Outcome::pass(format!("mad abi version {version}"))
            .evidence(MAD_ABI, version.to_string()),
        Ok(Some(_)) => Outcome::warn("mad abi version is 0: ibstat and subnet manager tools fail")
            .evidence(MAD_ABI, "0")
            .fix(Remediation::new("load ib_umad").command("modprobe ib_umad")),
        Ok(None) if !modules_known => {
            Outcome::unknown("mad abi file absent and the module list unknown: a partial capture")
                .evidence(MAD_ABI, "<missing>")
        }
        Ok(None) => {
            Outcome::warn("no mad abi: ib_umad is not loaded, ibstat and subnet manager tools fail")
                .evidence(MAD_ABI, "<missing>")
                .fix(Remediation::new("load ib_umad").command("modprobe ib_umad"))
        }
    };
    vec![verbs.subject("verbs"), mad.subject("mad")]
}

fn abi_fix() -> Remediation {
    Remediation::new(
        "load ib_uverbs and install user space from the same release as the kernel modules",
    )
    .command("modprobe ib_uverbs")
    .command("ibv_devinfo   # must list the devices")
}

declare_check! {
    /// The RDMA device nodes exist in `/dev/infiniband`.
    ///
    /// ## What it checks
    /// `/dev/infiniband` must hold one `uverbs<N>` node per RDMA device and
    /// `rdma_cm`. Run inside a workload container, this shows what the
    /// container was given. A root without `/dev` (most captures) is `unknown`.
    ///
    /// ## Why it matters
    /// Verbs applications open `/dev/infiniband/uverbs<N>`, RDMA-CM users
    /// `/dev/infiniband/rdma_cm`. Without them NCCL, UCX and NFS-RDMA clients
    /// in user space see no device and fall back to TCP.
    ///
    /// ## How to fix
    /// On the host, `modprobe ib_uverbs rdma_ucm` (udev creates the nodes).
    /// In Kubernetes, request the RDMA resource from the RDMA shared device
    /// plugin or the SR-IOV device plugin (they mount the nodes), or mount
    /// `/dev/infiniband` into privileged pods.
    ///
    /// ## Evidence
    /// The names in `/dev/infiniband` against the RDMA devices; a root
    /// without a populated `/dev` (no `/dev/null`) is `unknown`.
    ///
    /// ## Source
    /// `drivers/infiniband/core/uverbs_main.c` (`uverbs%d` character
    /// devices, `ib_uverbs_add_one()`) and `drivers/infiniband/core/ucma.c`
    /// (the `rdma_cm` misc device), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/RDMA003/fail-no-dev-infiniband/`:
    ///
    /// ```text
    /// rdma
    ///   fail           RDMA003  rdma-device-nodes-missing  /dev/infiniband is absent: user space cannot open any rdma device
    ///                  /dev/infiniband = <missing>
    ///
    /// what to fix first
    ///   1. RDMA003 rdma-device-nodes-missing: /dev/infiniband is absent: user space cannot open any rdma device
    ///      fix: load ib_uverbs and rdma_ucm on the host; give pods the rdma resource of a device plugin
    ///        modprobe -a ib_uverbs rdma_ucm && ls -l /dev/infiniband
    /// ```
    pub static DEVICE_NODES = {
        id: "RDMA003",
        name: "rdma-device-nodes-missing",
        group: Rdma,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: device_nodes,
    };
}

fn device_nodes(ctx: &Context<'_>) -> Vec<Outcome> {
    let rdma = &ctx.facts.rdma;
    need!(require(&rdma.devices, || no_devices(ctx)));
    if rdma.list().is_empty() {
        return vec![no_devices(ctx)];
    }
    if !rdma.has_dev {
        return vec![Outcome::unknown(
            "the root has no populated /dev (no /dev/null, as in most captures): device nodes cannot be checked",
        )];
    }
    let fix = || {
        Remediation::new("load ib_uverbs and rdma_ucm on the host; give pods the rdma resource of a device plugin")
            .command("modprobe -a ib_uverbs rdma_ucm && ls -l /dev/infiniband")
    };
    let nodes = match &rdma.device_nodes {
        Err(gap) => return vec![Outcome::gap(gap)],
        Ok(None) => {
            return vec![
                Outcome::fail("/dev/infiniband is absent: user space cannot open any rdma device")
                    .evidence(DEV_DIR, "<missing>")
                    .fix(fix()),
            ];
        }
        Ok(Some(nodes)) => nodes,
    };
    let uverbs = nodes.iter().filter(|n| n.starts_with("uverbs")).count();
    let devices = rdma.list().len();
    let rdma_cm = nodes.iter().any(|n| n == "rdma_cm");
    let shown = nodes.join(" ");
    let mut problems = Vec::new();
    if uverbs < devices {
        problems.push(format!(
            "{uverbs} uverbs node(s) for {devices} rdma device(s)"
        ));
    }
    if !rdma_cm {
        problems.push("no rdma_cm node".to_owned());
    }
    vec![if problems.is_empty() {
        Outcome::pass(format!("{uverbs} uverbs node(s) and rdma_cm")).evidence(DEV_DIR, shown)
    } else {
        Outcome::fail(problems.join(", "))
            .evidence(DEV_DIR, shown)
            .fix(fix())
    }]
}

declare_check! {
    /// Every RDMA port is ACTIVE with its physical link up.
    ///
    /// ## What it checks
    /// `state` and `phys_state` of each port under
    /// `/sys/class/infiniband/<dev>/ports/<p>`: `4: ACTIVE` and `5: LinkUp`
    /// pass. A port without a `state` file, or a state whose number and name
    /// disagree, is `unknown`. When the profile expects RDMA and no device
    /// exists, it fails. It reads the state of every port of every device
    /// (VFs included) at one instant: a link that flaps between two runs
    /// reads ACTIVE; RDMA008 judges what the port's counters saw.
    ///
    /// ## Why it matters
    /// A port in `1: DOWN`/`2: Polling` has no cable or no peer; `2: INIT`
    /// on InfiniBand means no subnet manager configured it. NCCL skips such
    /// ports or hangs at start; RoCE traffic takes another rail or falls back
    /// to TCP.
    ///
    /// ## How to fix
    /// `Polling`: check the cable, the transceiver and the switch port.
    /// `Disabled`: `ip link set <netdev> up` (RoCE) or enable the switch port.
    /// `INIT` on InfiniBand: start a subnet manager (`opensm`) or fix the
    /// fabric's. `ibstat` and `rdma link` show the same states.
    ///
    /// ## Evidence
    /// `ports/<p>/state` and `phys_state` of each device under
    /// `/sys/class/infiniband`; a port without `state` is `unknown`.
    ///
    /// ## Source
    /// `drivers/infiniband/core/sysfs.c` (`state_show()`,
    /// `phys_state_show()`, `ib_port_phys_state_str()`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/corpus_rdma.rs::h100_infiniband_class_tree
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::saturated_link_downed_fails_the_port
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/RDMA004/fail-no-device-expected/`:
    ///
    /// ```text
    /// rdma
    ///   fail           RDMA004  rdma-port-down  rdma expected, but /sys/class/infiniband lists no device
    ///                  /sys/class/infiniband = <missing>
    ///
    /// what to fix first
    ///   1. RDMA004 rdma-port-down: rdma expected, but /sys/class/infiniband lists no device
    ///      fix: install and load the nic's rdma driver (doca-ofed or the inbox mlx5_ib)
    ///        modprobe mlx5_ib && ls /sys/class/infiniband
    /// ```
    pub static PORT_DOWN = {
        id: "RDMA004",
        name: "rdma-port-down",
        group: Rdma,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: port_down,
    };
}

fn port_down(ctx: &Context<'_>) -> Vec<Outcome> {
    let devices = need!(require(&ctx.facts.rdma.devices, || no_devices(ctx)));
    if devices.is_empty() {
        return vec![no_devices(ctx)];
    }
    let mut outcomes = Vec::new();
    for device in devices {
        let dir = device.sysfs();
        match &device.ports {
            Err(gap) => outcomes.push(Outcome::gap(gap).subject(&device.name)),
            Ok(None) => outcomes.push(
                Outcome::unknown("device has no ports directory")
                    .subject(&device.name)
                    .evidence(format!("{dir}/ports"), "<missing>"),
            ),
            Ok(Some(ports)) => outcomes.extend(ports.iter().map(|port| port_state(device, port))),
        }
    }
    outcomes
}

fn port_state(device: &RdmaDevice, port: &RdmaPort) -> Outcome {
    let dir = device.port_dir(port.number);
    let name = port_name(device, port);
    let state = match &port.state {
        Err(gap) => return Outcome::gap(gap).subject(name),
        Ok(None) => {
            return Outcome::unknown("port directory has no state file")
                .subject(name)
                .evidence(format!("{dir}/state"), "<missing>");
        }
        Ok(Some(state)) => *state,
    };
    let phys = match &port.phys_state {
        Err(gap) => {
            return Outcome::gap(gap)
                .subject(name)
                .evidence(format!("{dir}/state"), state.as_str());
        }
        Ok(phys) => *phys,
    };
    let phys_text = phys.map_or("<missing>", PhysState::as_str);
    let evidence = |o: Outcome| {
        o.subject(&name)
            .evidence(format!("{dir}/state"), state.as_str())
            .evidence(format!("{dir}/phys_state"), phys_text)
    };
    let netdev = port
        .netdev
        .as_deref()
        .map_or(Cow::Borrowed("<netdev>"), quote);
    let fix = |summary: &str| {
        Remediation::new(summary)
            .command(join(["ibstat", &device.name, &port.number.to_string()]))
            .command(format!("ip link set {netdev} up   # RoCE ports"))
    };
    match (state, phys) {
        (PortState::Active, Some(PhysState::LinkUp) | None) => {
            evidence(Outcome::pass("active, link up"))
        }
        (_, Some(PhysState::Polling)) => evidence(Outcome::fail(format!(
            "port {} with the physical link polling: no cable or no peer",
            state.as_str()
        )))
        .fix(fix("check the cable, the transceiver and the switch port")),
        (_, Some(PhysState::Disabled)) => evidence(Outcome::fail(format!(
            "port {} and physically disabled",
            state.as_str()
        )))
        .fix(fix(
            "enable the port: bring the netdev up, or enable the switch port",
        )),
        (PortState::Init, _) => evidence(Outcome::fail(
            "port in 2: INIT: the link is up but no subnet manager configured it",
        ))
        .fix(fix("start a subnet manager (opensm) or fix the fabric's")),
        (state, phys) => evidence(Outcome::fail(format!(
            "port {} with physical state {}",
            state.as_str(),
            phys.map_or("<missing>", PhysState::as_str)
        )))
        .fix(fix("bring the link up: cable, switch port, netdev")),
    }
}

declare_check! {
    /// Active RDMA ports run at the rate of their family's fastest port.
    ///
    /// ## What it checks
    /// `rate` of every ACTIVE port, against the fastest active port of the
    /// same device family (`hca_type`, e.g. `MT4129` for ConnectX-7) and link
    /// layer on this host (warn), and against the profile's expected rate
    /// when given (fail). A rate that is not `<number> Gb/sec` is `unknown`.
    ///
    /// ## Why it matters
    /// A port that negotiated 200 Gb/s next to 400 Gb/s siblings, or fewer
    /// lanes (`2X` instead of `4X`), is the slowest rail: collective
    /// operations run at the speed of the slowest link in the ring.
    ///
    /// ## How to fix
    /// Check the cable and transceiver type (a 200G cable in a 400G port),
    /// the switch port speed, and the NIC firmware; `mlxlink -d <pci>` shows
    /// the negotiated speed and lanes and why.
    ///
    /// ## Evidence
    /// `ports/<p>/rate`, `hca_type` and `link_layer`; a rate that does not
    /// parse is `unknown`.
    ///
    /// ## Source
    /// `drivers/infiniband/core/sysfs.c` (`rate_show()`: `%d%s Gb/sec (%s)`),
    /// Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/corpus_rdma.rs::h100_infiniband_class_tree
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/RDMA005/fail-below-expected/`:
    ///
    /// ```text
    /// rdma
    ///   pass           RDMA005  rdma-port-rate-low  mlx5_0/1: 400 Gb/sec (4X NDR)
    ///   fail           RDMA005  rdma-port-rate-low  mlx5_1/1: 200 Gb/sec (2X NDR) below the expected 400 Gb/s
    ///                  /sys/class/infiniband/mlx5_1/ports/1/rate = 200 Gb/sec (2X NDR)
    ///
    /// what to fix first
    ///   1. RDMA005 rdma-port-rate-low (mlx5_1/1): 200 Gb/sec (2X NDR) below the expected 400 Gb/s
    ///      fix: check the cable and transceiver, the switch port speed and the nic firmware
    ///        mlxlink -d 0000:1d:00.0 -m   # negotiated speed, lanes and cable
    /// ```
    pub static PORT_RATE = {
        id: "RDMA005",
        name: "rdma-port-rate-low",
        group: Rdma,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: port_rate,
    };
}

fn port_rate(ctx: &Context<'_>) -> Vec<Outcome> {
    let devices = need!(require(&ctx.facts.rdma.devices, || no_devices(ctx)));
    if devices.is_empty() {
        return vec![no_devices(ctx)];
    }
    let mut fastest: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (device, port) in ports(ctx).filter(|(_, p)| p.is_active()) {
        if let Ok(Some(rate)) = &port.rate {
            let entry = fastest.entry(family_key(device, port)).or_insert(0.0);
            *entry = entry.max(rate.gbps);
        }
    }
    let expected = ctx.profile.rdma_rate_gbps.map(f64::from);
    let outcomes: Vec<Outcome> = ports(ctx)
        .filter(|(_, p)| p.is_active())
        .map(|(device, port)| {
            let path = format!("{}/rate", device.port_dir(port.number));
            let name = port_name(device, port);
            let rate = match &port.rate {
                Err(gap) => return Outcome::gap(gap).subject(name),
                Ok(None) => {
                    return Outcome::unknown("active port has no rate file")
                        .subject(name)
                        .evidence(path, "<missing>");
                }
                Ok(Some(rate)) => rate,
            };
            let key = family_key(device, port);
            let best = fastest.get(&key).copied().unwrap_or(rate.gbps);
            let fix = Remediation::new(
                "check the cable and transceiver, the switch port speed and the nic firmware",
            )
            .command(format!(
                "{}   # negotiated speed, lanes and cable",
                join([
                    "mlxlink",
                    "-d",
                    device.pci.as_deref().unwrap_or(&device.name),
                    "-m"
                ])
            ));
            let outcome = match expected {
                Some(want) if rate.gbps < want => {
                    Outcome::fail(format!("{} below the expected {want} Gb/s", rate.text)).fix(fix)
                }
                _ if rate.gbps < best => Outcome::warn(format!(
                    "{} while the fastest active {} {} port runs at {best} Gb/s",
                    rate.text, key.0, key.1
                ))
                .fix(fix),
                _ => Outcome::pass(rate.text.clone()),
            };
            outcome.subject(name).evidence(path, &rate.text)
        })
        .collect();
    if outcomes.is_empty() {
        return vec![Outcome::not_applicable("no active rdma port (see RDMA004)")];
    }
    outcomes
}

fn family_key(device: &RdmaDevice, port: &RdmaPort) -> (String, String) {
    let layer = match &port.link_layer {
        Ok(Some(layer)) => layer.to_string(),
        _ => "unknown".to_owned(),
    };
    (device.family(), layer)
}

declare_check! {
    /// The netdev behind each RDMA port has carrier.
    ///
    /// ## What it checks
    /// For each port, its netdev (`gid_attrs/ndevs`, else the function's
    /// `device/net/*`), then `/sys/class/net/<if>/carrier` and `operstate`.
    /// An Ethernet (RoCE) port without a netdev is `unknown`; InfiniBand
    /// ports without IPoIB are skipped.
    ///
    /// ## Why it matters
    /// RoCE runs on the netdev: without carrier the port cannot pass
    /// traffic, and RDMA-CM resolves addresses through the netdev. An
    /// administratively down interface also removes its RoCE GIDs.
    ///
    /// ## How to fix
    /// `ip link set <if> up`; when it stays down, check the cable, the switch
    /// port and `ethtool <if>`.
    ///
    /// ## Evidence
    /// The port's netdev (`gid_attrs/ndevs`, else the function's
    /// `device/net`), then `/sys/class/net/<if>/carrier` and `operstate`. A
    /// RoCE port without a netdev, and an unreadable `carrier`, are `unknown`.
    ///
    /// ## Source
    /// `net/core/net-sysfs.c` (`carrier_show()`, `operstate_show()`) and
    /// `drivers/infiniband/core/sysfs.c` (`gid_attrs/ndevs`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/corpus_rdma.rs::h100_infiniband_class_tree
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/RDMA006/fail-admin-down/`:
    ///
    /// ```text
    /// rdma
    ///   fail           RDMA006  rdma-netdev-no-carrier  mlx5_0/1: ens1f0 is down
    ///                  /sys/class/net/ens1f0/carrier = <unreadable>
    ///                  /sys/class/net/ens1f0/operstate = down
    ///
    /// what to fix first
    ///   1. RDMA006 rdma-netdev-no-carrier (mlx5_0/1): ens1f0 is down
    ///      fix: bring the interface up; check the cable and switch port if it stays down
    ///        ip link set ens1f0 up
    ///        ethtool ens1f0
    /// ```
    pub static NETDEV_NO_CARRIER = {
        id: "RDMA006",
        name: "rdma-netdev-no-carrier",
        group: Rdma,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: netdev_carrier,
    };
}

fn netdev_carrier(ctx: &Context<'_>) -> Vec<Outcome> {
    let devices = need!(require(&ctx.facts.rdma.devices, || no_devices(ctx)));
    if devices.is_empty() {
        return vec![no_devices(ctx)];
    }
    let mut outcomes = Vec::new();
    for (device, port) in ports(ctx) {
        let name = port_name(device, port);
        let Some(netdev) = &port.netdev else {
            if port.is_ethernet() {
                outcomes.push(
                    Outcome::unknown(
                        "roce port with no netdev mapped (no gid_attrs/ndevs, no device/net)",
                    )
                    .subject(name)
                    .evidence(format!("{}/device/net", device.sysfs()), "<missing>"),
                );
            }
            continue;
        };
        let Some(net) = ctx.facts.net.get(netdev) else {
            outcomes.push(
                Outcome::unknown(format!("netdev {netdev} is not in /sys/class/net"))
                    .subject(name)
                    .evidence(format!("/sys/class/net/{netdev}"), "<missing>"),
            );
            continue;
        };
        let operstate = net
            .operstate
            .clone()
            .unwrap_or_else(|| "<missing>".to_owned());
        let fix = || {
            Remediation::new(
                "bring the interface up; check the cable and switch port if it stays down",
            )
            .command(join(["ip", "link", "set", netdev, "up"]))
            .command(join(["ethtool", netdev]))
        };
        let carrier_path = format!("{}/carrier", net.sysfs());
        let operstate_path = format!("{}/operstate", net.sysfs());
        let outcome = match &net.carrier {
            Ok(Some(true)) => Outcome::pass(format!("{netdev} has carrier, operstate {operstate}"))
                .evidence(&carrier_path, "1"),
            Ok(Some(false)) => Outcome::fail(format!("{netdev} has no carrier"))
                .evidence(&carrier_path, "0")
                .fix(fix()),
            // The kernel refuses to read carrier on a downed interface.
            _ if operstate == "down" => Outcome::fail(format!("{netdev} is down"))
                .evidence(&carrier_path, "<unreadable>")
                .fix(fix()),
            Err(gap) => Outcome::gap(gap),
            Ok(None) => Outcome::unknown(format!("{netdev} has no carrier file"))
                .evidence(&carrier_path, "<missing>"),
        };
        outcomes.push(outcome.subject(name).evidence(operstate_path, operstate));
    }
    if outcomes.is_empty() {
        return vec![Outcome::not_applicable(
            "no rdma port has a netdev (infiniband without ipoib)",
        )];
    }
    outcomes
}

declare_check! {
    /// Every RoCE port has a RoCE v2 GID with an IP address.
    ///
    /// ## What it checks
    /// For each Ethernet port, the used entries of `ports/<p>/gids/<i>` with
    /// their `gid_attrs/types/<i>` and `gid_attrs/ndevs/<i>`. A RoCE v2 GID
    /// holding an IPv4 (`::ffff:a.b.c.d`) or a global IPv6 address passes;
    /// only link-local (`fe80::`) RoCE v2 GIDs warn; no RoCE v2 GID at all
    /// fails. An absent `gids` directory, or a table of zeros, is `unknown`.
    ///
    /// ## Why it matters
    /// RDMA-CM and NCCL address RoCE peers by IP through the GID table. RoCE
    /// v1 is not routable and has no ECN marking, so DCQCN does not work;
    /// without an address on the netdev there is no routable GID and
    /// connections fail or pick the wrong GID index.
    ///
    /// ## How to fix
    /// Give the netdev its IP address (`ip addr add`, or the CNI for a VF in a
    /// pod), keep RDMA-CM on RoCE v2 (QOS004), and set `NCCL_IB_GID_INDEX`
    /// to the RoCE v2 IPv4 entry `show_gids` prints.
    ///
    /// ## Evidence
    /// `ports/<p>/gids/<i>` with `gid_attrs/types/<i>` and
    /// `gid_attrs/ndevs/<i>` of Ethernet ports; no `gids` directory, or a table
    /// of zeros, is `unknown`.
    ///
    /// ## Source
    /// `drivers/infiniband/core/sysfs.c` (`show_port_gid_attr_gid_type()`)
    /// and `drivers/infiniband/core/cache.c` (`gid_type_str`: `IB/RoCE v1`,
    /// `RoCE v2`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/corpus_rdma.rs::h100_infiniband_class_tree
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/RDMA007/fail-only-roce-v1/`:
    ///
    /// ```text
    /// rdma
    ///   fail           RDMA007  roce-v2-gid-missing  mlx5_0/1: no roce v2 gid: only roce v1, which is not routable and has no ecn
    ///                  /sys/class/infiniband/mlx5_0/ports/1/gids = 0=fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d 1=::ffff:10.0.10.1
    ///
    /// what to fix first
    ///   1. RDMA007 roce-v2-gid-missing (mlx5_0/1): no roce v2 gid: only roce v1, which is not routable and has no ecn
    ///      fix: enable roce v2 and give the netdev an ip address
    ///        ip addr add <address>/<prefix> dev ens1f0
    ///        show_gids   # lists the gid table with types
    /// ```
    pub static ROCE_V2_GID = {
        id: "RDMA007",
        name: "roce-v2-gid-missing",
        group: Rdma,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: roce_v2_gid,
    };
}

fn roce_v2_gid(ctx: &Context<'_>) -> Vec<Outcome> {
    let devices = need!(require(&ctx.facts.rdma.devices, || no_devices(ctx)));
    if devices.is_empty() {
        return vec![no_devices(ctx)];
    }
    let outcomes: Vec<Outcome> = ports(ctx)
        .filter(|(_, p)| p.is_ethernet())
        .map(|(device, port)| {
            let dir = device.port_dir(port.number);
            let name = port_name(device, port);
            let table = match &port.gids {
                Err(gap) => return Outcome::gap(gap).subject(name),
                Ok(None) => {
                    return Outcome::unknown("roce port has no gids directory").subject(name).evidence(format!("{dir}/gids"), "<missing>");
                }
                Ok(Some(table)) => table,
            };
            if table.entries.is_empty() {
                return Outcome::unknown(format!(
                    "gid table is all zeros (first {} entries): the netdev is gone or the table was not captured",
                    table.scanned
                ))
                .subject(name)
                .evidence(format!("{dir}/gids"), "<all zeros>");
            }
            let v2: Vec<_> = table.entries.iter().filter(|e| e.kind == Some(GidType::RoceV2)).collect();
            let routable: Vec<_> = v2.iter().filter(|e| !e.gid.is_link_local()).collect();
            let shown = |entries: &[&zerohop_host::facts::rdma::GidEntry]| {
                entries.iter().map(|e| format!("{}={}", e.index, e.gid)).collect::<Vec<_>>().join(" ")
            };
            let netdev = port.netdev.as_deref().unwrap_or("<netdev>");
            let add_address = format!(
                "ip addr add <address>/<prefix> dev {}",
                port.netdev.as_deref().map_or(Cow::Borrowed("<netdev>"), quote)
            );
            let outcome = if let Some(first) = routable.first() {
                Outcome::pass(format!("roce v2 gid {} at index {}", first.gid, first.index))
                    .evidence(format!("{dir}/gid_attrs/types/{}", first.index), "RoCE v2")
            } else if !v2.is_empty() {
                Outcome::warn(format!("only link-local roce v2 gids: {netdev} has no ip address"))
                    .fix(Remediation::new("assign the netdev its ip address").command(add_address))
            } else if table.entries.iter().all(|e| e.kind.is_none()) {
                Outcome::unknown("gid types unreadable: cannot tell roce v1 from v2")
                    .evidence(format!("{dir}/gid_attrs/types"), "<unreadable>")
            } else {
                Outcome::fail("no roce v2 gid: only roce v1, which is not routable and has no ecn")
                    .fix(Remediation::new("enable roce v2 and give the netdev an ip address")
                        .command(add_address)
                        .command("show_gids   # lists the gid table with types"))
            };
            let all: Vec<_> = table.entries.iter().collect();
            outcome.subject(name).evidence(format!("{dir}/gids"), shown(&all))
        })
        .collect();
    if outcomes.is_empty() {
        return vec![Outcome::not_applicable("no roce (ethernet) rdma port")];
    }
    outcomes
}
