//! What a process sees of the pod it runs in: whether it is in one, the
//! workload's NCCL and GPU variables, its own locked-memory limit, the
//! GPU and verbs device nodes it was given.
//!
//! A pod has its own network namespace, device nodes, mounts, limits and
//! environment; the rest of the facts, read at the pod's `/`, already show
//! the pod's view of sysfs and procfs (the netdevs of its namespace, the
//! RDMA devices its namespace may use, the GPUs the container runtime left
//! in `/proc/driver/nvidia/gpus`). These are the few facts that only a
//! process inside the pod has.

use std::collections::BTreeMap;

use crate::facts::kernel::memlock;
use crate::facts::{Fact, Gap, Memlock};
use crate::root::HostRoot;

/// The process's environment, NUL-separated.
pub const ENVIRON: &str = "/proc/self/environ";

/// Where the kernel lists the verbs device nodes: `uverbs<N>/ibdev` names
/// the RDMA device of `/dev/infiniband/uverbs<N>`.
pub const VERBS_CLASS: &str = "/sys/class/infiniband_verbs";

/// The device nodes of the NVIDIA driver.
const DEV: &str = "/dev";

/// The most bytes of the environment read: Linux caps the arguments and
/// environment of a process together at a quarter of the stack limit, and
/// the variables that matter are at the start as often as at the end.
const ENVIRON_CAP: usize = 1 << 20;

/// The variable the kubelet sets in every container of a pod, whatever
/// `enableServiceLinks` says: the address of the API server's
/// `kubernetes` service (kubernetes/kubernetes v1.31.0
/// `pkg/kubelet/kubelet_pods.go`, `getServiceEnvVarMap`, which always
/// keeps the master service of the `default` namespace).
pub const KUBERNETES_SERVICE_HOST: &str = "KUBERNETES_SERVICE_HOST";

/// The variables that select GPUs for a container or a CUDA process.
pub const GPU_VARIABLES: &[&str] = &["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"];

/// What a process knows of its own container.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PodFacts {
    /// The workload's variables of [`ENVIRON`]: every `NCCL_*`, the
    /// [`GPU_VARIABLES`] and [`KUBERNETES_SERVICE_HOST`]; nothing else is
    /// kept.
    pub environment: Fact<BTreeMap<String, String>>,
    /// The process's own locked-memory limit and `CAP_IPC_LOCK`.
    pub memlock: Fact<Memlock>,
    /// The numbers of the `/dev/nvidia<N>` device nodes.
    pub gpu_nodes: Fact<Vec<u32>>,
    /// The verbs device nodes by name (`uverbs0`) with the RDMA device each
    /// opens, from [`VERBS_CLASS`].
    pub verbs: Fact<BTreeMap<String, String>>,
}

impl PodFacts {
    /// Reads the process's view from `root`: a live `/`, or a tree that
    /// stands for a pod's `/` (a capture of one, a test's).
    pub fn collect(root: &HostRoot) -> PodFacts {
        PodFacts {
            environment: environment(root),
            memlock: memlock(root),
            gpu_nodes: gpu_nodes(root),
            verbs: verbs(root),
        }
    }

    /// Whether the process runs in a Kubernetes pod: its environment has
    /// [`KUBERNETES_SERVICE_HOST`]. A container of another runtime is not
    /// told from a host this way; `doctor --pod` asks for the pod's checks.
    pub fn in_pod(&self) -> bool {
        self.variable(KUBERNETES_SERVICE_HOST).is_some()
    }

    /// The value of the workload variable `name`, when set.
    pub fn variable(&self, name: &str) -> Option<&str> {
        match &self.environment {
            Ok(Some(variables)) => variables.get(name).map(String::as_str),
            _ => None,
        }
    }
}

/// Whether `name` is a variable [`PodFacts::environment`] keeps.
pub fn kept(name: &str) -> bool {
    name.starts_with("NCCL_") || GPU_VARIABLES.contains(&name) || name == KUBERNETES_SERVICE_HOST
}

