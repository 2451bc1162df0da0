//! PCIe links, NUMA placement, drivers and IOMMU groups of GPUs and NICs.

use zerohop_core::{Remediation, Status};
use zerohop_host::facts::pci::{class, vendor};
use zerohop_host::facts::{PciDevice, PciLink};

use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::join;

const NO_PCI: &str = "/sys/bus/pci/devices is absent: no pci devices to check";

/// Why a function carries the GPU/RDMA/storage data path, `None` when it
/// does not: NVIDIA GPUs, functions backing an RDMA device (whatever their
/// class: a ConnectX-3 is `0x0280`), InfiniBand controllers, Mellanox
/// network controllers (RDMA-capable even before their RDMA driver loads)
/// and NVMe controllers.
fn data_path_role(ctx: &Context<'_>, device: &PciDevice) -> Option<&'static str> {
    if device.is_nvidia_gpu() {
        Some("gpu")
    } else if ctx.facts.rdma.on_pci(&device.address).next().is_some() {
        Some("rdma nic")
    } else if matches!(
        device.class,
        Some(class::NETWORK_INFINIBAND | class::SERIAL_INFINIBAND)
    ) || (device.vendor == Some(vendor::MELLANOX) && device.is_network())
    {
        Some("rdma-capable nic")
    } else if device.is_nvme() {
        Some("nvme")
    } else {
        None
    }
}

/// The physical functions PCI001 and PCI002 look at, each with whether it
/// is on the data path: the data path itself, and every other network
/// controller (management NICs, Wi-Fi), which is reported but never worse
/// than information.
fn judged<'a>(ctx: &Context<'a>) -> impl Iterator<Item = (&'a PciDevice, bool)> {
    let ctx = *ctx;
    ctx.facts.pci.list().iter().filter_map(move |device| {
        if device.is_vf() {
            return None;
        }
        let on_path = data_path_role(&ctx, device).is_some();
        (on_path || device.is_network()).then_some((device, on_path))
    })
}

/// `outcome` for a function off the data path: a fail or warn becomes
/// information, said so in the message, and so does a link that cannot be
/// read. A virtual NIC (virtio-net, class `0x0200`, in a VM) or one on a
/// conventional PCI bus has no PCIe capability, so no link files: the
/// kernel creates `current_link_speed` and its siblings only for devices
/// with one (`drivers/pci/pci-sysfs.c`, `pcie_dev_attrs_are_visible`).
/// Leaving the whole check `unknown` for such a device would hide that
/// every device on the path was judged.
fn off_path(outcome: Outcome) -> Outcome {
    if !outcome.status.is_problem() && outcome.status != Status::Unknown {
        return outcome;
    }
    Outcome {
        status: Status::Info,
        message: format!(
            "{}: not on the gpu, rdma or nvme data path",
            outcome.message
        ),
        ..outcome
    }
}

