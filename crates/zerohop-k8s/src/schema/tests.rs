//! Tests of the schema validator: hand-written CRDs for each rule, the real
//! operator CRDs from `../shared/reference/crds/` when present, and a
//! property test that no input panics.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// A small CRD exercising every rule the validator knows.
const FIXTURE_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [resourceName, numVfs, mode]
            properties:
              resourceName: {type: string, pattern: '^[a-zA-Z0-9_]+$', maxLength: 10}
              numVfs: {type: integer, minimum: 0, maximum: 128}
              priority: {type: integer, minimum: 0, maximum: 99, exclusiveMaximum: true}
              mode: {type: string, enum: [shared, exclusive], default: shared}
              size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              note: {type: string, nullable: true}
              ratio: {type: number}
              pfNames: {type: array, items: {type: string}, x-kubernetes-list-type: set, maxItems: 3}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              labels: {type: object, additionalProperties: {type: string}}
              config: {type: object, x-kubernetes-preserve-unknown-fields: true}
              template: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
              lookahead: {type: string, pattern: '^(?!forbidden).*$'}
              choice:
                type: object
                properties:
                  a: {type: string}
                  b: {type: string}
                oneOf: [{required: [a]}, {required: [b]}]
              notZero: {type: integer, not: {enum: [0]}}
  - name: v1beta1
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object}
"#;

fn fixture() -> CrdCatalog {
    let docs: Vec<Value> = serde_saphyr::from_multiple(FIXTURE_CRD).expect("fixture crd parses");
    CrdCatalog::from_documents(docs).expect("fixture crd loads")
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
}

fn report(catalog: &CrdCatalog, object: &Value) -> Vec<String> {
    catalog
        .validate(object)
        .expect("kind is known")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_valid_object_has_no_violations() {
    let object = widget(json!({
        "resourceName": "rdma_a", "numVfs": 8, "priority": 98, "size": "1Gi", "note": null, "ratio": 0.5,
        "pfNames": ["ens1f0", "ens1f1"], "ports": [{"name": "a", "port": 1}, {"name": "b"}],
        "labels": {"x": "y"}, "config": {"anything": {"goes": [1, 2]}},
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}},
        "lookahead": "forbidden-but-unchecked", "choice": {"a": "x"}, "notZero": 3,
    }));
    assert_eq!(report(&fixture(), &object), Vec::<String>::new());
}

#[test]
fn every_rule_reports_its_violation() {
    let object = widget(json!({
        "resourcename": "x", "resourceName": "has-hyphen-and-too-long", "numVfs": 129, "priority": 99,
        "mode": "both", "size": true, "ratio": "half", "pfNames": ["a", "a", "b", "c"],
        "ports": [{"name": "a"}, {"name": "a"}, {"port": 2}], "labels": {"x": 1},
        "template": {"kind": 3, "metdata": {}}, "choice": {"a": "x", "b": "y"}, "notZero": 0,
    }));
    insta::assert_debug_snapshot!(report(&fixture(), &object));
}

#[test]
fn required_fields_with_a_default_are_not_missing_and_nulls_are_pruned() {
    let object = widget(json!({"resourceName": "a", "numVfs": null, "note": null}));
    assert_eq!(
        report(&fixture(), &object),
        vec![r#"spec: missing required field "numVfs""#.to_owned()]
    );
}

#[test]
fn unknown_fields_carry_a_suggestion() {
    let object = widget(json!({"resourceName": "a", "numVfs": 1, "pfName": ["x"]}));
    let found = fixture().validate(&object).expect("known");
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].kind,
        ViolationKind::UnknownField {
            suggestion: Some("pfNames".to_owned())
        }
    );
    assert_eq!(display_path(&found[0].path), "spec.pfName");
    let object = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"resourceName": "a", "numVfs": 1}, "status": {}});
    assert_eq!(
        report(&fixture(), &object),
        vec![r#"status: unknown field "status""#.to_owned()]
    );
}

/// A CRD whose `v1` has the status subresource and `v2` does not, with a
/// date-time and a date.
const STATUS_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: &schema
        type: object
        properties:
          spec:
            type: object
            properties:
              since: {type: string, format: date-time}
              day: {type: string, format: date}
          status:
            type: object
            required: [state]
            properties:
              state: {type: string, enum: [ready]}
              count: {type: integer}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema: *schema
"#;

