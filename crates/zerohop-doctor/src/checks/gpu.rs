//! The NVIDIA driver, its kernel module flavour, the GPUDirect RDMA path
//! (DMA-BUF or `nvidia_peermem`), GDS/GDRCopy modules and GPU↔NIC distance.

use zerohop_core::Remediation;
use zerohop_host::facts::nvidia::{GPUS_DIR, OSRELEASE, VERSION_FILE};
use zerohop_host::facts::rdma::PEER_MEMORY_DIR;
use zerohop_host::facts::{Modules, PciDevice};
use zerohop_host::parse::kmsg::Record;
use zerohop_host::parse::nvidia::{ModuleFlavour, kernel_version};
use zerohop_known::kernel_log as signatures;
use zerohop_known::nccl;

use crate::checks::rdma::{MODULE_CHAIN, wants_rdma};
use crate::checks::{need, require};
use crate::context::gap_value;
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{join, write_to};
use crate::profile::GpuDirect;
use crate::topology::{Distance, Topology};

const TAINT: &str = "/sys/module/nvidia/taint";
const MODULE_DIR: &str = "/sys/module/nvidia";

/// The NVIDIA GPUs on the PCI bus (physical functions).
fn gpus<'a>(ctx: &Context<'a>) -> Vec<&'a PciDevice> {
    ctx.facts.pci.nvidia_gpus().collect()
}

/// The outcome that ends a GPU check on a host without NVIDIA GPUs (on the
/// bus or in the driver's list): not-applicable, or unknown when the PCI
/// functions could not be listed or identified and the driver lists none.
fn no_gpu(ctx: &Context<'_>) -> Option<Outcome> {
    if !gpus(ctx).is_empty() || matches!(&ctx.facts.nvidia.gpus, Ok(Some(list)) if !list.is_empty())
    {
        return None;
    }
    Some(match ctx.facts.pci.unidentified() {
        Some(gap) => Outcome::gap(gap),
        None => Outcome::not_applicable("no nvidia gpu"),
    })
}

declare_check! {
    /// The NVIDIA driver is loaded and drives every NVIDIA GPU.
    ///
    /// ## What it checks
    /// Every NVIDIA GPU (vendor `0x10de`, class `0x0300`/`0x0302`) on the PCI
    /// bus, by its `driver` link under `/sys/bus/pci/devices`:
    ///
    /// - bound to `nvidia`: pass. A bound driver proves the module is loaded,
    ///   whatever else the host (or a capture of it) shows.
    /// - listed in `/proc/driver/nvidia/gpus` without a link: pass.
    /// - bound to another driver (`vfio-pci`, `nouveau`): fail.
    /// - bound to nothing: fail when the driver is loaded (its
    ///   `/proc/driver/nvidia` files, the `nvidia` module, or another GPU
    ///   bound to it) or when `/proc/modules` or `/sys/module` exists
    ///   without `nvidia`; the whole host fails once, "not loaded", in the
    ///   latter case. Without any of these files (a partial capture)
    ///   nothing shows whether the driver is loaded, and the GPU is
    ///   `unknown`.
    ///
    /// ## Why it matters
    /// Nothing of the GPU data path works without the driver: no CUDA, no
    /// GPUDirect RDMA, no GPUDirect Storage. A GPU bound to `vfio-pci` or to
    /// no driver is invisible to the host's workloads.
    ///
    /// ## How to fix
    /// Install the driver (the GPU Operator's driver container, or the
    /// distribution's `nvidia-driver` packages with the open kernel modules),
    /// then `modprobe nvidia`; `dmesg | grep NVRM` shows why it refused a GPU.
    ///
    /// ## Evidence
    /// The `driver` link of each NVIDIA function under `/sys/bus/pci/devices`
    /// (a bound `nvidia` is proof enough), `/proc/driver/nvidia/gpus` and
    /// `version`, and `/proc/modules` or `/sys/module/nvidia`. A root with none
    /// of the module lists or driver files leaves an unbound GPU `unknown`; a
    /// host whose functions cannot be identified but whose driver lists GPUs is
    /// judged by that list.
    ///
    /// ## Source
    /// The driver's procfs files: NVIDIA/open-gpu-kernel-modules
    /// `kernel-open/nvidia/nv-procfs.c` at 0dd4d36d15d05151a2834c66e47b16a8bed177a8;
    /// the `driver` link: `drivers/base/dd.c` (`driver_sysfs_add()`, Linux v6.8).
    ///
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::a_gpu_bound_to_nvidia_proves_the_driver_without_proc_modules
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::gpus_the_driver_lists_are_not_called_absent
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GPU001/fail-bound-to-vfio/`:
    ///
    /// ```text
    /// gpu
    ///   fail           GPU001  nvidia-driver-missing  0000:1b:00.0: gpu bound to vfio-pci, not nvidia
    ///                  /sys/bus/pci/devices/0000:1b:00.0/driver = vfio-pci
    ///
    /// what to fix first
    ///   1. GPU001 nvidia-driver-missing (0000:1b:00.0): gpu bound to vfio-pci, not nvidia
    ///      fix: bind the gpu to the nvidia driver
    ///        echo 0000:1b:00.0 > /sys/bus/pci/drivers/vfio-pci/unbind   # if bound
    ///        echo 0000:1b:00.0 > /sys/bus/pci/drivers/nvidia/bind
    /// ```
    pub static DRIVER_MISSING = {
        id: "GPU001",
        name: "nvidia-driver-missing",
        group: Gpu,
        severity: Error,
        requires: [],
        run: driver_missing,
    };
}

