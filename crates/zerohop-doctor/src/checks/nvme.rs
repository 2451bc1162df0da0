//! NVMe over Fabrics: native multipath, ANA paths, I/O policy, transport,
//! and device-mapper under GPUDirect Storage data paths.

use zerohop_core::Remediation;
use zerohop_host::Facts;
use zerohop_host::facts::nvme::PROC_DEVICES;
use zerohop_host::facts::{DmDevice, NvmeController, NvmePath, NvmeSubsystem};

use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{join, quote, write_to};

const MULTIPATH_PARAM: &str = "/sys/module/nvme_core/parameters/multipath";
const IOPOLICY_PARAM: &str = "/sys/module/nvme_core/parameters/iopolicy";

/// The subsystems, or the outcome that ends the check.
fn subsystems(facts: &Facts) -> Result<&[NvmeSubsystem], Box<Outcome>> {
    let list = require(&facts.nvme.subsystems, || {
        Outcome::not_applicable("no nvme subsystems (/sys/class/nvme-subsystem is absent)")
    })?;
    if list.is_empty() {
        return Err(Box::new(Outcome::not_applicable("no nvme subsystems")));
    }
    Ok(list)
}

/// Subsystems where multipath matters: fabric-attached, or reached through
/// more than one controller.
fn multipath_subsystems(list: &[NvmeSubsystem]) -> Vec<&NvmeSubsystem> {
    list.iter()
        .filter(|s| s.is_fabric() || s.controllers.len() > 1)
        .collect()
}

fn nvme_core_param<'a>(facts: &'a Facts, name: &str) -> Option<&'a str> {
    match &facts.modules {
        Ok(Some(modules)) => modules
            .get("nvme_core")?
            .parameters
            .get(name)
            .map(String::as_str),
        _ => None,
    }
}

fn transports(subsystem: &NvmeSubsystem) -> String {
    let mut names: Vec<&str> = subsystem
        .controllers
        .iter()
        .filter_map(|c| c.transport.as_deref())
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        "<unknown>".to_owned()
    } else {
        names.join(", ")
    }
}

declare_check! {
    /// NVMe native multipath is on where a subsystem has several paths.
    ///
    /// ## What it checks
    /// For subsystems on a fabric (`rdma`, `tcp`, `fc`) or with more than
    /// one controller: `/sys/module/nvme_core/parameters/multipath` must be
    /// `Y`. Without the parameter file, per-path devices (`nvme1c2n1`)
    /// under the controllers show native multipath is on.
    ///
    /// ## Why it matters
    /// With native multipath off, each controller exposes its own copy of
    /// every namespace (`nvme1n1`, `nvme2n1`): a path failure is an I/O
    /// error, ANA states are ignored, and GPUDirect Storage cannot use
    /// dm-multipath on top of them.
    ///
    /// ## How to fix
    /// Boot with `nvme_core.multipath=Y` (the default on most
    /// distributions; RHEL 8 and older default to N): add it to the kernel
    /// command line, or `echo 'options nvme_core multipath=Y' > /etc/modprobe.d/nvme.conf`
    /// and rebuild the initramfs, then reboot.
    ///
    /// ## Evidence
    /// `/sys/module/nvme_core/parameters/multipath` and the per-path devices
    /// (`nvme<S>c<C>n<N>`) under `/sys/class/nvme-subsystem`. Neither in a
    /// capture is `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `drivers/nvme/host/multipath.c` (the `multipath` parameter,
    /// `nvme_mpath_alloc_disk`, the hidden `c<C>` path devices).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::libnvme_pcie_tree_has_native_multipath_with_two_controllers
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::procfs_nvme_subsystems_with_fc_tcp_and_rdma
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NVME001/fail-multipath-off/`:
    ///
    /// ```text
    /// nvme
    ///   fail           NVME001  nvme-native-multipath-off  native multipath off while nvme-subsys0 (rdma) have several paths or a fabric
    ///                  /sys/module/nvme_core/parameters/multipath = N
    ///
    /// what to fix first
    ///   1. NVME001 nvme-native-multipath-off: native multipath off while nvme-subsys0 (rdma) have several paths or a fabric
    ///      fix: turn on nvme native multipath and reboot
    ///        echo 'options nvme_core multipath=Y' > /etc/modprobe.d/nvme-multipath.conf
    ///        dracut -f   # or update-initramfs -u, then reboot
    /// ```
    pub static NATIVE_MULTIPATH = {
        id: "NVME001",
        name: "nvme-native-multipath-off",
        group: Nvme,
        severity: Error,
        requires: [],
        run: native_multipath,
    };
}

