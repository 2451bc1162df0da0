//! The storage data path: NFS over RDMA, NVMe-oF targets, local NVMe
//! volumes, GDS.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::Checker;
use super::values::{MALFORMED_ADDRESS, MALFORMED_PATH, VALUE_OUT_OF_RANGE};
use crate::grammar;
use crate::intent::{LocalNvme, NfsRdma, NfsVia, Storage};
use crate::plan::{LocalNvmePlan, NfsMount, NfsPlan, PoolPlan, RailPlan};
use crate::rule::declare_intent_rule;

declare_intent_rule! {
    /// NVMe over Fabrics together with NFS over RDMA, or GPUDirect Storage with NVMe over Fabrics.
    ///
    /// ## What it checks
    /// `spec.storage` with both `nvmeOf` and `nfsRdma`, and with `gds:
    /// true` beside `nvmeOf`.
    ///
    /// ## Why it matters
    /// With NFS over RDMA the DOCA driver container is started with
    /// `ENABLE_NFSRDMA`, and it fails while NVMe modules are loaded, a
    /// known issue of the Network Operator (Mellanox/network-operator-docs
    /// `docs/release-notes.rst`: blacklist NVMe or leave `ENABLE_NFSRDMA`
    /// false): a node that also mounts NVMe-oF over RDMA keeps the inbox
    /// driver. And with the DOCA driver "in context of GDS only GDS with
    /// NFS over RDMA is supported. … NVME over RDMA cannot be used"
    /// (`docs/advanced/doca-drivers.rst`), so `gds` with NVMe-oF would set
    /// up GPUDirect Storage for a path that cannot carry it.
    ///
    /// ## How to fix
    /// Use one storage path per node: NFS over RDMA (with `gds` if wanted)
    /// or NVMe-oF.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP040/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   storage:
    ///     nfsRdma:
    ///       server: 10.10.0.10
    ///       export: /export/ai-data
    ///       mountPoint: /mnt/ai-data
    ///       nic: ens2f0np0
    ///     nvmeOf:
    ///       targets:
    ///         - {address: 10.10.0.20}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:24:7: nvme-of together with nfs over rdma [ZP040]
    ///   help: the doca driver container fails with ENABLE_NFSRDMA while nvme rdma modules are loaded; use one storage path per node
    /// ```
    pub(crate) static CONFLICTING_STORAGE_PATHS = {
        id: "ZP040",
        name: "conflicting-storage-paths",
        severity: Error,
    };
}

