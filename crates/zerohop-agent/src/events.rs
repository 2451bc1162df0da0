//! Which events to publish after a pass: transitions only.
//!
//! An event says something changed: the data path became not ready, a check
//! started failing, a check recovered. A pass that finds the same thing as
//! the one before publishes nothing, so a broken node does not flood the
//! API server. Notes are built only from stable parts (check ID, name, the
//! first subject, the fix), so a problem that comes back has the same note
//! and the same event name, and the API server counts it as a repeat.

use std::collections::{BTreeMap, BTreeSet};

use zerohop_core::{Report, Status};

use zerohop_doctor::verdict::{self, Readiness, Verdict};
use zerohop_known::zerohop_api::MESSAGE_CAP;

/// The most per-check events of one pass; the rest are summed up in one.
pub const MAX_CHECK_EVENTS: usize = 10;

/// `Normal` or `Warning`, as the events API spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something got better.
    Normal,
    /// Something broke.
    Warning,
}

impl EventType {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One event to publish about the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Normal or warning.
    pub type_: EventType,
    /// CamelCase: `DataPathNotReady`, `CheckFailing`, `CheckRecovered`…
    pub reason: &'static str,
    /// What happened, at most [`MESSAGE_CAP`] bytes, stable for the same problem.
    pub note: String,
}

/// What one pass found, as far as events care: readiness and, per failing
/// check ID, the note that announces it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// The verdict's readiness; `None` before any pass.
    pub readiness: Option<Readiness>,
    /// Failing check ID → the note of its `CheckFailing` event.
    pub failing: BTreeMap<String, String>,
}

/// What a pass found: the verdict's readiness and one note per failing
/// check (its first failing subject and fix, in report order).
pub fn observe(verdict: &Verdict, report: Option<&Report>) -> Observed {
    let mut failing = BTreeMap::new();
    for finding in report
        .into_iter()
        .flat_map(|r| &r.findings)
        .filter(|f| f.status == Status::Fail)
    {
        failing.entry(finding.id.clone()).or_insert_with(|| {
            let fix = finding
                .remediation
                .as_ref()
                .map(|r| r.summary.as_str())
                .filter(|s| !s.is_empty())
                .unwrap_or(&finding.message);
            let subject = if finding.subject.is_empty() {
                String::new()
            } else {
                format!(" on {}", finding.subject)
            };
            verdict::cap(
                &format!("{} {} fails{subject}: {fix}", finding.id, finding.name),
                MESSAGE_CAP,
            )
        });
    }
    Observed {
        readiness: Some(verdict.readiness),
        failing,
    }
}

/// The events that announce the change from `before` to `now`.
///
/// `before.failing` is `None` right after the agent started: the checks
/// that fail then are the baseline, not news (the condition already says
/// the node is not ready); only a readiness different from the stored
/// condition's is announced.
pub fn decide(
    before_readiness: Option<Readiness>,
    before_failing: Option<&BTreeMap<String, String>>,
    now: &Observed,
    verdict: &Verdict,
) -> Vec<Decision> {
    let mut events = Vec::new();
    if now.readiness != before_readiness {
        match now.readiness {
            Some(Readiness::NotReady) => events.push(Decision {
                type_: EventType::Warning,
                reason: "DataPathNotReady",
                note: verdict.message.clone(),
            }),
            Some(Readiness::Unknown) => events.push(Decision {
                type_: EventType::Warning,
                reason: "DataPathUnknown",
                note: verdict.message.clone(),
            }),
            // A healthy first start is not news; a recovery is.
            Some(Readiness::Ready) if before_readiness.is_some() => events.push(Decision {
                type_: EventType::Normal,
                reason: "DataPathReady",
                note: verdict.message.clone(),
            }),
            Some(Readiness::Ready) | None => {}
        }
    }
    let Some(before) = before_failing else {
        return events;
    };
    // A pass that did not finish knows nothing about checks: no check
    // "recovered" because it was not run.
    if now.readiness == Some(Readiness::Unknown) && now.failing.is_empty() {
        return events;
    }
    let started: Vec<(&String, &String)> = now
        .failing
        .iter()
        .filter(|(id, _)| !before.contains_key(*id))
        .collect();
    let recovered: Vec<&String> = before
        .keys()
        .filter(|id| !now.failing.contains_key(*id))
        .collect();
    for (_, note) in started.iter().take(MAX_CHECK_EVENTS) {
        events.push(Decision {
            type_: EventType::Warning,
            reason: "CheckFailing",
            note: (*note).clone(),
        });
    }
    if started.len() > MAX_CHECK_EVENTS {
        let rest: BTreeSet<String> = started[MAX_CHECK_EVENTS..]
            .iter()
            .map(|(id, _)| (*id).clone())
            .collect();
        events.push(Decision {
            type_: EventType::Warning,
            reason: "ChecksFailing",
            note: verdict::id_list("more checks started failing", &rest, MESSAGE_CAP),
        });
    }
    for id in recovered.iter().take(MAX_CHECK_EVENTS) {
        events.push(Decision {
            type_: EventType::Normal,
            reason: "CheckRecovered",
            note: format!("{id} passes again"),
        });
    }
    if recovered.len() > MAX_CHECK_EVENTS {
        let rest: BTreeSet<String> = recovered[MAX_CHECK_EVENTS..]
            .iter()
            .map(|id| (*id).clone())
            .collect();
        events.push(Decision {
            type_: EventType::Normal,
            reason: "ChecksRecovered",
            note: verdict::id_list("more checks pass again", &rest, MESSAGE_CAP),
        });
    }
    events
}

