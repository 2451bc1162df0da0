//! The storage data path: the NFS-over-RDMA mount options that `plan`
//! renders, `lint` checks in StorageClasses and PersistentVolumes and the
//! doctor judges in the mount table, the CSI drivers that carry them, and
//! the kubelet's layout of the volumes they mount.

/// The port NFS servers listen on for RPC-over-RDMA (RFC 8267 §6.2,
/// "nfsrdma" 20049). It is also the kernel's default for `proto=rdma` when
/// no `port=` reaches it (linux v6.12 `fs/nfs/fs_context.c`,
/// `nfs_fs_context_validate`: `port = NFS_RDMA_PORT`); `mount.nfs` for
/// NFSv3 asks the server's rpcbind for the port unless `port=` is given
/// (nfs-utils 2.6 `nfs(5)`, `port=n`).
pub const NFS_RDMA_PORT: u16 = 20049;

/// The smallest `rsize`/`wsize` that leaves an RDMA link no RPC-bound:
/// 1 MiB, the Linux client's and `nfsd`'s maximum (linux v6.12
/// `include/linux/nfs_xdr.h`, `NFS_MAX_FILE_IO_SIZE`).
pub const MIN_TRANSFER_SIZE: u64 = 1 << 20;

/// The most connections `nconnect=` opens (linux v6.12
/// `fs/nfs/internal.h`, `NFS_MAX_CONNECTIONS`).
pub const MAX_NCONNECT: u32 = 16;

/// The NFS version the plan mounts: 4.2, which needs no rpcbind, mountd or
/// lockd side channels over TCP beside the RDMA transport.
pub const NFS_VERSION: &str = "4.2";

/// The options that put an NFS mount on the RDMA data path, in the form
/// the kernel shows them back in the mount table: RPC-over-RDMA on
/// [`NFS_RDMA_PORT`], `nconnect` transports, 1 MiB transfers, `hard`. The
/// doctor's remount fix and the plan's mounts both start from it.
pub fn rdma_mount_options(nconnect: u32) -> Vec<String> {
    vec![
        "proto=rdma".to_owned(),
        format!("port={NFS_RDMA_PORT}"),
        format!("nconnect={nconnect}"),
        format!("rsize={MIN_TRANSFER_SIZE}"),
        format!("wsize={MIN_TRANSFER_SIZE}"),
        "hard".to_owned(),
    ]
}

/// What the plan mounts: `vers=`[`NFS_VERSION`] and [`rdma_mount_options`].
/// The host mount unit, the StorageClass and the PersistentVolume carry
/// exactly these.
pub fn data_path_options(nconnect: u32) -> Vec<String> {
    let mut options = vec![format!("vers={NFS_VERSION}")];
    options.extend(rdma_mount_options(nconnect));
    options
}

/// NFS mount options as `key[=value]` items, from a comma-separated option
/// string or a list of them (a StorageClass's `mountOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NfsOptions {
    items: Vec<(String, Option<String>)>,
}

impl NfsOptions {
    /// Splits each text on commas; empty items are dropped.
    pub fn parse<'a>(texts: impl IntoIterator<Item = &'a str>) -> NfsOptions {
        let items = texts
            .into_iter()
            .flat_map(|text| text.split(','))
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| match item.split_once('=') {
                Some((key, value)) => (key.trim().to_owned(), Some(value.trim().to_owned())),
                None => (item.to_owned(), None),
            })
            .collect();
        NfsOptions { items }
    }

    /// The value of the last `key=` (the one `mount.nfs` keeps).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.items
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether the flag `name` (without a value) is present.
    pub fn has(&self, name: &str) -> bool {
        self.items.iter().any(|(k, v)| k == name && v.is_none())
    }

    /// Whether the options ask for RDMA: `proto=rdma`, or the `rdma` flag
    /// `nfs(5)` documents as its synonym.
    pub fn asks_for_rdma(&self) -> bool {
        self.has("rdma") || self.get("proto") == Some("rdma")
    }

    /// How these options fall short of the data path, when they ask for
    /// RDMA; nothing for options that do not (a volume over TCP may be a
    /// home directory: only the doctor, which sees what pods read, can
    /// tell).
    pub fn shortfalls(&self) -> Vec<Shortfall> {
        if !self.asks_for_rdma() {
            return Vec::new();
        }
        let mut found = Vec::new();
        match self.get("port") {
            None => found.push(Shortfall::RdmaWithoutPort),
            Some(port) if port.parse::<u16>().ok() != Some(NFS_RDMA_PORT) => {
                found.push(Shortfall::WrongPort(port.to_owned()));
            }
            Some(_) => {}
        }
        for key in ["rsize", "wsize"] {
            if let Some(value) = self.get(key)
                && value
                    .parse::<u64>()
                    .is_ok_and(|size| size < MIN_TRANSFER_SIZE)
            {
                found.push(Shortfall::SmallTransfer {
                    option: key,
                    value: value.to_owned(),
                });
            }
        }
        if let Some(flag) = ["soft", "softerr"].into_iter().find(|f| self.has(f)) {
            found.push(Shortfall::Soft(flag));
        }
        found
    }
}

