//! PCI functions from `/sys/bus/pci/devices` and IOMMU groups from
//! `/sys/kernel/iommu_groups`.

use std::collections::BTreeMap;

use crate::facts::{Fact, Gap, clip, parallel_map, read_parsed};
use crate::root::HostRoot;

const DEVICES: &str = "/sys/bus/pci/devices";

/// PCI class codes (the upper 16 bits of the `class` attribute) zerohop
/// cares about, kept with the other domain facts in `zerohop-known`.
pub use zerohop_known::pci::class;

/// PCI vendor IDs zerohop cares about.
pub mod vendor {
    /// NVIDIA.
    pub const NVIDIA: u16 = zerohop_known::pci::NVIDIA_VENDOR;
    /// Mellanox / NVIDIA Networking.
    pub const MELLANOX: u16 = zerohop_known::nic::MELLANOX_VENDOR;
}

/// A PCIe link as the kernel reports it: the four attributes of a PCIe
/// function, each `None` when its file is absent (older kernels write the
/// `current_*` files without the `max_*` ones).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PciLink {
    /// `current_link_speed` as written (`16.0 GT/s PCIe`, `Unknown`).
    pub current_speed: Option<String>,
    /// `max_link_speed` as written: what the function itself supports.
    pub max_speed: Option<String>,
    /// `current_link_width` (0 when the link is down).
    pub current_width: Option<u32>,
    /// `max_link_width`: what the function itself supports.
    pub max_width: Option<u32>,
}

impl PciLink {
    /// The file names of the four attributes, in the order
    /// [`PciLink::missing`] reports them.
    pub const FILES: [&'static str; 4] = [
        "current_link_speed",
        "max_link_speed",
        "current_link_width",
        "max_link_width",
    ];

    /// The current speed in GT/s, `None` when absent or not a speed.
    pub fn current_gts(&self) -> Option<f64> {
        self.current_speed.as_deref().and_then(gts)
    }

    /// The maximum speed in GT/s, `None` when absent or not a speed.
    pub fn max_gts(&self) -> Option<f64> {
        self.max_speed.as_deref().and_then(gts)
    }

    /// The names of the attribute files that are absent.
    pub fn missing(&self) -> Vec<&'static str> {
        let present = [
            self.current_speed.is_some(),
            self.max_speed.is_some(),
            self.current_width.is_some(),
            self.max_width.is_some(),
        ];
        Self::FILES
            .into_iter()
            .zip(present)
            .filter(|(_, present)| !present)
            .map(|(file, _)| file)
            .collect()
    }
}

fn gts(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
}

/// SR-IOV capability of a physical function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Sriov {
    /// `sriov_totalvfs`: the most VFs the device (firmware) allows.
    pub total_vfs: u32,
    /// `sriov_numvfs`: VFs enabled now.
    pub num_vfs: u32,
}

/// One PCI function.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PciDevice {
    /// Address `dddd:bb:dd.f`.
    pub address: String,
    /// `class` upper 16 bits (class and subclass), `None` when unreadable.
    pub class: Option<u16>,
    /// `vendor`.
    pub vendor: Option<u16>,
    /// `device`.
    pub device: Option<u16>,
    /// Bound driver (`driver` link name).
    pub driver: Option<String>,
    /// `numa_node` (-1 when the firmware does not say).
    pub numa_node: Fact<i32>,
    /// `iommu_group` link name.
    pub iommu_group: Option<u32>,
    /// The PCIe link; `Ok(None)` when the device exposes no link files.
    pub link: Fact<PciLink>,
    /// SR-IOV capability, physical functions only.
    pub sriov: Fact<Sriov>,
    /// The physical function of a virtual function (`physfn` link).
    pub physfn: Option<String>,
    /// The bridges above the device, nearest first (from its real path).
    pub parents: Vec<String>,
    /// Why the class or IDs could not be read, when a file holding them
    /// exists but was unreadable or malformed: the function may be a GPU
    /// or a NIC, so "none here" cannot be concluded.
    pub unidentified: Option<Gap>,
}

impl PciDevice {
    /// Whether this is an NVIDIA GPU.
    pub fn is_nvidia_gpu(&self) -> bool {
        self.vendor == Some(vendor::NVIDIA)
            && matches!(self.class, Some(class::DISPLAY_3D | class::DISPLAY_VGA))
    }

