//! io_uring set up for real, from this process.

use zerohop_core::Remediation;
use zerohop_host::probe::ProbeState;

use crate::context::{Context, Outcome};
use crate::declare_check;

const DISABLED: &str = "/proc/sys/kernel/io_uring_disabled";

declare_check! {
    /// io_uring can be set up from this process.
    ///
    /// ## What it checks
    /// Only with `--probe PATH` on the live host: calls `io_uring_setup(2)`
    /// (an 8-entry ring, closed at once) and explains a refusal. `ENOSYS`:
    /// the kernel lacks io_uring, or a seccomp filter answers ENOSYS.
    /// `EPERM`: `kernel.io_uring_disabled` (2, or 1 without membership of
    /// `kernel.io_uring_group`), else the seccomp filter of this process
    /// (`Seccomp: 2` in `/proc/self/status`), which is what container
    /// runtimes' default profiles do. Run it inside the workload's
    /// container to test what the workload gets.
    ///
    /// ## Why it matters
    /// URING001 reads the sysctl; only a real setup shows what a process
    /// in this context gets. Docker and containerd's default seccomp
    /// profiles block `io_uring_*` since 2023 (moby/moby#46762,
    /// containerd/containerd#9048), so readers inside pods fall back to
    /// thread pools even when the host allows io_uring.
    ///
    /// ## How to fix
    /// Sysctl: `sysctl -w kernel.io_uring_disabled=0`. Seccomp: give the
    /// pod a profile that allows `io_uring_setup`, `io_uring_enter` and
    /// `io_uring_register` (`securityContext.seccompProfile` of type
    /// `Localhost`), or `--security-opt seccomp=<profile.json>` with Docker.
    /// ENOSYS from the kernel: a kernel built with `CONFIG_IO_URING=y`.
    ///
    /// ## Evidence
    /// A live `io_uring_setup` and `Seccomp:` of `/proc/self/status`
    /// (`--probe`); on another root it does not run.
    ///
    /// ## Source
    /// linux v6.12 `io_uring/io_uring.c` (`io_uring_setup`: `EPERM` when
    /// disabled, `ENOSYS` without io_uring), `fs/proc/array.c`
    /// (`task_seccomp`).
    /// Real capture: crates/zerohop-doctor/tests/live_probes.rs::this_machine_is_judged_by_what_its_kernel_answered
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/URING002/not-applicable-not-probed/`:
    ///
    /// ```text
    /// io-uring
    ///   not-applicable URING002  io-uring-setup-refused  not probed: give --probe PATH to set up io_uring in this process
    /// ```
    pub static IO_URING_PROBE = {
        id: "URING002",
        name: "io-uring-setup-refused",
        group: IoUring,
        severity: Error,
        requires: [],
        run: io_uring_probe,
    };
}

fn io_uring_probe(ctx: &Context<'_>) -> Vec<Outcome> {
    let probes = match &ctx.facts.probes {
        ProbeState::NotRequested => {
            return vec![Outcome::not_applicable(
                "not probed: give --probe PATH to set up io_uring in this process",
            )];
        }
        ProbeState::NotLive => {
            return vec![Outcome::not_applicable(
                "probes run only on the live host, not on a captured root",
            )];
        }
        ProbeState::Done(probes) => probes,
    };
    let seccomp = probes
        .seccomp
        .map_or_else(|| "<unknown>".to_owned(), |mode| mode.to_string());
    let sysctl = match &ctx.facts.kernel.io_uring.disabled {
        Ok(Some(value)) => Some(*value),
        _ => None,
    };
    let sysctl_shown = sysctl.map_or_else(|| "<missing>".to_owned(), |v| v.to_string());
    let seccomp_fix = || {
        Remediation::new("allow the io_uring system calls in the container's seccomp profile")
            .command("# Kubernetes: securityContext.seccompProfile: {type: Localhost, localhostProfile: <profile allowing io_uring_setup, io_uring_enter, io_uring_register>}")
            .command("# Docker: --security-opt seccomp=<profile.json>")
    };
    let sysctl_fix = || {
        Remediation::new("allow io_uring")
            .command("sysctl -w kernel.io_uring_disabled=0")
            .command("echo kernel.io_uring_disabled=0 > /etc/sysctl.d/90-io-uring.conf")
    };
    let outcome = match &probes.io_uring {
        Ok(()) => Outcome::pass("io_uring_setup succeeded in this process"),
        Err(error) => match error.name.as_str() {
            "EPERM" => match sysctl {
                Some(2) => Outcome::fail("io_uring_setup refused (EPERM): kernel.io_uring_disabled=2 disables io_uring for every process").fix(sysctl_fix()),
                Some(1) => Outcome::fail("io_uring_setup refused (EPERM): kernel.io_uring_disabled=1 and this process is not in kernel.io_uring_group").fix(sysctl_fix()),
                _ if probes.seccomp == Some(2) => Outcome::fail("io_uring_setup refused (EPERM) by this process's seccomp filter: the container runtime's default profile blocks io_uring").fix(seccomp_fix()),
                _ => Outcome::fail("io_uring_setup refused (EPERM): not the sysctl, no seccomp filter seen; check the lsm (selinux io_uring class) policy")
                    .fix(Remediation::new("find the denial in the audit log").command("ausearch -m avc -ts recent | grep io_uring")),
            },
            "ENOSYS" if probes.seccomp == Some(2) => Outcome::fail("io_uring_setup returned ENOSYS under a seccomp filter: the container's profile blocks io_uring").fix(seccomp_fix()),
            "ENOSYS" => Outcome::fail("io_uring_setup returned ENOSYS: kernel built without io_uring (CONFIG_IO_URING)")
                .fix(Remediation::new("boot a kernel with io_uring").command("grep CONFIG_IO_URING /boot/config-$(uname -r)")),
            other => Outcome::fail(format!("io_uring_setup failed: {other}"))
                .fix(Remediation::new("raise the locked-memory limit if ENOMEM").command("ulimit -l unlimited")),
        },
    };
    vec![
        outcome
            .evidence(
                "io_uring_setup(8)",
                probes
                    .io_uring
                    .as_ref()
                    .map_or_else(|e| e.name.clone(), |()| "ok".to_owned()),
            )
            .evidence("/proc/self/status: Seccomp", seccomp)
            .evidence(DISABLED, sysctl_shown),
    ]
}
