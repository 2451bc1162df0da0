//! The fabric tests under `validate/`: per node pool, a perftest server
//! and client per rail on two different nodes, and an nccl-tests `MPIJob`
//! over every GPU of several nodes. `zerohop validate run` creates them,
//! follows them and judges their logs; they can also be applied by hand.
//!
//! Everything that is also in the example workload (the network
//! annotation, the resource of each rail, the NCCL environment, `/dev/shm`)
//! comes from the same functions in [`super::workload`].
//!
//! Upstream behaviour relied on:
//! - perftest (github.com/linux-rdma/perftest, `README`): `--use_cuda=<gpu
//!   index>` allocates the buffers in that GPU's memory, and
//!   `--use_cuda_dmabuf` registers them with the NIC through a DMA-BUF
//!   instead of `nvidia_peermem`; it must come after `--use_cuda` (perftest
//!   issue 336: the option parser refuses it otherwise). The server waits
//!   for one client on TCP port 18515 and exits after one test.
//! - DMA-BUF needs the open GPU kernel modules, which the plan's
//!   `ClusterPolicy` selects (`driver.kernelModuleType: open`).
//! - Kubeflow MPI Operator v2beta1 (github.com/kubeflow/mpi-operator,
//!   `proposals/397-mpi-operator-v2` and `pkg/apis/kubeflow/v2beta1`): the
//!   `Worker` replicas run an SSH server and nothing else; the single
//!   `Launcher` runs `mpirun`, which starts `slotsPerWorker` ranks on each
//!   worker over SSH with the hostfile the operator mounts; processes
//!   started that way do not inherit the worker container's environment, so
//!   the NCCL settings are set on the launcher and forwarded with `-x`.
//!   `launcherCreationPolicy: WaitForWorkersReady` creates the launcher
//!   only once every worker is ready, so `mpirun` does not race `sshd`.
//! - The multi-network annotation `k8s.v1.cni.cncf.io/networks` (Network
//!   Plumbing Working Group specification, implemented by Multus) attaches
//!   each pod to the rail networks the plan renders.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zerohop_known::shell::quote;

use super::workload::{
    NETWORKS_ANNOTATION, ROCE_TRAFFIC_CLASS, SERVICE_ACCOUNT, nccl_env, networks_annotation,
    rail_resource, shm_mount, shm_volume,
};
use super::{ManifestFile, to_yaml};
use crate::intent::{LinkType, RdmaMode};
use crate::plan::{Plan, PoolPlan, RailPlan};

/// The directory of the fabric tests in a plan output.
pub const DIR: &str = "validate";

/// Label on every object of the fabric tests: what selects them.
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
/// The value of [`LABEL_NAME`].
pub const NAME: &str = "zerohop-validate";
/// Label naming the part an object plays ([`Role`]).
pub const LABEL_COMPONENT: &str = "app.kubernetes.io/component";
/// Label naming the node pool an object tests.
pub const LABEL_POOL: &str = "zerohop.dev/pool";
/// Label naming the rail a perftest pod tests.
pub const LABEL_RAIL: &str = "zerohop.dev/rail";

/// Annotation on a pool's nccl-tests `MPIJob`: the link type of the rails
/// NCCL runs on (`IB`, `ETH`, as the intent spells it), when they share one.
/// `zerohop validate --plan` holds NCCL's transport to it.
pub const ANNOTATION_LINK_TYPE: &str = "zerohop.dev/link-type";
/// Annotation on a pool's nccl-tests `MPIJob`: the per-rail line rate in
/// Gb/s the intent gives, which `zerohop validate --plan` holds the
/// measured bus bandwidth to.
pub const ANNOTATION_LINK_RATE: &str = "zerohop.dev/link-rate-gbps";

/// The perftest binary: RDMA writes, the operation GPUDirect RDMA and
/// NCCL's network transport use.
const PERFTEST: &str = "ib_write_bw";

/// How often, and how many seconds apart, the client tries to reach its
/// server: the server may still be pulling its image or setting up CUDA,
/// and perftest does not retry a refused connection itself. A refused
/// connection never reaches the server, which serves one client and exits
/// (perftest `README`), so trying again does not use it up.
const CLIENT_ATTEMPTS: u32 = 60;
/// Seconds between two attempts of the client ([`CLIENT_ATTEMPTS`]).
const CLIENT_RETRY_SECONDS: u32 = 5;

/// The part an object of the fabric tests plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The perftest pod that listens.
    PerftestServer,
    /// The perftest pod that connects and prints the result.
    PerftestClient,
    /// The nccl-tests `MPIJob`.
    NcclTests,
    /// The `MPIJob`'s launcher pod, which runs `mpirun` and prints the result.
    NcclLauncher,
    /// An `MPIJob` worker pod.
    NcclWorker,
}

