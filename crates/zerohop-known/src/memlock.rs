//! Locked memory: `RLIMIT_MEMLOCK` and the capability that lifts it.
//!
//! `mlock`, RDMA memory registration (`ibv_reg_mr`) and io_uring fixed
//! buffers charge pinned pages to `RLIMIT_MEMLOCK`, unless the process has
//! `CAP_IPC_LOCK`: `man 2 mlock` ("Limits and permissions"), `man 7
//! capabilities` (`CAP_IPC_LOCK`), and the kernel's `can_do_mlock()` in
//! `mm/mlock.c`, which `ib_umem_get()` (`drivers/infiniband/core/umem.c`)
//! and io_uring's `io_account_mem()` both consult. The bench engine and the
//! doctor's MEM004 judge the limit by [`Memlock::budget`].

use serde::Serialize;

/// The bit of `CAP_IPC_LOCK` in the capability sets of `/proc/<pid>/status`
/// (`include/uapi/linux/capability.h`).
pub const CAP_IPC_LOCK: u32 = 14;

/// The locked-memory limits of a process and whether they bind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Memlock {
    /// Soft limit in bytes; `None` is unlimited.
    pub soft_bytes: Option<u64>,
    /// Hard limit in bytes; `None` is unlimited.
    pub hard_bytes: Option<u64>,
    /// Whether the process has `CAP_IPC_LOCK` in its effective set, which
    /// lifts the limit.
    pub cap_ipc_lock: bool,
}

impl Memlock {
    /// The bytes the process may lock; `None` when there is no limit (the
    /// soft limit is unlimited, or `CAP_IPC_LOCK` lifts it).
    pub fn budget(self) -> Option<u64> {
        if self.cap_ipc_lock {
            None
        } else {
            self.soft_bytes
        }
    }
}

/// The soft and hard limits of the `Max locked memory` line of
/// `/proc/<pid>/limits` (`None` is `unlimited`).
///
/// # Errors
/// Why the text holds no such line, or a limit that is not a number.
pub fn parse_limits(limits: &str) -> Result<(Option<u64>, Option<u64>), String> {
    const LINE: &str = "Max locked memory";
    let line = limits
        .lines()
        .find_map(|line| line.strip_prefix(LINE))
        .ok_or_else(|| format!("no `{LINE}` line"))?;
    let mut fields = line.split_whitespace();
    let mut limit = |which: &str| match fields.next() {
        Some("unlimited") => Ok(None),
        Some(number) => number
            .parse()
            .map(Some)
            .map_err(|_| format!("{which} limit `{number}` is not a number")),
        None => Err(format!("no {which} limit")),
    };
    Ok((limit("soft")?, limit("hard")?))
}

/// Whether the `CapEff:` line of `/proc/<pid>/status` holds `CAP_IPC_LOCK`;
/// false when there is no such line or it is not hexadecimal.
pub fn has_cap_ipc_lock(status: &str) -> bool {
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
Max open files            1024                 524288               files     \n\
Max locked memory         8388608              unlimited            bytes     \n";

    #[test]
    fn limits_and_the_capability_are_read() {
        assert_eq!(parse_limits(LIMITS), Ok((Some(8 << 20), None)));
        assert!(parse_limits("Max open files 1 2 files").is_err());
        assert!(
            parse_limits("Max locked memory  lots  unlimited bytes")
                .unwrap_err()
                .contains("`lots`")
        );
        assert!(has_cap_ipc_lock(
            "Name:\tzerohop\nCapEff:\t0000000000004000\n"
        ));
        assert!(!has_cap_ipc_lock("CapEff:\t0000000000000000\n"));
        assert!(!has_cap_ipc_lock("CapPrm:\t0000000000004000\n"));
    }

    #[test]
    fn the_capability_lifts_the_limit() {
        let limited = Memlock {
            soft_bytes: Some(64 << 10),
            hard_bytes: Some(64 << 10),
            cap_ipc_lock: false,
        };
        assert_eq!(limited.budget(), Some(64 << 10));
        let privileged = Memlock {
            cap_ipc_lock: true,
            ..limited
        };
        assert_eq!(privileged.budget(), None);
    }
}