/// The kept variables of a NUL-separated environment block. An entry that
/// is not `NAME=value` or not UTF-8 is skipped; of a name set twice the
/// first entry is kept, the one glibc's `getenv` returns.
pub fn parse_environ(bytes: &[u8]) -> BTreeMap<String, String> {
    let mut variables = BTreeMap::new();
    for entry in bytes.split(|b| *b == 0) {
        let Ok(entry) = std::str::from_utf8(entry) else {
            continue;
        };
        let Some((name, value)) = entry.split_once('=') else {
            continue;
        };
        if kept(name) {
            variables
                .entry(name.to_owned())
                .or_insert_with(|| value.to_owned());
        }
    }
    variables
}

fn environment(root: &HostRoot) -> Fact<BTreeMap<String, String>> {
    let bytes = root.read_bytes(ENVIRON, ENVIRON_CAP).map_err(Gap::from)?;
    Ok(bytes.map(|bytes| parse_environ(&bytes)))
}

fn gpu_nodes(root: &HostRoot) -> Fact<Vec<u32>> {
    let Some(names) = root.list(DEV).map_err(Gap::from)? else {
        return Ok(None);
    };
    let mut numbers: Vec<u32> = names
        .iter()
        .filter_map(|name| name.strip_prefix("nvidia"))
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|digits| digits.parse().ok())
        .collect();
    numbers.sort_unstable();
    Ok(Some(numbers))
}

fn verbs(root: &HostRoot) -> Fact<BTreeMap<String, String>> {
    let Some(names) = root.list(VERBS_CLASS).map_err(Gap::from)? else {
        return Ok(None);
    };
    let mut nodes = BTreeMap::new();
    for name in names.iter().filter(|name| name.starts_with("uverbs")) {
        let path = format!("{VERBS_CLASS}/{name}/ibdev");
        if let Some(device) = root.read_value(&path).map_err(Gap::from)?
            && !device.is_empty()
        {
            nodes.insert(name.clone(), device);
        }
    }
    Ok(Some(nodes))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn only_the_workload_variables_are_kept_first_entry_wins() {
        let block = b"PATH=/usr/bin\0NCCL_IB_HCA==mlx5_2:1\0AWS_SECRET_ACCESS_KEY=x\0NCCL_IB_HCA=mlx5_9\0NVIDIA_VISIBLE_DEVICES=0,1\0broken\0\xff=1\0";
        let variables = parse_environ(block);
        assert_eq!(
            variables.keys().collect::<Vec<_>>(),
            ["NCCL_IB_HCA", "NVIDIA_VISIBLE_DEVICES"]
        );
        assert_eq!(variables["NCCL_IB_HCA"], "=mlx5_2:1");
    }

    #[test]
    fn a_pod_tree_shows_its_variables_nodes_and_verbs() {
        let dir = tempfile::tempdir().unwrap();
        let at = |path: &str| dir.path().join(path.trim_start_matches('/'));
        for path in [
            "/proc/self",
            "/sys/class/infiniband_verbs/uverbs3",
            "/dev/infiniband",
        ] {
            fs::create_dir_all(at(path)).unwrap();
        }
        fs::write(
            at(ENVIRON),
            b"KUBERNETES_SERVICE_HOST=10.96.0.1\0NCCL_DEBUG=INFO\0",
        )
        .unwrap();
        fs::write(at("/sys/class/infiniband_verbs/uverbs3/ibdev"), "mlx5_3\n").unwrap();
        for node in ["nvidia0", "nvidia7", "nvidiactl", "nvidia-uvm"] {
            fs::write(at(&format!("/dev/{node}")), "").unwrap();
        }
        let root = HostRoot::at(dir.path()).unwrap();
        let pod = PodFacts::collect(&root);
        assert!(pod.in_pod());
        assert_eq!(pod.variable("NCCL_DEBUG"), Some("INFO"));
        assert_eq!(pod.gpu_nodes, Ok(Some(vec![0, 7])));
        assert_eq!(
            pod.verbs
                .unwrap()
                .unwrap()
                .get("uverbs3")
                .map(String::as_str),
            Some("mlx5_3")
        );
    }

    #[test]
    fn a_host_tree_is_no_pod() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc")).unwrap();
        let pod = PodFacts::collect(&HostRoot::at(dir.path()).unwrap());
        assert!(!pod.in_pod());
        assert_eq!(pod.environment, Ok(None));
    }

    proptest! {
        #[test]
        fn any_environment_block_parses(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_environ(&bytes);
        }
    }
}