declare_check! {
    /// PCIe links of the data path run at the width and speed their slot allows.
    ///
    /// ## What it checks
    /// Physical functions on the data path: NVIDIA GPUs (class
    /// `0x0300`/`0x0302`), every function that backs an RDMA device in
    /// `/sys/class/infiniband` whatever its class (a ConnectX-3 is
    /// `0x0280`), InfiniBand controllers (`0x0207`, `0x0c06`), Mellanox
    /// network controllers and NVMe controllers (`0x0108`). Other network
    /// controllers (a management LOM, Wi-Fi) are checked the same way but
    /// never reported worse than `info`.
    ///
    /// The evidence is the function's `current_link_width`/`current_link_speed`
    /// against what the link can reach: the lower of the function's own
    /// `max_link_width`/`max_link_speed` and those of its upstream port (the
    /// bridge above it in its sysfs path, a root port or a switch's
    /// downstream port), since a link trains to what both ends support. A
    /// narrower link than that fails; width 0 (link down) fails; a slower
    /// link fails, except for GPUs, which lower their link speed when idle
    /// (`info`). A data-path link that reaches its slot's maximum but not the
    /// device's own (a Gen5 NIC in a Gen4 slot) is `info`. A missing or
    /// unparsable attribute is `unknown`, naming that file, on the data
    /// path, and `info` off it (a virtio NIC has no PCIe link at all).
    ///
    /// ## Why it matters
    /// A ConnectX-7 at x8 instead of x16, or Gen3 instead of Gen5, halves or
    /// quarters the bandwidth the whole rail can carry, and nothing else
    /// reports it: transfers just run slower.
    ///
    /// ## How to fix
    /// Reseat the card or riser, check the slot's wiring in the server
    /// manual (some x16 slots are x8 electrically), set the slot's PCIe
    /// generation to Auto/Gen5 in the BIOS, and update the NIC firmware.
    /// `lspci -vvv -s <address>` shows `LnkCap` versus `LnkSta`.
    ///
    /// ## Evidence
    /// `current_link_speed`/`current_link_width` and `max_link_speed`/
    /// `max_link_width` of each data-path function and of its upstream port
    /// (the bridge above it in its sysfs path); a missing or unparsable file
    /// is `unknown`, naming it.
    ///
    /// ## Source
    /// `drivers/pci/pci-sysfs.c` (`current_link_speed_show()`,
    /// `max_link_width_show()`, …), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::hgx_h100_management_lom_at_the_width_of_its_root_port_passes
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::a_missing_max_link_file_is_named_as_missing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/PCI001/fail-nic-gen3-of-gen5/`:
    ///
    /// ```text
    /// pcie
    ///   fail           PCI001  pcie-link-downtrained  0000:01:00.0: nic 15b3:1021 link at 8.0 GT/s PCIe of 32.0 GT/s PCIe
    ///                  /sys/bus/pci/devices/0000:01:00.0/current_link_speed = 8.0 GT/s PCIe
    ///                  /sys/bus/pci/devices/0000:01:00.0/max_link_speed = 32.0 GT/s PCIe
    ///                  /sys/bus/pci/devices/0000:01:00.0/current_link_width = 16
    ///                  /sys/bus/pci/devices/0000:01:00.0/max_link_width = 16
    ///
    /// what to fix first
    ///   1. PCI001 pcie-link-downtrained (0000:01:00.0): nic 15b3:1021 link at 8.0 GT/s PCIe of 32.0 GT/s PCIe
    ///      fix: reseat the card, check the slot wiring and the bios pcie generation, update firmware
    ///        lspci -vvv -s 0000:01:00.0 | grep -e LnkCap -e LnkSta
    /// ```
    pub static LINK_DOWNTRAINED = {
        id: "PCI001",
        name: "pcie-link-downtrained",
        group: Pcie,
        severity: Error,
        requires: [],
        run: link_downtrained,
    };
}

fn link_downtrained(ctx: &Context<'_>) -> Vec<Outcome> {
    need!(require(&ctx.facts.pci.devices, || Outcome::not_applicable(
        NO_PCI
    )));
    judged(ctx)
        .map(|(device, on_path)| {
            let outcome = judge_link(ctx, device).subject(&device.address);
            if on_path { outcome } else { off_path(outcome) }
        })
        .collect()
}

/// The evidence of a link: each attribute file with its value or `<missing>`.
fn link_evidence(outcome: Outcome, dir: &str, link: &PciLink) -> Outcome {
    let values = [
        link.current_speed.clone(),
        link.max_speed.clone(),
        link.current_width.map(|w| w.to_string()),
        link.max_width.map(|w| w.to_string()),
    ];
    PciLink::FILES
        .into_iter()
        .zip(values)
        .fold(outcome, |o, (file, value)| {
            o.evidence(
                format!("{dir}/{file}"),
                value.unwrap_or_else(|| "<missing>".to_owned()),
            )
        })
}

