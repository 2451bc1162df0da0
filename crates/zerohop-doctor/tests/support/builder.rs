//! A host root assembled from real command output, for captures that hold
//! no sysfs tree: `lspci -vvv` (functions, classes, links, NUMA nodes,
//! drivers, and the PCI tree from the bridges' bus numbers), `lspci -tv`
//! (the tree where only some functions have `-vvv` output), `ibstat` and
//! `ibv_devinfo` (RDMA devices and their ports) and `numactl -H` (NUMA
//! nodes and their CPUs).
//!
//! The parsers read only what the doctor needs and panic on output they do
//! not understand: they read fixed corpus files, and a silent gap would
//! make a test pass on a root that is not the captured host. What the
//! commands do not show (a field `lspci` leaves out) is left out of the
//! root, never guessed.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use tempfile::TempDir;
use zerohop_host::parse::rdma::{PhysState, PortState};
use zerohop_known::nic::{MELLANOX_VENDOR, MODELS};
use zerohop_known::pci::{NVIDIA_VENDOR, class};

/// One PCI function as `lspci -vvv` (or `lspci -tv`) shows it.
#[derive(Debug, Clone, Default)]
pub struct Function {
    /// `dddd:bb:dd.f`.
    pub address: String,
    /// The text after the address: `3D controller: NVIDIA Corporation …`
    /// for `-vvv`, the vendor and model only for `-tv`.
    pub description: String,
    /// The class code, from the class name `lspci` prints.
    pub class: Option<u16>,
    /// The vendor ID, for the vendors the doctor tells apart.
    pub vendor: Option<u16>,
    /// The device ID, when `lspci` prints it (`Device 2330`) or the model
    /// names a NIC zerohop knows (`[ConnectX-7]`).
    pub device: Option<u16>,
    /// `NUMA node:`; `lspci` prints it only when the kernel knows the node.
    pub numa_node: Option<i32>,
    /// `Kernel driver in use:`.
    pub driver: Option<String>,
    /// `LnkCap:` speed (GT/s text, `32`) and width.
    pub link_cap: Option<(String, u32)>,
    /// `LnkSta:` speed and width.
    pub link_sta: Option<(String, u32)>,
    /// A bridge's secondary bus (`Bus: … secondary=01`).
    pub secondary: Option<u8>,
}

/// The class codes of the class names `lspci` prints, for the classes the
/// doctor looks at (`pci.ids`, class section).
fn class_code(name: &str) -> Option<u16> {
    Some(match name {
        "3D controller" => class::DISPLAY_3D,
        "VGA compatible controller" => class::DISPLAY_VGA,
        "Ethernet controller" => class::NETWORK_ETHERNET,
        "Infiniband controller" => class::NETWORK_INFINIBAND,
        "Network controller" => class::NETWORK_OTHER,
        "Non-Volatile memory controller" => class::STORAGE_NVME,
        "PCI bridge" => class::BRIDGE_PCI,
        _ => return None,
    })
}

/// Vendor and device IDs from a description (`NVIDIA Corporation Device
/// 2330`, `Mellanox Technologies MT2910 Family [ConnectX-7]`).
fn ids(description: &str) -> (Option<u16>, Option<u16>) {
    let vendor = if description.contains("NVIDIA Corporation") {
        Some(NVIDIA_VENDOR)
    } else if description.contains("Mellanox Technologies") {
        Some(MELLANOX_VENDOR)
    } else if description.contains("ASPEED Technology") {
        // The BMC's display controller of most servers (pci.ids `1a03`).
        Some(0x1a03)
    } else if description.contains("Matrox Electronics Systems") {
        // The other common BMC display controller (pci.ids `102b`).
        Some(0x102b)
    } else {
        None
    };
    let device = description
        .split_once(" Device ")
        .and_then(|(_, rest)| rest.get(..4))
        .and_then(|hex| u16::from_str_radix(hex, 16).ok())
        .or_else(|| {
            let model = description.split_once('[')?.1.split_once(']')?.0;
            let known = MODELS.iter().find(|m| m.name == model)?;
            u16::from_str_radix(known.pf_device_id, 16).ok()
        });
    (vendor, device)
}

