//! `fleet --format html`: the cluster's data path nodes on one
//! self-contained page, to attach to a ticket: the nodes by state, the
//! failing checks with the nodes they fail on, and the stale agents.

use std::fmt::Write as _;

use zerohop_core::render::html::{escape, page};

use super::state::{State, by_check};
use super::view::{Fleet, age};
use crate::capabilities::CAPABILITIES;

/// The page of one look at the fleet.
pub fn page_of(fleet: &Fleet) -> String {
    let mut body = String::with_capacity(16 * 1024);
    body.push_str("<h1>zerohop fleet</h1>\n<dl class=\"identity\" id=\"identity\">\n");
    let taken = fleet.taken_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let counts: Vec<String> = State::ALL
        .iter()
        .map(|s| format!("{} {}", fleet.count(*s), s.as_str()))
        .collect();
    let mut rows = vec![
        ("looked at", taken),
        (
            "nodes",
            format!("{}: {}", fleet.rows.len(), counts.join(", ")),
        ),
        ("agent interval", format!("{} s", fleet.interval.as_secs())),
    ];
    if fleet.other_nodes > 0 {
        rows.push((
            "other nodes",
            format!("{} (no GPU or RDMA, no agent)", fleet.other_nodes),
        ));
    }
    if !fleet.report_objects {
        rows.push((
            "report objects",
            "none readable: failing checks from the condition message".to_owned(),
        ));
    }
    for (name, value) in rows {
        let _ = writeln!(body, "<dt>{name}</dt><dd>{}</dd>", escape(&value));
    }
    body.push_str("</dl>\n");
    nodes(fleet, &mut body);
    checks(fleet, &mut body);
    stale(fleet, &mut body);
    page("zerohop fleet", &body)
}

/// One table per state, worst first.
fn nodes(fleet: &Fleet, out: &mut String) {
    out.push_str("<h2 id=\"nodes\">Nodes by state</h2>\n");
    if fleet.rows.is_empty() {
        out.push_str("<p>no data path node</p>\n");
    }
    for state in State::ALL {
        let rows: Vec<_> = fleet.rows.iter().filter(|r| r.state == state).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<h3 class=\"{0}\">{0} ({1})</h3>\n<table class=\"nodes\"><thead><tr><th style=\"width:18%\">node</th><th style=\"width:8%\">heartbeat</th><th style=\"width:22%\">capabilities</th><th style=\"width:16%\">reason</th><th style=\"width:14%\">failing</th><th>message</th></tr></thead><tbody>",
            state.as_str(),
            rows.len()
        );
        for row in rows {
            let capabilities: Vec<String> = CAPABILITIES
                .iter()
                .filter_map(|c| {
                    row.capabilities
                        .get(c.name)
                        .map(|v| format!("{}={v}", c.name))
                })
                .collect();
            let cordoned = if row.cordoned { " (cordoned)" } else { "" };
            let failing: Vec<&str> = row.failing.iter().map(String::as_str).collect();
            let _ = writeln!(
                out,
                "<tr class=\"node\"><td>{}{cordoned}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&row.node),
                row.heartbeat_age.map_or_else(|| "-".to_owned(), age),
                escape(&capabilities.join(", ")),
                escape(&row.reason),
                escape(&failing.join(", ")),
                escape(&row.message),
            );
        }
        out.push_str("</tbody></table>\n");
    }
}

/// Each failing check with every node it fails on, most nodes first.
fn checks(fleet: &Fleet, out: &mut String) {
    out.push_str("<h2 id=\"failing\">Failing checks</h2>\n");
    let checks = by_check(&fleet.rows);
    if checks.is_empty() {
        out.push_str("<p>no check fails on any node</p>\n");
        return;
    }
    let mut sorted: Vec<_> = checks.iter().collect();
    sorted.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(b.0)));
    out.push_str("<table class=\"checks\"><thead><tr><th style=\"width:14%\">check</th><th style=\"width:10%\">nodes</th><th>failing on</th></tr></thead><tbody>\n");
    for (id, nodes) in sorted {
        let _ = writeln!(
            out,
            "<tr class=\"check\"><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(id),
            nodes.len(),
            escape(&nodes.join(", "))
        );
    }
    out.push_str("</tbody></table>\n");
}

/// The nodes whose agent stopped reporting.
fn stale(fleet: &Fleet, out: &mut String) {
    out.push_str("<h2 id=\"stale\">Stale agents</h2>\n");
    let rows: Vec<_> = fleet
        .rows
        .iter()
        .filter(|r| r.state == State::Stale)
        .collect();
    if rows.is_empty() {
        out.push_str("<p>none: every agent reported within three intervals</p>\n");
        return;
    }
    out.push_str("<ul>\n");
    for row in rows {
        let _ = writeln!(
            out,
            "<li>{}: last heartbeat {} ago</li>",
            escape(&row.node),
            row.heartbeat_age.map_or_else(|| "?".to_owned(), age)
        );
    }
    out.push_str("</ul>\n");
}