fn gadgets() -> CrdCatalog {
    let docs: Vec<Value> = serde_saphyr::from_multiple(STATUS_CRD).expect("status crd parses");
    CrdCatalog::from_documents(docs).expect("status crd loads")
}

#[test]
fn a_status_the_server_resets_is_checked_for_unknown_fields_only() {
    let status = json!({"count": "many", "state": "gone", "extra": 1});
    let gadget = |version: &str| {
        json!({"apiVersion": format!("example.com/{version}"), "kind": "Gadget",
               "metadata": {"name": "g"}, "status": status})
    };
    // With the subresource the server resets status before validating
    // (kube-apiserver v1.37 admits a wrong type, a missing required field
    // and an enum violation there, zerohop-lint `server_verdicts.rs`) but
    // refuses the unknown field while decoding under strict validation.
    assert_eq!(
        report(&gadgets(), &gadget("v1")),
        vec![r#"status.extra: unknown field "extra""#.to_owned()]
    );
    // Without it status is a field like any other.
    assert_eq!(report(&gadgets(), &gadget("v2")).len(), 3);
}

#[test]
fn dates_are_checked_as_the_server_checks_them() {
    let gadget = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec});
    // kube-apiserver v1.37 (kube-openapi `strfmt.IsDateTime` and `IsDate`)
    // admits these (the fraction after any character, a lowercase `t` and
    // `z`), as a dry run of this CRD showed …
    for (since, day) in [
        ("2026-01-31T12:00:00Z", "2024-02-29"),
        ("2026-01-31t23:59:59.123456+05:30", "2000-02-29"),
        ("2026-12-01T00:00:00-01:00", "2026-12-31"),
        ("2026-12-01T00:00:00x5z", "0000-01-01"),
    ] {
        let object = gadget(json!({"since": since, "day": day}));
        assert_eq!(
            report(&gadgets(), &object),
            Vec::<String>::new(),
            "{since} {day}"
        );
    }
    // … and refuse these: no zone, a space for `T`, hour 24, a date that
    // does not exist, one digit too few.
    for (since, day) in [
        ("2026-01-31T12:00:00", "2023-02-29"),
        ("2026-01-31 12:00:00Z", "1900-02-29"),
        ("2026-01-31T24:00:00Z", "2026-04-31"),
        ("2026-1-31T12:00:00Z", "2026-13-01"),
        ("the day before yesterday", "2026-01-1"),
    ] {
        let object = gadget(json!({"since": since, "day": day}));
        assert_eq!(report(&gadgets(), &object).len(), 2, "{since} {day}");
    }
}

#[test]
fn top_level_metadata_is_object_meta_even_when_the_schema_says_object() {
    let object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "Not_DNS", "labels": {"ok": "yes"}, "annotation": {}},
        "spec": {"resourceName": "a", "numVfs": 1}});
    insta::assert_debug_snapshot!(report(&fixture(), &object));
}

#[test]
fn unknown_kinds_and_unserved_versions_are_errors() {
    let catalog = fixture();
    assert!(catalog.knows("example.com/v1", "Widget"));
    assert!(!catalog.knows("example.com/v1beta1", "Widget"));
    let err = catalog
        .validate(&json!({"apiVersion": "example.com/v1beta1", "kind": "Widget"}))
        .expect_err("unserved");
    assert_eq!(
        err.to_string(),
        r#"no customresourcedefinition known for apiVersion "example.com/v1beta1" kind "Widget""#
    );
    assert!(catalog.validate(&json!([1, 2])).is_err());
    assert!(catalog.validate(&json!({"kind": "Widget"})).is_err());
}

#[test]
fn patterns_the_regex_crate_cannot_compile_are_listed_as_skipped() {
    let catalog = fixture();
    let skipped: Vec<String> = catalog.skipped().iter().map(ToString::to_string).collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(
        skipped[0].starts_with(r#"widgets.example.com: pattern "^(?!forbidden).*$" not checked: "#),
        "{skipped:?}"
    );
}

#[test]
fn ecma_digit_class_is_ascii() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "ds.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "D"}, "versions": [{"name": "v1", "served": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"n": {"type": "string", "pattern": "^\\d+$"}}}}}]}});
    let catalog = CrdCatalog::from_documents([crd]).expect("loads");
    let object = json!({"apiVersion": "example.com/v1", "kind": "D", "n": "١٢"});
    assert_eq!(catalog.validate(&object).expect("known").len(), 1);
}

