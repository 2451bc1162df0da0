//! What one cluster is (`--scope`): a plain directory is one, a
//! kustomization directory is one, the files named on the command line are
//! one; objects that cannot meet (copies of one object, other namespaces)
//! raise no cross-object alarm.

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
fn a_plain_directory_is_one_cluster() {
    let root = tempfile::tempdir().unwrap();
    two_policies(root.path());
    // A guide's manifests are a directory applied with `kubectl apply -f`:
    // two ClusterPolicies in it are a defect of that one cluster (ZL022).
    assert_eq!(failing(Scope::Auto, &[root.path()]), vec!["ZL022"]);
    assert_eq!(failing(Scope::File, &[root.path()]), Vec::<String>::new());
    assert_eq!(failing(Scope::All, &[root.path()]), vec!["ZL022"]);
}

#[test]
fn copies_of_one_object_do_not_clash() {
    // The same ClusterPolicy in two files of a set is one object: the later
    // replaces the earlier when applied.
    let root = tempfile::tempdir().unwrap();
    fs::write(root.path().join("a.yaml"), cluster_policy("cluster-policy")).unwrap();
    fs::write(root.path().join("b.yaml"), cluster_policy("cluster-policy")).unwrap();
    assert_eq!(failing(Scope::Auto, &[root.path()]), Vec::<String>::new());
}

#[test]
fn a_pod_of_another_namespace_is_not_blamed_on_the_networks() {
    // The networks serve `ai-training`; a pod in `default`, naming a network
    // the directory does not define anywhere, was applied beside them, not
    // with them.
    let root = tempfile::tempdir().unwrap();
    fs::write(
        root.path().join("10-network.yaml"),
        "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: rail0\n  namespace: ai-training\nspec:\n  config: '{\"cniVersion\": \"1.0.0\", \"type\": \"macvlan\", \"name\": \"rail0\"}'\n",
    )
    .unwrap();
    let pod = |namespace: &str, network: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: {namespace}\n  annotations:\n    k8s.v1.cni.cncf.io/networks: {network}\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n"
        )
    };
    fs::write(root.path().join("20-pod.yaml"), pod("default", "other-net")).unwrap();
    assert_eq!(failing(Scope::Auto, &[root.path()]), Vec::<String>::new());
    // In the networks' namespace, a name they do not have is a defect.
    fs::write(root.path().join("20-pod.yaml"), pod("ai-training", "rail1")).unwrap();
    assert_eq!(failing(Scope::Auto, &[root.path()]), vec!["ZL050"]);
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