/// `01:00.0` or `0000:01:00.0` as `0000:01:00.0`.
fn full_address(address: &str) -> String {
    if address.matches(':').count() == 2 {
        address.to_owned()
    } else {
        format!("0000:{address}")
    }
}

/// `Speed 32GT/s (ok), Width x16 (ok)` as (`32`, 16).
fn speed_and_width(text: &str) -> (String, u32) {
    let speed = text
        .split("Speed ")
        .nth(1)
        .and_then(|rest| rest.split("GT/s").next())
        .unwrap_or_else(|| panic!("no speed in `{text}`"));
    let width = text
        .split("Width x")
        .nth(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no width in `{text}`"));
    (speed.trim().to_owned(), width)
}

/// `5` as sysfs writes it: `5.0 GT/s PCIe`.
fn sysfs_speed(gts: &str) -> String {
    let value: f64 = gts.parse().unwrap_or_else(|_| panic!("speed `{gts}`"));
    format!("{value:.1} GT/s PCIe")
}

/// The functions of an `lspci -vvv` listing, in its order.
pub fn lspci_vvv(text: &str) -> Vec<Function> {
    let mut functions: Vec<Function> = Vec::new();
    for line in text.lines() {
        let indented = line.starts_with([' ', '\t']);
        if !indented && !line.trim().is_empty() {
            let (address, description) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("not a function line: `{line}`"));
            let class_name = description.split(':').next().unwrap_or("");
            let class_name = class_name.split(" [").next().unwrap_or(class_name);
            let (vendor, device) = ids(description);
            functions.push(Function {
                address: full_address(address),
                description: description.to_owned(),
                class: class_code(class_name),
                vendor,
                device,
                ..Function::default()
            });
            continue;
        }
        let Some(function) = functions.last_mut() else {
            continue;
        };
        let field = line.trim();
        if let Some(node) = field.strip_prefix("NUMA node: ") {
            function.numa_node = node.trim().parse().ok();
        } else if let Some(driver) = field.strip_prefix("Kernel driver in use: ") {
            function.driver = Some(driver.trim().to_owned());
        } else if let Some(cap) = field.strip_prefix("LnkCap:") {
            function
                .link_cap
                .get_or_insert_with(|| speed_and_width(cap));
        } else if let Some(sta) = field.strip_prefix("LnkSta:") {
            function
                .link_sta
                .get_or_insert_with(|| speed_and_width(sta));
        } else if let Some(bus) = field.strip_prefix("Bus: ") {
            let secondary = bus
                .split("secondary=")
                .nth(1)
                .and_then(|rest| rest.get(..2))
                .and_then(|hex| u8::from_str_radix(hex, 16).ok());
            function.secondary = secondary;
        }
    }
    functions
}

/// Where each function of an `lspci -vvv` listing sits: the bridges above
/// it, top first, found from the bridges' secondary bus numbers.
pub fn tree_from_buses(functions: &[Function]) -> BTreeMap<String, Vec<String>> {
    let bridge_of: BTreeMap<String, &str> = functions
        .iter()
        .filter_map(|f| {
            let domain = &f.address[..4];
            f.secondary
                .map(|bus| (format!("{domain}:{bus:02x}"), f.address.as_str()))
        })
        .collect();
    functions
        .iter()
        .map(|f| {
            let mut chain = Vec::new();
            let mut bus = f.address[..7].to_owned();
            while let Some(bridge) = bridge_of.get(&bus) {
                assert!(chain.len() < 64, "a bus loop at {bus}");
                chain.push((*bridge).to_owned());
                bus = bridge[..7].to_owned();
            }
            chain.reverse();
            (f.address.clone(), chain)
        })
        .collect()
}