#[test]
fn malformed_crds_are_load_errors_and_other_documents_are_skipped() {
    let broken = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x"}, "spec": {}});
    let err = CrdCatalog::from_documents([broken]).expect_err("no group");
    assert_eq!(
        err.to_string(),
        r#"invalid customresourcedefinition "x": spec.group is missing"#
    );
    let catalog = CrdCatalog::from_documents([
        json!({"apiVersion": "v1", "kind": "ConfigMap"}),
        json!(null),
        json!(3),
    ])
    .expect("skipped");
    assert_eq!(catalog.kinds().count(), 0);
}

#[test]
fn crds_inside_a_list_are_loaded_and_counted() {
    // `kubectl get crd -o yaml` writes one `kind: List` whose items are the
    // CRDs; `CustomResourceDefinitionList` is what the API itself returns.
    let crd: Value = serde_saphyr::from_str(FIXTURE_CRD).expect("fixture crd parses");
    for kind in ["List", "CustomResourceDefinitionList"] {
        let list =
            json!({"apiVersion": "v1", "kind": kind, "metadata": {}, "items": [crd.clone()]});
        let catalog = CrdCatalog::from_documents([list]).expect("list loads");
        assert!(catalog.knows("example.com/v1", "Widget"), "{kind}");
        assert_eq!(catalog.crd_count(), 1, "{kind}");
    }
    // A list of other objects, or a list in a list, holds no CRD.
    let nested = json!({"kind": "List", "items": [{"kind": "List", "items": [crd]}]});
    let catalog = CrdCatalog::from_documents([nested]).expect("skipped");
    assert_eq!(catalog.crd_count(), 0);
}

#[test]
fn load_dir_reports_unreadable_and_unparsable_files() {
    let err = CrdCatalog::load_dir(Path::new("/nonexistent/zerohop")).expect_err("missing dir");
    assert!(
        err.to_string()
            .starts_with("cannot read /nonexistent/zerohop: "),
        "{err}"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("widget.yaml"), FIXTURE_CRD).expect("write");
    std::fs::write(dir.path().join("notes.md"), "not: [yaml").expect("write");
    let catalog = CrdCatalog::load_dir(dir.path()).expect("loads");
    assert!(catalog.knows("example.com/v1", "Widget"));
    std::fs::write(dir.path().join("broken.json"), "{").expect("write");
    let err = CrdCatalog::load_dir(dir.path()).expect_err("bad json");
    assert!(err.to_string().contains("broken.json"), "{err}");
}

// ---- the real operator CRDs ------------------------------------------------

/// `../shared/reference`, when its `crds/` are there; `None` (skipped
/// visibly) in a clone without any `../shared`, a failure in CI.
fn reference() -> Option<PathBuf> {
    zerohop_testkit::shared_data::shared_dir("reference/crds")?;
    zerohop_testkit::shared_data::reference()
}

fn real_catalog(reference: &Path) -> CrdCatalog {
    CrdCatalog::load_dir(&reference.join("crds")).expect("the reference crds load")
}

fn sample(reference: &Path, relative: &str) -> Value {
    let path = reference.join("samples").join(relative);
    let text = std::fs::read_to_string(&path).expect("sample readable");
    if relative.ends_with(".json") {
        serde_json::from_str(&text).expect("sample json")
    } else {
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("sample yaml");
        docs.into_iter().next().expect("one document")
    }
}

#[test]
fn real_crds_load_with_every_kind_the_planner_needs() {
    let Some(reference) = reference() else { return };
    let catalog = real_catalog(&reference);
    for (api_version, kind) in [
        ("mellanox.com/v1alpha1", "NicClusterPolicy"),
        ("nvidia.com/v1", "ClusterPolicy"),
        ("sriovnetwork.openshift.io/v1", "SriovNetworkNodePolicy"),
        ("sriovnetwork.openshift.io/v1", "SriovNetwork"),
        ("sriovnetwork.openshift.io/v1", "SriovIBNetwork"),
        ("sriovnetwork.openshift.io/v1", "SriovNetworkPoolConfig"),
        ("sriovnetwork.openshift.io/v1", "SriovOperatorConfig"),
        ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"),
        ("machineconfiguration.openshift.io/v1", "MachineConfig"),
        ("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule"),
    ] {
        assert!(catalog.knows(api_version, kind), "{api_version} {kind}");
    }
    // Every pattern in today's CRDs compiles.
    assert_eq!(catalog.skipped(), &[] as &[SkippedConstraint]);
}

