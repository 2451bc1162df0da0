//! `zerohop doctor --intent`: a host held to the cluster intent. The
//! conforming host `tests/fixtures/conform/h100-conforming` is built for
//! `examples/cluster.yaml` (pool `h100`): 8 NVIDIA GPUs, the nine ConnectX-7
//! ports with 10 VFs each (`one-per-gpu`: 8 plus 20 %) and 4 on the storage
//! rail, MTU 9000, 64 1 GiB hugepages (32 per NUMA node), the pool's CPU
//! isolation on the command line, and the NFS-over-RDMA mount. Each drift
//! case copies it and changes one file.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../zerohop-doctor/tests/support/mod.rs"]
mod support;

use support::copy_tree;

fn zerohop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .output()
        .expect("zerohop runs")
}

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
        .to_string_lossy()
        .into_owned()
}

fn conforming() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conform/h100-conforming")
}

/// The conforming host with `change` applied, checked against
/// `examples/cluster.yaml`: the conformance checks' output and exit code.
fn drifted(change: impl FnOnce(&Path)) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&conforming(), dir.path());
    change(dir.path());
    let out = zerohop(&[
        "doctor",
        "--root",
        &dir.path().to_string_lossy(),
        "--intent",
        &repo("examples/cluster.yaml"),
        "--only",
        "conformance",
    ]);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn write(root: &Path, path: &str, text: &str) {
    fs::write(root.join(path), text).unwrap();
}

#[test]
fn conforming_host_passes() {
    let (code, text) = drifted(|_| {});
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("13 pass"), "{text}");
}

#[test]
fn wrong_vf_count_fails_citing_the_nic_line() {
    // ens1f0np0 is the function 0000:19:00.0; the finding cites the line
    // of the example that declares its nic.
    let (code, text) = drifted(|root| {
        write(
            root,
            "sys/devices/pci0000:00/0000:19:00.0/sriov_numvfs",
            "4\n",
        );
    });
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("vfs: expected 10, seen 4"), "{text}");
    let intent = std::fs::read_to_string(repo("examples/cluster.yaml")).unwrap();
    let line = 1 + intent
        .lines()
        .position(|l| l.contains("pf: ens1f0np0"))
        .expect("the example declares ens1f0np0");
    assert!(text.contains(&format!("cluster.yaml:{line}")), "{text}");
}

#[test]
fn wrong_mtu_fails() {
    let (code, text) = drifted(|root| {
        write(
            root,
            "sys/devices/pci0000:00/0000:29:00.0/net/ens2f0np0/mtu",
            "1500\n",
        );
    });
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("mtu: expected 9000, seen 1500"), "{text}");
}

#[test]
fn missing_hugepages_on_a_numa_node_fails() {
    let (code, text) = drifted(|root| {
        write(
            root,
            "sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages",
            "0\n",
        );
        write(
            root,
            "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
            "32\n",
        );
    });
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("node 1 holds 0 pages, below its share of 32"),
        "{text}"
    );
    assert!(
        text.contains("32 pages of 1 GiB reserved, expected 64"),
        "{text}"
    );
}

#[test]
fn nfs_mount_without_nconnect_fails() {
    let (code, text) = drifted(|root| {
        let path = root.join("proc/self/mountinfo");
        let table = fs::read_to_string(&path).unwrap();
        fs::write(&path, table.replace("nconnect=16,", "")).unwrap();
    });
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("nconnect: expected 16, absent"), "{text}");
}

#[test]
fn isolcpus_that_differ_fail() {
    let (code, text) = drifted(|root| {
        let path = root.join("proc/cmdline");
        let cmdline = fs::read_to_string(&path).unwrap();
        fs::write(
            &path,
            cmdline.replace(
                "isolcpus=managed_irq,4-55,60-111",
                "isolcpus=managed_irq,4-55",
            ),
        )
        .unwrap();
    });
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("isolcpus: expected 4-55,60-111 (") && text.contains("seen 4-55"),
        "{text}"
    );
}

#[test]
fn missing_gpu_fails() {
    let (code, text) = drifted(|root| {
        fs::remove_file(root.join("sys/bus/pci/devices/0000:18:00.0")).unwrap();
    });
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("expected 8 nvidia gpus"), "{text}");
    assert!(text.contains("seen 7"), "{text}");
}

