//! The fabric tests as `zerohop plan` rendered them under `DIR/validate/`,
//! read back, and the pure changes a run makes to them before creating
//! them: its label, its namespace, the nodes it pins, the server address.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::{Value, json};
use zerohop_input::{Follow, NotRegular, os_reason, read_regular};
use zerohop_plan::intent::LinkType;
use zerohop_plan::validation::{self as rendered, LABEL_COMPONENT, LABEL_RAIL, Role};

use crate::judge::PlannedFabric;

/// The label every object a run creates carries, with the run's ID as
/// value: cleanup deletes by it, and `kubectl get pods,mpijobs -A -l
/// zerohop.dev/validate-run` finds what a killed run left behind.
pub const RUN_LABEL: &str = "zerohop.dev/validate-run";

/// The largest rendered file read: a plan's files are a few KiB.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The node label the scheduler pins a pod to one node by.
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The init container that judges a test pod from inside before its test
/// runs: `zerohop doctor --pod`, which exits 1 when a check fails and so
/// keeps the test from starting in a pod that cannot carry it.
pub const POD_CHECK: &str = "zerohop-pod-check";

/// The agent's manifest in a plan output, whose image is the zerohop
/// image the plan's cluster pulls.
const AGENT_FILE: &str = "65-zerohop-agent.yaml";

/// One rail's perftest pair.
#[derive(Debug, Clone, PartialEq)]
pub struct PerftestPair {
    /// The rail number.
    pub rail: u32,
    /// The server pod.
    pub server: Value,
    /// The client pod.
    pub client: Value,
}

/// A pool's fabric tests.
#[derive(Debug, Clone, PartialEq)]
pub struct Workloads {
    /// The pool.
    pub pool: String,
    /// The namespace the plan renders them into.
    pub namespace: String,
    /// One perftest pair per rail, in rail order.
    pub perftest: Vec<PerftestPair>,
    /// The nccl-tests `MPIJob`, when rendered.
    pub mpijob: Option<Value>,
}

impl Workloads {
    /// The fabric the plan rendered the nccl-tests `MPIJob` for: the rails
    /// whose RDMA resource a worker requests (a perftest pair's rail
    /// resource among the worker's limits; the storage rail the hosts use
    /// is not among them), one rank per GPU of a worker (`slotsPerWorker`);
    /// `plan` is the directory, for evidence. `None` without an `MPIJob`
    /// or a rail.
    pub fn planned_fabric(&self, plan: &Path) -> Option<PlannedFabric> {
        let job = self.mpijob.as_ref()?;
        let worker = limits(&job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]);
        let rails = self
            .perftest
            .iter()
            .filter(|pair| {
                limits(&pair.server)
                    .iter()
                    .any(|name| !NOT_RAILS.contains(&name.as_str()) && worker.contains(name))
            })
            .count();
        let rails = u32::try_from(rails).ok().filter(|r| *r > 0)?;
        let gpus_per_node = job["spec"]["slotsPerWorker"]
            .as_u64()
            .and_then(|gpus| u32::try_from(gpus).ok());
        Some(PlannedFabric {
            source: format!("plan {}, pool {}", plan.display(), self.pool),
            rails,
            gpus_per_node,
            link_layer: None,
            link_rate_gbps: None,
        })
    }
}

impl Workloads {
    /// The link type and per-rail line rate the plan rendered the
    /// nccl-tests `MPIJob` for, from its annotations
    /// ([`rendered::ANNOTATION_LINK_TYPE`], [`rendered::ANNOTATION_LINK_RATE`]):
    /// `None` for each the intent did not give, or a plan written before
    /// they were, or a value edited into something the intent would refuse
    /// (a rate outside 1 to [`zerohop_known::nic::MAX_LINK_RATE_GBPS`]).
    pub fn planned_link(&self) -> (Option<LinkType>, Option<u32>) {
        let Some(annotations) = self
            .mpijob
            .as_ref()
            .map(|job| &job["metadata"]["annotations"])
        else {
            return (None, None);
        };
        let link_type = annotations[rendered::ANNOTATION_LINK_TYPE]
            .as_str()
            .and_then(LinkType::parse);
        let rate = annotations[rendered::ANNOTATION_LINK_RATE]
            .as_str()
            .and_then(|rate| rate.parse::<u32>().ok())
            .filter(|rate| (1..=zerohop_known::nic::MAX_LINK_RATE_GBPS).contains(rate));
        (link_type, rate)
    }
}

/// The resources of a pod that are not a rail's RDMA device.
const NOT_RAILS: [&str; 3] = ["nvidia.com/gpu", "cpu", "memory"];