fn judge_link(ctx: &Context<'_>, device: &PciDevice) -> Outcome {
    let dir = device.sysfs();
    let label = device.label();
    let link = match &device.link {
        Err(gap) => return Outcome::gap(gap),
        Ok(None) => {
            return Outcome::unknown(format!("{label} exposes no link speed or width files"))
                .evidence(format!("{dir}/current_link_speed"), "<missing>")
                .evidence(format!("{dir}/max_link_speed"), "<missing>");
        }
        Ok(Some(link)) => link,
    };
    let evidence = |o: Outcome| link_evidence(o, &dir, link);
    let (Some(current_width), Some(max_width), Some(current_speed), Some(max_speed)) = (
        link.current_width,
        link.max_width,
        link.current_speed.as_deref(),
        link.max_speed.as_deref(),
    ) else {
        return evidence(Outcome::unknown(format!(
            "{label} has no {}: its link cannot be judged",
            link.missing().join(", ")
        )));
    };
    let fix = || {
        Remediation::new(
            "reseat the card, check the slot wiring and the bios pcie generation, update firmware",
        )
        .command(format!(
            "{} | grep -e LnkCap -e LnkSta",
            join(["lspci", "-vvv", "-s", &device.address])
        ))
    };
    if current_width == 0 {
        return evidence(Outcome::fail(format!("{label} link is down (width 0)")).fix(fix()));
    }
    let Some(current) = link.current_gts() else {
        return evidence(Outcome::unknown(format!(
            "{label} current_link_speed `{current_speed}` is not a speed"
        )));
    };
    let Some(own_max) = link.max_gts() else {
        return evidence(Outcome::unknown(format!(
            "{label} max_link_speed `{max_speed}` is not a speed"
        )));
    };
    // The upstream port's capability bounds the link as much as the
    // device's own: a x2 LOM behind a x1 root port trains at x1.
    let upstream = ctx
        .facts
        .pci
        .upstream_port(device)
        .and_then(|port| match &port.link {
            Ok(Some(link)) => Some((port, link)),
            _ => None,
        });
    let port_width = upstream.and_then(|(_, l)| l.max_width).filter(|w| *w > 0);
    let port_gts = upstream.and_then(|(_, l)| l.max_gts());
    let cap_width = port_width.map_or(max_width, |w| w.min(max_width));
    let (cap_gts, cap_speed) = match (port_gts, upstream.and_then(|(_, l)| l.max_speed.as_deref()))
    {
        (Some(gts), Some(text)) if gts < own_max => (gts, text),
        _ => (own_max, max_speed),
    };
    let with_port = |o: Outcome| match upstream {
        Some((port, port_link)) => {
            let value = |v: Option<String>| v.unwrap_or_else(|| "<missing>".to_owned());
            evidence(o)
                .evidence(
                    format!("{}/max_link_width", port.sysfs()),
                    value(port_link.max_width.map(|w| w.to_string())),
                )
                .evidence(
                    format!("{}/max_link_speed", port.sysfs()),
                    value(port_link.max_speed.clone()),
                )
        }
        None => evidence(o),
    };
    let port_name = upstream.map_or_else(String::new, |(port, _)| port.address.clone());
    if current_width < cap_width {
        let bound = if cap_width < max_width {
            format!(" (its upstream port {port_name} allows x{cap_width})")
        } else {
            String::new()
        };
        return with_port(
            Outcome::fail(format!(
                "{label} link trained at x{current_width} of x{cap_width}{bound}"
            ))
            .fix(fix()),
        );
    }
    if current < cap_gts {
        return with_port(if device.is_nvidia_gpu() {
            Outcome::info(format!(
                "{label} link at {current_speed} of {cap_speed}: normal for an idle gpu, check again under load"
            ))
        } else {
            Outcome::fail(format!("{label} link at {current_speed} of {cap_speed}")).fix(fix())
        });
    }
    if let Some((port, port_link)) = upstream.filter(|_| cap_width < max_width || cap_gts < own_max)
    {
        let shown = |v: Option<String>| v.unwrap_or_else(|| "?".to_owned());
        let message = format!(
            "{label} link x{current_width} at {current_speed}, the most its slot allows: upstream port {} takes x{} at {}, the device x{max_width} at {max_speed}",
            port.address,
            shown(port_link.max_width.map(|w| w.to_string())),
            shown(port_link.max_speed.clone()),
        );
        return with_port(if data_path_role(ctx, device).is_some() {
            Outcome::info(message)
        } else {
            Outcome::pass(message)
        });
    }
    with_port(Outcome::pass(format!(
        "{label} link x{current_width} at {current_speed}"
    )))
}

