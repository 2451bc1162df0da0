//! The registry's invariants, and every rule against its fixtures:
//! `tests/fixtures/<ID>/fail/` must trigger the rule (the rendered findings
//! are snapshotted), `tests/fixtures/<ID>/pass/` must not.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use zerohop_core::render::{snippet, without_styles};
use zerohop_core::{Report, RuleInfo};
use zerohop_k8s::schema::CrdCatalog;
use zerohop_k8s::yaml::Limits;
use zerohop_lint::{Input, Options, RULES, lint, rules};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[test]
fn ids_are_unique_well_formed_and_in_order() {
    let all: Vec<&RuleInfo> = rules().collect();
    let problems = RuleInfo::registry_problems(&all, &["ZL"]);
    assert!(problems.is_empty(), "{problems:#?}");
    let ids: Vec<&str> = all.iter().map(|rule| rule.id).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "RULES must be in ID order");
    for rule in all {
        assert_eq!(rule.group, "lint");
    }
}

#[test]
fn every_rule_is_documented_with_the_required_headings() {
    let problems: Vec<String> = rules()
        .flat_map(|rule| rule.documentation_problems())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn no_fixture_directory_is_orphaned() {
    let ids: HashSet<&str> = rules().map(|rule| rule.id).collect();
    for entry in fs::read_dir(fixtures()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            name == "crds" || ids.contains(name.as_str()),
            "fixture {name} has no rule"
        );
    }
}

/// The inputs of a fixture directory, read as `zerohop lint DIR` reads
/// them (symlinks leaving it are skipped), named `<case>/<file>` so that
/// snapshots do not depend on where the repository is checked out.
fn inputs(dir: &Path) -> Vec<Input> {
    let base = dir.parent().expect("fixture case directory");
    let mut inputs = Vec::new();
    zerohop_lint::inputs::search(dir, true, Limits::default().max_bytes, &mut |mut input| {
        let relative = Path::new(&input.name)
            .strip_prefix(base)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| PathBuf::from(&input.name));
        input.name = relative.display().to_string();
        inputs.push(input);
        Ok::<(), ()>(())
    })
    .expect("fixture directory");
    assert!(!inputs.is_empty(), "{} is empty", dir.display());
    inputs
}

fn options() -> Options {
    Options {
        catalog: Some(CrdCatalog::load_dir(&fixtures().join("crds")).expect("fixture crds")),
        ..Options::default()
    }
}

/// Renders the findings of rule `id` the way `zerohop lint` shows them,
/// without colour.
fn render(id: &str, inputs: &[Input], findings: Vec<zerohop_core::Finding>) -> String {
    let loaded: Vec<_> = inputs
        .iter()
        .map(|input| zerohop_lint::load(input.clone(), &Limits::default()))
        .collect();
    let mut texts = zerohop_lint::texts(&loaded);
    let mine: Vec<_> = findings.into_iter().filter(|f| f.id == id).collect();
    let report = Report::new("lint", "fail", mine);
    let mut out = Vec::new();
    snippet::write(&report, &mut texts, &mut out).unwrap();
    without_styles(&String::from_utf8(out).unwrap())
}

