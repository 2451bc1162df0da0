//! io_uring for the data-path workloads.

use zerohop_core::Remediation;

use crate::context::{Context, Outcome};
use crate::declare_check;

declare_check! {
    /// io_uring is allowed for the workloads.
    ///
    /// ## What it checks
    /// `/proc/sys/kernel/io_uring_disabled` (Linux 6.6 and later): 0 allows
    /// everyone; 1 allows only members of `/proc/sys/kernel/io_uring_group`
    /// (and root); 2 refuses everyone. Absent on older kernels, where
    /// io_uring is allowed when built in.
    ///
    /// ## Why it matters
    /// Fast storage readers (zerohop bench, fio, KvikIO, cuFile's io_uring
    /// mode) submit asynchronous I/O through io_uring. Refused, they fall
    /// back to thread pools of `pread`, which costs CPU and throughput. Some
    /// distributions ship with `io_uring_disabled=2`.
    ///
    /// ## How to fix
    /// `sysctl -w kernel.io_uring_disabled=0` (persist it in
    /// `/etc/sysctl.d/`), or set it to 1 and put the workloads' group in
    /// `kernel.io_uring_group`. In containers, the runtime's default seccomp
    /// profile also blocks io_uring: allow `io_uring_setup`,
    /// `io_uring_enter` and `io_uring_register`.
    pub static IO_URING_DISABLED = {
        id: "URING001",
        name: "io-uring-disabled",
        group: IoUring,
        severity: Error,
        requires: [],
        run: io_uring_disabled,
    };
}

fn io_uring_disabled(ctx: &Context<'_>) -> Vec<Outcome> {
    const DISABLED: &str = "/proc/sys/kernel/io_uring_disabled";
    const GROUP: &str = "/proc/sys/kernel/io_uring_group";
    let io_uring = &ctx.facts.kernel.io_uring;
    let fix = || {
        Remediation::new("allow io_uring")
            .command("sysctl -w kernel.io_uring_disabled=0")
            .command("echo kernel.io_uring_disabled=0 > /etc/sysctl.d/90-io-uring.conf")
    };
    let outcome = match &io_uring.disabled {
        Err(gap) => Outcome::gap(gap),
        Ok(None) => Outcome::info(
            "kernel predates io_uring_disabled (linux 6.6): io_uring allowed when built in",
        )
        .evidence(DISABLED, "<missing>"),
        Ok(Some(0)) => Outcome::pass("io_uring allowed").evidence(DISABLED, "0"),
        Ok(Some(1)) => match &io_uring.group {
            Ok(Some(group)) if *group >= 0 => {
                Outcome::pass(format!("io_uring allowed for group {group} and root"))
                    .evidence(DISABLED, "1")
                    .evidence(GROUP, group.to_string())
            }
            _ => Outcome::fail("io_uring allowed for root only: workloads fall back to slower i/o")
                .evidence(DISABLED, "1")
                .fix(fix()),
        },
        Ok(Some(value)) => Outcome::fail("io_uring disabled for every process")
            .evidence(DISABLED, value.to_string())
            .fix(fix()),
    };
    vec![outcome]
}
