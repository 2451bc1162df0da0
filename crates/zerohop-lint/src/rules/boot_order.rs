//! What systemd does at boot with the units of MachineConfigs: which unit a
//! path unit starts, and which storage modules a unit loads before the
//! containerised DOCA driver.

use std::collections::{HashMap, HashSet};

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Mark, Node, PathStep, Span};
use zerohop_known::operators::{DOCA_DRIVER_READY_FILE, NETWORK_OPERATOR_GROUP};

use super::machine_config::{GROUP, ROLE_LABEL, data_url, directive, unit_path, units};
use crate::model::{HostFile, Object, Workspace};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};

/// The unit a path unit starts: its `Unit=`, else the `.service` of its own
/// name. systemd `src/core/path.c` (systemd/systemd at
/// 334415b16e19486605e3f8ca9f1256ebdb0f1d0d), `path_add_trigger_dependencies`:
/// when the unit has no trigger, `unit_load_related_unit(UNIT(p), ".service",
/// &x)` loads the unit of the same name with the suffix `.service`.
fn started_by_path(name: &str, contents: &str) -> Option<String> {
    let stem = name.strip_suffix(".path")?;
    Some(directive(contents, "Unit").map_or_else(|| format!("{stem}.service"), str::to_owned))
}

/// Where a unit is defined, for reporting at it.
#[derive(Clone, Copy)]
enum Origin<'w, 'a> {
    /// Unit `index` of a MachineConfig.
    MachineConfig(&'w Object<'a>, usize),
    /// A host file.
    Host(HostFile<'a>),
}

/// A systemd unit of the set, from a MachineConfig or a host file.
struct SetUnit<'w, 'a> {
    name: &'a str,
    contents: &'a str,
    /// Enabled at boot. Unknown for a host file, which is enabled by a
    /// command rather than by anything in it: taken as not.
    enabled: bool,
    origin: Origin<'w, 'a>,
}

/// The units that land on the same nodes, and how to name the group in a
/// message: "no MachineConfig of role `worker`" defines something.
struct UnitGroup<'w, 'a> {
    none_of: String,
    units: Vec<SetUnit<'w, 'a>>,
}

/// The units of the set by the nodes they land on: the MachineConfigs of
/// each role, whichever MachineConfig carries them, and the host files
/// under each node root.
fn unit_groups<'w, 'a>(workspace: &'w Workspace<'a>) -> Vec<UnitGroup<'w, 'a>> {
    // Groups in the order first met, found by key in one hash lookup.
    let mut groups: Vec<UnitGroup<'w, 'a>> = Vec::new();
    // Keyed by what the nodes are named by (`role` or `host`) and the name;
    // a group's text is written once, when it is met first.
    let mut by_key: HashMap<(&str, &str), usize> = HashMap::new();
    fn group<'g, 'w, 'a>(
        groups: &'g mut Vec<UnitGroup<'w, 'a>>,
        by_key: &mut HashMap<(&'static str, &'a str), usize>,
        key: (&'static str, &'a str),
        none_of: impl FnOnce() -> String,
    ) -> &'g mut Vec<SetUnit<'w, 'a>> {
        let at = *by_key.entry(key).or_insert_with(|| {
            groups.push(UnitGroup {
                none_of: none_of(),
                units: Vec::new(),
            });
            groups.len() - 1
        });
        &mut groups[at].units
    }
    for object in workspace.of_kind(GROUP, "MachineConfig") {
        let role = object
            .get(&[
                PathStep::Key("metadata"),
                PathStep::Key("labels"),
                PathStep::Key(ROLE_LABEL),
            ])
            .and_then(Node::as_str)
            .unwrap_or("");
        let none_of = || {
            if role.is_empty() {
                "no MachineConfig without a role".to_owned()
            } else {
                format!("no MachineConfig of role `{}`", short(role))
            }
        };
        group(&mut groups, &mut by_key, ("role", role), none_of).extend(
            units(object).into_iter().map(|unit| SetUnit {
                name: unit.name,
                contents: unit.contents,
                enabled: unit.enabled,
                origin: Origin::MachineConfig(object, unit.index),
            }),
        );
    }
    for host in &workspace.host_files {
        let root = host.root();
        let none_of = || {
            if root.is_empty() {
                "no host file".to_owned()
            } else {
                format!("no host file under `{}`", short(root))
            }
        };
        group(&mut groups, &mut by_key, ("host", root), none_of).push(SetUnit {
            name: host.base_name(),
            contents: host.text,
            enabled: false,
            origin: Origin::Host(*host),
        });
    }
    groups
}

