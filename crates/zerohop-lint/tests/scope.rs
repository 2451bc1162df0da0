//! What one cluster is (`--scope`): a folder of unrelated examples is not
//! merged into one cluster, a kustomization directory is one, the files
//! named on the command line are one.

use std::fs;
use std::path::Path;

use zerohop_k8s::yaml::Limits;
use zerohop_lint::{Batch, MAX_HELD_BYTES, Options, Scope, lint_batch};

fn cluster_policy(name: &str) -> String {
    format!(
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: {name}\nspec:\n  driver:\n    enabled: true\n"
    )
}

/// Two ClusterPolicies, one per file, in `dir`.
fn two_policies(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("a.yaml"), cluster_policy("policy-a")).unwrap();
    fs::write(dir.join("b.yaml"), cluster_policy("policy-b")).unwrap();
}

/// The rule IDs of the failing findings when `paths` are linted in `scope`.
fn failing(scope: Scope, paths: &[&Path]) -> Vec<String> {
    let mut batch = Batch::new(Limits::default(), MAX_HELD_BYTES).with_scope(scope);
    for path in paths {
        batch.add_path(path).expect("paths exist");
    }
    lint_batch(&batch, &Options::default())
        .findings
        .into_iter()
        .filter(|f| f.status == zerohop_core::Status::Fail)
        .map(|f| f.id)
        .collect()
}

#[test]
fn a_folder_of_examples_is_one_cluster_per_file() {
    let root = tempfile::tempdir().unwrap();
    two_policies(root.path());
    // Two ClusterPolicies are a defect in one cluster (ZL022), not in two
    // examples side by side.
    assert_eq!(failing(Scope::Auto, &[root.path()]), Vec::<String>::new());
    assert_eq!(failing(Scope::File, &[root.path()]), Vec::<String>::new());
    assert_eq!(failing(Scope::All, &[root.path()]), vec!["ZL022"]);
}

#[test]
fn a_kustomization_directory_is_one_cluster() {
    let root = tempfile::tempdir().unwrap();
    let deploy = root.path().join("deploy");
    two_policies(&deploy.join("gpu"));
    fs::write(
        deploy.join("kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- gpu/a.yaml\n- gpu/b.yaml\n",
    )
    .unwrap();
    // Beside it, an example with a third policy stays apart.
    fs::write(root.path().join("example.yaml"), cluster_policy("example")).unwrap();
    assert_eq!(failing(Scope::Auto, &[root.path()]), vec!["ZL022"]);
    assert_eq!(failing(Scope::File, &[root.path()]), Vec::<String>::new());
}

#[test]
fn files_named_on_the_command_line_are_one_cluster() {
    let root = tempfile::tempdir().unwrap();
    two_policies(root.path());
    let a = root.path().join("a.yaml");
    let b = root.path().join("b.yaml");
    assert_eq!(failing(Scope::Auto, &[&a, &b]), vec!["ZL022"]);
    assert_eq!(failing(Scope::File, &[&a, &b]), Vec::<String>::new());
}
