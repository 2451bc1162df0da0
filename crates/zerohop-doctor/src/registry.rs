//! The check declaration: metadata, prerequisites and the function that judges.

use zerohop_core::RuleInfo;

use crate::context::{Context, Outcome};

/// The layers of the data path, in deploy order: the order in which a
/// cluster is brought up, and so the order in which root causes are fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// Boot parameters: IOMMU, hugepages, CPU isolation.
    Kernel,
    /// PCIe links, IOMMU groups, NUMA placement.
    Pcie,
    /// Hugepage pools, THP, locked memory.
    Memory,
    /// The RDMA stack: modules, devices, ports.
    Rdma,
    /// RoCE lossless QoS: MTU, DCQCN, RoCE mode.
    Qos,
    /// The NVIDIA driver, DMA-BUF and peer memory.
    Gpu,
    /// SR-IOV virtual functions.
    Sriov,
    /// NFS over RDMA mounts.
    Nfs,
    /// NVMe over Fabrics multipath.
    Nvme,
    /// GPUDirect Storage.
    Gds,
    /// io_uring for the workloads.
    IoUring,
    /// What the cluster intent (or a profile) asks of this node: GPUs,
    /// NIC ports, hugepages, CPU isolation, mounts and targets, each
    /// against its expected value.
    Conformance,
    /// Faults only the kernel log shows, across the layers above: judged
    /// last, since a setting that fails above explains its symptoms here.
    KernelLog,
    /// The workload pod's own view, judged from inside it (`doctor --pod`):
    /// its RDMA devices and RoCE addresses, its limits, its GPUs and the
    /// NCCL environment it starts with. Only run when asked for or when
    /// the doctor runs in a container at `/`.
    Pod,
}

impl Group {
    /// Every group in deploy order.
    pub const ALL: [Group; 14] = [
        Group::Kernel,
        Group::Pcie,
        Group::Memory,
        Group::Rdma,
        Group::Qos,
        Group::Gpu,
        Group::Sriov,
        Group::Nfs,
        Group::Nvme,
        Group::Gds,
        Group::IoUring,
        Group::Conformance,
        Group::KernelLog,
        Group::Pod,
    ];

    /// The kebab-case name used by `--only` and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Group::Kernel => "kernel",
            Group::Pcie => "pcie",
            Group::Memory => "memory",
            Group::Rdma => "rdma",
            Group::Qos => "qos",
            Group::Gpu => "gpu",
            Group::Sriov => "sriov",
            Group::Nfs => "nfs",
            Group::Nvme => "nvme",
            Group::Gds => "gds",
            Group::IoUring => "io-uring",
            Group::Conformance => "conformance",
            Group::KernelLog => "kernel-log",
            Group::Pod => "pod",
        }
    }

    /// The ID prefix of the group's checks.
    pub const fn prefix(self) -> &'static str {
        match self {
            Group::Kernel => "KRN",
            Group::Pcie => "PCI",
            Group::Memory => "MEM",
            Group::Rdma => "RDMA",
            Group::Qos => "QOS",
            Group::Gpu => "GPU",
            Group::Sriov => "SRIOV",
            Group::Nfs => "NFS",
            Group::Nvme => "NVME",
            Group::Gds => "GDS",
            Group::IoUring => "URING",
            Group::Conformance => "CONF",
            Group::KernelLog => "KLOG",
            Group::Pod => "POD",
        }
    }

    /// The group named `name` (`kernel`, `io-uring`, also `io_uring`,
    /// `kernel-log`).
    pub fn parse(name: &str) -> Option<Group> {
        let name = name.to_ascii_lowercase().replace('_', "-");
        Group::ALL.into_iter().find(|group| group.name() == name)
    }
}

/// A check: what it is (its [`RuleInfo`]), what it needs first, and how it judges.
pub struct Check {
    /// ID, name, severity and documentation.
    pub info: RuleInfo,
    /// The layer it belongs to.
    pub group: Group,
    /// Checks whose failure makes this one meaningless; it reports
    /// `blocked` when any of them fails.
    pub requires: &'static [&'static Check],
    /// Judges the facts: one outcome per subject (device, port, mount…),
    /// at least one.
    pub run: fn(&Context<'_>) -> Vec<Outcome>,
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check")
            .field("id", &self.info.id)
            .field("name", &self.info.name)
            .finish()
    }
}

/// Declares a check. The doc comment is the check's documentation and must
/// have the headings `## What it checks`, `## Why it matters`,
/// `## How to fix` and `## Example`, the last showing what a fixture of the
/// check gives (tests enforce them).
///
/// ```ignore
/// declare_check! {
///     /// One-line summary.
///     ///
///     /// ## What it checks
///     /// ...
///     pub static IOMMU_MODE = {
///         id: "KRN001",
///         name: "iommu-misconfigured",
///         group: Kernel,
///         severity: Error,
///         requires: [],
///         run: iommu_mode,
///     };
/// }
/// ```
#[macro_export]
macro_rules! declare_check {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident = {
            id: $id:literal,
            name: $name:literal,
            group: $group:ident,
            severity: $severity:ident,
            requires: [$($requires:path),* $(,)?],
            run: $run:path $(,)?
        };
    ) => {
        ::zerohop_core::declare_rule! {
            $(#[doc = $doc])*
            $vis static $ident: $crate::registry::Check = {
                id: $id,
                name: $name,
                group: $crate::registry::Group::$group.name(),
                severity: $severity,
                group: $crate::registry::Group::$group,
                requires: &[$(&$requires),*],
                run: $run,
            };
        }
    };
}