/// The resource names of the first container's limits of a pod or pod
/// template.
fn limits(pod: &Value) -> Vec<String> {
    pod["spec"]["containers"][0]["resources"]["limits"]
        .as_object()
        .map(|limits| limits.keys().cloned().collect())
        .unwrap_or_default()
}

/// Reads the fabric tests of `pool` (or of the only pool) from a plan
/// output directory.
///
/// # Errors
/// A message naming the path when the directory is not a plan output with
/// `validate/`, the pool is not there or is ambiguous, or a file is not a
/// regular file of at most 1 MiB of YAML.
pub fn load(plan: &Path, pool: Option<&str>) -> Result<Workloads, String> {
    let base = plan.join(rendered::DIR);
    let mut pools: Vec<String> = fs::read_dir(&base)
        .map_err(|err| {
            format!(
                "{}: {err}; give the directory `zerohop plan -o` wrote with --plan",
                base.display()
            )
        })?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    pools.sort();
    let pool = match pool {
        Some(name) if pools.iter().any(|p| p == name) => name.to_owned(),
        Some(name) => {
            return Err(format!(
                "{} has no pool {name:?}; it has {}",
                base.display(),
                pools.join(", ")
            ));
        }
        None => match pools.as_slice() {
            [only] => only.clone(),
            [] => return Err(format!("{} has no pool", base.display())),
            _ => {
                return Err(format!(
                    "{} has several pools ({}); choose one with --pool",
                    base.display(),
                    pools.join(", ")
                ));
            }
        },
    };
    let dir = base.join(&pool);
    let mut names: Vec<String> = fs::read_dir(&dir)
        .map_err(|err| format!("{}: {err}", dir.display()))?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    let mut pairs: BTreeMap<u32, (Option<Value>, Option<Value>)> = BTreeMap::new();
    let mut mpijob = None;
    let mut namespace = None;
    for name in names {
        let path = dir.join(&name);
        for object in read_objects(&path)? {
            let component = object["metadata"]["labels"][LABEL_COMPONENT].as_str();
            let rail = object["metadata"]["labels"][LABEL_RAIL]
                .as_str()
                .and_then(|r| r.parse::<u32>().ok());
            let kind = object["kind"].as_str();
            if namespace.is_none() {
                namespace = object["metadata"]["namespace"].as_str().map(str::to_owned);
            }
            match (kind, component, rail) {
                (Some("Pod"), Some(c), Some(rail)) if c == Role::PerftestServer.label() => {
                    pairs.entry(rail).or_default().0 = Some(object);
                }
                (Some("Pod"), Some(c), Some(rail)) if c == Role::PerftestClient.label() => {
                    pairs.entry(rail).or_default().1 = Some(object);
                }
                (Some("MPIJob"), _, _) => mpijob = Some(object),
                // The headless Service is for runs by hand: a run gives
                // the client its server's pod IP instead.
                _ => {}
            }
        }
    }
    let mut perftest = Vec::new();
    for (rail, pair) in pairs {
        match pair {
            (Some(server), Some(client)) => perftest.push(PerftestPair {
                rail,
                server,
                client,
            }),
            _ => {
                return Err(format!(
                    "{}: rail {rail} has a perftest server or client but not both",
                    dir.display()
                ));
            }
        }
    }
    if perftest.is_empty() && mpijob.is_none() {
        return Err(format!("{} has no fabric test", dir.display()));
    }
    let image = zerohop_image(plan)?;
    for pair in &mut perftest {
        check_pod_first(&mut pair.server, &image);
        check_pod_first(&mut pair.client, &image);
    }
    Ok(Workloads {
        pool,
        namespace: namespace.unwrap_or_else(|| "default".to_owned()),
        perftest,
        mpijob,
    })
}

