//! `zerohop checks` and `zerohop explain` over every kind of rule: the
//! doctor's checks, lint's rules, plan's intent rules and validate's
//! judgements, one catalog in which an ID or a name finds one rule.

use std::collections::HashSet;
use std::process::{Command, Output};

fn zerohop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .output()
        .expect("run zerohop")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn ids_and_names_are_unique_across_every_kind_of_rule() {
    let out = zerohop(&["checks", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rules = json["rules"].as_array().expect("rules");
    let mut ids = HashSet::new();
    let mut names = HashSet::new();
    let mut groups = HashSet::new();
    for rule in rules {
        let id = rule["id"].as_str().expect("id");
        // `explain` finds a rule by ID or by name: either must name one.
        assert!(ids.insert(id), "id {id} twice");
        assert!(names.insert(rule["name"].as_str().expect("name")), "{id}");
        groups.insert(rule["group"].as_str().expect("group"));
    }
    for kind in ["kernel", "lint", "plan", "nccl"] {
        assert!(groups.contains(kind), "no {kind} rule in {groups:?}");
    }
}

#[test]
fn intent_rules_are_listed_and_explained() {
    let list = stdout(&zerohop(&["checks"]));
    assert!(list.contains("ZP001") && list.contains("ZP051"), "{list}");
    let out = zerohop(&["explain", "zp036"]);
    assert_eq!(out.status.code(), Some(0));
    let doc = stdout(&out);
    assert!(doc.starts_with("# ZP036 host-local-ipam\n"), "{doc}");
    for heading in [
        "## What it checks",
        "## Why it matters",
        "## How to fix",
        "## Example",
    ] {
        assert!(doc.contains(heading), "{heading} not in {doc}");
    }
    let by_name = stdout(&zerohop(&["explain", "unusable-nfs-nic"]));
    assert!(by_name.starts_with("# ZP041"), "{by_name}");
}

#[test]
fn a_refused_intent_names_the_rule_it_breaks() {
    let dir = tempfile::tempdir().expect("temp");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/cluster.yaml");
    let text = std::fs::read_to_string(example).expect("example").replacen(
        "ipam: whereabouts",
        "ipam: host-local",
        1,
    );
    let intent = dir.path().join("cluster.yaml");
    std::fs::write(&intent, text).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .arg("plan")
        .arg(&intent)
        .arg("-o")
        .arg(dir.path().join("out"))
        .output()
        .expect("run zerohop plan");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ipam host-local allocates from the same range on every node")
            && stderr.contains("[ZP036]"),
        "{stderr}"
    );
}
