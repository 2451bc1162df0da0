//! Container images of the components the GPU Operator and the Network
//! Operator deploy, which each operator assembles from a component's
//! `repository`, `image` and `version`.

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use crate::model::{Object, Workspace};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};
use zerohop_known::operators::{GPU_OPERATOR_GROUP, NETWORK_OPERATOR_GROUP};

/// How an operator joins a component's image fields into the image it pulls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    /// The GPU Operator (NVIDIA/gpu-operator `internal/image/image.go`,
    /// `ImagePath`): `image` alone when `repository` and `version` are both
    /// empty, else `repository/image:version` (`@version` for a digest).
    GpuOperator,
    /// The Network Operator (Mellanox/network-operator `pkg/render/render.go`,
    /// `imagePath`): always `repository/image:version`, `repository` and
    /// `version` falling back to `spec.global` (`api/v1alpha1/
    /// nicclusterpolicy_types.go`, `ApplyGlobalConfig`).
    NetworkOperator,
}

/// One mapping that names a component image: where it is and its fields.
struct ImageSpec<'a> {
    object: &'a Object<'a>,
    path: Vec<PathStep<'a>>,
    image: &'a str,
    repository: &'a str,
    version: &'a str,
    join: Join,
}

impl ImageSpec<'_> {
    /// Whether the operator joins the fields rather than taking `image` as
    /// the whole reference.
    fn joins(&self) -> bool {
        self.join == Join::NetworkOperator
            || !self.repository.is_empty()
            || !self.version.is_empty()
    }

    /// The image reference the operator builds.
    fn pulled(&self) -> String {
        if !self.joins() {
            return self.image.to_owned();
        }
        let separator = if self.version.starts_with("sha256:") {
            '@'
        } else {
            ':'
        };
        format!(
            "{}/{}{separator}{}",
            self.repository, self.image, self.version
        )
    }

    fn field_path(&self, field: &'static str) -> Vec<PathStep<'_>> {
        let mut path = self.path.clone();
        path.push(PathStep::Key(field));
        path
    }
}

/// The operator objects whose components carry image fields, with how their
/// operator joins them.
fn join_of(object: &Object<'_>) -> Option<Join> {
    match (object.group(), object.kind) {
        (GPU_OPERATOR_GROUP, "ClusterPolicy" | "NVIDIADriver") => Some(Join::GpuOperator),
        (NETWORK_OPERATOR_GROUP, "NicClusterPolicy" | "NicNodePolicy") => {
            Some(Join::NetworkOperator)
        }
        _ => None,
    }
}

/// Every mapping under the spec of an operator object that has a string
/// `image`: the component image specs.
fn image_specs<'w>(workspace: &'w Workspace<'_>) -> Vec<ImageSpec<'w>> {
    let mut specs = Vec::new();
    for object in &workspace.objects {
        let Some(join) = join_of(object) else {
            continue;
        };
        let Some(spec) = object.get(&[PathStep::Key("spec")]) else {
            continue;
        };
        let global = |key: &str| {
            spec.get("global")
                .and_then(|global| global.get(key))
                .and_then(Node::as_str)
                .unwrap_or("")
        };
        let (global_repository, global_version) = match join {
            Join::NetworkOperator => (global("repository"), global("version")),
            Join::GpuOperator => ("", ""),
        };
        let mut stack: Vec<(Vec<PathStep<'w>>, &'w Node)> =
            vec![(vec![PathStep::Key("spec")], spec)];
        while let Some((path, node)) = stack.pop() {
            if let Some(image) = node.get("image").and_then(Node::as_str) {
                let own = |key: &str| node.get(key).and_then(Node::as_str).unwrap_or("");
                let or = |own: &'w str, global: &'w str| if own.is_empty() { global } else { own };
                specs.push(ImageSpec {
                    object,
                    path: path.clone(),
                    image,
                    repository: or(own("repository"), global_repository),
                    version: or(own("version"), global_version),
                    join,
                });
            }
            for entry in node.entries().iter().rev() {
                let mut child = path.clone();
                child.push(PathStep::Key(&entry.key));
                stack.push((child, &entry.value));
            }
            for (index, item) in node.items().iter().enumerate().rev() {
                let mut child = path.clone();
                child.push(PathStep::Index(index));
                stack.push((child, item));
            }
        }
    }
    specs
}

/// Whether the first component of a reference names a registry host
/// (`nvcr.io`, `registry:5000`, `localhost`), as the distribution reference
/// grammar tells a domain from a path component.
fn starts_with_registry(reference: &str) -> bool {
    reference.split_once('/').is_some_and(|(first, _)| {
        first.contains('.') || first.contains(':') || first == "localhost"
    })
}