/// One way NFS-over-RDMA mount options fall short of the data path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shortfall {
    /// RDMA without `port=`: the port is left to a default (the kernel's
    /// for NFSv4, the server's rpcbind for NFSv3) instead of the one the
    /// servers listen on.
    RdmaWithoutPort,
    /// RDMA on another port than [`NFS_RDMA_PORT`].
    WrongPort(String),
    /// `rsize` or `wsize` below [`MIN_TRANSFER_SIZE`].
    SmallTransfer {
        /// `rsize` or `wsize`.
        option: &'static str,
        /// The value given.
        value: String,
    },
    /// `soft` or `softerr`: a slow server turns into I/O errors.
    Soft(&'static str),
}

impl Shortfall {
    /// A lowercase fragment that says what is wrong and why.
    pub fn message(&self) -> String {
        match self {
            Shortfall::RdmaWithoutPort => format!(
                "mount options ask for rdma without `port={NFS_RDMA_PORT}`: the port is left to a default (nfsv3 asks the server's rpcbind)"
            ),
            Shortfall::WrongPort(port) => {
                format!("nfs over rdma on port {port}, not {NFS_RDMA_PORT}")
            }
            Shortfall::SmallTransfer { option, value } => {
                format!("`{option}={value}` is below 1 MiB: rpc overhead caps throughput")
            }
            Shortfall::Soft(flag) => {
                format!("`{flag}` mount: a slow server turns into i/o errors in training jobs")
            }
        }
    }

    /// The option that repairs it.
    pub fn repair(&self) -> String {
        match self {
            Shortfall::RdmaWithoutPort | Shortfall::WrongPort(_) => {
                format!("port={NFS_RDMA_PORT}")
            }
            Shortfall::SmallTransfer { option, .. } => format!("{option}={MIN_TRANSFER_SIZE}"),
            Shortfall::Soft(_) => "hard".to_owned(),
        }
    }
}

/// The oneshot service `zerohop plan` installs on the nodes to connect the
/// NVMe-oF targets of `/etc/nvme/discovery.conf` (in place of nvme-cli's
/// `nvmf-autoconnect.service`, which would load the inbox `nvme_rdma`
/// before the DOCA driver container).
pub const NVMF_CONNECT_SERVICE: &str = "zerohop-nvmf-connect.service";

/// The path unit that starts [`NVMF_CONNECT_SERVICE`] each time the DOCA
/// driver container says it is ready.
pub const NVMF_CONNECT_PATH: &str = "zerohop-nvmf-connect.path";

/// The NFS CSI driver's name (kubernetes-csi/csi-driver-nfs@f09798c0,
/// v4.13.4, `charts/v4.13.4/csi-driver-nfs/values.yaml`, `driver.name`).
pub const NFS_CSI_DRIVER: &str = "nfs.csi.k8s.io";

/// A Helm chart the plan installs from a repository of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedChart {
    /// `helm repo add` name.
    pub repository_name: &'static str,
    /// Repository URL.
    pub repository: &'static str,
    /// Chart name.
    pub chart: &'static str,
    /// Chart version (`--version`).
    pub version: &'static str,
    /// Release name.
    pub release: &'static str,
}

/// kubernetes-csi/csi-driver-nfs v4.13.4 (tag commit f09798c0): chart
/// `charts/v4.13.4/csi-driver-nfs/Chart.yaml` `version: 4.13.4` (since
/// 4.11.0 without the `v`, `charts/README.md`), from the repository
/// `charts/README.md` names.
pub const NFS_CSI_CHART: PinnedChart = PinnedChart {
    repository_name: "csi-driver-nfs",
    repository: "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts",
    chart: "csi-driver-nfs",
    version: "4.13.4",
    release: "csi-driver-nfs",
};

/// The service accounts of the NFS CSI chart's node plugin and controller
/// (`values.yaml`, `serviceAccount.node`, `serviceAccount.controller`).
pub const NFS_CSI_SERVICE_ACCOUNTS: [&str; 2] = ["csi-nfs-node-sa", "csi-nfs-controller-sa"];

/// The NFS CSI chart's node plugin DaemonSet (`values.yaml`, `node.name`).
pub const NFS_CSI_NODE_DAEMONSET: &str = "csi-nfs-node";

/// kubernetes-sigs/sig-storage-local-static-provisioner (tag v2.9.0,
/// commit 30b98c3c): `helm/provisioner/Chart.yaml` `version: 2.8.0`, from
/// the repository `helm/README.md` names.
pub const LOCAL_VOLUME_CHART: PinnedChart = PinnedChart {
    repository_name: "sig-storage-local-static-provisioner",
    repository: "https://kubernetes-sigs.github.io/sig-storage-local-static-provisioner",
    chart: "local-static-provisioner",
    version: "2.8.0",
    release: "local-static-provisioner",
};

