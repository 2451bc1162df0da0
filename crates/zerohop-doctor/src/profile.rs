//! What the user expects of a host, beyond what every host needs.
//!
//! Every field is optional: a check with no expectation judges what the
//! host shows (SR-IOV is wanted when VFs are enabled, say) and reports
//! `info` rather than `fail` where only an expectation could decide. An
//! expectation that is given is always judged, never dropped because the
//! host seems not to need it.

use std::path::Path;

use serde::Deserialize;
use zerohop_input::{Follow, NotRegular, os_reason, read_regular};

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
    /// The NVIDIA GPUs the host must have.
    #[serde(default)]
    pub gpus: Option<GpuExpectation>,
    /// The RDMA NIC ports (physical functions) the host must have, each
    /// with what it must show. When every one is found on the host, the
    /// NIC checks judge these and report the host's other NICs as `info`.
    #[serde(default)]
    pub nics: Vec<NicExpectation>,
    /// The hugepage pool reserved at boot.
    #[serde(default)]
    pub hugepages: Option<HugepagesExpectation>,
    /// The CPUs isolated for workloads and kept for the system.
    #[serde(default)]
    pub cpus: Option<CpuExpectation>,
    /// The NFS mounts the host must have, with their options.
    #[serde(default)]
    pub nfs_mounts: Vec<NfsExpectation>,
    /// The NVMe-oF targets the host must be connected to.
    #[serde(default)]
    pub nvme_targets: Vec<NvmeTargetExpectation>,
}

/// The largest profile file read.
const MAX_PROFILE_BYTES: usize = 1 << 20;

impl Profile {
    /// Reads expectations from a YAML (or JSON) file whose keys are the
    /// doctor's `--expect-*` settings (`rdma: true`, `roce-mtu: 9000`): the
    /// `--profile` of `zerohop doctor` and of `zerohop agent`. The message
    /// of an error names the file.
    pub fn load(path: &Path) -> Result<Profile, String> {
        let shown = path.display();
        let bytes =
            read_regular(path, Follow::Links, MAX_PROFILE_BYTES).map_err(|err| match err {
                NotRegular::Kind(kind) => format!("--profile {shown}: {kind}, not a regular file"),
                NotRegular::Io(err) => format!("--profile {shown}: {}", os_reason(&err)),
            })?;
        if bytes.len() > MAX_PROFILE_BYTES {
            return Err(format!("--profile {shown}: larger than 1 MiB"));
        }
        let text =
            String::from_utf8(bytes).map_err(|_| format!("--profile {shown}: not UTF-8 text"))?;
        serde_saphyr::from_str(&text).map_err(|err| format!("--profile {shown}: {err}"))
    }

    /// These expectations over `base`: a value set here wins, and a
    /// host-wide value (`roce-mtu`, `vfs-per-pf`, `rdma-rate-gbps`) holds
    /// every port `base` lists to it. The command line's flags go over a
    /// profile file, which goes over what the cluster intent expects.
    pub fn over(self, mut base: Profile) -> Profile {
        let flags = self;
        // A host-wide flag holds every port of the intent to its value.
        for nic in &mut base.nics {
            nic.mtu = flags.roce_mtu.or(nic.mtu);
            nic.vfs = flags.vfs_per_pf.or(nic.vfs);
            nic.rate_gbps = flags.rdma_rate_gbps.or(nic.rate_gbps);
        }
        Profile {
            sriov: flags.sriov.or(base.sriov),
            hugepages_1g_per_node: flags.hugepages_1g_per_node.or(base.hugepages_1g_per_node),
            rdma: flags.rdma.or(base.rdma),
            rdma_rate_gbps: flags.rdma_rate_gbps.or(base.rdma_rate_gbps),
            roce_mtu: flags.roce_mtu.or(base.roce_mtu),
            roce_priority: flags.roce_priority.or(base.roce_priority),
            vfs_per_pf: flags.vfs_per_pf.or(base.vfs_per_pf),
            gpudirect: flags.gpudirect.or(base.gpudirect),
            gds: flags.gds.or(base.gds),
            gdrcopy: flags.gdrcopy.or(base.gdrcopy),
            mounts: if flags.mounts.is_empty() {
                base.mounts
            } else {
                flags.mounts
            },
            nfs_rdma: flags.nfs_rdma.or(base.nfs_rdma),
            nvme_iopolicy: flags.nvme_iopolicy.or(base.nvme_iopolicy),
            nvme_transport: flags.nvme_transport.or(base.nvme_transport),
            gpus: flags.gpus.or(base.gpus),
            nics: if flags.nics.is_empty() {
                base.nics
            } else {
                flags.nics
            },
            hugepages: flags.hugepages.or(base.hugepages),
            cpus: flags.cpus.or(base.cpus),
            nfs_mounts: if flags.nfs_mounts.is_empty() {
                base.nfs_mounts
            } else {
                flags.nfs_mounts
            },
            nvme_targets: if flags.nvme_targets.is_empty() {
                base.nvme_targets
            } else {
                flags.nvme_targets
            },
        }
    }
}

/// How many NVIDIA GPUs the host must have.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GpuExpectation {
    /// The count of NVIDIA GPU functions (physical, not VFs).
    pub count: u32,
    /// Where the expectation was written (`cluster.yaml:14`), for messages.
    #[serde(default)]
    pub from: Option<String>,
}

