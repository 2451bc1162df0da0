//! How `fleet` shows the cluster: a table for people, one versioned JSON
//! document for scripts.

use std::fmt::Write as _;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};
use zerohop_core::Document;
use zerohop_core::render::printable::printable;

use super::state::{Row, State, by_check};
use crate::capabilities::CAPABILITIES;

/// The most nodes named per check in the table; JSON names them all.
const NODES_PER_CHECK: usize = 5;

/// What one look at the cluster found.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    /// The data path nodes, worst state first, then by name.
    pub rows: Vec<Row>,
    /// Nodes with neither the condition nor a GPU or RDMA device.
    pub other_nodes: usize,
    /// Whether `DataPathReport` objects could be listed.
    pub report_objects: bool,
    /// The interval assumed for heartbeats.
    pub interval: Duration,
    /// When the look was taken.
    pub taken_at: Timestamp,
}

impl Fleet {
    /// Sorts the rows: worst state first, then by node name.
    pub fn new(
        mut rows: Vec<Row>,
        other_nodes: usize,
        report_objects: bool,
        interval: Duration,
        taken_at: Timestamp,
    ) -> Fleet {
        rows.sort_by(|a, b| a.state.cmp(&b.state).then_with(|| a.node.cmp(&b.node)));
        Fleet {
            rows,
            other_nodes,
            report_objects,
            interval,
            taken_at,
        }
    }

    /// How many rows are in `state`.
    pub fn count(&self, state: State) -> usize {
        self.rows.iter().filter(|r| r.state == state).count()
    }

    /// 0 when every data path node is ready, 1 otherwise (a node is not
    /// ready, unknown, stale or without agent), as the doctor's codes.
    pub fn exit_code(&self) -> i32 {
        if self.rows.iter().all(|r| r.state == State::Ready) {
            zerohop_core::exit::ExitCode::OK
        } else {
            zerohop_core::exit::ExitCode::FAILED
        }
    }
}

/// The one-line summary under the tables.
fn summary(fleet: &Fleet) -> String {
    let mut line = format!(
        "{} data path nodes: {} ready, {} not ready, {} unknown, {} stale, {} without agent",
        fleet.rows.len(),
        fleet.count(State::Ready),
        fleet.count(State::NotReady),
        fleet.count(State::Unknown),
        fleet.count(State::Stale),
        fleet.count(State::NoAgent),
    );
    if fleet.other_nodes > 0 {
        let _ = write!(
            line,
            "; {} other nodes (no GPU or RDMA, no agent)",
            fleet.other_nodes
        );
    }
    if !fleet.report_objects {
        line.push_str("; no DataPathReport objects (failing checks from the condition message)");
    }
    line
}

/// The node table.
pub fn nodes_table(fleet: &Fleet) -> String {
    let mut header = vec![
        "NODE".to_owned(),
        "STATE".to_owned(),
        "HEARTBEAT".to_owned(),
    ];
    header.extend(CAPABILITIES.iter().map(|c| c.name.to_uppercase()));
    header.push("REASON".to_owned());
    header.push("FAILING".to_owned());
    let mut table = vec![header];
    for row in &fleet.rows {
        let mut state = row.state.as_str().to_owned();
        if row.cordoned {
            state.push_str(",Cordoned");
        }
        let mut cells = vec![
            printable(&row.node).into_owned(),
            state,
            row.heartbeat_age.map_or_else(|| "-".to_owned(), age),
        ];
        cells.extend(CAPABILITIES.iter().map(|c| {
            row.capabilities
                .get(c.name)
                .map_or_else(|| "-".to_owned(), |v| printable(v).into_owned())
        }));
        cells.push(if row.reason.is_empty() {
            "-".to_owned()
        } else {
            printable(&row.reason).into_owned()
        });
        cells.push(ids(row.failing.iter(), row.failing.len(), 6));
        table.push(cells);
    }
    let mut out = columns(&table);
    out.push_str(&summary(fleet));
    out.push('\n');
    out
}

/// The check table: which nodes fail what.
pub fn checks_table(fleet: &Fleet) -> String {
    let checks = by_check(&fleet.rows);
    let judged = fleet
        .rows
        .iter()
        .filter(|r| matches!(r.state, State::Ready | State::NotReady))
        .count();
    let mut table = vec![vec![
        "CHECK".to_owned(),
        "NODES".to_owned(),
        "FAILING ON".to_owned(),
    ]];
    let mut sorted: Vec<(&String, &Vec<String>)> = checks.iter().collect();
    sorted.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(b.0)));
    for (id, nodes) in sorted {
        table.push(vec![
            printable(id).into_owned(),
            format!("{}/{judged}", nodes.len()),
            ids(nodes.iter(), nodes.len(), NODES_PER_CHECK),
        ]);
    }
    let mut out = if checks.is_empty() {
        "no check fails on any node\n".to_owned()
    } else {
        columns(&table)
    };
    out.push_str(&summary(fleet));
    out.push('\n');
    out
}

