//! io_uring for the data-path workloads.

use zerohop_core::Remediation;
use zerohop_host::facts::kernel::{OSRELEASE, PROC_VERSION};

use crate::context::{Context, Outcome};

use crate::declare_check;

/// The release that added `kernel.io_uring_disabled` (commit 76d3ccecfa18,
/// "io_uring: add a sysctl to disable io_uring system-wide").
const SYSCTL_SINCE: (u32, u32) = (6, 6);
/// The release that added io_uring (commit 2b188cc1bb85, "Add io_uring IO
/// interface", v5.1-rc1).
const IO_URING_SINCE: (u32, u32) = (5, 1);

declare_check! {
    /// io_uring is allowed for the workloads.
    ///
    /// ## What it checks
    /// `/proc/sys/kernel/io_uring_disabled` (Linux 6.6 and later, when
    /// io_uring is built in): 0 allows everyone; 1 allows only members of
    /// `/proc/sys/kernel/io_uring_group` (and root); 2 refuses everyone.
    /// When the file is absent, the kernel release decides
    /// (`/proc/sys/kernel/osrelease`, else the banner in `/proc/version`):
    /// older than 5.1 has no io_uring at all (`info`); older than 6.6 has no
    /// such switch, so io_uring is allowed when built in (`info`); 6.6 or later, or an unknown release, is `unknown`,
    /// since the file was not captured or the kernel lacks io_uring, and
    /// the absence of a file does not say which.
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
    ///
    /// ## Evidence
    /// `/proc/sys/kernel/io_uring_disabled` and `io_uring_group`; absent, the
    /// release (`/proc/sys/kernel/osrelease`, else `/proc/version`) tells an
    /// old kernel from a file that was not captured, else `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `io_uring/io_uring.c` (`io_uring_allowed`, the
    /// `io_uring_disabled` sysctl of commit 76d3ccecfa18, v6.6); io_uring itself
    /// from commit 2b188cc1bb85, v5.1.
    /// Real capture: crates/zerohop-doctor/tests/corpus_gaps.rs::linux_4_14_predates_io_uring
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::absent_io_uring_sysctl_is_judged_by_the_release
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/URING001/fail-disabled/`:
    ///
    /// ```text
    /// io-uring
    ///   fail           URING001  io-uring-disabled  io_uring disabled for every process
    ///                  /proc/sys/kernel/io_uring_disabled = 2
    ///
    /// what to fix first
    ///   1. URING001 io-uring-disabled: io_uring disabled for every process
    ///      fix: allow io_uring
    ///        sysctl -w kernel.io_uring_disabled=0
    ///        echo kernel.io_uring_disabled=0 > /etc/sysctl.d/90-io-uring.conf
    /// ```
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
        Ok(None) => without_sysctl(ctx).evidence(DISABLED, "<missing>"),
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

/// The outcome when `io_uring_disabled` is absent: the kernel release tells
/// an old kernel (no such switch) from a file that was only not captured.
fn without_sysctl(ctx: &Context<'_>) -> Outcome {
    let (major, minor) = SYSCTL_SINCE;
    match &ctx.facts.kernel.release {
        Ok(Some(release)) => match release.older_than(major, minor) {
            Some(true) if release.older_than(IO_URING_SINCE.0, IO_URING_SINCE.1) == Some(true) => {
                Outcome::info(format!(
                    "linux {} predates io_uring ({}.{}): storage readers fall back to thread pools of pread",
                    release.text, IO_URING_SINCE.0, IO_URING_SINCE.1
                ))
            }
            Some(true) => Outcome::info(format!(
                "linux {} predates io_uring_disabled ({major}.{minor}): io_uring allowed when built in",
                release.text
            )),
            Some(false) => Outcome::unknown(format!(
                "linux {} has io_uring_disabled when built with io_uring, but the file is absent: not captured, or the kernel lacks io_uring",
                release.text
            )),
            None => Outcome::unknown(format!(
                "io_uring_disabled is absent and release `{}` has no version number to tell whether the kernel predates it ({major}.{minor})",
                release.text
            )),
        }
        .evidence(release.source, release.text.clone()),
        Ok(None) => Outcome::unknown(format!(
            "io_uring_disabled and the kernel release are absent: cannot tell an old kernel ({major}.{minor} added the switch) from a file that was not captured"
        ))
        .evidence(OSRELEASE, "<missing>")
        .evidence(PROC_VERSION, "<missing>"),
        Err(gap) => Outcome::gap(gap),
    }
}
