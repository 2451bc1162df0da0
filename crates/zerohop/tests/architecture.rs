//! The crates depend on each other only as `docs/architecture.md` allows:
//! its table of crates is read here and every workspace crate's normal and
//! build dependencies on other workspace crates are held to its row.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The table's rows: crate name → the workspace crates it may depend on.
fn allowed() -> BTreeMap<String, BTreeSet<String>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
    let text = std::fs::read_to_string(&path).expect("docs/architecture.md is readable");
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `| `zerohop-x` | owns | may depend on |` splits into five cells.
        let [_, name, _, may, _] = cells[..] else {
            continue;
        };
        let Some(name) = name.strip_prefix('`').and_then(|n| n.strip_suffix('`')) else {
            continue;
        };
        let deps = may
            .split(',')
            .map(str::trim)
            .filter(|dep| !dep.is_empty() && *dep != "—")
            .map(|dep| {
                if dep == "zerohop" {
                    dep.to_owned()
                } else {
                    format!("zerohop-{dep}")
                }
            })
            .collect();
        rows.insert(name.to_owned(), deps);
    }
    rows
}

/// The workspace's packages, as `cargo metadata` describes them.
fn packages() -> Vec<Value> {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--no-deps"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let Value::Array(packages) = metadata["packages"].take() else {
        panic!("cargo metadata lists no packages");
    };
    packages
}

/// Each workspace crate's normal and build dependencies on workspace crates.
fn actual() -> BTreeMap<String, BTreeSet<String>> {
    let packages = packages();
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|package| {
            let name = package["name"].as_str().expect("name").to_owned();
            let deps = package["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|dep| dep["kind"].as_str() != Some("dev"))
                .filter_map(|dep| dep["name"].as_str())
                .filter(|dep| members.contains(dep) && *dep != name)
                .map(str::to_owned)
                .collect();
            (name, deps)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_what_the_architecture_allows() {
    let allowed = allowed();
    assert!(
        allowed.contains_key("zerohop-core") && allowed.contains_key("zerohop"),
        "the table of docs/architecture.md was not found: {allowed:?}"
    );
    let mut problems = Vec::new();
    for (name, deps) in actual() {
        let Some(may) = allowed.get(&name) else {
            problems.push(format!("{name} has no row in docs/architecture.md"));
            continue;
        };
        for dep in deps.difference(may) {
            problems.push(format!(
                "{name} depends on {dep}, which its row does not allow"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_knowledge_leaf_depends_on_no_workspace_crate() {
    assert_eq!(allowed()["zerohop-known"], BTreeSet::new());
    assert_eq!(actual()["zerohop-known"], BTreeSet::new());
}

/// The test doubles (an in-memory API server with fault injection) must
/// never reach the released binary: no crate may depend on the testkit
/// other than for its tests.
#[test]
fn the_testkit_is_only_ever_a_development_dependency() {
    let packages = packages();
    let mut users = Vec::new();
    for package in &packages {
        for dep in package["dependencies"].as_array().expect("dependencies") {
            if dep["name"] == "zerohop-testkit" {
                users.push((
                    package["name"].as_str().expect("name").to_owned(),
                    dep["kind"].as_str().unwrap_or("normal").to_owned(),
                ));
            }
        }
    }
    assert!(
        users.iter().any(|(_, kind)| kind == "dev"),
        "no crate uses zerohop-testkit, so this test proves nothing: {users:?}"
    );
    let shipped: Vec<_> = users.iter().filter(|(_, kind)| kind != "dev").collect();
    assert!(
        shipped.is_empty(),
        "these crates depend on the test doubles outside their tests: {shipped:?}"
    );
}