/// The functions of an `lspci -tv` tree, each with the bridges above it
/// (top first) and its description.
pub fn lspci_tree(text: &str) -> Vec<(Function, Vec<String>)> {
    struct Context {
        column: usize,
        bus: String,
        chain: Vec<String>,
    }
    let mut stack: Vec<Context> = Vec::new();
    let mut functions = Vec::new();
    for line in text.lines() {
        let bytes = line.as_bytes();
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        let mut i = 0;
        while i < bytes.len() {
            // A root bus: `[0000:20]`.
            if bytes[i] == b'['
                && bytes.len() > i + 9
                && bytes[i + 5] == b':'
                && bytes[i + 8] == b']'
                && bytes[i + 1..i + 5].iter().all(|b| hex(*b))
            {
                stack.retain(|c| c.column < i);
                stack.push(Context {
                    column: i,
                    bus: line[i + 1..i + 8].to_owned(),
                    chain: Vec::new(),
                });
                i += 9;
                continue;
            }
            // A function: `-01.1`, maybe a bridge: `-01.1-[21]` or `-[61-73]`.
            let is_function = i > 0
                && bytes[i - 1] == b'-'
                && bytes.len() >= i + 4
                && hex(bytes[i])
                && hex(bytes[i + 1])
                && bytes[i + 2] == b'.'
                && hex(bytes[i + 3])
                && bytes.get(i + 4).is_none_or(|b| *b == b' ' || *b == b'-');
            if !is_function {
                i += 1;
                continue;
            }
            stack.retain(|c| c.column < i);
            let parent = stack
                .last()
                .unwrap_or_else(|| panic!("no bus for `{line}`"));
            let address = format!("{}:{}", parent.bus, &line[i..i + 4]);
            let domain = parent.bus[..4].to_owned();
            let chain = parent.chain.clone();
            let rest = &line[i + 4..];
            if let Some(description) = rest.strip_prefix("  ") {
                let (vendor, device) = ids(description);
                functions.push((
                    Function {
                        address,
                        description: description.trim().to_owned(),
                        vendor,
                        device,
                        ..Function::default()
                    },
                    chain,
                ));
                break;
            }
            functions.push((
                Function {
                    address: address.clone(),
                    ..Function::default()
                },
                chain.clone(),
            ));
            let column = i;
            i += 4;
            if let Some(bus) = rest.strip_prefix("-[") {
                let digits: String = bus.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
                let mut chain = chain;
                chain.push(address);
                stack.push(Context {
                    column,
                    bus: format!("{domain}:{digits}"),
                    chain,
                });
            }
        }
    }
    functions
}

/// One port of an RDMA device as `ibstat` or `ibv_devinfo` shows it.
#[derive(Debug, Clone)]
pub struct CaPort {
    /// The port number.
    pub number: u32,
    /// The state.
    pub state: PortState,
    /// The physical state, when shown.
    pub phys_state: Option<PhysState>,
    /// The rate in Gb/s, when shown.
    pub rate: Option<u32>,
    /// `InfiniBand` or `Ethernet`.
    pub link_layer: String,
}

/// One RDMA device (`CA 'mlx5_0'` / `hca_id: mlx5_0`).
#[derive(Debug, Clone)]
pub struct Ca {
    /// The device name.
    pub name: String,
    /// The PCI device ID: `CA type: MT4129` and `vendor_part_id: 4129` are
    /// the decimal device ID (0x1021, a ConnectX-7).
    pub device: u16,
    /// The ports.
    pub ports: Vec<CaPort>,
}

