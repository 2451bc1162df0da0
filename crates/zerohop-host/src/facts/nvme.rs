//! NVMe subsystems, controllers and multipath paths from
//! `/sys/class/nvme-subsystem` and `/sys/class/nvme`, the block devices of
//! `/sys/block` with their partitions, and device-mapper devices from
//! `/sys/block/dm-*`.
//!
//! With native multipath (`nvme_core.multipath=Y`) each namespace has one
//! block device per subsystem (`nvme1n1`, the "head") and one hidden path
//! device per controller (`nvme1c2n1`) that carries `ana_state` and
//! `ana_grpid` (`drivers/nvme/host/multipath.c`).

use crate::facts::{Fact, Gap};
use crate::root::HostRoot;

/// The class directory of subsystems.
pub const SUBSYSTEMS: &str = "/sys/class/nvme-subsystem";
/// The class directory of controllers.
pub const CONTROLLERS: &str = "/sys/class/nvme";
/// The majors the kernel gave its drivers, by name.
pub const PROC_DEVICES: &str = "/proc/devices";
/// The name device-mapper registers its block major under
/// (`include/uapi/linux/dm-ioctl.h`, `DM_NAME`).
pub const DM_DRIVER: &str = "device-mapper";

/// One path of a namespace through one controller.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NvmePath {
    /// `nvme1c2n1` (multipath) or `nvme0n1` (a controller's own namespace).
    pub name: String,
    /// The namespace it leads to (`nvme1n1`).
    pub namespace: String,
    /// The sysfs directory, for evidence.
    pub dir: String,
    /// `optimized`, `non-optimized`, `inaccessible`, `persistent-loss`,
    /// `change`; `None` when the controller does not report ANA.
    pub ana_state: Option<String>,
    /// The ANA group.
    pub ana_grpid: Option<u32>,
}

/// One controller: a connection to the subsystem.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NvmeController {
    /// `nvme2`.
    pub name: String,
    /// The sysfs directory attributes were read from, for evidence.
    pub dir: String,
    /// `pcie`, `rdma`, `tcp`, `fc`, `loop`.
    pub transport: Option<String>,
    /// `traddr=10.0.0.1,trsvcid=4420` or a PCI address.
    pub address: Option<String>,
    /// `live`, `connecting`, `resetting`, `deleting`, `dead`…
    pub state: Option<String>,
    /// Namespace paths through this controller.
    pub paths: Vec<NvmePath>,
}

impl NvmeController {
    /// Whether the controller is `live`.
    pub fn is_live(&self) -> bool {
        self.state.as_deref() == Some("live")
    }

    /// Whether the transport is a fabric (anything but PCIe).
    pub fn is_fabric(&self) -> bool {
        self.transport.as_deref().is_some_and(|t| t != "pcie")
    }
}

/// One NVMe subsystem.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NvmeSubsystem {
    /// `nvme-subsys1`.
    pub name: String,
    /// `subsysnqn`, trimmed.
    pub nqn: Option<String>,
    /// `model`, trimmed.
    pub model: Option<String>,
    /// The per-subsystem `iopolicy` (Linux 5.x and later).
    pub iopolicy: Option<String>,
    /// Its controllers.
    pub controllers: Vec<NvmeController>,
    /// Namespace block devices listed in the subsystem (`nvme1n1`).
    pub namespaces: Vec<String>,
}

impl NvmeSubsystem {
    /// Every namespace: those listed, and those only known by their paths.
    pub fn all_namespaces(&self) -> Vec<String> {
        let mut names = self.namespaces.clone();
        for path in self.controllers.iter().flat_map(|c| &c.paths) {
            if !names.contains(&path.namespace) {
                names.push(path.namespace.clone());
            }
        }
        names.sort_by_key(|name| natural_key(name));
        names
    }

