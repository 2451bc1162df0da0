//! The storage data path: NFS over RDMA, NVMe-oF targets, GDS.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::Checker;
use crate::grammar;
use crate::intent::{NfsRdma, Storage};
use crate::plan::NfsPlan;

/// The storage part of the plan, checked.
pub(super) struct StoragePlan {
    pub(super) nfs: Option<NfsPlan>,
    pub(super) nvme_targets: Vec<(IpAddr, u16)>,
    pub(super) gds: bool,
}

/// Checks the storage section; `all_pfs` maps every PF of every pool to
/// whether its network has a VLAN.
pub(super) fn storage(
    c: &mut Checker,
    storage: Storage,
    all_pfs: &BTreeMap<String, bool>,
) -> StoragePlan {
    if let (Some(nvme), Some(_)) = (&storage.nvme_of, &storage.nfs_rdma) {
        c.error(&nvme.referenced, "nvme-of together with nfs over rdma", "the doca driver container fails with ENABLE_NFSRDMA while nvme rdma modules are loaded; use one storage path per node");
    }
    let gds = storage.gds.as_ref().is_some_and(|g| g.value);
    if let (Some(gds_flag), true, Some(_)) = (&storage.gds, gds, &storage.nvme_of) {
        c.error(
            &gds_flag.referenced,
            "gds with nvme-of",
            "with the network operator's doca driver, gds is supported only with nfs over rdma",
        );
    }
    let nfs = storage.nfs_rdma.and_then(|nfs| nfs_rdma(c, nfs, all_pfs));
    let mut nvme_targets = Vec::new();
    for target in storage.nvme_of.map(|n| n.value.targets).unwrap_or_default() {
        // Written into /etc/nvme/discovery.conf, whose lines nvme-cli
        // splits into arguments: an RDMA target is an IP address.
        let address = c.grammar(
            &target.address,
            "nvme-of target",
            grammar::ip_address,
            "give the target's ip address on the storage network",
        );
        if target.port.value == 0 {
            c.error(
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
    }
}

fn nfs_rdma(c: &mut Checker, nfs: NfsRdma, all_pfs: &BTreeMap<String, bool>) -> Option<NfsPlan> {
    // The server and export form the mount unit's What=, the mount point
    // its Where= and the unit's name, and both reach the README's checks.
    let server = c.grammar(
        &nfs.server,
        "server",
        grammar::host,
        "give the nfs server's ip address or host name on the storage network",
    );
    let export = c.grammar(
        &nfs.export,
        "export",
        grammar::absolute_path,
        "give the exported path as the server's /etc/exports has it, e.g. /export/ai-data",
    );
    let mount_point = c.grammar(
        &nfs.mount_point,
        "mount point",
        |point| match grammar::absolute_path(point)? {
            root if root == "/" => Err("is the root directory".to_owned()),
            point => Ok(point),
        },
        "use an absolute path such as /mnt/ai-data",
    );
    if !(1..=16).contains(&nfs.nconnect.value) {
        c.error(
            &nfs.nconnect.referenced,
            format!("nconnect {} is out of range", nfs.nconnect.value),
            "use 1 to 16",
        );
    }
    match all_pfs.get(&nfs.nic.value) {
        None => c.error(
            &nfs.nic.referenced,
            format!("nic {:?} is not a pf of any pool", nfs.nic.value),
            "name the pf whose network reaches the nfs server",
        ),
        Some(true) => c.error(
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
        mount_point: mount_point?,
        nconnect: nfs.nconnect.value,
    })
}
