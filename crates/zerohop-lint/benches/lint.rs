//! Lints 10,000 generated objects, one deployment of many tenants: per
//! tenant a SriovNetworkNodePolicy, a SriovNetwork, a NetworkAttachmentDefinition,
//! a ConfigMap and six Pods with networks, VFs, GPUs and hugepages, plus a
//! NicClusterPolicy and a MachineConfig per 100 tenants.
//!
//! Then the worst shapes one input can take at the 32 MiB size limit, each
//! aimed at a rule or a step that once scanned siblings per element: a
//! mapping of many (repeated) keys, a pod of many containers, a container
//! of many resources, a device plugin config of many resources, a pod
//! annotation naming many networks, many MachineConfigs and pools, a long
//! `status.conditions` list (the CRD validator's `listType=map`, with
//! `--crds`: measured when `../shared/reference/crds` is present), and the
//! densest YAML (a flow sequence of one-letter scalars), which bounds what
//! loading alone costs.
//!
//! Run with `cargo bench -p zerohop-lint --bench lint`; `cargo bench -p
//! zerohop-lint --bench lint -- shapes` runs the shapes only, and `--
//! shapes WORD` those whose description holds WORD. Prints the median of
//! the repeats for loading only (YAML to spanned nodes), for loading plus
//! every rule, for the rules alone (the same runs, without loading), and
//! for writing the human report. With
//! `ZEROHOP_BENCH_SHAPES_DIR=DIR`, each shape's text is also written to
//! `DIR/<n>.yaml`, for measuring other parsers on the same bytes.

use std::fmt::Write as _;
use std::hint::black_box;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use zerohop_core::Report;
use zerohop_core::render::snippet;
use zerohop_k8s::yaml::{self, Limits};
use zerohop_lint::{Input, Options, lint, lint_loaded, load, texts};

const OBJECTS: usize = 10_000;
const REPEATS: usize = 11;
/// Repeats of each worst-case shape (each takes seconds to generate and
/// lint).
const SHAPE_REPEATS: usize = 3;

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
    let shapes_only = std::env::args().any(|arg| arg == "shapes");
    if !shapes_only {
        many_objects();
    }
    shapes();
}

fn many_objects() {
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

/// Appends `item(index)` for index 0, 1, ... while `text` stays under
/// `budget` bytes; returns how many were appended.
fn fill(text: &mut String, budget: usize, mut item: impl FnMut(usize) -> String) -> usize {
    let mut index = 0;
    loop {
        let next = item(index);
        if text.len() + next.len() > budget {
            return index;
        }
        text.push_str(&next);
        index += 1;
    }
}

/// One input of at most `limit` bytes per shape, with a description.
fn shape_inputs(limit: usize) -> Vec<(String, String, bool)> {
    // Room for the closing text some shapes append.
    let budget = limit - 4096;
    let mut shapes = Vec::new();

    let mut text =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: wide\ndata:\n");
    let n = fill(&mut text, budget, |i| {
        format!("  k{i}: yes\n  dup{}: \"x\"\n", i % 1000)
    });
    shapes.push((
        format!("ConfigMap, {} keys (half repeated, half `yes`)", 2 * n),
        text,
        false,
    ));

    let mut text =
        String::from("apiVersion: v1\nkind: Pod\nmetadata:\n  name: wide\nspec:\n  containers:\n");
    let n = fill(&mut text, budget, |i| {
        format!(
            "  - name: c{i}\n    resources:\n      limits: {{rdma/x: 1, hugepages-1Gi: 1Gi}}\n      requests: {{hugepages-1Gi: 2Gi}}\n"
        )
    });
    shapes.push((
        format!("Pod, {n} containers requesting RDMA and hugepages"),
        text,
        false,
    ));

    let mut text = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: wide\nspec:\n  containers:\n  - name: c\n    resources:\n      requests:\n",
    );
    let n = fill(&mut text, budget / 2, |i| {
        format!("        hugepages-{i}: 2Gi\n")
    });
    text.push_str("      limits:\n");
    for i in 0..n {
        let _ = writeln!(text, "        hugepages-{i}: 1Gi");
    }
    shapes.push((
        format!("Pod, one container with {n} requests and {n} limits"),
        text,
        false,
    ));

    let mut list = String::new();
    let n = fill(&mut list, budget - 300, |i| {
        format!(
            "{{\"resourceName\": \"r{}\", \"selectors\": {{\"devices\": [\"1017\"]}}}}, ",
            i % 1000
        )
    });
    let text = format!(
        "apiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: nic-cluster-policy\nspec:\n  sriovDevicePlugin:\n    config: '{{\"resourceList\": [{}{{}}]}}'\n",
        list
    );
    shapes.push((
        format!("NicClusterPolicy, device plugin config of {n} resources"),
        text,
        false,
    ));

    let mut refs = String::new();
    let n = fill(&mut refs, budget / 2, |i| format!("net-{i}, "));
    let mut text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    k8s.v1.cni.cncf.io/networks: {refs}x\nspec:\n  containers:\n  - name: c\n"
    );
    let defined = fill(&mut text, budget, |i| {
        format!(
            "---\napiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: net-{i}\n  namespace: other\n"
        )
    });
    shapes.push((
        format!("Pod naming {n} networks, {defined} NetworkAttachmentDefinitions elsewhere"),
        text,
        false,
    ));

    let mut text = String::new();
    let n = fill(&mut text, budget, |i| {
        if i % 2 == 0 {
            format!(
                "---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: pool-{i}\nspec:\n  machineConfigSelector:\n    matchLabels:\n      machineconfiguration.openshift.io/role: pool-{i}\n"
            )
        } else {
            format!(
                "---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: mc-{i}\n  labels:\n    machineconfiguration.openshift.io/role: missing-{i}\n"
            )
        }
    });
    shapes.push((
        format!(
            "{} MachineConfigPools and {} MachineConfigs",
            n.div_ceil(2),
            n / 2
        ),
        text,
        false,
    ));

    let mut text = String::from(
        "apiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: nic-cluster-policy\nspec: {}\nstatus:\n  state: ready\n  conditions:\n",
    );
    let n = fill(&mut text, budget, |i| {
        format!(
            "  - type: T{i}\n    status: \"True\"\n    lastTransitionTime: \"2025-01-01T00:00:00Z\"\n    reason: R\n    message: m\n"
        )
    });
    shapes.push((
        format!("NicClusterPolicy, {n} status.conditions (validator, --crds)"),
        text,
        true,
    ));

    let mut text =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dense\nitems: [");
    let n = fill(&mut text, budget, |_| "a,".to_owned());
    text.push_str("a]\n");
    shapes.push((
        format!("densest YAML: a flow sequence of {n} one-letter scalars"),
        text,
        false,
    ));
    shapes
}

