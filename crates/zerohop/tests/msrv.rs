//! The minimum supported Rust version (`rust-version` in the workspace's
//! `Cargo.toml`) holds for every crate the binary builds.
//!
//! Only one toolchain can be installed where CI runs, so the check is made
//! from what the toolchain knows: every dependency reachable through normal
//! and build edges declares a `rust-version` no newer than ours (cargo's
//! resolver does not enforce that on a committed `Cargo.lock`), and clippy,
//! which CI runs with `-D warnings`, reads the same `rust-version` and
//! rejects standard-library items newer than it (`incompatible_msrv`).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::process::Command;

use serde_json::Value;

/// `1.88` as `[1, 88, 0]`, so that `1.88` and `1.88.0` compare equal.
fn version(text: &str) -> [u32; 3] {
    let mut parts = text.split('.').map(|part| part.parse().unwrap_or(0));
    [(); 3].map(|()| parts.next().unwrap_or(0))
}

#[test]
fn no_dependency_needs_a_newer_rust_than_the_workspace_declares() {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let packages: HashMap<&str, &Value> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().expect("id"), p))
        .collect();
    let ours = version(env!("CARGO_PKG_RUST_VERSION"));
    assert!(ours >= version("1.88"), "let chains in the code need 1.88");

    let nodes: HashMap<&str, &Value> = metadata["resolve"]["nodes"]
        .as_array()
        .expect("resolve")
        .iter()
        .map(|n| (n["id"].as_str().expect("id"), n))
        .collect();
    let mut queue: VecDeque<&str> = metadata["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut seen = BTreeSet::new();
    let mut too_new = Vec::new();
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id) {
            continue;
        }
        let package = packages[id];
        if let Some(needed) = package["rust_version"].as_str()
            && version(needed) > ours
        {
            too_new.push(format!(
                "{} {} needs {needed}",
                package["name"], package["version"]
            ));
        }
        for dep in nodes[id]["deps"].as_array().into_iter().flatten() {
            let built = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|kind| kind["kind"].as_str() != Some("dev"));
            if built {
                queue.push_back(dep["pkg"].as_str().expect("pkg"));
            }
        }
    }
    assert!(
        seen.len() > 20,
        "the dependency graph was read: {}",
        seen.len()
    );
    assert!(
        too_new.is_empty(),
        "rust-version {} is older than these dependencies need: {too_new:?}",
        env!("CARGO_PKG_RUST_VERSION")
    );
}
