//! The pod's limits: locked memory, `/dev/shm` against its GPUs, and
//! hugepages when asked for.

use zerohop_core::Remediation;
use zerohop_host::facts::Memlock;
use zerohop_host::parse::mountinfo::MountEntry;
use zerohop_known::nccl;

use crate::checks::bytes;
use crate::checks::memory::MEMLOCK_MIN;
use crate::checks::pod::{GPUS_SOURCE, pod_gpus};
use crate::context::{Context, Outcome};
use crate::declare_check;

/// Where the pod's limits and mounts are read.
const LIMITS: &str = "/proc/self/limits";
const SHM: &str = "/dev/shm";

declare_check! {
    /// The pod may lock memory, its `/dev/shm` fits its GPUs, its hugepages are mounted.
    ///
    /// ## What it checks
    /// Three limits of the process in the pod. **memlock**: `Max locked
    /// memory` of `/proc/self/limits` is unlimited or at least 16 GiB, or
    /// `CAP_IPC_LOCK` is in `CapEff` of `/proc/self/status`; else it fails.
    /// **/dev/shm**: the size of the tmpfs holding `/dev/shm` (its `size=`
    /// in `/proc/self/mountinfo`; without one, tmpfs's default of half the
    /// memory) against the GPUs of `/proc/driver/nvidia/gpus`: with two or
    /// more, less than one channel of NCCL's shared-memory transport needs
    /// (a send and a receive connection per GPU, each 9 633 792 bytes of
    /// LL, LL128 and Simple buffers at NCCL's defaults) fails, less than
    /// the 1 GiB NCCL's troubleshooting guide asks of containers warns.
    /// **hugepages**: when the profile expects hugepages, a `hugetlbfs`
    /// mount must be in the pod.
    ///
    /// ## Why it matters
    /// NCCL registers its buffers with the NIC (`ibv_reg_mr`), which pins
    /// pages against the memlock limit: at a container's default 64 KiB or
    /// 8 MiB it fails with `Call to ibv_reg_mr failed`. NCCL puts its
    /// shared-memory transport and proxy state in `/dev/shm/nccl-*`: at
    /// Docker's and Kubernetes' 64 MiB default an 8-GPU pod fails with
    /// `failed to extend /dev/shm/nccl-… to 9637892 bytes`. A hugepage
    /// request without its mount leaves the workload on 4 KiB pages.
    ///
    /// ## How to fix
    /// Add `IPC_LOCK` to the container's `securityContext.capabilities.add`
    /// (or run it with an unlimited memlock); mount an `emptyDir` with
    /// `medium: Memory` at `/dev/shm` (its `sizeLimit` at least 1 GiB);
    /// request `hugepages-1Gi` in the container's resources and mount an
    /// `emptyDir` of `medium: HugePages`.
    ///
    /// ## Evidence
    /// `/proc/self/limits`, `CapEff` of `/proc/self/status`,
    /// `/proc/self/mountinfo` (the mount holding `/dev/shm`, `hugetlbfs`
    /// mounts), `MemTotal` of `/proc/meminfo` for a tmpfs without `size=`,
    /// and the GPUs of `/proc/driver/nvidia/gpus`. Without a limits file
    /// the memlock is `unknown`.
    ///
    /// ## Source
    /// Linux v6.12 `drivers/infiniband/core/umem.c` (`ib_umem_get` pins
    /// against `RLIMIT_MEMLOCK` unless `CAP_IPC_LOCK`), `fs/proc/base.c`
    /// (`proc_pid_limits`) and `mm/shmem.c` (`shmem_show_options` prints
    /// `size=…k` only when it differs from `shmem_default_max_blocks`, half
    /// the memory); NVIDIA/nccl `src/init.cc`, `src/include/device.h` and
    /// `docs/userguide/source/troubleshooting/runtime_and_mpi_issues.rst`
    /// at 5067397c2676d5aed50042fc39e5c8ee96eb0027 (the buffer sizes,
    /// `--shm-size=1g --ulimit memlock=-1`).
    ///
    /// Real capture: crates/zerohop-doctor/tests/pod_view.rs::containerd_sandbox_shm_is_too_small_for_eight_gpus
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/POD003/fail-default-shm-eight-gpus/`:
    ///
    /// ```text
    /// pod
    ///   pass           POD003  pod-limits  memlock: unlimited
    ///   fail           POD003  pod-limits  /dev/shm: 64 MiB: one channel of nccl's shared-memory transport for 8 gpus needs 147 MiB
    ///                  /proc/self/mountinfo = 1899 1892 0:104 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k,inode64
    ///                  /proc/driver/nvidia/gpus = 8 gpu(s)
    ///   not-applicable POD003  pod-limits  hugepages: no hugepages asked for and none mounted
    ///
    /// what to fix first
    ///   1. POD003 pod-limits (/dev/shm): 64 MiB: one channel of nccl's shared-memory transport for 8 gpus needs 147 MiB
    ///      fix: mount a memory emptyDir of at least 1 GiB at /dev/shm
    ///        # pod spec: volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]
    ///        # containers[].volumeMounts: [{name: dshm, mountPath: /dev/shm}]
    /// ```
    pub static LIMITS_CHECK = {
        id: "POD003",
        name: "pod-limits",
        group: Pod,
        severity: Error,
        requires: [],
        run: limits,
    };
}