declare_check! {
    /// Data-path devices know their NUMA node on multi-socket hosts.
    ///
    /// ## What it checks
    /// The same functions as PCI001: GPUs, RDMA NICs (any function backing
    /// an RDMA device, InfiniBand controllers, Mellanox network
    /// controllers) and NVMe controllers warn; other network controllers
    /// are at most `info`. On a host with two or more NUMA nodes that have
    /// CPUs (`/sys/devices/system/node/node*/cpulist`), a function whose
    /// `numa_node` reads `-1` has no locality the firmware described.
    ///
    /// ## Why it matters
    /// Without a node, the kernel, the device plugins, NCCL and the kubelet's
    /// Topology Manager cannot keep a GPU, its NIC and their buffers on one
    /// socket; traffic crosses the inter-socket link and `single-numa-node`
    /// admission can reject pods.
    ///
    /// ## How to fix
    /// Enable ACPI SRAT/NUMA reporting in the BIOS (on AMD, set NPS and
    /// "ACPI SRAT L3 cache as NUMA domain" as the platform guide says) and
    /// update the BIOS; in VMs, give the guest a virtual NUMA topology with
    /// PCI locality.
    ///
    /// ## Evidence
    /// `numa_node` of each data-path function and
    /// `/sys/devices/system/node/node*/cpulist`.
    ///
    /// ## Source
    /// `drivers/pci/pci-sysfs.c` (`numa_node_show()`: `-1` when the firmware
    /// gave no proximity) and `drivers/base/node.c`, Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::management_nics_without_locality_are_information
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/PCI002/warn-numa-minus-one/`:
    ///
    /// ```text
    /// pcie
    ///   warn           PCI002  numa-node-unknown  0000:01:00.0: nic 15b3:1021 numa node unknown on a 2-node host
    ///                  /sys/bus/pci/devices/0000:01:00.0/numa_node = -1
    ///
    /// what to fix first
    ///   1. PCI002 numa-node-unknown (0000:01:00.0): nic 15b3:1021 numa node unknown on a 2-node host
    ///      fix: enable acpi srat / numa reporting in the bios and update it
    /// ```
    pub static NUMA_NODE_UNKNOWN = {
        id: "PCI002",
        name: "numa-node-unknown",
        group: Pcie,
        severity: Warning,
        requires: [],
        run: numa_node_unknown,
    };
}

fn numa_node_unknown(ctx: &Context<'_>) -> Vec<Outcome> {
    need!(require(&ctx.facts.pci.devices, || Outcome::not_applicable(
        NO_PCI
    )));
    let cpu_nodes = ctx
        .facts
        .numa_nodes()
        .iter()
        .filter(|n| matches!(&n.cpus, Ok(Some(cpus)) if !cpus.is_empty()))
        .count();
    if cpu_nodes < 2 {
        return vec![Outcome::not_applicable(format!(
            "{cpu_nodes} numa node(s) with cpus: locality does not matter"
        ))];
    }
    judged(ctx)
        .map(|(device, on_path)| {
            let path = format!("{}/numa_node", device.sysfs());
            let outcome = match &device.numa_node {
                Err(gap) => Outcome::gap(gap),
                Ok(None) => Outcome::unknown(format!("{} has no numa_node file", device.label()))
                    .evidence(&path, "<missing>"),
                Ok(Some(-1)) => Outcome::warn(format!(
                    "{} numa node unknown on a {cpu_nodes}-node host",
                    device.label()
                ))
                .evidence(&path, "-1")
                .fix(Remediation::new(
                    "enable acpi srat / numa reporting in the bios and update it",
                )),
                Ok(Some(node)) => Outcome::pass(format!("{} on numa node {node}", device.label()))
                    .evidence(&path, node.to_string()),
            }
            .subject(&device.address);
            if on_path { outcome } else { off_path(outcome) }
        })
        .collect()
}