/// Whether the NVIDIA driver is loaded: `Some(true)` when anything shows
/// it, `Some(false)` when the module lists show it is not, `None` when
/// nothing tells (no module list, no driver files, no GPU bound to it).
fn driver_loaded(ctx: &Context<'_>) -> Option<bool> {
    let nvidia = &ctx.facts.nvidia;
    let bound = gpus(ctx)
        .iter()
        .any(|gpu| gpu.driver.as_deref() == Some("nvidia"));
    let module = match &ctx.facts.modules {
        Ok(Some(modules)) if modules.present("nvidia") => Some(true),
        Ok(Some(modules)) if modules.lists_loaded() => Some(false),
        _ => None,
    };
    if bound
        || module == Some(true)
        || matches!(nvidia.version, Ok(Some(_)))
        || matches!(nvidia.gpus, Ok(Some(_)))
    {
        Some(true)
    } else {
        module
    }
}

/// The driver version: the version file's, else the module's.
fn driver_version(ctx: &Context<'_>) -> String {
    let from_file = match &ctx.facts.nvidia.version {
        Ok(Some(version)) => version.version.clone(),
        _ => None,
    };
    let from_module = match &ctx.facts.modules {
        Ok(Some(modules)) => modules.get("nvidia").and_then(|m| m.version.clone()),
        _ => None,
    };
    from_file
        .or(from_module)
        .unwrap_or_else(|| "of unknown version".to_owned())
}

fn driver_missing(ctx: &Context<'_>) -> Vec<Outcome> {
    if let Some(outcome) = no_gpu(ctx) {
        return vec![outcome];
    }
    let nvidia = &ctx.facts.nvidia;
    let loaded = driver_loaded(ctx);
    let on_bus = gpus(ctx);
    if loaded == Some(false) {
        return vec![Outcome::fail(format!("nvidia driver not loaded, {} nvidia gpu(s) on the bus", on_bus.len()))
            .evidence(VERSION_FILE, "<missing>")
            .evidence("/proc/modules", "<no nvidia line>")
            .fix(Remediation::new("install and load the nvidia driver (gpu operator driver container or packages)")
                .command("modprobe nvidia && cat /proc/driver/nvidia/version")
                .command("dmesg | grep -i nvrm | tail"))];
    }
    let listed: Vec<&str> = match &nvidia.gpus {
        Ok(Some(list)) => list.iter().map(|g| g.address.as_str()).collect(),
        _ => Vec::new(),
    };
    let version = driver_version(ctx);
    if on_bus.is_empty() {
        return vec![
            Outcome::pass(format!("driver {version} lists {} gpu(s)", listed.len()))
                .evidence(GPUS_DIR, listed.join(" ")),
        ];
    }
    on_bus
        .into_iter()
        .map(|gpu| {
            let link = format!("{}/driver", gpu.sysfs());
            let in_list = listed.contains(&gpu.address.as_str());
            match (gpu.driver.as_deref(), loaded) {
                (Some("nvidia"), _) => Outcome::pass(format!("bound to nvidia, driver {version}"))
                    .evidence(link, "nvidia"),
                (None, _) if in_list => Outcome::pass(format!("listed by driver {version}"))
                    .evidence(format!("{GPUS_DIR}/{}", gpu.address), "<present>"),
                (None, None) => match &nvidia.version {
                    Err(gap) => Outcome::gap(gap),
                    _ => Outcome::unknown(
                        "no driver bound, and nothing shows whether the nvidia driver is loaded: /proc/modules and /proc/driver/nvidia are absent, and /sys/module (which a capture may hold in part) has no nvidia",
                    )
                    .evidence(link, "<none>")
                    .evidence("/proc/modules", "<missing>")
                    .evidence(MODULE_DIR, "<missing>"),
                },
                (other, _) => {
                    let bound = other.unwrap_or("<none>");
                    Outcome::fail(format!("gpu bound to {bound}, not nvidia"))
                        .evidence(link, bound)
                        .fix(
                            Remediation::new("bind the gpu to the nvidia driver")
                                .command(format!(
                                    "{}   # if bound",
                                    write_to(
                                        &gpu.address,
                                        &format!("/sys/bus/pci/drivers/{bound}/unbind")
                                    )
                                ))
                                .command(write_to(
                                    &gpu.address,
                                    "/sys/bus/pci/drivers/nvidia/bind",
                                )),
                        )
                }
            }
            .subject(&gpu.address)
        })
        .collect()
}

/// The flavour and what showed it; `None` when nothing tells.
fn flavour(ctx: &Context<'_>) -> Option<(ModuleFlavour, Vec<(String, String)>)> {
    let taint = match &ctx.facts.modules {
        Ok(Some(modules)) => modules.get("nvidia").and_then(|m| m.taint.clone()),
        _ => None,
    };
    let line = match &ctx.facts.nvidia.version {
        Ok(Some(version)) => Some(version),
        _ => None,
    };
    let mut evidence = Vec::new();
    if let Some(taint) = &taint {
        evidence.push((TAINT.to_owned(), taint.clone()));
    }
    if let Some(line) = line {
        evidence.push((VERSION_FILE.to_owned(), line.line.clone()));
    }
    // The taint flag is set by the kernel from the module's licence, so it
    // decides; the version line is built at driver build time and decides
    // only without it.
    let decided = match (&taint, line.and_then(|l| l.flavour)) {
        (Some(taint), _) if taint.contains('P') => ModuleFlavour::Proprietary,
        (Some(_), _) => ModuleFlavour::Open,
        (None, Some(said)) => said,
        (None, None) => return None,
    };
    Some((decided, evidence))
}