/// `reference` without its tag or digest.
fn without_tag(reference: &str) -> &str {
    let last_slash = reference.rfind('/').map_or(0, |at| at + 1);
    reference[last_slash..]
        .find([':', '@'])
        .map_or(reference, |at| &reference[..last_slash + at])
}

declare_lint! {
    /// An operator component's `image` repeats what its `repository` or `version` already gives.
    ///
    /// ## What it checks
    /// Every component image of a ClusterPolicy, NVIDIADriver,
    /// NicClusterPolicy or NicNodePolicy (a mapping with `image`,
    /// `repository`, `version`): when the operator joins the three, an
    /// `image` that starts with its `repository` (`repository:
    /// nvcr.io/nvidia`, `image: nvcr.io/nvidia/driver`) or with another
    /// registry host, or that carries its own tag or digest while `version`
    /// is set (`image: driver:550.90.07`).
    ///
    /// ## Why it matters
    /// Neither operator parses `image`: the GPU Operator builds
    /// `repository/image:version` whenever `repository` or `version` is set
    /// (NVIDIA/gpu-operator `internal/image/image.go`, `ImagePath`), the
    /// Network Operator always does (Mellanox/network-operator
    /// `pkg/render/render.go`, `imagePath`; the CRD's pattern on `image` is
    /// not anchored, so a full reference passes it). The DaemonSet then
    /// pulls `nvcr.io/nvidia/nvcr.io/nvidia/driver:550.90.07`, which does
    /// not exist (ImagePullBackOff), or `driver:550.90.07:550.90.07`, which
    /// is not a reference at all (InvalidImageName), and the driver, device
    /// plugin or DOCA driver never starts on any node.
    ///
    /// ## How to fix
    /// Give `image` the image name alone (`driver`), the registry and path
    /// in `repository` (`nvcr.io/nvidia`) and the tag in `version`. For the
    /// GPU Operator, a full reference in `image` works only with
    /// `repository` and `version` both left out.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL095/fail/`:
    ///
    /// ```text
    /// error[ZL095]: `image` repeats `repository` `nvcr.io/nvidia`: the operator pulls `nvcr.io/nvidia/nvcr.io/nvidia/driver:550.90.07`
    ///   --> fail/input.yaml:10:5
    ///    |
    /// 10 |     image: nvcr.io/nvidia/driver
    ///    |     ^^^^^
    ///    = object: ClusterPolicy/cluster-policy
    ///    = help: set `image` to the image name alone (`driver`), the registry and path in `repository`, the tag in `version`
    ///            image: driver
    /// ```
    pub(crate) static IMAGE_REPEATS_REPOSITORY = {
        id: "ZL095",
        name: "image-repeats-repository",
        severity: Error,
        check: image_repeats_repository,
    };
}

fn image_repeats_repository(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for spec in image_specs(workspace) {
        if !spec.joins() {
            continue;
        }
        let repository = spec.repository.trim_end_matches('/');
        let last = spec.image.rsplit('/').next().unwrap_or(spec.image);
        let repeated = spec
            .image
            .strip_prefix(repository)
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|_| !repository.is_empty());
        let (problem, name) = if let Some(rest) = repeated {
            (
                format!("`image` repeats `repository` `{}`", short(repository)),
                without_tag(rest),
            )
        } else if !repository.is_empty() && starts_with_registry(spec.image) {
            (
                "`image` names a registry although `repository` gives one".to_owned(),
                without_tag(last),
            )
        } else if !spec.version.is_empty() && last.contains([':', '@']) {
            (
                format!(
                    "`image` carries a tag although `version` `{}` adds one",
                    short(spec.version)
                ),
                without_tag(spec.image),
            )
        } else {
            continue;
        };
        sink.report(
            spec.object,
            &spec.field_path("image"),
            format!("{problem}: the operator pulls `{}`", short(&spec.pulled())),
            Remediation::new(format!(
                "set `image` to the image name alone (`{}`), the registry and path in `repository`, the tag in `version`",
                short(name)
            ))
            .command(format!("image: {name}")),
        );
    }
}