    /// The paths to `namespace`, with their controllers.
    pub fn paths_to<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a NvmeController, &'a NvmePath)> + 'a {
        self.controllers
            .iter()
            .flat_map(|c| c.paths.iter().map(move |p| (c, p)))
            .filter(move |(_, p)| p.namespace == namespace)
    }

    /// Whether any controller uses a fabric transport.
    pub fn is_fabric(&self) -> bool {
        self.controllers.iter().any(NvmeController::is_fabric)
    }

    /// The sysfs directory, for evidence.
    pub fn dir(&self) -> String {
        format!("{SUBSYSTEMS}/{}", self.name)
    }
}

/// A device-mapper device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DmDevice {
    /// `dm-0`.
    pub name: String,
    /// `dev`: `major:minor`, as mountinfo shows it.
    pub dev: Option<String>,
    /// `dm/name` (`mpatha`, `vg-lv`).
    pub dm_name: Option<String>,
    /// `dm/uuid`: `mpath-…` multipath, `LVM-…`, `CRYPT-…`, `part1-…`.
    pub uuid: Option<String>,
    /// `slaves/*`: the devices underneath.
    pub slaves: Vec<String>,
}

impl DmDevice {
    /// Whether this is dm-multipath, or a partition of one (`part1-mpath-…`).
    pub fn is_multipath(&self) -> bool {
        self.uuid
            .as_deref()
            .is_some_and(|uuid| uuid.starts_with("mpath-") || uuid.contains("-mpath-"))
    }

    /// The target kind from the uuid prefix (`mpath`, `LVM`, `CRYPT`), or `dm`.
    pub fn kind(&self) -> &str {
        self.uuid
            .as_deref()
            .and_then(|uuid| uuid.split_once('-'))
            .map(|(kind, _)| kind)
            .filter(|kind| !kind.is_empty())
            .unwrap_or("dm")
    }
}

/// A whole block device of `/sys/block` (`nvme0n1`, `sda`, `vda`, `md0`, `dm-0`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlockDevice {
    /// The kernel's name.
    pub name: String,
    /// `dev`: `major:minor`.
    pub dev: Option<String>,
    /// Its partitions: (name, `major:minor`).
    pub partitions: Vec<(String, Option<String>)>,
    /// `slaves/*`: the devices underneath (md and device-mapper).
    pub slaves: Vec<String>,
    /// Where `/sys/block/<name>` links to, as written
    /// (`../devices/pci0000:00/0000:00:06.0/0000:04:00.0/nvme/nvme0/nvme0n1`):
    /// the bus the device hangs on.
    pub link: Option<String>,
}

impl BlockDevice {
    /// Whether the name is an NVMe namespace (`nvme0n1`, or a multipath
    /// head), which only the NVMe driver gives.
    pub fn is_nvme(&self) -> bool {
        path_namespace(&self.name).is_some()
    }

    /// The NVMe controller (`nvme0`) or subsystem (`nvme-subsys0`, for a
    /// native multipath head) that the link names, when it names one.
    pub fn nvme_parent(&self) -> Option<&str> {
        let link = self.link.as_deref()?;
        let mut parts = link.split('/').rev().skip(1);
        let parent = parts.next()?;
        let class = parts.next()?;
        matches!(class, "nvme" | "nvme-subsystem").then_some(parent)
    }

    /// The bus the link shows: `nvme` (a native multipath head too),
    /// `virtual` (loop, ram, md and device-mapper devices), `virtio`,
    /// `usb` or `scsi`; `None` when unknown.
    pub fn bus(&self) -> Option<&'static str> {
        let link = self.link.as_deref()?;
        let has = |part: &str| link.split('/').any(|p| p == part || p.starts_with(part));
        Some(if has("nvme") {
            "nvme"
        } else if link.contains("/virtual/") {
            "virtual"
        } else if has("virtio") {
            "virtio"
        } else if has("usb") {
            "usb"
        } else if has("target") || has("host") {
            "scsi"
        } else {
            return None;
        })
    }
}

