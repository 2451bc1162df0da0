//! `--crds DIR` never validates against nothing without saying so: the CRDs
//! of a `kind: List` (what `kubectl get crd -o yaml` writes) are read, and a
//! directory holding no CRD is an error.
//!
//! The list is built at run time from the upstream CRDs of
//! `../shared/reference/crds`, read in place: the same CRDs, one file, the
//! shape `kubectl` gives them.

use std::fs;
use std::path::{Path, PathBuf};

use zerohop_k8s::yaml::{self, Limits};
use zerohop_lint::{Input, Options, lint, load_crds};

/// The reference CRD directory, or `None` (skipped visibly) on a clone
/// without any `../shared`; CI fails when it is missing.
fn reference_crds() -> Option<PathBuf> {
    zerohop_testkit::shared_data::shared_dir("reference/crds")
}

/// Every document of the `*.yaml` files of `dir`, as JSON, in name order.
fn documents(dir: &Path) -> Vec<serde_json::Value> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    let mut docs = Vec::new();
    for path in paths {
        let text = fs::read_to_string(&path).unwrap();
        let nodes = yaml::load_str(&text, &Limits::default()).unwrap();
        docs.extend(
            nodes
                .iter()
                .map(yaml::Node::to_json)
                .filter(|doc| !doc.is_null()),
        );
    }
    docs
}

/// `kubectl get crd -o yaml`'s shape: one `v1` `List` whose items are the
/// objects (each item written as a JSON flow mapping, which YAML reads).
fn as_list(docs: &[serde_json::Value]) -> String {
    let mut text =
        String::from("apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n");
    for doc in docs {
        text.push_str("- ");
        text.push_str(&doc.to_string());
        text.push('\n');
    }
    text
}

/// The schema findings (ZL01x) of linting `input` against `dir`'s CRDs.
fn schema_findings(dir: &Path, input: &Input) -> (usize, Vec<String>) {
    let catalog = load_crds(dir, &Limits::default()).expect("crds load");
    let count = catalog.crd_count();
    let options = Options {
        catalog: Some(catalog),
        ..Options::default()
    };
    let findings = lint(std::slice::from_ref(input), &options)
        .findings
        .into_iter()
        .filter(|f| f.id.starts_with("ZL01"))
        .map(|f| format!("{} {}", f.id, f.message))
        .collect();
    (count, findings)
}

#[test]
fn a_list_of_crds_validates_as_the_files_do() {
    let Some(reference) = reference_crds() else {
        return;
    };
    let docs = documents(&reference);
    let listed = tempfile::tempdir().unwrap();
    fs::write(listed.path().join("crds.yaml"), as_list(&docs)).unwrap();

    // A NicClusterPolicy and a SriovNetworkNodePolicy with wrong fields: the
    // same findings from the files and from their list.
    let wrong = Input {
        name: "wrong.yaml".into(),
        content: Ok(b"apiVersion: mellanox.com/v1alpha1
kind: NicClusterPolicy
metadata:
  name: nic-cluster-policy
spec:
  ofedDriver:
    image: doca-driver
    repository: nvcr.io/nvidia/mellanox
    version: 25.04
    startupProbe: {initialDelaySeconds: ten}
  unknownComponent: {}
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: rail0
  namespace: nvidia-network-operator
spec:
  resourceName: rail0
  numVfs: 300
  deviceType: netdev
  nicSelector: {pfNames: [ens1f0]}
  nodeSelector: {a: b}
"
        .to_vec()),
    };
    let (from_files, by_files) = schema_findings(&reference, &wrong);
    let (from_list, by_list) = schema_findings(listed.path(), &wrong);
    assert!(by_files.len() >= 3, "{by_files:#?}");
    assert_eq!(by_list, by_files);
    assert_eq!(from_list, from_files);
    assert_eq!(
        from_files,
        docs.iter()
            .filter(|d| d["kind"] == "CustomResourceDefinition")
            .count()
    );
}

#[test]
fn a_directory_without_crds_is_an_error() {
    let empty = tempfile::tempdir().unwrap();
    let err = load_crds(empty.path(), &Limits::default()).expect_err("empty");
    assert!(err.contains("no CustomResourceDefinition"), "{err}");

    // Objects that are not CRDs, and an empty list, are no CRDs either.
    fs::write(
        empty.path().join("objects.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: List\nitems: []\n",
    )
    .unwrap();
    let err = load_crds(empty.path(), &Limits::default()).expect_err("no crds");
    assert!(err.contains("no CustomResourceDefinition"), "{err}");
}