fn native_multipath(ctx: &Context<'_>) -> Vec<Outcome> {
    let list = need!(subsystems(ctx.facts));
    let relevant = multipath_subsystems(list);
    if relevant.is_empty() {
        return vec![Outcome::not_applicable(
            "only single-controller pcie nvme: multipath not involved",
        )];
    }
    let path_device = list
        .iter()
        .flat_map(|s| &s.controllers)
        .flat_map(|c| &c.paths)
        .find(|p| p.name.contains('c'));
    let names = relevant
        .iter()
        .map(|s| format!("{} ({})", s.name, transports(s)))
        .collect::<Vec<_>>()
        .join(", ");
    let outcome = match (nvme_core_param(ctx.facts, "multipath"), path_device) {
        (Some("Y" | "y" | "1"), _) => Outcome::pass(format!("native multipath on for {names}")).evidence(MULTIPATH_PARAM, "Y"),
        (Some(value), _) => Outcome::fail(format!("native multipath off while {names} have several paths or a fabric"))
            .evidence(MULTIPATH_PARAM, value)
            .fix(Remediation::new("turn on nvme native multipath and reboot")
                .command("echo 'options nvme_core multipath=Y' > /etc/modprobe.d/nvme-multipath.conf")
                .command("dracut -f   # or update-initramfs -u, then reboot")),
        (None, Some(path)) => Outcome::pass(format!("native multipath on for {names} (path device {} exists)", path.name))
            .evidence(path.dir.clone(), "present")
            .evidence(MULTIPATH_PARAM, "<missing>"),
        (None, None) => Outcome::unknown(format!("cannot tell whether native multipath is on for {names}: no nvme_core parameter and no path devices"))
            .evidence(MULTIPATH_PARAM, "<missing>"),
    };
    vec![outcome]
}

declare_check! {
    /// Every NVMe namespace has an optimized path on a live controller.
    ///
    /// ## What it checks
    /// For every namespace of every subsystem, its paths
    /// (`/sys/class/nvme/nvme<C>/nvme<S>c<C>n<N>`) with their `ana_state`,
    /// and the `state` of each path's controller. It passes when at least
    /// one path is `optimized` on a `live` controller; a controller that
    /// does not report ANA (PCIe) counts as optimized when live. A
    /// namespace without path devices passes when its subsystem has a
    /// live controller.
    ///
    /// ## Why it matters
    /// I/O only goes to `optimized` paths while one exists. With none, it
    /// goes to `non-optimized` paths (through the array's inter-controller
    /// link, at a fraction of the bandwidth) or queues until a path comes
    /// back, and the job hangs.
    ///
    /// ## How to fix
    /// `nvme list-subsys` shows the paths. Reconnect lost controllers
    /// (`nvme connect-all`), check the fabric ports, and check the array's
    /// ANA group states (a failover in progress shows `change`).
    ///
    /// ## Evidence
    /// `ana_state` of each path of each namespace, with the controller's
    /// `state`.
    ///
    /// ## Source
    /// linux v6.12 `drivers/nvme/host/multipath.c` (`ana_state_show`,
    /// `nvme_path_is_optimized`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::procfs_nvme_subsystems_with_fc_tcp_and_rdma
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::libnvme_pcie_tree_has_native_multipath_with_two_controllers
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NVME002/fail-all-inaccessible/`:
    ///
    /// ```text
    /// nvme
    ///   fail           NVME002  nvme-no-optimized-path  nvme-subsys0/nvme0n1: no optimized path on a live controller: i/o queues or crosses to a non-optimized controller
    ///                  /sys/class/nvme-subsystem/nvme-subsys0/nvme0/state = live
    ///                  /sys/class/nvme-subsystem/nvme-subsys0/nvme1/state = live
    ///                  /sys/class/nvme/nvme0/nvme0c0n1/ana_state = inaccessible (controller nvme0 live)
    ///                  /sys/class/nvme/nvme1/nvme0c1n1/ana_state = inaccessible (controller nvme1 live)
    ///
    /// what to fix first
    ///   1. NVME002 nvme-no-optimized-path (nvme-subsys0/nvme0n1): no optimized path on a live controller: i/o queues or crosses to a non-optimized controller
    ///      fix: reconnect the lost paths and check the array's ana groups
    ///        nvme list-subsys
    ///        nvme connect-all
    /// ```
    pub static NO_OPTIMIZED_PATH = {
        id: "NVME002",
        name: "nvme-no-optimized-path",
        group: Nvme,
        severity: Error,
        requires: [],
        run: no_optimized_path,
    };
}

