//! What the user expects of a host, beyond what every host needs.
//!
//! Every field is optional: a check with no expectation judges what the
//! host shows (SR-IOV is wanted when VFs are enabled, say) and reports
//! `info` rather than `fail` where only an expectation could decide. An
//! expectation that is given is always judged, never dropped because the
//! host seems not to need it.

use serde::Deserialize;

/// The user's expectations of the host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Profile {
    /// SR-IOV VFs are (or are not) part of the data path. Unset: wanted
    /// when any physical function has VFs enabled.
    #[serde(default)]
    pub sriov: Option<bool>,
    /// 1 GiB hugepages each NUMA node that hosts a GPU or NIC must have.
    #[serde(default)]
    pub hugepages_1g_per_node: Option<u64>,
    /// RDMA is (or is not) part of the data path. Unset: wanted when the
    /// host has an RDMA device, a Mellanox/NVIDIA network controller, an
    /// NFS mount or NVMe-oF controller over RDMA, or a loaded RDMA module.
    #[serde(default)]
    pub rdma: Option<bool>,
    /// The rate every active RDMA port must reach, in Gb/s (`400`).
    #[serde(default)]
    pub rdma_rate_gbps: Option<u32>,
    /// The MTU every RoCE netdev must have (`9000`); at least 4200 either way.
    #[serde(default)]
    pub roce_mtu: Option<u32>,
    /// The priority RoCE traffic uses, where DCQCN must be on. Unset: 3.
    #[serde(default)]
    pub roce_priority: Option<u8>,
    /// The number of VFs each RDMA physical function must have enabled.
    #[serde(default)]
    pub vfs_per_pf: Option<u32>,
    /// How GPUDirect RDMA reaches GPU memory. Unset: either path will do,
    /// judged when RDMA is part of the data path. Set to a path, it is
    /// judged on every host with an NVIDIA GPU, RDMA devices or not.
    #[serde(default)]
    pub gpudirect: Option<GpuDirect>,
    /// GPUDirect Storage is (or is not) wanted: `nvidia_fs` must be loaded.
    #[serde(default)]
    pub gds: Option<bool>,
    /// GDRCopy is (or is not) wanted: `gdrdrv` must be loaded.
    #[serde(default)]
    pub gdrcopy: Option<bool>,
    /// The data mounts (mount points or paths under them) that carry
    /// training data; each must be a mount of its own. Empty: the NFS
    /// mounts over RDMA (or asked to be in `/etc/fstab`) count as data
    /// mounts, and every NFS mount when `nfs-rdma` is true.
    #[serde(default)]
    pub mounts: Vec<String>,
    /// NFS data mounts must (or must not) use RDMA. Unset: must when
    /// declared with `mounts` or asked for in `/etc/fstab`.
    #[serde(default)]
    pub nfs_rdma: Option<bool>,
    /// The NVMe multipath I/O policy every fabric subsystem must use
    /// (`round-robin`, `queue-depth`, `numa`).
    #[serde(default)]
    pub nvme_iopolicy: Option<String>,
    /// The transport NVMe-oF controllers must use (`rdma`, `tcp`, `fc`).
    #[serde(default)]
    pub nvme_transport: Option<String>,
}

/// How GPUDirect RDMA registers GPU memory with the NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuDirect {
    /// DMA-BUF: the open kernel module on Linux 5.12 or later; no extra module.
    DmaBuf,
    /// The `nvidia_peermem` module, registered with `ib_core`.
    Peermem,
    /// GPUDirect RDMA is not used.
    None,
}

impl Profile {
    /// Whether SR-IOV VFs are part of the data path on this host.
    pub fn wants_sriov(&self, facts: &zerohop_host::Facts) -> bool {
        // Only network VFs count: NVMe drives with SR-IOV (common on
        // storage servers) say nothing about the RDMA data path.
        self.sriov.unwrap_or_else(|| {
            facts.pci.list().iter().any(|device| {
                device.is_nic() && matches!(device.sriov, Ok(Some(sriov)) if sriov.num_vfs > 0)
            })
        })
    }
}
