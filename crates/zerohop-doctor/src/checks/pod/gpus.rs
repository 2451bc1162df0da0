//! The pod's GPUs, the RDMA device nearest each among the pod's, the
//! `NCCL_IB_HCA` that follows, and whether GPUDirect RDMA can work here.

use zerohop_core::Remediation;
use zerohop_host::facts::nvidia::DriverGpu;
use zerohop_host::facts::{PciDevice, RdmaDevice};
use zerohop_known::nccl::{self, SelectList};

use crate::checks::gpu::{DmaBuf, dma_buf};
use crate::checks::pod::{ENVIRON, GPUS_SOURCE, variable};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::topology::{Distance, distance};

declare_check! {
    /// Each GPU of the pod has a near RDMA device of the pod, and GPUDirect RDMA can work.
    ///
    /// ## What it checks
    /// The GPUs of `/proc/driver/nvidia/gpus` in the pod (the NVIDIA
    /// container runtime leaves only the container's there), each with its
    /// `/dev/nvidia<minor>` node; none while `NVIDIA_VISIBLE_DEVICES` asks
    /// for some fails. For each GPU the nearest of the pod's RDMA devices
    /// by the PCIe path between them (`PIX` … `SYS`, from the functions'
    /// sysfs paths, VFs included); one farther than NCCL's default
    /// `NCCL_NET_GDR_LEVEL` (`PXB`) warns unless the variable admits it.
    /// `NCCL_IB_HCA` should select every GPU's nearest device: unset while
    /// the pod has other devices is information with the line to set, set
    /// without one of them warns. GPUDirect RDMA needs `nvidia_peermem`
    /// loaded on the node (the pod sees the node's `/proc/modules`) or
    /// DMA-BUF (the open kernel module on Linux 5.12 or later): neither
    /// fails.
    ///
    /// ## Why it matters
    /// NCCL pairs each GPU with the NICs it can reach best; a pod given a
    /// VF on the other socket's NIC, or an `NCCL_IB_HCA` naming the wrong
    /// one, stages every transfer through host memory. Without a GPUDirect
    /// path NCCL registers only host memory and bandwidth halves.
    ///
    /// ## How to fix
    /// Let the Topology Manager place GPU and VF on one NUMA node
    /// (`single-numa-node` policy) or request the VF of the GPU's rail;
    /// set `NCCL_IB_HCA` to the line the finding gives; load
    /// `nvidia_peermem` on the node (GPU Operator `driver.rdma.enabled`) or
    /// use the open kernel module.
    ///
    /// ## Evidence
    /// `/proc/driver/nvidia/gpus/<address>/information` (`Device Minor`),
    /// the listing of `/dev`, `NVIDIA_VISIBLE_DEVICES`, `NCCL_IB_HCA` and
    /// `NCCL_NET_GDR_LEVEL` of `/proc/self/environ`, the functions under
    /// `/sys/bus/pci/devices` with their `numa_node`, `/proc/modules`, and
    /// GPU002's module flavour with `/proc/sys/kernel/osrelease` for
    /// DMA-BUF.
    ///
    /// ## Source
    /// NVIDIA/libnvidia-container v1.17.0 `src/nvc_mount.c`
    /// (`mount_procfs_gpu`: a container's `/proc/driver/nvidia/gpus` holds
    /// its GPUs only); NVIDIA/nccl `src/graph/paths.cc` and
    /// `src/transport/net_ib/init.cc` at
    /// 5067397c2676d5aed50042fc39e5c8ee96eb0027 (`ncclTopoCheckGdr` and
    /// its `PATH_PXB` default; `NCCL_IB_HCA` through `parseStringList` and
    /// `matchIfList`); NVIDIA/open-gpu-kernel-modules
    /// `kernel-open/nvidia-peermem/nvidia-peermem.c` at 550.90.07.
    ///
    /// Real capture: crates/zerohop-doctor/tests/pod_view.rs::puget_gpus_pair_across_host_bridges_in_the_pod
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/POD004/warn-hca-leaves-out-nearest/`:
    ///
    /// ```text
    /// pod
    ///   pass           POD004  pod-gpu-rdma-pairing  0000:1a:00.0: nearest rdma device mlx5_3 (PIX)
    ///   warn           POD004  pod-gpu-rdma-pairing  NCCL_IB_HCA: =mlx5_9 leaves out mlx5_3, the nearest rdma device of gpu 0000:1a:00.0
    ///                  /proc/self/environ = NCCL_IB_HCA==mlx5_9
    ///   pass           POD004  pod-gpu-rdma-pairing  gpudirect: nvidia_peermem loaded on the node
    ///
    /// what to fix first
    ///   1. POD004 pod-gpu-rdma-pairing (NCCL_IB_HCA): =mlx5_9 leaves out mlx5_3, the nearest rdma device of gpu 0000:1a:00.0
    ///      fix: select the gpus' nearest rdma devices, exactly: set it in the pod spec's env
    ///        export NCCL_IB_HCA==mlx5_3:1
    /// ```
    pub static GPU_PAIRING = {
        id: "POD004",
        name: "pod-gpu-rdma-pairing",
        group: Pod,
        severity: Error,
        requires: [],
        run: gpu_pairing,
    };
}

