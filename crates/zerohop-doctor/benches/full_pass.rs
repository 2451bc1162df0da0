//! One full doctor pass on a synthetic large host.
//!
//! The host: 2 NUMA nodes, 8 GPUs, 8 dual-port NICs (16 physical functions)
//! with 128 VFs each, every function behind a PCIe switch port and in its
//! own IOMMU group: 2,080 PCI functions as sysfs lays them out (device
//! directories under `/sys/devices/pci…`, `bus/pci/devices` links, `driver`,
//! `iommu_group`, `physfn`/`virtfn*` links). Every PF and VF has an RDMA
//! device (one RoCE port, a 32-entry GID table with 4 in use) and a netdev;
//! the PFs' netdevs have the DCQCN enable files of 8 priorities.
//!
//! Run: `cargo bench -p zerohop-doctor --bench full_pass`. It prints the
//! median, the fastest and the slowest of the passes, the same statistics
//! for a baseline that only reads every file the tree holds (the I/O floor),
//! their ratio, and the peak resident memory of the process. With
//! `ZEROHOP_BENCH_TREE=DIR` the host is built in `DIR` (which must not
//! exist) and kept, so the binary can be measured on it too. With
//! `ZEROHOP_BENCH_RDMA=0` the host has no RDMA devices or netdevs: the PCI,
//! memory and kernel layers alone. The pass reads through reader processes
//! as `zerohop doctor` does; with `ZEROHOP_BENCH_READERS=0` it reads in the
//! bench's own process, as before they existed.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};

const GPUS: usize = 8;
const NICS: usize = 8;
const PORTS_PER_NIC: usize = 2;
const VFS_PER_PF: usize = 128;
const PASSES: usize = 31;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("{text}\n")).unwrap();
}

struct Builder<'a> {
    root: &'a Path,
    next_group: u32,
    functions: usize,
    rdma_devices: usize,
}