fn limits(ctx: &Context<'_>) -> Vec<Outcome> {
    vec![memlock(ctx), shm(ctx), hugepages(ctx)]
}

fn memlock(ctx: &Context<'_>) -> Outcome {
    let subject = "memlock";
    let limit: &Memlock = match &ctx.facts.pod.memlock {
        Err(gap) => return Outcome::gap(gap).subject(subject),
        Ok(None) => {
            return Outcome::unknown(format!("{LIMITS} is absent"))
                .subject(subject)
                .evidence(LIMITS, "<missing>");
        }
        Ok(Some(limit)) => limit,
    };
    let soft = limit
        .soft_bytes
        .map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
    match limit.budget() {
        None if limit.cap_ipc_lock => Outcome::pass("CAP_IPC_LOCK lifts the memlock limit")
            .evidence("/proc/self/status", "CapEff has CAP_IPC_LOCK"),
        None => Outcome::pass("unlimited").evidence(LIMITS, soft),
        Some(n) if n >= MEMLOCK_MIN => Outcome::pass(bytes(n)).evidence(LIMITS, soft),
        Some(n) => Outcome::fail(format!(
            "limit {} and no CAP_IPC_LOCK: nccl's ibv_reg_mr of its buffers fails",
            bytes(n)
        ))
        .evidence(LIMITS, soft)
        .evidence("/proc/self/status", "CapEff lacks CAP_IPC_LOCK")
        .fix(
            Remediation::new("grant the container IPC_LOCK (or an unlimited memlock limit)")
                .command(
                    "# pod spec: containers[].securityContext.capabilities.add: [\"IPC_LOCK\"]",
                ),
        ),
    }
    .subject(subject)
}