fn no_optimized_path(ctx: &Context<'_>) -> Vec<Outcome> {
    let list = need!(subsystems(ctx.facts));
    let mut outcomes = Vec::new();
    for subsystem in list {
        for namespace in subsystem.all_namespaces() {
            let paths: Vec<_> = subsystem.paths_to(&namespace).collect();
            let subject = format!("{}/{namespace}", subsystem.name);
            let outcome = if paths.is_empty() {
                match subsystem.controllers.iter().find(|c| c.is_live()) {
                    Some(controller) => Outcome::pass(format!(
                        "live controller {} (no per-path ana states exposed)",
                        controller.name
                    ))
                    .evidence(format!("{}/state", controller.dir), "live"),
                    None => no_path_fail(subsystem, "no live controller"),
                }
            } else {
                let judged = {
                    let good = paths.iter().find(|(c, p)| {
                        c.is_live() && p.ana_state.as_deref().is_none_or(|s| s == "optimized")
                    });
                    match good {
                        Some((controller, path)) => Outcome::pass(match &path.ana_state {
                            Some(state) => {
                                format!("{state} path {} on live {}", path.name, controller.name)
                            }
                            None => format!(
                                "live path {} via {} (no ana reporting)",
                                path.name, controller.name
                            ),
                        }),
                        None => no_path_fail(subsystem, "no optimized path on a live controller"),
                    }
                };
                with_path_evidence(judged, &paths)
            };
            outcomes.push(outcome.subject(subject));
        }
    }
    if outcomes.is_empty() {
        return vec![Outcome::not_applicable("no nvme namespaces")];
    }
    outcomes
}

fn no_path_fail(subsystem: &NvmeSubsystem, what: &str) -> Outcome {
    let mut outcome = Outcome::fail(format!(
        "{what}: i/o queues or crosses to a non-optimized controller"
    ))
    .fix(
        Remediation::new("reconnect the lost paths and check the array's ana groups")
            .command("nvme list-subsys")
            .command("nvme connect-all"),
    );
    for controller in &subsystem.controllers {
        outcome = outcome.evidence(
            format!("{}/state", controller.dir),
            controller
                .state
                .clone()
                .unwrap_or_else(|| "<unreadable>".to_owned()),
        );
    }
    outcome
}

/// Adds every path's ANA state and controller state as evidence.
fn with_path_evidence(mut outcome: Outcome, paths: &[(&NvmeController, &NvmePath)]) -> Outcome {
    for (controller, path) in paths {
        outcome = outcome.evidence(
            format!("{}/ana_state", path.dir),
            format!(
                "{} (controller {} {})",
                path.ana_state.as_deref().unwrap_or("<none>"),
                controller.name,
                controller.state.as_deref().unwrap_or("<unknown>")
            ),
        );
    }
    outcome
}

declare_check! {
    /// NVMe paths and controllers are all usable.
    ///
    /// ## What it checks
    /// Every path's `ana_state`: `inaccessible`, `persistent-loss` and
    /// `change` are reported; and every controller's `state` other than
    /// `live` (`connecting`, `resetting`, `dead`…), from
    /// `/sys/class/nvme-subsystem/*/nvme*/state`.
    ///
    /// ## Why it matters
    /// A namespace with one optimized path left still works, with no
    /// redundancy and a fraction of its bandwidth when the policy spreads
    /// I/O. `persistent-loss` means the array will not serve the namespace
    /// through that controller again; `connecting` that the host keeps
    /// retrying (`ctrl_loss_tmo`).
    ///
    /// ## How to fix
    /// Check the fabric port of the controller (`nvme list-subsys`,
    /// `rdma link`), reconnect (`nvme connect-all`), or remove a path the
    /// array retired (`nvme disconnect -d nvmeX`).
    ///
    /// ## Evidence
    /// `state` of each controller of `/sys/class/nvme-subsystem/*/nvme*`.
    ///
    /// ## Source
    /// linux v6.12 `drivers/nvme/host/core.c` (`nvme_sysfs_show_state`:
    /// `live`, `connecting`, `resetting`, `dead`…).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::procfs_nvme_subsystems_with_fc_tcp_and_rdma
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NVME003/warn-controller-connecting/`:
    ///
    /// ```text
    /// nvme
    ///   warn           NVME003  nvme-path-degraded  nvme-subsys0/nvme1: controller nvme1 is connecting
    ///                  /sys/class/nvme-subsystem/nvme-subsys0/nvme1/state = connecting
    ///                  /sys/class/nvme-subsystem/nvme-subsys0/nvme1/address = traddr=10.0.10.1,trsvcid=4420
    ///
    /// what to fix first
    ///   1. NVME003 nvme-path-degraded (nvme-subsys0/nvme1): controller nvme1 is connecting
    ///      fix: reconnect or retire the degraded paths
    ///        nvme list-subsys
    ///        nvme connect-all
    /// ```
    pub static PATH_DEGRADED = {
        id: "NVME003",
        name: "nvme-path-degraded",
        group: Nvme,
        severity: Warning,
        requires: [],
        run: path_degraded,
    };
}

