//! Mounted file systems, NFS transports, `/etc/fstab`, and the volumes the
//! kubelet mounted for pods.

use crate::facts::{Fact, Gap};
use crate::parse::mountinfo::{MountEntry, Options, parse_fstab, parse_mountinfo};
use crate::parse::mountstats::{MountStats, parse_mountstats};
use crate::root::HostRoot;

/// Where the mount table is read from, in order of preference.
pub const MOUNTINFO: &str = "/proc/self/mountinfo";
/// The fallback mount table (no device numbers, no per-mount options).
pub const PROC_MOUNTS: &str = "/proc/mounts";
/// The same table as this process sees it; `/proc/mounts` links to it on
/// a live host, and some captures keep only this one.
pub const SELF_MOUNTS: &str = "/proc/self/mounts";
/// Per-mount statistics with NFS transports.
pub const MOUNTSTATS: &str = "/proc/self/mountstats";
/// The mounts the administrator asked for.
pub const FSTAB: &str = "/etc/fstab";

/// The mount table and the file it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MountTable {
    /// [`MOUNTINFO`], [`PROC_MOUNTS`] or [`SELF_MOUNTS`].
    pub source: &'static str,
    /// Entries in the kernel's order; a later entry on the same mount
    /// point is mounted over an earlier one.
    pub entries: Vec<MountEntry>,
}

impl MountTable {
    /// The mount that holds `path`: the longest mount point that is `path`
    /// or one of its parents, the last mounted when several are stacked.
    pub fn mount_of(&self, path: &str) -> Option<&MountEntry> {
        let path = normalize(path);
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, entry)| contains(&normalize(&entry.mount_point), &path))
            .max_by_key(|(index, entry)| (normalize(&entry.mount_point).len(), *index))
            .map(|(_, entry)| entry)
    }
}

/// Where a path the user declared as a data mount is mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement<'a> {
    /// The path is a mount point: this (the top one when stacked).
    MountPoint(&'a MountEntry),
    /// The path lies below this mount point, which is not `/`.
    Under(&'a MountEntry),
    /// `/etc/fstab` mounts `fstab` at the path or above it, below the
    /// mount that holds the path now, and that mount is not mounted: the
    /// path falls back to `holder`.
    FstabNotMounted {
        /// The `/etc/fstab` entry that is not mounted.
        fstab: &'a MountEntry,
        /// The mount that holds the path instead.
        holder: &'a MountEntry,
    },
    /// Only the root file system holds the path: it is no mount of its own.
    OnRoot(&'a MountEntry),
    /// No mount in the table holds the path (the table has no `/`).
    Unmounted,
}

impl<'a> Placement<'a> {
    /// The mount the path is on, whatever was meant to be there.
    pub fn entry(self) -> Option<&'a MountEntry> {
        match self {
            Placement::MountPoint(entry) | Placement::Under(entry) | Placement::OnRoot(entry) => {
                Some(entry)
            }
            Placement::FstabNotMounted { holder, .. } => Some(holder),
            Placement::Unmounted => None,
        }
    }

    /// Whether the path is on a mount of its own (a mount point, or below
    /// one other than `/`), as a data mount must be.
    pub fn is_mounted(self) -> bool {
        matches!(self, Placement::MountPoint(_) | Placement::Under(_))
    }
}

/// Mount facts.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MountFacts {
    /// The mount table.
    pub table: Fact<MountTable>,
    /// `/proc/self/mountstats`, every block.
    pub stats: Fact<Vec<MountStats>>,
    /// `/etc/fstab` entries.
    pub fstab: Fact<Vec<MountEntry>>,
    /// The mounts of the table the kubelet made for pods' persistent
    /// volumes, with what its directory says of each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pod_volumes: Vec<PodVolume>,
}

/// An NFS mount with everything known about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NfsMount {
    /// The mount point.
    pub mount_point: String,
    /// `server:/export`.
    pub source: String,
    /// `nfs` or `nfs4`.
    pub fstype: String,
    /// The options in effect (mount table, else mountstats `opts:`).
    pub options: Options,
    /// The file and line the options were read from, for evidence.
    pub evidence: (&'static str, String),
    /// The mountstats block, when there is one.
    pub stats: Option<MountStats>,
    /// The `/etc/fstab` entry for this mount point, when there is one.
    pub fstab: Option<MountEntry>,
    /// The pod volume the kubelet mounted here, when it is one.
    pub pod_volume: Option<PodVolume>,
}

