//! Runs the checks in registry order and builds the report.

use std::collections::{BTreeSet, HashMap};

use zerohop_core::{Finding, Report, Status};
use zerohop_host::Facts;

use crate::checks::CHECKS;
use crate::context::{Context, Outcome};
use crate::pool::NicPool;
use crate::profile::Profile;
use crate::registry::{Check, Group};

/// Which checks to report: every host check, the pod's, or those named by
/// group or ID. The pod checks judge the reading process's own container,
/// so a host's run leaves them out unless they are named.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    groups: BTreeSet<Group>,
    ids: BTreeSet<&'static str>,
}

impl Selection {
    /// Every check of a host: all but the [`Group::Pod`] checks.
    pub fn all() -> Selection {
        Selection::default()
    }

    /// The checks of the workload pod's own view ([`Group::Pod`]).
    pub fn pod() -> Selection {
        Selection {
            groups: BTreeSet::from([Group::Pod]),
            ids: BTreeSet::new(),
        }
    }

    /// The checks named by `names`: group names (`kernel`) or check IDs
    /// (`KRN001`), case-insensitive. Returns the first unknown name as the error.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Selection, String> {
        let mut selection = Selection::default();
        for name in names {
            if let Some(group) = Group::parse(name) {
                selection.groups.insert(group);
            } else if let Some(check) = CHECKS.iter().find(|c| c.info.id.eq_ignore_ascii_case(name))
            {
                selection.ids.insert(check.info.id);
            } else {
                return Err(name.to_owned());
            }
        }
        Ok(selection)
    }

    fn selects(&self, check: &Check) -> bool {
        (self.groups.is_empty() && self.ids.is_empty() && check.group != Group::Pod)
            || self.groups.contains(&check.group)
            || self.ids.contains(check.info.id)
    }
}

/// Runs the selected checks (and, silently unless they fail, their
/// prerequisites) on `facts` and returns the report, root causes first.
///
/// A check whose prerequisite failed is not run: it reports `blocked` with
/// a pointer to the prerequisite, so one root cause raises one alarm.
///
/// When the profile names the pool's NICs (`--intent`), a problem that a
/// check (other than the conformance checks, which judge the pool itself)
/// reports about another NIC of the host is information: the pool's data
/// path does not use it.
pub fn run(facts: &Facts, profile: &Profile, selection: &Selection) -> Report {
    let context = Context { facts, profile };
    let pool = NicPool::of(facts, profile);
    let wanted = with_prerequisites(selection);
    let mut failed: HashMap<&'static str, bool> = HashMap::new();
    let mut findings = Vec::new();
    for check in CHECKS.iter().filter(|check| wanted.contains(check.info.id)) {
        let blocker = check
            .requires
            .iter()
            .find(|req| failed.get(req.info.id).copied().unwrap_or(false));
        let outcomes = match blocker {
            Some(blocker) => vec![Outcome::new(
                Status::Blocked,
                format!(
                    "not checked because {} ({}) failed",
                    blocker.info.name, blocker.info.id
                ),
            )],
            None => {
                let mut outcomes = (check.run)(&context);
                if outcomes.is_empty() {
                    outcomes.push(Outcome::not_applicable("nothing to check on this host"));
                }
                match &pool {
                    Some(pool) if check.group != Group::Conformance => {
                        outcomes.into_iter().map(|o| pool.scope(o)).collect()
                    }
                    _ => outcomes,
                }
            }
        };
        let any_fail = outcomes.iter().any(|o| o.status == Status::Fail);
        failed.insert(check.info.id, any_fail);
        // A prerequisite pulled in only for ordering is reported when it
        // failed, because it is the root cause of what is shown.
        if selection.selects(check) || any_fail {
            let blocked_by = blocker.map(|b| b.info.id.to_owned());
            findings.extend(
                outcomes
                    .into_iter()
                    .map(|o| finding(check, o, blocked_by.clone())),
            );
        }
    }
    Report::new("doctor", facts.root.clone(), findings)
}

fn with_prerequisites(selection: &Selection) -> BTreeSet<&'static str> {
    let mut wanted = BTreeSet::new();
    let mut stack: Vec<&Check> = CHECKS
        .iter()
        .copied()
        .filter(|c| selection.selects(c))
        .collect();
    while let Some(check) = stack.pop() {
        if wanted.insert(check.info.id) {
            stack.extend(check.requires.iter().copied());
        }
    }
    wanted
}

fn finding(check: &Check, outcome: Outcome, blocked_by: Option<String>) -> Finding {
    Finding {
        id: check.info.id.to_owned(),
        name: check.info.name.to_owned(),
        group: check.info.group.to_owned(),
        status: outcome.status,
        severity: check.info.severity,
        subject: outcome.subject,
        message: outcome.message,
        evidence: outcome.evidence,
        remediation: outcome.remediation,
        blocked_by,
        location: None,
        object: None,
    }
}