    /// Whether this is an Ethernet or InfiniBand controller.
    pub fn is_nic(&self) -> bool {
        matches!(
            self.class,
            Some(class::NETWORK_ETHERNET | class::NETWORK_INFINIBAND | class::SERIAL_INFINIBAND)
        )
    }

    /// Whether this is a network controller of any subclass (`0x02xx`,
    /// ConnectX-3's `0x0280` included) or an InfiniBand controller of the
    /// serial-bus class: wider than [`PciDevice::is_nic`].
    pub fn is_network(&self) -> bool {
        self.class.is_some_and(class::is_network)
    }

    /// Whether this is an NVM Express controller.
    pub fn is_nvme(&self) -> bool {
        self.class == Some(class::STORAGE_NVME)
    }

    /// Whether this is an SR-IOV virtual function.
    pub fn is_vf(&self) -> bool {
        self.physfn.is_some()
    }

    /// A short label: `gpu 10de:2330`, `nic 15b3:1021`, `nvme 8086:0b60`.
    pub fn label(&self) -> String {
        let kind = if self.is_nvidia_gpu() {
            "gpu"
        } else if self.is_network() && self.is_vf() {
            "vf"
        } else if self.is_network() {
            "nic"
        } else if self.is_nvme() {
            "nvme"
        } else {
            "device"
        };
        match (self.vendor, self.device) {
            (Some(v), Some(d)) => format!("{kind} {v:04x}:{d:04x}"),
            _ => kind.to_owned(),
        }
    }

    /// The sysfs directory of this function.
    pub fn sysfs(&self) -> String {
        format!("{DEVICES}/{}", self.address)
    }
}

/// PCI facts.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PciFacts {
    /// Every function, sorted by address; `Ok(None)` when the host has no PCI bus in sysfs.
    pub devices: Fact<Vec<PciDevice>>,
    /// IOMMU groups and their member addresses; `Ok(None)` when the kernel
    /// has no IOMMU groups (IOMMU off).
    pub iommu_groups: Fact<BTreeMap<u32, Vec<String>>>,
}

impl PciFacts {
    /// Reads the PCI functions and IOMMU groups from `root`.
    pub fn collect(root: &HostRoot) -> PciFacts {
        let devices = devices(root);
        let iommu_groups = iommu_groups(root, &devices);
        PciFacts {
            devices,
            iommu_groups,
        }
    }

    /// The functions, or none when unknown.
    pub fn list(&self) -> &[PciDevice] {
        match &self.devices {
            Ok(Some(devices)) => devices,
            _ => &[],
        }
    }

    /// The NVIDIA GPUs: their physical functions (an SR-IOV VF of a vGPU
    /// setup is not a GPU of the host's own).
    pub fn nvidia_gpus(&self) -> impl Iterator<Item = &PciDevice> {
        self.list()
            .iter()
            .filter(|d| d.is_nvidia_gpu() && !d.is_vf())
    }

    /// Why some function's class or IDs could not be read (the first such
    /// function), or why the functions could not be listed at all: then
    /// the absence of a GPU or a NIC proves nothing.
    pub fn unidentified(&self) -> Option<&Gap> {
        match &self.devices {
            Err(gap) => Some(gap),
            Ok(devices) => devices
                .iter()
                .flatten()
                .find_map(|device| device.unidentified.as_ref()),
        }
    }

    /// The port `device` is linked to: the bridge directly above it (a
    /// root port or a switch's downstream port), when it is a PCI function
    /// of this host. Its `max_link_*` attributes bound the link as much as
    /// the device's own do.
    pub fn upstream_port(&self, device: &PciDevice) -> Option<&PciDevice> {
        self.get(device.parents.first()?)
    }

    /// The function at `address`.
    pub fn get(&self, address: &str) -> Option<&PciDevice> {
        let devices = self.list();
        devices
            .binary_search_by(|d| d.address.as_str().cmp(address))
            .ok()
            .map(|index| &devices[index])
    }
}

