//! Custom resources against their CRDs' `openAPIV3Schema` (`--crds DIR`).

use std::collections::HashMap;

use zerohop_core::Remediation;
use zerohop_k8s::schema::{PathSegment, SchemaViolation, ViolationKind};
use zerohop_k8s::yaml::PathStep;
use zerohop_known::operators::{ChartOnlyValue, chart_only_value};

use crate::model::{Object, Workspace, display_path};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};
use zerohop_known::operators::{GPU_OPERATOR_GROUP, NETWORK_OPERATOR_GROUP};

declare_lint! {
    /// A custom resource sets a field its CRD does not declare.
    ///
    /// ## What it checks
    /// With `--crds DIR`, every object whose apiVersion and kind a CRD in
    /// `DIR` serves is validated against that CRD's `openAPIV3Schema`; this
    /// rule reports fields the schema does not declare, with the closest
    /// declared name when one is close (`pfName` → `pfNames`). A key of
    /// an operator's Helm chart written into its resource (`nfd` in a
    /// ClusterPolicy: the GPU Operator chart's `nfd.enabled`,
    /// NVIDIA/gpu-operator `deployments/gpu-operator/values.yaml`) is named
    /// as such, not as a misspelling of a field.
    ///
    /// ## Why it matters
    /// The API server prunes unknown fields silently (or rejects the object
    /// under strict field validation): a misspelled `pfName` leaves the
    /// policy with no PF filter, a `metaPluginsConfig` drops the RDMA
    /// meta-plugin from the generated network.
    ///
    /// ## How to fix
    /// Rename the field to the declared one, or remove it; `kubectl explain
    /// <kind>.spec` lists the fields. Move a chart value to the chart's
    /// values (`helm install --set nfd.enabled=false`).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL010/fail/`:
    ///
    /// ```text
    /// error[ZL010]: `nfd` is a value of the gpu-operator helm chart, not a ClusterPolicy field: it deploys node feature discovery with the chart (`nfd.enabled`)
    ///  --> fail/clusterpolicy.yaml:7:3
    ///   |
    /// 7 |   nfd:
    ///   |   ^^^
    ///   = object: ClusterPolicy/cluster-policy
    ///   = help: remove it from the ClusterPolicy; set it in the values of the gpu-operator chart instead
    /// ```
    pub(crate) static UNKNOWN_FIELD = {
        id: "ZL010",
        name: "unknown-field",
        severity: Error,
        check: unknown_field,
    };
}

declare_lint! {
    /// A custom resource lacks a field its CRD requires.
    ///
    /// ## What it checks
    /// With `--crds DIR`, the `required` lists of the CRD schema (fields
    /// with a default are not required).
    ///
    /// ## Why it matters
    /// The API server rejects the object: a SriovNetworkNodePolicy without
    /// `nodeSelector` is never created, so no VFs appear.
    ///
    /// ## How to fix
    /// Add the field; the CRD's description (`kubectl explain`) says what it
    /// holds.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL011/fail/`:
    ///
    /// ```text
    /// error[ZL011]: `spec` lacks the required field `size`
    ///  --> fail/input.yaml:5:1
    ///   |
    /// 5 | spec:
    ///   | ^^^^
    ///   = object: Widget/w
    ///   = help: add `size` under `spec`
    /// ```
    pub(crate) static MISSING_REQUIRED_FIELD = {
        id: "ZL011",
        name: "missing-required-field",
        severity: Error,
        check: missing_required_field,
    };
}

declare_lint! {
    /// A custom resource field has a value its CRD rejects.
    ///
    /// ## What it checks
    /// With `--crds DIR`, types, enums, patterns, bounds and the other
    /// structural-schema constraints of the CRD.
    ///
    /// ## Why it matters
    /// The API server rejects the object, or (for a type mismatch produced by
    /// YAML, such as an unquoted `on`) it is not what was written.
    ///
    /// ## How to fix
    /// Use a value of the declared type within the declared set or range.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL012/fail/`:
    ///
    /// ```text
    /// error[ZL012]: "purple" is not one of "red", "green", "blue"
    ///  --> fail/input.yaml:7:3
    ///   |
    /// 7 |   color: purple
    ///   |   ^^^^^
    ///   = object: Widget/w
    ///   = help: use a value the CRD accepts (`kubectl explain` shows the type and allowed values)
    /// ```
    pub(crate) static INVALID_FIELD_VALUE = {
        id: "ZL012",
        name: "invalid-field-value",
        severity: Error,
        check: invalid_field_value,
    };
}

declare_lint! {
    /// A custom resource uses an API version its CRD does not serve.
    ///
    /// ## What it checks
    /// With `--crds DIR`, objects whose API group a CRD in `DIR` defines but
    /// whose version or kind none serves (for example `nvidia.com/v1alpha1`
    /// ClusterPolicy).
    ///
    /// ## Why it matters
    /// The API server answers "no matches for kind", and the object is never
    /// created.
    ///
    /// ## How to fix
    /// Use a served apiVersion (see `kubectl api-resources`), or install the
    /// CRD version that serves it.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL013/fail/`:
    ///
    /// ```text
    /// warning[ZL013]: example.com/v2 Widget is not served by the given CRDs
    ///  --> fail/input.yaml:1:1
    ///   |
    /// 1 | apiVersion: example.com/v2
    ///   | ^^^^^^^^^^
    ///   = object: Widget/w
    ///   = help: use apiVersion example.com/v1
    /// ```
    pub(crate) static UNSERVED_API_VERSION = {
        id: "ZL013",
        name: "unserved-api-version",
        severity: Warning,
        check: unserved_api_version,
    };
}

