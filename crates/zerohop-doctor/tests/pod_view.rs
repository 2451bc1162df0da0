//! The pod checks on pod views built from real captures
//! (`../shared/corpus`, see its SOURCES.md), and on a live network
//! namespace this test creates.
//!
//! A pod's view is the node's sysfs and procfs as its namespaces show
//! them: in the RDMA subsystem's exclusive mode only its own device under
//! `/sys/class/infiniband`, its own netdevs and addresses, its own
//! `/dev/shm` mount, its own environment.

mod support;

use std::fs;
use std::path::Path;
use std::process::Command;

use zerohop_core::{Finding, Status};
use zerohop_doctor::topology::Topology;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};

use support::builder::{self, Host};

/// The findings of pod check `id` on the root at `root`.
fn pod_check(root: &Path, id: &str) -> Vec<Finding> {
    let selection = Selection::parse([id]).unwrap();
    let report = support::doctor_with(root, &Profile::default(), &selection);
    report.findings.into_iter().filter(|f| f.id == id).collect()
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path.trim_start_matches('/'));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// An environment block as the kernel shows `/proc/self/environ`.
fn environ(variables: &[(&str, &str)]) -> String {
    variables
        .iter()
        .map(|(name, value)| format!("{name}={value}\0"))
        .collect()
}

#[test]
fn an_h100_vf_as_a_pod_sees_it() {
    // gpud's capture of an H100 node's /sys/class/infiniband: a pod in
    // exclusive mode sees one of its devices, mlx5_4 (a ConnectX-7,
    // InfiniBand, `4: ACTIVE`), with the verbs node its device plugin
    // mounted.
    let Some(corpus) = support::corpus() else {
        return;
    };
    let root = support::scratch();
    copy_tree(
        &corpus.join("sys_class_infiniband_h100_gpud/sys-class-infiniband-h100.0/mlx5_4"),
        &root.path().join("sys/class/infiniband/mlx5_4"),
    );
    write(
        root.path(),
        "/sys/class/infiniband_verbs/uverbs4/ibdev",
        "mlx5_4\n",
    );
    write(root.path(), "/dev/null", "");
    write(root.path(), "/dev/infiniband/rdma_cm", "");
    write(root.path(), "/dev/infiniband/uverbs4", "");
    let findings = pod_check(root.path(), "POD001");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].status, Status::Pass);
    assert_eq!(
        findings[0].message,
        "port 1 active, InfiniBand, /dev/infiniband/uverbs4"
    );

    // The device plugin gave the network but not the node.
    fs::remove_file(root.path().join("dev/infiniband/uverbs4")).unwrap();
    let findings = pod_check(root.path(), "POD001");
    assert_eq!(findings[0].status, Status::Fail, "{findings:#?}");
    assert!(
        findings[0]
            .message
            .contains("/dev/infiniband/uverbs4 is not in the pod")
    );

    // A pod without the RDMA resource sees no device at all.
    fs::remove_dir_all(root.path().join("sys/class/infiniband")).unwrap();
    fs::create_dir_all(root.path().join("sys/class/infiniband")).unwrap();
    let findings = pod_check(root.path(), "POD001");
    assert_eq!(findings[0].status, Status::Fail);
    assert!(
        findings[0]
            .message
            .starts_with("the pod sees no rdma device")
    );
}