declare_check! {
    /// The NVIDIA kernel module is the open one.
    ///
    /// ## What it checks
    /// The flavour of the loaded `nvidia` module, on hosts with an NVIDIA
    /// GPU. `/sys/module/nvidia/taint` decides: `P` means the proprietary
    /// module (its licence taints the kernel), no `P` the open, MIT/GPL
    /// one. Without the taint file the `NVRM version:` line of
    /// `/proc/driver/nvidia/version` decides: the open module's names the
    /// "Open Kernel Module", and a line that names a "Kernel Module" and a
    /// version without "Open" is the proprietary one. With neither file it
    /// is `unknown`. The proprietary module fails when the profile wants
    /// DMA-BUF, warns when it says nothing, and is information when it
    /// wants `nvidia_peermem` or no GPUDirect RDMA.
    ///
    /// ## Why it matters
    /// GPUDirect RDMA over DMA-BUF and GPUDirect Storage's P2P mode need the
    /// open kernel module; NVIDIA recommends it for Turing and later GPUs and
    /// it is the only one for Blackwell. With the proprietary module the
    /// data path depends on `nvidia_peermem`.
    ///
    /// ## How to fix
    /// Install the open flavour: GPU Operator `driver.kernelModuleType: open`
    /// (not the deprecated `useOpenKernelModules`), or the
    /// `nvidia-driver-<ver>-open` / `kmod-nvidia-open-dkms` packages; reboot
    /// or reload the modules.
    ///
    /// ## Evidence
    /// `/sys/module/nvidia/taint` decides; without it the `NVRM version:` line
    /// of `/proc/driver/nvidia/version`. With neither file the flavour is
    /// `unknown`, each file named as missing.
    ///
    /// ## Source
    /// The taint flag `P` of a module with a proprietary licence:
    /// `kernel/module/main.c` (`module_license_taint_check()`) and
    /// `kernel/panic.c` (`taint_flags`), Linux v6.8; the open module's licence and
    /// version line: NVIDIA/open-gpu-kernel-modules `kernel-open/nvidia/nv.c`
    /// and `nv-procfs.c` at 0dd4d36d15d05151a2834c66e47b16a8bed177a8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::a_proprietary_version_line_is_proprietary
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::gpus_the_driver_lists_are_not_called_absent
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GPU002/fail-proprietary-dma-buf-wanted/`:
    ///
    /// ```text
    /// gpu
    ///   fail           GPU002  nvidia-module-proprietary  proprietary kernel module: no dma-buf gpudirect rdma
    ///                  /sys/module/nvidia/taint = POE
    ///                  /proc/driver/nvidia/version = NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.60.13  Wed Nov 30 06:39:21 UTC 2022
    ///
    /// what to fix first
    ///   1. GPU002 nvidia-module-proprietary: proprietary kernel module: no dma-buf gpudirect rdma
    ///      fix: install the open kernel module flavour
    ///        # GPU Operator: ClusterPolicy spec.driver.kernelModuleType: open
    ///        apt install nvidia-driver-<version>-open   # or: dnf module install nvidia-driver:open-dkms
    /// ```
    pub static PROPRIETARY_MODULE = {
        id: "GPU002",
        name: "nvidia-module-proprietary",
        group: Gpu,
        severity: Error,
        requires: [DRIVER_MISSING],
        run: proprietary_module,
    };
}

fn proprietary_module(ctx: &Context<'_>) -> Vec<Outcome> {
    if let Some(outcome) = no_gpu(ctx) {
        return vec![outcome];
    }
    let Some((flavour, evidence)) = flavour(ctx) else {
        return vec![match &ctx.facts.nvidia.version {
            Err(gap) => Outcome::gap(gap),
            Ok(Some(line)) => Outcome::unknown(
                "cannot tell open from proprietary: /sys/module/nvidia/taint is absent and the version line names no kernel module",
            )
            .evidence(TAINT, "<missing>")
            .evidence(VERSION_FILE, line.line.clone()),
            Ok(None) => Outcome::unknown(
                "cannot tell open from proprietary: /sys/module/nvidia/taint and /proc/driver/nvidia/version are absent",
            )
            .evidence(TAINT, "<missing>")
            .evidence(VERSION_FILE, "<missing>"),
        }];
    };
    let corroborated = match &ctx.facts.nvidia.version {
        Ok(Some(line)) if line.flavour.is_some_and(|said| said != flavour) => {
            " (the version line says otherwise; the taint flag decides)"
        }
        _ => "",
    };
    let fix = || {
        Remediation::new("install the open kernel module flavour")
            .command("# GPU Operator: ClusterPolicy spec.driver.kernelModuleType: open")
            .command("apt install nvidia-driver-<version>-open   # or: dnf module install nvidia-driver:open-dkms")
    };
    let outcome = match (flavour, ctx.profile.gpudirect) {
        (ModuleFlavour::Open, _) => Outcome::pass(format!("open kernel module{corroborated}")),
        (ModuleFlavour::Proprietary, Some(GpuDirect::DmaBuf)) => {
            Outcome::fail(format!("proprietary kernel module: no dma-buf gpudirect rdma{corroborated}")).fix(fix())
        }
        (ModuleFlavour::Proprietary, Some(GpuDirect::Peermem | GpuDirect::None)) => Outcome::info(format!(
            "proprietary kernel module: gpudirect rdma needs nvidia_peermem, dma-buf and gds p2p are unavailable{corroborated}"
        )),
        (ModuleFlavour::Proprietary, None) => Outcome::warn(format!(
            "proprietary kernel module: gpudirect rdma must use nvidia_peermem, dma-buf and gds p2p need the open module{corroborated}"
        ))
        .fix(fix()),
    };
    vec![
        evidence
            .into_iter()
            .fold(outcome, |o, (source, value)| o.evidence(source, value)),
    ]
}

/// Whether DMA-BUF GPUDirect RDMA is possible on this host.
pub(crate) enum DmaBuf {
    /// Yes, because of what the message says.
    Possible(String),
    /// No, because of what the message says.
    Impossible(String),
    /// Cannot tell, because of what the message says.
    Unknown(String),
}

