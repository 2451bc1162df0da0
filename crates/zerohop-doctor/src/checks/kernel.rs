//! Boot parameters: IOMMU, 1 GiB hugepages, CPU isolation.

use std::collections::{BTreeMap, BTreeSet};

use zerohop_core::Remediation;
use zerohop_host::facts::CpuVendor;
use zerohop_host::parse::cmdline::{Cmdline, hugepage_requests};
use zerohop_host::parse::cpuset::{CpuSet, Isolcpus};

use crate::checks::memory::{gib_pages_to_suggest, memory_gib, memory_of};
use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::join;

const CMDLINE: &str = "/proc/cmdline";
const GIB_KIB: u64 = 1 << 20;

/// The 1 GiB pages suggested when nothing asks for a number: enough for
/// the buffers of a GPU node's RDMA and DPDK-style workloads, and never
/// more than half the host's memory (see [`gib_pages_to_suggest`]).
const SUGGESTED_1G_PAGES: u64 = 32;

declare_check! {
    /// The IOMMU is on, with the host's own DMA in passthrough.
    ///
    /// ## What it checks
    /// The deciding evidence, in order:
    ///
    /// 1. `/sys/kernel/iommu_groups/<g>/type` (Linux 5.11 and later): the
    ///    domain type the kernel gave each group. The groups of the data
    ///    path (NVIDIA GPUs, network controllers that are not VFs, NVMe
    ///    controllers, by the PCI functions in each group) are judged; when
    ///    none of them is known, every group. All `identity` passes; any
    ///    `DMA` or `DMA-FQ` warns and names the groups; `unmanaged`
    ///    (owned by VFIO) and `blocked` groups are not the host's DMA and
    ///    are left out.
    /// 2. Only without those files, `/proc/cmdline` (whole tokens, the
    ///    last of a repeated parameter wins) and the CPU from
    ///    `/proc/cpuinfo`. On: Intel needs `intel_iommu=on` (else a
    ///    non-empty `/sys/class/iommu` shows the kernel enabled it); AMD
    ///    is on unless `amd_iommu=off`; Arm SMMUs are on when present;
    ///    `iommu=off` turns any of them off. Passthrough:
    ///    `iommu.passthrough=1` (any architecture) or `iommu=pt` (x86
    ///    only: arm64 kernels ignore it); `iommu.passthrough=0` and
    ///    `iommu=nopt` ask for translation; the later token wins.
    ///    `amd_iommu=` has no passthrough option. Without any of them the
    ///    kernel's build default applies (`CONFIG_IOMMU_DEFAULT_PASSTHROUGH`,
    ///    off in distribution kernels), which the command line cannot show.
    ///
    /// ## Why it matters
    /// SR-IOV virtual functions need the IOMMU to be isolated from each
    /// other, and VFIO refuses devices without it. With the IOMMU on but not
    /// in passthrough, every DMA of the host's own drivers is translated:
    /// IOTLB misses cost RDMA and GPU peer-to-peer throughput, and some
    /// peer-to-peer transfers are blocked outright. On, with passthrough,
    /// gives isolation for VFs and untranslated DMA for the host.
    ///
    /// ## How to fix
    /// Add the parameter for this host's architecture to the kernel command
    /// line and reboot: `iommu.passthrough=1` on Arm (arm64 ignores
    /// `iommu=pt`), `intel_iommu=on iommu=pt` on Intel, `iommu=pt` on AMD.
    /// `grubby --update-kernel=ALL --args="…"` (RHEL) replaces a parameter
    /// already there; on Debian and Ubuntu edit `GRUB_CMDLINE_LINUX` in
    /// `/etc/default/grub` and run `update-grub`. On OpenShift, add them to
    /// a `MachineConfig`'s `kernelArguments` (`zerohop plan` renders one).
    ///
    /// ## Evidence
    /// `/sys/kernel/iommu_groups/<g>/type` decides when present (the type
    /// the kernel gave each group). Without it: `/proc/cmdline`, `/proc/cpuinfo`
    /// (vendor) and `/sys/class/iommu`. No `type` files and no `/proc/cmdline` is
    /// `unknown`; a build default the command line cannot show is `unknown`, not
    /// a pass.
    ///
    /// ## Source
    /// linux v6.12 `drivers/iommu/iommu.c` (`iommu_group_show_type`,
    /// `iommu_set_def_domain_type` for `iommu.passthrough=`),
    /// `arch/x86/kernel/pci-dma.c` (`iommu_setup`: `iommu=pt`, `iommu=off`),
    /// `drivers/iommu/intel/iommu.c` (`intel_iommu_setup`) and
    /// `Documentation/admin-guide/kernel-parameters.txt`.
    /// Real capture: crates/zerohop-doctor/tests/corpus_foundation.rs::icelake_cmdline_has_iommu_on_in_passthrough
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::iommu_group_types_decide_passthrough
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KRN001/fail-off-with-sriov/`:
    ///
    /// ```text
    /// kernel
    ///   fail           KRN001  iommu-misconfigured  iommu off while sr-iov vfs are in use: vfs are not isolated and vfio cannot take them
    ///                  /proc/cmdline = intel_iommu=on iommu=pt intel_iommu=off
    ///                  /proc/cpuinfo = intel
    ///                  /sys/kernel/iommu_groups/*/type = <missing>
    ///
    /// what to fix first
    ///   1. KRN001 iommu-misconfigured: iommu off while sr-iov vfs are in use: vfs are not isolated and vfio cannot take them
    ///      fix: turn the iommu on in passthrough mode
    ///        grubby --update-kernel=ALL '--args=intel_iommu=on iommu=pt'   # RHEL, then reboot
    ///        # Debian/Ubuntu: put `intel_iommu=on iommu=pt` in GRUB_CMDLINE_LINUX in /etc/default/grub (replacing any other value of the same parameter), update-grub, reboot
    /// ```
    pub static IOMMU_MODE = {
        id: "KRN001",
        name: "iommu-misconfigured",
        group: Kernel,
        severity: Error,
        requires: [],
        run: iommu_mode,
    };
}