/// Reports at a unit: a MachineConfig unit's `field`, or the line of a
/// host file that starts with `line`.
fn report_at(
    sink: &mut Sink<'_>,
    unit: &SetUnit<'_, '_>,
    field: &'static str,
    line: &str,
    message: String,
    fix: Remediation,
) {
    match unit.origin {
        Origin::MachineConfig(object, index) => {
            sink.report(object, &unit_path(index, field), message, fix);
        }
        Origin::Host(host) => {
            let at = Mark {
                line: host.line_of(line),
                column: 1,
            };
            sink.report_in_file(
                host.file,
                None,
                Span { start: at, end: at },
                line.to_owned(),
                message,
                fix,
            );
        }
    }
}

declare_lint! {
    /// A path unit without `Unit=` beside a unit of its name that is not a service: it starts a service nobody defines.
    ///
    /// ## What it checks
    /// The `.path` units of MachineConfigs (`spec.config.systemd.units`)
    /// and the `*.path` host files of a Kubernetes set (under
    /// `etc/systemd/system/`) without a `Unit=` line, when the units that
    /// land on the same nodes (the MachineConfigs of the same role, the
    /// host files under the same node root) define a unit of the same name
    /// with another suffix (`.mount`, `.automount`, `.socket`) and no
    /// `.service` of that name.
    ///
    /// ## Why it matters
    /// A path unit starts the unit its `Unit=` names; without one, "this
    /// value defaults to a service that has the same name as the path unit,
    /// except for the suffix" (systemd `man/systemd.path.xml`, systemd/systemd
    /// at d9881b1b9e1c127f0099d20b0ec6ab2c058115ff; the code is
    /// `path_add_trigger_dependencies` in `src/core/path.c`, at
    /// 334415b16e19486605e3f8ca9f1256ebdb0f1d0d, which loads the related
    /// `.service`). `mnt-data.path` beside `mnt-data.mount` therefore starts
    /// `mnt-data.service`, which does not exist: the path fires, the start
    /// job fails with "Unit mnt-data.service not found", and the file system
    /// is never mounted, with nothing in the manifests to show it.
    ///
    /// ## How to fix
    /// Name the unit to start in the path unit's `[Path]` section.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL076/fail/`:
    ///
    /// ```text
    /// error[ZL076]: path unit `mnt-ai\x2ddata.path` names no `Unit=`, so it starts `mnt-ai\x2ddata.service`, which no MachineConfig of role `worker` defines, not `mnt-ai\x2ddata.mount`
    ///   --> fail/input.yaml:24:11
    ///    |
    /// 24 |           contents: |
    ///    |           ^^^^^^^^
    ///    = object: MachineConfig/60-worker-nfs-rdma
    ///    = help: name the unit to start in the [Path] section
    ///            Unit=mnt-ai\x2ddata.mount
    ///    = see: https://www.freedesktop.org/software/systemd/man/latest/systemd.path.html#Unit=
    /// ```
    pub(crate) static PATH_UNIT_STARTS_MISSING_SERVICE = {
        id: "ZL076",
        name: "path-unit-starts-missing-service",
        severity: Error,
        check: path_unit_starts_missing_service,
    };
}

fn path_unit_starts_missing_service(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for group in unit_groups(workspace) {
        let names: HashSet<&str> = group.units.iter().map(|unit| unit.name).collect();
        // Each stem's first unit that a path unit may mean to start.
        let mut targets: HashMap<&str, &str> = HashMap::new();
        for unit in &group.units {
            if let Some((stem, suffix)) = unit.name.rsplit_once('.')
                && !matches!(suffix, "path" | "service")
            {
                targets.entry(stem).or_insert(unit.name);
            }
        }
        for unit in &group.units {
            let Some(started) = started_by_path(unit.name, unit.contents) else {
                continue;
            };
            if directive(unit.contents, "Unit").is_some() || names.contains(started.as_str()) {
                continue;
            }
            let stem = unit.name.trim_end_matches(".path");
            let Some(sibling) = targets.get(stem) else {
                continue;
            };
            report_at(
                sink,
                unit,
                "contents",
                "[Path]",
                format!(
                    "path unit `{}` names no `Unit=`, so it starts `{}`, which {} defines, not `{}`",
                    short(unit.name),
                    short(&started),
                    group.none_of,
                    short(sibling)
                ),
                Remediation::new("name the unit to start in the [Path] section")
                    .command(format!("Unit={sibling}"))
                    .doc("https://www.freedesktop.org/software/systemd/man/latest/systemd.path.html#Unit="),
            );
        }
    }
}