/// One GPU's nearest RDMA device.
struct Pair<'a> {
    gpu: &'a str,
    device: &'a RdmaDevice,
}

fn gpu_pairing(ctx: &Context<'_>) -> Vec<Outcome> {
    let gpus: &[DriverGpu] = match &ctx.facts.nvidia.gpus {
        Err(gap) => return vec![Outcome::gap(gap)],
        Ok(None) => &[],
        Ok(Some(gpus)) => gpus,
    };
    let visible = variable(ctx, "NVIDIA_VISIBLE_DEVICES");
    if gpus.is_empty() {
        return vec![match visible {
            Some(value) if !matches!(value, "" | "void" | "none") => Outcome::fail(format!(
                "NVIDIA_VISIBLE_DEVICES={value} but the pod sees no gpu: the nvidia container runtime did not inject them"
            ))
            .evidence(GPUS_SOURCE, "<missing>")
            .evidence(ENVIRON, format!("NVIDIA_VISIBLE_DEVICES={value}"))
            .fix(
                Remediation::new("run the pod with the nvidia runtime and request its gpus")
                    .command("# pod spec: runtimeClassName: nvidia; containers[].resources.limits: {nvidia.com/gpu: 8}"),
            ),
            _ => Outcome::not_applicable("no gpu in this pod").evidence(GPUS_SOURCE, "<missing>"),
        }];
    }
    let devices = pod_nics(ctx);
    let mut outcomes = Vec::new();
    let mut pairs: Vec<Pair<'_>> = Vec::new();
    for gpu in gpus {
        let subject = gpu.address.as_str();
        if let Some(outcome) = missing_node(ctx, gpu) {
            outcomes.push(outcome.subject(subject));
            continue;
        }
        if devices.is_empty() {
            outcomes.push(
                Outcome::info("no rdma device in the pod to pair with (see POD001)")
                    .subject(subject),
            );
            continue;
        }
        let Some(function) = ctx.facts.pci.get(subject) else {
            outcomes.push(
                Outcome::unknown("the gpu's pci function is not in /sys/bus/pci/devices: its distance to the nics is unknown")
                    .subject(subject)
                    .evidence(format!("/sys/bus/pci/devices/{subject}"), "<missing>"),
            );
            continue;
        };
        let Some((device, near)) = nearest(ctx, function, &devices) else {
            continue;
        };
        pairs.push(Pair {
            gpu: subject,
            device,
        });
        outcomes.push(pairing(ctx, subject, device, near));
    }
    if !pairs.is_empty() {
        outcomes.push(ib_hca(ctx, &pairs, devices.len()));
    }
    if !devices.is_empty() {
        outcomes.push(gpudirect(ctx));
    }
    outcomes
}

/// The pod's RDMA devices with their PCI functions.
pub(crate) fn pod_nics<'a>(ctx: &Context<'a>) -> Vec<(&'a RdmaDevice, &'a PciDevice)> {
    ctx.facts
        .rdma
        .list()
        .iter()
        .filter_map(|d| Some((d, ctx.facts.pci.get(d.pci.as_deref()?)?)))
        .collect()
}