declare_check! {
    /// No NVIDIA GPU is bound to the `nouveau` driver.
    ///
    /// ## What it checks
    /// The `driver` link (or `DRIVER=` in `uevent`) of every NVIDIA GPU
    /// (vendor `0x10de`, class `0x0300`/`0x0302`) under
    /// `/sys/bus/pci/devices`: `nouveau` fails, any other driver or none
    /// passes here (GPU001 judges whether it is `nvidia`).
    ///
    /// ## Why it matters
    /// `nouveau` has no CUDA, no GPUDirect RDMA and no GPUDirect Storage; a
    /// GPU it holds is invisible to the NVIDIA driver and the GPU Operator's
    /// driver container fails to load.
    ///
    /// ## How to fix
    /// Blacklist it and rebuild the initramfs:
    /// `echo -e "blacklist nouveau\noptions nouveau modeset=0" > /etc/modprobe.d/blacklist-nouveau.conf`,
    /// `dracut --force` (RHEL) or `update-initramfs -u` (Ubuntu), then reboot.
    ///
    /// ## Evidence
    /// The `driver` link (or `DRIVER=` in `uevent`) of each NVIDIA GPU.
    ///
    /// ## Source
    /// `drivers/base/dd.c` (`driver_sysfs_add()`) and
    /// `drivers/base/core.c` (`DRIVER=` in `dev_uevent()`), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/truth_pci_gpu.rs::a_gpu_bound_to_nvidia_proves_the_driver_without_proc_modules
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/PCI003/fail-nouveau/`:
    ///
    /// ```text
    /// pcie
    ///   fail           PCI003  nouveau-bound  0000:02:00.0: nouveau holds the gpu: no cuda, gpudirect rdma or storage
    ///                  /sys/bus/pci/devices/0000:02:00.0/driver = nouveau
    ///
    /// what to fix first
    ///   1. PCI003 nouveau-bound (0000:02:00.0): nouveau holds the gpu: no cuda, gpudirect rdma or storage
    ///      fix: blacklist nouveau, rebuild the initramfs and reboot
    ///        printf 'blacklist nouveau\noptions nouveau modeset=0\n' > /etc/modprobe.d/blacklist-nouveau.conf
    ///        dracut --force   # or: update-initramfs -u
    /// ```
    pub static NOUVEAU_BOUND = {
        id: "PCI003",
        name: "nouveau-bound",
        group: Pcie,
        severity: Error,
        requires: [],
        run: nouveau_bound,
    };
}

fn nouveau_bound(ctx: &Context<'_>) -> Vec<Outcome> {
    need!(require(&ctx.facts.pci.devices, || Outcome::not_applicable(
        NO_PCI
    )));
    let gpus: Vec<&PciDevice> = ctx
        .facts
        .pci
        .list()
        .iter()
        .filter(|d| d.is_nvidia_gpu())
        .collect();
    if gpus.is_empty() {
        return vec![Outcome::not_applicable("no nvidia gpu")];
    }
    gpus.into_iter()
        .map(|gpu| {
            let driver = gpu.driver.as_deref().unwrap_or("<none>");
            let outcome = if driver == "nouveau" {
                Outcome::fail("nouveau holds the gpu: no cuda, gpudirect rdma or storage")
                    .fix(Remediation::new("blacklist nouveau, rebuild the initramfs and reboot")
                        .command("printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > /etc/modprobe.d/blacklist-nouveau.conf")
                        .command("dracut --force   # or: update-initramfs -u"))
            } else {
                Outcome::pass(format!("driver {driver}"))
            };
            outcome.subject(&gpu.address).evidence(format!("{}/driver", gpu.sysfs()), driver)
        })
        .collect()
}