impl NfsMount {
    /// The transport the options name: `proto=`, or the `rdma` flag.
    pub fn proto(&self) -> Option<&str> {
        if self.options.has("rdma") {
            return Some("rdma");
        }
        self.options.get("proto")
    }

    /// Whether the options ask for RDMA.
    pub fn is_rdma(&self) -> bool {
        self.proto() == Some("rdma")
    }

    /// Whether `/etc/fstab` asks for RDMA on this mount point.
    pub fn fstab_wants_rdma(&self) -> bool {
        self.fstab.as_ref().is_some_and(MountEntry::asks_for_rdma)
    }
}

impl MountFacts {
    /// Reads the mount table, mountstats and fstab from `root`.
    pub fn collect(root: &HostRoot) -> MountFacts {
        let table = table(root);
        MountFacts {
            pod_volumes: pod_volumes(root, &table),
            table,
            stats: root
                .read(MOUNTSTATS)
                .map(|text| text.map(|text| parse_mountstats(&text)))
                .map_err(Gap::from),
            fstab: root
                .read(FSTAB)
                .map(|text| text.map(|text| parse_fstab(&text)))
                .map_err(Gap::from),
        }
    }

    /// The pod volume mounted at `mount_point`, when it is one.
    pub fn pod_volume(&self, mount_point: &str) -> Option<&PodVolume> {
        let point = normalize(mount_point);
        self.pod_volumes.iter().find(|v| v.mount_point == point)
    }

    /// The mounts in the table, or none when unknown.
    pub fn entries(&self) -> &[MountEntry] {
        match &self.table {
            Ok(Some(table)) => &table.entries,
            _ => &[],
        }
    }

    /// The mount that holds `path`, when the table is known.
    pub fn mount_of(&self, path: &str) -> Option<&MountEntry> {
        match &self.table {
            Ok(Some(table)) => table.mount_of(path),
            _ => None,
        }
    }

