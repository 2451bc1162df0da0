//! PCIe links, NUMA placement, drivers and IOMMU groups of GPUs and NICs.

use zerohop_core::Remediation;
use zerohop_host::facts::PciDevice;

use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::join;

const NO_PCI: &str = "/sys/bus/pci/devices is absent: no pci devices to check";

/// The GPUs and NICs (physical functions) of the data path.
fn data_path_devices<'a>(ctx: &Context<'a>) -> impl Iterator<Item = &'a PciDevice> {
    ctx.facts
        .pci
        .list()
        .iter()
        .filter(|d| (d.is_nvidia_gpu() || d.is_nic()) && !d.is_vf())
}

declare_check! {
    /// PCIe links of GPUs and NICs run at their full width and speed.
    ///
    /// ## What it checks
    /// Compares `current_link_width`/`current_link_speed` with
    /// `max_link_width`/`max_link_speed` under `/sys/bus/pci/devices/*` for
    /// NVIDIA GPUs (class 0x0300/0x0302) and network controllers (class
    /// 0x0200/0x0207). A narrower link fails. A slower link fails for NICs;
    /// for GPUs it is `info`, because idle GPUs lower their link speed to
    /// save power and raise it under load.
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
    data_path_devices(ctx)
        .map(|device| {
            let link = match &device.link {
                Err(gap) => return Outcome::gap(gap).subject(&device.address),
                Ok(None) => {
                    return Outcome::unknown(format!("{} exposes no link speed or width files", device.label()))
                        .subject(&device.address)
                        .evidence(format!("{}/current_link_speed", device.sysfs()), "<missing>");
                }
                Ok(Some(link)) => link,
            };
            let evidence = |o: Outcome| {
                o.subject(&device.address)
                    .evidence(format!("{}/current_link_width", device.sysfs()), link.current_width.to_string())
                    .evidence(format!("{}/max_link_width", device.sysfs()), link.max_width.to_string())
                    .evidence(format!("{}/current_link_speed", device.sysfs()), &link.current_speed)
                    .evidence(format!("{}/max_link_speed", device.sysfs()), &link.max_speed)
            };
            let fix = Remediation::new("reseat the card, check the slot wiring and the bios pcie generation, update firmware")
                .command(format!("{} | grep -e LnkCap -e LnkSta", join(["lspci", "-vvv", "-s", &device.address])));
            let slower = match (link.current_gts(), link.max_gts()) {
                (Some(current), Some(max)) => Some(current < max),
                _ => None,
            };
            if link.current_width == 0 {
                return evidence(Outcome::fail(format!("{} link is down (width 0)", device.label())).fix(fix));
            }
            if link.current_width < link.max_width {
                return evidence(
                    Outcome::fail(format!("{} link trained at x{} of x{}", device.label(), link.current_width, link.max_width)).fix(fix),
                );
            }
            match slower {
                None => evidence(Outcome::unknown(format!("{} link speed unknown", device.label()))),
                Some(true) if device.is_nvidia_gpu() => evidence(Outcome::info(format!(
                    "{} link at {} of {}: normal for an idle gpu, check again under load",
                    device.label(),
                    link.current_speed,
                    link.max_speed
                ))),
                Some(true) => evidence(
                    Outcome::fail(format!("{} link at {} of {}", device.label(), link.current_speed, link.max_speed)).fix(fix),
                ),
                Some(false) => Outcome::pass(format!("{} link x{} at {}", device.label(), link.current_width, link.current_speed))
                    .subject(&device.address),
            }
        })
        .collect()
}

declare_check! {
    /// GPUs and NICs know their NUMA node on multi-socket hosts.
    ///
    /// ## What it checks
    /// Reads `numa_node` of each GPU and NIC. On a host with two or more
    /// NUMA nodes, `-1` means the firmware did not describe the device's
    /// locality.
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
    data_path_devices(ctx)
        .map(|device| {
            let path = format!("{}/numa_node", device.sysfs());
            match &device.numa_node {
                Err(gap) => Outcome::gap(gap),
                Ok(None) => Outcome::unknown(format!("{} has no numa_node file", device.label())),
                Ok(Some(-1)) => Outcome::warn(format!(
                    "{} numa node unknown on a {cpu_nodes}-node host",
                    device.label()
                ))
                .evidence(&path, "-1")
                .fix(Remediation::new(
                    "enable acpi srat / numa reporting in the bios and update it",
                )),
                Ok(Some(node)) => Outcome::pass(format!("{} on numa node {node}", device.label())),
            }
            .subject(&device.address)
        })
        .collect()
}

declare_check! {
    /// No NVIDIA GPU is bound to the `nouveau` driver.
    ///
    /// ## What it checks
    /// The `driver` link of every NVIDIA GPU under `/sys/bus/pci/devices`.
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
    /// IOMMU group in `/sys/kernel/iommu_groups/<g>/devices`.
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
    /// NVIDIA GPU and a network controller.
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
        let nics: Vec<&PciDevice> = devices.iter().copied().filter(|d| d.is_nic()).collect();
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