fn path_degraded(ctx: &Context<'_>) -> Vec<Outcome> {
    let list = need!(subsystems(ctx.facts));
    let mut outcomes = Vec::new();
    for subsystem in list {
        let mut problems = Vec::new();
        for controller in &subsystem.controllers {
            match controller.state.as_deref() {
                Some("live") | None => {}
                Some(state) => problems.push(
                    Outcome::warn(format!("controller {} is {state}", controller.name))
                        .evidence(format!("{}/state", controller.dir), state)
                        .evidence(
                            format!("{}/address", controller.dir),
                            controller.address.clone().unwrap_or_default(),
                        )
                        .subject(format!("{}/{}", subsystem.name, controller.name)),
                ),
            }
            for path in &controller.paths {
                if let Some(state @ ("inaccessible" | "persistent-loss" | "change")) =
                    path.ana_state.as_deref()
                {
                    problems.push(
                        Outcome::warn(format!("path {} is {state}", path.name))
                            .evidence(format!("{}/ana_state", path.dir), state)
                            .evidence(
                                format!("{}/ana_grpid", path.dir),
                                path.ana_grpid.map(|g| g.to_string()).unwrap_or_default(),
                            )
                            .subject(format!("{}/{}", subsystem.name, path.name)),
                    );
                }
            }
        }
        if problems.is_empty() {
            let paths: usize = subsystem.controllers.iter().map(|c| c.paths.len()).sum();
            outcomes.push(
                Outcome::pass(format!(
                    "{} live, {} usable",
                    count(subsystem.controllers.len(), "controller"),
                    count(paths, "path")
                ))
                .subject(subsystem.name.clone()),
            );
        } else {
            outcomes.extend(problems.into_iter().map(|o| {
                o.fix(
                    Remediation::new("reconnect or retire the degraded paths")
                        .command("nvme list-subsys")
                        .command("nvme connect-all"),
                )
            }));
        }
    }
    outcomes
}

declare_check! {
    /// NVMe multipath subsystems use the intended I/O policy.
    ///
    /// ## What it checks
    /// Each multipath subsystem's `iopolicy`
    /// (`/sys/class/nvme-subsystem/nvme-subsys<N>/iopolicy`, else the
    /// global `/sys/module/nvme_core/parameters/iopolicy`) against the
    /// expected value (`--expect-iopolicy`). Without an expectation, `numa`
    /// on a fabric subsystem with several controllers is reported as `info`.
    /// Neither file present is `unknown`, and the message names both files
    /// and what `nvme_core`'s `multipath` parameter or the per-path devices
    /// (`nvme<S>c<C>n<N>`) show of native multipath.
    ///
    /// ## Why it matters
    /// `numa` sends all I/O from one NUMA node down one path; with several
    /// fabric paths of equal distance, `round-robin` or (Linux 6.11 and
    /// later) `queue-depth` use all of them, which is most of the bandwidth
    /// of an RDMA or TCP fabric.
    ///
    /// ## How to fix
    /// `echo round-robin > /sys/class/nvme-subsystem/nvme-subsys0/iopolicy`,
    /// and persist it with a udev rule:
    /// `ACTION=="add|change", SUBSYSTEM=="nvme-subsystem", ATTR{iopolicy}="round-robin"`,
    /// or for all subsystems `nvme_core.iopolicy=round-robin` on the
    /// kernel command line.
    ///
    /// ## Evidence
    /// `iopolicy` of each subsystem; a subsystem without the file on a kernel
    /// with native multipath names the missing file.
    ///
    /// ## Source
    /// linux v6.12 `drivers/nvme/host/multipath.c` (`nvme_subsys_iopolicy_show`:
    /// `numa`, `round-robin`, `queue-depth`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::procfs_nvme_subsystems_with_fc_tcp_and_rdma
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::missing_iopolicy_names_the_missing_file
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NVME004/warn-numa-expected-round-robin/`:
    ///
    /// ```text
    /// nvme
    ///   warn           NVME004  nvme-iopolicy  nvme-subsys0: iopolicy numa, expected round-robin
    ///                  /sys/class/nvme-subsystem/nvme-subsys0/iopolicy = numa
    ///
    /// what to fix first
    ///   1. NVME004 nvme-iopolicy (nvme-subsys0): iopolicy numa, expected round-robin
    ///      fix: set the round-robin i/o policy now and at every connect
    ///        echo round-robin > /sys/class/nvme-subsystem/nvme-subsys0/iopolicy
    ///        echo 'ACTION=="add|change", SUBSYSTEM=="nvme-subsystem", ATTR{iopolicy}="round-robin"' > /etc/udev/rules.d/71-nvme-iopolicy.rules
    /// ```
    pub static IOPOLICY = {
        id: "NVME004",
        name: "nvme-iopolicy",
        group: Nvme,
        severity: Warning,
        requires: [],
        run: iopolicy,
    };
}