/// Where the IOMMU group types live, for evidence.
const GROUP_TYPES: &str = "/sys/kernel/iommu_groups/*/type";

fn iommu_mode(ctx: &Context<'_>) -> Vec<Outcome> {
    let facts = ctx.facts;
    let vendor = facts.kernel.cpu_vendor.as_ref().ok().cloned().flatten();
    let cmdline = facts.kernel.cmdline.as_ref().ok().and_then(Option::as_ref);
    if let Ok(Some(types)) = &facts.kernel.iommu_group_types
        && !types.is_empty()
    {
        return vec![from_group_types(ctx, types, cmdline, vendor.as_ref())];
    }
    let cmdline = need!(require(&facts.kernel.cmdline, || Outcome::unknown(
        "/proc/cmdline is absent and /sys/kernel/iommu_groups has no type files"
    )));
    // An absent /sys/class/iommu (a capture that left it out, a kernel
    // without IOMMU support) proves nothing either way.
    let units = match &facts.kernel.iommu_units {
        Ok(Some(units)) => Some(units.len()),
        Ok(None) | Err(_) => None,
    };
    let on = iommu_on(cmdline, vendor.as_ref(), units);
    let pt = passthrough(cmdline, vendor.as_ref());
    let evidence = |mut outcome: Outcome| {
        outcome = outcome.evidence(CMDLINE, shown_iommu_params(cmdline));
        if let Some(vendor) = &vendor {
            outcome = outcome.evidence("/proc/cpuinfo", vendor.name());
        }
        if let Some(units) = units {
            outcome = outcome.evidence("/sys/class/iommu", format!("{units} iommu units"));
        }
        outcome.evidence(
            GROUP_TYPES,
            match &facts.kernel.iommu_group_types {
                Ok(None) => "<missing>",
                Ok(Some(_)) => "<no type files: kernel before 5.11>",
                Err(_) => "<unreadable>",
            },
        )
    };
    let ignored_pt = if pt.arm_ignored_pt {
        " (arm64 kernels ignore iommu=pt)"
    } else {
        ""
    };
    let outcome = match (on, pt.value) {
        (Some(true), Some(true)) => Outcome::pass("iommu on in passthrough mode"),
        (Some(true), Some(false)) => Outcome::warn(format!(
            "iommu on and {} asks for translation: host dma is translated, costing rdma and peer-to-peer throughput",
            pt.decided_by.as_deref().unwrap_or("the command line")
        ))
        .fix(passthrough_fix(cmdline, vendor.as_ref())),
        (Some(true), None) => Outcome::warn(format!(
            "iommu on and no passthrough parameter{ignored_pt}: host dma is translated, unless the kernel defaults to passthrough (CONFIG_IOMMU_DEFAULT_PASSTHROUGH, off in distribution kernels)"
        ))
        .fix(passthrough_fix(cmdline, vendor.as_ref())),
        (Some(false), _) if ctx.profile.wants_sriov(facts) => {
            Outcome::fail("iommu off while sr-iov vfs are in use: vfs are not isolated and vfio cannot take them")
                .fix(on_fix(cmdline, vendor.as_ref()))
        }
        (Some(false), _) => Outcome::info("iommu off: fine for gpudirect storage, but sr-iov vfs and vfio need it on"),
        // Passthrough asked for: whatever iommu there is leaves the host's
        // dma untranslated; only vfs need to know whether one is on.
        (None, Some(true)) if !ctx.profile.wants_sriov(facts) => Outcome::pass(format!(
            "{}: host dma passes untranslated through any iommu (whether one is on could not be read)",
            pt.decided_by.as_deref().unwrap_or("passthrough")
        )),
        (None, _) => Outcome::unknown("cannot tell whether the iommu is on: no deciding iommu parameter, /sys/class/iommu absent and no iommu group types"),
    };
    vec![evidence(outcome)]
}

