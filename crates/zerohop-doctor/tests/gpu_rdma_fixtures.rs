//! Every fixture case of the GPU, RDMA, RoCE QoS and SR-IOV checks:
//! `tests/fixtures/<CHECK-ID>/<status>-<what>/` must make that check report
//! `<status>`, and a `pass-*` case no warning or failure.

mod support;

use std::fs;
use std::path::Path;

use zerohop_core::Status;
use zerohop_doctor::checks::CHECKS;
use zerohop_doctor::{Profile, Selection};

const PREFIXES: [&str; 4] = ["GPU", "RDMA", "QOS", "SRIOV"];

fn expected_status(case: &str) -> Status {
    Status::ALL
        .into_iter()
        .filter(|s| case.starts_with(&format!("{}-", s.as_str())))
        .max_by_key(|s| s.as_str().len())
        .unwrap_or_else(|| panic!("case `{case}` does not start with a status"))
}

#[test]
fn every_case_reports_its_status() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut cases = 0;
    for check in CHECKS.iter().filter(|c| PREFIXES.iter().any(|p| c.info.id.starts_with(p))) {
        let check_dir = dir.join(check.info.id);
        let mut statuses = Vec::new();
        for entry in fs::read_dir(&check_dir).unwrap_or_else(|_| panic!("{} has no fixture directory", check.info.id)) {
            let case_dir = entry.unwrap().path();
            let case = case_dir.file_name().unwrap().to_string_lossy().into_owned();
            let want = expected_status(&case);
            let profile: Profile = match fs::read_to_string(case_dir.join("profile.json")) {
                Ok(text) => serde_json::from_str(&text).unwrap_or_else(|err| panic!("{case}: bad profile: {err}")),
                Err(_) => Profile::default(),
            };
            let report = support::doctor_with(&case_dir, &profile, &Selection::parse([check.info.id]).unwrap());
            let got = support::statuses(&report, check.info.id);
            let shown: Vec<String> = support::findings(&report, check.info.id)
                .iter()
                .map(|f| format!("{} {}: {}", f.status, f.subject, f.message))
                .collect();
            assert!(got.contains(&want), "{}/{case}: expected {want}, got {shown:#?}", check.info.id);
            if want == Status::Pass {
                assert!(!got.iter().any(|s| s.is_problem()), "{}/{case}: a pass case with problems: {shown:#?}", check.info.id);
            }
            for finding in support::findings(&report, check.info.id) {
                if finding.status.is_problem() {
                    assert!(finding.remediation.is_some(), "{}/{case}: {} without remediation", check.info.id, finding.message);
                }
            }
            statuses.push(want);
            cases += 1;
        }
        assert!(statuses.contains(&Status::Pass), "{} has no pass-* case", check.info.id);
        assert!(statuses.iter().any(|s| s.is_problem()), "{} has no fail-* or warn-* case", check.info.id);
    }
    assert!(cases >= 40, "only {cases} cases");
}