fn devices(root: &HostRoot) -> Fact<Vec<PciDevice>> {
    let Some(names) = root.list(DEVICES)? else {
        return Ok(None);
    };
    let names: Vec<&String> = names.iter().filter(|n| is_address(n)).collect();
    let mut devices = parallel_map(&names, |name| device(root, name));
    devices.sort_by(|a, b| a.address.cmp(&b.address));
    Ok(Some(devices))
}

/// Class, vendor, device and driver of a function from its `uevent`, one
/// read instead of four; `None` when the file is absent or incomplete (some
/// captures leave it out), and the separate attributes are read instead.
/// A `uevent` that exists but cannot be read is a gap.
struct Uevent {
    class: u16,
    vendor: u16,
    device: u16,
    driver: Option<String>,
}

fn uevent(root: &HostRoot, dir: &str) -> Result<Option<Uevent>, Gap> {
    let Some(text) = root.read_value(&format!("{dir}/uevent"))? else {
        return Ok(None);
    };
    Ok(parse_uevent(&text))
}

fn parse_uevent(text: &str) -> Option<Uevent> {
    let mut class = None;
    let mut ids = None;
    let mut driver = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("PCI_CLASS", value)) => {
                class = u32::from_str_radix(value, 16)
                    .ok()
                    .and_then(|c| u16::try_from(c >> 8).ok())
            }
            Some(("PCI_ID", value)) => {
                let (vendor, device) = value.split_once(':')?;
                ids = Some((
                    u16::from_str_radix(vendor, 16).ok()?,
                    u16::from_str_radix(device, 16).ok()?,
                ));
            }
            Some(("DRIVER", value)) => driver = Some(value.to_owned()),
            _ => {}
        }
    }
    let (vendor, device) = ids?;
    Some(Uevent {
        class: class?,
        vendor,
        device,
        driver,
    })
}

fn device(root: &HostRoot, address: &str) -> PciDevice {
    let dir = format!("{DEVICES}/{address}");
    let unidentified = std::cell::RefCell::new(None);
    let hex = |file: &str| -> Option<u32> {
        let path = format!("{dir}/{file}");
        let parsed = read_parsed(root, &path, |text| {
            u32::from_str_radix(text.trim_start_matches("0x"), 16)
        });
        parsed.unwrap_or_else(|gap| {
            unidentified.borrow_mut().get_or_insert(gap);
            None
        })
    };
    let (class, vendor, device, driver) = match uevent(root, &dir) {
        Ok(Some(event)) => (
            Some(event.class),
            Some(event.vendor),
            Some(event.device),
            event.driver,
        ),
        other => {
            if let Err(gap) = other {
                unidentified.borrow_mut().get_or_insert(gap);
            }
            (
                hex("class").and_then(|c| u16::try_from(c >> 8).ok()),
                hex("vendor").and_then(|v| u16::try_from(v).ok()),
                hex("device").and_then(|v| u16::try_from(v).ok()),
                root.link_name(&format!("{dir}/driver")).ok().flatten(),
            )
        }
    };
    // Identified after all (the attributes stood in for `uevent`): what
    // could not be read did not matter.
    if class.is_some() && vendor.is_some() {
        unidentified.borrow_mut().take();
    }
    let physfn = root.link_name(&format!("{dir}/physfn")).ok().flatten();
    let is_vf = physfn.is_some();
    let parents = root
        .canonical(&dir)
        .ok()
        .flatten()
        .map(|real| parents_of(&real, address))
        .unwrap_or_default();
    PciDevice {
        address: address.to_owned(),
        class,
        vendor,
        device,
        driver,
        // A VF sits on its PF's node; its own attribute repeats the PF's.
        numa_node: if is_vf {
            Ok(None)
        } else {
            read_parsed(root, &format!("{dir}/numa_node"), str::parse::<i32>)
        },
        iommu_group: root
            .link_name(&format!("{dir}/iommu_group"))
            .ok()
            .flatten()
            .and_then(|g| g.parse().ok()),
        // A VF's link attributes mirror its PF's and its SR-IOV files do
        // not exist; skipping them keeps a host with thousands of VFs fast.
        link: if is_vf { Ok(None) } else { link(root, &dir) },
        sriov: if is_vf { Ok(None) } else { sriov(root, &dir) },
        physfn,
        parents,
        unidentified: unidentified.into_inner(),
    }
}