/// The device of `nics` nearest to `gpu` and its distance: the nearest
/// class, a known distance before an unknown one, then by name.
pub(crate) fn nearest<'a>(
    ctx: &Context<'_>,
    gpu: &PciDevice,
    nics: &[(&'a RdmaDevice, &'a PciDevice)],
) -> Option<(&'a RdmaDevice, Option<Distance>)> {
    let multi_node = ctx.facts.numa_nodes().len() > 1;
    nics.iter()
        .map(|(device, nic)| (*device, distance(gpu, nic, multi_node)))
        .min_by_key(|(device, near)| (near.is_none(), *near, device.name.clone()))
}

/// A failure when the GPU's `/dev/nvidia<minor>` is not in the pod.
fn missing_node(ctx: &Context<'_>, gpu: &DriverGpu) -> Option<Outcome> {
    let minor: u32 = gpu.information.get("Device Minor")?.trim().parse().ok()?;
    let Ok(Some(nodes)) = &ctx.facts.pod.gpu_nodes else {
        return None;
    };
    (!nodes.contains(&minor)).then(|| {
        Outcome::fail(format!(
            "listed by the driver but /dev/nvidia{minor} is not in the pod: cuda cannot open it"
        ))
        .evidence(
            format!("{GPUS_SOURCE}/{}/information", gpu.address),
            format!("Device Minor: {minor}"),
        )
        .fix(Remediation::new(
            "let the nvidia container runtime inject the gpu (request nvidia.com/gpu, runtimeClassName: nvidia)",
        ))
    })
}

/// The outcome of one GPU's pairing.
fn pairing(ctx: &Context<'_>, gpu: &str, device: &RdmaDevice, near: Option<Distance>) -> Outcome {
    let evidence = |o: Outcome| {
        o.subject(gpu).evidence(
            format!(
                "/sys/bus/pci/devices/{}",
                device.pci.as_deref().unwrap_or("")
            ),
            device.name.clone(),
        )
    };
    let Some(near) = near else {
        return evidence(Outcome::unknown(format!(
            "nearest rdma device {} at an unknown distance (numa node unknown)",
            device.name
        )));
    };
    if near.gdr_by_default() {
        return evidence(Outcome::pass(format!(
            "nearest rdma device {} ({near})",
            device.name
        )));
    }
    let level = variable(ctx, nccl::NET_GDR_LEVEL);
    if let Some(value) = level
        && admits(value, near) == Some(true)
    {
        return evidence(Outcome::pass(format!(
            "nearest rdma device {} ({near}), admitted by {}={value}",
            device.name,
            nccl::NET_GDR_LEVEL
        )));
    }
    evidence(
        Outcome::warn(format!(
            "nearest rdma device {} is {near} away: nccl stages its traffic through host memory at NCCL_NET_GDR_LEVEL {}",
            device.name,
            level.unwrap_or(nccl::NET_GDR_LEVEL_DEFAULT)
        ))
        .fix(
            Remediation::new("place the gpu and its vf on one numa node (topology manager single-numa-node), or admit the path")
                .command(format!("export {}={}", nccl::NET_GDR_LEVEL, near.nccl_level())),
        ),
    )
}

/// Whether `NCCL_NET_GDR_LEVEL=value` lets NCCL use GPUDirect RDMA at
/// `near`; `None` when NCCL ignores the value.
pub(crate) fn admits(value: &str, near: Distance) -> Option<bool> {
    let level = nccl::level_rank(value)?;
    Some(nccl::level_rank(near.nccl_level()).is_some_and(|near| near <= level))
}

