//! The workload pod's own view, judged from inside it (`zerohop doctor
//! --pod`, or `zerohop doctor` in a container at `/`).
//!
//! Node checks cannot see a pod: its network namespace decides which
//! RDMA devices and netdevs it has, its container runtime which device
//! nodes and GPUs, its spec which limits and `/dev/shm`, its environment
//! what NCCL will do. These checks read the same facts as the node's, at
//! the pod's `/`, and judge whether NCCL in this pod can use GPUDirect
//! RDMA on the right NICs before a job starts.

pub mod devices;
pub mod gpus;
pub mod limits;
pub mod nccl_env;
pub mod roce;

use zerohop_host::facts::nvidia::GPUS_DIR;

use crate::context::Context;

/// The GPUs the pod sees: the PCI addresses the NVIDIA driver lists in
/// `/proc/driver/nvidia/gpus`, which the NVIDIA container runtime narrows
/// to the container's GPUs (libnvidia-container `src/nvc_mount.c`,
/// `mount_procfs_gpu` and the tmpfs it mounts over the directory).
pub(crate) fn pod_gpus<'a>(ctx: &Context<'a>) -> Vec<&'a str> {
    match &ctx.facts.nvidia.gpus {
        Ok(Some(gpus)) => gpus.iter().map(|gpu| gpu.address.as_str()).collect(),
        _ => Vec::new(),
    }
}

/// Where [`pod_gpus`] comes from, for evidence.
pub(crate) const GPUS_SOURCE: &str = GPUS_DIR;

/// The value of the workload variable `name` in the pod, when set.
pub(crate) fn variable<'a>(ctx: &Context<'a>, name: &str) -> Option<&'a str> {
    ctx.facts.pod.variable(name)
}

/// Where the pod's variables come from, for evidence.
pub(crate) const ENVIRON: &str = zerohop_host::facts::pod::ENVIRON;
