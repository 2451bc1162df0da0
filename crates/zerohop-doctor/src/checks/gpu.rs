//! The NVIDIA driver, its kernel module flavour, the GPUDirect RDMA path
//! (DMA-BUF or `nvidia_peermem`), GDS/GDRCopy modules and GPU↔NIC distance.

use zerohop_core::Remediation;
use zerohop_host::facts::nvidia::{GPUS_DIR, OSRELEASE, VERSION_FILE};
use zerohop_host::facts::{Modules, PciDevice};
use zerohop_host::parse::nvidia::kernel_version;

use crate::checks::rdma::{MODULE_CHAIN, wants_rdma};
use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{join, write_to};
use crate::profile::GpuDirect;
use crate::topology::{Distance, Topology};

const TAINT: &str = "/sys/module/nvidia/taint";

/// The NVIDIA GPUs on the PCI bus (physical functions).
fn gpus<'a>(ctx: &Context<'a>) -> Vec<&'a PciDevice> {
    ctx.facts
        .pci
        .list()
        .iter()
        .filter(|d| d.is_nvidia_gpu() && !d.is_vf())
        .collect()
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
    /// The driver is loaded when `/proc/driver/nvidia/version`,
    /// `/proc/driver/nvidia/gpus` or the `nvidia` module exists. Then each
    /// NVIDIA GPU on the PCI bus must be bound to `nvidia` (its `driver`
    /// link), or be listed in `/proc/driver/nvidia/gpus` when the link is
    /// not there.
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
    pub static DRIVER_MISSING = {
        id: "GPU001",
        name: "nvidia-driver-missing",
        group: Gpu,
        severity: Error,
        requires: [],
        run: driver_missing,
    };
}

