//! Lints 10,000 generated objects, one deployment of many tenants: per
//! tenant a SriovNetworkNodePolicy, a SriovNetwork, a NetworkAttachmentDefinition,
//! a ConfigMap and six Pods with networks, VFs, GPUs and hugepages, plus a
//! NicClusterPolicy and a MachineConfig per 100 tenants.
//!
//! Run with `cargo bench -p zerohop-lint --bench lint`. Prints the median of
//! the repeats for loading only (YAML to spanned nodes) and for loading plus
//! every rule.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use zerohop_k8s::yaml::{self, Limits};
use zerohop_lint::{Input, Options, lint};

const OBJECTS: usize = 10_000;
const REPEATS: usize = 11;

fn tenant(out: &mut String, index: usize) -> usize {
    let ns = format!("team-{index}");
    let _ = write!(
        out,
        "---\napiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\nmetadata:\n  name: policy-{index}\n  namespace: nvidia-network-operator\nspec:\n  resourceName: rdma_vfs_{index}\n  nodeSelector:\n    feature.node.kubernetes.io/pci-15b3.present: \"true\"\n  numVfs: 8\n  isRdma: true\n  nicSelector:\n    vendor: \"15b3\"\n    deviceID: \"1021\"\n    pfNames: [\"ens{index}f0#0-7\"]\n"
    );
    let _ = write!(
        out,
        "---\napiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetwork\nmetadata:\n  name: net-{index}\n  namespace: nvidia-network-operator\nspec:\n  resourceName: rdma_vfs_{index}\n  networkNamespace: {ns}\n  vlan: 0\n  spoofChk: \"off\"\n"
    );
    let _ = write!(
        out,
        "---\napiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: storage-{index}\n  namespace: {ns}\n  annotations:\n    k8s.v1.cni.cncf.io/resourceName: nvidia.com/rdma_vfs_{index}\nspec:\n  config: '{{\"cniVersion\": \"1.0.0\", \"type\": \"sriov\"}}'\n"
    );
    let _ = write!(
        out,
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {ns}\ndata:\n  NCCL_IB_HCA: mlx5\n  mode: \"0644\"\n"
    );
    for pod in 0..6 {
        let _ = write!(
            out,
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: trainer-{pod}\n  namespace: {ns}\n  annotations:\n    k8s.v1.cni.cncf.io/networks: net-{index}, storage-{index}\nspec:\n  containers:\n    - name: trainer\n      image: nvcr.io/nvidia/pytorch:25.01-py3\n      securityContext:\n        capabilities:\n          add: [\"IPC_LOCK\"]\n      env:\n        - name: NCCL_IB_HCA\n          value: mlx5\n      resources:\n        limits:\n          nvidia.com/gpu: 2\n          nvidia.com/rdma_vfs_{index}: 2\n          hugepages-1Gi: 4Gi\n          memory: 64Gi\n        requests:\n          hugepages-1Gi: 4Gi\n          memory: 64Gi\n"
        );
    }
    10
}

fn generate() -> Vec<Input> {
    let mut inputs = Vec::new();
    let mut objects = 0;
    let mut index = 0;
    while objects < OBJECTS {
        let mut text = String::new();
        for _ in 0..100 {
            if objects >= OBJECTS {
                break;
            }
            objects += tenant(&mut text, index);
            index += 1;
        }
        text.push_str("---\napiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: nic-cluster-policy\nspec:\n  ofedDriver:\n    image: doca-driver\n    repository: nvcr.io/nvidia/mellanox\n    version: doca3.5.0-26.07-0.7.0.0-0\n    env:\n      - name: ENABLE_NFSRDMA\n        value: \"true\"\n");
        objects += 1;
        inputs.push(Input {
            name: format!("tenants-{index}.yaml"),
            content: Ok(text.into_bytes()),
        });
    }
    inputs
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let inputs = generate();
    let bytes: usize = inputs
        .iter()
        .map(|i| i.content.as_ref().map_or(0, Vec::len))
        .sum();
    let limits = Limits::default();
    let options = Options::default();

    let documents: usize = inputs
        .iter()
        .map(|i| yaml::load_bytes(i.content.as_ref().unwrap(), &limits).map_or(0, |d| d.len()))
        .sum();
    let findings = lint(&inputs, &options).findings.len();

    let load = median(
        (0..REPEATS)
            .map(|_| {
                let start = Instant::now();
                for input in &inputs {
                    black_box(yaml::load_bytes(input.content.as_ref().unwrap(), &limits).ok());
                }
                start.elapsed()
            })
            .collect(),
    );
    let full = median(
        (0..REPEATS)
            .map(|_| {
                let start = Instant::now();
                black_box(lint(&inputs, &options));
                start.elapsed()
            })
            .collect(),
    );
    println!(
        "inputs: {} files, {:.1} MiB, {documents} objects, {findings} findings",
        inputs.len(),
        bytes as f64 / 1048576.0
    );
    println!(
        "load only (yaml with spans), median of {REPEATS}: {:.1} ms",
        load.as_secs_f64() * 1e3
    );
    println!(
        "load + all {} rules, median of {REPEATS}: {:.1} ms",
        zerohop_lint::RULES.len(),
        full.as_secs_f64() * 1e3
    );
}
