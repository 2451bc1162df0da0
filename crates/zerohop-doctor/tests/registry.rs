//! House rules over the whole check registry.

use zerohop_core::RuleInfo;
use zerohop_doctor::Group;
use zerohop_doctor::checks::CHECKS;

#[test]
fn ids_are_unique_well_formed_and_match_their_group() {
    let prefixes: Vec<&str> = Group::ALL.iter().map(|g| g.prefix()).collect();
    let infos: Vec<&RuleInfo> = CHECKS.iter().map(|check| &check.info).collect();
    let problems = RuleInfo::registry_problems(&infos, &prefixes);
    assert!(problems.is_empty(), "{problems:#?}");
    for check in CHECKS {
        let info = &check.info;
        assert!(
            info.id.starts_with(check.group.prefix())
                && info.id[check.group.prefix().len()..]
                    .bytes()
                    .all(|b| b.is_ascii_digit()),
            "{} is in group {} whose prefix is {}",
            info.id,
            check.group.name(),
            check.group.prefix()
        );
        assert_eq!(info.group, check.group.name());
    }
}

#[test]
fn every_check_documents_what_why_and_how() {
    let problems: Vec<String> = CHECKS
        .iter()
        .flat_map(|check| check.info.documentation_problems())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn checks_run_in_deploy_order_with_prerequisites_first() {
    for pair in CHECKS.windows(2) {
        assert!(
            pair[0].group <= pair[1].group,
            "{} ({}) is listed after {} ({}): keep CHECKS in deploy order",
            pair[1].info.id,
            pair[1].group.name(),
            pair[0].info.id,
            pair[0].group.name()
        );
    }
    for (index, check) in CHECKS.iter().enumerate() {
        for required in check.requires {
            let position = CHECKS.iter().position(|c| c.info.id == required.info.id);
            assert!(
                position.is_some_and(|p| p < index),
                "{} requires {}, which must be registered before it",
                check.info.id,
                required.info.id
            );
        }
    }
}

/// The lines of the section under `heading` in `docs`, up to the next heading.
fn section<'a>(docs: &'a str, heading: &str) -> Option<Vec<&'a str>> {
    let mut lines = docs.lines().skip_while(|line| line.trim() != heading);
    lines.next()?;
    Some(lines.take_while(|line| !line.starts_with("## ")).collect())
}

/// Whether `text` pins what it cites: a commit (seven or more hex digits
/// with at least one letter and one digit) or a version (`5.12`, `v2.3`).
fn pins_a_version(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '.')
        .any(|word| {
            let word = word.trim_matches('.');
            let commit = word.len() >= 7
                && word.bytes().all(|b| b.is_ascii_hexdigit())
                && word.bytes().any(|b| b.is_ascii_digit())
                && word.bytes().any(|b| b.is_ascii_alphabetic());
            let version = word.trim_start_matches('v').split('.').count() >= 2
                && word
                    .trim_start_matches('v')
                    .split('.')
                    .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
            commit || version
        })
}

#[test]
fn every_check_names_its_evidence_its_upstream_source_and_a_real_capture() {
    // A check's premise about the kernel or a driver is what that code does:
    // each check says which evidence decides it (and what is only absent),
    // cites the upstream source at a pinned commit or version, and names a
    // test that runs it on a real capture of the situation it judges.
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut problems = Vec::new();
    for check in CHECKS {
        let info = &check.info;
        let docs = info.docs;
        let order = ["## How to fix", "## Evidence", "## Source", "## Example"];
        let positions: Vec<Option<usize>> = order
            .iter()
            .map(|heading| docs.lines().position(|line| line.trim() == *heading))
            .collect();
        if positions.iter().any(Option::is_none) || !positions.is_sorted() {
            problems.push(format!("{}: lacks {order:?} in that order", info.id));
            continue;
        }
        let evidence = section(docs, "## Evidence").unwrap_or_default();
        if evidence.iter().all(|line| line.trim().is_empty()) {
            problems.push(format!("{}: ## Evidence is empty", info.id));
        }
        let source = section(docs, "## Source").unwrap_or_default();
        let (captures, citations): (Vec<&str>, Vec<&str>) = source
            .iter()
            .map(|line| line.trim())
            .filter(|line| !line.is_empty())
            .partition(|line| line.starts_with("Real capture: "));
        if !pins_a_version(&citations.join(" ")) {
            problems.push(format!(
                "{}: ## Source cites no upstream source at a pinned commit or version",
                info.id
            ));
        }
        if captures.is_empty() {
            problems.push(format!(
                "{}: ## Source names no `Real capture:` test",
                info.id
            ));
        }
        for capture in captures {
            let reference = capture
                .trim_start_matches("Real capture: ")
                .trim_matches('`');
            let Some((file, function)) = reference.split_once("::") else {
                problems.push(format!("{}: {reference:?} is not FILE::TEST", info.id));
                continue;
            };
            let text = std::fs::read_to_string(workspace.join(file)).unwrap_or_default();
            if !text.contains(&format!("fn {function}(")) {
                problems.push(format!("{}: no test fn {function} in {file}", info.id));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_pinned_source_is_a_commit_or_a_version() {
    assert!(pins_a_version(
        "kernel-open/nvidia-peermem/nvidia-peermem.c at 550.90.07"
    ));
    assert!(pins_a_version("torvalds/linux@e8f897f4afef, mm/hugetlb.c"));
    assert!(pins_a_version("Linux v6.8 net/sunrpc/xprtrdma/Kconfig"));
    assert!(!pins_a_version("the kernel's documentation"));
    assert!(!pins_a_version("mm/hugetlb.c, decade deadbeef"));
}
