//! House rules over the whole judgement registry.

use std::collections::HashSet;

use zerohop_core::RuleInfo;
use zerohop_validate::judge::{Group, ID_PREFIX, JUDGEMENTS};

#[test]
fn ids_are_unique_well_formed_and_numbered_by_group() {
    let infos: Vec<&RuleInfo> = JUDGEMENTS.iter().map(|judgement| &judgement.info).collect();
    let problems = RuleInfo::registry_problems(&infos, &[ID_PREFIX]);
    assert!(problems.is_empty(), "{problems:#?}");
    for judgement in JUDGEMENTS {
        let info = &judgement.info;
        let hundreds = info.id.as_bytes()[ID_PREFIX.len()] - b'0';
        assert_eq!(
            hundreds,
            judgement.group.hundreds(),
            "{} is in group {}, whose IDs are {}{}xx",
            info.id,
            judgement.group.name(),
            ID_PREFIX,
            judgement.group.hundreds()
        );
        assert_eq!(info.group, judgement.group.name());
    }
}

#[test]
fn every_judgement_documents_what_why_and_how() {
    let problems: Vec<String> = JUDGEMENTS
        .iter()
        .flat_map(|judgement| judgement.info.documentation_problems())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn judgements_are_listed_in_report_order() {
    for pair in JUDGEMENTS.windows(2) {
        assert!(
            (pair[0].group, pair[0].info.id) < (pair[1].group, pair[1].info.id)
                || pair[0].group < pair[1].group,
            "{} is listed after {}",
            pair[1].info.id,
            pair[0].info.id
        );
    }
    let groups: HashSet<Group> = JUDGEMENTS.iter().map(|j| j.group).collect();
    assert_eq!(groups.len(), Group::ALL.len(), "a group without judgements");
}

#[test]
fn no_id_collides_with_a_doctor_check_or_a_lint_rule() {
    // `zerohop explain` looks an ID up across all three catalogs.
    for judgement in JUDGEMENTS {
        assert!(
            zerohop_doctor::checks::CHECKS
                .iter()
                .all(|c| c.info.id != judgement.info.id && c.info.name != judgement.info.name),
            "{} collides with a doctor check",
            judgement.info.id
        );
    }
}

/// The `## What it checks` section of a judgement's documentation.
fn what_it_checks(docs: &str) -> &str {
    let start = docs.find("## What it checks").unwrap_or(0);
    let rest = &docs[start..];
    let end = rest.find("## Why it matters").unwrap_or(rest.len());
    &rest[..end]
}

/// Whether `text` cites where its rule comes from: a source file or
/// document in backticks (`src/graph/paths.cc`, `doc/PERFORMANCE.md`,
/// `libibverbs/verbs.h`), an issue (`NVIDIA/nccl#426`), a vendor guide or
/// data sheet, or a table of `zerohop_known` that cites its own.
fn cites_a_source(text: &str) -> bool {
    let quoted = text.split('`').skip(1).step_by(2);
    let mut quoted_source = false;
    for token in quoted {
        let token = token.trim();
        if token.contains("zerohop_known")
            || [".cc", ".c", ".h", ".cu", ".md", ".rs", ".go", ".py"]
                .iter()
                .any(|ext| token.ends_with(ext))
            || (token.contains('/') && !token.contains(' ') && token.contains('.'))
        {
            quoted_source = true;
        }
    }
    let issue = text
        .split_whitespace()
        .any(|word| word.contains('/') && word.contains('#'));
    quoted_source
        || issue
        || [
            "Guide",
            "data sheet",
            "man page",
            "manual",
            "documentation",
            "source",
        ]
        .iter()
        .any(|name| text.contains(name))
}

#[test]
fn every_judgement_names_the_source_of_its_rule() {
    // A rate or a rule that nobody can look up cannot be argued with.
    let missing: Vec<&str> = JUDGEMENTS
        .iter()
        .filter(|j| !cites_a_source(what_it_checks(j.info.docs)))
        .map(|j| j.info.id)
        .collect();
    assert!(
        missing.is_empty(),
        "the `## What it checks` of {missing:?} cites no source (a tool's source file, a document, an issue)"
    );
}

/// Judgements no real capture shows yet, each with why. A judgement that a
/// corpus test comes to cover must leave this list (the test says so).
const WITHOUT_REAL_CAPTURE: &[(&str, &str)] = &[
    (
        "VAL104",
        "no published NCCL_DEBUG log with `GPU Direct RDMA Disabled for GPU … (distance D > L)` and its host prefix was found",
    ),
    (
        "VAL107",
        "no published log with an NCCL WARN line other than those VAL102, VAL106 and VAL110 judge was found",
    ),
];

#[test]
fn every_judgement_is_tested_on_a_real_capture() {
    // The corpus tests (`tests/corpus_*.rs`) judge real captures: the
    // shared corpus and the public ones under `tests/fixtures`.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut corpus_tests = String::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("corpus_") && name.ends_with(".rs") {
            corpus_tests.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    let mut problems = Vec::new();
    for judgement in JUDGEMENTS {
        let info = &judgement.info;
        let covered = corpus_tests.contains(&format!("\"{}\"", info.id));
        let excused = WITHOUT_REAL_CAPTURE.iter().any(|(id, _)| *id == info.id);
        match (covered, excused) {
            (false, false) => problems.push(format!(
                "{}: no corpus test judges a real capture with it",
                info.id
            )),
            (true, true) => problems.push(format!(
                "{}: a corpus test covers it now: remove it from WITHOUT_REAL_CAPTURE",
                info.id
            )),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