/// The devices of an `ibstat` listing.
pub fn ibstat(text: &str) -> Vec<Ca> {
    let mut cas: Vec<Ca> = Vec::new();
    for line in text.lines() {
        let field = line.trim().trim_start_matches('`');
        if let Some(name) = field.strip_prefix("CA '") {
            cas.push(Ca {
                name: name.trim_end_matches('\'').to_owned(),
                device: 0,
                ports: Vec::new(),
            });
            continue;
        }
        let Some(ca) = cas.last_mut() else { continue };
        if let Some(kind) = field.strip_prefix("CA type: MT") {
            ca.device = kind
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("CA type `{kind}`"));
        } else if let Some(port) = field
            .strip_prefix("Port ")
            .and_then(|p| p.strip_suffix(':'))
        {
            ca.ports.push(CaPort {
                number: port.parse().unwrap_or_else(|_| panic!("port `{port}`")),
                state: PortState::Down,
                phys_state: None,
                rate: None,
                link_layer: String::new(),
            });
        } else if let Some(port) = ca.ports.last_mut() {
            if let Some(state) = field.strip_prefix("State: ") {
                port.state = match state.trim() {
                    "Active" => PortState::Active,
                    "Down" => PortState::Down,
                    "Initializing" => PortState::Init,
                    "Armed" => PortState::Armed,
                    other => panic!("state `{other}`"),
                };
            } else if let Some(phys) = field.strip_prefix("Physical state: ") {
                port.phys_state = Some(match phys.trim() {
                    "LinkUp" => PhysState::LinkUp,
                    "Disabled" => PhysState::Disabled,
                    "Polling" => PhysState::Polling,
                    "Sleep" => PhysState::Sleep,
                    other => panic!("physical state `{other}`"),
                });
            } else if let Some(rate) = field.strip_prefix("Rate: ") {
                port.rate = Some(
                    rate.trim()
                        .parse()
                        .unwrap_or_else(|_| panic!("rate `{rate}`")),
                );
            } else if let Some(layer) = field.strip_prefix("Link layer: ") {
                port.link_layer = layer.trim().to_owned();
            }
        }
    }
    cas
}

/// The devices of an `ibv_devinfo` listing (without `-v`: no rate).
pub fn ibv_devinfo(text: &str) -> Vec<Ca> {
    let mut cas: Vec<Ca> = Vec::new();
    for line in text.lines() {
        let field = line.trim();
        if let Some(name) = field.strip_prefix("hca_id:") {
            cas.push(Ca {
                name: name.trim().to_owned(),
                device: 0,
                ports: Vec::new(),
            });
            continue;
        }
        let Some(ca) = cas.last_mut() else { continue };
        let Some((key, value)) = field.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "vendor_part_id" => {
                ca.device = value.parse().unwrap_or_else(|_| panic!("part `{value}`"));
            }
            "port" => ca.ports.push(CaPort {
                number: value.parse().unwrap_or_else(|_| panic!("port `{value}`")),
                state: PortState::Down,
                phys_state: None,
                rate: None,
                link_layer: String::new(),
            }),
            "state" => {
                if let Some(port) = ca.ports.last_mut() {
                    port.state = match value.split_whitespace().next() {
                        Some("PORT_ACTIVE") => PortState::Active,
                        Some("PORT_DOWN") => PortState::Down,
                        Some("PORT_INIT") => PortState::Init,
                        Some("PORT_ARMED") => PortState::Armed,
                        other => panic!("state `{other:?}`"),
                    };
                }
            }
            "link_layer" => {
                if let Some(port) = ca.ports.last_mut() {
                    port.link_layer = value.to_owned();
                }
            }
            _ => {}
        }
    }
    cas
}

/// The nodes of `numactl -H` with their CPUs as a sysfs `cpulist`.
pub fn numactl(text: &str) -> Vec<(u32, String)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("node ")?;
            let (node, cpus) = rest.split_once(" cpus:")?;
            let list: Vec<&str> = cpus.split_whitespace().collect();
            Some((node.trim().parse().ok()?, list.join(",")))
        })
        .collect()
}

/// A host root under construction, in a temporary directory.
pub struct Host {
    dir: TempDir,
    /// Each function's directory under `/sys/devices`, by address.
    paths: BTreeMap<String, String>,
}

impl Host {
    /// An empty root.
    pub fn new() -> Host {
        Host {
            dir: super::scratch(),
            paths: BTreeMap::new(),
        }
    }