declare_intent_rule! {
    /// NFS over RDMA names a NIC that no pool has, or one whose network is tagged with a VLAN.
    ///
    /// ## What it checks
    /// `spec.storage.nfsRdma.nic` against the PFs of every pool: it must be
    /// one of them, and its rail must have no `vlan`.
    ///
    /// ## Why it matters
    /// The mount runs in the host's network namespace over that PF, and
    /// the plan configures its RoCE QoS by that name. A name no pool has
    /// is a port the plan knows nothing of; a VLAN is what the rail's
    /// SR-IOV network gives the VFs of pods, not the PF itself, so the host
    /// would reach the server untagged on a network that expects tags.
    ///
    /// ## How to fix
    /// Name the PF whose network reaches the NFS server, and serve NFS over
    /// RDMA on an untagged network (remove its `vlan`), or give the storage
    /// network a PF of its own.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP041/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   storage:
    ///     nfsRdma:
    ///       nic: ens9f0np0
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:22:12: nic "ens9f0np0" is not a pf of any pool [ZP041]
    ///   help: name the pf whose network reaches the nfs server
    /// ```
    pub(crate) static UNUSABLE_NFS_NIC = {
        id: "ZP041",
        name: "unusable-nfs-nic",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A CSI driver name that no driver has: malformed, or one that guides use and no project publishes.
    ///
    /// ## What it checks
    /// `spec.storage.localNvme.provisioner`: a CSI driver name is at most
    /// 63 characters, alphanumerics with `-` and `.` between (the CSI
    /// specification, `GetPluginInfoResponse.name`), and not one of the
    /// names guides give that no project publishes: `csi.nvidia.com`
    /// (`zerohop_known::storage::UNPUBLISHED_CSI_DRIVERS`, checked against
    /// the kubernetes-csi list of drivers, kubernetes-csi/docs@883ce07b
    /// `book/src/drivers.md`, and NVIDIA's repositories).
    ///
    /// ## Why it matters
    /// A StorageClass whose provisioner no controller serves provisions
    /// nothing: every claim of it stays `Pending`, and every pod that mounts
    /// one is never scheduled, with no error but an event on the claim.
    ///
    /// ## How to fix
    /// Leave `provisioner` out, so that the local volume provisioner
    /// (kubernetes-sigs/sig-storage-local-static-provisioner) serves the
    /// disks under `hostDir`, or name the CSI driver your storage vendor
    /// ships, as `kubectl get csidrivers` lists it.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP042/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   storage:
    ///     localNvme:
    ///       provisioner: csi.nvidia.com
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:20:20: csi driver "csi.nvidia.com" does not exist: nvidia publishes no csi driver of that name: it is in no nvidia repository and not in the kubernetes-csi list of drivers (kubernetes-csi/docs `book/src/drivers.md`); gpudirect storage needs none, it reads through the file system's own driver [ZP042]
    ///   help: leave provisioner out for the local volume provisioner, or name the csi driver your storage vendor ships (kubectl get csidrivers)
    /// ```
    pub(crate) static UNUSABLE_CSI_DRIVER = {
        id: "ZP042",
        name: "unusable-csi-driver",
        severity: Error,
    };
}

declare_intent_rule! {
    /// NFS mounted on the hosts without a mount point.
    ///
    /// ## What it checks
    /// `spec.storage.nfsRdma` with `via: host` (the default) and no
    /// `mountPoint`.
    ///
    /// ## Why it matters
    /// The host mount is a systemd mount unit, named after its mount
    /// point, and the workload reaches it through a `hostPath` of that
    /// directory: without one there is nothing to mount or to hand to pods.
    /// Only with `via: csi` does the kubelet choose the mount point, per pod.
    ///
    /// ## How to fix
    /// Give `mountPoint` (e.g. `/mnt/ai-data`), or mount through the NFS CSI
    /// driver with `via: csi`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP043/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   storage:
    ///     nfsRdma:
    ///       server: 10.10.0.10
    ///       export: /export/ai-data
    ///       nic: ens2f0np0
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:19:15: nfs over rdma mounted on the hosts without a mountPoint [ZP043]
    ///   help: give mountPoint (e.g. /mnt/ai-data), or set via: csi to mount through the nfs csi driver
    /// ```
    pub(crate) static NFS_MOUNT_POINT_MISSING = {
        id: "ZP043",
        name: "nfs-mount-point-missing",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A mount point that nothing would use.
    ///
    /// ## What it checks
    /// `spec.storage.nfsRdma` with `via: csi` and a `mountPoint`.
    ///
    /// ## Why it matters
    /// Through the NFS CSI driver the kubelet mounts the export under its
    /// own directory for each pod that claims it, and the workload's
    /// container sees it at `/data`; no host mount is rendered, so the
    /// given mount point would be silently ignored while the user expects
    /// the export there.
    ///
    /// ## How to fix
    /// Remove `mountPoint`, or mount on the hosts with `via: host` (the
    /// default) if the export must appear at that path on every node.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP044/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   storage:
    ///     nfsRdma:
    ///       server: 10.10.0.10
    ///       export: /export/ai-data
    ///       mountPoint: /mnt/ai-data
    ///       nic: ens2f0np0
    ///       via: csi
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:21:19: mountPoint "/mnt/ai-data" is not used with via: csi: the kubelet mounts the export for each pod, which sees it at /data [ZP044]
    ///   help: remove mountPoint, or set via: host to mount the export at that path on every node
    /// ```
    pub(crate) static UNUSED_MOUNT_POINT = {
        id: "ZP044",
        name: "unused-mount-point",
        severity: Error,
    };
}

/// The storage part of the plan, checked.
pub(super) struct StoragePlan {
    pub(super) nfs: Option<NfsPlan>,
    pub(super) nvme_targets: Vec<(IpAddr, u16)>,
    pub(super) gds: bool,
    pub(super) local_nvme: Option<LocalNvmePlan>,
}

/// Checks the storage section; `all_pfs` maps every PF of every pool to
/// whether its network has a VLAN.
pub(super) fn storage(
    c: &mut Checker,
    storage: Storage,
    all_pfs: &BTreeMap<String, bool>,
) -> StoragePlan {
    if let (Some(nvme), Some(_)) = (&storage.nvme_of, &storage.nfs_rdma) {
        c.error(&CONFLICTING_STORAGE_PATHS, &nvme.referenced, "nvme-of together with nfs over rdma", "the doca driver container fails with ENABLE_NFSRDMA while nvme rdma modules are loaded; use one storage path per node");
    }
    let gds = storage.gds.as_ref().is_some_and(|g| g.value);
    if let (Some(gds_flag), true, Some(_)) = (&storage.gds, gds, &storage.nvme_of) {
        c.error(
            &CONFLICTING_STORAGE_PATHS,
            &gds_flag.referenced,
            "gds with nvme-of",
            "with the network operator's doca driver, gds is supported only with nfs over rdma",
        );
    }
    let nfs = storage.nfs_rdma.and_then(|nfs| nfs_rdma(c, nfs, all_pfs));
    let local_nvme = storage.local_nvme.and_then(|local| local_nvme(c, local));
    let mut nvme_targets = Vec::new();
    for target in storage.nvme_of.map(|n| n.value.targets).unwrap_or_default() {
        // Written into /etc/nvme/discovery.conf, whose lines nvme-cli
        // splits into arguments: an RDMA target is an IP address.
        let address = c.grammar(
            &MALFORMED_ADDRESS,
            &target.address,
            "nvme-of target",
            grammar::ip_address,
            "give the target's ip address on the storage network",
        );
        if target.port.value == 0 {
            c.error(
                &VALUE_OUT_OF_RANGE,
                &target.port.referenced,
                "port 0 is not a port",
                "leave port out for 4420, the nvme-of port",
            );
        }
        if let Some(address) = address {
            nvme_targets.push((address, target.port.value));
        }
    }
    StoragePlan {
        nfs,
        nvme_targets,
        gds,
        local_nvme,
    }
}

fn local_nvme(c: &mut Checker, local: LocalNvme) -> Option<LocalNvmePlan> {
    use zerohop_known::storage::{GDS_LOCAL_FILE_SYSTEMS, unpublished_csi_driver};
    // The directory reaches the provisioner's values and its README check.
    let host_dir = c.grammar(
        &MALFORMED_PATH,
        &local.host_dir,
        "host directory",
        |dir| match grammar::absolute_path(dir)? {
            root if root == "/" => Err("is the root directory".to_owned()),
            dir => Ok(dir),
        },
        "use an absolute directory such as /mnt/local-nvme",
    );
    let fs_type = local.fs_type.value.to_ascii_lowercase();
    let fs_ok = GDS_LOCAL_FILE_SYSTEMS.contains(&fs_type.as_str());
    if !fs_ok {
        c.error(
            &VALUE_OUT_OF_RANGE,
            &local.fs_type.referenced,
            format!(
                "fsType {:?} is not a file system gpudirect storage reads directly on nvme",
                local.fs_type.value
            ),
            "use xfs or ext4",
        );
    }
    let mut provisioner_ok = true;
    if let Some(provisioner) = &local.provisioner {
        let problem = unpublished_csi_driver(&provisioner.value)
            .map(|why| format!("csi driver {:?} does not exist: {why}", provisioner.value))
            .or_else(|| {
                grammar::csi_driver_name(&provisioner.value)
                    .err()
                    .map(|why| format!("csi driver {:?} {why}", provisioner.value))
            });
        if let Some(problem) = problem {
            provisioner_ok = false;
            c.error(
                &UNUSABLE_CSI_DRIVER,
                &provisioner.referenced,
                problem,
                "leave provisioner out for the local volume provisioner, or name the csi driver your storage vendor ships (kubectl get csidrivers)",
            );
        }
    }
    (fs_ok && provisioner_ok).then_some(())?;
    Some(LocalNvmePlan {
        host_dir: host_dir?,
        fs_type,
        provisioner: local.provisioner.map(|p| p.value),
    })
}

fn nfs_rdma(c: &mut Checker, nfs: NfsRdma, all_pfs: &BTreeMap<String, bool>) -> Option<NfsPlan> {
    // The server and export form the mount unit's What=, the mount point
    // its Where= and the unit's name, and both reach the README's checks.
    let server = c.grammar(
        &MALFORMED_ADDRESS,
        &nfs.server,
        "server",
        grammar::host,
        "give the nfs server's ip address or host name on the storage network",
    );
    let export = c.grammar(
        &MALFORMED_PATH,
        &nfs.export,
        "export",
        grammar::absolute_path,
        "give the exported path as the server's /etc/exports has it, e.g. /export/ai-data",
    );
    let via = nfs.via.as_ref().map(|v| v.value).unwrap_or_default();
    let mount_point = nfs.mount_point.as_ref().map(|point| {
        c.grammar(
            &MALFORMED_PATH,
            point,
            "mount point",
            |point| match grammar::absolute_path(point)? {
                root if root == "/" => Err("is the root directory".to_owned()),
                point => Ok(point),
            },
            "use an absolute path such as /mnt/ai-data",
        )
    });
    let mount = match (via, mount_point) {
        (NfsVia::Csi, Some(_)) => {
            if let Some(point) = &nfs.mount_point {
                c.error(
                    &UNUSED_MOUNT_POINT,
                    &point.referenced,
                    format!(
                        "mountPoint {:?} is not used with via: csi: the kubelet mounts the export for each pod, which sees it at {}",
                        point.value,
                        crate::render::storage::DATA_MOUNT_PATH
                    ),
                    "remove mountPoint, or set via: host to mount the export at that path on every node",
                );
            }
            None
        }
        (NfsVia::Csi, None) => Some(NfsMount::Csi),
        (NfsVia::Host, Some(point)) => point.map(NfsMount::Host),
        (NfsVia::Host, None) => {
            c.error(
                &NFS_MOUNT_POINT_MISSING,
                &nfs.server.referenced,
                "nfs over rdma mounted on the hosts without a mountPoint",
                "give mountPoint (e.g. /mnt/ai-data), or set via: csi to mount through the nfs csi driver",
            );
            None
        }
    };
    if !(1..=16).contains(&nfs.nconnect.value) {
        c.error(
            &VALUE_OUT_OF_RANGE,
            &nfs.nconnect.referenced,
            format!("nconnect {} is out of range", nfs.nconnect.value),
            "use 1 to 16",
        );
    }
    match all_pfs.get(&nfs.nic.value) {
        None => c.error(
            &UNUSABLE_NFS_NIC,
            &nfs.nic.referenced,
            format!("nic {:?} is not a pf of any pool", nfs.nic.value),
            "name the pf whose network reaches the nfs server",
        ),
        Some(true) => c.error(
            &UNUSABLE_NFS_NIC,
            &nfs.nic.referenced,
            format!(
                "the network of {:?} has a vlan; nfs over rdma runs on the pf in the host network",
                nfs.nic.value
            ),
            "serve nfs over rdma on an untagged network (remove vlan from that nic), or give the storage network its own pf",
        ),
        Some(false) => {}
    }
    Some(NfsPlan {
        server: server?.nfs_source_host(),
        export: export?,
        via: mount?,
        nic: nfs.nic.value,
        nconnect: nfs.nconnect.value,
    })
}

/// Marks the rails on which the hosts have addresses of their own
/// ([`RailPlan::host_network`]): the NFS client's rail and every rail whose
/// subnet holds a storage server the intent names, whose addresses go into
/// [`RailPlan::servers`].
pub(super) fn mark_host_networks(
    rails: &mut BTreeMap<u32, RailPlan>,
    pools: &[PoolPlan],
    storage: &StoragePlan,
) {
    let nfs_rail = storage.nfs.as_ref().and_then(|nfs| {
        pools
            .iter()
            .flat_map(|pool| &pool.nics)
            .find(|nic| nic.pf == nfs.nic)
            .map(|nic| nic.rail)
    });
    let nfs_server = storage
        .nfs
        .as_ref()
        .and_then(|nfs| nfs.server.trim_matches(['[', ']']).parse::<IpAddr>().ok());
    let servers: Vec<IpAddr> = nfs_server
        .into_iter()
        .chain(storage.nvme_targets.iter().map(|(address, _)| *address))
        .collect();
    for rail in rails.values_mut() {
        let Some(subnet) = grammar::Subnet::parse(&rail.subnet) else {
            continue;
        };
        rail.servers = servers
            .iter()
            .filter(|server| subnet.contains(**server))
            .copied()
            .collect();
        rail.servers.dedup();
        rail.host_network = Some(rail.rail) == nfs_rail || !rail.servers.is_empty();
    }
}