fn link(root: &HostRoot, dir: &str) -> Fact<PciLink> {
    let value = |file: &str| root.read_value(&format!("{dir}/{file}"));
    let width = |file: &str| read_parsed(root, &format!("{dir}/{file}"), str::parse::<u32>);
    let link = PciLink {
        current_speed: value("current_link_speed")?,
        max_speed: value("max_link_speed")?,
        current_width: width("current_link_width")?,
        max_width: width("max_link_width")?,
    };
    if link.missing().len() == PciLink::FILES.len() {
        return Ok(None);
    }
    Ok(Some(link))
}

fn sriov(root: &HostRoot, dir: &str) -> Fact<Sriov> {
    let total = read_parsed(root, &format!("{dir}/sriov_totalvfs"), str::parse::<u32>)?;
    let num = read_parsed(root, &format!("{dir}/sriov_numvfs"), str::parse::<u32>)?;
    match (total, num) {
        (None, None) => Ok(None),
        (Some(total_vfs), num) => Ok(Some(Sriov {
            total_vfs,
            num_vfs: num.unwrap_or(0),
        })),
        (None, Some(_)) => Err(Gap::malformed(
            &format!("{dir}/sriov_totalvfs"),
            "sriov_numvfs exists without it",
        )),
    }
}

/// IOMMU groups with their PCI members. The kernel lists a group's members
/// in `/sys/kernel/iommu_groups/<g>/devices` and links each member's
/// `iommu_group` to it; the links were read with the devices, so the groups
/// are built from them, and the directory is listed only to tell whether
/// the kernel has groups at all (it has none with the IOMMU off).
fn iommu_groups(
    root: &HostRoot,
    devices: &Fact<Vec<PciDevice>>,
) -> Fact<BTreeMap<u32, Vec<String>>> {
    const DIR: &str = "/sys/kernel/iommu_groups";
    let Some(names) = root.list(DIR)? else {
        return Ok(None);
    };
    let mut groups: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for name in names {
        let group: u32 = name.parse().map_err(|_| {
            Gap::malformed(
                &format!("{DIR}/{name}"),
                format!("`{}` is not a group number", clip(&name)),
            )
        })?;
        groups.insert(group, Vec::new());
    }
    if groups.is_empty() {
        return Ok(None);
    }
    if let Ok(Some(devices)) = devices {
        for device in devices {
            if let Some(members) = device.iommu_group.and_then(|g| groups.get_mut(&g)) {
                members.push(device.address.clone());
            }
        }
    }
    Ok(Some(groups))
}

/// Whether `name` looks like a PCI address `dddd:bb:dd.f`.
pub fn is_address(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 12
        && name.split(':').count() == 3
        && name.contains('.')
        && bytes
            .iter()
            .all(|b| b.is_ascii_hexdigit() || *b == b':' || *b == b'.')
}

/// The PCI addresses above `address` in its real sysfs path, nearest first:
/// `/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0` gives
/// `0000:01:00.0`, `0000:00:01.0` for `0000:02:00.0`.
pub fn parents_of(real_path: &str, address: &str) -> Vec<String> {
    let mut parents: Vec<String> = real_path
        .split('/')
        .filter(|part| is_address(part) && *part != address)
        .map(str::to_owned)
        .collect();
    parents.reverse();
    parents
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_are_nearest_first() {
        let real = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0";
        assert_eq!(
            parents_of(real, "0000:02:00.0"),
            vec!["0000:01:00.0", "0000:00:01.0"]
        );
        assert!(is_address("0000:3b:00.1"));
        assert!(!is_address("pci0000:00"));
        assert!(!is_address("0000:3b:00.1:x"));
    }

    #[test]
    fn link_speed_numbers() {
        let link = PciLink {
            current_speed: Some("2.5 GT/s PCIe".into()),
            max_speed: Some("32.0 GT/s PCIe".into()),
            current_width: Some(16),
            max_width: None,
        };
        assert_eq!(link.current_gts(), Some(2.5));
        assert_eq!(link.max_gts(), Some(32.0));
        assert_eq!(link.missing(), vec!["max_link_width"]);
        assert_eq!(gts("Unknown"), None);
    }
}
