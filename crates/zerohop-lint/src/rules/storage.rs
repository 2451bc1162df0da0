//! Storage: StorageClass and PersistentVolume mount options, `cufile.json`.

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{self, Entry, Limits, Mark, Node, PathStep, Span, Value};
use zerohop_known::cufile::{self, Shape};
use zerohop_known::jsonc;

use crate::model::{Workspace, display_path};
use crate::registry::declare_lint;
use crate::sink::Sink;

declare_lint! {
    /// An XFS volume mounted with `nobarrier`, which Linux 4.19 removed.
    ///
    /// ## What it checks
    /// StorageClasses (`parameters.fsType`, `csi.storage.k8s.io/fstype`) and
    /// PersistentVolumes (`spec.csi.fsType`) of type `xfs` whose
    /// `mountOptions` contain `nobarrier` or `barrier`.
    ///
    /// ## Why it matters
    /// XFS dropped the barrier options in Linux 4.19: the mount fails with
    /// "unknown parameter" and every pod using the volume stays in
    /// ContainerCreating.
    ///
    /// ## How to fix
    /// Remove the option; write barriers are cheap on devices with a
    /// non-volatile or no write cache.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL080/fail/`:
    ///
    /// ```text
    /// error[ZL080]: xfs rejects `nobarrier` since linux 4.19; the mount fails
    ///   --> fail/input.yaml:10:5
    ///    |
    /// 10 |   - nobarrier
    ///    |     ^^^^^^^^^
    ///    = object: StorageClass/local-xfs
    ///    = help: remove `nobarrier` from mountOptions
    /// ```
    pub(crate) static XFS_NOBARRIER = {
        id: "ZL080",
        name: "xfs-nobarrier",
        severity: Error,
        check: xfs_nobarrier,
    };
}

