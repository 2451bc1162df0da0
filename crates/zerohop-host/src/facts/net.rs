//! Network interfaces from `/sys/class/net`: MTU, carrier, the PCI
//! function behind them, and the DCQCN enable bits of `ecn/roce_np|roce_rp`.

use std::collections::BTreeMap;

use crate::facts::pci::is_address;
use crate::facts::{Fact, Gap, clip, parallel_map, read_parsed};
use crate::root::HostRoot;

/// Where the kernel lists network interfaces.
pub const NET_DIR: &str = "/sys/class/net";

/// DCQCN enable bits per priority: `ecn/roce_np/enable/<prio>` (notification
/// point, the receiver that sends CNPs) and `ecn/roce_rp/enable/<prio>`
/// (reaction point, the sender that slows down).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Ecn {
    /// Notification point enable bits; `Ok(None)` when the driver does not
    /// expose the directory (inbox drivers do not).
    pub np: Fact<BTreeMap<u8, bool>>,
    /// Reaction point enable bits, like [`Ecn::np`].
    pub rp: Fact<BTreeMap<u8, bool>>,
}

/// One network interface.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NetDevice {
    /// Interface name.
    pub name: String,
    /// `mtu`.
    pub mtu: Fact<u32>,
    /// `carrier`: `true` when the link is up. The kernel refuses the read
    /// on an interface that is administratively down, which is a gap here.
    pub carrier: Fact<bool>,
    /// `operstate` (`up`, `down`, `lowerlayerdown`…).
    pub operstate: Option<String>,
    /// The PCI function behind the interface (`device` link), if any.
    pub pci: Option<String>,
    /// DCQCN enable bits.
    pub ecn: Ecn,
}

impl NetDevice {
    /// The interface's sysfs directory.
    pub fn sysfs(&self) -> String {
        format!("{NET_DIR}/{}", self.name)
    }
}

/// Network interfaces, sorted by name; `Ok(None)` when `/sys/class/net` is absent.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NetFacts {
    /// Every interface.
    pub devices: Fact<Vec<NetDevice>>,
}

impl NetFacts {
    /// Reads `/sys/class/net/*` from `root`.
    pub fn collect(root: &HostRoot) -> NetFacts {
        NetFacts {
            devices: devices(root),
        }
    }

    /// The interfaces, or none when unknown.
    pub fn list(&self) -> &[NetDevice] {
        match &self.devices {
            Ok(Some(devices)) => devices,
            _ => &[],
        }
    }

    /// The interface named `name`.
    pub fn get(&self, name: &str) -> Option<&NetDevice> {
        let devices = self.list();
        devices
            .binary_search_by(|d| d.name.as_str().cmp(name))
            .ok()
            .map(|index| &devices[index])
    }
}

fn devices(root: &HostRoot) -> Fact<Vec<NetDevice>> {
    let Some(names) = root.list(NET_DIR)? else {
        return Ok(None);
    };
    let mut devices: Vec<NetDevice> = parallel_map(&names, |name| device(root, name))
        .into_iter()
        // `bonding_masters` is a file in the same directory: nothing under it.
        .filter(|d| d.pci.is_some() || d.operstate.is_some() || !matches!(d.mtu, Ok(None)))
        .collect();
    devices.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Some(devices))
}

fn device(root: &HostRoot, name: &str) -> NetDevice {
    let dir = format!("{NET_DIR}/{name}");
    let pci = root
        .canonical(&format!("{dir}/device"))
        .ok()
        .flatten()
        .and_then(|real| {
            real.rsplit('/')
                .find(|part| !part.is_empty())
                .map(str::to_owned)
        })
        .filter(|last| is_address(last));
    NetDevice {
        name: name.to_owned(),
        mtu: read_parsed(root, &format!("{dir}/mtu"), str::parse::<u32>),
        carrier: read_parsed(root, &format!("{dir}/carrier"), parse_flag),
        operstate: root.read_value(&format!("{dir}/operstate")).ok().flatten(),
        pci,
        ecn: Ecn {
            np: enable_bits(root, &format!("{dir}/ecn/roce_np/enable")),
            rp: enable_bits(root, &format!("{dir}/ecn/roce_rp/enable")),
        },
    }
}

fn parse_flag(text: &str) -> Result<bool, String> {
    match text {
        "1" => Ok(true),
        "0" => Ok(false),
        _ => Err("expected 0 or 1".to_owned()),
    }
}

fn enable_bits(root: &HostRoot, dir: &str) -> Fact<BTreeMap<u8, bool>> {
    let Some(names) = root.list(dir)? else {
        return Ok(None);
    };
    let mut bits = BTreeMap::new();
    for name in names {
        let path = format!("{dir}/{name}");
        let priority: u8 = name.parse().ok().filter(|p| *p < 8).ok_or_else(|| {
            Gap::malformed(&path, format!("`{}` is not a priority 0-7", clip(&name)))
        })?;
        if let Some(bit) = read_parsed(root, &path, parse_flag)? {
            bits.insert(priority, bit);
        }
    }
    Ok(Some(bits))
}
