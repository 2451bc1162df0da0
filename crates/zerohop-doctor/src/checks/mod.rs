//! Every check, one module per group, and the registry slice.

pub mod conformance;
pub mod gds;
pub mod gpu;
pub mod io_uring;
pub mod io_uring_probe;
pub mod kernel;
pub mod kernel_log;
pub mod memory;
pub mod nfs;
pub mod nvme;
pub mod pcie;
pub mod pod;
pub mod qos;
pub mod rdma;
pub mod rdma_counters;
pub mod sriov;

use zerohop_host::Fact;

use crate::context::{Context, Outcome};
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
    &rdma::MODULE_CHAIN,
    &rdma::ABI_MISSING,
    &rdma::DEVICE_NODES,
    &rdma::PORT_DOWN,
    &rdma::PORT_RATE,
    &rdma::NETDEV_NO_CARRIER,
    &rdma::ROCE_V2_GID,
    &rdma_counters::PORT_ERRORS_COUNTED,
    &qos::MTU_TOO_SMALL,
    &qos::MTU_INCONSISTENT,
    &qos::DCQCN_DISABLED,
    &qos::ROCE_MODE,
    &gpu::DRIVER_MISSING,
    &gpu::PROPRIETARY_MODULE,
    &gpu::GPUDIRECT_PATH,
    &gpu::GDS_MODULES,
    &gpu::GPU_NIC_DISTANCE,
    &sriov::NOT_CAPABLE,
    &sriov::VF_COUNT,
    &sriov::VF_NOT_RDMA,
    &sriov::VF_POOL_SMALL,
    &sriov::NETNS_MODE,
    &nfs::DATA_MOUNT_MISSING,
    &nfs::NFS_NOT_RDMA,
    &nfs::NFS_RDMA_PORT_CHECK,
    &nfs::NFS_NCONNECT,
    &nfs::NFS_IO_SIZE,
    &nfs::RPCRDMA_MISSING,
    &nfs::NFS_SOFT,
    &nvme::NATIVE_MULTIPATH,
    &nvme::NO_OPTIMIZED_PATH,
    &nvme::PATH_DEGRADED,
    &nvme::IOPOLICY,
    &nvme::TRANSPORT,
    &nvme::DM_UNDER_GDS,
    &gds::GDS_WITHOUT_GPU,
    &gds::CUFILE_INVALID,
    &gds::CUFILE_UNKNOWN_KEYS,
    &gds::FORCE_COMPAT,
    &gds::RDMA_ADDRESSES,
    &gds::GDS_FILESYSTEM,
    &gds::ODIRECT,
    &io_uring::IO_URING_DISABLED,
    &io_uring_probe::IO_URING_PROBE,
    &conformance::GPU_COUNT,
    &conformance::NIC_CONFORMANCE,
    &conformance::HUGEPAGES_CONFORMANCE,
    &conformance::CPU_ISOLATION_CONFORMANCE,
    &conformance::NFS_MOUNT_CONFORMANCE,
    &conformance::NVME_TARGET_CONFORMANCE,
    &kernel_log::PEERMEM_ERRORS,
    &kernel_log::LINK_FLAPS,
    &kernel_log::NFS_NOT_RESPONDING,
    &kernel_log::NVIDIA_FS_ERRORS,
    &kernel_log::PCIE_AER_ERRORS,
    &kernel_log::GPU_XID_ERRORS,
    &pod::devices::RDMA_DEVICES,
    &pod::roce::ROCE_ADDRESSING,
    &pod::limits::LIMITS_CHECK,
    &pod::gpus::GPU_PAIRING,
    &pod::nccl_env::NCCL_ENVIRONMENT,
];

/// The value of a fact, or the outcome that ends the check: `unknown` with
/// the path and reason for a gap, `absent()` when the host lacks the fact.
/// (Boxed: an outcome is large and most calls succeed.)
pub(crate) fn require<T>(
    fact: &Fact<T>,
    absent: impl FnOnce() -> Outcome,
) -> Result<&T, Box<Outcome>> {
    match fact {
        Ok(Some(value)) => Ok(value),
        Ok(None) => Err(Box::new(absent())),
        Err(gap) => Err(Box::new(Outcome::gap(gap))),
    }
}

/// The outcome for a file the host root does not hold: on the live host
/// the kernel does not create it, so `lacks` (what that means) is
/// `not-applicable`; in a capture it may just not have been captured, which
/// is `unknown` and says both.
pub(crate) fn absent(ctx: &Context<'_>, path: &str, lacks: &str) -> Outcome {
    if ctx.facts.live {
        Outcome::not_applicable(lacks.to_owned()).evidence(path, "<missing>")
    } else {
        Outcome::unknown(format!(
            "cannot tell: {path} is not in the capture (not captured, or {lacks})"
        ))
        .evidence(path, "<missing>")
    }
}

/// Returns the outcome from the check when a [`require`] (or another
/// `Result<_, Box<Outcome>>`) fails.
macro_rules! need {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(outcome) => return vec![*outcome],
        }
    };
}
pub(crate) use need;

/// Formats a byte count in binary units for messages.
pub(crate) fn bytes(value: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    let mut scaled = value;
    while scaled >= 1024 && scaled.is_multiple_of(1024) && unit + 1 < UNITS.len() {
        scaled /= 1024;
        unit += 1;
    }
    format!("{scaled} {}", UNITS[unit])
}