/// The provisioner of a StorageClass whose volumes are created by no
/// controller: statically, here by the local volume provisioner's
/// DaemonSet (Kubernetes documentation, "Storage Classes", Local).
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// CSI driver names that guides use but no project publishes, with why.
/// A StorageClass or PersistentVolume naming one provisions nothing: its
/// PVCs stay Pending ("waiting for a volume to be created, either by
/// external provisioner … or manually created by system administrator")
/// and its pods are never scheduled.
pub const UNPUBLISHED_CSI_DRIVERS: &[(&str, &str)] = &[(
    "csi.nvidia.com",
    "nvidia publishes no csi driver of that name: it is in no nvidia repository and not in the kubernetes-csi list of drivers (kubernetes-csi/docs `book/src/drivers.md`); gpudirect storage needs none, it reads through the file system's own driver",
)];

/// Why `driver` is not a CSI driver anyone can install, when it is one of
/// [`UNPUBLISHED_CSI_DRIVERS`].
pub fn unpublished_csi_driver(driver: &str) -> Option<&'static str> {
    UNPUBLISHED_CSI_DRIVERS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(driver.trim()))
        .map(|(_, why)| *why)
}

/// Local file systems GPUDirect Storage reads directly on NVMe (NVIDIA GDS
/// release notes, supported file systems: ext4 in ordered mode, XFS).
pub const GDS_LOCAL_FILE_SYSTEMS: [&str; 2] = ["xfs", "ext4"];

/// The options a local NVMe volume is mounted with for GDS: `noatime` (no
/// inode write per read of training data), and on ext4 `data=ordered`,
/// the only journal mode `nvidia-fs` reads directly. Never `nobarrier`:
/// XFS removed it in Linux 4.19 and the mount fails.
pub fn local_nvme_mount_options(fs_type: &str) -> Vec<String> {
    let mut options = vec!["noatime".to_owned()];
    if fs_type == "ext4" {
        options.push("data=ordered".to_owned());
    }
    options
}

/// Where the kubelet mounts a pod's CSI volumes:
/// `<kubelet dir>/pods/<pod uid>/volumes/kubernetes.io~csi/<volume>/mount`,
/// the volume being the PersistentVolume's name (or the pod's volume name
/// for an inline volume), and beside `mount` the `vol_data.json` it writes
/// (kubernetes v1.34 `pkg/volume/csi/csi_mounter.go`, `GetPath`,
/// `getTargetPath`; `csi_plugin.go`, `volDataFileName`).
pub const KUBELET_PODS_DIR: &str = "/var/lib/kubelet/pods";
/// The kubelet's directory of the CSI volume plugin under a pod's
/// `volumes/` (`kubernetes.io/csi`, escaped).
pub const KUBELET_CSI_PLUGIN_DIR: &str = "kubernetes.io~csi";
/// The file the kubelet writes beside each CSI volume's `mount`.
pub const KUBELET_CSI_VOLUME_DATA: &str = "vol_data.json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_path_options_have_nothing_to_repair() {
        let options = data_path_options(16);
        let parsed = NfsOptions::parse(options.iter().map(String::as_str));
        assert!(parsed.asks_for_rdma());
        assert_eq!(parsed.shortfalls(), Vec::new());
        assert_eq!(
            options.join(","),
            "vers=4.2,proto=rdma,port=20049,nconnect=16,rsize=1048576,wsize=1048576,hard"
        );
    }

    #[test]
    fn rdma_without_the_port_and_small_soft_mounts_fall_short() {
        let parsed = NfsOptions::parse(["rdma", "rsize=65536,soft", "wsize=1048576"]);
        assert_eq!(
            parsed.shortfalls(),
            vec![
                Shortfall::RdmaWithoutPort,
                Shortfall::SmallTransfer {
                    option: "rsize",
                    value: "65536".to_owned()
                },
                Shortfall::Soft("soft"),
            ]
        );
        let wrong = NfsOptions::parse(["proto=rdma,port=2049"]);
        assert_eq!(
            wrong.shortfalls(),
            vec![Shortfall::WrongPort("2049".to_owned())]
        );
        // Over TCP nothing is judged: it may not be the data path.
        assert!(
            NfsOptions::parse(["nfsvers=4.1", "soft"])
                .shortfalls()
                .is_empty()
        );
    }

    #[test]
    fn the_last_value_wins_and_unpublished_drivers_are_named() {
        let parsed = NfsOptions::parse(["port=2049", "proto=rdma,port=20049"]);
        assert_eq!(parsed.get("port"), Some("20049"));
        assert!(unpublished_csi_driver("CSI.nvidia.com").is_some());
        assert!(unpublished_csi_driver(NFS_CSI_DRIVER).is_none());
        assert_eq!(local_nvme_mount_options("xfs"), vec!["noatime"]);
    }
}