    /// Where the declared data path `path` is mounted, when the mount
    /// table is known. A path that is no mount point and lies under `/`
    /// alone is not a data mount: a declared mount that is not mounted
    /// reads through to the root file system, and must not be judged as
    /// that file system.
    pub fn place(&self, path: &str) -> Option<Placement<'_>> {
        let Ok(Some(table)) = &self.table else {
            return None;
        };
        let wanted = normalize(path);
        let Some(holder) = table.mount_of(&wanted) else {
            return Some(Placement::Unmounted);
        };
        let holder_point = normalize(&holder.mount_point);
        if holder_point == wanted {
            return Some(Placement::MountPoint(holder));
        }
        // An fstab mount between the path and its holder that the table
        // lacks is the mount that was meant to be there.
        let fstab = match &self.fstab {
            Ok(Some(entries)) => entries.as_slice(),
            _ => &[],
        };
        let missing = fstab
            .iter()
            .filter(|entry| {
                let point = normalize(&entry.mount_point);
                point != "/"
                    && point.len() > holder_point.len()
                    && contains(&point, &wanted)
                    && !table
                        .entries
                        .iter()
                        .any(|mounted| normalize(&mounted.mount_point) == point)
            })
            .max_by_key(|entry| normalize(&entry.mount_point).len());
        Some(match missing {
            Some(fstab) => Placement::FstabNotMounted { fstab, holder },
            None if holder_point == "/" => Placement::OnRoot(holder),
            None => Placement::Under(holder),
        })
    }

    /// Every NFS mount: the table's NFS entries joined with their
    /// mountstats blocks (the n-th entry on a mount point with the n-th
    /// block on it), plus NFS blocks the table lacks (a capture of
    /// mountstats alone).
    pub fn nfs_mounts(&self) -> Vec<NfsMount> {
        let stats: Vec<&MountStats> = match &self.stats {
            Ok(Some(stats)) => stats.iter().filter(|s| s.is_nfs()).collect(),
            _ => Vec::new(),
        };
        let fstab = match &self.fstab {
            Ok(Some(entries)) => entries.as_slice(),
            _ => &[],
        };
        let fstab_for = |mount_point: &str| {
            fstab
                .iter()
                .rev()
                .find(|entry| normalize(&entry.mount_point) == normalize(mount_point))
                .cloned()
        };
        let source = match &self.table {
            Ok(Some(table)) => table.source,
            _ => MOUNTINFO,
        };
        let by_point: std::collections::HashMap<&str, &PodVolume> = self
            .pod_volumes
            .iter()
            .map(|v| (v.mount_point.as_str(), v))
            .collect();
        let pod_volume_at = |point: &str| {
            by_point
                .get(normalize(point).as_str())
                .map(|v| (*v).clone())
        };
        let mut used = vec![false; stats.len()];
        let mut mounts = Vec::new();
        for entry in self.entries().iter().filter(|e| e.is_nfs()) {
            let block = stats.iter().enumerate().position(|(index, block)| {
                !used[index]
                    && block.mount_point == entry.mount_point
                    && block.fstype == entry.fstype
            });
            if let Some(index) = block {
                used[index] = true;
            }
            mounts.push(NfsMount {
                mount_point: entry.mount_point.clone(),
                source: entry.source.clone(),
                fstype: entry.fstype.clone(),
                options: entry.options.clone(),
                evidence: (source, entry.line.clone()),
                stats: block.map(|index| stats[index].clone()),
                fstab: fstab_for(&entry.mount_point),
                pod_volume: pod_volume_at(&entry.mount_point),
            });
        }
        for block in stats
            .iter()
            .enumerate()
            .filter(|(index, _)| !used[*index])
            .map(|(_, block)| block)
        {
            mounts.push(NfsMount {
                mount_point: block.mount_point.clone(),
                source: block.device.clone(),
                fstype: block.fstype.clone(),
                options: block.options.clone().unwrap_or_default(),
                evidence: (
                    MOUNTSTATS,
                    block
                        .options_line
                        .clone()
                        .unwrap_or_else(|| block.line.clone()),
                ),
                stats: Some((*block).clone()),
                fstab: fstab_for(&block.mount_point),
                pod_volume: pod_volume_at(&block.mount_point),
            });
        }
        mounts
    }
}

/// The kubelet's directory of the local volume plugin, whose volumes the
/// local volume provisioner creates: its escaped plugin name (kubernetes
/// v1.34 `pkg/volume/local/local.go`, "kubernetes.io/local-volume";
/// `pkg/kubelet/kubelet_getters.go`, `getPodVolumeDir`:
/// `pods/<uid>/volumes/<plugin>/<volume>`). CSI's is
/// [`zerohop_known::storage::KUBELET_CSI_PLUGIN_DIR`].
const LOCAL_VOLUME_PLUGIN_DIR: &str = "kubernetes.io~local-volume";

/// At most this many pod volumes have their `vol_data.json` read: a node
/// runs a few hundred pods at most (the kubelet's `maxPods`, 110 by
/// default), and a hostile mount table must not turn into unbounded reads.
const MAX_POD_VOLUME_READS: usize = 1024;

/// The most bytes of a `vol_data.json` read: the kubelet writes a handful
/// of short fields.
const VOLUME_DATA_CAP: usize = 64 * 1024;

/// A volume the kubelet mounted for a pod.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PodVolume {
    /// The mount point, `/var/lib/kubelet/pods/<uid>/volumes/<plugin>/<volume>[/mount]`.
    pub mount_point: String,
    /// The pod's UID.
    pub pod_uid: String,
    /// `kubernetes.io~csi` or `kubernetes.io~local-volume`.
    pub plugin: String,
    /// The volume's directory name: the PersistentVolume's name (or, for
    /// an inline CSI volume, the pod's name for it).
    pub volume: String,
    /// What the kubelet's `vol_data.json` beside a CSI mount says.
    pub data: Option<CsiVolumeData>,
}

/// The fields of a CSI volume's `vol_data.json` (kubernetes v1.34
/// `pkg/volume/csi/csi_mounter.go`, `volDataKey`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CsiVolumeData {
    /// The file read.
    pub path: String,
    /// `driverName`.
    pub driver: Option<String>,
    /// `specVolID`: the PersistentVolume's name.
    pub spec_volume: Option<String>,
    /// `volumeHandle`: the driver's own ID of the volume.
    pub volume_handle: Option<String>,
}