#[test]
fn every_rule_fires_on_its_failing_fixture_and_not_on_its_passing_one() {
    let options = options();
    let mut problems = Vec::new();
    for rule in RULES {
        let id = rule.info.id;
        let dir = fixtures().join(id);
        let fail = inputs(&dir.join("fail"));
        let outcome = lint(&fail, &options);
        if !outcome.findings.iter().any(|f| f.id == id) {
            problems.push(format!("{id}: no finding on fail/"));
        }
        insta::assert_snapshot!(
            format!("{id}-{}", rule.info.name),
            render(id, &fail, outcome.findings)
        );

        let pass = inputs(&dir.join("pass"));
        let outcome = lint(&pass, &options);
        let wrong: Vec<_> = outcome
            .findings
            .iter()
            .filter(|f| f.id == id)
            .map(|f| &f.message)
            .collect();
        if !wrong.is_empty() {
            problems.push(format!("{id}: findings on pass/: {wrong:?}"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_example_shows_what_the_failing_fixture_gives() {
    // The documentation shows the failing fixture's real findings, so that
    // a changed message cannot leave a stale example behind.
    let options = options();
    for rule in RULES {
        let id = rule.info.id;
        let shown = *rule
            .info
            .example_blocks()
            .first()
            .unwrap_or_else(|| panic!("{id}: no ```text block under ## Example"));
        let fail = inputs(&fixtures().join(id).join("fail"));
        let given = render(id, &fail, lint(&fail, &options).findings);
        assert!(
            given.contains(shown),
            "{id}: the example shows\n{shown}\nbut fail/ gives\n{given}"
        );
    }
}

#[test]
fn passing_fixtures_have_no_problems_at_all() {
    // A passing fixture is a correct manifest: no rule at all may fail on it,
    // which keeps the fixtures honest examples of what to write.
    let options = options();
    for rule in RULES {
        let pass = inputs(&fixtures().join(rule.info.id).join("pass"));
        let outcome = lint(&pass, &options);
        let failed: Vec<_> = outcome
            .findings
            .iter()
            .filter(|f| f.status == zerohop_core::Status::Fail)
            .map(|f| format!("{} {}", f.id, f.message))
            .collect();
        assert!(failed.is_empty(), "{}/pass: {failed:?}", rule.info.id);
    }
}

#[test]
fn severity_overrides_regrade_findings() {
    let fail = inputs(&fixtures().join("ZL030").join("fail"));
    let mut options = options();
    options
        .overrides
        .insert("ZL030".to_owned(), zerohop_core::Severity::Info);
    let outcome = lint(&fail, &options);
    let finding = outcome
        .findings
        .iter()
        .find(|f| f.id == "ZL030")
        .expect("finding");
    assert_eq!(finding.status, zerohop_core::Status::Info);
    assert_eq!(finding.severity, zerohop_core::Severity::Info);
}

#[test]
fn findings_carry_location_object_and_fix() {
    let fail = inputs(&fixtures().join("ZL020").join("fail"));
    let outcome = lint(&fail, &options());
    let finding = outcome
        .findings
        .iter()
        .find(|f| f.id == "ZL020")
        .expect("finding");
    let location = finding.location.as_ref().expect("location");
    assert_eq!(
        (location.file.as_str(), location.line, location.column),
        ("fail/input.yaml", 8, 5)
    );
    let object = finding.object.as_ref().expect("object");
    assert_eq!(
        (object.kind.as_str(), object.name.as_str()),
        ("ClusterPolicy", "cluster-policy")
    );
    assert!(finding.remediation.is_some());
    assert_eq!(finding.subject, "spec.driver.useOpenKernelModules");
    assert!(RuleInfo::is_message_fragment(&finding.message));
}

#[test]
fn messages_are_lowercase_fragments() {
    let options = options();
    for rule in RULES {
        let fail = inputs(&fixtures().join(rule.info.id).join("fail"));
        for finding in lint(&fail, &options).findings {
            assert!(
                RuleInfo::is_message_fragment(&finding.message),
                "{}: {:?}",
                finding.id,
                finding.message
            );
        }
    }
}

#[test]
fn a_fixture_directory_is_one_set_as_the_command_line_reads_it() {
    // `zerohop lint DIR` on a plain directory (no kustomization) runs the
    // cross-object rules over all its files, as `kubectl apply -f DIR`
    // applies them: every failing fixture, several files for the rules that
    // look across objects, fails when its directory is named.
    let options = options();
    let mut problems = Vec::new();
    for rule in RULES {
        let id = rule.info.id;
        let mut batch = zerohop_lint::Batch::new(Limits::default(), zerohop_lint::MAX_HELD_BYTES);
        batch
            .add_path(&fixtures().join(id).join("fail"))
            .expect("fixture directory");
        let outcome = zerohop_lint::lint_batch(&batch, &options);
        if !outcome.findings.iter().any(|f| f.id == id) {
            problems.push(id);
        }
    }
    assert!(problems.is_empty(), "{problems:?}");
}