fn iopolicy(ctx: &Context<'_>) -> Vec<Outcome> {
    let list = need!(subsystems(ctx.facts));
    let relevant = multipath_subsystems(list);
    if relevant.is_empty() {
        return vec![Outcome::not_applicable(
            "no fabric or multi-controller nvme subsystem",
        )];
    }
    let global = nvme_core_param(ctx.facts, "iopolicy");
    let expected = ctx.profile.nvme_iopolicy.as_deref();
    relevant
        .into_iter()
        .map(|subsystem| {
            let own = format!("{}/iopolicy", subsystem.dir());
            let (source, policy) = match (&subsystem.iopolicy, global) {
                (Some(policy), _) => (own.clone(), Some(policy.as_str())),
                (None, Some(policy)) => (IOPOLICY_PARAM.to_owned(), Some(policy)),
                (None, None) => (own.clone(), None),
            };
            let fix = |want: &str| {
                Remediation::new(format!("set the {want} i/o policy now and at every connect"))
                    .command(write_to(want, &format!("{}/iopolicy", subsystem.dir())))
                    .command(write_to(
                        &format!(r#"ACTION=="add|change", SUBSYSTEM=="nvme-subsystem", ATTR{{iopolicy}}="{want}""#),
                        "/etc/udev/rules.d/71-nvme-iopolicy.rules",
                    ))
            };
            let outcome = match (policy, expected) {
                (None, _) => no_iopolicy(ctx.facts, subsystem, &own),
                (Some(policy), Some(want)) if policy == want => Outcome::pass(format!("iopolicy {policy} as expected")),
                (Some(policy), Some(want)) => Outcome::warn(format!("iopolicy {policy}, expected {want}")).fix(fix(want)),
                (Some("numa"), None) if subsystem.is_fabric() && subsystem.controllers.len() > 1 => Outcome::info(format!(
                    "iopolicy numa over {} {} paths: round-robin or queue-depth use every path",
                    subsystem.controllers.len(),
                    transports(subsystem)
                ))
                .fix(fix("round-robin")),
                (Some(policy), None) => Outcome::pass(format!("iopolicy {policy}")),
            };
            let outcome = if policy.is_none() {
                outcome.evidence(own, "<missing>").evidence(IOPOLICY_PARAM, "<missing>")
            } else {
                outcome.evidence(source, policy.unwrap_or_default())
            };
            outcome.subject(subsystem.name.clone())
        })
        .collect()
}

/// Why a subsystem shows no I/O policy, by what was read: native multipath
/// off (the parameter says `N`), on (the parameter says `Y`, or per-path
/// devices exist) so the files were only not captured, or not known.
fn no_iopolicy(facts: &Facts, subsystem: &NvmeSubsystem, own: &str) -> Outcome {
    let path_device = subsystem
        .controllers
        .iter()
        .flat_map(|c| &c.paths)
        .find(|p| p.name.contains('c'));
    match (nvme_core_param(facts, "multipath"), path_device) {
        (Some("N" | "n" | "0"), _) => Outcome::unknown(format!(
            "no iopolicy: native multipath is off ({MULTIPATH_PARAM} = N), so the kernel keeps no policy (see NVME001)"
        ))
        .evidence(MULTIPATH_PARAM, "N"),
        (_, Some(path)) => Outcome::unknown(format!(
            "{own} and {IOPOLICY_PARAM} are absent although native multipath is on (path device {} exists): not captured",
            path.name
        ))
        .evidence(path.dir.clone(), "present"),
        (Some(value), None) => Outcome::unknown(format!(
            "{own} and {IOPOLICY_PARAM} are absent although {MULTIPATH_PARAM} is {value}: not captured"
        ))
        .evidence(MULTIPATH_PARAM, value),
        (None, None) => Outcome::unknown(format!(
            "{own} and {IOPOLICY_PARAM} are absent, and neither {MULTIPATH_PARAM} nor a path device shows whether native multipath is on"
        )),
    }
}

declare_check! {
    /// NVMe-oF controllers use the intended transport, with its module.
    ///
    /// ## What it checks
    /// The `transport` of every fabric controller (anything but `pcie`)
    /// against the expected one (`--expect-nvme-transport rdma`), and the
    /// transport module (`nvme_rdma`, `nvme_tcp`, `nvme_fc`) with
    /// `nvme_fabrics` in `/sys/module`. Without an expectation the
    /// transports in use are reported as `info`.
    ///
    /// ## Why it matters
    /// `nvme connect-all` connects whatever the discovery controller
    /// offers: a host meant for RDMA may quietly run NVMe/TCP, which costs
    /// CPU per byte and cannot take part in GPUDirect Storage's RDMA path.
    ///
    /// ## How to fix
    /// `modprobe nvme_rdma`, then connect with the transport named:
    /// `nvme connect -t rdma -a <traddr> -s 4420 -n <subsysnqn>`;
    /// disconnect the wrong paths with `nvme disconnect -d nvmeX`, and set
    /// `-t rdma` in `/etc/nvme/discovery.conf`.
    ///
    /// ## Evidence
    /// `transport` and `address` of each fabric controller.
    ///
    /// ## Source
    /// linux v6.12 `drivers/nvme/host/core.c` (`transport` attribute) and
    /// `drivers/nvme/host/fabrics.c` (`nvmf_get_address`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::procfs_nvme_subsystems_with_fc_tcp_and_rdma
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NVME005/fail-no-fabric-controller/`:
    ///
    /// ```text
    /// nvme
    ///   fail           NVME005  nvme-transport-unexpected  nvme_rdma not loaded: nvme over rdma cannot connect
    ///                  /sys/module/nvme_rdma = <missing>
    ///   fail           NVME005  nvme-transport-unexpected  no nvme-of controller connected, rdma expected
    ///                  /sys/class/nvme-subsystem = no fabric controllers
    ///
    /// what to fix first
    ///   1. NVME005 nvme-transport-unexpected: nvme_rdma not loaded: nvme over rdma cannot connect
    ///      fix: load the rdma transport and connect over it
    ///        modprobe nvme_rdma
    ///        nvme connect -t rdma -a <traddr> -s 4420 -n <subsysnqn>
    ///   2. NVME005 nvme-transport-unexpected: no nvme-of controller connected, rdma expected
    ///      fix: load the rdma transport and connect over it
    ///        modprobe nvme_rdma
    ///        nvme connect -t rdma -a <traddr> -s 4420 -n <subsysnqn>
    /// ```
    pub static TRANSPORT = {
        id: "NVME005",
        name: "nvme-transport-unexpected",
        group: Nvme,
        severity: Error,
        requires: [],
        run: transport,
    };
}

fn transport(ctx: &Context<'_>) -> Vec<Outcome> {
    let expected = ctx.profile.nvme_transport.as_deref();
    let list = match (&ctx.facts.nvme.subsystems, expected) {
        (Err(gap), _) => return vec![Outcome::gap(gap)],
        (Ok(Some(list)), _) => list.as_slice(),
        (Ok(None), None) => return vec![Outcome::not_applicable("no nvme subsystems")],
        (Ok(None), Some(_)) => &[],
    };
    let fabric: Vec<&NvmeSubsystem> = list.iter().filter(|s| s.is_fabric()).collect();
    let Some(want) = expected else {
        if fabric.is_empty() {
            return vec![Outcome::not_applicable("no nvme-of controllers")];
        }
        return fabric
            .iter()
            .map(|s| {
                let mut outcome = Outcome::info(format!("nvme-of over {}", transports(s)))
                    .subject(s.name.clone());
                for c in s.controllers.iter().filter(|c| c.is_fabric()) {
                    outcome = outcome.evidence(
                        format!("{}/transport", c.dir),
                        c.transport.clone().unwrap_or_default(),
                    );
                }
                outcome
            })
            .collect();
    };
    let module = format!("nvme_{want}");
    let loaded = match &ctx.facts.modules {
        Ok(Some(modules)) => Some(modules.present(&module)),
        _ => None,
    };
    let load = || {
        Remediation::new(format!("load the {want} transport and connect over it"))
            .command(join(["modprobe", &module]))
            .command(format!(
                "nvme connect -t {} -a <traddr> -s 4420 -n <subsysnqn>",
                quote(want)
            ))
    };
    let mut outcomes = Vec::new();
    if loaded == Some(false) {
        outcomes.push(
            Outcome::fail(format!(
                "{module} not loaded: nvme over {want} cannot connect"
            ))
            .evidence(format!("/sys/module/{module}"), "<missing>")
            .fix(load()),
        );
    }
    if fabric.is_empty() {
        outcomes.push(
            Outcome::fail(format!("no nvme-of controller connected, {want} expected"))
                .evidence("/sys/class/nvme-subsystem", "no fabric controllers")
                .fix(load()),
        );
        return outcomes;
    }
    for subsystem in fabric {
        let wrong: Vec<_> = subsystem
            .controllers
            .iter()
            .filter(|c| c.is_fabric() && c.transport.as_deref() != Some(want))
            .collect();
        let mut outcome = if wrong.is_empty() {
            Outcome::pass(format!("nvme-of over {want} as expected"))
        } else {
            Outcome::fail(format!(
                "{} over {}, {want} expected",
                wrong
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                transports(subsystem)
            ))
            .fix(load().command(join(["nvme", "disconnect", "-d", &wrong[0].name])))
        };
        for c in subsystem.controllers.iter().filter(|c| c.is_fabric()) {
            outcome = outcome.evidence(
                format!("{}/transport", c.dir),
                c.transport.clone().unwrap_or_default(),
            );
        }
        outcomes.push(outcome.subject(subsystem.name.clone()));
    }
    outcomes
}

declare_check! {
    /// GPUDirect Storage data paths are not on device-mapper.
    ///
    /// ## What it checks
    /// For every data mount given with `--mount` (once NFS007 found it
    /// mounted): the block device of its
    /// mount (`/proc/self/mountinfo` major:minor or `/dev/mapper/…` source)
    /// and, when it is a device-mapper device, its chain through
    /// `/sys/block/dm-*/slaves` and `dm/uuid`. dm-multipath (`mpath-`),
    /// LVM (`LVM-`) and dm-crypt (`CRYPT-`) warn. A `/dev/mapper/` or
    /// `/dev/dm-` source, or a device of device-mapper's major, whose
    /// `/sys/block/dm-*` was not read warns too, its target unknown: it is
    /// never passed as "not device-mapper".
    ///
    /// ## Why it matters
    /// cuFile does GPU-direct I/O only on file systems over plain NVMe
    /// block devices (or native NVMe multipath). On device-mapper it falls
    /// back to compat mode, through host memory, without an error.
    ///
    /// ## How to fix
    /// Use NVMe native multipath instead of dm-multipath (blacklist NVMe
    /// devices in `/etc/multipath.conf`: `blacklist { devnode "^nvme" }`),
    /// and put GDS data on a file system directly on the NVMe namespace
    /// (or on md RAID 0, which cuFile supports).
    ///
    /// ## Evidence
    /// The mount's source and `major:minor` in `/proc/self/mountinfo`, the
    /// device-mapper devices of `/sys/block/dm-*` (`dev`, `dm/name`, `dm/uuid`,
    /// `slaves`) and device-mapper's major in `/proc/devices`. A `/dev/mapper/`
    /// or `/dev/dm-` source, or device-mapper's major, is device-mapper even when
    /// `/sys/block` was not captured (it warns, its target unknown); with neither
    /// `/sys/block` nor `/proc/devices` a plain `/dev/` source is `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `drivers/md/dm.c` (`local_init`: `register_blkdev` with the
    /// `major` parameter, 0 unless given), `block/genhd.c` (`__register_blkdev`:
    /// a dynamic major, the highest free one below 255), `drivers/md/dm-sysfs.c`
    /// (`dm/name`, `dm/uuid`), `fs/proc/devices.c`; NVIDIA GPUDirect Storage
    /// Best Practices Guide (1.14), device-mapper volumes run in compat mode.
    /// Real capture: crates/zerohop-doctor/tests/corpus_gaps.rs::gpud_lvm_root_is_device_mapper_without_sys_block
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::declared_data_mounts_must_be_mounted
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NVME006/warn-dm-multipath/`:
    ///
    /// ```text
    /// nvme
    ///   warn           NVME006  dm-multipath-under-gds  /data: /data is on dm-multipath (dm-0 (mpath)): gds needs nvme native multipath
    ///                  /sys/block/dm-0/dm/uuid = mpath-3600a098038314b6f5a5d4f4f70656e31
    ///                  /sys/block/dm-0/slaves = nvme0n1 nvme1n1
    ///                  /proc/self/mountinfo = 50 21 253:0 / /data rw,noatime shared:50 - xfs /dev/mapper/mpatha rw,attr2,inode64
    ///
    /// what to fix first
    ///   1. NVME006 dm-multipath-under-gds (/data): /data is on dm-multipath (dm-0 (mpath)): gds needs nvme native multipath
    ///      fix: move gds data to a file system on the nvme namespace, with native nvme multipath
    ///        echo 'blacklist { devnode "^nvme" }' >> /etc/multipath.conf
    ///        echo 'options nvme_core multipath=Y' > /etc/modprobe.d/nvme-multipath.conf
    /// ```
    pub static DM_UNDER_GDS = {
        id: "NVME006",
        name: "dm-multipath-under-gds",
        group: Nvme,
        severity: Warning,
        requires: [crate::checks::nfs::DATA_MOUNT_MISSING],
        run: dm_under_gds,
    };
}

fn dm_under_gds(ctx: &Context<'_>) -> Vec<Outcome> {
    if ctx.profile.gds == Some(false) {
        return vec![Outcome::not_applicable("gpudirect storage not wanted")];
    }
    if ctx.profile.mounts.is_empty() {
        return vec![Outcome::not_applicable(
            "no data mounts declared (--mount PATH)",
        )];
    }
    let facts = ctx.facts;
    if let Err(gap) = &facts.mounts.table {
        return vec![Outcome::gap(gap)];
    }
    let dms: &[DmDevice] = match &facts.nvme.device_mapper {
        Ok(Some(list)) => list,
        Ok(None) => &[],
        Err(gap) => return vec![Outcome::gap(gap)],
    };
    ctx.profile
        .mounts
        .iter()
        .map(|path| {
            let entry = match facts.mounts.place(path) {
                Some(placement) if placement.is_mounted() => placement.entry(),
                Some(_) => {
                    return Outcome::unknown("not mounted (see NFS007): no device to judge")
                        .subject(path.clone());
                }
                None => None,
            };
            let Some(entry) = entry else {
                return Outcome::unknown("mount table unknown").subject(path.clone());
            };
            let line = (facts.mounts.table.as_ref().ok().and_then(Option::as_ref).map_or("/proc/self/mountinfo", |t| t.source), entry.line.clone());
            let top = dms.iter().find(|dm| {
                entry.device_number.is_some() && dm.dev == entry.device_number
                    || entry.source.strip_prefix("/dev/mapper/").is_some_and(|name| dm.dm_name.as_deref() == Some(name))
                    || entry.source.strip_prefix("/dev/").is_some_and(|name| name == dm.name)
            });
            let is_dm = facts.nvme.is_device_mapper(entry.device_number.as_deref(), &entry.source);
            let outcome = match top {
                // A device-mapper device whose /sys/block/dm-* was not read:
                // every target makes cuFile fall back, whichever it is.
                None if is_dm == Some(true) => Outcome::warn(format!(
                    "{} is on device-mapper ({}, device {}), whose target (multipath, lvm, crypt) is unknown without /sys/block/dm-*/dm: cufile falls back to compat mode",
                    entry.mount_point, entry.source, entry.device_number.as_deref().unwrap_or("<unknown>")
                ))
                .evidence("/sys/block/dm-*/dm", "<missing>")
                .fix(Remediation::new("move gds data to a file system on the nvme namespace, with native nvme multipath")
                    .command(join(["dmsetup", "info", "-c", &entry.source]))),
                None if entry.source.starts_with("/dev/") && is_dm.is_none() => Outcome::unknown(format!(
                    "cannot tell whether {} ({}, device {}) is device-mapper: neither /sys/block nor {PROC_DEVICES} was read",
                    entry.source, entry.mount_point, entry.device_number.as_deref().unwrap_or("<unknown>")
                ))
                .evidence(PROC_DEVICES, "<missing>"),
                None if entry.source.starts_with("/dev/") => Outcome::pass(format!("{} on {}, not device-mapper", entry.mount_point, entry.source)),
                None => Outcome::pass(format!("{} is {} from {}: no local block device", entry.mount_point, entry.fstype, entry.source)),
                Some(top) => {
                    let chain = dm_chain(top, dms);
                    let kinds: Vec<String> = chain.iter().map(|dm| format!("{} ({})", dm.name, dm.kind())).collect();
                    let mut outcome = if chain.iter().any(|dm| dm.is_multipath()) {
                        Outcome::warn(format!("{} is on dm-multipath ({}): gds needs nvme native multipath", entry.mount_point, kinds.join(" -> ")))
                    } else {
                        Outcome::warn(format!("{} is on device-mapper ({}): cufile falls back to compat mode", entry.mount_point, kinds.join(" -> ")))
                    }
                    .fix(Remediation::new("move gds data to a file system on the nvme namespace, with native nvme multipath")
                        .command("echo 'blacklist { devnode \"^nvme\" }' >> /etc/multipath.conf")
                        .command("echo 'options nvme_core multipath=Y' > /etc/modprobe.d/nvme-multipath.conf"));
                    for dm in &chain {
                        outcome = outcome
                            .evidence(format!("/sys/block/{}/dm/uuid", dm.name), dm.uuid.clone().unwrap_or_default())
                            .evidence(format!("/sys/block/{}/slaves", dm.name), dm.slaves.join(" "));
                    }
                    outcome
                }
            };
            outcome.evidence(line.0, line.1).subject(path.clone())
        })
        .collect()
}

/// `top` and every device-mapper device under it, depth-first, bounded.
fn dm_chain<'a>(top: &'a DmDevice, all: &'a [DmDevice]) -> Vec<&'a DmDevice> {
    let mut chain = vec![top];
    let mut index = 0;
    while index < chain.len() && chain.len() < 32 {
        let current: &'a DmDevice = chain[index];
        for slave in &current.slaves {
            if let Some(dm) = all.iter().find(|dm| dm.name == *slave)
                && !chain.iter().any(|seen| seen.name == dm.name)
            {
                chain.push(dm);
            }
        }
        index += 1;
    }
    chain
}

/// `1 path`, `2 paths`.
fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