impl PodVolume {
    /// The volume as evidence shows it: the PersistentVolume, the pod and
    /// the driver.
    pub fn describe(&self) -> String {
        let data = self.data.as_ref();
        let name = data
            .and_then(|d| d.spec_volume.as_deref())
            .unwrap_or(&self.volume);
        let mut text = format!("volume {name} of pod {}", self.pod_uid);
        match data.and_then(|d| d.driver.as_deref()) {
            Some(driver) => text.push_str(&format!(", csi driver {driver}")),
            None if self.plugin == LOCAL_VOLUME_PLUGIN_DIR => text.push_str(", local volume"),
            None => text.push_str(", csi"),
        }
        if let Some(handle) = data.and_then(|d| d.volume_handle.as_deref()) {
            text.push_str(&format!(", handle {handle}"));
        }
        text
    }
}

/// The pod UID, plugin and volume of a kubelet volume mount point: a CSI
/// volume is mounted at `<volume>/mount`, a local volume at `<volume>`.
/// `None` for any other path.
pub fn pod_volume_of(mount_point: &str) -> Option<(String, String, String)> {
    use zerohop_known::storage::{KUBELET_CSI_PLUGIN_DIR, KUBELET_PODS_DIR};
    let point = normalize(mount_point);
    let rest = point.strip_prefix(KUBELET_PODS_DIR)?;
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [uid, "volumes", plugin, volume, "mount"] if *plugin == KUBELET_CSI_PLUGIN_DIR => Some((
            (*uid).to_owned(),
            (*plugin).to_owned(),
            (*volume).to_owned(),
        )),
        [uid, "volumes", plugin, volume] if *plugin == LOCAL_VOLUME_PLUGIN_DIR => Some((
            (*uid).to_owned(),
            (*plugin).to_owned(),
            (*volume).to_owned(),
        )),
        _ => None,
    }
}

/// Reads a CSI volume's `vol_data.json`; `None` when it is absent,
/// unreadable or no JSON object.
fn volume_data(root: &HostRoot, mount_point: &str) -> Option<CsiVolumeData> {
    let dir = mount_point.strip_suffix("/mount")?;
    let path = format!("{dir}/{}", zerohop_known::storage::KUBELET_CSI_VOLUME_DATA);
    let text = root.read_with_cap(&path, VOLUME_DATA_CAP).ok()??;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let field = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    value.is_object().then(|| CsiVolumeData {
        driver: field("driverName"),
        spec_volume: field("specVolID"),
        volume_handle: field("volumeHandle"),
        path: path.clone(),
    })
}

/// The pod volumes of the mount table, each mount point once, the CSI
/// ones with their `vol_data.json`.
fn pod_volumes(root: &HostRoot, table: &Fact<MountTable>) -> Vec<PodVolume> {
    let Ok(Some(table)) = table else {
        return Vec::new();
    };
    let mut volumes: Vec<PodVolume> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in &table.entries {
        let Some((pod_uid, plugin, volume)) = pod_volume_of(&entry.mount_point) else {
            continue;
        };
        let mount_point = normalize(&entry.mount_point);
        if !seen.insert(mount_point.clone()) {
            continue;
        }
        let data = if plugin == zerohop_known::storage::KUBELET_CSI_PLUGIN_DIR
            && volumes.len() < MAX_POD_VOLUME_READS
        {
            volume_data(root, &mount_point)
        } else {
            None
        };
        volumes.push(PodVolume {
            mount_point,
            pod_uid,
            plugin,
            volume,
            data,
        });
    }
    volumes
}

fn table(root: &HostRoot) -> Fact<MountTable> {
    if let Some(text) = root.read(MOUNTINFO)? {
        return Ok(Some(MountTable {
            source: MOUNTINFO,
            entries: parse_mountinfo(&text),
        }));
    }
    for source in [PROC_MOUNTS, SELF_MOUNTS] {
        if let Some(text) = root.read(source)? {
            return Ok(Some(MountTable {
                source,
                entries: parse_fstab(&text),
            }));
        }
    }
    Ok(None)
}

