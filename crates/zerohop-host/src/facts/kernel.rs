//! Boot parameters, CPU vendor, kernel release and uptime, IOMMU domain
//! types, CPU isolation, io_uring policy, memlock.

use std::collections::BTreeMap;

use crate::facts::{Fact, Gap, GapKind, clip, read_parsed};
use crate::parse::cmdline::Cmdline;
use crate::parse::cpuset::CpuSet;
use crate::parse::nvidia::kernel_version;
use crate::root::HostRoot;

/// The running kernel's release, as `uname -r` prints it.
pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
/// The kernel's banner (`Linux version 6.17.0-1014-nvidia (buildd@…) …`),
/// read for the release when `/proc/sys` was not captured.
pub const PROC_VERSION: &str = "/proc/version";
/// Seconds since boot, then idle seconds.
pub const UPTIME: &str = "/proc/uptime";
/// The IOMMU groups; each has a `type` file (Linux 5.11 and later).
pub const IOMMU_GROUPS: &str = "/sys/kernel/iommu_groups";

/// The most IOMMU groups whose `type` is read: real hosts have a few
/// hundred, one per isolated function.
const MAX_IOMMU_GROUPS: usize = 4096;

/// The running kernel's release and where it was read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KernelRelease {
    /// `6.8.0-45-generic`.
    pub text: String,
    /// [`OSRELEASE`] or [`PROC_VERSION`].
    pub source: &'static str,
    /// Major and minor (`(6, 8)`), when the release starts with them.
    pub version: Option<(u32, u32)>,
}

impl KernelRelease {
    /// Whether the release is known to be older than `major.minor`;
    /// `None` when its numbers could not be read.
    pub fn older_than(&self, major: u32, minor: u32) -> Option<bool> {
        self.version.map(|version| version < (major, minor))
    }
}

/// The CPU vendor, which decides the IOMMU parameter names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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
#[derive(Debug, Clone, serde::Serialize)]
pub struct Isolation {
    /// `/sys/devices/system/cpu/isolated`: CPUs isolated from scheduler domains.
    pub isolated: Fact<CpuSet>,
    /// `/sys/devices/system/cpu/nohz_full`: CPUs running without the tick.
    pub nohz_full: Fact<CpuSet>,
    /// `/sys/devices/system/cpu/online`.
    pub online: Fact<CpuSet>,
}

/// The io_uring sysctls (Linux 6.6 and later).
#[derive(Debug, Clone, serde::Serialize)]
pub struct IoUring {
    /// `/proc/sys/kernel/io_uring_disabled`: 0 allowed, 1 group only, 2 off.
    pub disabled: Fact<u8>,
    /// `/proc/sys/kernel/io_uring_group`: the group allowed when disabled is 1 (-1 = none).
    pub group: Fact<i64>,
}

pub use zerohop_known::memlock::Memlock;

/// Kernel-level facts.
#[derive(Debug, Clone, serde::Serialize)]
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
    /// The memlock limit of the reading process; `None` unless the root's
    /// `/proc/self` is that process ([`Process::reads_own_limits`]).
    ///
    /// [`Process::reads_own_limits`]: crate::process::Process::reads_own_limits
    pub memlock: Option<Fact<Memlock>>,
    /// The running kernel's release, from [`OSRELEASE`] or [`PROC_VERSION`].
    pub release: Fact<KernelRelease>,
    /// Whole seconds since boot, from [`UPTIME`].
    pub uptime_seconds: Fact<u64>,
    /// The default domain type of each IOMMU group
    /// (`/sys/kernel/iommu_groups/<g>/type`): `identity` (DMA passes
    /// through untranslated), `DMA` or `DMA-FQ` (translated), `unmanaged`
    /// (owned by VFIO or another user), `blocked`. `Ok(None)` when the
    /// directory is absent; groups without a `type` file (kernels before
    /// 5.11) are left out.
    pub iommu_group_types: Fact<BTreeMap<u32, String>>,
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
            memlock: root.process().reads_own_limits().then(|| memlock(root)),
            release: release(root),
            uptime_seconds: read_parsed(root, UPTIME, parse_uptime),
            iommu_group_types: iommu_group_types(root),
        }
    }
}

fn release(root: &HostRoot) -> Fact<KernelRelease> {
    if let Some(text) = root.read_value(OSRELEASE)?.filter(|t| !t.is_empty()) {
        return Ok(Some(KernelRelease {
            version: kernel_version(&text),
            text,
            source: OSRELEASE,
        }));
    }
    let Some(banner) = root.read_value(PROC_VERSION)? else {
        return Ok(None);
    };
    let text = release_of_banner(&banner).ok_or_else(|| {
        Gap::malformed(
            PROC_VERSION,
            format!("no `Linux version <release>` in `{}`", clip(&banner)),
        )
    })?;
    Ok(Some(KernelRelease {
        version: kernel_version(text),
        text: text.to_owned(),
        source: PROC_VERSION,
    }))
}

/// The release in the kernel's banner: the word after `Linux version`.
pub fn release_of_banner(banner: &str) -> Option<&str> {
    banner
        .trim_start()
        .strip_prefix("Linux version ")?
        .split_whitespace()
        .next()
}

/// The whole seconds of `/proc/uptime`'s first field (`350735.47 234388.90`).
pub fn parse_uptime(text: &str) -> Result<u64, String> {
    let first = text.split_whitespace().next().unwrap_or("");
    let whole = first.split('.').next().unwrap_or("");
    whole
        .parse::<u64>()
        .map_err(|_| "expected seconds since boot".to_owned())
}

fn iommu_group_types(root: &HostRoot) -> Fact<BTreeMap<u32, String>> {
    let Some(names) = root.list(IOMMU_GROUPS)? else {
        return Ok(None);
    };
    let mut types = BTreeMap::new();
    for (group, name) in names
        .iter()
        .filter_map(|name| name.parse::<u32>().ok().map(|group| (group, name)))
        .take(MAX_IOMMU_GROUPS)
    {
        if let Some(kind) = root
            .read_value(&format!("{IOMMU_GROUPS}/{name}/type"))?
            .filter(|kind| !kind.is_empty())
        {
            types.insert(group, kind);
        }
    }
    Ok(Some(types))
}

/// An empty `isolated` file means "nothing isolated", which reads the same
/// as the file being absent to every check.
fn empty_is_none(fact: Fact<CpuSet>) -> Fact<CpuSet> {
    match fact {
        Err(gap) if gap.kind == GapKind::Empty => Ok(Some(CpuSet::default())),
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
/// ([`Process::reads_own_limits`]); public so that a
/// fixture tree can show what a process with these files gets.
///
/// [`Process::reads_own_limits`]: crate::process::Process::reads_own_limits
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn any_banner_or_uptime_parses_without_panic(text in "(?s).{0,80}") {
            let _ = release_of_banner(&text);
            let _ = parse_uptime(&text);
        }
    }

    #[test]
    fn banners_and_uptimes() {
        assert_eq!(
            release_of_banner(
                "Linux version 6.17.0-1014-nvidia (buildd@bos03-arm64-009) (gcc 13.3.0) #14-Ubuntu SMP"
            ),
            Some("6.17.0-1014-nvidia")
        );
        assert_eq!(release_of_banner("Darwin 23.0"), None);
        assert_eq!(parse_uptime("350735.47 234388.90\n"), Ok(350_735));
        assert!(parse_uptime("soon").is_err());
    }
}