/// `a, b, c (+4)`.
fn ids<'a>(items: impl Iterator<Item = &'a String>, total: usize, shown: usize) -> String {
    if total == 0 {
        return "-".to_owned();
    }
    let mut text = items
        .take(shown)
        .map(|s| printable(s).into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    if total > shown {
        let _ = write!(text, " (+{})", total - shown);
    }
    text
}

/// `45s`, `12m`, `3h`, `2d`: an age at a glance.
pub(crate) fn age(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..120 => format!("{seconds}s"),
        120..7200 => format!("{}m", seconds / 60),
        7200..172_800 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

/// Left-aligned columns, two spaces apart, widths in characters.
fn columns(table: &[Vec<String>]) -> String {
    let columns = table.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            table
                .iter()
                .map(|row| row.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < row.len() {
                let pad = widths[c] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The JSON document, in the envelope every zerohop document shares.
pub fn json(fleet: &Fleet) -> Value {
    let nodes: Vec<Value> = fleet
        .rows
        .iter()
        .map(|row| {
            json!({
                "name": row.node,
                "state": row.state.as_str(),
                "reason": row.reason,
                "message": row.message,
                "heartbeat_age_seconds": row.heartbeat_age.map(|a| a.as_secs()),
                "failing": row.failing,
                "capabilities": row.capabilities,
                "cordoned": row.cordoned,
            })
        })
        .collect();
    let checks: Vec<Value> = by_check(&fleet.rows)
        .into_iter()
        .map(|(id, nodes)| json!({ "id": id, "nodes": nodes }))
        .collect();
    let body = json!({
        "generated_at": fleet.taken_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "interval_seconds": fleet.interval.as_secs(),
        "report_objects": fleet.report_objects,
        "summary": {
            "nodes": fleet.rows.len(),
            "ready": fleet.count(State::Ready),
            "not_ready": fleet.count(State::NotReady),
            "unknown": fleet.count(State::Unknown),
            "stale": fleet.count(State::Stale),
            "no_agent": fleet.count(State::NoAgent),
            "other_nodes": fleet.other_nodes,
        },
        "nodes": nodes,
        "checks": checks,
    });
    // A `Value` always serialises: the fallback is never taken.
    serde_json::to_value(Document::new("fleet", &body)).unwrap_or(body)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    fn row(node: &str, state: State, failing: &[&str]) -> Row {
        Row {
            node: node.into(),
            state,
            reason: if failing.is_empty() {
                "DataPathReady".into()
            } else {
                "RdmaPortDown".into()
            },
            message: String::new(),
            heartbeat_age: Some(Duration::from_secs(42)),
            failing: failing
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<BTreeSet<_>>(),
            capabilities: BTreeMap::from([("gpudirect-rdma", "ready".to_owned())]),
            cordoned: false,
        }
    }

    fn fleet() -> Fleet {
        Fleet::new(
            vec![
                row("gpu-b", State::Ready, &[]),
                row("gpu-a\u{1b}[2J", State::NotReady, &["RDMA004", "GPU012"]),
                row("gpu-c", State::NotReady, &["RDMA004"]),
            ],
            7,
            true,
            Duration::from_secs(300),
            Timestamp::from_second(1_800_000_000).unwrap(),
        )
    }

    #[test]
    fn the_node_table_puts_the_worst_first_and_escapes_names() {
        insta::assert_snapshot!(nodes_table(&fleet()), @r"
        NODE          STATE     HEARTBEAT  GPUDIRECT-RDMA  NFS-RDMA  GDS  REASON         FAILING
        gpu-a\x1b[2J  NotReady  42s        ready           -         -    RdmaPortDown   GPU012, RDMA004
        gpu-c         NotReady  42s        ready           -         -    RdmaPortDown   RDMA004
        gpu-b         Ready     42s        ready           -         -    DataPathReady  -
        3 data path nodes: 1 ready, 2 not ready, 0 unknown, 0 stale, 0 without agent; 7 other nodes (no GPU or RDMA, no agent)
        ");
        assert_eq!(fleet().exit_code(), 1);
    }

    #[test]
    fn the_check_table_says_which_nodes_fail_what() {
        insta::assert_snapshot!(checks_table(&fleet()), @r"
        CHECK    NODES  FAILING ON
        RDMA004  2/3    gpu-a\x1b[2J, gpu-c
        GPU012   1/3    gpu-a\x1b[2J
        3 data path nodes: 1 ready, 2 not ready, 0 unknown, 0 stale, 0 without agent; 7 other nodes (no GPU or RDMA, no agent)
        ");
    }

    #[test]
    fn the_json_document_lists_nodes_and_checks() {
        let value = json(&fleet());
        assert_eq!(value["schema_version"], 1);
        assert_eq!(value["summary"]["not_ready"], 2);
        assert_eq!(value["nodes"][0]["state"], "NotReady");
        assert_eq!(value["checks"][1]["id"], "RDMA004");
        assert_eq!(
            value["checks"][1]["nodes"],
            json!(["gpu-a\u{1b}[2J", "gpu-c"])
        );
    }
}