/// The unit nvme-cli installs to connect the NVMe-oF subsystems of
/// `/etc/nvme/discovery.conf` at boot.
const NVMF_AUTOCONNECT: &str = "nvmf-autoconnect.service";

/// Whether an `nvme` argument list (a `discovery.conf` line, an
/// `ExecStart=`) asks for the RDMA transport.
fn asks_for_rdma(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.iter().enumerate().any(|(i, word)| {
        matches!(*word, "--transport=rdma" | "-trdma")
            || (matches!(*word, "--transport" | "-t") && words.get(i + 1) == Some(&"rdma"))
    })
}

/// Whether the MachineConfig writes an `/etc/nvme/discovery.conf` that
/// names the RDMA transport.
fn discovers_over_rdma(object: &Object<'_>) -> bool {
    let files = [
        PathStep::Key("spec"),
        PathStep::Key("config"),
        PathStep::Key("storage"),
        PathStep::Key("files"),
    ];
    object
        .get(&files)
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .filter(|file| file.get("path").and_then(Node::as_str) == Some("/etc/nvme/discovery.conf"))
        .filter_map(|file| file.get("contents")?.get("source")?.as_str())
        .filter_map(data_url)
        .any(|text| {
            text.lines()
                .filter(|line| !line.trim_start().starts_with('#'))
                .any(asks_for_rdma)
        })
}

declare_lint! {
    /// NVMe-oF over RDMA connected at boot, before the containerised DOCA driver: the inbox `nvme_rdma` keeps the driver from loading.
    ///
    /// ## What it checks
    /// When a NicClusterPolicy in the input deploys the DOCA driver
    /// container (`spec.ofedDriver`): MachineConfig units that connect
    /// NVMe-oF at boot over RDMA, that is `nvmf-autoconnect.service`
    /// enabled while a MachineConfig of the same role writes an
    /// `/etc/nvme/discovery.conf` with `--transport=rdma`, or an enabled
    /// unit whose `ExecStart=` runs `nvme connect` with `-t rdma`.
    ///
    /// ## Why it matters
    /// `nvmf-autoconnect.service` runs `nvme connect-all` at boot, after
    /// `network-online.target` and nothing else (linux-nvme/nvme-cli
    /// `nvmf-autoconnect/systemd/nvmf-autoconnect.service.in` at
    /// 52ad531402e16b1b8a7400853d10f66bb0359d68); connecting loads the
    /// transport's module, `request_module("nvme-%s", opts->transport)`
    /// (linux `drivers/nvme/host/fabrics.c`, `nvmf_create_ctrl`, at
    /// 6dee6ae9d62642e81def4d461d71f13a6496ab59), here the inbox
    /// `nvme_rdma`, before the driver container has run. The container's
    /// entrypoint then counts the storage modules loaded (`ib_isert`,
    /// `nvme_rdma`, `nvmet_rdma`, `rpcrdma`, `xprtrdma`, `ib_srpt`) and,
    /// unless `UNLOAD_STORAGE_MODULES` is `true`, exits without loading its
    /// driver: "Storage modules are loaded for current driver, terminating
    /// prior driver reload failure due to UNLOAD_STORAGE_MODULES not set to
    /// \"true\"" (Mellanox/doca-driver-build `entrypoint.sh`, lines
    /// 1963–1967 at 445df1e8b7db6f8e27a1122e3015d626a249f3a3). With it
    /// `true`, it must unload `nvme_rdma` under connected controllers. Either
    /// way the node keeps the inbox driver and the NVMe namespaces ride on
    /// it.
    ///
    /// ## How to fix
    /// Leave `nvmf-autoconnect.service` disabled and start it from a path
    /// unit on the driver's ready file, which the container writes once its
    /// modules are loaded.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL077/fail/`:
    ///
    /// ```text
    /// error[ZL077]: `nvmf-autoconnect.service` is enabled, so it connects nvme-of over rdma at boot, before the doca driver container (NicClusterPolicy `nic-cluster-policy`): the inbox nvme_rdma then keeps the driver from loading
    ///   --> fail/input.yaml:31:11
    ///    |
    /// 31 |           enabled: true
    ///    |           ^^^^^^^
    ///    = object: MachineConfig/60-worker-nvme
    ///    = help: leave the unit disabled and start it from a path unit on the driver's ready file
    ///            [Path]
    ///            PathExists=/run/mellanox/drivers/.driver-ready
    ///            Unit=nvmf-autoconnect.service
    /// ```
    pub(crate) static NVME_RDMA_AT_BOOT_BEFORE_DOCA_DRIVER = {
        id: "ZL077",
        name: "nvme-rdma-at-boot-before-doca-driver",
        severity: Error,
        check: nvme_rdma_at_boot_before_doca_driver,
    };
}