pub(crate) fn dma_buf(ctx: &Context<'_>) -> DmaBuf {
    let open = match flavour(ctx) {
        Some((ModuleFlavour::Open, _)) => Some(true),
        Some((ModuleFlavour::Proprietary, _)) => {
            return DmaBuf::Impossible(
                "the proprietary nvidia module has no dma-buf export".to_owned(),
            );
        }
        None => None,
    };
    let release = match &ctx.facts.nvidia.kernel_release {
        Ok(Some(release)) => release,
        _ => {
            return DmaBuf::Unknown(format!("kernel release unknown ({OSRELEASE} unreadable)"));
        }
    };
    match (kernel_version(release), open) {
        (Some(version), _) if version < (5, 12) => DmaBuf::Impossible(format!(
            "kernel {release} predates rdma dma-buf support (5.12)"
        )),
        (Some(_), Some(_)) => DmaBuf::Possible(format!("open nvidia module on kernel {release}")),
        (Some(_), None) => DmaBuf::Unknown("the nvidia module flavour is unknown".to_owned()),
        (None, _) => DmaBuf::Unknown(format!("kernel release `{release}` not understood")),
    }
}

declare_check! {
    /// GPUDirect RDMA has a way into GPU memory: DMA-BUF or `nvidia_peermem`.
    ///
    /// ## What it checks
    /// Judged when the profile names a path (`--expect-gpudirect dma-buf`
    /// or `peermem`), on any host with an NVIDIA GPU, or, without one, when
    /// RDMA is part of the data path; `--expect-gpudirect none` makes it
    /// not applicable. DMA-BUF is possible with the open kernel module
    /// (GPU002) on Linux 5.12 or later (`/proc/sys/kernel/osrelease`); when
    /// the profile wants DMA-BUF only that is judged. Otherwise, or when the
    /// profile wants `nvidia_peermem`, the module must be loaded: `Live` in
    /// `/proc/modules` (or `live` in `/sys/module/nvidia_peermem/initstate`)
    /// means registered, since its `module_init` fails, and the kernel
    /// unloads it, unless `ib_register_peer_memory_client()` succeeds. Its
    /// client (`nv_mem`) in `/sys/kernel/mm/memory_peers` is shown as
    /// further proof. Which module it shows as using (`ib_core` on old
    /// MLNX_OFED, `ib_uverbs` on current MLNX_OFED and DOCA, which export
    /// the peer-memory API from `ib_uverbs`) is not judged. Absent, it
    /// fails, quoting the kernel log's lines when they show its load or
    /// registration failing (KLOG001). A module that is still loading, or
    /// present without a state or a registered client, is `unknown`. The
    /// legacy `nv_peer_mem` module (Mellanox's, for drivers before 470)
    /// is reported. Requires the NVIDIA driver (GPU001) and the RDMA
    /// modules (RDMA001).
    ///
    /// ## Why it matters
    /// Without one of the two paths NCCL, UCX and GDS cannot register GPU
    /// memory with the NIC and silently stage every transfer through host
    /// memory (NCCL logs `GDRDMA` missing, bandwidth halves, CPU load rises).
    ///
    /// ## How to fix
    /// `modprobe nvidia_peermem` (GPU Operator: `driver.rdma.enabled: true`),
    /// after the RDMA modules; unload `nv_peer_mem`. A load that fails with
    /// `Unknown symbol ib_register_peer_memory_client` needs the module
    /// rebuilt against the loaded MLNX_OFED/DOCA (reinstall the driver).
    /// For DMA-BUF, install the open kernel module on a 5.12+ kernel with
    /// DOCA-OFED or rdma-core 34+.
    ///
    /// ## Evidence
    /// `/proc/modules` (the module's state), `/sys/module/nvidia_peermem`
    /// (`initstate`), `/sys/kernel/mm/memory_peers/*/version`, the kernel
    /// log's peer-memory lines, `/proc/sys/kernel/osrelease` and GPU002's
    /// flavour for DMA-BUF. Without `/proc/modules` and `/sys/module` the
    /// module's presence is `unknown`, not absent; without the osrelease
    /// file DMA-BUF's support is `unknown`.
    ///
    /// ## Source
    /// NVIDIA/open-gpu-kernel-modules
    /// `kernel-open/nvidia-peermem/nvidia-peermem.c` at
    /// 0dd4d36d15d05151a2834c66e47b16a8bed177a8 (`nv_mem_client_init()`
    /// returns `-EINVAL` when a registration fails; `DRV_NAME "nv_mem"`);
    /// Linux `kernel/module/main.c` `do_init_module()` (v6.8: a failed init
    /// frees the module); Mellanox/nic-kernel
    /// `drivers/infiniband/core/peer_mem.c` at
    /// 258b12833a7a1d12e07b41fac8bf84a7f58ab097 (`memory_peers/<client>`)
    /// and `drivers/infiniband/core/Makefile` at
    /// 69f9fe4aa070b46580373bb151eb94912f1ed59a (`peer_mem.o` is part of
    /// `ib_uverbs`).
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::gpu_operator_lsmod_peermem_is_registered
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::an_expected_gpudirect_path_is_judged_without_rdma_devices
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GPU003/fail-dma-buf-wanted-old-kernel/`:
    ///
    /// ```text
    /// gpu
    ///   fail           GPU003  gpudirect-rdma-path-missing  dma-buf wanted but not possible: kernel 5.4.0-150-generic predates rdma dma-buf support (5.12)
    ///                  /proc/sys/kernel/osrelease = 5.4.0-150-generic
    ///
    /// what to fix first
    ///   1. GPU003 gpudirect-rdma-path-missing: dma-buf wanted but not possible: kernel 5.4.0-150-generic predates rdma dma-buf support (5.12)
    ///      fix: install the open kernel module on a 5.12+ kernel, or use nvidia_peermem
    ///        # GPU Operator: spec.driver.kernelModuleType: open
    /// ```
    pub static GPUDIRECT_PATH = {
        id: "GPU003",
        name: "gpudirect-rdma-path-missing",
        group: Gpu,
        severity: Error,
        requires: [DRIVER_MISSING, MODULE_CHAIN],
        run: gpudirect_path,
    };
}