declare_check! {
    /// Each SR-IOV virtual function has an IOMMU group of its own.
    ///
    /// ## What it checks
    /// For every VF (a function with a `physfn` link), the members of its
    /// IOMMU group (its `iommu_group` link, and the groups listed in
    /// `/sys/kernel/iommu_groups`). A VF alone in its group passes, one that
    /// shares it warns, one without an `iommu_group` link is `unknown`; no
    /// VFs, or no IOMMU groups (the IOMMU is off), does not apply.
    ///
    /// ## Why it matters
    /// Devices in one group cannot be separated: VFIO hands out whole groups,
    /// and a VF that shares its group with another device cannot be given to
    /// a pod or VM alone. It means ACS is missing or disabled above the NIC.
    ///
    /// ## How to fix
    /// Enable ACS on the switch ports above the NIC in the BIOS (and do not
    /// use `pcie_acs_override`), or put the NIC in a slot whose root port
    /// supports ACS.
    ///
    /// ## Evidence
    /// Each VF's `physfn` and `iommu_group` links, and
    /// `/sys/kernel/iommu_groups/*/devices`; no groups is the IOMMU off.
    ///
    /// ## Source
    /// `drivers/iommu/iommu.c` (`iommu_group` links and
    /// `/sys/kernel/iommu_groups`) and `drivers/pci/iov.c` (`physfn`),
    /// Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/PCI004/warn-shared-group/`:
    ///
    /// ```text
    /// pcie
    ///   warn           PCI004  vf-iommu-group-shared  0000:01:00.2: vf shares iommu group 10 with 0000:01:00.0, 0000:01:00.3
    ///                  /sys/kernel/iommu_groups/10/devices = 0000:01:00.0 0000:01:00.2 0000:01:00.3
    ///   warn           PCI004  vf-iommu-group-shared  0000:01:00.3: vf shares iommu group 10 with 0000:01:00.0, 0000:01:00.2
    ///                  /sys/kernel/iommu_groups/10/devices = 0000:01:00.0 0000:01:00.2 0000:01:00.3
    ///
    /// what to fix first
    ///   1. PCI004 vf-iommu-group-shared (0000:01:00.2): vf shares iommu group 10 with 0000:01:00.0, 0000:01:00.3
    ///      fix: enable acs above the nic in the bios so each vf gets its own group
    ///   2. PCI004 vf-iommu-group-shared (0000:01:00.3): vf shares iommu group 10 with 0000:01:00.0, 0000:01:00.2
    ///      fix: enable acs above the nic in the bios so each vf gets its own group
    /// ```
    pub static VF_IOMMU_GROUP_SHARED = {
        id: "PCI004",
        name: "vf-iommu-group-shared",
        group: Pcie,
        severity: Warning,
        requires: [],
        run: vf_iommu_group_shared,
    };
}

fn vf_iommu_group_shared(ctx: &Context<'_>) -> Vec<Outcome> {
    need!(require(&ctx.facts.pci.devices, || Outcome::not_applicable(
        NO_PCI
    )));
    let vfs: Vec<&PciDevice> = ctx.facts.pci.list().iter().filter(|d| d.is_vf()).collect();
    if vfs.is_empty() {
        return vec![Outcome::not_applicable("no sr-iov virtual functions")];
    }
    let groups = need!(require(&ctx.facts.pci.iommu_groups, || {
        Outcome::not_applicable("no iommu groups: the iommu is off (see KRN001)")
    }));
    let mut shared = Vec::new();
    let mut alone = 0;
    for vf in vfs {
        let Some(group) = vf.iommu_group else {
            shared.push(
                Outcome::unknown("vf has no iommu_group link")
                    .subject(&vf.address)
                    .evidence(format!("{}/iommu_group", vf.sysfs()), "<missing>"),
            );
            continue;
        };
        let members = groups.get(&group).map(Vec::as_slice).unwrap_or_default();
        let others: Vec<&String> = members.iter().filter(|m| **m != vf.address).collect();
        if others.is_empty() {
            alone += 1;
        } else {
            shared.push(
                Outcome::warn(format!(
                    "vf shares iommu group {group} with {}",
                    comma_list(&others)
                ))
                .subject(&vf.address)
                .evidence(
                    format!("/sys/kernel/iommu_groups/{group}/devices"),
                    members.join(" "),
                )
                .fix(Remediation::new(
                    "enable acs above the nic in the bios so each vf gets its own group",
                )),
            );
        }
    }
    if alone > 0 {
        shared.push(Outcome::pass(format!(
            "{alone} vf(s) each in an iommu group of their own"
        )));
    }
    shared
}