/// The IOMMU parameters of the command line, for evidence.
fn shown_iommu_params(cmdline: &Cmdline) -> String {
    let shown: Vec<String> = cmdline
        .params
        .iter()
        .filter(|(key, _)| {
            matches!(
                key.as_str(),
                "intel_iommu" | "amd_iommu" | "iommu" | "iommu.passthrough"
            )
        })
        .map(|(key, value)| match value {
            Some(value) => format!("{key}={value}"),
            None => key.clone(),
        })
        .collect();
    if shown.is_empty() {
        "<no iommu parameters>".to_owned()
    } else {
        shown.join(" ")
    }
}

/// Judges the domain types the kernel gave the IOMMU groups.
fn from_group_types(
    ctx: &Context<'_>,
    types: &BTreeMap<u32, String>,
    cmdline: Option<&Cmdline>,
    vendor: Option<&CpuVendor>,
) -> Outcome {
    // The groups of the data path's devices, when the PCI functions say
    // which those are; else every group.
    let data_groups: BTreeSet<u32> = ctx
        .facts
        .pci
        .list()
        .iter()
        .filter(|d| d.is_nvidia_gpu() || (d.is_nic() && !d.is_vf()) || d.class == Some(NVME_CLASS))
        .filter_map(|d| d.iommu_group)
        .filter(|group| types.contains_key(group))
        .collect();
    let judged: Vec<(u32, &str)> = types
        .iter()
        .filter(|(group, _)| data_groups.is_empty() || data_groups.contains(group))
        .map(|(group, kind)| (*group, kind.as_str()))
        .collect();
    let which = if data_groups.is_empty() {
        "iommu groups"
    } else {
        "iommu groups of gpus, nics and nvme"
    };
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, kind) in &judged {
        *counts.entry(kind).or_default() += 1;
    }
    let tally = counts
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect::<Vec<_>>()
        .join(", ");
    let translated: Vec<String> = judged
        .iter()
        .filter(|(_, kind)| kind.starts_with("DMA"))
        .map(|(group, kind)| format!("{group} ({kind})"))
        .collect();
    let identity = counts.get("identity").copied().unwrap_or(0);
    let mut outcome = if !translated.is_empty() {
        Outcome::warn(format!(
            "{} of {} {which} translate dma: host dma through them costs rdma and peer-to-peer throughput (groups {})",
            translated.len(),
            judged.len(),
            shorten(&translated)
        ))
        .fix(passthrough_fix(cmdline.unwrap_or(&Cmdline::default()), vendor))
    } else if identity > 0 {
        Outcome::pass(format!(
            "iommu on, {identity} {which} in passthrough (identity)"
        ))
    } else {
        Outcome::info(format!(
            "iommu on; the {which} are owned by vfio or blocked ({tally}): not the host's dma"
        ))
    };
    outcome = outcome.evidence(GROUP_TYPES, tally);
    if let Some(cmdline) = cmdline {
        outcome = outcome.evidence(CMDLINE, shown_iommu_params(cmdline));
    }
    outcome
}

/// The first few items of a list, and how many more.
fn shorten(items: &[String]) -> String {
    const SHOWN: usize = 8;
    if items.len() <= SHOWN {
        items.join(", ")
    } else {
        format!(
            "{} and {} more",
            items[..SHOWN].join(", "),
            items.len() - SHOWN
        )
    }
}

/// PCI class of NVMe controllers (mass storage, non-volatile memory).
const NVME_CLASS: u16 = 0x0108;

fn iommu_on(cmdline: &Cmdline, vendor: Option<&CpuVendor>, units: Option<usize>) -> Option<bool> {
    if cmdline.value("iommu") == Some("off") {
        return Some(false);
    }
    let from_sysfs = units.map(|n| n > 0);
    match vendor {
        Some(CpuVendor::Intel) => match cmdline
            .value("intel_iommu")
            .map(|v| v.split(',').next().unwrap_or(""))
        {
            Some("on") => Some(true),
            Some("off") => Some(false),
            // The default depends on CONFIG_INTEL_IOMMU_DEFAULT_ON; sysfs tells.
            _ => from_sysfs,
        },
        Some(CpuVendor::Amd) => match cmdline.value("amd_iommu") {
            Some("off") => Some(false),
            // AMD-Vi is on by default; sysfs confirms when readable.
            _ => from_sysfs.or(Some(true)),
        },
        // Arm SMMUs are on when the firmware describes them; only
        // `iommu.passthrough=` is said about them on the command line.
        Some(CpuVendor::Arm) => from_sysfs.or(Some(true)),
        _ => {
            if cmdline
                .value("intel_iommu")
                .is_some_and(|v| v.starts_with("on"))
            {
                Some(true)
            } else if cmdline.value("amd_iommu") == Some("off")
                || cmdline.value("intel_iommu") == Some("off")
            {
                Some(false)
            } else {
                from_sysfs
            }
        }
    }
}

/// What the command line says of passthrough.
struct Passthrough {
    /// `Some(true)` passthrough, `Some(false)` translation, `None` not said.
    value: Option<bool>,
    /// The token that decided it.
    decided_by: Option<String>,
    /// `iommu=pt` on Arm, where the kernel ignores it.
    arm_ignored_pt: bool,
}