fn nvme_rdma_at_boot_before_doca_driver(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let driver = workspace
        .of_kind(NETWORK_OPERATOR_GROUP, "NicClusterPolicy")
        .find(|p| {
            p.get(&[PathStep::Key("spec"), PathStep::Key("ofedDriver")])
                .is_some()
        });
    let Some(driver) = driver else {
        return;
    };
    for group in unit_groups(workspace) {
        // Each MachineConfig of the group looked at once, however many
        // units it carries.
        let mut seen: HashSet<*const Node> = HashSet::new();
        let rdma_discovery = group.units.iter().any(|unit| match unit.origin {
            Origin::MachineConfig(object, _) => {
                seen.insert(std::ptr::from_ref(object.node)) && discovers_over_rdma(object)
            }
            Origin::Host(_) => false,
        });
        for unit in &group.units {
            if !unit.enabled {
                continue;
            }
            let connects = (unit.name == NVMF_AUTOCONNECT && rdma_discovery)
                || directive(unit.contents, "ExecStart")
                    .is_some_and(|exec| exec.contains("nvme connect") && asks_for_rdma(exec));
            if !connects {
                continue;
            }
            report_at(
                sink,
                unit,
                "enabled",
                "[Install]",
                format!(
                    "`{}` is enabled, so it connects nvme-of over rdma at boot, before the doca driver container (NicClusterPolicy `{}`): the inbox nvme_rdma then keeps the driver from loading",
                    short(unit.name),
                    short(driver.name)
                ),
                Remediation::new(
                    "leave the unit disabled and start it from a path unit on the driver's ready file",
                )
                .command(format!(
                    "[Path]\nPathExists={DOCA_DRIVER_READY_FILE}\nUnit={}",
                    unit.name
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// systemd's choice, as `path_add_trigger_dependencies` makes it: the
    /// `Unit=` given (the last one wins, as for every setting of a unit
    /// file), else the `.service` of the path unit's own name.
    #[test]
    fn a_path_unit_starts_its_unit_or_the_service_of_its_name() {
        assert_eq!(
            started_by_path("mnt-data.path", "[Path]\nPathExists=/run/x\n").as_deref(),
            Some("mnt-data.service")
        );
        assert_eq!(
            started_by_path(
                "mnt-data.path",
                "[Path]\nUnit=a.mount\nPathExists=/run/x\nUnit=mnt-data.mount\n"
            )
            .as_deref(),
            Some("mnt-data.mount")
        );
        assert_eq!(started_by_path("mnt-data.mount", ""), None);
    }

    #[test]
    fn the_rdma_transport_is_found_however_it_is_written() {
        assert!(asks_for_rdma(
            "--transport=rdma --traddr=10.0.0.1 --trsvcid=4420"
        ));
        assert!(asks_for_rdma("-t rdma -a 10.0.0.1"));
        assert!(asks_for_rdma(
            "/usr/sbin/nvme connect --transport rdma -a 10.0.0.1"
        ));
        assert!(!asks_for_rdma("--transport=tcp --traddr=10.0.0.1"));
        assert!(!asks_for_rdma("# --transport=tcp, not rdma"));
    }
}