fn driver_missing(ctx: &Context<'_>) -> Vec<Outcome> {
    if let Some(outcome) = no_gpu(ctx) {
        return vec![outcome];
    }
    let nvidia = &ctx.facts.nvidia;
    if let Err(gap) = &nvidia.version {
        return vec![Outcome::gap(gap)];
    }
    let module = matches!(&ctx.facts.modules, Ok(Some(m)) if m.present("nvidia"));
    let listed: Vec<&str> = match &nvidia.gpus {
        Ok(Some(list)) => list.iter().map(|g| g.address.as_str()).collect(),
        _ => Vec::new(),
    };
    let loaded =
        matches!(nvidia.version, Ok(Some(_))) || matches!(nvidia.gpus, Ok(Some(_))) || module;
    let version = match &nvidia.version {
        Ok(Some(v)) => v
            .version
            .clone()
            .unwrap_or_else(|| "of unknown version".to_owned()),
        _ => "of unknown version".to_owned(),
    };
    if !loaded {
        return vec![Outcome::fail(format!("nvidia driver not loaded, {} nvidia gpu(s) on the bus", gpus(ctx).len()))
            .evidence(VERSION_FILE, "<missing>")
            .evidence("/sys/module/nvidia", "<missing>")
            .fix(Remediation::new("install and load the nvidia driver (gpu operator driver container or packages)")
                .command("modprobe nvidia && cat /proc/driver/nvidia/version")
                .command("dmesg | grep -i nvrm | tail"))];
    }
    let on_bus = gpus(ctx);
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
            match gpu.driver.as_deref() {
                Some("nvidia") => Outcome::pass(format!("bound to nvidia, driver {version}"))
                    .evidence(link, "nvidia"),
                None if in_list => Outcome::pass(format!("listed by driver {version}"))
                    .evidence(format!("{GPUS_DIR}/{}", gpu.address), "<present>"),
                other => {
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

/// The kernel module flavour as the taint flags and the version line tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Open,
    Proprietary,
}

/// The flavour and what showed it; `None` when nothing tells.
fn flavour(ctx: &Context<'_>) -> Option<(Flavour, Vec<(String, String)>)> {
    let taint = match &ctx.facts.modules {
        Ok(Some(modules)) => modules.get("nvidia").and_then(|m| m.taint.clone()),
        _ => None,
    };
    let open_line = match &ctx.facts.nvidia.version {
        Ok(Some(version)) => Some(version),
        _ => None,
    };
    let mut evidence = Vec::new();
    if let Some(taint) = &taint {
        evidence.push((TAINT.to_owned(), taint.clone()));
    }
    if let Some(line) = open_line {
        evidence.push((VERSION_FILE.to_owned(), line.line.clone()));
    }
    // The taint flag is set by the kernel from the module's licence, so it
    // decides; the version line is built at driver build time and only
    // corroborates.
    let decided = match (&taint, open_line) {
        (Some(taint), _) if taint.contains('P') => Flavour::Proprietary,
        (Some(_), _) => Flavour::Open,
        (None, Some(line)) if line.open => Flavour::Open,
        _ => return None,
    };
    Some((decided, evidence))
}

declare_check! {
    /// The NVIDIA kernel module is the open one.
    ///
    /// ## What it checks
    /// `/sys/module/nvidia/taint`: `P` means the proprietary module (its
    /// licence taints the kernel); no `P` means the open, MIT/GPL module.
    /// `/proc/driver/nvidia/version` naming the "Open Kernel Module"
    /// corroborates it, or decides when the taint file is absent. The
    /// proprietary module fails when the profile wants DMA-BUF, warns when
    /// it says nothing, and is information when it wants `nvidia_peermem`.
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
        return vec![Outcome::unknown(
            "cannot tell open from proprietary: /sys/module/nvidia/taint is absent and the version line does not name the open module",
        )
        .evidence(TAINT, "<missing>")];
    };
    let corroborated = match &ctx.facts.nvidia.version {
        Ok(Some(line)) if line.open != (flavour == Flavour::Open) => {
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
        (Flavour::Open, _) => Outcome::pass(format!("open kernel module{corroborated}")),
        (Flavour::Proprietary, Some(GpuDirect::DmaBuf)) => {
            Outcome::fail(format!("proprietary kernel module: no dma-buf gpudirect rdma{corroborated}")).fix(fix())
        }
        (Flavour::Proprietary, Some(GpuDirect::Peermem | GpuDirect::None)) => Outcome::info(format!(
            "proprietary kernel module: gpudirect rdma needs nvidia_peermem, dma-buf and gds p2p are unavailable{corroborated}"
        )),
        (Flavour::Proprietary, None) => Outcome::warn(format!(
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

/// Whether DMA-BUF GPUDirect RDMA is possible, with the reason when not.
fn dma_buf(ctx: &Context<'_>) -> Result<String, String> {
    let open = match flavour(ctx) {
        Some((Flavour::Open, _)) => true,
        Some((Flavour::Proprietary, _)) => {
            return Err("the proprietary nvidia module has no dma-buf export".to_owned());
        }
        None => false,
    };
    let release = match &ctx.facts.nvidia.kernel_release {
        Ok(Some(release)) => release,
        _ => return Err(format!("kernel release unknown ({OSRELEASE} unreadable)")),
    };
    match kernel_version(release) {
        Some(version) if version >= (5, 12) && open => {
            Ok(format!("open nvidia module on kernel {release}"))
        }
        Some(version) if version >= (5, 12) => {
            Err("the nvidia module flavour is unknown".to_owned())
        }
        Some(_) => Err(format!(
            "kernel {release} predates rdma dma-buf support (5.12)"
        )),
        None => Err(format!("kernel release `{release}` not understood")),
    }
}

declare_check! {
    /// GPUDirect RDMA has a way into GPU memory: DMA-BUF or `nvidia_peermem`.
    ///
    /// ## What it checks
    /// DMA-BUF is possible with the open kernel module (GPU002) on Linux 5.12
    /// or later. Otherwise, or when the profile asks for it, `nvidia_peermem`
    /// must be loaded **and** registered: `/proc/modules` lists it among
    /// `ib_core`'s users. The legacy `nv_peer_mem` module (Mellanox's, for
    /// drivers before 470) is reported. Requires the NVIDIA driver (GPU001)
    /// and the RDMA modules (RDMA001): `nvidia` + `ib_core` →
    /// `nvidia_peermem`.
    ///
    /// ## Why it matters
    /// Without one of the two paths NCCL, UCX and GDS cannot register GPU
    /// memory with the NIC and silently stage every transfer through host
    /// memory (NCCL logs `GDRDMA` missing, bandwidth halves, CPU load rises).
    /// A `nvidia_peermem` that loaded before `ib_core` or failed to register
    /// shows as loaded but unused.
    ///
    /// ## How to fix
    /// `modprobe nvidia_peermem` (GPU Operator: `driver.rdma.enabled: true`),
    /// after the RDMA modules; unload `nv_peer_mem`. For DMA-BUF, install the
    /// open kernel module on a 5.12+ kernel with DOCA-OFED or rdma-core 34+.
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
    if !wants_rdma(ctx) || ctx.profile.gpudirect == Some(GpuDirect::None) {
        return vec![Outcome::not_applicable(
            "gpudirect rdma not wanted (no rdma on this host, or the profile says so)",
        )];
    }
    let modules = need!(require(&ctx.facts.modules, || Outcome::unknown(
        "/proc/modules and /sys/module are absent: cannot tell whether nvidia_peermem is loaded"
    )));
    let dma_buf = dma_buf(ctx);
    let peermem = peermem_state(modules);
    let legacy = modules.present("nv_peer_mem");
    let peermem_fix = || {
        Remediation::new(
            "load nvidia_peermem after the rdma modules (gpu operator: driver.rdma.enabled: true)",
        )
        .command("modprobe -r nv_peer_mem 2>/dev/null; modprobe nvidia_peermem")
        .command("grep -w nvidia_peermem /proc/modules && grep '^ib_core ' /proc/modules")
    };
    let outcome = match (ctx.profile.gpudirect, &dma_buf, peermem) {
        (Some(GpuDirect::DmaBuf), Ok(why), _) => Outcome::pass(format!("dma-buf possible: {why}")),
        (Some(GpuDirect::DmaBuf), Err(why), _) => {
            Outcome::fail(format!("dma-buf wanted but not possible: {why}")).fix(
                Remediation::new(
                    "install the open kernel module on a 5.12+ kernel, or use nvidia_peermem",
                )
                .command("# GPU Operator: spec.driver.kernelModuleType: open"),
            )
        }
        (None, Ok(why), _) => Outcome::pass(format!("dma-buf possible: {why}")),
        (_, _, Peermem::Registered) if legacy => {
            Outcome::warn("nvidia_peermem registered, but the legacy nv_peer_mem is loaded too")
                .fix(peermem_fix())
        }
        (_, _, Peermem::Registered) => {
            Outcome::pass("nvidia_peermem loaded and registered with ib_core")
        }
        (_, _, Peermem::Unregistered) => Outcome::fail(
            "nvidia_peermem loaded but not among ib_core's users: it did not register",
        )
        .fix(peermem_fix()),
        (_, _, Peermem::Unknown) => Outcome::unknown(
            "nvidia_peermem present, but /proc/modules is absent: cannot tell whether it registered",
        ),
        (_, why, Peermem::Missing) if legacy => Outcome::fail(format!(
            "only the legacy nv_peer_mem is loaded{}: it does not work with drivers 470 and later",
            why.as_ref()
                .err()
                .map(|w| format!(" and dma-buf is not possible ({w})"))
                .unwrap_or_default()
        ))
        .fix(peermem_fix()),
        (_, why, Peermem::Missing) => Outcome::fail(format!(
            "no gpudirect rdma path: nvidia_peermem not loaded{}",
            why.as_ref()
                .err()
                .map(|w| format!(" and dma-buf not possible ({w})"))
                .unwrap_or_default()
        ))
        .fix(peermem_fix()),
    };
    let ib_core_users = match modules.get("ib_core") {
        None => "<no ib_core>".to_owned(),
        Some(ib) if ib.used_by.is_empty() => "<none>".to_owned(),
        Some(ib) => ib.used_by.join(","),
    };
    let release = ctx
        .facts
        .nvidia
        .kernel_release
        .as_ref()
        .ok()
        .cloned()
        .flatten()
        .unwrap_or_else(|| "<missing>".to_owned());
    vec![
        outcome
            .evidence("/proc/modules", format!("ib_core used by: {ib_core_users}"))
            .evidence(
                "/sys/module/nvidia_peermem",
                if modules.present("nvidia_peermem") {
                    "<present>"
                } else {
                    "<missing>"
                },
            )
            .evidence(OSRELEASE, release),
    ]
}

/// `nvidia_peermem` as `/proc/modules` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peermem {
    Missing,
    Registered,
    Unregistered,
    /// In `/sys/module` but `/proc/modules` is absent: users unknown.
    Unknown,
}

fn peermem_state(modules: &Modules) -> Peermem {
    let Some(peermem) = modules.get("nvidia_peermem") else {
        return Peermem::Missing;
    };
    if !peermem.loadable {
        return Peermem::Unknown;
    }
    let registered = modules
        .get("ib_core")
        .is_some_and(|ib| ib.used_by.iter().any(|u| u == "nvidia_peermem"));
    if registered {
        Peermem::Registered
    } else {
        Peermem::Unregistered
    }
}

declare_check! {
    /// The GPUDirect Storage and GDRCopy modules are loaded when wanted.
    ///
    /// ## What it checks
    /// `nvidia_fs` when the profile wants GPUDirect Storage (`gds`) and
    /// `gdrdrv` when it wants GDRCopy (`gdrcopy`), in `/proc/modules` and
    /// `/sys/module`; their versions come from `/sys/module/<m>/version`.
    /// Loaded but not asked for is information; neither asked for nor loaded
    /// does not apply.
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
    /// Each GPU has an RDMA NIC near it on the PCIe tree.
    ///
    /// ## What it checks
    /// For every NVIDIA GPU, the nearest physical function backing an RDMA
    /// device, from the bridges in their real sysfs paths and their
    /// `numa_node`: `PIX` (same switch) and `PXB` (switches only) pass,
    /// `PHB` (through the host bridge) and `NODE` (another host bridge of the
    /// same NUMA node) are information, `SYS` (across sockets) warns. The
    /// classes are those of `nvidia-smi topo -m`; `zerohop topo` prints the
    /// pairing and the matching `NCCL_IB_HCA`.
    ///
    /// ## Why it matters
    /// GPUDirect RDMA traffic between a GPU and a NIC on different sockets
    /// crosses the inter-socket link, which is slower than PCIe and often
    /// not allowed for peer-to-peer at all: NCCL then disables GPUDirect for
    /// that pair (`NCCL_NET_GDR_LEVEL`) and stages through host memory.
    ///
    /// ## How to fix
    /// Pin each GPU's traffic to its nearest NIC (`NCCL_IB_HCA` from
    /// `zerohop topo`, or the Topology Manager with `single-numa-node`); move
    /// cards so every GPU has a NIC under its switch or socket.
    pub static GPU_NIC_DISTANCE = {
        id: "GPU005",
        name: "gpu-nic-cross-socket",
        group: Gpu,
        severity: Warning,
        requires: [],
        run: gpu_nic_distance,
    };
}

fn gpu_nic_distance(ctx: &Context<'_>) -> Vec<Outcome> {
    let topology = Topology::of(ctx.facts);
    if topology.pairings.is_empty() {
        return vec![match ctx.facts.pci.unidentified() {
            Some(gap) => Outcome::gap(gap),
            None => Outcome::not_applicable("no nvidia gpu on the pci bus"),
        }];
    }
    if topology.nics.is_empty() {
        return vec![match &ctx.facts.rdma.devices {
            Err(gap) => Outcome::gap(gap),
            Ok(_) => Outcome::not_applicable("no rdma device backed by a pci physical function"),
        }];
    }
    topology
        .pairings
        .iter()
        .map(|pairing| {
            let nic = pairing.nic.as_deref().unwrap_or("<none>");
            let node = |n: Option<i32>| n.map_or_else(|| "-1".to_owned(), |n| n.to_string());
            let nic_node = topology.nics.iter().find(|n| n.name == nic).and_then(|n| n.numa_node);
            let outcome = match pairing.distance {
                Some(d @ (Distance::Pix | Distance::Pxb)) => Outcome::pass(format!("nearest rdma nic {nic} at {d}")),
                Some(d @ (Distance::Phb | Distance::Node)) => {
                    Outcome::info(format!("nearest rdma nic {nic} at {d}: traffic crosses the cpu's pcie host bridge"))
                }
                Some(Distance::Sys) => Outcome::warn(format!("nearest rdma nic {nic} is on another socket (SYS)")).fix(
                    Remediation::new("give this gpu a nic on its own socket, or keep its traffic off gpudirect rdma")
                        .command("zerohop topo   # the pairing and NCCL_IB_HCA"),
                ),
                None => Outcome::unknown(format!("distance to {nic} unknown: different host bridges and numa_node -1")),
            };
            outcome
                .subject(&pairing.gpu)
                .evidence(format!("/sys/bus/pci/devices/{}/numa_node", pairing.gpu), node(pairing.gpu_numa_node))
                .evidence(format!("/sys/class/infiniband/{nic}/device/numa_node"), node(nic_node))
        })
        .collect()
}
