//! Boot parameters, CPU vendor, CPU isolation, io_uring policy, memlock.

use crate::facts::{Fact, Gap, read_parsed};
use crate::parse::cmdline::Cmdline;
use crate::parse::cpuset::CpuSet;
use crate::root::HostRoot;

/// The CPU vendor, which decides the IOMMU parameter names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuVendor {
    /// `GenuineIntel`: `intel_iommu=on` is needed (the default is off on most distributions).
    Intel,
    /// `AuthenticAMD`: the IOMMU is on unless `amd_iommu=off`.
    Amd,
    /// An Arm CPU (Grace, Ampere…): `iommu.passthrough=` controls passthrough.
    Arm,
    /// An IBM POWER CPU.
    Power,
    /// Anything else, with the vendor string as read.
    Other(String),
}

impl CpuVendor {
    /// The vendor as the doctor shows it: `intel`, `amd`, `arm`, `power`,
    /// or the vendor string as read.
    pub fn name(&self) -> &str {
        match self {
            CpuVendor::Intel => "intel",
            CpuVendor::Amd => "amd",
            CpuVendor::Arm => "arm",
            CpuVendor::Power => "power",
            CpuVendor::Other(vendor) => vendor,
        }
    }
}

/// Requested and effective CPU isolation.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// `/sys/devices/system/cpu/isolated`: CPUs isolated from scheduler domains.
    pub isolated: Fact<CpuSet>,
    /// `/sys/devices/system/cpu/nohz_full`: CPUs running without the tick.
    pub nohz_full: Fact<CpuSet>,
    /// `/sys/devices/system/cpu/online`.
    pub online: Fact<CpuSet>,
}

/// The io_uring sysctls (Linux 6.6 and later).
#[derive(Debug, Clone)]
pub struct IoUring {
    /// `/proc/sys/kernel/io_uring_disabled`: 0 allowed, 1 group only, 2 off.
    pub disabled: Fact<u8>,
    /// `/proc/sys/kernel/io_uring_group`: the group allowed when disabled is 1 (-1 = none).
    pub group: Fact<i64>,
}

pub use zerohop_known::memlock::Memlock;

/// Kernel-level facts.
#[derive(Debug, Clone)]
pub struct KernelFacts {
    /// `/proc/cmdline`.
    pub cmdline: Fact<Cmdline>,
    /// From `/proc/cpuinfo`.
    pub cpu_vendor: Fact<CpuVendor>,
    /// Effective CPU isolation from sysfs.
    pub isolation: Isolation,
    /// io_uring policy.
    pub io_uring: IoUring,
    /// Entries of `/sys/class/iommu` (`dmar0`, `ivhd0`, `smmu3.0x…`): the
    /// IOMMUs the kernel enabled.
    pub iommu_units: Fact<Vec<String>>,
    /// The memlock limit of this process; `None` unless the root is live.
    pub memlock: Option<Fact<Memlock>>,
}

impl KernelFacts {
    /// Reads the kernel facts from `root`.
    pub fn collect(root: &HostRoot) -> KernelFacts {
        // Kernels print `(null)` for an empty nohz_full mask.
        let cpuset = |path| {
            read_parsed(root, path, |text: &str| {
                if text == "(null)" {
                    Ok(CpuSet::default())
                } else {
                    CpuSet::parse(text)
                }
            })
        };
        KernelFacts {
            cmdline: root
                .read("/proc/cmdline")
                .map(|text| text.map(|text| Cmdline::parse(&text)))
                .map_err(Gap::from),
            cpu_vendor: cpu_vendor(root),
            isolation: Isolation {
                isolated: empty_is_none(cpuset("/sys/devices/system/cpu/isolated")),
                nohz_full: empty_is_none(cpuset("/sys/devices/system/cpu/nohz_full")),
                online: cpuset("/sys/devices/system/cpu/online"),
            },
            io_uring: IoUring {
                disabled: read_parsed(root, "/proc/sys/kernel/io_uring_disabled", str::parse::<u8>),
                group: read_parsed(root, "/proc/sys/kernel/io_uring_group", str::parse::<i64>),
            },
            iommu_units: root.list("/sys/class/iommu").map_err(Gap::from),
            memlock: root.process_view().then(|| memlock(root)),
        }
    }
}

/// An empty `isolated` file means "nothing isolated", which reads the same
/// as the file being absent to every check.
fn empty_is_none(fact: Fact<CpuSet>) -> Fact<CpuSet> {
    match fact {
        Err(gap) if gap.reason == "file is empty" => Ok(Some(CpuSet::default())),
        other => other,
    }
}

fn cpu_vendor(root: &HostRoot) -> Fact<CpuVendor> {
    let Some(text) = root.read("/proc/cpuinfo")? else {
        return Ok(None);
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "vendor_id" => {
                return Ok(Some(match value {
                    "GenuineIntel" => CpuVendor::Intel,
                    "AuthenticAMD" | "HygonGenuine" => CpuVendor::Amd,
                    other => CpuVendor::Other(other.to_owned()),
                }));
            }
            "CPU implementer" => return Ok(Some(CpuVendor::Arm)),
            "cpu" if value.starts_with("POWER") => return Ok(Some(CpuVendor::Power)),
            _ => {}
        }
    }
    Err(Gap::malformed(
        "/proc/cpuinfo",
        "no vendor_id, CPU implementer or POWER cpu line",
    ))
}

/// The locked-memory limits of the process that reads `root`'s
/// `/proc/self` (`limits`, and `CapEff` of `status` for `CAP_IPC_LOCK`).
/// Read by [`KernelFacts::collect`] on the live host and on a snapshot of one
/// ([`HostRoot::process_view`]); public so that a
/// fixture tree can show what a process with these files gets.
pub fn memlock(root: &HostRoot) -> Fact<Memlock> {
    const LIMITS: &str = "/proc/self/limits";
    let Some(text) = root.read(LIMITS)? else {
        return Ok(None);
    };
    let (soft_bytes, hard_bytes) = zerohop_known::memlock::parse_limits(&text)
        .map_err(|reason| Gap::malformed(LIMITS, reason))?;
    // Without a readable status the capability is not assumed.
    let status = root
        .read("/proc/self/status")
        .ok()
        .flatten()
        .unwrap_or_default();
    Ok(Some(Memlock {
        soft_bytes,
        hard_bytes,
        cap_ipc_lock: zerohop_known::memlock::has_cap_ipc_lock(&status),
    }))
}