impl Role {
    /// The [`LABEL_COMPONENT`] value.
    pub const fn label(self) -> &'static str {
        match self {
            Role::PerftestServer => "perftest-server",
            Role::PerftestClient => "perftest-client",
            Role::NcclTests => "nccl-tests",
            Role::NcclLauncher => "nccl-tests-launcher",
            Role::NcclWorker => "nccl-tests-worker",
        }
    }
}

/// The files of `validate/`: per pool, one file per rail with its perftest
/// server and client, a headless Service through which clients find their
/// server, and the nccl-tests `MPIJob`. They are not in
/// `kustomization.yaml`: they test the deployment, they are not part of it.
pub(crate) fn files(plan: &Plan) -> Vec<ManifestFile> {
    let mut files = Vec::new();
    for pool in &plan.pools {
        let mut rails: Vec<&RailPlan> = pool
            .nics
            .iter()
            .filter_map(|nic| plan.rails.get(&nic.rail))
            .collect();
        rails.sort_by_key(|r| r.rail);
        rails.dedup_by_key(|r| r.rail);
        if rails.is_empty() {
            continue;
        }
        files.push(file(
            format!("{DIR}/{}/perftest-service.yaml", pool.name),
            vec![perftest_service(plan, pool)],
        ));
        for rail in &rails {
            files.push(file(
                format!("{DIR}/{}/perftest-rail{}.yaml", pool.name, rail.rail),
                vec![
                    perftest_pod(plan, pool, rail, Role::PerftestServer),
                    perftest_pod(plan, pool, rail, Role::PerftestClient),
                ],
            ));
        }
        // The workers are the workload's pods: its rails, not the storage
        // rail the hosts use.
        let workload_rails: Vec<&RailPlan> = rails
            .iter()
            .filter(|rail| plan.workload.rails.contains(&rail.rail))
            .copied()
            .collect();
        files.push(file(
            format!("{DIR}/{}/nccl-tests-mpijob.yaml", pool.name),
            vec![nccl_tests_mpijob(plan, pool, &workload_rails)],
        ));
    }
    files
}

fn file(path: String, objects: Vec<Value>) -> ManifestFile {
    ManifestFile {
        path,
        contents: to_yaml(&objects),
        objects,
    }
}

fn labels(pool: &PoolPlan, role: Role, rail: Option<&RailPlan>) -> Value {
    let mut labels = json!({
        LABEL_NAME: NAME,
        LABEL_COMPONENT: role.label(),
        LABEL_POOL: pool.name,
    });
    if let Some(rail) = rail {
        labels[LABEL_RAIL] = json!(rail.rail.to_string());
    }
    labels
}

/// The name of the headless Service of a pool's perftest servers.
fn service_name(pool: &PoolPlan) -> String {
    format!("zerohop-perftest-{}", pool.name)
}

/// The host name of a rail's perftest server, unique in its Service.
fn server_hostname(rail: &RailPlan) -> String {
    format!("server-rail{}", rail.rail)
}

/// The name of a rail's perftest pod in `role`.
pub fn perftest_pod_name(pool: &str, rail: u32, role: Role) -> String {
    let side = if role == Role::PerftestServer {
        "server"
    } else {
        "client"
    };
    format!("zerohop-perftest-{pool}-rail{rail}-{side}")
}

/// A headless Service that gives every server pod of the pool a DNS name
/// (`server-rail0.zerohop-perftest-POOL`), published before the pod is
/// ready: perftest servers have no readiness probe.
fn perftest_service(plan: &Plan, pool: &PoolPlan) -> Value {
    let mut selector = labels(pool, Role::PerftestServer, None);
    if let Some(map) = selector.as_object_mut() {
        map.remove(LABEL_RAIL);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(pool),
            "namespace": plan.workload.namespace,
            "labels": labels(pool, Role::PerftestServer, None),
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": true,
            "selector": selector,
        },
    })
}

/// The shell lines that set `gid` to the index of the RoCE v2 GID of
/// `$dev`'s IPv4 address, read from sysfs
/// (`ports/1/gid_attrs/types/<index>` is `RoCE v2`, `ports/1/gids/<index>`
/// an IPv4-mapped address; linux `Documentation/ABI/testing/sysfs-class-infiniband`):
/// its place in the table depends on the device and its addresses.
const ROCE_V2_GID: &str = r#"gid=
for t in /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/*; do
  [ "$(cat "$t" 2>/dev/null)" = "RoCE v2" ] || continue
  i=${t##*/}
  case $(cat "/sys/class/infiniband/$dev/ports/1/gids/$i") in 0000:0000:0000:0000:0000:ffff:*) gid=$i; break ;; esac