fn gpudirect_path(ctx: &Context<'_>) -> Vec<Outcome> {
    if let Some(outcome) = no_gpu(ctx) {
        return vec![outcome];
    }
    // An expectation given is judged, RDMA devices or not.
    match ctx.profile.gpudirect {
        Some(GpuDirect::None) => {
            return vec![Outcome::not_applicable(
                "gpudirect rdma not wanted (the profile says none)",
            )];
        }
        None if !wants_rdma(ctx) => {
            return vec![Outcome::not_applicable(
                "gpudirect rdma not wanted: no rdma on this host and no expected path",
            )];
        }
        _ => {}
    }
    let dma_buf = dma_buf(ctx);
    let release = ctx
        .facts
        .nvidia
        .kernel_release
        .as_ref()
        .ok()
        .cloned()
        .flatten()
        .unwrap_or_else(|| "<missing>".to_owned());
    match (ctx.profile.gpudirect, &dma_buf) {
        (Some(GpuDirect::DmaBuf | GpuDirect::None) | None, DmaBuf::Possible(why)) => {
            return vec![
                Outcome::pass(format!("dma-buf possible: {why}")).evidence(OSRELEASE, release),
            ];
        }
        (Some(GpuDirect::DmaBuf), DmaBuf::Impossible(why)) => {
            return vec![Outcome::fail(format!("dma-buf wanted but not possible: {why}"))
                .evidence(OSRELEASE, release)
                .fix(
                    Remediation::new("install the open kernel module on a 5.12+ kernel, or use nvidia_peermem")
                        .command("# GPU Operator: spec.driver.kernelModuleType: open"),
                )];
        }
        (Some(GpuDirect::DmaBuf), DmaBuf::Unknown(why)) => {
            return vec![
                Outcome::unknown(format!(
                    "dma-buf wanted, cannot tell whether it is possible: {why}"
                ))
                .evidence(OSRELEASE, release),
            ];
        }
        _ => {}
    }
    let modules = need!(require(&ctx.facts.modules, || Outcome::unknown(
        "/proc/modules and /sys/module are absent: cannot tell whether nvidia_peermem is loaded"
    )
    .evidence("/proc/modules", "<missing>")
    .evidence("/sys/module", "<missing>")));
    let peermem = peermem_state(ctx, modules);
    let legacy = modules.present("nv_peer_mem");
    let peermem_fix = || {
        Remediation::new(
            "load nvidia_peermem after the rdma modules (gpu operator: driver.rdma.enabled: true)",
        )
        .command("modprobe -r nv_peer_mem 2>/dev/null; modprobe nvidia_peermem")
        .command("grep -w nvidia_peermem /proc/modules; ls /sys/kernel/mm/memory_peers")
    };
    let no_dma_buf = match &dma_buf {
        DmaBuf::Impossible(why) => format!(" and dma-buf is not possible ({why})"),
        DmaBuf::Unknown(why) => format!(" and dma-buf cannot be confirmed ({why})"),
        DmaBuf::Possible(_) => String::new(),
    };
    let outcome = match &peermem {
        Peermem::Registered(how) if legacy => Outcome::warn(format!(
            "nvidia_peermem registered ({how}), but the legacy nv_peer_mem is loaded too"
        ))
        .fix(peermem_fix()),
        Peermem::Registered(how) => {
            Outcome::pass(format!("nvidia_peermem loaded and registered ({how})"))
        }
        Peermem::Settling(state) => Outcome::unknown(format!(
            "nvidia_peermem is {state}: its module_init, which registers it, has not finished"
        )),
        Peermem::NotListed => Outcome::unknown(format!(
            "nvidia_peermem is not in /sys/module, and /proc/modules is not in the root: a capture's /sys/module may hold only some modules, so its absence is not shown{no_dma_buf}"
        )),
        Peermem::Unknown => Outcome::unknown(
            "nvidia_peermem is in /sys/module, but neither /proc/modules nor its initstate gives its state, and /sys/kernel/mm/memory_peers lists no nv_mem client: cannot tell whether it registered",
        ),
        Peermem::Missing(failures) if !failures.is_empty() => Outcome::fail(format!(
            "no gpudirect rdma path: the kernel log shows the peer-memory module failing to load or register, and nvidia_peermem is not loaded{no_dma_buf}"
        ))
        .fix(peermem_fix()),
        Peermem::Missing(_) if legacy => Outcome::fail(format!(
            "only the legacy nv_peer_mem is loaded{no_dma_buf}: it does not work with drivers 470 and later"
        ))
        .fix(peermem_fix()),
        Peermem::Missing(_) => Outcome::fail(format!(
            "no gpudirect rdma path: nvidia_peermem not loaded{no_dma_buf}"
        ))
        .fix(peermem_fix()),
    };
    let state = modules
        .get("nvidia_peermem")
        .map_or("<missing>".to_owned(), |m| {
            m.state
                .clone()
                .unwrap_or_else(|| "<present, state not given>".to_owned())
        });
    let mut outcome = outcome
        .evidence("/proc/modules", format!("nvidia_peermem: {state}"))
        .evidence(OSRELEASE, release);
    match &ctx.facts.rdma.peer_memory {
        Ok(Some(clients)) => {
            for client in clients {
                outcome = outcome.evidence(
                    format!("{PEER_MEMORY_DIR}/{}/version", client.name),
                    client
                        .version
                        .clone()
                        .unwrap_or_else(|| "<unreadable>".to_owned()),
                );
            }
        }
        Ok(None) => outcome = outcome.evidence(PEER_MEMORY_DIR, "<missing>"),
        Err(gap) => outcome = outcome.evidence(&gap.path, gap_value(gap.kind)),
    }
    if let (Peermem::Missing(failures), Ok(log)) = (&peermem, &ctx.facts.kernel_log) {
        for record in failures {
            outcome = outcome.evidence(log.locate(record), record.shown());
        }
    }
    vec![outcome]
}