/// A pod root holding the GID table of host-bench's `show_gids` capture
/// (mlx5_0 port 1, netdev rdma0: link-local and IPv4 GIDs, each RoCE v1
/// and v2) with `variables` in its environment.
fn show_gids_pod(corpus: &Path, variables: &[(&str, &str)]) -> (tempfile::TempDir, String) {
    let text = fs::read_to_string(corpus.join("show_gids_mlx5_roce_v1_v2_host-bench.txt")).unwrap();
    let root = support::scratch();
    let port = "/sys/class/infiniband/mlx5_0/ports/1";
    write(root.path(), &format!("{port}/state"), "4: ACTIVE\n");
    write(root.path(), &format!("{port}/phys_state"), "5: LinkUp\n");
    write(root.path(), &format!("{port}/link_layer"), "Ethernet\n");
    let mut address = String::new();
    let mut rows = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || fields[0] != "mlx5_0" {
            continue;
        }
        let (index, gid, version, netdev) = (
            fields[2],
            fields[3],
            fields[fields.len() - 2],
            fields[fields.len() - 1],
        );
        if fields.len() == 7 {
            address = fields[4].to_owned();
        }
        let kind = if version == "v2" {
            "RoCE v2"
        } else {
            "IB/RoCE v1"
        };
        write(
            root.path(),
            &format!("{port}/gids/{index}"),
            &format!("{gid}\n"),
        );
        write(
            root.path(),
            &format!("{port}/gid_attrs/types/{index}"),
            &format!("{kind}\n"),
        );
        write(
            root.path(),
            &format!("{port}/gid_attrs/ndevs/{index}"),
            &format!("{netdev}\n"),
        );
        rows += 1;
    }
    assert_eq!(rows, 4, "the capture lists gids 0-3 of mlx5_0");
    write(root.path(), "/sys/class/net/rdma0/mtu", "9000\n");
    let octets: Vec<u8> = address.split('.').map(|o| o.parse().unwrap()).collect();
    // /proc/net/route shows a destination as the kernel holds it, in
    // network byte order read as a little-endian number.
    let network = format!("00{:02X}{:02X}{:02X}", octets[2], octets[1], octets[0]);
    write(
        root.path(),
        "/proc/net/route",
        &format!(
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\nrdma0\t{network}\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
        ),
    );
    write(
        root.path(),
        "/proc/net/fib_trie",
        &format!(
            "Local:\n  +-- {0}.{1}.{2}.0/24 2 0 2\n     |-- {address}\n        /32 host LOCAL\n",
            octets[0], octets[1], octets[2]
        ),
    );
    write(root.path(), "/proc/self/environ", &environ(variables));
    (root, address)
}

#[test]
fn show_gids_capture_picks_the_roce_v2_ipv4_gid() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    // NCCL left to pick: the IPv4 RoCE v2 entry, index 3.
    let (root, address) = show_gids_pod(&corpus, &[]);
    let findings = pod_check(root.path(), "POD002");
    let gid = findings.iter().find(|f| f.subject == "mlx5_0/1").unwrap();
    assert_eq!(gid.status, Status::Pass, "{findings:#?}");
    assert_eq!(
        gid.message,
        format!("nccl picks gid 3: roce v2 ::ffff:{address} of rdma0")
    );
    let mtu = findings
        .iter()
        .find(|f| f.subject == "mlx5_0/1 mtu")
        .unwrap();
    assert_eq!(mtu.status, Status::Pass);

    // An index copied from a node whose table starts differently: 2 is
    // the same address as RoCE v1, which NCCL would use unrouted.
    let (root, _) = show_gids_pod(&corpus, &[("NCCL_IB_GID_INDEX", "2")]);
    let findings = pod_check(root.path(), "POD002");
    let gid = findings.iter().find(|f| f.subject == "mlx5_0/1").unwrap();
    assert_eq!(gid.status, Status::Fail, "{findings:#?}");
    assert!(gid.message.contains("roce v1"), "{}", gid.message);
    let fix = gid.remediation.as_ref().unwrap();
    assert_eq!(fix.commands[0], "export NCCL_IB_GID_INDEX=3");

    // Asking NCCL for RoCE v1 makes it pick index 2, which this check fails.
    let (root, _) = show_gids_pod(&corpus, &[("NCCL_IB_ROCE_VERSION_NUM", "1")]);
    let findings = pod_check(root.path(), "POD002");
    let gid = findings.iter().find(|f| f.subject == "mlx5_0/1").unwrap();
    assert_eq!(gid.status, Status::Fail);
    assert!(
        gid.message.starts_with("nccl picks gid 2"),
        "{}",
        gid.message
    );
}