/// Reads passthrough from the command line in order, the later token
/// winning: `iommu.passthrough=` (the IOMMU core's, every architecture,
/// `kstrtobool` values) and x86's `iommu=pt`/`iommu=nopt` (among
/// comma-separated options). `amd_iommu=` has no passthrough option.
fn passthrough(cmdline: &Cmdline, vendor: Option<&CpuVendor>) -> Passthrough {
    let arm = vendor == Some(&CpuVendor::Arm);
    let mut found = Passthrough {
        value: None,
        decided_by: None,
        arm_ignored_pt: false,
    };
    for (key, value) in &cmdline.params {
        let Some(value) = value.as_deref() else {
            continue;
        };
        let said = match key.as_str() {
            "iommu.passthrough" => match value {
                "1" | "y" | "Y" | "on" => Some(true),
                "0" | "n" | "N" | "off" => Some(false),
                _ => None,
            },
            "iommu" => value.split(',').fold(None, |last, option| match option {
                "pt" if arm => {
                    found.arm_ignored_pt = true;
                    last
                }
                "pt" => Some(true),
                "nopt" if !arm => Some(false),
                _ => last,
            }),
            _ => None,
        };
        if let Some(said) = said {
            found.value = Some(said);
            found.decided_by = Some(format!("{key}={value}"));
        }
    }
    found
}

/// The passthrough parameter for this host: `iommu.passthrough=1` where
/// the command line already sets it (so that the new value replaces the
/// old), on Arm (which ignores `iommu=pt`) and where the architecture is
/// unknown (the IOMMU core takes it everywhere); `iommu=pt` on x86.
fn passthrough_arg(cmdline: &Cmdline, vendor: Option<&CpuVendor>) -> &'static str {
    match vendor {
        Some(CpuVendor::Intel | CpuVendor::Amd) if !cmdline.has("iommu.passthrough") => "iommu=pt",
        _ => "iommu.passthrough=1",
    }
}

fn passthrough_fix(cmdline: &Cmdline, vendor: Option<&CpuVendor>) -> Remediation {
    let arg = passthrough_arg(cmdline, vendor);
    boot_args_fix(&format!("put the host's dma in passthrough: {arg}"), arg)
}

fn on_fix(cmdline: &Cmdline, vendor: Option<&CpuVendor>) -> Remediation {
    let pt = passthrough_arg(cmdline, vendor);
    let args = match vendor {
        Some(CpuVendor::Intel) => format!("intel_iommu=on {pt}"),
        _ => pt.to_owned(),
    };
    boot_args_fix("turn the iommu on in passthrough mode", &args)
}

/// Adds `args` to the kernel command line: grubby on RHEL (which replaces
/// a parameter of the same name), `GRUB_CMDLINE_LINUX` on Debian.
fn boot_args_fix(summary: &str, args: &str) -> Remediation {
    Remediation::new(summary)
        .command(format!(
            "{}   # RHEL, then reboot",
            join(["grubby", "--update-kernel=ALL", &format!("--args={args}")])
        ))
        .command(format!(
            "# Debian/Ubuntu: put `{args}` in GRUB_CMDLINE_LINUX in /etc/default/grub (replacing any other value of the same parameter), update-grub, reboot"
        ))
}

