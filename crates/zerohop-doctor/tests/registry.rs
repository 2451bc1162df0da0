//! House rules over the whole check registry.

use std::collections::HashSet;

use zerohop_core::RuleInfo;
use zerohop_doctor::Group;
use zerohop_doctor::checks::CHECKS;

#[test]
fn ids_are_unique_well_formed_and_match_their_group() {
    let mut seen = HashSet::new();
    let prefixes: Vec<&str> = Group::ALL.iter().map(|g| g.prefix()).collect();
    for check in CHECKS {
        let info = &check.info;
        assert!(seen.insert(info.id), "duplicate id {}", info.id);
        assert!(
            RuleInfo::is_well_formed_id(info.id, &prefixes),
            "malformed id {}",
            info.id
        );
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
        assert!(
            RuleInfo::is_kebab_case(info.name),
            "{} name `{}` is not kebab-case",
            info.id,
            info.name
        );
        assert_eq!(info.group, check.group.name());
    }
    let names: HashSet<&str> = CHECKS.iter().map(|c| c.info.name).collect();
    assert_eq!(names.len(), CHECKS.len(), "check names must be unique");
}

#[test]
fn every_check_documents_what_why_and_how() {
    for check in CHECKS {
        let missing = check.info.missing_headings();
        assert!(missing.is_empty(), "{} lacks {:?}", check.info.id, missing);
        assert!(
            !check.info.summary().is_empty(),
            "{} has no summary line",
            check.info.id
        );
        assert!(
            check.info.summary().ends_with('.'),
            "{} summary should be a sentence",
            check.info.id
        );
    }
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
