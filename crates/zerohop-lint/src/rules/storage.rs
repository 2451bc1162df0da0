//! Storage: StorageClass and PersistentVolume mount options, `cufile.json`.

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep, Span, Value};
use zerohop_known::cufile::{self, Shape};

use crate::model::Workspace;
use crate::registry::declare_rule;
use crate::sink::Sink;

declare_rule! {
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
    pub(crate) static XFS_NOBARRIER = "ZL080", "xfs-nobarrier", Error, xfs_nobarrier;
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

declare_rule! {
    /// A `cufile.json` key that cuFile does not know, or a value not of its type.
    ///
    /// ## What it checks
    /// When a file named `cufile.json` is linted: every key, against the
    /// keys of GPUDirect Storage's configuration (`logging`, `profile`,
    /// `execution`, `properties`, `fs`, `block`, `denylist`,
    /// `miscellaneous` and their members), by the schema `zerohop doctor`
    /// uses for GDS002. Unknown keys, keys under an old name (`blacklist`
    /// for `denylist`), values of another type, values outside a key's
    /// list or range, and slab lists that do not pair up are reported. `//` and `/* */` comments are allowed, as cuFile
    /// allows them.
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
    pub(crate) static UNKNOWN_CUFILE_KEY = "ZL081", "unknown-cufile-key", Warning, unknown_cufile_key;
}

fn unknown_cufile_key(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
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