declare_check! {
    /// The 1 GiB hugepages asked for at boot are reserved.
    ///
    /// ## What it checks
    /// Reads `hugepagesz=`/`hugepages=`/`default_hugepagesz=` from
    /// `/proc/cmdline` in the kernel's order (`hugepages=` applies to the
    /// `hugepagesz=` before it, and accepts a per-node form `0:16,1:16`),
    /// then `nr_hugepages` of the 1 GiB pool in `/sys/kernel/mm/hugepages`.
    /// Fails when fewer pages are reserved than requested, or when the
    /// profile expects 1 GiB pages that the command line does not request.
    /// A suggested reservation never exceeds half of the memory
    /// (`MemTotal` of each `/sys/devices/system/node/node<N>/meminfo`, else
    /// of `/proc/meminfo`): what the node can hold and still run.
    ///
    /// ## Why it matters
    /// RDMA registration and DPDK-style buffers want large, physically
    /// contiguous pages: fewer IOTLB and NIC translation entries, fewer
    /// pinned pages. 1 GiB pages can only be reserved reliably at boot,
    /// before memory fragments; a short pool means pods asking for
    /// `hugepages-1Gi` stay pending or fall back to 4 KiB pages.
    ///
    /// ## How to fix
    /// Request them on the kernel command line, for example
    /// `default_hugepagesz=1G hugepagesz=1G hugepages=32`, and reboot. If the
    /// pool stays short, the host lacks memory at boot (check
    /// `dmesg | grep -i huge`) or the CPU lacks 1 GiB page support
    /// (`pdpe1gb` in `/proc/cpuinfo`).
    ///
    /// ## Evidence
    /// `/proc/cmdline` (what was requested, quoted in its order) and
    /// `/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages` (what was
    /// reserved). A request whose pool directory is not in the capture is
    /// `unknown`; without `/proc/cmdline` it is `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `mm/hugetlb.c`: `hugepagesz_setup` sets the size that the
    /// next `hugepages=` applies to, `hugepages_setup` takes the count (and the
    /// `<node>:<count>` form) for the last `hugepagesz=` before it, else for
    /// `default_hugepagesz=`; `Documentation/admin-guide/mm/hugetlbpage.rst`.
    /// Real capture: crates/zerohop-doctor/tests/corpus_kernel.rs::csit_hugepage_parameters_are_quoted_in_their_order
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::hugepage_suggestions_fit_the_memory
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KRN002/fail-expected-not-requested/`:
    ///
    /// ```text
    /// kernel
    ///   fail           KRN002  hugepages-1g-not-reserved  profile expects 8 1 GiB hugepages per node but none are requested at boot
    ///                  /proc/meminfo = MemTotal 62.5 GiB
    ///                  /proc/cmdline = <no hugepage parameters>
    ///
    /// what to fix first
    ///   1. KRN002 hugepages-1g-not-reserved: profile expects 8 1 GiB hugepages per node but none are requested at boot
    ///      fix: reserve 1 GiB hugepages at boot
    ///        grubby --update-kernel=ALL '--args=default_hugepagesz=1G hugepagesz=1G hugepages=8'   # then reboot
    /// ```
    pub static HUGEPAGES_1G_NOT_RESERVED = {
        id: "KRN002",
        name: "hugepages-1g-not-reserved",
        group: Kernel,
        severity: Error,
        requires: [],
        run: hugepages_1g,
    };
}