/// `path` without trailing slashes (but `/` stays `/`).
pub fn normalize(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".to_owned()
    } else {
        trimmed.to_owned()
    }
}

fn contains(mount_point: &str, path: &str) -> bool {
    mount_point == "/"
        || path == mount_point
        || path
            .strip_prefix(mount_point)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn root(files: &[(&str, &str)]) -> (tempfile::TempDir, HostRoot) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let real = dir.path().join(path.trim_start_matches('/'));
            fs::create_dir_all(real.parent().unwrap()).unwrap();
            fs::write(real, text).unwrap();
        }
        let host = HostRoot::at(dir.path()).unwrap();
        (dir, host)
    }

    #[test]
    fn joins_table_stats_and_fstab() {
        let (_dir, host) = root(&[
            (
                MOUNTINFO,
                "21 0 8:1 / / rw - ext4 /dev/sda1 rw\n40 21 0:50 / /mnt/data rw - nfs srv:/d rw,vers=3,proto=tcp\n",
            ),
            (
                MOUNTSTATS,
                "device srv:/d mounted on /mnt/data with fstype nfs statvers=1.1\n\topts:\trw,proto=tcp\n\txprt:\ttcp 1 2\ndevice srv:/o mounted on /mnt/other with fstype nfs4 statvers=1.1\n\topts:\trw,proto=rdma\n",
            ),
            (FSTAB, "srv:/d /mnt/data/ nfs rdma,port=20049 0 0\n"),
        ]);
        let facts = MountFacts::collect(&host);
        let nfs = facts.nfs_mounts();
        assert_eq!(nfs.len(), 2);
        assert_eq!(nfs[0].proto(), Some("tcp"));
        assert!(nfs[0].fstab_wants_rdma());
        assert_eq!(nfs[0].stats.as_ref().unwrap().transports_of("tcp"), 1);
        assert_eq!(nfs[0].evidence.0, MOUNTINFO);
        assert_eq!(nfs[1].mount_point, "/mnt/other");
        assert!(nfs[1].is_rdma());
        assert_eq!(nfs[1].evidence.0, MOUNTSTATS);
        assert_eq!(facts.mount_of("/mnt/data/x/y").unwrap().fstype, "nfs");
        assert_eq!(facts.mount_of("/mnt/database").unwrap().fstype, "ext4");
    }

    #[test]
    fn declared_paths_are_placed_on_their_own_mounts_or_not() {
        let (_dir, host) = root(&[
            (
                MOUNTINFO,
                "21 0 252:1 / / rw - ext4 /dev/vda1 rw\n40 21 0:50 / /mnt/data rw - nfs srv:/d rw,proto=rdma\n",
            ),
            (FSTAB, "srv:/w /mnt/weights nfs proto=rdma 0 0\n"),
        ]);
        let facts = MountFacts::collect(&host);
        let point = |path| facts.place(path).unwrap();
        assert!(matches!(point("/mnt/data/"), Placement::MountPoint(e) if e.fstype == "nfs"));
        assert!(
            matches!(point("/mnt/data/shard"), Placement::Under(e) if e.mount_point == "/mnt/data")
        );
        // Not mounted: the path reads through to the root file system.
        assert!(
            matches!(point("/does/not/exist"), Placement::OnRoot(e) if e.source == "/dev/vda1")
        );
        assert!(!point("/does/not/exist").is_mounted());
        // fstab names the mount that is missing.
        assert!(matches!(
            point("/mnt/weights/llama"),
            Placement::FstabNotMounted { fstab, holder } if fstab.mount_point == "/mnt/weights" && holder.mount_point == "/"
        ));
        assert!(matches!(point("/"), Placement::MountPoint(_)));
    }

    #[test]
    fn falls_back_to_proc_mounts() {
        let (_dir, host) = root(&[(PROC_MOUNTS, "srv:/d /data nfs4 rw,proto=rdma 0 0\n")]);
        let facts = MountFacts::collect(&host);
        assert_eq!(
            facts.table.as_ref().unwrap().as_ref().unwrap().source,
            PROC_MOUNTS
        );
        assert!(facts.nfs_mounts()[0].is_rdma());
        assert_eq!(facts.stats, Ok(None));
    }
}
