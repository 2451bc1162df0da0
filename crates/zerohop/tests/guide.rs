//! The contributor's guide (`docs/architecture.md`) stays true where a test
//! can tell: each kind of rule has its own declaration macro, every one of
//! them is the one the guide names, and every file and directory the guide
//! points to exists.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn guide() -> String {
    fs::read_to_string(repo().join("docs/architecture.md")).expect("docs/architecture.md")
}

/// The texts in backticks of `text`.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Every `macro_rules! declare_…` of the workspace's sources, by name, with
/// the files that define it.
fn declaration_macros() -> BTreeMap<String, Vec<PathBuf>> {
    fn walk(dir: &Path, out: &mut BTreeMap<String, Vec<PathBuf>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                for line in fs::read_to_string(&path).unwrap().lines() {
                    if let Some(rest) = line.trim().strip_prefix("macro_rules! declare_") {
                        let name = rest.trim_end_matches(|c: char| c == '{' || c.is_whitespace());
                        out.entry(format!("declare_{name}"))
                            .or_default()
                            .push(path.clone());
                    }
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(repo().join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            walk(&src, &mut out);
        }
    }
    out
}

#[test]
fn every_kind_of_rule_has_its_own_declaration_macro_named_in_the_guide() {
    let macros = declaration_macros();
    let mut problems = Vec::new();
    for (name, files) in &macros {
        if files.len() > 1 {
            problems.push(format!(
                "{name}! is defined {} times: {files:?}",
                files.len()
            ));
        }
    }
    let guide = guide();
    let named: BTreeSet<&str> = quoted(&guide)
        .into_iter()
        .filter_map(|text| text.rsplit("::").next())
        .filter_map(|text| text.strip_suffix('!'))
        .filter(|name| name.starts_with("declare_"))
        .collect();
    for name in macros.keys() {
        if !named.contains(name.as_str()) {
            problems.push(format!("{name}! is not in docs/architecture.md"));
        }
    }
    for name in &named {
        if !macros.contains_key(*name) {
            problems.push(format!(
                "docs/architecture.md names {name}!, which no crate defines"
            ));
        }
    }
    // The doctor's checks, lint's rules, plan's intent rules, validate's
    // judgements and the one they expand to.
    assert!(macros.len() >= 5, "{macros:?}");
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_path_the_guide_names_exists() {
    let guide = guide();
    let mut checked = 0;
    let mut missing = Vec::new();
    for text in quoted(&guide) {
        let is_path = ["crates/", "docs/", "examples/", ".ci/"]
            .iter()
            .any(|root| text.starts_with(root));
        // Patterns (`<ID>`, `corpus_*.rs`) and elisions name no one path.
        if !is_path || text.contains(['<', '*', '…', ' ']) {
            continue;
        }
        checked += 1;
        if !repo().join(text.trim_end_matches('/')).exists() {
            missing.push(text);
        }
    }
    assert!(checked >= 10, "only {checked} paths found in the guide");
    assert!(
        missing.is_empty(),
        "docs/architecture.md names missing paths: {missing:#?}"
    );
}