done
test -n "$gid" || { echo "no RoCE v2 GID of an IPv4 address on $dev" >&2; exit 1; }"#;

/// The perftest options both sides use: the rail's device, on RoCE its
/// RoCE v2 GID and the lossless traffic class, GPU memory through DMA-BUF,
/// 1 MiB messages over 4 queue pairs for 10 seconds, reported in Gb/s.
fn perftest_command(plan: &Plan, pool: &PoolPlan, rail: &RailPlan, role: Role) -> String {
    let device = match plan.rdma_mode {
        // Exclusive RDMA namespaces: the pod sees only its one VF's device.
        RdmaMode::Sriov => "dev=\nfor d in /sys/class/infiniband/*; do\n  if [ -e \"$d\" ]; then dev=${d##*/}; break; fi\ndone".to_owned(),
        RdmaMode::Shared => {
            let name = pool
                .nics
                .iter()
                .find(|n| n.rail == rail.rail)
                .map_or("", |n| n.rdma_device.as_str());
            format!("dev={}", quote(name))
        }
    };
    let mut args = vec![PERFTEST.to_owned(), "-d \"$dev\"".to_owned()];
    let roce = rail.link_type == LinkType::Eth;
    if roce {
        args.push("-x \"$gid\"".to_owned());
        args.push(format!("--tclass={ROCE_TRAFFIC_CLASS}"));
    }
    args.extend(
        [
            "-F",
            "--report_gbits",
            "-q 4",
            "-s 1048576",
            "-D 10",
            // The pod has one GPU, aligned with its VF by the Topology
            // Manager; DMA-BUF must follow --use_cuda.
            "--use_cuda=0",
            "--use_cuda_dmabuf",
        ]
        .map(str::to_owned),
    );
    let mut script = vec![
        "set -eu".to_owned(),
        device,
        "test -n \"$dev\" || { echo 'no RDMA device in the pod' >&2; exit 1; }".to_owned(),
    ];
    if roce {
        script.push(ROCE_V2_GID.to_owned());
    }
    if role == Role::PerftestClient {
        args.push("\"$PERFTEST_SERVER\"".to_owned());
        script.push(format!(
            "attempt=1\nuntil {}; do\n  [ \"$attempt\" -lt {CLIENT_ATTEMPTS} ] || {{ echo \"no perftest server answered after $attempt attempts\" >&2; exit 1; }}\n  attempt=$((attempt + 1))\n  sleep {CLIENT_RETRY_SECONDS}\ndone",
            args.join(" ")
        ));
    } else {
        script.push(format!("exec {}", args.join(" ")));
    }
    script.join("\n")
}

/// A perftest pod of one rail: one GPU and one RDMA device of that rail,
/// on the pool's nodes; the client never on its server's node. Guaranteed,
/// with 2 whole CPUs (the benchmark's thread and its completion polling)
/// that the static CPU manager pins on the GPU's NUMA node: a measurement
/// that shares its CPUs measures its neighbours too.
fn perftest_pod(plan: &Plan, pool: &PoolPlan, rail: &RailPlan, role: Role) -> Value {
    let resources = json!({
        zerohop_known::topology::GPU_RESOURCE: "1",
        rail_resource(plan, rail): "1",
        "cpu": "2",
        "memory": "8Gi",
    });
    // perftest does not use NCCL: the pod carries no NCCL environment.
    let mut env = Vec::new();
    let mut spec = json!({
        "restartPolicy": "Never",
        "serviceAccountName": SERVICE_ACCOUNT,
        "nodeSelector": pool.node_selector,
    });
    if role == Role::PerftestServer {
        spec["hostname"] = json!(server_hostname(rail));
        spec["subdomain"] = json!(service_name(pool));
    } else {
        env.push(json!({
            "name": "PERFTEST_SERVER",
            "value": format!("{}.{}", server_hostname(rail), service_name(pool)),
        }));
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": labels(pool, Role::PerftestServer, Some(rail))},
            "topologyKey": "kubernetes.io/hostname",
        }]}});
    }
    let mut container = json!({
        "name": "perftest",
        "image": plan.validation.perftest_image,
        "command": ["sh", "-c", perftest_command(plan, pool, rail, role)],
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        "resources": {"requests": resources, "limits": resources},
    });
    if !env.is_empty() {
        container["env"] = json!(env);
    }
    spec["containers"] = json!([container]);
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": perftest_pod_name(&pool.name, rail.rail, role),
            "namespace": plan.workload.namespace,
            "labels": labels(pool, role, Some(rail)),
            "annotations": {NETWORKS_ANNOTATION: networks_annotation(&[rail])},
        },
        "spec": spec,
    })
}

