//! The intent rules' invariants, and every rule against its fixtures, as
//! lint's rules are tested: `tests/fixtures/<ID>/fail/intent.yaml` must
//! break the rule (its diagnostics are snapshotted as `zerohop plan` prints
//! them), `tests/fixtures/<ID>/pass/intent.yaml`, the same intent
//! corrected, must plan.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use zerohop_core::{RuleInfo, Severity};
use zerohop_plan::{PlanError, RULES, load, rules};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The fixture `<id>/<case>/intent.yaml`, loaded under the name
/// `<case>/intent.yaml` so that snapshots do not depend on where the
/// repository is checked out.
fn load_case(id: &str, case: &str) -> Result<(), PlanError> {
    let path = fixtures().join(id).join(case).join("intent.yaml");
    let text = fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    load(&format!("{case}/intent.yaml"), &text, None).map(|_| ())
}

#[test]
fn ids_are_unique_well_formed_and_in_order() {
    let all: Vec<&RuleInfo> = rules().collect();
    let problems = RuleInfo::registry_problems(&all, &["ZP"]);
    assert!(problems.is_empty(), "{problems:#?}");
    let ids: Vec<&str> = all.iter().map(|rule| rule.id).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "RULES must be in ID order");
    for rule in all {
        assert_eq!(rule.group, "plan");
        // The planner renders nothing for an intent with any mistake.
        assert_eq!(rule.severity, Severity::Error, "{}", rule.id);
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
        assert!(ids.contains(name.as_str()), "fixture {name} has no rule");
    }
}

/// The diagnostics of rule `id` as `zerohop plan` prints them.
fn render(id: &str, err: &PlanError) -> String {
    let mine = PlanError {
        file: err.file.clone(),
        diagnostics: err
            .diagnostics
            .iter()
            .filter(|d| d.rule.id == id)
            .cloned()
            .collect(),
    };
    mine.to_string()
}

#[test]
fn every_rule_breaks_on_its_failing_fixture_and_not_on_its_passing_one() {
    let listed: HashSet<&str> = rules().map(|rule| rule.id).collect();
    let mut problems = Vec::new();
    for rule in RULES {
        let id = rule.info.id;
        match load_case(id, "fail") {
            Ok(()) => problems.push(format!("{id}: fail/ plans")),
            Err(err) => {
                if !err.diagnostics.iter().any(|d| d.rule.id == id) {
                    problems.push(format!("{id}: no diagnostic on fail/:\n{err}"));
                }
                // A diagnostic of a rule missing from RULES would be one
                // that `zerohop explain` cannot explain.
                for diagnostic in &err.diagnostics {
                    if !listed.contains(diagnostic.rule.id) {
                        problems.push(format!("{}: not in RULES", diagnostic.rule.id));
                    }
                }
                insta::assert_snapshot!(format!("{id}-{}", rule.info.name), render(id, &err));
            }
        }
        // A passing fixture is a correct intent: it plans, with no
        // diagnostic of any rule, which keeps it an honest example.
        if let Err(err) = load_case(id, "pass") {
            problems.push(format!("{id}: pass/ is refused:\n{err}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_example_shows_what_the_failing_fixture_gives() {
    // The documentation shows the failing fixture's real output, so that
    // a changed message cannot leave a stale example behind.
    for rule in RULES {
        let info = &rule.info;
        let shown = *info
            .example_blocks()
            .first()
            .unwrap_or_else(|| panic!("{}: no ```text block under ## Example", info.id));
        let err = load_case(info.id, "fail").expect_err("fail/ is refused");
        let given = render(info.id, &err);
        assert!(
            given.contains(shown),
            "{}: the example shows\n{shown}\nbut fail/ gives\n{given}",
            info.id
        );
    }
}

#[test]
fn messages_are_lowercase_fragments() {
    for rule in RULES {
        let Err(err) = load_case(rule.info.id, "fail") else {
            continue;
        };
        for diagnostic in &err.diagnostics {
            assert!(
                RuleInfo::is_message_fragment(&diagnostic.message),
                "{}: {:?}",
                diagnostic.rule.id,
                diagnostic.message
            );
        }
    }
}