/// The `NCCL_IB_HCA` that selects each GPU's nearest device, and whether
/// the pod's variable does.
fn ib_hca(ctx: &Context<'_>, pairs: &[Pair<'_>], devices: usize) -> Outcome {
    let mut names: Vec<String> = Vec::new();
    for pair in pairs {
        let port = pair
            .device
            .port_list()
            .iter()
            .find(|p| p.is_active())
            .or_else(|| pair.device.port_list().first())
            .map_or(1, |p| p.number);
        let entry = format!("{}:{port}", pair.device.name);
        if !names.contains(&entry) {
            names.push(entry);
        }
    }
    let line =
        zerohop_known::shell::quote(&format!("{}=={}", nccl::IB_HCA, names.join(","))).into_owned();
    let fix = || {
        Remediation::new(
            "select the gpus' nearest rdma devices, exactly: set it in the pod spec's env",
        )
        .command(format!("export {line}"))
    };
    let subject = nccl::IB_HCA;
    match variable(ctx, nccl::IB_HCA) {
        None if names.len() < devices => Outcome::info(format!(
            "unset: nccl uses all {devices} rdma devices of the pod, the gpus' nearest are {}",
            names.join(",")
        ))
        .subject(subject)
        .fix(fix()),
        None => Outcome::pass(format!(
            "unset: every rdma device of the pod is a gpu's nearest ({})",
            names.join(",")
        ))
        .subject(subject),
        Some(value) => {
            let list = SelectList::parse(value);
            let left_out: Vec<&Pair<'_>> = pairs
                .iter()
                .filter(|p| !list.selects(&p.device.name, None))
                .collect();
            match left_out.first() {
                None => Outcome::pass(format!("{value} selects every gpu's nearest rdma device"))
                    .subject(subject)
                    .evidence(ENVIRON, format!("{}={value}", nccl::IB_HCA)),
                Some(pair) => Outcome::warn(format!(
                    "{value} leaves out {}, the nearest rdma device of gpu {}",
                    pair.device.name, pair.gpu
                ))
                .subject(subject)
                .evidence(ENVIRON, format!("{}={value}", nccl::IB_HCA))
                .fix(fix()),
            }
        }
    }
}

/// Whether GPUDirect RDMA has a way into GPU memory, as the pod sees the node.
fn gpudirect(ctx: &Context<'_>) -> Outcome {
    let subject = "gpudirect";
    if let Ok(Some(modules)) = &ctx.facts.modules {
        for name in ["nvidia_peermem", "nv_peer_mem"] {
            if modules.present(name) {
                return Outcome::pass(format!("{name} loaded on the node"))
                    .subject(subject)
                    .evidence("/proc/modules", name);
            }
        }
    }
    match dma_buf(ctx) {
        DmaBuf::Possible(why) => Outcome::pass(format!("dma-buf possible: {why}")).subject(subject),
        DmaBuf::Impossible(why) => Outcome::fail(format!(
            "no nvidia_peermem and no dma-buf ({why}): nccl cannot use gpudirect rdma from this pod"
        ))
        .subject(subject)
        .evidence("/proc/modules", "<no nvidia_peermem>")
        .fix(
            Remediation::new(
                "load nvidia_peermem on the node, or use the open kernel module on a 5.12+ kernel",
            )
            .command("# GPU Operator: driver.rdma.enabled: true, or driver.kernelModuleType: open"),
        ),
        DmaBuf::Unknown(why) => Outcome::unknown(format!(
            "no nvidia_peermem, and whether dma-buf works is unknown: {why}"
        ))
        .subject(subject)
        .evidence("/proc/modules", "<no nvidia_peermem>")
        .evidence(
            zerohop_host::facts::nvidia::OSRELEASE,
            match &ctx.facts.nvidia.kernel_release {
                Ok(Some(release)) => release.clone(),
                _ => "<unreadable>".to_owned(),
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gdr_levels_admit_as_nccl_reads_them() {
        assert_eq!(admits("PHB", Distance::Node), Some(true));
        assert_eq!(admits("phb", Distance::Phb), None, "nccl ignores it");
        assert_eq!(admits("PXB", Distance::Phb), Some(false));
        assert_eq!(
            admits("3", Distance::Phb),
            Some(true),
            "the legacy 3 is PHB"
        );
        assert_eq!(admits("2", Distance::Sys), Some(false));
        assert_eq!(admits("SYS", Distance::Sys), Some(true));
    }
}