fn hugepages_1g(ctx: &Context<'_>) -> Vec<Outcome> {
    let facts = ctx.facts;
    let cmdline = need!(require(&facts.kernel.cmdline, || Outcome::unknown(
        "/proc/cmdline is absent"
    )));
    let requested = hugepage_requests(cmdline)
        .into_iter()
        .find(|r| r.size_kib == GIB_KIB);
    let pool = facts.memory.pool(GIB_KIB);
    let pool_path = "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages";
    // In the command line's order: the kernel gives each `hugepages=` to
    // the `hugepagesz=` before it (mm/hugetlb.c, hugepages_setup).
    let shown = cmdline.show_in_order(&["default_hugepagesz", "hugepagesz", "hugepages"]);
    let boot_fix = |pages: u64| {
        Remediation::new("reserve 1 GiB hugepages at boot").command(format!(
            "{}   # then reboot",
            join([
                "grubby",
                "--update-kernel=ALL",
                &format!("--args=default_hugepagesz=1G hugepagesz=1G hugepages={pages}")
            ])
        ))
    };
    // What the host can hold: half its memory in whole 1 GiB pages (see
    // memory::gib_pages_to_suggest), per node where the nodes are known.
    let nodes: Vec<u32> = facts.numa_nodes().iter().map(|n| n.id).collect();
    let fits = || -> Option<(u64, String, String)> {
        // Per node when every node's memory is known, else for the host.
        let per_node: Option<Vec<(u32, u64)>> = nodes
            .iter()
            .map(|node| {
                facts
                    .memory
                    .node_total_kib(*node)
                    .map(|total| (*node, total))
            })
            .collect();
        match per_node {
            Some(per_node) if !per_node.is_empty() => Some((
                per_node
                    .iter()
                    .map(|(_, total)| gib_pages_to_suggest(*total))
                    .sum(),
                "/sys/devices/system/node/node*/meminfo".to_owned(),
                format!(
                    "MemTotal {}",
                    per_node
                        .iter()
                        .map(|(node, total)| format!("node{node} {}", memory_gib(*total)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
            _ => {
                let (total, source) = memory_of(facts, None)?;
                Some((
                    gib_pages_to_suggest(total),
                    source,
                    format!("MemTotal {}", memory_gib(total)),
                ))
            }
        }
    };
    let sized_fix = |wanted: u64| -> (Remediation, Option<(String, String)>) {
        match fits() {
            Some((0, source, shown)) => (
                Remediation::new(format!(
                    "this host's memory ({shown}) is too small for 1 GiB hugepages: keep 2 MiB pages"
                )),
                Some((source, shown)),
            ),
            Some((fit, source, shown)) => (boot_fix(wanted.min(fit)), Some((source, shown))),
            None => (
                Remediation::new(
                    "reserve 1 GiB hugepages at boot, at most half of each node's memory",
                )
                .command(format!(
                    "{}   # <pages>: half of MemTotal in GiB; then reboot",
                    join([
                        "grubby",
                        "--update-kernel=ALL",
                        "--args=default_hugepagesz=1G hugepagesz=1G hugepages=<pages>"
                    ])
                )),
                None,
            ),
        }
    };
    let reserved = match pool.map(|p| &p.total) {
        Some(Ok(Some(n))) => Some(*n),
        Some(Err(gap)) => return vec![Outcome::gap(gap)],
        _ => None,
    };
    // Without /sys/kernel/mm/hugepages at all (a capture of /proc only) the
    // reservation cannot be confirmed either way.
    if requested.is_some() && reserved.is_none() {
        match &facts.memory.hugepages {
            Err(gap) => return vec![Outcome::gap(gap)],
            Ok(None) => {
                return vec![Outcome::unknown("1 GiB hugepages requested, but /sys/kernel/mm/hugepages is absent: cannot confirm the reservation")
                    .evidence(CMDLINE, shown)];
            }
            Ok(Some(_)) => {}
        }
    }
    let outcome = match (requested, reserved) {
        (Some(req), Some(got)) if got >= req.pages => {
            Outcome::pass(format!("{got} of {} 1 GiB hugepages reserved", req.pages))
        }
        (Some(req), Some(got)) => Outcome::fail(format!(
            "only {got} of {} requested 1 GiB hugepages reserved: memory was short or fragmented at boot",
            req.pages
        ))
        .fix(Remediation::new("free memory at boot or lower the request; 1 GiB pages cannot be added reliably at run time")
            .command("dmesg | grep -i hugepage")),
        (Some(req), None) => Outcome::fail(format!(
            "{} 1 GiB hugepages requested but the kernel has no 1 GiB pool: the cpu or kernel lacks 1 GiB pages",
            req.pages
        ))
        .fix(Remediation::new("use a cpu with pdpe1gb and a kernel with CONFIG_HUGETLB_PAGE")),
        (None, got) => match ctx.profile.hugepages_1g_per_node {
            Some(per_node) => {
                let count = u64::try_from(nodes.len().max(1)).unwrap_or(1);
                let (fix, memory) = sized_fix(per_node * count);
                let outcome = Outcome::fail(format!("profile expects {per_node} 1 GiB hugepages per node but none are requested at boot")).fix(fix);
                match memory {
                    Some((source, shown)) => outcome.evidence(source, shown),
                    None => outcome,
                }
            }
            None if got.unwrap_or(0) > 0 => Outcome::info(format!(
                "{} 1 GiB hugepages reserved at run time, not at boot: the pool may not survive a reboot",
                got.unwrap_or(0)
            )),
            None => {
                let (fix, memory) = sized_fix(SUGGESTED_1G_PAGES);
                let outcome = Outcome::info("no 1 GiB hugepages requested").fix(fix);
                match memory {
                    Some((source, shown)) => outcome.evidence(source, shown),
                    None => outcome,
                }
            }
        },
    };
    let mut outcome = outcome.evidence(
        CMDLINE,
        if shown.is_empty() {
            "<no hugepage parameters>".to_owned()
        } else {
            shown
        },
    );
    if let Some(got) = reserved {
        outcome = outcome.evidence(pool_path, got.to_string());
    }
    vec![outcome]
}

/// CPU isolation requested on the command line.
struct Requested {
    isolcpus: Option<Isolcpus>,
    nohz_full: Option<CpuSet>,
    rcu_nocbs: Option<CpuSet>,
}

fn requested(cmdline: &Cmdline) -> Result<Requested, Box<Outcome>> {
    let malformed = |key: &str, value: &str, err: &dyn std::fmt::Display| {
        Box::new(
            Outcome::unknown(format!("cannot parse {key}=: {err}"))
                .evidence(CMDLINE, format!("{key}={value}")),
        )
    };
    let parse_set = |key: &str| -> Result<Option<CpuSet>, Box<Outcome>> {
        cmdline
            .value(key)
            .map(|v| CpuSet::parse(v).map_err(|err| malformed(key, v, &err)))
            .transpose()
    };
    let isolcpus = cmdline
        .value("isolcpus")
        .map(|v| Isolcpus::parse(v).map_err(|err| malformed("isolcpus", v, &err)))
        .transpose()?;
    Ok(Requested {
        isolcpus,
        nohz_full: parse_set("nohz_full")?,
        rcu_nocbs: parse_set("rcu_nocbs")?,
    })
}

declare_check! {
    /// CPU isolation parameters agree with each other and took effect.
    ///
    /// ## What it checks
    /// Compares `isolcpus=`, `nohz_full=` and `rcu_nocbs=` on
    /// `/proc/cmdline` with each other, and with what the kernel applied:
    /// `/sys/devices/system/cpu/isolated` (the `isolcpus` domain set) and
    /// `/sys/devices/system/cpu/nohz_full`.
    ///
    /// ## Why it matters
    /// Isolated cores run the latency-critical polling threads of the data
    /// path. Lists that disagree leave timer ticks or RCU callbacks on cores
    /// believed quiet; a list the kernel rejected (a typo, a kernel built
    /// without `CONFIG_NO_HZ_FULL`) silently isolates nothing.
    ///
    /// ## How to fix
    /// Give the same CPU list to all three parameters (tuned's
    /// `cpu-partitioning` profile does this), check the kernel log for
    /// rejected values (`dmesg | grep -i -e isol -e nohz`), and reboot.
    ///
    /// ## Evidence
    /// `/proc/cmdline` (`isolcpus=`, `nohz_full=`, `rcu_nocbs=`) and the
    /// sets the kernel applied, `/sys/devices/system/cpu/isolated` and
    /// `/sys/devices/system/cpu/nohz_full`. Without the command line it is
    /// `unknown`; without the sysfs files only the command line is compared.
    ///
    /// ## Source
    /// linux v6.12 `kernel/sched/isolation.c` (`housekeeping_isolcpus_setup`,
    /// `housekeeping_nohz_full_setup`), `kernel/rcu/tree_nocb.h`
    /// (`rcu_nocb_setup`), `drivers/base/cpu.c` (the `isolated` and `nohz_full`
    /// attributes).
    /// Real capture: crates/zerohop-doctor/tests/corpus_foundation.rs::grace_cmdline_is_arm_passthrough
    /// Real capture: crates/zerohop-doctor/tests/corpus_foundation.rs::icelake_cmdline_has_iommu_on_in_passthrough
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KRN003/fail-not-applied/`:
    ///
    /// ```text
    /// kernel
    ///   fail           KRN003  cpu-isolation-mismatch  isolcpus=2-3 requested but the kernel applied ``
    ///                  /proc/cmdline = isolcpus=2-3
    ///                  /sys/devices/system/cpu/isolated =
    ///   fail           KRN003  cpu-isolation-mismatch  nohz_full=2-3 requested but the kernel applied ``
    ///                  /proc/cmdline = nohz_full=2-3
    ///                  /sys/devices/system/cpu/nohz_full =
    ///
    /// what to fix first
    ///   1. KRN003 cpu-isolation-mismatch: isolcpus=2-3 requested but the kernel applied ``
    ///      fix: check the kernel log for a rejected isolcpus= value and the kernel config
    ///        dmesg | grep -i -e isol -e nohz
    ///   2. KRN003 cpu-isolation-mismatch: nohz_full=2-3 requested but the kernel applied ``
    ///      fix: check the kernel log for a rejected nohz_full= value and the kernel config
    ///        dmesg | grep -i -e isol -e nohz
    /// ```
    pub static CPU_ISOLATION_MISMATCH = {
        id: "KRN003",
        name: "cpu-isolation-mismatch",
        group: Kernel,
        severity: Error,
        requires: [],
        run: cpu_isolation,
    };
}

fn cpu_isolation(ctx: &Context<'_>) -> Vec<Outcome> {
    let facts = ctx.facts;
    let cmdline = need!(require(&facts.kernel.cmdline, || Outcome::unknown(
        "/proc/cmdline is absent"
    )));
    let req = need!(requested(cmdline));
    if req.isolcpus.is_none() && req.nohz_full.is_none() && req.rcu_nocbs.is_none() {
        return vec![Outcome::not_applicable("no cpu isolation requested")];
    }
    let mut outcomes = Vec::new();
    let lists: Vec<(&str, &CpuSet)> = [
        ("isolcpus", req.isolcpus.as_ref().map(|i| &i.cpus)),
        ("nohz_full", req.nohz_full.as_ref()),
        ("rcu_nocbs", req.rcu_nocbs.as_ref()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.map(|set| (key, set)))
    .collect();
    let distinct: BTreeSet<String> = lists.iter().map(|(_, set)| set.to_string()).collect();
    let shown = lists
        .iter()
        .map(|(k, s)| format!("{k}={s}"))
        .collect::<Vec<_>>()
        .join(" ");
    if distinct.len() > 1 {
        outcomes.push(
            Outcome::warn("isolation lists disagree: some isolated cpus still get timer ticks or rcu callbacks")
                .evidence(CMDLINE, shown.clone())
                .fix(Remediation::new("give isolcpus, nohz_full and rcu_nocbs the same cpu list")),
        );
    }
    if let Some(iso) = req.isolcpus.as_ref().filter(|i| i.isolates_domains()) {
        outcomes.push(compare_effective(
            "isolcpus",
            &iso.cpus,
            &facts.kernel.isolation.isolated,
            "/sys/devices/system/cpu/isolated",
        ));
    }
    if let Some(nohz) = &req.nohz_full {
        outcomes.push(compare_effective(
            "nohz_full",
            nohz,
            &facts.kernel.isolation.nohz_full,
            "/sys/devices/system/cpu/nohz_full",
        ));
    }
    if outcomes
        .iter()
        .all(|o| o.status == zerohop_core::Status::Pass)
    {
        return vec![
            Outcome::pass(format!("isolation consistent and in effect: {shown}"))
                .evidence(CMDLINE, shown),
        ];
    }
    outcomes
}

fn compare_effective(
    key: &str,
    wanted: &CpuSet,
    effective: &zerohop_host::Fact<CpuSet>,
    path: &str,
) -> Outcome {
    match effective {
        Err(gap) => Outcome::gap(gap),
        Ok(None) => Outcome::unknown(format!(
            "{path} is absent: cannot confirm {key}= took effect"
        )),
        Ok(Some(got)) if got == wanted => Outcome::pass(format!("{key} in effect")),
        Ok(Some(got)) => Outcome::fail(format!(
            "{key}={wanted} requested but the kernel applied `{got}`"
        ))
        .evidence(CMDLINE, format!("{key}={wanted}"))
        .evidence(path, got.to_string())
        .fix(
            Remediation::new(format!(
                "check the kernel log for a rejected {key}= value and the kernel config"
            ))
            .command("dmesg | grep -i -e isol -e nohz"),
        ),
    }
}

declare_check! {
    /// Every NUMA node keeps at least one CPU for the kernel.
    ///
    /// ## What it checks
    /// For each NUMA node with CPUs (`/sys/devices/system/node/node*/cpulist`),
    /// whether all of them are isolated (`isolcpus=` domain set or
    /// `nohz_full=`, from sysfs when present, else from the command line).
    ///
    /// ## Why it matters
    /// Interrupts, kernel threads and the NIC's completion handling of a
    /// node need a housekeeping CPU on that node. With none, they run on
    /// isolated cores (disturbing the workload) or cross the socket for
    /// every packet.
    ///
    /// ## How to fix
    /// Leave at least one CPU (better two: one per SMT sibling pair) of each
    /// node out of `isolcpus`, `nohz_full` and `rcu_nocbs`, and reboot.
    ///
    /// ## Evidence
    /// `/sys/devices/system/node/node*/cpulist` and the isolated sets (sysfs,
    /// else `/proc/cmdline`). Without the NUMA directory it is `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `drivers/base/node.c` (`cpulist`), `kernel/sched/isolation.c`
    /// and `drivers/base/cpu.c` as for KRN003.
    /// Real capture: crates/zerohop-doctor/tests/corpus_foundation.rs::dgx_spark_arm_host_translates_dma
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/KRN004/warn-node-fully-isolated/`:
    ///
    /// ```text
    /// kernel
    ///   pass           KRN004  no-housekeeping-cpu  node0: housekeeping cpus 0-3
    ///   warn           KRN004  no-housekeeping-cpu  node1: every cpu of node 1 is isolated: its interrupts and kernel threads have nowhere to run
    ///                  /sys/devices/system/node/node1/cpulist = 4-7
    ///                  isolated cpus = 4-7
    ///
    /// what to fix first
    ///   1. KRN004 no-housekeeping-cpu (node1): every cpu of node 1 is isolated: its interrupts and kernel threads have nowhere to run
    ///      fix: leave at least one cpu of node 1 out of the isolation lists
    /// ```
    pub static NO_HOUSEKEEPING_CPU = {
        id: "KRN004",
        name: "no-housekeeping-cpu",
        group: Kernel,
        severity: Warning,
        requires: [],
        run: housekeeping,
    };
}

fn housekeeping(ctx: &Context<'_>) -> Vec<Outcome> {
    let facts = ctx.facts;
    let cmdline = need!(require(&facts.kernel.cmdline, || Outcome::unknown(
        "/proc/cmdline is absent"
    )));
    let req = need!(requested(cmdline));
    let effective = |fact: &zerohop_host::Fact<CpuSet>, fallback: Option<&CpuSet>| match fact {
        Ok(Some(set)) if !set.is_empty() => Some(set.clone()),
        _ => fallback.cloned(),
    };
    let isolated = effective(
        &facts.kernel.isolation.isolated,
        req.isolcpus
            .as_ref()
            .filter(|i| i.isolates_domains())
            .map(|i| &i.cpus),
    );
    let nohz = effective(&facts.kernel.isolation.nohz_full, req.nohz_full.as_ref());
    let mut all = CpuSet::default();
    for set in [isolated, nohz].into_iter().flatten() {
        all.0.extend(set.0);
    }
    if all.is_empty() {
        return vec![Outcome::not_applicable("no cpus isolated")];
    }
    let nodes = need!(require(&facts.numa, || Outcome::unknown(
        "/sys/devices/system/node is absent: numa layout unknown"
    )));
    let mut outcomes = Vec::new();
    for node in nodes {
        let cpus = match &node.cpus {
            Ok(Some(cpus)) if !cpus.is_empty() => cpus,
            Ok(_) => continue,
            Err(gap) => {
                outcomes.push(Outcome::gap(gap).subject(format!("node{}", node.id)));
                continue;
            }
        };
        let left = cpus.minus(&all);
        let path = format!("/sys/devices/system/node/node{}/cpulist", node.id);
        outcomes.push(if left.is_empty() {
            Outcome::warn(format!("every cpu of node {} is isolated: its interrupts and kernel threads have nowhere to run", node.id))
                .subject(format!("node{}", node.id))
                .evidence(path, cpus.to_string())
                .evidence("isolated cpus", all.to_string())
                .fix(Remediation::new(format!("leave at least one cpu of node {} out of the isolation lists", node.id)))
        } else {
            Outcome::pass(format!("housekeeping cpus {left}")).subject(format!("node{}", node.id))
        });
    }
    outcomes
}
