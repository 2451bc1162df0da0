//! One case per fixture root under `tests/fixtures/<CHECK-ID>/<status>-<what>/`.
//!
//! Each case is a small fake host tree (and an optional `profile.json`). The
//! doctor runs only that check on it; the case's status prefix must appear
//! among the check's findings (a `pass-*` case must have no warn or fail),
//! and the findings are snapshotted. Every check needs a passing case and a
//! case that shows its problem, every message is a lowercase fragment, and
//! each check's `## Example` shows what the case it names gives.

use std::fs;
use std::path::{Path, PathBuf};

use zerohop_core::render::human;
use zerohop_core::{Finding, RuleInfo, Severity, Status};
use zerohop_doctor::checks::CHECKS;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};

/// Checks that judge the running process or probe the live host: a fixture
/// root cannot show their problem, so their logic has unit tests (MEM004 in
/// `checks/memory.rs`, GDS006 and URING002 in `tests/storage_fixtures.rs`).
const LIVE_ONLY: &[&str] = &["MEM004", "GDS006", "URING002"];

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn expected_status(case: &str) -> Option<Status> {
    Status::ALL.into_iter().find(|status| {
        case.strip_prefix(status.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    })
}

struct Case {
    id: String,
    name: String,
    dir: PathBuf,
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for check_dir in fs::read_dir(fixtures_dir()).expect("tests/fixtures exists") {
        let check_dir = check_dir.unwrap().path();
        let id = check_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for case_dir in fs::read_dir(&check_dir).unwrap() {
            let dir = case_dir.unwrap().path();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            cases.push(Case {
                id: id.clone(),
                name,
                dir,
            });
        }
    }
    cases.sort_by(|a, b| (&a.id, &a.name).cmp(&(&b.id, &b.name)));
    cases
}

/// The findings of check `id` on the fixture root `dir` (with its
/// `profile.json`, if any); `None` when there is no such check.
fn run_case(id: &str, dir: &Path) -> Option<Vec<Finding>> {
    let selection = Selection::parse([id]).ok()?;
    let profile_path = dir.join("profile.json");
    let profile: Profile = match fs::read_to_string(&profile_path) {
        Ok(text) => serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("{}: {err}", profile_path.display())),
        Err(_) => Profile::default(),
    };
    let root = HostRoot::at(dir).unwrap();
    let facts = Facts::collect(&root);
    let report = zerohop_doctor::run(&facts, &profile, &selection);
    Some(report.findings.into_iter().filter(|f| f.id == id).collect())
}

/// `findings` as `zerohop doctor --verbose` shows them, without colour and
/// without the summary line, which names the root.
fn human(findings: Vec<Finding>) -> String {
    human::as_documented("doctor", findings)
}

/// The fixture case and the output shown under a check's `## Example`:
/// the directory named on its `From` line, and its `text` block.
fn example(docs: &str) -> Option<(&str, &str)> {
    const FROM: &str = "From `crates/zerohop-doctor/tests/fixtures/";
    let example = &docs[docs.find("## Example")?..];
    let case_start = example.find(FROM)? + FROM.len();
    let case_end = case_start + example[case_start..].find("/`")?;
    let start = example.find("```text\n")? + "```text\n".len();
    let end = start + example[start..].find("\n```")?;
    Some((&example[case_start..case_end], &example[start..end]))
}

#[test]
fn every_example_shows_what_its_fixture_gives() {
    // The documentation shows a fixture's real findings, so that a changed
    // message cannot leave a stale example behind.
    let mut failures = Vec::new();
    for check in CHECKS {
        let id = check.info.id;
        let Some((case, shown)) = example(check.info.docs) else {
            failures.push(format!(
                "{id}: no fixture and ```text block under ## Example"
            ));
            continue;
        };
        let given = match run_case(id, &fixtures_dir().join(case)) {
            Some(findings) => human(findings),
            None => String::new(),
        };
        if !case.starts_with(&format!("{id}/")) || given != shown {
            failures.push(format!(
                "{id}: the example of {case} shows\n{shown}\nbut it gives\n{given}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fixture_gives_its_status() {
    let mut failures = Vec::new();
    for case in cases() {
        let Some(expected) = expected_status(&case.name) else {
            failures.push(format!(
                "{}/{}: name must start with a status",
                case.id, case.name
            ));
            continue;
        };
        let Some(findings) = run_case(&case.id, &case.dir) else {
            failures.push(format!("{}: no such check", case.id));
            continue;
        };
        let statuses: Vec<Status> = findings.iter().map(|f| f.status).collect();
        if !statuses.contains(&expected) {
            failures.push(format!(
                "{}/{}: expected {expected}, got {statuses:?}",
                case.id, case.name
            ));
        }
        // The same message style as lint's and plan's: a lowercase fragment,
        // what to do in the remediation.
        for finding in &findings {
            if !RuleInfo::is_message_fragment(&finding.message) {
                failures.push(format!(
                    "{}/{}: message {:?} is not a lowercase fragment",
                    case.id, case.name, finding.message
                ));
            }
        }
        if expected == Status::Pass && statuses.iter().any(|s| s.is_problem()) {
            failures.push(format!(
                "{}/{}: a pass case reported {statuses:?}",
                case.id, case.name
            ));
        }
        insta::assert_json_snapshot!(format!("{}__{}", case.id, case.name), findings);
    }
    assert!(
        failures.is_empty(),
        "fixture cases failed:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_check_has_a_passing_and_a_problem_fixture() {
    let cases = cases();
    let mut missing = Vec::new();
    for check in CHECKS {
        let id = check.info.id;
        let has = |status: Status| {
            cases
                .iter()
                .any(|c| c.id == id && expected_status(&c.name) == Some(status))
        };
        if LIVE_ONLY.contains(&id) {
            if !has(Status::NotApplicable) {
                missing.push(format!(
                    "{id}: live-only checks need a not-applicable fixture"
                ));
            }
            continue;
        }
        if !has(Status::Pass) {
            missing.push(format!("{id}: no pass-* fixture"));
        }
        let problem = match check.info.severity {
            Severity::Info => has(Status::Info),
            Severity::Warning => has(Status::Warn),
            Severity::Error => has(Status::Fail),
        };
        if !problem {
            missing.push(format!(
                "{id}: no fixture showing its problem at severity {}",
                check.info.severity
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_fixture_directory_names_a_check() {
    for case in cases() {
        assert!(
            CHECKS.iter().any(|c| c.info.id == case.id),
            "tests/fixtures/{} names no check",
            case.id
        );
    }
}