/// The name of a pool's nccl-tests `MPIJob`.
pub fn mpijob_name(pool: &str) -> String {
    format!("zerohop-nccl-tests-{pool}")
}

/// The nccl-tests `MPIJob`: `ncclNodes` workers, each with every GPU of its
/// node and one RDMA device per rail of the workload, one worker per node; the launcher
/// runs `all_reduce_perf` from 8 B to 8 GiB with one GPU per rank.
fn nccl_tests_mpijob(plan: &Plan, pool: &PoolPlan, rails: &[&RailPlan]) -> Value {
    let nodes = plan.validation.nccl_nodes;
    let ranks = nodes * pool.gpus;
    let mut env = nccl_env(plan, rails);
    env.push(json!({"name": "NCCL_DEBUG_SUBSYS", "value": "INIT,NET"}));
    let mut mpirun: Vec<String> = [
        "mpirun",
        "--allow-run-as-root",
        "-np",
        &ranks.to_string(),
        "-bind-to",
        "none",
        "-map-by",
        "slot",
    ]
    .map(str::to_owned)
    .to_vec();
    for var in &env {
        if let Some(name) = var["name"].as_str() {
            mpirun.push("-x".to_owned());
            mpirun.push(name.to_owned());
        }
    }
    mpirun.extend(
        [
            "all_reduce_perf",
            "-b",
            "8",
            "-e",
            "8G",
            "-f",
            "2",
            "-g",
            "1",
        ]
        .map(str::to_owned),
    );
    let mut worker_resources: BTreeMap<String, Value> = BTreeMap::new();
    worker_resources.insert("nvidia.com/gpu".to_owned(), json!(pool.gpus.to_string()));
    for rail in rails {
        worker_resources.insert(rail_resource(plan, rail), json!("1"));
    }
    // Sized as the example workload, requests equal to limits: Guaranteed,
    // so the static CPU manager pins whole CPUs on the GPUs' NUMA nodes
    // instead of leaving the ranks BestEffort on the shared pool.
    worker_resources.insert("cpu".to_owned(), json!(plan.workload.cpus.to_string()));
    worker_resources.insert(
        "memory".to_owned(),
        json!(super::quantity::canonical(&plan.workload.memory)),
    );
    let launcher = json!({
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {
            "metadata": {"labels": labels(pool, Role::NcclLauncher, None)},
            "spec": {
                "serviceAccountName": SERVICE_ACCOUNT,
                "containers": [{
                    "name": "launcher",
                    "image": plan.validation.nccl_tests_image,
                    "command": mpirun,
                    "env": env.clone(),
                }],
            },
        },
    });
    let worker = json!({
        "replicas": nodes,
        "restartPolicy": "Never",
        "template": {
            "metadata": {
                "labels": labels(pool, Role::NcclWorker, None),
                "annotations": {NETWORKS_ANNOTATION: networks_annotation(rails)},
            },
            "spec": {
                "serviceAccountName": SERVICE_ACCOUNT,
                "nodeSelector": pool.node_selector,
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": labels(pool, Role::NcclWorker, None)},
                    "topologyKey": "kubernetes.io/hostname",
                }]}},
                "containers": [{
                    "name": "worker",
                    "image": plan.validation.nccl_tests_image,
                    "command": ["/usr/sbin/sshd", "-De"],
                    // Ranks started over SSH do not inherit it (the launcher
                    // forwards its own with -x); a shell in the worker does.
                    "env": env,
                    "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                    "resources": {"requests": worker_resources, "limits": worker_resources},
                    "volumeMounts": [shm_mount()],
                }],
                "volumes": [shm_volume(plan)],
            },
        },
    });
    // What the intent plans for this fabric, for `validate --plan` to judge
    // the job's log against without the intent.
    let fabric = plan.pool_fabric(pool);
    let mut annotations = BTreeMap::new();
    if let Some(link) = fabric.link_type {
        annotations.insert(ANNOTATION_LINK_TYPE, link.as_str().to_owned());
    }
    if let Some(rate) = fabric.link_rate_gbps {
        annotations.insert(ANNOTATION_LINK_RATE, rate.to_string());
    }
    let mut metadata = json!({
        "name": mpijob_name(&pool.name),
        "namespace": plan.workload.namespace,
        "labels": labels(pool, Role::NcclTests, None),
    });
    if !annotations.is_empty() {
        metadata["annotations"] = json!(annotations);
    }
    json!({
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": metadata,
        "spec": {
            "slotsPerWorker": pool.gpus,
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
            "mpiReplicaSpecs": {"Launcher": launcher, "Worker": worker},
        },
    })
}