/// The zerohop image of the plan: its agent's, else this release's.
fn zerohop_image(plan: &Path) -> Result<String, String> {
    let path = plan.join(AGENT_FILE);
    if !path.exists() {
        return Ok(zerohop_known::zerohop_api::default_image());
    }
    Ok(read_objects(&path)?
        .iter()
        .find_map(|object| {
            object["spec"]["template"]["spec"]["containers"][0]["image"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(zerohop_known::zerohop_api::default_image))
}

/// Runs `zerohop doctor --pod` in `pod` before its test: an init container
/// of `image` with the test container's environment, resources, mounts
/// and security context, so that it sees the devices, limits, `/dev/shm`
/// and NCCL variables the test will (init containers share the pod's
/// network namespace, and the kubelet hands an init container's devices on
/// to the app containers).
pub fn check_pod_first(pod: &mut Value, image: &str) {
    let test = &pod["spec"]["containers"][0];
    let mut check = json!({
        "name": POD_CHECK,
        "image": image,
        "command": ["zerohop", "doctor", "--pod", "--format", "json"],
    });
    for field in ["env", "resources", "volumeMounts", "securityContext"] {
        if !test[field].is_null() {
            check[field] = test[field].clone();
        }
    }
    match pod["spec"]["initContainers"].as_array_mut() {
        Some(init) => init.push(check),
        None => pod["spec"]["initContainers"] = json!([check]),
    }
}

/// The objects of one rendered file, opened without waiting and refused
/// unless it is a regular file of at most [`MAX_FILE_BYTES`].
fn read_objects(path: &Path) -> Result<Vec<Value>, String> {
    let named = |what: String| format!("{}: {what}", path.display());
    let cap = usize::try_from(MAX_FILE_BYTES).unwrap_or(usize::MAX);
    let bytes = read_regular(path, Follow::Links, cap).map_err(|err| match err {
        NotRegular::Kind(kind) => named(format!("{kind}, not a regular file: refused")),
        NotRegular::Io(err) => named(os_reason(&err)),
    })?;
    if bytes.len() > cap {
        return Err(named(format!(
            "over the {} KiB a rendered file may have",
            MAX_FILE_BYTES >> 10
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| named("not UTF-8 text".to_owned()))?;
    let objects: Vec<Value> =
        serde_saphyr::from_multiple(&text).map_err(|err| named(err.to_string()))?;
    Ok(objects.into_iter().filter(Value::is_object).collect())
}

/// Makes an object (and the pod templates of an `MPIJob`) part of run
/// `run_id` in `namespace`.
pub fn claim(object: &mut Value, run_id: &str, namespace: &str) {
    object["metadata"]["namespace"] = json!(namespace);
    object["metadata"]["labels"][RUN_LABEL] = json!(run_id);
    if let Some(specs) = object["spec"]["mpiReplicaSpecs"].as_object_mut() {
        for spec in specs.values_mut() {
            spec["template"]["metadata"]["labels"][RUN_LABEL] = json!(run_id);
        }
    }
}

/// Pins a pod to `node` by its host name label, on top of the pool's
/// node selector (so a node outside the pool is never picked).
pub fn pin(pod: &mut Value, node: &str) {
    pod["spec"]["nodeSelector"][HOSTNAME_LABEL] = json!(node);
}

/// Gives the client the server's pod IP in place of the Service name.
pub fn point_at(client: &mut Value, server_ip: &str) {
    if let Some(env) = client["spec"]["containers"][0]["env"].as_array_mut() {
        for var in env {
            if var["name"] == "PERFTEST_SERVER" {
                var["value"] = json!(server_ip);
            }
        }
    }
}

/// Runs the `MPIJob` on exactly `nodes`: one worker on each, and `mpirun`
/// starts a rank per GPU of each.
pub fn pin_mpijob(job: &mut Value, nodes: &[String]) {
    let count = nodes.len() as u64;
    let slots = job["spec"]["slotsPerWorker"].as_u64().unwrap_or(1);
    let worker = &mut job["spec"]["mpiReplicaSpecs"]["Worker"];
    worker["replicas"] = json!(count);
    worker["template"]["spec"]["affinity"]["nodeAffinity"] = json!({
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": nodes}],
        }]},
    });
    let command = &mut job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
        [0]["command"];
    if let Some(words) = command.as_array_mut()
        && let Some(at) = words.iter().position(|w| w == "-np")
        && let Some(ranks) = words.get_mut(at + 1)
    {
        *ranks = json!((count * slots).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pod_check_sees_what_the_test_container_sees() {
        let mut pod = json!({"spec": {"containers": [{
            "name": "perftest",
            "env": [{"name": "NCCL_IB_HCA", "value": "=mlx5_3"}],
            "resources": {"limits": {"nvidia.com/gpu": "1", "rdma/rail0": "1"}},
            "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        }]}});
        check_pod_first(&mut pod, "ghcr.io/example/zerohop:1.0");
        let check = &pod["spec"]["initContainers"][0];
        assert_eq!(check["name"], POD_CHECK);
        assert_eq!(check["command"][2], "--pod");
        assert_eq!(
            check["resources"],
            pod["spec"]["containers"][0]["resources"]
        );
        assert_eq!(check["env"][0]["value"], "=mlx5_3");
        assert_eq!(
            check["securityContext"]["capabilities"]["add"][0],
            "IPC_LOCK"
        );
        assert!(check["volumeMounts"].is_null());
    }

    #[test]
    fn the_planned_fabric_is_a_rail_per_perftest_pair_and_a_rank_per_slot() {
        let pod = |resource: &str| {
            json!({"spec": {"containers": [{"resources": {"limits": {
                resource: "1", "nvidia.com/gpu": "1", "cpu": "2"
            }}}]}})
        };
        let pair = |rail| PerftestPair {
            rail,
            server: pod(&format!("nvidia.com/rdma_rail{rail}")),
            client: json!({}),
        };
        let mut workloads = Workloads {
            pool: "gpu".to_owned(),
            namespace: "zerohop-validate".to_owned(),
            // Rail 2 is the storage rail: perftest tests it, NCCL does not use it.
            perftest: vec![pair(0), pair(1), pair(2)],
            mpijob: Some(
                json!({"spec": {"slotsPerWorker": 8, "mpiReplicaSpecs": {"Worker": {
                    "template": {"spec": {"containers": [{"resources": {"limits": {
                        "nvidia.com/gpu": "8", "nvidia.com/rdma_rail0": "1",
                        "nvidia.com/rdma_rail1": "1", "cpu": "32"
                    }}}]}}
                }}}}),
            ),
        };
        let fabric = workloads.planned_fabric(Path::new("out")).unwrap();
        assert_eq!(
            (fabric.source.as_str(), fabric.rails, fabric.gpus_per_node),
            ("plan out, pool gpu", 2, Some(8))
        );
        workloads.mpijob = None;
        assert_eq!(workloads.planned_fabric(Path::new("out")), None);
    }

    #[test]
    fn the_planned_link_takes_only_what_the_intent_would() {
        let with = |annotations: Value| Workloads {
            pool: "gpu".to_owned(),
            namespace: "zerohop-validate".to_owned(),
            perftest: Vec::new(),
            mpijob: Some(json!({"metadata": {"annotations": annotations}})),
        };
        let link = |annotations: Value| with(annotations).planned_link();
        assert_eq!(
            link(
                json!({rendered::ANNOTATION_LINK_TYPE: "IB", rendered::ANNOTATION_LINK_RATE: "400"})
            ),
            (Some(LinkType::Ib), Some(400))
        );
        // Edited by hand: nothing the intent would refuse is taken.
        for rate in ["0", "1601", "4294967295", "-1", "400G", "$(reboot)", ""] {
            assert_eq!(
                link(
                    json!({rendered::ANNOTATION_LINK_TYPE: "ib\n", rendered::ANNOTATION_LINK_RATE: rate})
                ),
                (None, None),
                "{rate:?}"
            );
        }
        assert_eq!(
            link(json!({rendered::ANNOTATION_LINK_RATE: 400})),
            (None, None)
        );
        let without = Workloads {
            mpijob: None,
            ..with(json!({}))
        };
        assert_eq!(without.planned_link(), (None, None));
    }

    #[test]
    fn an_mpijob_pinned_to_three_nodes_runs_a_rank_per_gpu_of_each() {
        let mut job = json!({"spec": {"slotsPerWorker": 8, "mpiReplicaSpecs": {
            "Launcher": {"template": {"spec": {"containers": [{"command": ["mpirun", "-np", "16", "x"]}]}}},
            "Worker": {"replicas": 2, "template": {"spec": {}}},
        }}});
        let nodes = ["a", "b", "c"].map(str::to_owned);
        pin_mpijob(&mut job, &nodes);
        claim(&mut job, "r1", "ns");
        let specs = &job["spec"]["mpiReplicaSpecs"];
        assert_eq!(specs["Worker"]["replicas"], 3);
        assert_eq!(
            specs["Launcher"]["template"]["spec"]["containers"][0]["command"][2],
            "24"
        );
        assert_eq!(
            specs["Worker"]["template"]["metadata"]["labels"][RUN_LABEL],
            "r1"
        );
        assert_eq!(job["metadata"]["namespace"], "ns");
    }

    #[test]
    fn the_client_gets_the_server_ip_and_pins_add_to_the_pool_selector() {
        let mut client = json!({"spec": {"nodeSelector": {"pool": "h100"}, "containers": [{"env": [
            {"name": "NCCL_DEBUG", "value": "INFO"},
            {"name": "PERFTEST_SERVER", "value": "server-rail0.svc"},
        ]}]}});
        point_at(&mut client, "10.0.0.7");
        pin(&mut client, "node-b");
        assert_eq!(
            client["spec"]["containers"][0]["env"][1]["value"],
            "10.0.0.7"
        );
        assert_eq!(client["spec"]["nodeSelector"]["pool"], "h100");
        assert_eq!(client["spec"]["nodeSelector"][HOSTNAME_LABEL], "node-b");
    }
}
