//! Every check, one module per group, and the registry slice.

pub mod io_uring;
pub mod kernel;
pub mod memory;
pub mod pcie;

use zerohop_host::Fact;

use crate::context::Outcome;
use crate::registry::Check;

/// Every check in deploy order (by group), prerequisites before the checks
/// that require them. Tests enforce both orders, unique IDs and the
/// documentation headings.
pub static CHECKS: &[&Check] = &[
    &kernel::IOMMU_MODE,
    &kernel::HUGEPAGES_1G_NOT_RESERVED,
    &kernel::CPU_ISOLATION_MISMATCH,
    &kernel::NO_HOUSEKEEPING_CPU,
    &pcie::LINK_DOWNTRAINED,
    &pcie::NUMA_NODE_UNKNOWN,
    &pcie::NOUVEAU_BOUND,
    &pcie::VF_IOMMU_GROUP_SHARED,
    &pcie::GPU_NIC_SHARED_IOMMU_GROUP,
    &memory::HUGEPAGES_MISSING_ON_NODE,
    &memory::HUGEPAGES_EXHAUSTED,
    &memory::THP_POLICY,
    &memory::MEMLOCK_TOO_LOW,
    &io_uring::IO_URING_DISABLED,
];

/// The value of a fact, or the outcome that ends the check: `unknown` with
/// the path and reason for a gap, `absent()` when the host lacks the fact.
pub(crate) fn require<'a, T>(fact: &'a Fact<T>, absent: impl FnOnce() -> Outcome) -> Result<&'a T, Outcome> {
    match fact {
        Ok(Some(value)) => Ok(value),
        Ok(None) => Err(absent()),
        Err(gap) => Err(Outcome::gap(gap)),
    }
}

/// Returns the outcome from the check when a [`require`] fails.
macro_rules! need {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(outcome) => return vec![outcome],
        }
    };
}
pub(crate) use need;

/// Formats a byte count in binary units for messages.
pub(crate) fn bytes(value: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    let mut scaled = value;
    while scaled >= 1024 && scaled % 1024 == 0 && unit + 1 < UNITS.len() {
        scaled /= 1024;
        unit += 1;
    }
    format!("{scaled} {}", UNITS[unit])
}