/// NVMe and block-layer facts.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NvmeFacts {
    /// The subsystems; `Ok(None)` when the kernel has no NVMe class.
    pub subsystems: Fact<Vec<NvmeSubsystem>>,
    /// Device-mapper devices in `/sys/block`.
    pub device_mapper: Fact<Vec<DmDevice>>,
    /// Every block device in `/sys/block`; `Ok(None)` when it is absent.
    pub block: Fact<Vec<BlockDevice>>,
    /// The block major of device-mapper, from the `Block devices:` part of
    /// [`PROC_DEVICES`]: `Some(None)` when the file does not list it (not
    /// registered), `Ok(None)` when the file is absent. The major is
    /// dynamic: `drivers/md/dm.c` (`local_init`) registers with the `major`
    /// module parameter, 0 unless given, and `block/genhd.c`
    /// (`__register_blkdev`) then hands out the highest free major below
    /// 255, so 253 and 252 are both common.
    pub dm_major: Fact<Option<u32>>,
}

impl NvmeFacts {
    /// Reads NVMe subsystems and device-mapper devices from `root`.
    pub fn collect(root: &HostRoot) -> NvmeFacts {
        NvmeFacts {
            subsystems: subsystems(root),
            device_mapper: device_mapper(root),
            block: block_devices(root),
            dm_major: root
                .read(PROC_DEVICES)
                .map(|text| text.map(|text| block_major(&text, DM_DRIVER)))
                .map_err(Gap::from),
        }
    }

    /// Whether the mount source `source` on device `dev` (`major:minor`)
    /// is a device-mapper device: by its `/dev/mapper/` or `/dev/dm-` path,
    /// or by its major: that of the device-mapper devices of `/sys/block`
    /// when it was read (every one is there), else device-mapper's in
    /// [`PROC_DEVICES`]. `None` when neither was read.
    pub fn is_device_mapper(&self, dev: Option<&str>, source: &str) -> Option<bool> {
        if source.starts_with("/dev/mapper/") || source.starts_with("/dev/dm-") {
            return Some(true);
        }
        let major_of = |dev: Option<&str>| {
            dev.and_then(|dev| dev.split_once(':'))
                .and_then(|(major, _)| major.parse::<u32>().ok())
        };
        let major = major_of(dev);
        // Every device-mapper device is in /sys/block: read, it decides.
        if let Ok(Some(dms)) = &self.device_mapper {
            return Some(
                major.is_some() && dms.iter().any(|dm| major_of(dm.dev.as_deref()) == major),
            );
        }
        match (&self.dm_major, major) {
            (Ok(Some(Some(dm))), Some(major)) => Some(*dm == major),
            (Ok(Some(None)), _) => Some(false),
            _ => None,
        }
    }

    /// The block devices, or none when unknown.
    pub fn block_list(&self) -> &[BlockDevice] {
        match &self.block {
            Ok(Some(list)) => list,
            _ => &[],
        }
    }

    /// The block device a mount's source stands on, with the partition
    /// when it is one: found by the mount's `major:minor` (mountinfo), or
    /// by its source (`/dev/nvme0n1p2`, `/dev/mapper/<name>`, `/dev/dm-0`).
    pub fn block_of(
        &self,
        dev: Option<&str>,
        source: &str,
    ) -> Option<(&BlockDevice, Option<&str>)> {
        let name = match source.strip_prefix("/dev/mapper/") {
            Some(mapped) => match &self.device_mapper {
                Ok(Some(dms)) => dms
                    .iter()
                    .find(|dm| dm.dm_name.as_deref() == Some(mapped))
                    .map(|dm| dm.name.as_str()),
                _ => None,
            },
            None => source.strip_prefix("/dev/"),
        };
        self.block_list().iter().find_map(|block| {
            if dev.is_some() && block.dev.as_deref() == dev || name == Some(block.name.as_str()) {
                return Some((block, None));
            }
            block
                .partitions
                .iter()
                .find(|(part, part_dev)| {
                    dev.is_some() && part_dev.as_deref() == dev || name == Some(part.as_str())
                })
                .map(|(part, _)| (block, Some(part.as_str())))
        })
    }