impl Builder<'_> {
    /// Creates one PCI function under `parent` (a path below /sys/devices).
    fn function(
        &mut self,
        parent: &str,
        address: &str,
        attrs: &[(&str, String)],
        driver: &str,
    ) -> String {
        let rel = format!("{parent}/{address}");
        let dir = self.root.join("sys/devices").join(&rel);
        fs::create_dir_all(&dir).unwrap();
        for (name, value) in attrs {
            write(&dir.join(name), value);
        }
        // The kernel's uevent repeats class, IDs and driver in one file.
        let attr = |name: &str| {
            attrs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.trim_start_matches("0x").to_uppercase())
        };
        let class = attr("class").unwrap_or_default();
        let ids = format!(
            "{}:{}",
            attr("vendor").unwrap_or_default(),
            attr("device").unwrap_or_default()
        );
        write(
            &dir.join("uevent"),
            &format!(
                "DRIVER={driver}\nPCI_CLASS={}\nPCI_ID={ids}\nPCI_SLOT_NAME={address}",
                class.trim_start_matches('0')
            ),
        );
        let depth = rel.matches('/').count() + 2;
        let up = "../".repeat(depth);
        symlink(format!("{up}bus/pci/drivers/{driver}"), dir.join("driver")).unwrap();
        let group = self.next_group;
        self.next_group += 1;
        symlink(
            format!("{up}kernel/iommu_groups/{group}"),
            dir.join("iommu_group"),
        )
        .unwrap();
        let group_dir = self
            .root
            .join(format!("sys/kernel/iommu_groups/{group}/devices"));
        fs::create_dir_all(&group_dir).unwrap();
        symlink(
            format!("../../../../devices/{rel}"),
            group_dir.join(address),
        )
        .unwrap();
        symlink(
            format!("../../../devices/{rel}"),
            self.root.join("sys/bus/pci/devices").join(address),
        )
        .unwrap();
        self.functions += 1;
        rel
    }

    /// Gives the function at `rel` an RDMA device with one RoCE port and a
    /// netdev, laid out as mlx5 does.
    fn rdma(&mut self, rel: &str, pf: bool) {
        let index = self.rdma_devices;
        self.rdma_devices += 1;
        let (name, netdev) = (format!("mlx5_{index}"), format!("eth{index}"));
        let dir = self.root.join("sys/devices").join(rel);
        let ib = dir.join("infiniband").join(&name);
        fs::create_dir_all(&ib).unwrap();
        symlink("../..", ib.join("device")).unwrap();
        symlink(
            format!("../../devices/{rel}/infiniband/{name}"),
            self.root.join("sys/class/infiniband").join(&name),
        )
        .unwrap();
        write(&ib.join("node_type"), "1: CA");
        write(&ib.join("fw_ver"), "28.42.1000");
        write(&ib.join("board_id"), "MT_0000000838");
        write(&ib.join("hca_type"), if pf { "MT4129" } else { "MT4130" });
        let port = ib.join("ports/1");
        write(&port.join("state"), "4: ACTIVE");
        write(&port.join("phys_state"), "5: LinkUp");
        write(&port.join("rate"), "400 Gb/sec (4X NDR)");
        write(&port.join("link_layer"), "Ethernet");
        for gid in 0..32 {
            let value = match gid {
                0 | 1 => "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d".to_owned(),
                2 | 3 => format!("0000:0000:0000:0000:0000:ffff:0a00:{:04x}", index & 0xffff),
                _ => "0000:0000:0000:0000:0000:0000:0000:0000".to_owned(),
            };
            write(&port.join(format!("gids/{gid}")), &value);
            if gid < 4 {
                write(
                    &port.join(format!("gid_attrs/types/{gid}")),
                    if gid % 2 == 1 {
                        "RoCE v2"
                    } else {
                        "IB/RoCE v1"
                    },
                );
                write(&port.join(format!("gid_attrs/ndevs/{gid}")), &netdev);
            }
        }
        let net = dir.join("net").join(&netdev);
        fs::create_dir_all(&net).unwrap();
        symlink("../..", net.join("device")).unwrap();
        symlink(
            format!("../../devices/{rel}/net/{netdev}"),
            self.root.join("sys/class/net").join(&netdev),
        )
        .unwrap();
        write(&net.join("mtu"), "9000");
        write(&net.join("carrier"), "1");
        write(&net.join("operstate"), "up");
        if pf {
            for kind in ["roce_np", "roce_rp"] {
                for priority in 0..8 {
                    write(&net.join(format!("ecn/{kind}/enable/{priority}")), "1");
                }
            }
        }
    }
}

fn link(speed: &str, width: u32) -> Vec<(&'static str, String)> {
    vec![
        ("current_link_speed", speed.to_owned()),
        ("max_link_speed", speed.to_owned()),
        ("current_link_width", width.to_string()),
        ("max_link_width", width.to_string()),
    ]
}