#[test]
fn real_samples_known_good_validate_cleanly() {
    let Some(reference) = reference() else { return };
    let catalog = real_catalog(&reference);
    for relative in [
        "network-operator/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml",
        "network-operator/alm-examples.NicClusterPolicy.nic-cluster-policy.json",
        "network-operator/sriov-network/sriov-network-node-policy-legacy.yaml",
        "network-operator/sriov-network/sriov-network.yaml",
        "gpu-operator/alm-examples.ClusterPolicy.gpu-cluster-policy.json",
        "machine-config-operator/sriov-config-service.machineconfig.yaml",
        "machine-config-operator/from-docs/cloud-native-docs_openshift-virtualization__iommu_L166-179.yaml",
    ] {
        let object = sample(&reference, relative);
        let found: Vec<String> = catalog
            .validate(&object)
            .expect("known kind")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(found, Vec::<String>::new(), "{relative}");
    }
}

#[test]
fn real_samples_known_wrong_are_caught() {
    let Some(reference) = reference() else { return };
    let catalog = real_catalog(&reference);
    let cases = [
        (
            "sriov-network-operator/from-docs/basic-examples__block01_L42-57.yaml",
            "pfName",
            Some("pfNames"),
        ),
        (
            "sriov-network-operator/from-docs/sriov-network-api__block02_L58-87.yaml",
            "metaPluginsConfig",
            Some("metaPlugins"),
        ),
    ];
    for (relative, field, suggestion) in cases {
        let found = catalog
            .validate(&sample(&reference, relative))
            .expect("known kind");
        let hit = found
            .iter()
            .find(|v| v.path.last() == Some(&PathSegment::Key(field.to_owned())));
        let hit = hit.unwrap_or_else(|| panic!("{relative}: {field} not reported in {found:?}"));
        assert_eq!(
            hit.kind,
            ViolationKind::UnknownField {
                suggestion: suggestion.map(str::to_owned)
            },
            "{relative}"
        );
    }
    let policy = sample(
        &reference,
        "network-operator/sriov-network/infiniband/sriov-network-node-policy.yaml",
    );
    let found: Vec<String> = catalog
        .validate(&policy)
        .expect("known")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        found.contains(&r#"spec: missing required field "nodeSelector""#.to_owned()),
        "{found:?}"
    );
}

#[test]
fn real_schema_rules_bite() {
    let Some(reference) = reference() else { return };
    let catalog = real_catalog(&reference);
    let policy = json!({"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
        "metadata": {"name": "rail0", "namespace": "nvidia-network-operator"},
        "spec": {"resourceName": "rail0", "nodeSelector": {"a": "b"}, "numVfs": -1, "priority": 100,
                 "deviceType": "vfio", "nicSelector": {"pfNames": ["ens1f0"]}, "isRdma": "true"}});
    insta::assert_debug_snapshot!(report(&catalog, &policy));
}

// ---- no input panics -------------------------------------------------------

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-zA-Z0-9_./-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        let keys = prop_oneof![
            Just("spec".to_owned()),
            Just("metadata".to_owned()),
            Just("name".to_owned()),
            Just("labels".to_owned()),
            Just("numVfs".to_owned()),
            Just("nicSelector".to_owned()),
            Just("driver".to_owned()),
            "[a-zA-Z]{1,8}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(keys, inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn with_kind(api_version: &str, kind: &str, body: Value) -> Value {
    let mut object = match body {
        Value::Object(map) => map,
        other => [("spec".to_owned(), other)].into_iter().collect(),
    };
    object.insert("apiVersion".to_owned(), json!(api_version));
    object.insert("kind".to_owned(), json!(kind));
    Value::Object(object)
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_json(body in arbitrary_json()) {
        let catalog = fixture();
        let _ = catalog.validate(&body);
        let _ = catalog.validate(&with_kind("example.com/v1", "Widget", body));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn never_panics_on_real_crds(body in arbitrary_json()) {
        let Some(reference) = reference() else { return Ok(()) };
        static CATALOG: std::sync::OnceLock<CrdCatalog> = std::sync::OnceLock::new();
        let catalog = CATALOG.get_or_init(|| real_catalog(&reference));
        for (api_version, kind) in [("sriovnetwork.openshift.io/v1", "SriovNetworkNodePolicy"), ("nvidia.com/v1", "ClusterPolicy"), ("mellanox.com/v1alpha1", "NicClusterPolicy")] {
            let _ = catalog.validate(&with_kind(api_version, kind, body.clone()));
        }
    }
}