    /// The subsystem whose namespaces include `namespace` (`nvme1n1`).
    pub fn subsystem_of(&self, namespace: &str) -> Option<&NvmeSubsystem> {
        self.list()
            .iter()
            .find(|s| s.all_namespaces().iter().any(|n| n == namespace))
    }

    /// The controller named `name` (`nvme0`), with its subsystem.
    pub fn controller(&self, name: &str) -> Option<(&NvmeSubsystem, &NvmeController)> {
        self.list().iter().find_map(|subsystem| {
            subsystem
                .controllers
                .iter()
                .find(|c| c.name == name)
                .map(|c| (subsystem, c))
        })
    }

    /// The subsystems, or none when unknown.
    pub fn list(&self) -> &[NvmeSubsystem] {
        match &self.subsystems {
            Ok(Some(list)) => list,
            _ => &[],
        }
    }
}

fn value(root: &HostRoot, path: &str) -> Option<String> {
    root.read_value(path)
        .ok()
        .flatten()
        .filter(|v| !v.is_empty())
}

fn subsystems(root: &HostRoot) -> Fact<Vec<NvmeSubsystem>> {
    let Some(names) = root.list(SUBSYSTEMS).map_err(Gap::from)? else {
        return Ok(None);
    };
    let mut subsystems = Vec::new();
    for name in names {
        let dir = format!("{SUBSYSTEMS}/{name}");
        let entries = root.list(&dir).map_err(Gap::from)?.unwrap_or_default();
        let mut controllers: Vec<NvmeController> = entries
            .iter()
            .filter(|entry| is_controller_name(entry))
            .map(|entry| controller(root, &dir, entry))
            .collect();
        controllers.sort_by_key(|c| natural_key(&c.name));
        subsystems.push(NvmeSubsystem {
            nqn: value(root, &format!("{dir}/subsysnqn")),
            model: value(root, &format!("{dir}/model")),
            iopolicy: value(root, &format!("{dir}/iopolicy")),
            namespaces: entries
                .iter()
                .filter(|e| path_namespace(e).is_some_and(|(multi, _)| !multi))
                .cloned()
                .collect(),
            controllers,
            name,
        });
    }
    subsystems.sort_by_key(|s| natural_key(&s.name));
    Ok(Some(subsystems))
}

/// Reads a controller from the subsystem's entry (a symlink to the
/// controller on real hosts) and from `/sys/class/nvme/<name>`, whichever
/// has the attribute: captures do not always keep both.
fn controller(root: &HostRoot, subsystem_dir: &str, name: &str) -> NvmeController {
    let dirs = [
        format!("{subsystem_dir}/{name}"),
        format!("{CONTROLLERS}/{name}"),
    ];
    let attribute = |attr: &str| {
        dirs.iter()
            .find_map(|dir| value(root, &format!("{dir}/{attr}")).map(|v| (dir.clone(), v)))
    };
    let state = attribute("state");
    let dir = state
        .as_ref()
        .map(|(dir, _)| dir.clone())
        .unwrap_or_else(|| dirs[0].clone());
    let mut paths: Vec<NvmePath> = Vec::new();
    for parent in &dirs {
        for entry in root.list(parent).ok().flatten().unwrap_or_default() {
            let Some((_, namespace)) = path_namespace(&entry) else {
                continue;
            };
            if paths.iter().any(|p| p.name == entry) {
                continue;
            }
            let path_dir = format!("{parent}/{entry}");
            paths.push(NvmePath {
                ana_state: value(root, &format!("{path_dir}/ana_state")),
                ana_grpid: value(root, &format!("{path_dir}/ana_grpid"))
                    .and_then(|v| v.parse().ok()),
                name: entry,
                namespace,
                dir: path_dir,
            });
        }
    }
    paths.sort_by_key(|p| natural_key(&p.name));
    NvmeController {
        name: name.to_owned(),
        dir,
        transport: attribute("transport").map(|(_, v)| v),
        address: attribute("address").map(|(_, v)| v),
        state: state.map(|(_, v)| v),
        paths,
    }
}

