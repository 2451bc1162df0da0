//! What the drawing shows, before any coordinate: the host's NUMA nodes,
//! host bridges, PCIe ports and switches down to the GPUs, RDMA NICs and
//! NVMe controllers, each edge with its link and each fault marked.
//!
//! Only the branches that lead to one of those devices are kept, SR-IOV
//! virtual functions are counted on their physical function, and runs of
//! alike branches (eight NVMe drives behind one switch, each on its own
//! port) are drawn once with their count: a host of 2,080 functions stays
//! a drawing of a few dozen rows.

use std::collections::HashMap;

use zerohop_host::Facts;
use zerohop_host::facts::{PciDevice, PciLink, RdmaDevice, RdmaPort};
use zerohop_host::parse::rdma::{LinkLayer, PortState};
use zerohop_known::nic;

use crate::topology::{Distance, Topology, host_bridge, known_node};

/// What a box stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// The whole host: the link between NUMA nodes runs through it.
    Host,
    /// A NUMA node (a CPU socket and its memory).
    Numa,
    /// A PCIe host bridge (root complex), `pci0000:17`.
    HostBridge,
    /// A root port or a switch port.
    Bridge,
    /// An NVIDIA GPU.
    Gpu,
    /// An RDMA NIC's physical function.
    Nic,
    /// An NVMe controller.
    Nvme,
}

impl Kind {
    /// Whether boxes of this kind are devices (the leaves).
    pub(crate) fn is_device(self) -> bool {
        matches!(self, Kind::Gpu | Kind::Nic | Kind::Nvme)
    }
}

/// How bad a mark is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Severity {
    /// Worth a look (a GPU's link below its maximum speed while idle).
    Note,
    /// A fault on the data path.
    Fault,
}

/// The PCIe link into a box from the box above it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Link {
    /// `x16 32GT/s`, or `link down`.
    pub(crate) label: String,
    /// What is wrong with it (`max x16 32GT/s`), when something is.
    pub(crate) mark: Option<(Severity, String)>,
}

/// One box.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// What it stands for.
    pub(crate) kind: Kind,
    /// Its key among its siblings (address, node number).
    pub(crate) key: String,
    /// Its text, one entry per line, as read from the host (not escaped).
    pub(crate) lines: Vec<String>,
    /// The worst fault of the box itself (a DOWN port).
    pub(crate) mark: Option<Severity>,
    /// The link from its parent, when it has one worth labelling.
    pub(crate) link: Option<Link>,
    /// Its parent's index.
    pub(crate) parent: Option<usize>,
    /// Its children's indexes, in address order.
    pub(crate) children: Vec<usize>,
    /// How many alike branches this one stands for (1 when only itself).
    pub(crate) repeats: usize,
    /// Whether a GPU's path runs through it: such a branch is never
    /// folded into its neighbours.
    pub(crate) on_path: bool,
}

/// A GPU's path to its NIC.
#[derive(Debug, Clone)]
pub(crate) struct Path {
    /// The GPU's box.
    pub(crate) gpu: usize,
    /// The NIC's box.
    pub(crate) nic: usize,
    /// The distance class.
    pub(crate) distance: Option<Distance>,
}

/// The drawing's content.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    /// Every box; the host is the first.
    pub(crate) nodes: Vec<Node>,
    /// One path per paired GPU.
    pub(crate) paths: Vec<Path>,
}

/// The index of the host box.
pub(crate) const HOST: usize = 0;

