//! The typed facts of a host as `layer → key → value` text, so that two
//! hosts compare fact by fact: a kernel parameter, a module's version, a
//! PCI function's link, an RDMA port's rate or GID, an MTU, a mount's
//! options, a hugepage pool, a `cufile.json` property.
//!
//! A fact that could not be read is the value `unreadable: <reason>`; one
//! the host does not have has no key. Volatile values (free hugepages,
//! meminfo levels, module reference counts) are left out unless asked for.

use std::collections::BTreeMap;
use std::fmt::Debug;

use zerohop_host::Facts;
use zerohop_host::facts::Fact;

use super::volatile::{is_stable_meminfo_field, is_volatile_path};

/// The layers, in the order a diff shows them (deploy order).
pub const LAYERS: [&str; 11] = [
    "kernel", "modules", "pci", "numa", "memory", "rdma", "net", "mounts", "nvme", "gds", "nvidia",
];

/// Every fact by layer and key.
pub type FactMap = BTreeMap<(usize, String), String>;

struct Sink<'a> {
    map: &'a mut FactMap,
    layer: usize,
    all: bool,
}

impl Sink<'_> {
    fn put(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.map.insert((self.layer, key.into()), value.into());
    }

    /// Puts a fact: its value through `show`, its gap as unreadable.
    fn fact<T>(&mut self, key: &str, fact: &Fact<T>, show: impl FnOnce(&T) -> String) {
        match fact {
            Ok(Some(value)) => self.put(key, show(value)),
            Ok(None) => {}
            Err(gap) => self.put(key, format!("unreadable: {}", gap.reason)),
        }
    }

    /// Puts a fact that is a list, each item under its own key; a gap
    /// under `key`.
    fn each<T>(&mut self, key: &str, fact: &Fact<Vec<T>>, mut item: impl FnMut(&mut Self, &T)) {
        match fact {
            Ok(Some(items)) => {
                for value in items {
                    item(self, value);
                }
            }
            Ok(None) => {}
            Err(gap) => self.put(key, format!("unreadable: {}", gap.reason)),
        }
    }
}

fn debug(value: &impl Debug) -> String {
    format!("{value:?}")
}

