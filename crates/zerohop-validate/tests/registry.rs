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