/// A synthetic HGX-like host: 2 sockets, 8 GPUs, 8 dual-port ConnectX NICs
/// (16 physical functions) with 128 VFs each (2,080 PCI functions), an RDMA
/// device with one RoCE port, a 32-entry GID table (4 used) and a netdev on
/// every PF and VF, DCQCN files on the PFs' netdevs.
mod large_host {
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    const VFS_PER_PF: usize = 128;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, format!("{text}\n")).unwrap();
    }

    /// One function below `parent` (relative to /sys/devices), with its
    /// `bus/pci/devices` link, driver, RDMA device and netdev.
    fn function(root: &Path, parent: &str, address: &str, ids: (&str, &str, &str), rdma: Option<(usize, bool)>) -> String {
        let rel = format!("{parent}/{address}");
        let dir = root.join("sys/devices").join(&rel);
        write(&dir.join("class"), ids.0);
        write(&dir.join("vendor"), ids.1);
        write(&dir.join("device"), ids.2);
        write(&dir.join("numa_node"), if rel.contains("pci0000:00") { "0" } else { "1" });
        let up = "../".repeat(rel.matches('/').count() + 2);
        symlink(format!("{up}bus/pci/drivers/x"), dir.join("driver")).unwrap();
        symlink(format!("../../../devices/{rel}"), root.join("sys/bus/pci/devices").join(address)).unwrap();
        if let Some((index, pf)) = rdma {
            let name = format!("mlx5_{index}");
            let netdev = format!("eth{index}");
            let ib = dir.join("infiniband").join(&name);
            symlink("../..", ib.join("device")).unwrap_or_else(|_| {
                fs::create_dir_all(&ib).unwrap();
                symlink("../..", ib.join("device")).unwrap();
            });
            symlink(format!("../../devices/{rel}/infiniband/{name}"), root.join("sys/class/infiniband").join(&name)).unwrap();
            write(&ib.join("hca_type"), if pf { "MT4129" } else { "MT4130" });
            let port = ib.join("ports/1");
            write(&port.join("state"), "4: ACTIVE");
            write(&port.join("phys_state"), "5: LinkUp");
            write(&port.join("rate"), "400 Gb/sec (4X NDR)");
            write(&port.join("link_layer"), "Ethernet");
            for gid in 0..32 {
                let value = match gid {
                    0 | 1 => "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d".to_owned(),
                    2 | 3 => format!("0000:0000:0000:0000:0000:ffff:0a00:{index:04x}"),
                    _ => "0000:0000:0000:0000:0000:0000:0000:0000".to_owned(),
                };
                write(&port.join(format!("gids/{gid}")), &value);
                if gid < 4 {
                    write(&port.join(format!("gid_attrs/types/{gid}")), if gid % 2 == 1 { "RoCE v2" } else { "IB/RoCE v1" });
                    write(&port.join(format!("gid_attrs/ndevs/{gid}")), &netdev);
                }
            }
            let net = dir.join("net").join(&netdev);
            fs::create_dir_all(&net).unwrap();
            symlink("../..", net.join("device")).unwrap();
            symlink(format!("../../devices/{rel}/net/{netdev}"), root.join("sys/class/net").join(&netdev)).unwrap();
            write(&net.join("mtu"), "9000");
            write(&net.join("carrier"), "1");
            write(&net.join("operstate"), "up");
            write(&net.join("ifindex"), &index.to_string());
            if pf {
                for kind in ["roce_np", "roce_rp"] {
                    for prio in 0..8 {
                        write(&net.join(format!("ecn/{kind}/enable/{prio}")), "1");
                    }
                }
            }
        }
        rel
    }

    /// Builds the host under `root`; returns the number of PCI functions.
    pub fn build(root: &Path) -> usize {
        for dir in ["sys/bus/pci/devices", "sys/class/infiniband", "sys/class/net"] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        let mut modules = String::new();
        for name in ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm", "rdma_ucm", "nvidia", "nvidia_peermem"] {
            let users = if name == "ib_core" { "nvidia_peermem,mlx5_ib," } else { "-" };
            modules.push_str(&format!("{name} 16384 1 {users} Live 0x0000000000000000\n"));
        }
        write(&root.join("proc/modules"), modules.trim_end());
        write(&root.join("sys/module/ib_core/parameters/netns_mode"), "N");
        write(&root.join("sys/devices/system/node/node0/cpulist"), "0-63");
        write(&root.join("sys/devices/system/node/node1/cpulist"), "64-127");
        let (mut functions, mut rdma) = (0, 0);
        for slot in 0..8usize {
            let bus = (slot / 4) * 0x80 + (slot % 4) * 0x10;
            let host_bridge = format!("pci0000:{:02x}", (slot / 4) * 0x80);
            let port = function(root, &host_bridge, &format!("0000:{bus:02x}:01.0"), ("0x060400", "0x8086", "0x347a"), None);
            function(root, &port, &format!("0000:{:02x}:00.0", bus + 1), ("0x030200", "0x10de", "0x2330"), None);
            functions += 2;
            for pf in 0..2 {
                let pf_address = format!("0000:{:02x}:00.{pf}", bus + 2);
                let pf_rel = function(root, &port, &pf_address, ("0x020000", "0x15b3", "0x1021"), Some((rdma, true)));
                write(&root.join("sys/devices").join(&pf_rel).join("sriov_totalvfs"), "128");
                write(&root.join("sys/devices").join(&pf_rel).join("sriov_numvfs"), &VFS_PER_PF.to_string());
                rdma += 1;
                functions += 1;
                for vf in 0..VFS_PER_PF {
                    let number = vf + 2;
                    let vf_address = format!("0000:{:02x}:{:02x}.{}", bus + 3 + pf, number / 8, number % 8);
                    let vf_rel = function(root, &port, &vf_address, ("0x020000", "0x15b3", "0x101e"), Some((rdma, false)));
                    symlink(format!("../{pf_address}"), root.join("sys/devices").join(&vf_rel).join("physfn")).unwrap();
                    rdma += 1;
                    functions += 1;
                }
            }
        }
        functions
    }
}

/// The full doctor pass on the large host, timed. Run it in release:
/// `cargo test --release -p zerohop-doctor --test gpu_rdma_fixtures -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark: run in release with --ignored"]
fn large_host_full_pass() {
    use std::time::{Duration, Instant};

    let dir = if Path::new("/dev/shm").is_dir() { tempfile::tempdir_in("/dev/shm").unwrap() } else { tempfile::tempdir().unwrap() };
    let functions = large_host::build(dir.path());
    let root = zerohop_host::HostRoot::at(dir.path()).unwrap();
    let mut passes: Vec<Duration> = Vec::new();
    let mut collect_only: Vec<Duration> = Vec::new();
    let mut findings = 0;
    for _ in 0..21 {
        let start = Instant::now();
        let facts = zerohop_host::Facts::collect(&root);
        collect_only.push(start.elapsed());
        let report = zerohop_doctor::run(&facts, &Profile::default(), &Selection::all());
        passes.push(start.elapsed());
        findings = report.findings.len();
        assert_eq!(facts.rdma.list().len(), 2064, "an rdma device on every pf and vf");
        assert!(support::statuses(&report, "RDMA001").contains(&Status::Pass));
    }
    passes.sort();
    collect_only.sort();
    for _ in 0..3 {
        let t = Instant::now();
        let _ = zerohop_host::facts::RdmaFacts::collect(&root);
        let r = t.elapsed();
        let t = Instant::now();
        let _ = zerohop_host::facts::NetFacts::collect(&root);
        let n = t.elapsed();
        let t = Instant::now();
        let _ = zerohop_host::facts::PciFacts::collect(&root);
        println!("TMP rdma {r:.2?} net {n:.2?} pci {:.2?}", t.elapsed());
    }
    println!(
        "{functions} pci functions, 2064 rdma devices, {findings} findings: full pass median {:.2?} (fastest {:.2?}, slowest {:.2?}), facts alone median {:.2?}",
        passes[10], passes[0], passes[20], collect_only[10]
    );
}