declare_check! {
    /// Reports GPUs and NICs that share an IOMMU group.
    ///
    /// ## What it checks
    /// IOMMU groups in `/sys/kernel/iommu_groups` that contain both an
    /// NVIDIA GPU and a network controller (class `0x02xx`, or an
    /// InfiniBand controller `0x0c06`). Such a group warns when a NIC in it
    /// is an SR-IOV VF and is information otherwise; no such group passes.
    ///
    /// ## Why it matters
    /// A shared group means no ACS between them: peer-to-peer traffic goes
    /// straight through the switch (good for GPUDirect RDMA), but the two
    /// cannot be isolated from each other. When VFs of that NIC are handed to
    /// pods, a misbehaving one can reach the GPU's memory, so it is a
    /// warning there and information otherwise.
    ///
    /// ## How to fix
    /// Nothing, when GPUDirect peer-to-peer is the goal and the host is not
    /// shared. For isolation, enable ACS on the switch (and accept that P2P
    /// traffic is then redirected through the root complex, or use ATS).
    ///
    /// ## Evidence
    /// `/sys/kernel/iommu_groups/*/devices` with the class and vendor of
    /// each member.
    ///
    /// ## Source
    /// `drivers/iommu/iommu.c` (`iommu_group_add_device()`, the
    /// `devices` directory of each group), Linux v6.8.
    ///
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::a_real_sys_without_roce_vfs_or_dev_fails_nothing
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/PCI005/warn-shared-with-vf/`:
    ///
    /// ```text
    /// pcie
    ///   warn           PCI005  gpu-nic-shared-iommu-group  group 20: gpu 0000:03:00.0 and nic 0000:02:00.0, 0000:02:00.1 share iommu group 20: no acs between them, and vfs in it cannot be isolated
    ///                  /sys/kernel/iommu_groups/20/devices = 0000:02:00.0 0000:02:00.1 0000:03:00.0
    ///
    /// what to fix first
    ///   1. PCI005 gpu-nic-shared-iommu-group (group 20): gpu 0000:03:00.0 and nic 0000:02:00.0, 0000:02:00.1 share iommu group 20: no acs between them, and vfs in it cannot be isolated
    ///      fix: enable acs on the switch for isolation, or keep these vfs on the host
    /// ```
    pub static GPU_NIC_SHARED_IOMMU_GROUP = {
        id: "PCI005",
        name: "gpu-nic-shared-iommu-group",
        group: Pcie,
        severity: Warning,
        requires: [],
        run: gpu_nic_shared_group,
    };
}

fn gpu_nic_shared_group(ctx: &Context<'_>) -> Vec<Outcome> {
    need!(require(&ctx.facts.pci.devices, || Outcome::not_applicable(
        NO_PCI
    )));
    let groups = need!(require(&ctx.facts.pci.iommu_groups, || {
        Outcome::not_applicable("no iommu groups: the iommu is off")
    }));
    let pci = &ctx.facts.pci;
    let mut outcomes = Vec::new();
    for (group, members) in groups {
        let devices: Vec<&PciDevice> = members.iter().filter_map(|m| pci.get(m)).collect();
        let gpus: Vec<&String> = devices
            .iter()
            .filter(|d| d.is_nvidia_gpu())
            .map(|d| &d.address)
            .collect();
        let nics: Vec<&PciDevice> = devices.iter().copied().filter(|d| d.is_network()).collect();
        if gpus.is_empty() || nics.is_empty() {
            continue;
        }
        let nic_names: Vec<&String> = nics.iter().map(|d| &d.address).collect();
        let has_vfs = nics.iter().any(|d| d.is_vf());
        let message = format!(
            "gpu {} and nic {} share iommu group {group}: no acs between them",
            comma_list(&gpus),
            comma_list(&nic_names)
        );
        let outcome = if has_vfs {
            Outcome::warn(format!("{message}, and vfs in it cannot be isolated")).fix(
                Remediation::new(
                    "enable acs on the switch for isolation, or keep these vfs on the host",
                ),
            )
        } else {
            Outcome::info(format!(
                "{message}: peer-to-peer dma goes through the switch"
            ))
        };
        outcomes.push(outcome.subject(format!("group {group}")).evidence(
            format!("/sys/kernel/iommu_groups/{group}/devices"),
            members.join(" "),
        ));
    }
    if outcomes.is_empty() {
        outcomes.push(Outcome::pass("no gpu shares an iommu group with a nic"));
    }
    outcomes
}

fn comma_list(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
