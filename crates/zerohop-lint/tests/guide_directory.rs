//! A guide's manifests are a plain directory of numbered files, one object
//! each, applied with `kubectl apply -f DIR`: `zerohop lint DIR` runs the
//! cross-object rules over them as one set, without a kustomization.
//!
//! Each case takes a rule's failing fixture, writes every document to a
//! file of its own in a fresh directory (`10-<kind>.yaml`, `20-…`), and
//! lints the directory as the command line does.

use std::fs;
use std::path::{Path, PathBuf};

use zerohop_k8s::schema::CrdCatalog;
use zerohop_k8s::yaml::Limits;
use zerohop_lint::{Batch, MAX_HELD_BYTES, Options, Scope, lint_batch};

fn fixture(id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(id)
        .join("fail")
}

/// The documents of the fixture's YAML files, in file order: the text
/// between `---` lines, comments and blank documents left out.
fn documents(dir: &Path) -> Vec<String> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    let mut docs = Vec::new();
    for path in paths {
        let text = fs::read_to_string(path).unwrap();
        let mut current = String::new();
        for line in text.lines().chain(std::iter::once("---")) {
            if line.trim_end() == "---" {
                if current
                    .lines()
                    .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
                {
                    docs.push(std::mem::take(&mut current));
                }
                current.clear();
            } else {
                current.push_str(line);
                current.push('\n');
            }
        }
    }
    docs
}

/// Whether rule `id` fires when its fixture's documents, one per file, are
/// linted as `zerohop lint DIR` does (`Scope::Auto`), or file by file
/// (`Scope::File`).
fn fired(id: &str, scope: Scope) -> bool {
    let docs = documents(&fixture(id));
    assert!(
        docs.len() > 1,
        "{id}: a cross-object fixture has several objects"
    );
    let dir = tempfile::tempdir().unwrap();
    for (index, doc) in docs.iter().enumerate() {
        fs::write(dir.path().join(format!("{}0-object.yaml", index + 1)), doc).unwrap();
    }
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds");
    let options = Options {
        catalog: Some(CrdCatalog::load_dir(&crds).expect("fixture crds")),
        ..Options::default()
    };
    let mut batch = Batch::new(Limits::default(), MAX_HELD_BYTES).with_scope(scope);
    batch.add_path(dir.path()).expect("directory");
    lint_batch(&batch, &options)
        .findings
        .iter()
        .any(|finding| finding.id == id)
}

#[test]
fn cross_object_rules_see_a_guides_directory_as_one_set() {
    // VF selector against the policies' VFs, an IB policy used by an
    // Ethernet network, a resource advertised twice, the boot-time mount
    // against the containerised driver, a resource under the prefix the
    // OpenShift operator gives it.
    for id in ["ZL042", "ZL044", "ZL037", "ZL075", "ZL051"] {
        assert!(fired(id, Scope::Auto), "{id}: not found in the directory");
        assert!(!fired(id, Scope::File), "{id}: found in one file alone");
    }
}

/// Whether ZL054 fires on its failing fixture in a directory beside a
/// `README.md` of `readme`.
fn whereabouts_missing_beside(readme: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture("ZL054").join("input.yaml");
    fs::copy(&fixture, dir.path().join("40-networks.yaml")).unwrap();
    fs::write(dir.path().join("README.md"), readme).unwrap();
    let mut batch = Batch::new(Limits::default(), MAX_HELD_BYTES).with_scope(Scope::Auto);
    batch.add_path(dir.path()).expect("directory");
    lint_batch(&batch, &Options::default())
        .findings
        .iter()
        .any(|finding| finding.id == "ZL054")
}

#[test]
fn a_readme_that_installs_whereabouts_installs_it_for_the_set() {
    // `zerohop plan` installs whereabouts on Kubernetes with its own
    // manifests, applied by the README's command (whereabouts' README, tag
    // v0.9.4): the set then installs what its networks use.
    let installs = "```sh\nkubectl apply -f https://raw.githubusercontent.com/k8snetworkplumbingwg/whereabouts/v0.9.4/doc/crds/daemonset-install.yaml\n```\n";
    assert!(!whereabouts_missing_beside(installs));
    // A README that only mentions it installs nothing.
    assert!(whereabouts_missing_beside(
        "# Networks\nUses whereabouts.\n"
    ));
}