#[test]
fn containerd_sandbox_shm_is_too_small_for_eight_gpus() {
    // gpud's mountinfo of a GPU node: every pod sandbox's shm is a tmpfs
    // of `size=65536k`, which the pod's containers see at /dev/shm.
    let Some(corpus) = support::corpus() else {
        return;
    };
    let text = fs::read_to_string(corpus.join("proc_self_mountinfo_gpu_node_gpud.txt")).unwrap();
    let sandbox = text
        .lines()
        .find(|line| line.contains("/sandboxes/") && line.ends_with("size=65536k,inode64"))
        .expect("a containerd sandbox shm line");
    let fields: Vec<&str> = sandbox.split(' ').collect();
    // The same mount as the container sees it: its mount point /dev/shm.
    let mut seen = fields.clone();
    seen[4] = "/dev/shm";
    let root = support::scratch();
    write(
        root.path(),
        "/proc/self/mountinfo",
        &format!("{}\n", seen.join(" ")),
    );
    write(
        root.path(),
        "/proc/self/limits",
        "Max locked memory         unlimited            unlimited            bytes     \n",
    );
    for gpu in 0..8 {
        write(
            root.path(),
            &format!(
                "/proc/driver/nvidia/gpus/0000:{:02x}:00.0/information",
                0x18 + gpu * 0x10
            ),
            &format!("Device Minor: \t {gpu}\n"),
        );
    }
    let findings = pod_check(root.path(), "POD003");
    let shm = findings.iter().find(|f| f.subject == "/dev/shm").unwrap();
    assert_eq!(shm.status, Status::Fail, "{findings:#?}");
    assert_eq!(
        shm.message,
        "64 MiB: one channel of nccl's shared-memory transport for 8 gpus needs 147 MiB"
    );

    // The node's own /dev/shm in the same capture has no size: half the memory.
    let node = text
        .lines()
        .find(|line| line.split(' ').nth(4) == Some("/dev/shm"))
        .expect("the node's /dev/shm line");
    write(root.path(), "/proc/self/mountinfo", &format!("{node}\n"));
    write(
        root.path(),
        "/proc/meminfo",
        "MemTotal:       2113470404 kB\n",
    );
    let findings = pod_check(root.path(), "POD003");
    let shm = findings.iter().find(|f| f.subject == "/dev/shm").unwrap();
    assert_eq!(shm.status, Status::Pass, "{findings:#?}");
}

#[test]
fn puget_gpus_pair_across_host_bridges_in_the_pod() {
    // The Puget WRX90 of the stelline corpus: two RTX 6000 Ada and one
    // ConnectX-7 on other root ports. A pod given both GPUs and the NIC's
    // first port sees each GPU's nearest device beyond NCCL's default
    // GPUDirect level, as the node-side topology does.
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = corpus.join("stelline_validated_hardware");
    let read = |name: &str| fs::read_to_string(dir.join(name)).unwrap();
    let tree = builder::lspci_tree(&read("puget-wrx90__lspci_tv.txt"));
    let cx7 = builder::lspci_vvv(&read("puget-wrx90__lspci_vvv_21-00.0_connectx7.txt"));
    let mut host = Host::new();
    let mut gpus = Vec::new();
    for (function, chain) in &tree {
        let mut function = function.clone();
        if function.description.contains("[RTX 6000 Ada Generation]") {
            function.class = Some(zerohop_known::pci::class::DISPLAY_VGA);
            gpus.push(function.address.clone());
        }
        if function.address.starts_with("0000:21:00.") {
            function.driver = Some("mlx5_core".to_owned());
            function.class = cx7[0].class;
        }
        host.function(chain, &function);
    }
    let cas = builder::ibv_devinfo(&read("puget-wrx90__ibv_devinfo.txt"));
    host.rdma("0000:21:00.0", &cas[0]);
    for gpu in &gpus {
        host.file(
            &format!("/proc/driver/nvidia/gpus/{gpu}/information"),
            "Model: \t\t NVIDIA RTX 6000 Ada Generation",
        );
    }
    let topology = Topology::of(&Facts::collect(&HostRoot::at(host.path()).unwrap()));
    let findings = pod_check(host.path(), "POD004");
    assert_eq!(gpus.len(), 2);
    for gpu in &gpus {
        let finding = findings.iter().find(|f| &f.subject == gpu).unwrap();
        let pairing = topology.pairings.iter().find(|p| &p.gpu == gpu).unwrap();
        let distance = pairing.distance.unwrap();
        assert!(!distance.gdr_by_default(), "{distance}");
        assert_eq!(finding.status, Status::Warn, "{findings:#?}");
        assert!(
            finding
                .message
                .contains(&format!("{} is {distance} away", cas[0].name)),
            "{}",
            finding.message
        );
    }
    let hca = findings
        .iter()
        .find(|f| f.subject == "NCCL_IB_HCA")
        .unwrap();
    assert_eq!(
        hca.status,
        Status::Pass,
        "the pod's one device is every gpu's nearest"
    );
}