fn xfs_nobarrier(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in &workspace.objects {
        let (fs_type, options_path): (Option<&str>, &[PathStep<'_>]) =
            match (object.group(), object.kind) {
                ("storage.k8s.io", "StorageClass") => {
                    let parameters = object.get(&[PathStep::Key("parameters")]);
                    let fs_type = ["fsType", "csi.storage.k8s.io/fstype", "fstype"]
                        .iter()
                        .find_map(|key| parameters.and_then(|p| p.get(key)).and_then(Node::as_str));
                    (fs_type, &[PathStep::Key("mountOptions")])
                }
                ("", "PersistentVolume") => (
                    object.str_at(&[
                        PathStep::Key("spec"),
                        PathStep::Key("csi"),
                        PathStep::Key("fsType"),
                    ]),
                    &[PathStep::Key("spec"), PathStep::Key("mountOptions")],
                ),
                _ => continue,
            };
        if !fs_type.is_some_and(|t| t.eq_ignore_ascii_case("xfs")) {
            continue;
        }
        let Some(options) = object.get(options_path) else {
            continue;
        };
        for (index, option) in options.items().iter().enumerate() {
            let Some(text) = option.as_str() else {
                continue;
            };
            let bad = text
                .split(',')
                .map(str::trim)
                .find(|o| matches!(*o, "nobarrier" | "barrier" | "barrier=0" | "barrier=1"));
            if let Some(bad) = bad {
                let mut path = options_path.to_vec();
                path.push(PathStep::Index(index));
                sink.report(
                    object,
                    &path,
                    format!("xfs rejects `{bad}` since linux 4.19; the mount fails"),
                    Remediation::new(format!("remove `{bad}` from mountOptions")),
                );
            }
        }
    }
}

/// The `mountOptions` of a StorageClass or a PersistentVolume, with the path
/// to them; `None` for other kinds.
fn mount_options_path(object: &crate::model::Object<'_>) -> Option<&'static [PathStep<'static>]> {
    match (object.group(), object.kind) {
        ("storage.k8s.io", "StorageClass") => Some(&[PathStep::Key("mountOptions")]),
        ("", "PersistentVolume") => Some(&[PathStep::Key("spec"), PathStep::Key("mountOptions")]),
        _ => None,
    }
}

declare_lint! {
    /// A StorageClass or PersistentVolume whose NFS-over-RDMA mount options transfer less than 1 MiB or mount soft.
    ///
    /// ## What it checks
    /// The `mountOptions` of every StorageClass and PersistentVolume that
    /// ask for RDMA (`proto=rdma`, or the `rdma` flag), whatever the
    /// provisioner (the NFS CSI driver `nfs.csi.k8s.io` mounts with them,
    /// kubernetes-csi/csi-driver-nfs@f09798c0 `pkg/nfs/nodeserver.go`), by
    /// the facts the doctor's NFS checks and `zerohop plan` share
    /// (`zerohop_known::storage`): `rsize`/`wsize` not below 1 MiB when
    /// given, and no `soft` or `softerr`. The port is ZL071's and
    /// `nconnect` ZL072's, on the same objects. Options over TCP are left
    /// alone: only the doctor, which sees what pods read, can tell a data
    /// volume from a home directory.
    ///
    /// ## Why it matters
    /// Every pod that mounts such a volume gets the shortfall on every
    /// node: small transfers cap throughput at the RPC rate, and a soft
    /// mount turns a slow server into I/O errors in training jobs. The
    /// doctor finds the same on each node (NFS004, NFS006) once the pods
    /// are running.
    ///
    /// ## How to fix
    /// Give the data-path options: `proto=rdma`, `port=20049`,
    /// `nconnect=16`, `rsize=1048576`, `wsize=1048576`, `hard` (what
    /// `zerohop plan` renders with `nfsRdma.via: csi`). A StorageClass's
    /// options reach only the volumes provisioned after the change; edit
    /// the PersistentVolumes too.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL082/fail/`:
    ///
    /// ```text
    /// warning[ZL082]: `rsize=65536` is below 1 MiB: rpc overhead caps throughput
    ///   --> fail/input.yaml:14:5
    ///    |
    /// 14 |   - rsize=65536
    ///    |     ^^^^^^^^^^^
    ///    = object: StorageClass/nfs-rdma
    ///    = help: set `rsize=1048576` in mountOptions
    ///
    /// warning[ZL082]: `soft` mount: a slow server turns into i/o errors in training jobs
    ///   --> fail/input.yaml:16:5
    ///    |
    /// 16 |   - soft
    ///    |     ^^^^
    ///    = object: StorageClass/nfs-rdma
    ///    = help: replace `soft` with `hard` in mountOptions
    /// ```
    pub(crate) static NFS_RDMA_MOUNT_OPTIONS = {
        id: "ZL082",
        name: "nfs-rdma-small-or-soft-mount",
        severity: Warning,
        check: nfs_rdma_mount_options,
    };
}

fn nfs_rdma_mount_options(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    use zerohop_known::storage::{NfsOptions, Shortfall};
    for object in &workspace.objects {
        let Some(options_path) = mount_options_path(object) else {
            continue;
        };
        let Some(options) = object.get(options_path) else {
            continue;
        };
        let items: Vec<(usize, &str)> = options
            .items()
            .iter()
            .enumerate()
            .filter_map(|(index, item)| item.as_str().map(|text| (index, text)))
            .collect();
        let parsed = NfsOptions::parse(items.iter().map(|(_, text)| *text));
        let judged = parsed.shortfalls().into_iter().filter(|shortfall| {
            matches!(
                shortfall,
                Shortfall::SmallTransfer { .. } | Shortfall::Soft(_)
            )
        });
        for shortfall in judged {
            // The item that holds the option at fault: the last one that
            // sets it, the one `mount.nfs` keeps.
            let holds = |text: &str| {
                let one = NfsOptions::parse([text]);
                match &shortfall {
                    Shortfall::SmallTransfer { option, .. } => one.get(option).is_some(),
                    Shortfall::Soft(flag) => one.has(flag),
                    Shortfall::RdmaWithoutPort | Shortfall::WrongPort(_) => false,
                }
            };
            let mut path = options_path.to_vec();
            if let Some((index, _)) = items.iter().rev().find(|(_, text)| holds(text)) {
                path.push(PathStep::Index(*index));
            }
            sink.report(
                object,
                &path,
                shortfall.message(),
                Remediation::new(match &shortfall {
                    Shortfall::Soft(flag) => {
                        format!("replace `{flag}` with `hard` in mountOptions")
                    }
                    _ => format!("set `{}` in mountOptions", shortfall.repair()),
                }),
            );
        }
    }
}

declare_lint! {
    /// A StorageClass or PersistentVolume names a CSI driver that no project publishes.
    ///
    /// ## What it checks
    /// `provisioner` of every StorageClass and `spec.csi.driver` of every
    /// PersistentVolume against the CSI driver names guides give that no
    /// project publishes (`zerohop_known::storage::UNPUBLISHED_CSI_DRIVERS`):
    /// `csi.nvidia.com`, which no NVIDIA repository ships and the
    /// kubernetes-csi list of drivers does not name
    /// (kubernetes-csi/docs@883ce07b `book/src/drivers.md`).
    ///
    /// ## Why it matters
    /// No controller serves the name: claims of the class stay `Pending`
    /// ("waiting for a volume to be created"), pods that mount them are
    /// never scheduled, and a volume of that driver never mounts. GPUDirect
    /// Storage needs no CSI driver of its own: it reads through the file
    /// system's driver (ext4/XFS on NVMe, NFS over RDMA).
    ///
    /// ## How to fix
    /// For local NVMe, use the local volume provisioner
    /// (kubernetes-sigs/sig-storage-local-static-provisioner, provisioner
    /// `kubernetes.io/no-provisioner`) or your storage vendor's CSI driver
    /// as `kubectl get csidrivers` lists it; for NFS over RDMA,
    /// `nfs.csi.k8s.io`. `zerohop plan` renders both.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL083/fail/`:
    ///
    /// ```text
    /// error[ZL083]: csi driver `csi.nvidia.com` does not exist: nvidia publishes no csi driver of that name: it is in no nvidia repository and not in the kubernetes-csi list of drivers (kubernetes-csi/docs `book/src/drivers.md`); gpudirect storage needs none, it reads through the file system's own driver
    ///  --> fail/input.yaml:5:1
    ///   |
    /// 5 | provisioner: csi.nvidia.com
    ///   | ^^^^^^^^^^^
    ///   = object: StorageClass/gds-nvme
    ///   = help: use kubernetes.io/no-provisioner with the local volume provisioner, or the csi driver your storage vendor ships (kubectl get csidrivers)
    /// ```
    pub(crate) static UNPUBLISHED_CSI_DRIVER = {
        id: "ZL083",
        name: "unpublished-csi-driver",
        severity: Error,
        check: unpublished_csi_driver,
    };
}

fn unpublished_csi_driver(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in &workspace.objects {
        let path: &[PathStep<'_>] = match (object.group(), object.kind) {
            ("storage.k8s.io", "StorageClass") => &[PathStep::Key("provisioner")],
            ("", "PersistentVolume") => &[
                PathStep::Key("spec"),
                PathStep::Key("csi"),
                PathStep::Key("driver"),
            ],
            _ => continue,
        };
        let Some(driver) = object.str_at(path) else {
            continue;
        };
        if let Some(why) = zerohop_known::storage::unpublished_csi_driver(driver) {
            sink.report(
                object,
                path,
                format!("csi driver `{driver}` does not exist: {why}"),
                Remediation::new(
                    "use kubernetes.io/no-provisioner with the local volume provisioner, or the csi driver your storage vendor ships (kubectl get csidrivers)",
                ),
            );
        }
    }
}

/// A `cufile.json` loaded as YAML flow, as the schema of
/// [`zerohop_known::cufile`] walks it; a key's place is its span.
#[derive(Debug, Clone, Copy)]
struct YamlTree<'a>(&'a Node);

impl<'a> cufile::Tree<'a> for YamlTree<'a> {
    type Place = Span;

    fn shape(self) -> Shape<'a> {
        match &self.0.value {
            Value::Null => Shape::Null,
            Value::Bool(_) => Shape::Bool,
            Value::Int(number) => Shape::Integer(*number),
            Value::Float(_) => Shape::Float,
            Value::String(text) => Shape::Text(text),
            Value::Sequence(_) => Shape::List,
            Value::Mapping(_) => Shape::Object,
        }
    }

    fn items(self) -> Vec<Self> {
        self.0.items().iter().map(YamlTree).collect()
    }

    fn members(self) -> Vec<(&'a str, Self, Span)> {
        self.0
            .entries()
            .iter()
            .map(|entry| (entry.key.as_str(), YamlTree(&entry.value), entry.key_span))
            .collect()
    }
}