impl Tree {
    /// The tree of `facts`, with the pairings of `topology`; `host` names
    /// the host box.
    pub(crate) fn of(facts: &Facts, topology: &Topology, host: &str) -> Tree {
        let mut tree = Tree {
            nodes: vec![Node {
                kind: Kind::Host,
                key: String::new(),
                lines: vec![host.to_owned()],
                mark: None,
                link: None,
                parent: None,
                children: Vec::new(),
                repeats: 1,
                on_path: false,
            }],
            paths: Vec::new(),
        };
        let pci = &facts.pci;
        let multi_node = facts.numa_nodes().len() > 1;
        let nvme_names = nvme_names(facts);
        let mut devices: Vec<(Kind, &PciDevice, Vec<String>, Option<Severity>)> = Vec::new();
        for gpu in pci.nvidia_gpus() {
            let pairing = topology.pairings.iter().find(|p| p.gpu == gpu.address);
            let route = match pairing.and_then(|p| p.nic.as_deref().map(|n| (n, p.distance))) {
                Some((nic, distance)) => {
                    let port = topology
                        .nics
                        .iter()
                        .find(|x| x.name == nic)
                        .map_or(1, |x| x.port);
                    format!("→ {nic}:{port} {}", describe(distance))
                }
                None => "no rdma nic to pair with".to_owned(),
            };
            let mark = pairing
                .and_then(|p| p.distance)
                .filter(|d| !d.gdr_by_default())
                .map(|_| Severity::Fault);
            devices.push((
                Kind::Gpu,
                gpu,
                vec![format!("GPU {} {}", gpu.address, ids(gpu)), route],
                mark,
            ));
        }
        for nic in &topology.nics {
            let Some(function) = pci.get(&nic.pci) else {
                continue;
            };
            let Some(device) = facts.rdma.list().iter().find(|d| d.name == nic.name) else {
                continue;
            };
            let (ports, mark) = ports(device);
            let vfs = match &function.sriov {
                Ok(Some(sriov)) if sriov.num_vfs > 0 => format!(" · {} VFs", sriov.num_vfs),
                _ => String::new(),
            };
            let model = function
                .device
                .and_then(|id| nic::by_pf_id(&format!("{id:04x}")))
                .map_or_else(|| ids(function), |m| m.name.to_owned());
            devices.push((
                Kind::Nic,
                function,
                vec![
                    format!("{} {} {model}", nic.name, function.address),
                    format!("{ports}{vfs}"),
                ],
                mark,
            ));
        }
        for nvme in pci.list().iter().filter(|d| d.is_nvme() && !d.is_vf()) {
            let name = nvme_names
                .get(nvme.address.as_str())
                .map_or_else(String::new, |n| format!(" {n}"));
            let driver = nvme
                .driver
                .as_deref()
                .map_or_else(|| "no driver".to_owned(), |d| format!("driver {d}"));
            devices.push((
                Kind::Nvme,
                nvme,
                vec![format!("NVMe {}{name} {}", nvme.address, ids(nvme)), driver],
                None,
            ));
        }
        // A host bridge sits on one NUMA node: a function whose own node
        // is unknown (a capture without it) is drawn on its bridge's.
        let mut bridge_node: HashMap<&str, i32> = HashMap::new();
        for (_, function, ..) in &devices {
            if let Some(node) = known_node(function) {
                bridge_node.entry(host_bridge(function)).or_insert(node);
            }
        }
        for (kind, function, lines, mark) in devices {
            let numa =
                known_node(function).or_else(|| bridge_node.get(host_bridge(function)).copied());
            let numa_key = numa.map_or_else(|| "?".to_owned(), |n| n.to_string());
            let numa_label = match numa {
                Some(n) => format!("NUMA {n}"),
                None if multi_node => "NUMA ?".to_owned(),
                None => "NUMA node".to_owned(),
            };
            let mut at = tree.child(HOST, Kind::Numa, &numa_key, || vec![numa_label.clone()]);
            let bridge = host_bridge(function).to_owned();
            at = tree.child(at, Kind::HostBridge, &bridge, || {
                vec![format!("pci{bridge}")]
            });
            // Root port first; in a chain root port, upstream, downstream,
            // upstream…, the links are into the odd ones (a switch's
            // upstream port) and into the device.
            let chain: Vec<&String> = function.parents.iter().rev().collect();
            for (depth, address) in chain.iter().enumerate() {
                let port = pci.get(address);
                let upstream = depth
                    .checked_sub(1)
                    .and_then(|i| chain.get(i))
                    .and_then(|a| pci.get(a));
                let link = (depth % 2 == 1)
                    .then(|| port.and_then(|p| link(p, upstream)))
                    .flatten();
                at = tree.child(at, Kind::Bridge, address, || vec![short(address)]);
                if tree.nodes[at].link.is_none() {
                    tree.nodes[at].link = link;
                }
            }
            let upstream = chain.last().and_then(|a| pci.get(a));
            let index = tree.push(at, kind, &function.address, lines);
            tree.nodes[index].mark = mark;
            tree.nodes[index].link = link(function, upstream);
        }
        tree.sort();
        for pairing in &topology.pairings {
            let Some(nic) = pairing.nic.as_deref() else {
                continue;
            };
            let Some(address) = topology.nics.iter().find(|x| x.name == nic).map(|x| &x.pci) else {
                continue;
            };
            let (Some(gpu), Some(nic)) = (tree.device(&pairing.gpu), tree.device(address)) else {
                continue;
            };
            for end in [gpu, nic] {
                let mut at = Some(end);
                while let Some(index) = at {
                    tree.nodes[index].on_path = true;
                    at = tree.nodes[index].parent;
                }
            }
            tree.paths.push(Path {
                gpu,
                nic,
                distance: pairing.distance,
            });
        }
        tree.fold_repeats(HOST);
        tree
    }