/// Runs in the namespace [`the_nccl_environment_of_a_live_namespace_is_judged`]
/// creates: judges this process's own view and prints the findings.
#[test]
#[ignore = "run by the_nccl_environment_of_a_live_namespace_is_judged inside its namespace"]
fn judge_this_namespace() {
    let facts = Facts::collect(&HostRoot::live());
    let report = zerohop_doctor::run(&facts, &Profile::default(), &Selection::pod());
    println!(
        "FINDINGS {}",
        serde_json::to_string(&report.findings).unwrap()
    );
}

#[test]
fn the_nccl_environment_of_a_live_namespace_is_judged() {
    // A pod's network namespace, made here: a user and network namespace
    // with its own sysfs, and a veth `net1` with an address, as a CNI
    // attaches a secondary network. The test binary then judges itself in
    // it, with the variables a copied job spec would set.
    let exe = std::env::current_exe().unwrap();
    let script = "mount -t sysfs sysfs /sys && ip link add veth0 type veth peer name net1 \
                  && ip link set net1 up && ip addr add 10.10.3.7/24 dev net1 \
                  && exec \"$0\" --exact judge_this_namespace --ignored --nocapture --test-threads 1";
    let run = |variables: &[(&str, &str)]| -> Option<Vec<Finding>> {
        let output = Command::new("unshare")
            .args([
                "--user",
                "--map-root-user",
                "--net",
                "--mount",
                "sh",
                "-c",
                script,
            ])
            .arg(&exe)
            .envs(variables.iter().copied())
            .output()
            .ok()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        // With --nocapture the harness prints the test's output on the line
        // of its name (`test judge_this_namespace ... FINDINGS [...]`).
        let line = stdout
            .lines()
            .find_map(|l| l.split_once("FINDINGS ").map(|(_, json)| json))?;
        Some(serde_json::from_str(line).unwrap())
    };
    let Some(findings) = run(&[
        ("NCCL_SOCKET_IFNAME", "net1"),
        ("NCCL_IB_DISABLE", "1"),
        ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
    ]) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "unshare of a user and network namespace was refused: CI must run this test"
        );
        eprintln!("skipped: unshare of a user and network namespace is refused here");
        return;
    };
    let of = |findings: &[Finding], subject: &str| -> Status {
        findings
            .iter()
            .find(|f| f.id == "POD005" && f.subject == subject)
            .unwrap_or_else(|| panic!("no POD005 finding for {subject}: {findings:#?}"))
            .status
    };
    assert_eq!(of(&findings, "NCCL_SOCKET_IFNAME"), Status::Pass);
    assert_eq!(of(&findings, "NCCL_IB_DISABLE"), Status::Fail);

    // `eth` matches the host's interfaces here, not the namespace's.
    let findings = run(&[("NCCL_SOCKET_IFNAME", "eth")]).expect("the namespace ran before");
    assert_eq!(of(&findings, "NCCL_SOCKET_IFNAME"), Status::Fail);
    let socket = findings
        .iter()
        .find(|f| f.subject == "NCCL_SOCKET_IFNAME")
        .unwrap();
    assert_eq!(socket.evidence[1].value, "lo net1 veth0");
}
