//! Whether io_uring works here, and whether the locked-memory limit lets
//! it register the buffers.

use std::io;

use io_uring::{IoUring, opcode};

use crate::env::{Memlock, UringEnvironment};

/// Creates a small ring to see whether io_uring works here, recording the
/// kernel's features and the opcodes we need.
pub fn probe(env: &mut UringEnvironment) -> Result<(), String> {
    let ring = match IoUring::new(4) {
        Ok(ring) => ring,
        Err(err) => {
            let reason = match (err.raw_os_error(), env.disabled_sysctl) {
                (Some(libc::EPERM), Some(d)) if d > 0 => {
                    format!("io_uring is disabled (kernel.io_uring_disabled = {d})")
                }
                (Some(libc::ENOSYS), _) => {
                    "io_uring is not in this kernel or blocked by seccomp (ENOSYS)".to_owned()
                }
                (Some(libc::EPERM), _) => {
                    "io_uring_setup was refused (EPERM; seccomp or a container profile)".to_owned()
                }
                _ => format!("io_uring_setup failed: {err}"),
            };
            env.status = format!("unavailable: {reason}");
            return Err(reason);
        }
    };
    let p = ring.params();
    let features = [
        (p.is_feature_single_mmap(), "single_mmap"),
        (p.is_feature_nodrop(), "nodrop"),
        (p.is_feature_submit_stable(), "submit_stable"),
        (p.is_feature_rw_cur_pos(), "rw_cur_pos"),
        (p.is_feature_cur_personality(), "cur_personality"),
        (p.is_feature_fast_poll(), "fast_poll"),
        (p.is_feature_poll_32bits(), "poll_32bits"),
        (p.is_feature_sqpoll_nonfixed(), "sqpoll_nonfixed"),
        (p.is_feature_ext_arg(), "ext_arg"),
        (p.is_feature_native_workers(), "native_workers"),
        (p.is_feature_resource_tagging(), "rsrc_tags"),
        (p.is_feature_skip_cqe_on_success(), "cqe_skip"),
        (p.is_feature_linked_file(), "linked_file"),
        (p.is_feature_recvsend_bundle(), "recvsend_bundle"),
        (p.is_feature_min_timeout(), "min_timeout"),
        (p.is_feature_no_iowait(), "no_iowait"),
    ];
    env.features = features
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
    let mut probe = io_uring::Probe::new();
    let probed = ring.submitter().register_probe(&mut probe).is_ok();
    env.opcodes = vec![
        ("read", probed && probe.is_supported(opcode::Read::CODE)),
        (
            "read_fixed",
            probed && probe.is_supported(opcode::ReadFixed::CODE),
        ),
    ];
    if probed && !probe.is_supported(opcode::Read::CODE) {
        let reason = "the kernel's io_uring has no non-vectored READ (needs Linux 5.6)".to_owned();
        env.status = format!("unavailable: {reason}");
        return Err(reason);
    }
    env.status = "available".to_owned();
    Ok(())
}

/// Whether `needed` bytes of fixed buffers fit in the locked-memory limit.
pub fn fixed_buffer_budget(needed: u64, memlock: Memlock) -> Result<(), String> {
    match memlock.budget() {
        Some(limit) if needed > limit => Err(format!(
            "{needed} bytes of buffers exceed RLIMIT_MEMLOCK of {limit} bytes; reading into unregistered buffers (raise `ulimit -l` or grant CAP_IPC_LOCK)"
        )),
        _ => Ok(()),
    }
}

/// What the result of the IOPOLL test read means: `Err(reason)` when polled
/// reads do not work on this device.
pub fn iopoll_probe_verdict(result: i32) -> Result<(), String> {
    match -result {
        libc::EOPNOTSUPP => Err("polled reads return EOPNOTSUPP: the device has no poll queues (NVMe with nvme.poll_queues > 0 is needed)".into()),
        errno if result < 0 => Err(format!("polled test read failed: {}", io::Error::from_raw_os_error(errno))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iopoll_without_poll_queues_is_explained() {
        let reason = iopoll_probe_verdict(-libc::EOPNOTSUPP).unwrap_err();
        assert!(reason.contains("no poll queues"), "{reason}");
        assert!(iopoll_probe_verdict(4096).is_ok());
        assert!(
            iopoll_probe_verdict(-libc::EIO)
                .unwrap_err()
                .contains("failed")
        );
    }

    #[test]
    fn a_small_memlock_limit_refuses_fixed_buffers_unless_privileged() {
        let small = Memlock {
            soft_bytes: Some(64 << 10),
            hard_bytes: Some(64 << 10),
            cap_ipc_lock: false,
        };
        let reason = fixed_buffer_budget(32 << 20, small).unwrap_err();
        assert!(reason.contains("RLIMIT_MEMLOCK"), "{reason}");
        assert!(fixed_buffer_budget(32 << 10, small).is_ok());
        assert!(
            fixed_buffer_budget(
                32 << 20,
                Memlock {
                    cap_ipc_lock: true,
                    ..small
                }
            )
            .is_ok()
        );
        assert!(
            fixed_buffer_budget(
                32 << 20,
                Memlock {
                    soft_bytes: None,
                    ..small
                }
            )
            .is_ok()
        );
    }
}