#[test]
fn a_flag_overrides_the_intent() {
    let out = zerohop(&[
        "doctor",
        "--root",
        &conforming().to_string_lossy(),
        "--intent",
        &repo("examples/cluster.yaml"),
        "--only",
        "CONF002",
        "--expect-mtu",
        "4200",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("mtu: expected 4200, seen 9000"), "{text}");
}

/// Two pools: `gpu` selects hosts with an NVIDIA device (as NFD labels
/// them), `storage` a label the host cannot derive.
const TWO_POOLS: &str = r#"apiVersion: zerohop.dev/v1alpha1
kind: DataPathPlan
metadata:
  name: two
spec:
  platform: kubernetes
  nodePools:
    - name: gpu
      nodeSelector:
        feature.node.kubernetes.io/pci-10de.present: "true"
      cpuVendor: intel
      gpus: 8
      nics:
      - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", vfs: 10, rail: 0, subnet: 192.168.100.0/24}
    - name: storage
      nodeSelector:
        node-role.kubernetes.io/storage: ""
      cpuVendor: intel
      gpus: 2
      nics:
      - {pf: ens9f0np0, rdmaDevice: mlx5_8, deviceId: "1021", vfs: 4, rail: 1, subnet: 192.168.101.0/24}
  workload:
    name: w
    namespace: ai
    image: nvcr.io/nvidia/pytorch:25.08-py3
    gpusPerPod: 2
"#;

fn with_intent(text: &str, extra: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let intent = dir.path().join("intent.yaml");
    fs::write(&intent, text).unwrap();
    let root = conforming();
    let mut args = vec![
        "doctor",
        "--root",
        root.to_str().unwrap(),
        "--intent",
        intent.to_str().unwrap(),
        "--only",
        "CONF001",
    ];
    args.extend_from_slice(extra);
    zerohop(&args)
}

#[test]
fn the_pool_whose_selector_matches_is_chosen() {
    // The host has NVIDIA functions (vendor 0x10de): pci-10de.present.
    let out = with_intent(TWO_POOLS, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pool `gpu`"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn a_node_label_given_can_make_a_choice_ambiguous() {
    let out = with_intent(
        TWO_POOLS,
        &["--node-label", "node-role.kubernetes.io/storage="],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("several pools"), "{stderr}");
    assert!(stderr.contains("gpu, storage"), "{stderr}");
}

#[test]
fn no_matching_pool_is_a_usage_error_listing_the_pools() {
    let text = TWO_POOLS.replace("pci-10de.present", "pci-1002.present");
    let out = with_intent(&text, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no pool of the intent selects this host"),
        "{stderr}"
    );
    assert!(
        stderr.contains("storage (nodeSelector node-role.kubernetes.io/storage=)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("kubernetes.io/hostname=gpu-node-1"),
        "{stderr}"
    );
}

#[test]
fn pool_flag_chooses_and_an_unknown_pool_is_refused() {
    let out = with_intent(TWO_POOLS, &["--pool", "storage"]);
    let text = String::from_utf8_lossy(&out.stdout);
    // The storage pool declares 2 GPUs; the host has 8.
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("expected 2 nvidia gpus"), "{text}");
    let out = with_intent(TWO_POOLS, &["--pool", "nope"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--pool nope"), "{stderr}");
}

#[test]
fn an_invalid_intent_is_a_usage_error() {
    let out = with_intent("kind: DataPathPlan\n", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--intent"));
}

#[test]
fn corpus_host_against_an_intent_it_does_not_match_fails_clearly() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::untar(&corpus.join("hwloc_linux_snapshot_nvidiagpunumanodes.tar.bz2"));
    let root = dir.path().join("nvidiagpunumanodes");
    let out = zerohop(&[
        "doctor",
        "--root",
        &root.to_string_lossy(),
        "--intent",
        &repo("examples/cluster.yaml"),
        "--only",
        "conformance",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a json report");
    let findings = report["findings"].as_array().expect("findings");
    let message = |id: &str| {
        findings
            .iter()
            .filter(|f| f["id"] == id)
            .map(|f| format!("{} {}", f["status"], f["message"]))
            .collect::<Vec<_>>()
    };
    // The capture's PCI functions hold only `class` and `local_cpus`, no
    // vendor: no NVIDIA GPU is identified.
    assert!(
        message("CONF001")[0].contains("seen 0"),
        "{:?}",
        message("CONF001")
    );
    // It has no /sys/class/net: the capture did not hold it (every kernel
    // lists its interfaces there), so every port is unknown, not missing.
    let nics = message("CONF002");
    assert_eq!(nics.len(), 9);
    assert!(
        nics.iter()
            .all(|m| m.starts_with("\"unknown\"") && m.contains("/sys/class/net")),
        "{nics:?}"
    );
    // Its command line (`root=/dev/mapper/system-root ro crashkernel=auto
    // rd.lvm.lv=system/root LANG=en_US.UTF-8`) requests no hugepages and
    // isolates no CPU.
    assert!(
        message("CONF003")[0].contains("requests 0 pages"),
        "{:?}",
        message("CONF003")
    );
    assert!(
        message("CONF004")[0].contains("isolcpus= absent"),
        "{:?}",
        message("CONF004")
    );
}

/// The intent's `linkRateGbps` is the rate the port must reach: the
/// conforming host's ports run at `400 Gb/sec (4X NDR)`, which meets 400
/// and falls short of 800 on the NIC that declares it.
#[test]
fn the_intents_link_rate_is_held_to_the_port_rate() {
    let example = fs::read_to_string(repo("examples/cluster.yaml")).unwrap();
    let nic = "{pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: \"1021\", linkType: ETH,";
    assert!(example.contains(nic), "the example declares ens1f0np0");
    for (rate, code, said) in [
        ("400", 0, "9 pass"),
        (
            "800",
            1,
            "rate: expected 800 Gb/s, seen 400 Gb/sec (4X NDR)",
        ),
    ] {
        let text = example.replace(nic, &format!("{nic} linkRateGbps: {rate},"));
        let out = with_intent_checks(&text, "CONF002");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{stdout}");
        assert!(stdout.contains(said), "{stdout}");
    }
}

fn with_intent_checks(text: &str, only: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let intent = dir.path().join("cluster.yaml");
    fs::write(&intent, text).unwrap();
    let root = conforming();
    zerohop(&[
        "doctor",
        "--root",
        root.to_str().unwrap(),
        "--intent",
        intent.to_str().unwrap(),
        "--only",
        only,
    ])
}