fn is_controller_name(name: &str) -> bool {
    name.strip_prefix("nvme")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
}

/// For `nvme<S>c<C>n<N>` returns `(true, "nvme<S>n<N>")`; for
/// `nvme<C>n<N>` returns `(false, itself)`; otherwise `None`.
pub fn path_namespace(name: &str) -> Option<(bool, String)> {
    let rest = name.strip_prefix("nvme")?;
    let (subsystem, rest) = split_digits(rest)?;
    if let Some(rest) = rest.strip_prefix('c') {
        let (_, rest) = split_digits(rest)?;
        let namespace = rest
            .strip_prefix('n')
            .and_then(split_digits)
            .filter(|(_, tail)| tail.is_empty())?
            .0;
        return Some((true, format!("nvme{subsystem}n{namespace}")));
    }
    rest.strip_prefix('n')
        .and_then(split_digits)
        .filter(|(_, tail)| tail.is_empty())?;
    Some((false, name.to_owned()))
}

fn split_digits(text: &str) -> Option<(&str, &str)> {
    let end = text
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    (end > 0).then(|| text.split_at(end))
}

/// Sorts `nvme10` after `nvme2`.
fn natural_key(name: &str) -> (String, Vec<u64>) {
    let prefix: String = name.chars().take_while(|c| !c.is_ascii_digit()).collect();
    let numbers = name
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .filter_map(|part| part.parse().ok())
        .collect();
    (prefix, numbers)
}

/// The major `driver` has in the `Block devices:` part of `/proc/devices`
/// (`<major> <name>` lines, `fs/proc/devices.c`).
fn block_major(text: &str, driver: &str) -> Option<u32> {
    text.lines()
        .skip_while(|line| line.trim() != "Block devices:")
        .skip(1)
        .filter_map(|line| line.trim().split_once(' '))
        .find(|(_, name)| name.trim() == driver)
        .and_then(|(major, _)| major.parse().ok())
}

fn device_mapper(root: &HostRoot) -> Fact<Vec<DmDevice>> {
    let Some(names) = root.list("/sys/block").map_err(Gap::from)? else {
        return Ok(None);
    };
    Ok(Some(
        names
            .into_iter()
            .filter(|name| name.starts_with("dm-"))
            .map(|name| {
                let dir = format!("/sys/block/{name}");
                DmDevice {
                    dev: value(root, &format!("{dir}/dev")),
                    dm_name: value(root, &format!("{dir}/dm/name")),
                    uuid: value(root, &format!("{dir}/dm/uuid")),
                    slaves: root
                        .list(&format!("{dir}/slaves"))
                        .ok()
                        .flatten()
                        .unwrap_or_default(),
                    name,
                }
            })
            .collect(),
    ))
}

/// The most block devices read: hosts with thousands of LUNs exist, and
/// only the few that hold data mounts are looked up.
const MAX_BLOCK_DEVICES: usize = 4096;