/// The bytes of a tmpfs `size=` as mountinfo shows it (`65536k`); `None`
/// for anything else. `0` is no limit.
fn tmpfs_size(text: &str) -> Option<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let shift = match unit {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

fn shm(ctx: &Context<'_>) -> Outcome {
    let gpus = pod_gpus(ctx).len();
    let Some(mount) = ctx.facts.mounts.mount_of(SHM) else {
        return match &ctx.facts.mounts.table {
            Err(gap) => Outcome::gap(gap),
            _ => Outcome::unknown("the mount table is absent: /dev/shm's size unknown"),
        }
        .subject(SHM);
    };
    let source = "/proc/self/mountinfo";
    let size = match mount.options.get("size").map(tmpfs_size) {
        Some(Some(0)) => None,
        Some(Some(size)) => Some(size),
        Some(None) => {
            return Outcome::unknown(format!("size of {} not understood", mount.mount_point))
                .subject(SHM)
                .evidence(source, mount.line.clone());
        }
        // tmpfs's default: half the memory.
        None if mount.fstype == "tmpfs" => ctx.facts.memory.total_kib().map(|kib| kib * 1024 / 2),
        None => None,
    };
    let on = if mount.mount_point == SHM {
        String::new()
    } else {
        format!(" (the {} mount)", mount.mount_point)
    };
    let Some(size) = size else {
        return Outcome::pass(format!("{}{on} without a size limit", mount.fstype))
            .subject(SHM)
            .evidence(source, mount.line.clone());
    };
    let need = gpus as u64 * 2 * nccl::SHM_CONNECTION_BYTES;
    let with_evidence = |outcome: Outcome| {
        outcome
            .subject(SHM)
            .evidence(source, mount.line.clone())
            .evidence(GPUS_SOURCE, format!("{gpus} gpu(s)"))
    };
    let fix = || {
        Remediation::new("mount a memory emptyDir of at least 1 GiB at /dev/shm")
            .command(
                "# pod spec: volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]",
            )
            .command("# containers[].volumeMounts: [{name: dshm, mountPath: /dev/shm}]")
    };
    if gpus < 2 {
        return with_evidence(Outcome::pass(format!(
            "{}{on}: no shared-memory transport between gpus with {gpus} gpu(s)",
            bytes(size)
        )));
    }
    if size < need {
        return with_evidence(
            Outcome::fail(format!(
                "{}{on}: one channel of nccl's shared-memory transport for {gpus} gpus needs {}",
                bytes(size),
                bytes(need)
            ))
            .fix(fix()),
        );
    }
    if size < nccl::SHM_RECOMMENDED_BYTES {
        return with_evidence(
            Outcome::warn(format!(
                "{}{on}: below the 1 GiB nccl asks of containers",
                bytes(size)
            ))
            .fix(fix()),
        );
    }
    with_evidence(Outcome::pass(format!(
        "{}{on} for {gpus} gpus",
        bytes(size)
    )))
}

fn hugepages(ctx: &Context<'_>) -> Outcome {
    let subject = "hugepages";
    let wanted =
        ctx.profile.hugepages.is_some() || ctx.profile.hugepages_1g_per_node.is_some_and(|n| n > 0);
    let mounts: Vec<&MountEntry> = ctx
        .facts
        .mounts
        .entries()
        .iter()
        .filter(|m| m.fstype == "hugetlbfs")
        .collect();
    if let Some(mount) = mounts.first() {
        let size = mount.options.get("pagesize").unwrap_or("default");
        return Outcome::pass(format!(
            "hugetlbfs mounted at {} (pagesize {size})",
            mount.mount_point
        ))
        .subject(subject)
        .evidence("/proc/self/mountinfo", mount.line.clone());
    }
    if !wanted {
        return Outcome::not_applicable("no hugepages asked for and none mounted").subject(subject);
    }
    if let Err(gap) = &ctx.facts.mounts.table {
        return Outcome::gap(gap).subject(subject);
    }
    Outcome::fail("hugepages expected, but no hugetlbfs is mounted in the pod")
        .subject(subject)
        .evidence("/proc/self/mountinfo", "<no hugetlbfs>")
        .fix(
            Remediation::new("request hugepages and mount them in the pod")
                .command("# containers[].resources.limits: {hugepages-1Gi: 8Gi, memory: …}")
                .command("# volumes: [{name: hugepages, emptyDir: {medium: HugePages}}], mounted at /dev/hugepages"),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmpfs_sizes_as_mountinfo_prints_them() {
        assert_eq!(tmpfs_size("65536k"), Some(64 << 20));
        assert_eq!(tmpfs_size("1g"), Some(1 << 30));
        assert_eq!(tmpfs_size("0"), Some(0));
        assert_eq!(tmpfs_size("50%"), None);
        assert_eq!(tmpfs_size("99999999999999999999k"), None);
    }
}
