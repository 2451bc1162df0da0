//! Capability states: the few stable facts a scheduler selects nodes on
//! (`zerohop.dev/gpudirect-rdma=ready`), derived from a report.
//!
//! They are published as Node Feature Discovery labels and as the
//! `zerohop_capability` metric. Per-check results are deliberately not
//! labels: labels are for selecting nodes, and a label per check would
//! churn the Node object and every watcher of it.

use std::fmt;

use zerohop_core::{Report, Status};

/// A capability and the check groups that judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capability {
    /// The label name after `zerohop.dev/`.
    pub name: &'static str,
    /// The groups whose findings decide the state.
    pub groups: &'static [&'static str],
    /// Groups that must each have an applicable finding for the capability
    /// to apply to the node at all (GPUDirect RDMA needs a GPU and a NIC).
    pub needs: &'static [&'static str],
}

/// Every capability, in label order.
pub const CAPABILITIES: [Capability; 3] = [
    Capability {
        name: "gpudirect-rdma",
        groups: &["kernel", "pcie", "rdma", "qos", "gpu", "sriov"],
        needs: &["rdma", "gpu"],
    },
    Capability {
        name: "nfs-rdma",
        groups: &["nfs"],
        needs: &["nfs"],
    },
    Capability {
        name: "gds",
        groups: &["gds"],
        needs: &["gds"],
    },
];

/// How usable a capability is on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Every finding that judges it passes.
    Ready,
    /// A check warns or could not tell: it works, maybe not as it should.
    Degraded,
    /// A check fails, or is blocked by one that does.
    Broken,
}

impl State {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ready => "ready",
            State::Degraded => "degraded",
            State::Broken => "broken",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The state of each capability that applies to the host the report is
/// about; a capability whose needed groups report only `not-applicable`
/// findings is left out (the node does not have it, and no label is
/// better than a wrong one).
pub fn states(report: &Report) -> Vec<(&'static Capability, State)> {
    CAPABILITIES
        .iter()
        .filter_map(|capability| state(report, capability).map(|s| (capability, s)))
        .collect()
}

fn state(report: &Report, capability: &Capability) -> Option<State> {
    let applies = capability.needs.iter().all(|group| {
        report
            .findings
            .iter()
            .any(|f| f.group == *group && f.status != Status::NotApplicable)
    });
    if !applies {
        return None;
    }
    let worst = report
        .findings
        .iter()
        .filter(|f| capability.groups.contains(&f.group.as_str()))
        .map(|f| match f.status {
            Status::Fail | Status::Blocked => State::Broken,
            Status::Warn | Status::Unknown => State::Degraded,
            Status::Pass | Status::Info | Status::NotApplicable => State::Ready,
        })
        .max()
        .unwrap_or(State::Ready);
    Some(worst)
}

#[cfg(test)]
mod tests {
    use zerohop_core::{Finding, Severity};

    use super::*;

    fn finding(group: &str, status: Status) -> Finding {
        Finding {
            id: "X001".into(),
            name: "x".into(),
            group: group.into(),
            status,
            severity: Severity::Error,
            subject: String::new(),
            message: "m".into(),
            evidence: vec![],
            remediation: None,
            blocked_by: None,
            location: None,
            object: None,
        }
    }

    fn names(report: &Report) -> Vec<(&'static str, State)> {
        states(report)
            .into_iter()
            .map(|(c, s)| (c.name, s))
            .collect()
    }

    #[test]
    fn a_capability_applies_only_when_its_hardware_is_there() {
        // RDMA without a GPU: no GPUDirect RDMA label at all.
        let report = Report::new(
            "doctor",
            "/",
            vec![
                finding("rdma", Status::Pass),
                finding("gpu", Status::NotApplicable),
            ],
        );
        assert_eq!(names(&report), []);
    }

    #[test]
    fn the_worst_finding_decides() {
        let report = Report::new(
            "doctor",
            "/",
            vec![
                finding("rdma", Status::Pass),
                finding("gpu", Status::Pass),
                finding("qos", Status::Warn),
                finding("nfs", Status::Pass),
                finding("nfs", Status::Blocked),
                finding("gds", Status::Pass),
                finding("memory", Status::Fail),
            ],
        );
        assert_eq!(
            names(&report),
            [
                ("gpudirect-rdma", State::Degraded),
                ("nfs-rdma", State::Broken),
                ("gds", State::Ready),
            ]
        );
    }
}