#[cfg(test)]
mod tests {
    use zerohop_core::{Finding, Remediation, Severity};

    use super::*;
    use zerohop_doctor::verdict::judge;

    fn finding(id: &str, status: Status) -> Finding {
        Finding {
            id: id.into(),
            name: format!("{}-check", id.to_lowercase()),
            group: "rdma".into(),
            status,
            severity: Severity::Error,
            subject: "mlx5_0/1".into(),
            message: "found".into(),
            evidence: vec![],
            remediation: Some(Remediation::new(format!("fix {id}"))),
            blocked_by: None,
            location: None,
            object: None,
        }
    }

    fn pass(findings: Vec<Finding>) -> (Verdict, Observed) {
        let report = Report::new("doctor", "/host", findings);
        let verdict = judge(&report);
        let observed = observe(&verdict, Some(&report));
        (verdict, observed)
    }

    fn reasons(events: &[Decision]) -> Vec<(&str, &str)> {
        events.iter().map(|e| (e.reason, e.note.as_str())).collect()
    }

    #[test]
    fn a_healthy_start_is_quiet_and_a_broken_start_says_so_once() {
        let (verdict, now) = pass(vec![finding("RDMA004", Status::Pass)]);
        assert_eq!(decide(None, None, &now, &verdict), []);
        let (verdict, now) = pass(vec![finding("RDMA004", Status::Fail)]);
        assert_eq!(
            reasons(&decide(None, None, &now, &verdict)),
            [(
                "DataPathNotReady",
                "RDMA004 mlx5_0/1: fix RDMA004; 1 failing: RDMA004"
            )]
        );
        // A restart that finds the node as the stored condition said: nothing.
        assert_eq!(decide(Some(Readiness::NotReady), None, &now, &verdict), []);
    }

    #[test]
    fn transitions_of_checks_are_announced_once() {
        let (_, before) = pass(vec![finding("RDMA004", Status::Fail)]);
        let (verdict, now) = pass(vec![
            finding("RDMA004", Status::Pass),
            finding("GPU012", Status::Fail),
        ]);
        assert_eq!(
            reasons(&decide(
                before.readiness,
                Some(&before.failing),
                &now,
                &verdict
            )),
            [
                (
                    "CheckFailing",
                    "GPU012 gpu012-check fails on mlx5_0/1: fix GPU012"
                ),
                ("CheckRecovered", "RDMA004 passes again"),
            ]
        );
        // The same result again: no event at all.
        assert_eq!(
            decide(now.readiness, Some(&now.failing), &now, &verdict),
            []
        );
    }

    #[test]
    fn a_recovery_of_the_node_is_normal() {
        let (_, before) = pass(vec![finding("RDMA004", Status::Fail)]);
        let (verdict, now) = pass(vec![finding("RDMA004", Status::Pass)]);
        let events = decide(before.readiness, Some(&before.failing), &now, &verdict);
        assert_eq!(
            reasons(&events),
            [
                ("DataPathReady", "no check fails"),
                ("CheckRecovered", "RDMA004 passes again"),
            ]
        );
        assert!(events.iter().all(|e| e.type_ == EventType::Normal));
    }

    #[test]
    fn a_pass_that_did_not_finish_recovers_nothing() {
        let (_, before) = pass(vec![finding("RDMA004", Status::Fail)]);
        let verdict = verdict::not_judged("the pass did not finish within 2m");
        let now = observe(&verdict, None);
        assert_eq!(
            reasons(&decide(
                before.readiness,
                Some(&before.failing),
                &now,
                &verdict
            )),
            [("DataPathUnknown", "the pass did not finish within 2m")]
        );
    }

    #[test]
    fn a_flood_of_new_failures_is_summed_up() {
        let (verdict, now) = pass(
            (0..25)
                .map(|i| finding(&format!("RDMA{i:03}"), Status::Fail))
                .collect(),
        );
        let events = decide(
            Some(Readiness::NotReady),
            Some(&BTreeMap::new()),
            &now,
            &verdict,
        );
        assert_eq!(events.len(), MAX_CHECK_EVENTS + 1);
        let last = events.last().unwrap();
        assert_eq!(last.reason, "ChecksFailing");
        assert!(
            last.note
                .starts_with("15 more checks started failing: RDMA010, RDMA011"),
            "{}",
            last.note
        );
    }
}