    /// The child of `parent` with `key`, made with `lines` when absent.
    fn child(
        &mut self,
        parent: usize,
        kind: Kind,
        key: &str,
        lines: impl FnOnce() -> Vec<String>,
    ) -> usize {
        let found = self.nodes[parent]
            .children
            .iter()
            .copied()
            .find(|&c| self.nodes[c].kind == kind && self.nodes[c].key == key);
        found.unwrap_or_else(|| self.push(parent, kind, key, lines()))
    }

    fn push(&mut self, parent: usize, kind: Kind, key: &str, lines: Vec<String>) -> usize {
        let index = self.nodes.len();
        self.nodes.push(Node {
            kind,
            key: key.to_owned(),
            lines,
            mark: None,
            link: None,
            parent: Some(parent),
            children: Vec::new(),
            repeats: 1,
            on_path: false,
        });
        self.nodes[parent].children.push(index);
        index
    }

    /// The device box of the function at `address`.
    fn device(&self, address: &str) -> Option<usize> {
        self.nodes
            .iter()
            .position(|n| n.kind.is_device() && n.key == address)
    }

    /// Children in key order: NUMA nodes by number, functions by address.
    fn sort(&mut self) {
        for index in 0..self.nodes.len() {
            let mut children = std::mem::take(&mut self.nodes[index].children);
            children.sort_by(|&a, &b| {
                let (a, b) = (&self.nodes[a], &self.nodes[b]);
                (a.key.len(), &a.key).cmp(&(b.key.len(), &b.key))
            });
            self.nodes[index].children = children;
        }
    }

    /// The shape of a branch: alike branches have the same kinds, device
    /// IDs, links and marks, and no GPU path through them.
    fn shape(&self, index: usize) -> Option<String> {
        let node = &self.nodes[index];
        if node.on_path || node.mark.is_some() {
            return None;
        }
        let mut shape = format!("{:?}|{:?}|", node.kind, node.link);
        if node.kind.is_device() {
            // The first line without the address: kind and IDs.
            let first = node.lines.first().map_or("", String::as_str);
            shape.push_str(&first.replace(&node.key, ""));
            shape.push_str(node.lines.get(1).map_or("", String::as_str));
        }
        for &child in &node.children {
            shape.push('(');
            shape.push_str(&self.shape(child)?);
            shape.push(')');
        }
        Some(shape)
    }

    /// Folds runs of three or more alike sibling branches into their first.
    fn fold_repeats(&mut self, index: usize) {
        let children = self.nodes[index].children.clone();
        let mut kept = Vec::with_capacity(children.len());
        let mut run: Vec<usize> = Vec::new();
        let mut run_shape: Option<String> = None;
        let flush = |tree: &mut Tree, run: &mut Vec<usize>, kept: &mut Vec<usize>| {
            if run.len() >= 3 {
                tree.fold(run);
                kept.push(run[0]);
            } else {
                kept.extend(run.iter().copied());
            }
            run.clear();
        };
        for child in children {
            let shape = self.shape(child);
            if shape.is_some() && shape == run_shape {
                run.push(child);
                continue;
            }
            flush(self, &mut run, &mut kept);
            run.push(child);
            run_shape = shape;
        }
        flush(self, &mut run, &mut kept);
        self.nodes[index].children = kept;
        for child in self.nodes[index].children.clone() {
            self.fold_repeats(child);
        }
    }

    /// Makes `run[0]` stand for the whole run: its box says how many, and
    /// its devices name the others' addresses.
    fn fold(&mut self, run: &[usize]) {
        let first = run[0];
        self.nodes[first].repeats = run.len();
        let devices = |tree: &Tree, root: usize| -> Vec<String> {
            let mut out = Vec::new();
            let mut stack = vec![root];
            while let Some(at) = stack.pop() {
                let node = &tree.nodes[at];
                if node.kind.is_device() {
                    out.push(node.key.clone());
                }
                stack.extend(node.children.iter().rev());
            }
            out
        };
        let others: Vec<String> = run[1..].iter().flat_map(|&r| devices(self, r)).collect();
        let shown: Vec<String> = others.iter().take(3).map(|a| short(a)).collect();
        let more = others.len().saturating_sub(shown.len());
        let mut text = format!("and {} alike: {}", others.len(), shown.join(", "));
        if more > 0 {
            text.push_str(&format!(" +{more}"));
        }
        if let Some(device) = devices(self, first).first().and_then(|a| self.device(a)) {
            self.nodes[device].lines.push(text);
        }
    }
}

/// `PIX (gpudirect rdma by default)`: the class and what NCCL does with it.
fn describe(distance: Option<Distance>) -> String {
    match distance {
        Some(d) if d.gdr_by_default() => format!("{d}: gpudirect rdma"),
        Some(d) => format!("{d}: staged through host memory"),
        None => "?: distance unknown".to_owned(),
    }
}