/// Builds the synthetic host under `root`; returns the number of PCI
/// functions and of RDMA devices.
fn build(root: &Path) -> (usize, usize) {
    fs::create_dir_all(root.join("sys/bus/pci/devices")).unwrap();
    write(
        &root.join("proc/cmdline"),
        "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt default_hugepagesz=1G hugepagesz=1G hugepages=64 isolcpus=4-63,68-127 nohz_full=4-63,68-127 rcu_nocbs=4-63,68-127",
    );
    write(
        &root.join("proc/cpuinfo"),
        "processor\t: 0\nvendor_id\t: GenuineIntel",
    );
    write(&root.join("proc/sys/kernel/io_uring_disabled"), "0");
    write(&root.join("sys/devices/system/cpu/isolated"), "4-63,68-127");
    write(
        &root.join("sys/devices/system/cpu/nohz_full"),
        "4-63,68-127",
    );
    write(
        &root.join("sys/kernel/mm/transparent_hugepage/enabled"),
        "always [madvise] never",
    );
    for (dir, pages) in [
        ("sys/kernel/mm/hugepages", 64),
        ("sys/devices/system/node/node0/hugepages", 32),
        ("sys/devices/system/node/node1/hugepages", 32),
    ] {
        write(
            &root.join(format!("{dir}/hugepages-1048576kB/nr_hugepages")),
            &pages.to_string(),
        );
        write(
            &root.join(format!("{dir}/hugepages-1048576kB/free_hugepages")),
            &pages.to_string(),
        );
    }
    write(&root.join("sys/devices/system/node/node0/cpulist"), "0-63");
    write(
        &root.join("sys/devices/system/node/node1/cpulist"),
        "64-127",
    );
    fs::create_dir_all(root.join("sys/class/iommu/dmar0")).unwrap();
    let mut modules = String::new();
    for name in [
        "mlx5_core",
        "mlx5_ib",
        "ib_core",
        "ib_uverbs",
        "rdma_cm",
        "rdma_ucm",
        "nvidia",
        "nvidia_peermem",
        "nvidia_fs",
    ] {
        modules.push_str(&format!("{name} 16384 1 - Live 0x0000000000000000\n"));
        write(&root.join(format!("sys/module/{name}/version")), "24.10");
    }
    write(&root.join("proc/modules"), modules.trim_end());

    for dir in ["sys/class/infiniband", "sys/class/net"] {
        fs::create_dir_all(root.join(dir)).unwrap();
    }
    write(&root.join("sys/class/infiniband_mad/abi_version"), "5");
    write(&root.join("sys/class/infiniband_verbs/abi_version"), "6");
    write(&root.join("sys/module/ib_core/parameters/netns_mode"), "N");
    write(
        &root.join("proc/driver/nvidia/version"),
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build",
    );
    let with_rdma = std::env::var("ZEROHOP_BENCH_RDMA").map_or(true, |v| v != "0");
    let mut builder = Builder {
        root,
        next_group: 0,
        functions: 0,
        rdma_devices: 0,
    };
    for socket in 0..2usize {
        let host_bridge = format!("pci{:04x}:{:02x}", 0, socket * 0x80);
        for slot in 0..4usize {
            let bus = socket * 0x80 + slot * 0x10;
            let root_port = format!("0000:{bus:02x}:01.0");
            let port = builder.function(
                &host_bridge,
                &root_port,
                &[
                    ("class", "0x060400".into()),
                    ("vendor", "0x8086".into()),
                    ("device", "0x347a".into()),
                ],
                "pcieport",
            );
            let numa = vec![("numa_node", socket.to_string())];
            // One GPU and one dual-port NIC under each switch, as on an HGX board.
            let gpu_index = socket * 4 + slot;
            if gpu_index < GPUS {
                let mut attrs = vec![
                    ("class", "0x030200".into()),
                    ("vendor", "0x10de".into()),
                    ("device", "0x2330".into()),
                ];
                attrs.extend(numa.clone());
                attrs.extend(link("32.0 GT/s PCIe", 16));
                builder.function(
                    &port,
                    &format!("0000:{:02x}:00.0", bus + 1),
                    &attrs,
                    "nvidia",
                );
            }
            if socket * 4 + slot >= NICS {
                continue;
            }
            for pf in 0..PORTS_PER_NIC {
                let nic_bus = bus + 2;
                let pf_address = format!("0000:{nic_bus:02x}:00.{pf}");
                let mut attrs = vec![
                    ("class", "0x020000".into()),
                    ("vendor", "0x15b3".into()),
                    ("device", "0x1021".into()),
                    ("sriov_totalvfs", "128".into()),
                    ("sriov_numvfs", VFS_PER_PF.to_string()),
                ];
                attrs.extend(numa.clone());
                attrs.extend(link("32.0 GT/s PCIe", 16));
                let pf_rel = builder.function(&port, &pf_address, &attrs, "mlx5_core");
                if with_rdma {
                    builder.rdma(&pf_rel, true);
                }
                for vf in 0..VFS_PER_PF {
                    // VFs of port N on bus nic_bus + 1 + N, as mlx5 routes them.
                    let vf_number = vf + 2;
                    let vf_address = format!(
                        "0000:{:02x}:{:02x}.{}",
                        nic_bus + 1 + pf,
                        vf_number / 8,
                        vf_number % 8
                    );
                    let mut vf_attrs = vec![
                        ("class", "0x020000".into()),
                        ("vendor", "0x15b3".into()),
                        ("device", "0x101e".into()),
                    ];
                    vf_attrs.extend(numa.clone());
                    let vf_rel = builder.function(&port, &vf_address, &vf_attrs, "mlx5_core");
                    if with_rdma {
                        builder.rdma(&vf_rel, false);
                    }
                    let vf_dir = root.join("sys/devices").join(&vf_rel);
                    symlink(format!("../{pf_address}"), vf_dir.join("physfn")).unwrap();
                    symlink(
                        format!("../{vf_address}"),
                        root.join("sys/devices")
                            .join(&pf_rel)
                            .join(format!("virtfn{vf}")),
                    )
                    .unwrap();
                }
            }
        }
    }
    (builder.functions, builder.rdma_devices)
}