fn options(options: &[(String, Option<String>)]) -> String {
    options
        .iter()
        .map(|(key, value)| match value {
            Some(value) => format!("{key}={value}"),
            None => key.clone(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The facts of `facts`; volatile ones only when `all`.
pub fn flatten(facts: &Facts, all: bool) -> FactMap {
    let mut map = FactMap::new();
    let layers: [fn(&mut Sink<'_>, &Facts); LAYERS.len()] = [
        kernel, modules, pci, numa, memory, rdma, net, mounts, nvme, gds, nvidia,
    ];
    for (layer, collect) in layers.iter().enumerate() {
        collect(
            &mut Sink {
                map: &mut map,
                layer,
                all,
            },
            facts,
        );
    }
    map
}

fn kernel(sink: &mut Sink<'_>, facts: &Facts) {
    let kernel = &facts.kernel;
    match &kernel.cmdline {
        Ok(Some(cmdline)) => {
            // A parameter given twice keeps its values in order.
            let mut params: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (key, value) in &cmdline.params {
                params
                    .entry(key)
                    .or_default()
                    .push(value.as_deref().unwrap_or("(set)"));
            }
            for (key, values) in params {
                sink.put(format!("cmdline {key}"), values.join(" "));
            }
        }
        Ok(None) => {}
        Err(gap) => sink.put("cmdline", format!("unreadable: {}", gap.reason)),
    }
    sink.fact("cpu vendor", &kernel.cpu_vendor, debug);
    sink.fact(
        "isolated cpus",
        &kernel.isolation.isolated,
        ToString::to_string,
    );
    sink.fact(
        "nohz_full cpus",
        &kernel.isolation.nohz_full,
        ToString::to_string,
    );
    sink.fact("online cpus", &kernel.isolation.online, ToString::to_string);
    sink.fact(
        "io_uring_disabled",
        &kernel.io_uring.disabled,
        ToString::to_string,
    );
    sink.fact(
        "io_uring_group",
        &kernel.io_uring.group,
        ToString::to_string,
    );
    sink.fact("iommu units", &kernel.iommu_units, |units| units.join(" "));
    if let Some(memlock) = &kernel.memlock {
        sink.fact("memlock", memlock, |m| {
            format!(
                "soft {:?} hard {:?} CAP_IPC_LOCK {}",
                m.soft_bytes, m.hard_bytes, m.cap_ipc_lock
            )
        });
    }
}

fn modules(sink: &mut Sink<'_>, facts: &Facts) {
    match &facts.modules {
        Ok(Some(modules)) => {
            for (name, module) in &modules.0 {
                let kind = if module.loadable {
                    "loaded"
                } else {
                    "built in"
                };
                let version = module.version.as_deref().unwrap_or("-");
                sink.put(name.clone(), format!("{kind}, version {version}"));
                if let Some(taint) = &module.taint {
                    sink.put(format!("{name} taint"), taint.clone());
                }
                for (param, value) in &module.parameters {
                    let path = format!("/sys/module/{name}/parameters/{param}");
                    if sink.all || !is_volatile_path(&path) {
                        sink.put(format!("{name} {param}"), value.clone());
                    }
                }
                if sink.all {
                    sink.put(format!("{name} refcount"), module.refcount.to_string());
                }
            }
        }
        Ok(None) => {}
        Err(gap) => sink.put("modules", format!("unreadable: {}", gap.reason)),
    }
}

fn pci(sink: &mut Sink<'_>, facts: &Facts) {
    sink.each("devices", &facts.pci.devices, |sink, dev| {
        let id = |v: Option<u16>| v.map_or_else(|| "????".to_owned(), |v| format!("{v:04x}"));
        let at = &dev.address;
        sink.put(
            format!("{at} id"),
            format!(
                "{}:{} class {}",
                id(dev.vendor),
                id(dev.device),
                id(dev.class)
            ),
        );
        sink.put(
            format!("{at} driver"),
            dev.driver.clone().unwrap_or_else(|| "none".to_owned()),
        );
        sink.fact(
            &format!("{at} numa node"),
            &dev.numa_node,
            ToString::to_string,
        );
        if let Some(group) = dev.iommu_group {
            sink.put(format!("{at} iommu group"), group.to_string());
        }
        sink.fact(&format!("{at} link"), &dev.link, |link| {
            // A file the device lacks shows as `?`.
            let shown = |value: Option<String>| value.unwrap_or_else(|| "?".to_owned());
            format!(
                "{} x{} (max {} x{})",
                shown(link.current_speed.clone()),
                shown(link.current_width.map(|w| w.to_string())),
                shown(link.max_speed.clone()),
                shown(link.max_width.map(|w| w.to_string())),
            )
        });
        sink.fact(&format!("{at} sriov"), &dev.sriov, |sriov| {
            format!("{} of {} vfs", sriov.num_vfs, sriov.total_vfs)
        });
        if let Some(pf) = &dev.physfn {
            sink.put(format!("{at} physfn"), pf.clone());
        }
        sink.put(format!("{at} upstream"), dev.parents.join(" "));
    });
}

fn numa(sink: &mut Sink<'_>, facts: &Facts) {
    let all = sink.all;
    sink.each("nodes", &facts.numa, |sink, node| {
        let at = format!("node{}", node.id);
        sink.fact(&format!("{at} cpus"), &node.cpus, ToString::to_string);
        sink.each(&format!("{at} hugepages"), &node.hugepages, |sink, pool| {
            let key = format!("{at} hugepages {} kB", pool.size_kib);
            sink.fact(&format!("{key} total"), &pool.total, ToString::to_string);
            if all {
                sink.fact(&format!("{key} free"), &pool.free, ToString::to_string);
            }
        });
    });
}

fn memory(sink: &mut Sink<'_>, facts: &Facts) {
    let memory = &facts.memory;
    let all = sink.all;
    match &memory.meminfo {
        Ok(Some(meminfo)) => {
            for (field, value) in &meminfo.0 {
                if all || is_stable_meminfo_field(field) {
                    sink.put(format!("meminfo {field}"), value.to_string());
                }
            }
        }
        Ok(None) => {}
        Err(gap) => sink.put("meminfo", format!("unreadable: {}", gap.reason)),
    }
    sink.each("hugepages", &memory.hugepages, |sink, pool| {
        let key = format!("hugepages {} kB", pool.size_kib);
        sink.fact(&format!("{key} total"), &pool.total, ToString::to_string);
        if all {
            sink.fact(&format!("{key} free"), &pool.free, ToString::to_string);
        }
    });
    sink.fact("transparent hugepages", &memory.thp_enabled, Clone::clone);
    sink.fact(
        "transparent hugepages defrag",
        &memory.thp_defrag,
        Clone::clone,
    );
}

fn rdma(sink: &mut Sink<'_>, facts: &Facts) {
    let rdma = &facts.rdma;
    sink.each("devices", &rdma.devices, |sink, dev| {
        let at = &dev.name;
        for (what, value) in [
            ("node type", &dev.node_type),
            ("firmware", &dev.fw_ver),
            ("board", &dev.board_id),
            ("hca type", &dev.hca_type),
            ("pci", &dev.pci),
        ] {
            if let Some(value) = value {
                sink.put(format!("{at} {what}"), value.clone());
            }
        }
        sink.put(format!("{at} netdevs"), dev.netdevs.join(" "));
        sink.each(&format!("{at} ports"), &dev.ports, |sink, port| {
            let at = format!("{at} port {}", port.number);
            sink.fact(&format!("{at} state"), &port.state, debug);
            sink.fact(&format!("{at} phys state"), &port.phys_state, debug);
            sink.fact(&format!("{at} rate"), &port.rate, |rate| rate.text.clone());
            sink.fact(
                &format!("{at} link layer"),
                &port.link_layer,
                ToString::to_string,
            );
            sink.fact(&format!("{at} roce mode"), &port.roce_mode, debug);
            if let Some(netdev) = &port.netdev {
                sink.put(format!("{at} netdev"), netdev.clone());
            }
            sink.fact(&format!("{at} gids"), &port.gids, |table| {
                format!("{} in use", table.entries.len())
            });
            if let Ok(Some(table)) = &port.gids {
                for gid in &table.entries {
                    let kind = gid.kind.as_ref().map_or_else(|| "-".to_owned(), debug);
                    let ndev = gid.ndev.as_deref().unwrap_or("-");
                    sink.put(
                        format!("{at} gid {}", gid.index),
                        format!("{} {kind} {ndev}", gid.gid),
                    );
                }
            }
        });
    });
    sink.fact("uverbs abi", &rdma.verbs_abi, ToString::to_string);
    sink.fact("umad abi", &rdma.mad_abi, ToString::to_string);
    sink.fact("device nodes", &rdma.device_nodes, |nodes| nodes.join(" "));
}

fn net(sink: &mut Sink<'_>, facts: &Facts) {
    sink.each("devices", &facts.net.devices, |sink, dev| {
        let at = &dev.name;
        sink.fact(&format!("{at} mtu"), &dev.mtu, ToString::to_string);
        sink.fact(&format!("{at} carrier"), &dev.carrier, ToString::to_string);
        if let Some(state) = &dev.operstate {
            sink.put(format!("{at} operstate"), state.clone());
        }
        if let Some(pci) = &dev.pci {
            sink.put(format!("{at} pci"), pci.clone());
        }
        let on = |map: &BTreeMap<u8, bool>| {
            map.iter()
                .map(|(prio, on)| format!("{prio}:{}", if *on { "on" } else { "off" }))
                .collect::<Vec<_>>()
                .join(" ")
        };
        sink.fact(&format!("{at} ecn np"), &dev.ecn.np, on);
        sink.fact(&format!("{at} ecn rp"), &dev.ecn.rp, on);
    });
}

fn mounts(sink: &mut Sink<'_>, facts: &Facts) {
    let mounts = &facts.mounts;
    sink.fact("table", &mounts.table, |table| table.source.to_owned());
    if let Ok(Some(table)) = &mounts.table {
        for entry in &table.entries {
            sink.put(
                entry.mount_point.clone(),
                format!(
                    "{} {} {}",
                    entry.fstype,
                    entry.source,
                    options(&entry.options.0)
                ),
            );
        }
    }
    sink.each("fstab", &mounts.fstab, |sink, entry| {
        sink.put(
            format!("fstab {}", entry.mount_point),
            format!(
                "{} {} {}",
                entry.fstype,
                entry.source,
                options(&entry.options.0)
            ),
        );
    });
}

fn nvme(sink: &mut Sink<'_>, facts: &Facts) {
    sink.each("subsystems", &facts.nvme.subsystems, |sink, sub| {
        let at = &sub.name;
        for (what, value) in [
            ("nqn", &sub.nqn),
            ("model", &sub.model),
            ("iopolicy", &sub.iopolicy),
        ] {
            if let Some(value) = value {
                sink.put(format!("{at} {what}"), value.clone());
            }
        }
        for ctrl in &sub.controllers {
            let key = format!("{at} {}", ctrl.name);
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
            sink.put(
                key.clone(),
                format!(
                    "{} {} {}",
                    show(&ctrl.transport),
                    show(&ctrl.address),
                    show(&ctrl.state)
                ),
            );
            for path in &ctrl.paths {
                sink.put(
                    format!("{key} {}", path.name),
                    format!(
                        "ana {} group {}",
                        show(&path.ana_state),
                        path.ana_grpid
                            .map_or_else(|| "-".to_owned(), |g| g.to_string())
                    ),
                );
            }
        }
    });
    sink.each("device mapper", &facts.nvme.device_mapper, |sink, dm| {
        sink.put(format!("{} slaves", dm.name), dm.slaves.join(" "));
    });
}

fn gds(sink: &mut Sink<'_>, facts: &Facts) {
    let gds = &facts.gds;
    sink.put("cufile.json path", gds.cufile_path.clone());
    match &gds.cufile {
        Ok(Some(cufile)) => match &cufile.parsed {
            Ok(value) => json_leaves(sink, "cufile.json", value),
            Err(err) => sink.put("cufile.json", format!("does not parse: {err:?}")),
        },
        Ok(None) => {}
        Err(gap) => sink.put("cufile.json", format!("unreadable: {}", gap.reason)),
    }
    let all = sink.all;
    match &gds.nvidia_fs_proc {
        Ok(Some(files)) => {
            for (name, text) in files {
                if all || name != "stats" {
                    sink.put(format!("nvidia-fs {name}"), text.trim().to_owned());
                }
            }
        }
        Ok(None) => {}
        Err(gap) => sink.put("nvidia-fs", format!("unreadable: {}", gap.reason)),
    }
    sink.fact("local addresses", &gds.addresses, |addresses| {
        let mut shown: Vec<String> = addresses
            .iter()
            .map(|a| format!("{}@{}", a.addr, a.iface.as_deref().unwrap_or("-")))
            .collect();
        shown.sort();
        shown.join(" ")
    });
}

/// Every leaf of a JSON document under a dotted key.
fn json_leaves(sink: &mut Sink<'_>, key: &str, value: &serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (name, value) in map {
                json_leaves(sink, &format!("{key}.{name}"), value);
            }
        }
        other => sink.put(key, other.to_string()),
    }
}

fn nvidia(sink: &mut Sink<'_>, facts: &Facts) {
    let nvidia = &facts.nvidia;
    sink.fact("driver", &nvidia.version, |v| v.line.clone());
    sink.fact("kernel release", &nvidia.kernel_release, Clone::clone);
    sink.each("gpus", &nvidia.gpus, |sink, gpu| {
        for (key, value) in &gpu.information {
            sink.put(format!("{} {key}", gpu.address), value.clone());
        }
    });
}