declare_lint! {
    /// A `cufile.json` key that cuFile does not know, or a value not of its type.
    ///
    /// ## What it checks
    /// Every cuFile configuration, found by name or by content: a file
    /// named `cufile.json`; any other `.json` file whose content is one; a
    /// ConfigMap `data` value whose content is one (whatever its key, the
    /// way pods mount `cufile.json` and point `CUFILE_ENV_PATH_JSON` at
    /// it). Content is a cuFile configuration when it is a JSON object with
    /// two of cuFile's top-level sections (`logging`, `profile`,
    /// `execution`, `properties`, `fs`, `block`, `denylist`,
    /// `miscellaneous`), or one section other than `logging` holding one of
    /// its keys. Every key is checked against the keys of GPUDirect
    /// Storage's configuration, by the schema `zerohop doctor` uses for
    /// GDS002. Unknown keys, keys under an old name (`blacklist` for
    /// `denylist`), values of another type, values outside a key's list or
    /// range, and slab lists that do not pair up are reported. `//` and
    /// `/* */` comments are allowed, as cuFile allows them. A finding in a
    /// ConfigMap points at the key inside a literal block (`|`), and at the
    /// whole value otherwise.
    ///
    /// ## Why it matters
    /// cuFile ignores keys it does not know: a misspelled
    /// `allow_compat_mode` or `rdma_dev_addr_list` leaves the default in
    /// place, so GDS silently runs in compatibility mode or without its RDMA
    /// addresses.
    ///
    /// ## How to fix
    /// Use the key cuFile documents (the finding suggests the closest) with
    /// a value of its type, or remove it.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL081/fail/`:
    ///
    /// ```text
    /// warning[ZL081]: `properties.alow_compat_mode` is not a cufile key (did you mean `allow_compat_mode`?)
    ///   --> fail/configmap.yaml:13:9
    ///    |
    /// 13 |         "alow_compat_mode": false
    ///    |         ^^^^^^^^^^^^^^^^^^
    ///    = object: ConfigMap/ml/cufile-config
    ///    = help: rename it to `allow_compat_mode`
    /// ```
    pub(crate) static UNKNOWN_CUFILE_KEY = {
        id: "ZL081",
        name: "unknown-cufile-key",
        severity: Warning,
        check: unknown_cufile_key,
    };
}