/// Reads every regular file under `dir` once: the I/O floor of any pass.
fn read_all(dir: &Path) -> usize {
    let mut bytes = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        for entry in fs::read_dir(&path).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                bytes += fs::read(entry.path()).unwrap().len();
            }
        }
    }
    bytes
}

fn stats(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    (
        samples[samples.len() / 2],
        samples[0],
        samples[samples.len() - 1],
    )
}

fn peak_rss_kib() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    // The pass reads through reader processes, as `zerohop doctor` does:
    // this binary is started again as one (see `zerohop_host::reader`).
    // `ZEROHOP_BENCH_READERS=0` reads in this process instead, as a
    // library's tests do, for the comparison.
    if std::env::var_os("ZEROHOP_BENCH_READERS").is_none_or(|readers| readers != "0") {
        zerohop_host::reader::serve_or_enable();
    }
    // `cargo test --benches` runs this with `--bench`-less arguments; only
    // a real `cargo bench` (which passes `--bench`) does the timed work.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    // Sysfs lives in memory: tmpfs is the honest stand-in for it, where a
    // disk file system would mostly measure the page cache.
    let scratch = match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    };
    let kept = std::env::var_os("ZEROHOP_BENCH_TREE").map(std::path::PathBuf::from);
    let tree = kept.clone().unwrap_or_else(|| scratch.path().to_path_buf());
    assert!(
        kept.is_none() || !tree.exists(),
        "ZEROHOP_BENCH_TREE must name a directory that does not exist yet"
    );
    let (functions, rdma_devices) = build(&tree);
    let root = HostRoot::at(&tree).unwrap();
    let profile = Profile::default();
    let selection = Selection::all();

    let mut pass = Vec::with_capacity(PASSES);
    let mut floor = Vec::with_capacity(PASSES);
    let mut findings = 0;
    // Interleave the two so machine noise hits both alike.
    for _ in 0..PASSES {
        let start = Instant::now();
        read_all(&tree);
        floor.push(start.elapsed());

        let start = Instant::now();
        let facts = Facts::collect(&root);
        let report = zerohop_doctor::run(&facts, &profile, &selection);
        pass.push(start.elapsed());
        findings = report.findings.len();
        assert!(
            facts.pci.list().len() == functions,
            "every function was read"
        );
        assert!(
            facts.rdma.list().len() == rdma_devices,
            "every rdma device was read"
        );
    }
    let (median, fastest, slowest) = stats(pass);
    let (floor_median, floor_fastest, floor_slowest) = stats(floor);
    println!(
        "synthetic host: {functions} pci functions, {rdma_devices} rdma devices, {findings} findings per pass, {PASSES} passes"
    );
    println!(
        "doctor full pass   median {median:>10.2?}  fastest {fastest:>10.2?}  slowest {slowest:>10.2?}"
    );
    println!(
        "read every file    median {floor_median:>10.2?}  fastest {floor_fastest:>10.2?}  slowest {floor_slowest:>10.2?}"
    );
    println!(
        "ratio (doctor / read-all, medians): {:.2}",
        median.as_secs_f64() / floor_median.as_secs_f64()
    );
    if let Some(kib) = peak_rss_kib() {
        println!(
            "peak rss of the benchmark process: {:.1} MiB",
            kib as f64 / 1024.0
        );
    }
}