declare_lint! {
    /// An operator component sets some of `repository`, `image` and `version` but not all, so the image it pulls has no name or tag.
    ///
    /// ## What it checks
    /// Every component image of a ClusterPolicy or NVIDIADriver that sets
    /// `repository` or `version` without all three of `repository`,
    /// `image` and `version`; every component image of a NicClusterPolicy
    /// or NicNodePolicy without a `repository` and a `version` of its own or
    /// from `spec.global`.
    ///
    /// ## Why it matters
    /// The GPU Operator joins the three fields as soon as one of
    /// `repository` and `version` is set and fills none of them in
    /// (NVIDIA/gpu-operator `internal/image/image.go`, `ImagePath`): setting
    /// only `driver.version` gives the image `/:525.60.13-rhcos4.11`,
    /// InvalidImageName (NVIDIA/gpu-operator issue #585). The Network
    /// Operator refuses a component without `repository` or `version`
    /// ("repository is required", Mellanox/network-operator
    /// `api/v1alpha1/nicclusterpolicy_types.go`, `ValidateRequiredFields`)
    /// and deploys nothing for it.
    ///
    /// ## How to fix
    /// Set all three (`repository: nvcr.io/nvidia`, `image: driver`,
    /// `version: 550.90.07`), or, for the GPU Operator, none of
    /// `repository` and `version` to keep the operator's default image.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL096/fail/`:
    ///
    /// ```text
    /// error[ZL096]: component image without `repository` and `image`: the gpu operator pulls `/:525.60.13`
    ///   --> fail/input.yaml:11:5
    ///    |
    /// 11 |     version: "525.60.13"
    ///    |     ^^^^^^^
    ///    = object: ClusterPolicy/gpu-cluster-policy
    ///    = help: set `repository`, `image` and `version` together, or leave out `repository` and `version` for the operator's default image
    /// ```
    pub(crate) static PARTIAL_IMAGE_SPEC = {
        id: "ZL096",
        name: "partial-image-spec",
        severity: Error,
        check: partial_image_spec,
    };
}

fn partial_image_spec(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for spec in image_specs(workspace) {
        report_partial(&spec, sink);
    }
    // A GPU Operator component that names a repository or a version without
    // any `image` is partial too: its image has no name.
    for object in &workspace.objects {
        if join_of(object) != Some(Join::GpuOperator) {
            continue;
        }
        let Some(spec) = object.get(&[PathStep::Key("spec")]) else {
            continue;
        };
        let mut components: Vec<(Vec<PathStep<'_>>, &Node)> =
            vec![(vec![PathStep::Key("spec")], spec)];
        components.extend(spec.entries().iter().map(|entry| {
            (
                vec![PathStep::Key("spec"), PathStep::Key(entry.key.as_str())],
                &entry.value,
            )
        }));
        for (path, node) in components {
            if node.get("image").is_some() {
                continue;
            }
            let field = |key: &str| node.get(key).and_then(Node::as_str).unwrap_or("");
            let spec = ImageSpec {
                object,
                path,
                image: "",
                repository: field("repository"),
                version: field("version"),
                join: Join::GpuOperator,
            };
            report_partial(&spec, sink);
        }
    }
}

fn report_partial(spec: &ImageSpec<'_>, sink: &mut Sink<'_>) {
    if !spec.joins() {
        return;
    }
    let missing: Vec<&str> = [
        ("repository", spec.repository),
        ("image", spec.image),
        ("version", spec.version),
    ]
    .into_iter()
    .filter(|(_, value)| value.is_empty())
    .map(|(field, _)| field)
    .collect();
    let Some(first) = missing.first() else {
        return;
    };
    let present = ["version", "repository", "image"]
        .into_iter()
        .find(|field| spec.object.get(&spec.field_path(field)).is_some())
        .unwrap_or(first);
    let fields = missing
        .iter()
        .map(|field| format!("`{field}`"))
        .collect::<Vec<_>>()
        .join(" and ");
    let message = match spec.join {
        Join::GpuOperator => format!(
            "component image without {fields}: the gpu operator pulls `{}`",
            short(&spec.pulled())
        ),
        Join::NetworkOperator => format!(
            "component image without {fields} (nor in `spec.global`): the network operator refuses it"
        ),
    };
    let fix = match spec.join {
        Join::GpuOperator => {
            "set `repository`, `image` and `version` together, or leave out `repository` and `version` for the operator's default image"
        }
        Join::NetworkOperator => {
            "set `repository` and `version` on the component, or once in `spec.global`"
        }
    };
    sink.report(
        spec.object,
        &spec.field_path(present),
        message,
        Remediation::new(fix),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registries_are_told_from_paths() {
        assert!(starts_with_registry("nvcr.io/nvidia/driver"));
        assert!(starts_with_registry("registry:5000/driver"));
        assert!(starts_with_registry("localhost/driver"));
        assert!(!starts_with_registry("k8s/container-toolkit"));
        assert!(!starts_with_registry("driver"));
    }

    #[test]
    fn tags_and_digests_are_dropped() {
        assert_eq!(without_tag("driver:550.90.07"), "driver");
        assert_eq!(without_tag("k8s/toolkit@sha256:ab"), "k8s/toolkit");
        assert_eq!(
            without_tag("registry:5000/x/driver"),
            "registry:5000/x/driver"
        );
    }
}