/// `nvidia_peermem` as the loader and the peer-memory API show it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Peermem<'a> {
    /// Not loaded, with the kernel log's records of its load or
    /// registration failing (empty when the log shows none or was not read).
    Missing(Vec<&'a Record>),
    /// Registered, and what shows it: the module is live (its
    /// `module_init`, which registers it, succeeded) or its client is in
    /// `/sys/kernel/mm/memory_peers`.
    Registered(String),
    /// Loading or unloading: `Loading`/`coming` or `Unloading`/`going`.
    Settling(String),
    /// In `/sys/module` without a state, and no client registered.
    Unknown,
    /// Not in `/sys/module`, without `/proc/modules` to show its absence
    /// and without a failure in the kernel log.
    NotListed,
}

/// The client names `nvidia-peermem` and the legacy `nv_peer_mem`
/// register (`DRV_NAME "nv_mem"`, and `"nv_mem_nc"` for the persistent
/// pages client, in `nvidia-peermem.c`).
const PEERMEM_CLIENT: &str = "nv_mem";

fn peermem_state<'a>(ctx: &Context<'a>, modules: &Modules) -> Peermem<'a> {
    let client = match &ctx.facts.rdma.peer_memory {
        Ok(Some(clients)) => clients.iter().find(|c| c.name.starts_with(PEERMEM_CLIENT)),
        _ => None,
    };
    let Some(module) = modules.get("nvidia_peermem") else {
        let failures = match &ctx.facts.kernel_log {
            Ok(log) => log
                .records
                .iter()
                .filter(|record| {
                    signatures::peermem(record.message())
                        .is_some_and(|event| event.kind == signatures::Peermem::Registration)
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        if failures.is_empty() && !modules.lists_loaded() {
            return Peermem::NotListed;
        }
        return Peermem::Missing(failures);
    };
    match (module.is_live(), client) {
        (Some(true), Some(client)) => Peermem::Registered(format!(
            "module live, client {} registered in {PEER_MEMORY_DIR}",
            client.name
        )),
        (Some(true), None) => Peermem::Registered(
            "module live: its module_init fails unless the registration succeeds".to_owned(),
        ),
        (Some(false), _) => {
            Peermem::Settling(module.state.clone().unwrap_or_default().to_lowercase())
        }
        (None, Some(client)) => Peermem::Registered(format!(
            "client {} registered in {PEER_MEMORY_DIR}",
            client.name
        )),
        (None, None) => Peermem::Unknown,
    }
}

declare_check! {
    /// The GPUDirect Storage and GDRCopy modules are loaded when wanted.
    ///
    /// ## What it checks
    /// `nvidia_fs` when the profile wants GPUDirect Storage (`gds`) and
    /// `gdrdrv` when it wants GDRCopy (`gdrcopy`), in `/proc/modules` and
    /// `/sys/module`; their versions come from `/sys/module/<m>/version`.
    /// Asked for and loaded passes, asked for and absent fails, loaded but
    /// not asked for is information, neither asked for nor loaded does not
    /// apply; asked for on a root without either module list is `unknown`.
    ///
    /// ## Why it matters
    /// Without `nvidia_fs`, cuFile runs in compatibility mode: reads go
    /// through a host bounce buffer, silently. Without `gdrdrv`, UCX and
    /// NCCL lose their low-latency CPU-mapped GPU copies.
    ///
    /// ## How to fix
    /// GPU Operator: `gds.enabled: true` and `gdrcopy.enabled: true` in the
    /// `ClusterPolicy`; on a host, install `nvidia-fs` / `gdrcopy` (DKMS) and
    /// `modprobe nvidia_fs gdrdrv`.
    ///
    /// ## Evidence
    /// `/proc/modules` and `/sys/module/<m>` (`version`) for `nvidia_fs` and
    /// `gdrdrv`, and the profile's `gds`/`gdrcopy`. Without either module list
    /// an expected module is `unknown`, not absent.
    ///
    /// ## Source
    /// The module names: NVIDIA/gds-nvidia-fs `src/nvfs-core.h` at
    /// e39115953c571f2506be9759fa37119ebe003b60 (`DEVICE_NAME "nvidia-fs"`,
    /// which the kernel lists as `nvidia_fs`) and
    /// NVIDIA/gdrcopy `src/gdrdrv/Makefile` (`gdrdrv.ko`, at
    /// c7a454cc077f9643fb5c60945c1571808ecb7ef4); cuFile's
    /// compatibility mode without `nvidia-fs`: NVIDIA GPUDirect Storage
    /// Configuration and Benchmarking Guide (GDS 1.x, "Compatibility Mode").
    ///
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::a_gpu_bound_to_nvidia_proves_the_driver_without_proc_modules
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GPU004/fail-gdrdrv-missing/`:
    ///
    /// ```text
    /// gpu
    ///   fail           GPU004  gpudirect-storage-modules-missing  gdrdrv: gdrcopy expected, but gdrdrv is not loaded
    ///                  /sys/module/gdrdrv = <missing>
    ///
    /// what to fix first
    ///   1. GPU004 gpudirect-storage-modules-missing (gdrdrv): gdrcopy expected, but gdrdrv is not loaded
    ///      fix: install and load gdrdrv
    ///        modprobe gdrdrv
    ///        # GPU Operator: ClusterPolicy spec.gdrcopy.enabled: true
    /// ```
    pub static GDS_MODULES = {
        id: "GPU004",
        name: "gpudirect-storage-modules-missing",
        group: Gpu,
        severity: Error,
        requires: [DRIVER_MISSING],
        run: gds_modules,
    };
}

fn gds_modules(ctx: &Context<'_>) -> Vec<Outcome> {
    if let Some(outcome) = no_gpu(ctx) {
        return vec![outcome];
    }
    let wanted = [
        ("nvidia_fs", "gpudirect storage", ctx.profile.gds),
        ("gdrdrv", "gdrcopy", ctx.profile.gdrcopy),
    ];
    if wanted.iter().all(|(_, _, want)| *want != Some(true))
        && !matches!(ctx.facts.modules, Ok(Some(_)))
    {
        return vec![Outcome::not_applicable(
            "neither gpudirect storage nor gdrcopy expected",
        )];
    }
    let modules = need!(require(&ctx.facts.modules, || Outcome::unknown(
        "/proc/modules and /sys/module are absent: cannot tell which modules are loaded"
    )));
    let outcomes: Vec<Outcome> = wanted
        .iter()
        .filter_map(|(module, feature, want)| {
            let present = modules.get(module);
            let version = present
                .and_then(|m| m.version.clone())
                .map(|v| format!(" {v}"))
                .unwrap_or_default();
            let path = format!("/sys/module/{module}");
            let outcome = match (want, present) {
                (Some(true), Some(_)) => {
                    Outcome::pass(format!("{module}{version} loaded for {feature}"))
                }
                (Some(true), None) if !modules.lists_loaded() => Outcome::unknown(format!(
                    "{feature} expected; {module} is not in /sys/module, and /proc/modules is not in the root to show whether it is loaded"
                )),
                (Some(true), None) => {
                    Outcome::fail(format!("{feature} expected, but {module} is not loaded")).fix(
                        Remediation::new(format!("install and load {module}"))
                            .command(join(["modprobe", module]))
                            .command(format!(
                                "# GPU Operator: ClusterPolicy spec.{}.enabled: true",
                                if *module == "gdrdrv" {
                                    "gdrcopy"
                                } else {
                                    "gds"
                                }
                            )),
                    )
                }
                (_, Some(_)) => {
                    Outcome::info(format!("{module}{version} loaded ({feature} not expected)"))
                }
                (_, None) => return None,
            };
            Some(outcome.subject(*module).evidence(
                path,
                if present.is_some() {
                    "<present>"
                } else {
                    "<missing>"
                },
            ))
        })
        .collect();
    if outcomes.is_empty() {
        return vec![Outcome::not_applicable(
            "neither gpudirect storage nor gdrcopy expected or loaded",
        )];
    }
    outcomes
}

declare_check! {
    /// Each GPU has an RDMA NIC near enough for GPUDirect RDMA.
    ///
    /// ## What it checks
    /// For every NVIDIA GPU, the NIC `zerohop topo` pairs it with: the
    /// nearest physical function backing an RDMA device in
    /// `/sys/class/infiniband`, from the bridges in their real sysfs paths
    /// and their `numa_node` (ties go to an `ACTIVE` port, then the faster
    /// one; see `docs/topology.md`). The classes are those of
    /// `nvidia-smi topo -m`. `PIX` (same switch) and `PXB` (switches only)
    /// pass. `PHB` (through the host bridge) and `NODE` (another host
    /// bridge of the same NUMA node) warn: they are beyond NCCL's default
    /// `NCCL_NET_GDR_LEVEL` of `PXB` (`ncclTopoCheckGdr` in NCCL's
    /// `src/graph/paths.cc`), so NCCL turns GPUDirect RDMA off for that GPU.
    /// `SYS` (across sockets) warns too, and an undecidable class (different
    /// host bridges, `numa_node` -1 on a multi-node host) is `unknown`. GPUs
    /// the driver lists in `/proc/driver/nvidia/gpus` whose PCI functions
    /// carry no vendor ID (a capture without their `vendor` files) cannot
    /// be placed: `unknown` beside RDMA devices, not applicable without.
    ///
    /// ## Why it matters
    /// Where GPUDirect RDMA is off, NCCL stages every network transfer
    /// through host memory: an extra copy per message, CPU memory bandwidth
    /// taken from the job, lower bus bandwidth and higher latency, and only
    /// `NCCL_DEBUG=INFO` says so ("GPU Direct RDMA Disabled"). On hosts where
    /// every GPU–NIC pair is `NODE` this is every GPU. Across sockets the
    /// inter-socket link is slower than PCIe and often refuses peer-to-peer.
    ///
    /// ## How to fix
    /// Move cards so every GPU has a NIC under its own switch. Otherwise
    /// raise `NCCL_NET_GDR_LEVEL` to the class shown (`PHB` for `PHB` and
    /// `NODE`, `SYS` across sockets) so NCCL uses GPUDirect RDMA through the
    /// CPU's root complex; that costs peer-to-peer traffic through the root
    /// complex, which some CPUs forward more slowly than host memory copies,
    /// so compare `all_reduce_perf` bus bandwidth with and without it. Pin
    /// each GPU's traffic to its NIC with `NCCL_IB_HCA` from `zerohop topo`.
    ///
    /// ## Evidence
    /// The PCI tree of `/sys/devices` (each function's real path and
    /// bridges), `numa_node` of the GPU and NIC functions, and the RDMA devices
    /// of `/sys/class/infiniband` with their port state and rate. GPUs the
    /// driver lists (`/proc/driver/nvidia/gpus`) whose functions carry no
    /// vendor ID cannot be placed: `unknown`, or not applicable without an
    /// RDMA device.
    ///
    /// ## Source
    /// NCCL `src/graph/paths.cc` (`ncclTopoCheckGdr`) and `src/graph/topo.h`
    /// (the `PATH_*` classes) at NVIDIA/nccl tag v2.21.5-1, with
    /// `NCCL_NET_GDR_LEVEL` defaulting to `PXB`; the classes are those of
    /// `nvidia-smi topo -m`.
    ///
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::every_gpu_nic_pair_at_node_warns_that_nccl_stages_through_host_memory
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::gpus_the_driver_lists_are_not_called_absent
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GPU005/warn-cross-socket/`:
    ///
    /// ```text
    /// gpu
    ///   warn           GPU005  gpu-nic-cross-socket  0000:1b:00.0: nearest rdma nic mlx5_0 is on another socket (SYS), beyond nccl's default NCCL_NET_GDR_LEVEL=PXB: nccl stages through host memory
    ///                  /sys/bus/pci/devices/0000:1b:00.0/numa_node = 0
    ///                  /sys/class/infiniband/mlx5_0/device/numa_node = 1
    ///
    /// what to fix first
    ///   1. GPU005 gpu-nic-cross-socket (0000:1b:00.0): nearest rdma nic mlx5_0 is on another socket (SYS), beyond nccl's default NCCL_NET_GDR_LEVEL=PXB: nccl stages through host memory
    ///      fix: give this gpu a nic on its own socket, or set NCCL_NET_GDR_LEVEL=SYS so nccl uses gpudirect rdma through the cpu (measure: it can be slower than staging)
    ///        export NCCL_NET_GDR_LEVEL=SYS
    ///        all_reduce_perf -b 8 -e 8G -f 2 -g 1   # compare busbw with and without it
    ///        zerohop topo   # the pairing and NCCL_IB_HCA
    /// ```
    pub static GPU_NIC_DISTANCE = {
        id: "GPU005",
        name: "gpu-nic-cross-socket",
        group: Gpu,
        severity: Warning,
        requires: [],
        run: gpu_nic_distance,
    };
}

/// Why no GPU was paired: no GPU at all, no RDMA device to pair with, or
/// GPUs the driver lists whose PCI functions the tree does not identify
/// as NVIDIA's (a capture without their `vendor` files), which places
/// nothing.
fn no_pairing(ctx: &Context<'_>) -> Outcome {
    let listed: Vec<&str> = match &ctx.facts.nvidia.gpus {
        Ok(Some(list)) => list.iter().map(|g| g.address.as_str()).collect(),
        _ => Vec::new(),
    };
    if listed.is_empty() {
        return match ctx.facts.pci.unidentified() {
            Some(gap) => Outcome::gap(gap),
            None => Outcome::not_applicable("no nvidia gpu on the pci bus"),
        };
    }
    let gpus = format!(
        "the nvidia driver lists {} gpu(s) ({})",
        listed.len(),
        listed.join(" ")
    );
    match &ctx.facts.rdma.devices {
        Err(gap) => Outcome::gap(gap),
        Ok(devices) if devices.as_ref().is_none_or(Vec::is_empty) => {
            Outcome::not_applicable(format!("{gpus}, but no rdma device to pair them with"))
                .evidence(GPUS_DIR, listed.join(" "))
        }
        Ok(_) => {
            let first = listed[0];
            let vendor = format!("/sys/bus/pci/devices/{first}/vendor");
            let shown = match ctx.facts.pci.get(first) {
                Some(function) => function
                    .vendor
                    .map_or_else(|| "<missing>".to_owned(), |v| format!("0x{v:04x}")),
                None => "<function missing>".to_owned(),
            };
            Outcome::unknown(format!(
                "{gpus}, but their pci functions are not identified as nvidia gpus (no vendor id): their distance to the rdma nics cannot be placed"
            ))
            .evidence(GPUS_DIR, listed.join(" "))
            .evidence(vendor, shown)
        }
    }
}

fn gpu_nic_distance(ctx: &Context<'_>) -> Vec<Outcome> {
    let topology = Topology::of(ctx.facts);
    if topology.pairings.is_empty() {
        return vec![no_pairing(ctx)];
    }
    if topology.nics.is_empty() {
        return vec![match &ctx.facts.rdma.devices {
            Err(gap) => Outcome::gap(gap),
            Ok(_) => Outcome::not_applicable("no rdma device backed by a pci physical function"),
        }];
    }
    let default = nccl::NET_GDR_LEVEL_DEFAULT;
    topology
        .pairings
        .iter()
        .map(|pairing| {
            let nic = pairing.nic.as_deref().unwrap_or("<none>");
            let node = |n: Option<i32>| n.map_or_else(|| "-1".to_owned(), |n| n.to_string());
            let nic_node = topology.nics.iter().find(|n| n.name == nic).and_then(|n| n.numa_node);
            let raise = |d: Distance| {
                let placement = if d == Distance::Sys {
                    "give this gpu a nic on its own socket"
                } else {
                    "put a nic under this gpu's pcie switch"
                };
                Remediation::new(format!(
                    "{placement}, or set {}={} so nccl uses gpudirect rdma through the cpu (measure: it can be slower than staging)",
                    nccl::NET_GDR_LEVEL,
                    d.nccl_level()
                ))
                .command(format!("export {}={}", nccl::NET_GDR_LEVEL, d.nccl_level()))
                .command("all_reduce_perf -b 8 -e 8G -f 2 -g 1   # compare busbw with and without it")
                .command("zerohop topo   # the pairing and NCCL_IB_HCA")
            };
            let outcome = match pairing.distance {
                Some(d) if d.gdr_by_default() => Outcome::pass(format!("nearest rdma nic {nic} at {d}")),
                Some(d @ (Distance::Phb | Distance::Node)) => Outcome::warn(format!(
                    "nearest rdma nic {nic} at {d}, beyond nccl's default {}={default}: nccl turns gpudirect rdma off for this gpu and stages through host memory",
                    nccl::NET_GDR_LEVEL
                ))
                .fix(raise(d)),
                Some(d) => Outcome::warn(format!(
                    "nearest rdma nic {nic} is on another socket ({d}), beyond nccl's default {}={default}: nccl stages through host memory",
                    nccl::NET_GDR_LEVEL
                ))
                .fix(raise(d)),
                None => Outcome::unknown(format!("distance to {nic} unknown: different host bridges and numa_node -1")),
            };
            outcome
                .subject(&pairing.gpu)
                .evidence(format!("/sys/bus/pci/devices/{}/numa_node", pairing.gpu), node(pairing.gpu_numa_node))
                .evidence(format!("/sys/class/infiniband/{nic}/device/numa_node"), node(nic_node))
        })
        .collect()
}
