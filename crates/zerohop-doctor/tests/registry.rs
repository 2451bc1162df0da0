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