    /// The root directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn at(&self, host_path: &str) -> PathBuf {
        self.dir.path().join(host_path.trim_start_matches('/'))
    }

    /// Writes `text` and a newline at `host_path`.
    pub fn file(&self, host_path: &str, text: &str) {
        let path = self.at(host_path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, format!("{text}\n")).unwrap();
    }

    fn link(&self, host_path: &str, target: &str) {
        let path = self.at(host_path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(target, path).unwrap();
    }

    /// Adds a PCI function below `chain` (the bridges above it, top
    /// first) as sysfs lays it out: its directory under
    /// `/sys/devices/pci<domain:bus>/…`, the `/sys/bus/pci/devices` link,
    /// the attributes `lspci` showed and its `driver` link. A bridge in
    /// `chain` that was not added gets a bare directory.
    pub fn function(&mut self, chain: &[String], function: &Function) {
        let top = chain.first().unwrap_or(&function.address);
        let mut rel = format!("pci{}", &top[..7]);
        for bridge in chain {
            rel = format!("{rel}/{bridge}");
        }
        rel = format!("{rel}/{}", function.address);
        let dir = format!("/sys/devices/{rel}");
        fs::create_dir_all(self.at(&dir)).unwrap();
        if let Some(class) = function.class {
            self.file(&format!("{dir}/class"), &format!("0x{class:04x}00"));
        }
        if let Some(vendor) = function.vendor {
            self.file(&format!("{dir}/vendor"), &format!("0x{vendor:04x}"));
        }
        if let Some(device) = function.device {
            self.file(&format!("{dir}/device"), &format!("0x{device:04x}"));
        }
        if let Some(node) = function.numa_node {
            self.file(&format!("{dir}/numa_node"), &node.to_string());
        }
        if let Some((speed, width)) = &function.link_cap {
            self.file(&format!("{dir}/max_link_speed"), &sysfs_speed(speed));
            self.file(&format!("{dir}/max_link_width"), &width.to_string());
        }
        if let Some((speed, width)) = &function.link_sta {
            self.file(&format!("{dir}/current_link_speed"), &sysfs_speed(speed));
            self.file(&format!("{dir}/current_link_width"), &width.to_string());
        }
        let up = "../".repeat(rel.matches('/').count() + 2);
        if let Some(driver) = &function.driver {
            self.link(
                &format!("{dir}/driver"),
                &format!("{up}bus/pci/drivers/{driver}"),
            );
        }
        self.link(
            &format!("/sys/bus/pci/devices/{}", function.address),
            &format!("../../../devices/{rel}"),
        );
        self.paths.insert(function.address.clone(), rel);
    }

    /// Adds RDMA device `ca` on the function at `address`, as mlx5 lays
    /// it out: `…/<function>/infiniband/<name>` with its `device` link, the
    /// `/sys/class/infiniband` link, `hca_type` and each port's `state`,
    /// `phys_state`, `rate` and `link_layer` (those the command showed).
    pub fn rdma(&self, address: &str, ca: &Ca) {
        let rel = self
            .paths
            .get(address)
            .unwrap_or_else(|| panic!("{address} was not added"));
        let dir = format!("/sys/devices/{rel}/infiniband/{}", ca.name);
        self.file(&format!("{dir}/hca_type"), &format!("MT{}", ca.device));
        self.link(&format!("{dir}/device"), "../..");
        self.link(
            &format!("/sys/class/infiniband/{}", ca.name),
            &format!("../../devices/{rel}/infiniband/{}", ca.name),
        );
        for port in &ca.ports {
            let port_dir = format!("{dir}/ports/{}", port.number);
            self.file(&format!("{port_dir}/state"), port.state.as_str());
            if let Some(phys) = port.phys_state {
                self.file(&format!("{port_dir}/phys_state"), phys.as_str());
            }
            if let Some(rate) = port.rate {
                self.file(&format!("{port_dir}/rate"), &format!("{rate} Gb/sec"));
            }
            self.file(&format!("{port_dir}/link_layer"), &port.link_layer);
        }
    }

    /// Adds NUMA node `id` with its CPUs.
    pub fn numa_node(&self, id: u32, cpulist: &str) {
        self.file(
            &format!("/sys/devices/system/node/node{id}/cpulist"),
            cpulist,
        );
    }
}