/// `10de:2330`, or nothing when the IDs are unknown.
fn ids(device: &PciDevice) -> String {
    match (device.vendor, device.device) {
        (Some(v), Some(d)) => format!("{v:04x}:{d:04x}"),
        _ => String::new(),
    }
}

/// `17:01.0` for `0000:17:01.0`: the domain is the same on almost every
/// host and the box is narrow.
fn short(address: &str) -> String {
    address.strip_prefix("0000:").unwrap_or(address).to_owned()
}

/// The ports of a NIC as one line, and a fault when none is `ACTIVE`.
fn ports(device: &RdmaDevice) -> (String, Option<Severity>) {
    let list = device.port_list();
    if list.is_empty() {
        return ("ports unknown".to_owned(), Some(Severity::Fault));
    }
    let text: Vec<String> = list.iter().map(port).collect();
    let mark = (!list.iter().any(RdmaPort::is_active)).then_some(Severity::Fault);
    (text.join(" · "), mark)
}

/// `port 1 ACTIVE 400 Gb/s InfiniBand`.
fn port(port: &RdmaPort) -> String {
    let state = match &port.state {
        Ok(Some(state)) => match state {
            PortState::Down => "DOWN",
            PortState::Init => "INIT",
            PortState::Armed => "ARMED",
            PortState::Active => "ACTIVE",
            PortState::ActiveDefer => "ACTIVE_DEFER",
        },
        _ => "state ?",
    };
    let rate = match &port.rate {
        Ok(Some(rate)) => format!(" {} Gb/s", rate.gbps),
        _ => String::new(),
    };
    let layer = match &port.link_layer {
        Ok(Some(LinkLayer::InfiniBand)) => " InfiniBand".to_owned(),
        Ok(Some(LinkLayer::Ethernet)) => " RoCE".to_owned(),
        Ok(Some(LinkLayer::Other(other))) => format!(" {other}"),
        _ => String::new(),
    };
    format!("port {} {state}{rate}{layer}", port.number)
}

/// The link of `device` to `upstream` (its port), marked when it trained
/// below what both ends allow or is down.
fn link(device: &PciDevice, upstream: Option<&PciDevice>) -> Option<Link> {
    let Ok(Some(own)) = &device.link else {
        return None;
    };
    let port = upstream.and_then(|p| p.link.as_ref().ok().and_then(Option::as_ref));
    let width = own.current_width?;
    if width == 0 {
        return Some(Link {
            label: "link down".to_owned(),
            mark: Some((Severity::Fault, "width 0".to_owned())),
        });
    }
    let speed = own.current_gts();
    let label = match speed {
        Some(gts) => format!("x{width} {}GT/s", trim(gts)),
        None => format!("x{width}"),
    };
    let cap_width = bound(
        own.max_width,
        port.and_then(|p| p.max_width).filter(|w| *w > 0),
    );
    let cap_gts = bound_f(own.max_gts(), port.and_then(PciLink::max_gts));
    let narrow = cap_width.is_some_and(|cap| width < cap);
    let slow = matches!((speed, cap_gts), (Some(now), Some(cap)) if now < cap);
    if !narrow && !slow {
        return Some(Link { label, mark: None });
    }
    let max = format!(
        "max {}{}",
        cap_width.map_or_else(String::new, |w| format!("x{w} ")),
        cap_gts.map_or_else(String::new, |g| format!("{}GT/s", trim(g)))
    );
    // A GPU slows its link when idle; a narrower link is a fault anywhere.
    let severity = if !narrow && device.is_nvidia_gpu() {
        Severity::Note
    } else {
        Severity::Fault
    };
    Some(Link {
        label,
        mark: Some((severity, max.trim_end().to_owned())),
    })
}

fn bound(own: Option<u32>, port: Option<u32>) -> Option<u32> {
    match (own, port) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn bound_f(own: Option<f64>, port: Option<f64>) -> Option<f64> {
    match (own, port) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `16` for 16.0, `2.5` for 2.5.
fn trim(gts: f64) -> String {
    let text = format!("{gts:.1}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_owned)
}

/// The controller name (`nvme0`) of each local NVMe function.
fn nvme_names(facts: &Facts) -> HashMap<&str, &str> {
    let mut names = HashMap::new();
    if let Ok(Some(subsystems)) = &facts.nvme.subsystems {
        for controller in subsystems.iter().flat_map(|s| &s.controllers) {
            if let (Some("pcie"), Some(address)) = (
                controller.transport.as_deref(),
                controller.address.as_deref(),
            ) {
                names.insert(address, controller.name.as_str());
            }
        }
    }
    names
}