/// Runs `report` for each violation of `select`ed kinds.
fn each_violation(
    workspace: &Workspace<'_>,
    select: fn(&ViolationKind) -> bool,
    mut report: impl FnMut(&Object<'_>, &SchemaViolation),
) {
    let Some(catalog) = workspace.catalog else {
        return;
    };
    let violations = workspace.violations.get_or_init(|| {
        workspace
            .objects
            .iter()
            .map(|object| {
                if !catalog.knows(object.api_version, object.kind) {
                    return Vec::new();
                }
                catalog.validate(&object.node.to_json()).unwrap_or_default()
            })
            .collect()
    });
    for (object, violations) in workspace.objects.iter().zip(violations) {
        for violation in violations.iter().filter(|v| select(&v.kind)) {
            report(object, violation);
        }
    }
}

fn steps(path: &[PathSegment]) -> Vec<PathStep<'_>> {
    path.iter()
        .map(|segment| match segment {
            PathSegment::Key(key) => PathStep::Key(key),
            PathSegment::Index(index) => PathStep::Index(*index),
        })
        .collect()
}

/// The Helm chart value an unknown `spec.<key>` of an operator's resource
/// is, when it is one.
fn chart_value(object: &Object<'_>, path: &[PathSegment]) -> Option<&'static ChartOnlyValue> {
    let [PathSegment::Key(spec), PathSegment::Key(key)] = path else {
        return None;
    };
    if spec != "spec" || !matches!(object.group(), GPU_OPERATOR_GROUP | NETWORK_OPERATOR_GROUP) {
        return None;
    }
    chart_only_value(object.kind, key)
}

fn unknown_field(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_violation(
        workspace,
        |kind| matches!(kind, ViolationKind::UnknownField { .. }),
        |object, violation| {
            if let Some(value) = chart_value(object, &violation.path) {
                sink.report(
                    object,
                    &steps(&violation.path),
                    format!(
                        "`{}` is a value of the {} helm chart, not a {} field: it {}",
                        value.key, value.chart, value.kind, value.does
                    ),
                    Remediation::new(format!(
                        "remove it from the {}; set it in the values of the {} chart instead",
                        value.kind, value.chart
                    )),
                );
                return;
            }
            let fix = match &violation.kind {
                ViolationKind::UnknownField {
                    suggestion: Some(name),
                } => Remediation::new(format!("rename the field to `{name}`")),
                _ => Remediation::new(format!(
                    "remove the field; `kubectl explain {}` lists the declared fields",
                    object.kind.to_ascii_lowercase()
                )),
            };
            sink.report(
                object,
                &steps(&violation.path),
                violation.message.clone(),
                fix,
            );
        },
    );
}

fn missing_required_field(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_violation(
        workspace,
        |kind| matches!(kind, ViolationKind::MissingRequired { .. }),
        |object, violation| {
            let ViolationKind::MissingRequired { field } = &violation.kind else {
                return;
            };
            let at = steps(&violation.path);
            let parent = if at.is_empty() {
                "the object".to_owned()
            } else {
                format!("`{}`", display_path(&at))
            };
            let field = short(field);
            sink.report(
                object,
                &at,
                format!("{parent} lacks the required field `{field}`"),
                Remediation::new(format!("add `{field}` under {parent}")),
            );
        },
    );
}

fn invalid_field_value(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_violation(
        workspace,
        |kind| {
            !matches!(
                kind,
                ViolationKind::UnknownField { .. } | ViolationKind::MissingRequired { .. }
            )
        },
        |object, violation| {
            sink.report(
                object,
                &steps(&violation.path),
                violation.message.clone(),
                Remediation::new("use a value the CRD accepts (`kubectl explain` shows the type and allowed values)"),
            );
        },
    );
}

fn unserved_api_version(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    let Some(catalog) = workspace.catalog else {
        return;
    };
    // The served apiVersions by group and kind, gathered once rather than
    // every CRD compared with every object.
    let mut served_by_kind: HashMap<(&str, &str), Vec<&str>> = HashMap::new();
    for (api_version, kind) in catalog.kinds() {
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        served_by_kind
            .entry((group, kind))
            .or_default()
            .push(api_version);
    }
    for object in &workspace.objects {
        if catalog.knows(object.api_version, object.kind) {
            continue;
        }
        let served = served_by_kind
            .get(&(object.group(), object.kind))
            .map(Vec::as_slice)
            .unwrap_or_default();
        if object.group().is_empty() || served.is_empty() {
            continue;
        }
        sink.report(
            object,
            &[PathStep::Key("apiVersion")],
            format!(
                "{} {} is not served by the given CRDs",
                object.api_version, object.kind
            ),
            Remediation::new(format!("use apiVersion {}", served.join(" or "))),
        );
    }
}