/// One RDMA NIC port the host must have, named by its PF netdev, its RDMA
/// device, or both; every other field is judged only when given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NicExpectation {
    /// The PF's netdev name (`ens1f0np0`).
    #[serde(default)]
    pub pf: Option<String>,
    /// The PF's RDMA device name (`mlx5_0`).
    #[serde(default)]
    pub rdma_device: Option<String>,
    /// The VFs the PF must have enabled (`sriov_numvfs`).
    #[serde(default)]
    pub vfs: Option<u32>,
    /// The PF netdev's MTU.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// The link layer of the RDMA port.
    #[serde(default)]
    pub link_type: Option<LinkType>,
    /// The rate the RDMA port must reach, in Gb/s.
    #[serde(default)]
    pub rate_gbps: Option<u32>,
    /// Where the expectation was written, for messages.
    #[serde(default)]
    pub from: Option<String>,
}

impl NicExpectation {
    /// How messages name the NIC: `ens1f0np0 (mlx5_0)`, or whichever name
    /// is given.
    pub fn name(&self) -> String {
        match (&self.pf, &self.rdma_device) {
            (Some(pf), Some(dev)) => format!("{pf} ({dev})"),
            (Some(name), None) | (None, Some(name)) => name.clone(),
            (None, None) => "<unnamed nic>".to_owned(),
        }
    }
}

/// The link layer of an RDMA port, as the intent spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum LinkType {
    /// Ethernet (RoCE v2).
    #[serde(rename = "ETH", alias = "eth")]
    Ethernet,
    /// InfiniBand.
    #[serde(rename = "IB", alias = "ib")]
    InfiniBand,
}

impl LinkType {
    /// The name the kernel's `link_layer` file uses.
    pub fn sysfs_name(self) -> &'static str {
        match self {
            LinkType::Ethernet => "Ethernet",
            LinkType::InfiniBand => "InfiniBand",
        }
    }
}

/// The hugepage pool the host must reserve at boot.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HugepagesExpectation {
    /// The page size in KiB (1048576 for 1 GiB, 2048 for 2 MiB).
    pub size_kib: u64,
    /// The pages of the whole host, spread by the kernel over the NUMA
    /// nodes with memory.
    pub pages: u64,
    /// Where the expectation was written, for messages.
    #[serde(default)]
    pub from: Option<String>,
}

/// The CPUs the host must isolate and keep, as cpuset lists (`4-55,60-111`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CpuExpectation {
    /// The CPUs `isolcpus=`, `nohz_full=` and `rcu_nocbs=` must each name.
    #[serde(default)]
    pub isolated: Option<String>,
    /// Where `isolated` was written.
    #[serde(default)]
    pub isolated_from: Option<String>,
    /// The CPUs kept for the system and the kubelet: they must exist and
    /// not be isolated.
    #[serde(default)]
    pub reserved: Option<String>,
    /// Where `reserved` was written.
    #[serde(default)]
    pub reserved_from: Option<String>,
}

/// An NFS mount the host must have.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NfsExpectation {
    /// The mount point (`/mnt/ai-data`).
    pub mount_point: String,
    /// The source, `server:/export`, when it matters.
    #[serde(default)]
    pub source: Option<String>,
    /// Options the mount must show: `key=value` for a value, `key` for a
    /// flag (`proto=rdma`, `nconnect=16`, `hard`).
    #[serde(default)]
    pub options: Vec<String>,
    /// Where the expectation was written, for messages.
    #[serde(default)]
    pub from: Option<String>,
}

/// An NVMe-oF target the host must have a live controller to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NvmeTargetExpectation {
    /// The target's address (`traddr`).
    pub address: String,
    /// The transport (`rdma`, `tcp`, `fc`).
    #[serde(default)]
    pub transport: Option<String>,
    /// Where the expectation was written, for messages.
    #[serde(default)]
    pub from: Option<String>,
}

/// ` (cluster.yaml:14)` for an expectation written at that place, empty
/// for one given on the command line.
pub fn cite(from: Option<&String>) -> String {
    from.map(|place| format!(" ({place})")).unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn a_profile_is_read_with_the_doctor_settings_as_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.yaml");
        fs::write(&path, "rdma: true\nroce-mtu: 9000\nmounts: [/mnt/data]\n").unwrap();
        let profile = Profile::load(&path).unwrap();
        assert_eq!(profile.rdma, Some(true));
        assert_eq!(profile.roce_mtu, Some(9000));
        assert_eq!(profile.mounts, ["/mnt/data"]);
        fs::write(&path, "rdma: true\nroce-mtuu: 9000\n").unwrap();
        let err = Profile::load(&path).unwrap_err();
        assert!(err.contains("roce-mtuu"), "{err}");
        assert!(
            Profile::load(dir.path())
                .unwrap_err()
                .contains("not a regular file")
        );
    }

    #[test]
    fn values_set_win_and_a_host_wide_value_holds_every_port() {
        let base = Profile {
            rdma: Some(false),
            gds: Some(true),
            nics: vec![NicExpectation {
                mtu: Some(4200),
                ..NicExpectation::default()
            }],
            mounts: vec!["/data".to_owned()],
            ..Profile::default()
        };
        let over = Profile {
            rdma: Some(true),
            roce_mtu: Some(9000),
            ..Profile::default()
        };
        let merged = over.over(base);
        assert_eq!(merged.rdma, Some(true));
        assert_eq!(merged.gds, Some(true));
        assert_eq!(merged.roce_mtu, Some(9000));
        assert_eq!(merged.nics[0].mtu, Some(9000));
        assert_eq!(merged.mounts, ["/data"]);
    }
}