fn unknown_cufile_key(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    configmap_cufiles(workspace, sink);
    for (file, root) in &workspace.cufiles {
        for finding in cufile::judge(YamlTree(root)) {
            let remediation = Remediation::new(finding.problem.remedy());
            sink.report_in_file(
                file,
                None,
                finding.place,
                finding.path.clone(),
                finding.message(),
                remediation,
            );
        }
    }
}

/// Largest ConfigMap value parsed to tell whether it is a `cufile.json`
/// (ConfigMaps hold at most 1 MiB).
const MAX_CONFIGMAP_VALUE_BYTES: usize = 1024 * 1024;

/// Checks the ConfigMap `data` values that are cuFile configurations.
fn configmap_cufiles(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in workspace.of_kind("", "ConfigMap") {
        let Some(data) = object.get(&[PathStep::Key("data")]) else {
            continue;
        };
        for entry in data.entries() {
            let Some(text) = entry.value.as_str() else {
                continue;
            };
            if text.len() > MAX_CONFIGMAP_VALUE_BYTES
                || !text.trim_start().starts_with('{')
                || !jsonc::parse(text).is_ok_and(|json| cufile::looks_like_cufile(&json))
            {
                continue;
            }
            let Ok(stripped) = jsonc::strip_comments(text) else {
                continue;
            };
            let Ok(documents) = yaml::load_str(&stripped, &Limits::default()) else {
                continue;
            };
            let Some(root) = documents.first() else {
                continue;
            };
            let place = Placement::of(entry, text);
            for finding in cufile::judge(YamlTree(root)) {
                let subject = format!(
                    "{}.{}",
                    display_path(&[PathStep::Key("data"), PathStep::Key(&entry.key)]),
                    finding.path
                );
                sink.report_in_file(
                    object.file,
                    Some(object),
                    place.span(finding.place),
                    subject,
                    finding.message(),
                    Remediation::new(finding.problem.remedy()),
                );
            }
        }
    }
}

/// Where a ConfigMap value's own lines and columns lie in the file.
enum Placement {
    /// A literal block scalar (`|`): its lines are the file's lines from
    /// `start`, each indented to `start`'s column.
    Block(Mark),
    /// Any other scalar (quoted, folded): escapes and folding move text
    /// around, so a finding points at the whole value.
    Whole(Span),
}

impl Placement {
    fn of(entry: &Entry, text: &str) -> Placement {
        let span = entry.value.span;
        // A block scalar starts on a line below its key; a literal one keeps
        // every line, so the value has as many lines as the file gives it
        // (a folded one joins them).
        let file_lines = span.end.line.saturating_sub(span.start.line);
        let own_lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
        if span.start.line > entry.key_span.start.line
            && own_lines <= file_lines
            && own_lines + 2 >= file_lines
        {
            Placement::Block(span.start)
        } else {
            Placement::Whole(span)
        }
    }

    fn span(&self, inner: Span) -> Span {
        match self {
            Placement::Block(start) => {
                let shift = |mark: Mark| Mark {
                    line: start.line + mark.line.saturating_sub(1),
                    column: start.column + mark.column.saturating_sub(1),
                };
                Span {
                    start: shift(inner.start),
                    end: shift(inner.end),
                }
            }
            Placement::Whole(span) => *span,
        }
    }
}
