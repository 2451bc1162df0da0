//! Boot parameters: IOMMU, 1 GiB hugepages, CPU isolation.

use std::collections::BTreeSet;

use zerohop_core::Remediation;
use zerohop_host::facts::CpuVendor;
use zerohop_host::parse::cmdline::{Cmdline, hugepage_requests};
use zerohop_host::parse::cpuset::{CpuSet, Isolcpus};

use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::join;

const CMDLINE: &str = "/proc/cmdline";
const GIB_KIB: u64 = 1 << 20;

declare_check! {
    /// The IOMMU is on for this CPU's vendor and in passthrough mode.
    ///
    /// ## What it checks
    /// Reads `/proc/cmdline` as whole tokens (the last of a repeated
    /// parameter wins) and the CPU vendor from `/proc/cpuinfo`. Intel needs
    /// `intel_iommu=on`; AMD has the IOMMU on unless `amd_iommu=off`; Arm
    /// SMMUs are on when present; `iommu=off` turns any of them off. Without
    /// a deciding parameter, a non-empty `/sys/class/iommu` shows the kernel
    /// enabled one. Passthrough is `iommu=pt` (or `iommu.passthrough=1` on
    /// Arm, `amd_iommu=pt`).
    ///
    /// ## Why it matters
    /// SR-IOV virtual functions need the IOMMU to be isolated from each
    /// other, and VFIO refuses devices without it. With the IOMMU on but not
    /// in passthrough, every DMA of the host's own drivers is translated:
    /// IOTLB misses cost RDMA and GPU peer-to-peer throughput, and some
    /// peer-to-peer transfers are blocked outright. On and `iommu=pt` gives
    /// isolation for VFs and untranslated DMA for the host.
    ///
    /// ## How to fix
    /// Add the parameters to the kernel command line and reboot:
    /// `grubby --update-kernel=ALL --args="intel_iommu=on iommu=pt"` (RHEL),
    /// or add them to `GRUB_CMDLINE_LINUX` in `/etc/default/grub` and run
    /// `update-grub` (Debian, Ubuntu). On OpenShift, add them to a
    /// `MachineConfig`'s `kernelArguments` (`zerohop plan` renders one).
    pub static IOMMU_MODE = {
        id: "KRN001",
        name: "iommu-misconfigured",
        group: Kernel,
        severity: Error,
        requires: [],
        run: iommu_mode,
    };
}

fn iommu_mode(ctx: &Context<'_>) -> Vec<Outcome> {
    let facts = ctx.facts;
    let cmdline = need!(require(&facts.kernel.cmdline, || Outcome::unknown(
        "/proc/cmdline is absent"
    )));
    let vendor = facts.kernel.cpu_vendor.as_ref().ok().cloned().flatten();
    // An absent /sys/class/iommu (a capture that left it out, a kernel
    // without IOMMU support) proves nothing either way.
    let units = match &facts.kernel.iommu_units {
        Ok(Some(units)) => Some(units.len()),
        Ok(None) | Err(_) => None,
    };
    let on = iommu_on(cmdline, vendor.as_ref(), units);
    let passthrough = passthrough(cmdline);
    let evidence = |mut outcome: Outcome| {
        let shown: Vec<String> = ["intel_iommu", "amd_iommu", "iommu", "iommu.passthrough"]
            .iter()
            .filter_map(|key| cmdline.show(key))
            .collect();
        let shown = if shown.is_empty() {
            "<no iommu parameters>".to_owned()
        } else {
            shown.join(" ")
        };
        outcome = outcome.evidence(CMDLINE, shown);
        if let Some(vendor) = &vendor {
            outcome = outcome.evidence("/proc/cpuinfo", vendor.name());
        }
        if let Some(units) = units {
            outcome = outcome.evidence("/sys/class/iommu", format!("{units} iommu units"));
        }
        outcome
    };
    let args = iommu_args(vendor.as_ref());
    let fix = |summary: &str, args: &str| {
        Remediation::new(summary)
            .command(format!("{}   # RHEL, then reboot", join(["grubby", "--update-kernel=ALL", &format!("--args={args}")])))
            .command(format!("# Debian/Ubuntu: add `{args}` to GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot"))
    };
    let outcome = match (on, passthrough) {
        (Some(true), true) => Outcome::pass("iommu on in passthrough mode"),
        (Some(true), false) => Outcome::warn("iommu on without passthrough: host dma is translated, costing rdma and peer-to-peer throughput")
            .fix(fix("add iommu=pt to the kernel command line", "iommu=pt")),
        (Some(false), _) if ctx.profile.wants_sriov(facts) => {
            Outcome::fail("iommu off while sr-iov vfs are in use: vfs are not isolated and vfio cannot take them")
                .fix(fix("turn the iommu on in passthrough mode", &args))
        }
        (Some(false), _) => Outcome::info("iommu off: fine for gpudirect storage, but sr-iov vfs and vfio need it on"),
        (None, _) => Outcome::unknown("cannot tell whether the iommu is on: no iommu parameter and /sys/class/iommu unreadable"),
    };
    vec![evidence(outcome)]
}

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
            if cmdline.has("iommu.passthrough") {
                // Only arm64 kernels take `iommu.passthrough=`.
                from_sysfs.or(Some(true))
            } else if cmdline
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

fn passthrough(cmdline: &Cmdline) -> bool {
    cmdline.value("iommu") == Some("pt")
        || cmdline.value("amd_iommu") == Some("pt")
        || matches!(
            cmdline.value("iommu.passthrough"),
            Some("1" | "on" | "y" | "Y")
        )
}

fn iommu_args(vendor: Option<&CpuVendor>) -> String {
    match vendor {
        Some(CpuVendor::Amd) => "iommu=pt".to_owned(),
        Some(CpuVendor::Arm) => "iommu.passthrough=1".to_owned(),
        _ => "intel_iommu=on iommu=pt".to_owned(),
    }
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
    let shown = ["default_hugepagesz", "hugepagesz", "hugepages"]
        .iter()
        .flat_map(|key| cmdline.values(key).map(move |v| format!("{key}={v}")))
        .collect::<Vec<_>>()
        .join(" ");
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
                let nodes = u64::try_from(facts.numa_nodes().len().max(1)).unwrap_or(1);
                Outcome::fail(format!("profile expects {per_node} 1 GiB hugepages per node but none are requested at boot"))
                    .fix(boot_fix(per_node * nodes))
            }
            None if got.unwrap_or(0) > 0 => Outcome::info(format!(
                "{} 1 GiB hugepages reserved at run time, not at boot: the pool may not survive a reboot",
                got.unwrap_or(0)
            )),
            None => Outcome::info("no 1 GiB hugepages requested").fix(boot_fix(32)),
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