fn block_devices(root: &HostRoot) -> Fact<Vec<BlockDevice>> {
    let Some(names) = root.list("/sys/block").map_err(Gap::from)? else {
        return Ok(None);
    };
    let mut devices = Vec::new();
    for name in names.into_iter().take(MAX_BLOCK_DEVICES) {
        let dir = format!("/sys/block/{name}");
        let entries = root.list(&dir).ok().flatten().unwrap_or_default();
        // A partition is a subdirectory named after the disk (`nvme0n1p2`,
        // `sda1`) that has its own `dev`.
        let partitions = entries
            .iter()
            .filter(|entry| entry.starts_with(name.as_str()) && **entry != name)
            .filter_map(|entry| {
                let dev = value(root, &format!("{dir}/{entry}/dev"));
                let is_partition = dev.is_some()
                    || root
                        .exists(&format!("{dir}/{entry}/partition"))
                        .unwrap_or(false);
                is_partition.then(|| (entry.clone(), dev))
            })
            .collect();
        devices.push(BlockDevice {
            dev: value(root, &format!("{dir}/dev")),
            slaves: root
                .list(&format!("{dir}/slaves"))
                .ok()
                .flatten()
                .unwrap_or_default(),
            link: root.read_link(&dir).ok().flatten(),
            partitions,
            name,
        });
    }
    Ok(Some(devices))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn device_mapper_major_is_read_from_the_block_part() {
        // `fs/proc/devices.c` prints the character majors, a blank line,
        // then the block majors; `sd` is both a name and a prefix here.
        let text = "Character devices:\n  1 mem\n253 device-mapper-char\n\nBlock devices:\n  8 sd\n252 device-mapper\n259 blkext\n";
        assert_eq!(block_major(text, DM_DRIVER), Some(252));
        assert_eq!(block_major("Block devices:\n  8 sd\n", DM_DRIVER), None);
        assert_eq!(block_major("253 device-mapper\n", DM_DRIVER), None);
    }

    #[test]
    fn path_names() {
        assert_eq!(
            path_namespace("nvme1c2n1"),
            Some((true, "nvme1n1".to_owned()))
        );
        assert_eq!(
            path_namespace("nvme0n1"),
            Some((false, "nvme0n1".to_owned()))
        );
        assert_eq!(path_namespace("nvme0n1p1"), None);
        assert_eq!(path_namespace("nvme0"), None);
        assert_eq!(path_namespace("ng0n1"), None);
        assert!(is_controller_name("nvme12"));
        assert!(!is_controller_name("nvme"));
        assert!(!is_controller_name("nvme1n1"));
    }

    #[test]
    fn block_links_name_their_bus_and_nvme_parent() {
        let block = |name: &str, link: &str| BlockDevice {
            name: name.into(),
            dev: None,
            partitions: vec![],
            slaves: vec![],
            link: Some(link.into()),
        };
        // Links as the ghw snapshots in ../shared/corpus hold them.
        let nvme = block(
            "nvme0n1",
            "../devices/pci0000:00/0000:00:06.0/0000:04:00.0/nvme/nvme0/nvme0n1",
        );
        assert_eq!(
            (nvme.bus(), nvme.nvme_parent()),
            (Some("nvme"), Some("nvme0"))
        );
        let head = block(
            "nvme1n1",
            "../devices/virtual/nvme-subsystem/nvme-subsys1/nvme1n1",
        );
        assert_eq!(
            (head.bus(), head.nvme_parent()),
            (Some("nvme"), Some("nvme-subsys1"))
        );
        let sda = block(
            "sda",
            "../devices/pci0000:00/0000:00:01.1/0000:02:00.0/virtio6/host0/target0:0:0/0:0:0:1/block/sda",
        );
        assert_eq!(
            (sda.bus(), sda.nvme_parent(), sda.is_nvme()),
            (Some("virtio"), None, false)
        );
        let dm = block("dm-0", "../devices/virtual/block/dm-0");
        assert_eq!(dm.bus(), Some("virtual"));
    }

    #[test]
    fn dm_kinds() {
        let dm = |uuid: Option<&str>| DmDevice {
            name: "dm-0".into(),
            dev: None,
            dm_name: None,
            uuid: uuid.map(str::to_owned),
            slaves: vec![],
        };
        assert_eq!(dm(Some("mpath-3600a0980")).kind(), "mpath");
        assert_eq!(dm(Some("LVM-abc")).kind(), "LVM");
        assert_eq!(dm(None).kind(), "dm");
    }

    proptest! {
        #[test]
        fn names_never_panic(name in "[a-z0-9]{0,12}") {
            let _ = path_namespace(&name);
            let _ = natural_key(&name);
        }
    }
}