fn median_of(repeats: usize, mut run: impl FnMut() -> Duration) -> Duration {
    median((0..repeats).map(|_| run()).collect())
}

/// The CPU time this thread has used: on a machine shared with other work,
/// what the run itself cost, where wall time also counts the waiting.
fn cpu_time() -> Duration {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(time.tv_sec).unwrap_or(0),
        u32::try_from(time.tv_nsec).unwrap_or(0),
    )
}

fn shapes() {
    let limits = Limits::default();
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/crds");
    println!(
        "worst-case shapes at the {} MiB input limit, median of {SHAPE_REPEATS}:",
        limits.max_bytes / 1048576
    );
    println!(
        "| shape | MiB | held MiB | findings | load (CPU) | load + rules (CPU) | rules alone (CPU) | load + rules (wall) | human report (CPU) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| arg != "shapes" && !arg.starts_with('-'))
        .collect();
    let dump = std::env::var_os("ZEROHOP_BENCH_SHAPES_DIR").map(std::path::PathBuf::from);
    for (number, (description, text, needs_crds)) in
        shape_inputs(limits.max_bytes).into_iter().enumerate()
    {
        if !filter
            .iter()
            .all(|word| description.contains(word.as_str()))
        {
            continue;
        }
        if let Some(dir) = &dump {
            std::fs::write(dir.join(format!("{number}.yaml")), &text).expect("shape written");
        }
        let mut options = Options::default();
        if needs_crds {
            if !crds.is_dir() {
                println!(
                    "| {description} | skipped: {} is absent | | | | | | |",
                    crds.display()
                );
                continue;
            }
            options.catalog =
                Some(zerohop_lint::load_crds(&crds, &limits).expect("reference crds"));
        }
        let bytes = text.len();
        let input = || Input {
            name: "shape.yaml".to_owned(),
            content: Ok(text.clone().into_bytes()),
        };
        let load_only = median_of(SHAPE_REPEATS, || {
            let input = input();
            let start = cpu_time();
            black_box(load(input, &limits));
            cpu_time().saturating_sub(start)
        });
        let mut findings = 0;
        let (mut cpu, mut rules) = (Vec::new(), Vec::new());
        let full = median_of(SHAPE_REPEATS, || {
            let input = input();
            let (start, start_cpu) = (Instant::now(), cpu_time());
            let loaded = [load(input, &limits)];
            let rules_start = cpu_time();
            findings = black_box(lint_loaded(&loaded, &options)).findings.len();
            let end = cpu_time();
            cpu.push(end.saturating_sub(start_cpu));
            rules.push(end.saturating_sub(rules_start));
            start.elapsed()
        });
        let (cpu, rules) = (median(cpu), median(rules));
        let loaded = [load(input(), &limits)];
        let held = loaded[0].held_bytes();
        let outcome = lint_loaded(&loaded, &options);
        let report = Report::new("lint", "shape.yaml", outcome.findings);
        let human = median_of(SHAPE_REPEATS, || {
            let start = cpu_time();
            let mut out = io::BufWriter::new(io::sink());
            snippet::write(&report, &mut texts(&loaded), &mut out).expect("sink");
            cpu_time().saturating_sub(start)
        });
        println!(
            "| {description} | {:.1} | {:.0} | {findings} | {:.2} s | {:.2} s | {:.2} s | {:.2} s | {:.3} s |",
            bytes as f64 / 1048576.0,
            held as f64 / 1048576.0,
            load_only.as_secs_f64(),
            cpu.as_secs_f64(),
            rules.as_secs_f64(),
            full.as_secs_f64(),
            human.as_secs_f64()
        );
    }
}
