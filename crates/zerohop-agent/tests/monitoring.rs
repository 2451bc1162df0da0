//! The alerts (`PrometheusRule`) and the Grafana dashboard rendered with
//! the agent ask only for what the agent serves: every expression parses
//! as PromQL (the `promql-parser` crate), every selector names a metric
//! family the agent's `/metrics` serves, every label it matches on, groups
//! by or joins on is one those series carry, every label an alert's
//! annotations or a panel's legend prints is one the expression keeps,
//! and every check ID it matches is one of the doctor's.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use promql_parser::parser::{self, Expr, LabelModifier};
use serde_json::Value;
use zerohop_agent::counters::Sample;
use zerohop_agent::counters::nfs::{self, MountSample, ProtocolSums};
use zerohop_agent::counters::rdma::{self, PortRef, PortSample};
use zerohop_agent::metrics::{self, Format, Live};
use zerohop_agent::snapshot::Snapshot;
use zerohop_core::{Finding, Report, Severity, Status};
use zerohop_plan::agent::monitoring;
use zerohop_plan::{AgentPlan, Monitor, Platform};

/// Labels Prometheus adds to every scraped series itself: the target's
/// (`job`, `instance`) and, through a Prometheus Operator monitor, the
/// pod's (`namespace`, `pod`, `container`, `service`, `endpoint`).
const TARGET_LABELS: [&str; 7] = [
    "job",
    "instance",
    "namespace",
    "pod",
    "container",
    "service",
    "endpoint",
];

/// Every family the agent serves, with the labels of its series: from a
/// pass with findings of every status, a counter sample with every
/// counter, and the agent's own counters.
fn catalog() -> BTreeMap<String, BTreeSet<String>> {
    let findings = [Status::Fail, Status::Unknown, Status::Pass]
        .into_iter()
        .map(|status| Finding {
            id: "KLOG002".into(),
            name: "rdma-link-flaps".into(),
            group: "kernel-log".into(),
            status,
            severity: Severity::Error,
            subject: "mlx5_0".into(),
            message: "m".into(),
            evidence: vec![],
            remediation: None,
            blocked_by: None,
            location: None,
            object: None,
        })
        .collect();
    let report = Report::new("doctor", "/host", findings);
    let snapshot = Snapshot::completed(
        "n1",
        1,
        Timestamp::UNIX_EPOCH,
        Duration::ZERO,
        report,
        Default::default(),
    );
    let sample = Sample {
        taken_at: Timestamp::UNIX_EPOCH,
        duration: Duration::ZERO,
        ports: vec![PortSample {
            port: PortRef {
                device: "mlx5_0".into(),
                port: 1,
            },
            state: Some(4),
            values: (0..rdma::SPECS.len()).map(|i| (i, 1)).collect(),
        }],
        mounts: vec![MountSample {
            mount_point: "/mnt".into(),
            export: "srv:/x".into(),
            protocols: BTreeMap::from([(
                "rdma".to_owned(),
                ProtocolSums {
                    transports: 1,
                    common: vec![Some(1); nfs::COMMON.len()],
                    rdma: vec![Some(1); nfs::RDMA.len()],
                },
            )]),
        }],
        failures: 0,
    };
    let live = Live::default();
    // A failed call, so that the per-status error counter is in the text.
    live.api_failed(
        metrics::ApiCall::Condition,
        &zerohop_cluster::api::ApiError {
            code: Some(503),
            message: "service unavailable".to_owned(),
            retry_after: None,
        },
    );
    let live = metrics::encode_live("n1", &live);
    let counters = metrics::encode_counters("n1", &sample);
    let text = metrics::assemble(Format::Classic, &[&live, snapshot.exposition(), &counters]);
    let mut catalog: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&text).lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (name, labels) = match line.split_once('{') {
            Some((name, rest)) => (name, rest.rsplit_once('}').map_or("", |(l, _)| l)),
            None => (line.split(' ').next().unwrap_or_default(), ""),
        };
        let entry = catalog.entry(name.to_owned()).or_default();
        // Label values here hold no `",` sequence: names are what is
        // before each `="`.
        for pair in labels.split("\",") {
            if let Some((key, _)) = pair.split_once("=\"") {
                entry.insert(key.trim().to_owned());
            }
        }
    }
    assert!(
        catalog.len() > 50,
        "the exposition is too small to judge by"
    );
    catalog
}

/// The labels the series of `expr` carry, checking on the way that each
/// selector names a served family and each label named is one it has.
fn labels_of(
    expr: &Expr,
    catalog: &BTreeMap<String, BTreeSet<String>>,
    problems: &mut Vec<String>,
) -> BTreeSet<String> {
    match expr {
        Expr::VectorSelector(selector) => selector_labels(selector, catalog, problems),
        Expr::MatrixSelector(matrix) => selector_labels(&matrix.vs, catalog, problems),
        Expr::Paren(paren) => labels_of(&paren.expr, catalog, problems),
        Expr::Unary(unary) => labels_of(&unary.expr, catalog, problems),
        Expr::Subquery(subquery) => labels_of(&subquery.expr, catalog, problems),
        Expr::Aggregate(aggregate) => {
            let inner = labels_of(&aggregate.expr, catalog, problems);
            match &aggregate.modifier {
                Some(LabelModifier::Include(by)) => {
                    let by: BTreeSet<String> = by.labels.iter().cloned().collect();
                    for label in by.difference(&inner) {
                        problems.push(format!(
                            "grouped by {label}, which {} lacks",
                            aggregate.expr
                        ));
                    }
                    by
                }
                Some(LabelModifier::Exclude(without)) => inner
                    .into_iter()
                    .filter(|l| !without.labels.contains(l))
                    .collect(),
                None => BTreeSet::new(),
            }
        }
        Expr::Binary(binary) => {
            let left = labels_of(&binary.lhs, catalog, problems);
            let right = labels_of(&binary.rhs, catalog, problems);
            if let Some(LabelModifier::Include(on)) =
                binary.modifier.as_ref().and_then(|m| m.matching.as_ref())
            {
                for label in &on.labels {
                    for (side, labels) in [(&binary.lhs, &left), (&binary.rhs, &right)] {
                        if !labels.contains(label) {
                            problems.push(format!("joined on {label}, which {side} lacks"));
                        }
                    }
                }
            }
            match binary.op.to_string().as_str() {
                "or" => left.union(&right).cloned().collect(),
                _ if left.is_empty() => right,
                _ => left,
            }
        }
        Expr::Call(call) => {
            let mut labels = BTreeSet::new();
            for arg in &call.args.args {
                labels.extend(labels_of(arg, catalog, problems));
            }
            // absent() keeps only equality matchers' labels; none here.
            if call.func.name == "absent" {
                labels.clear();
            }
            labels
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => BTreeSet::new(),
    }
}

fn selector_labels(
    selector: &parser::VectorSelector,
    catalog: &BTreeMap<String, BTreeSet<String>>,
    problems: &mut Vec<String>,
) -> BTreeSet<String> {
    let Some(name) = &selector.name else {
        problems.push(format!("{selector} names no metric"));
        return BTreeSet::new();
    };
    let Some(labels) = catalog.get(name) else {
        problems.push(format!("{name} is not served by the agent"));
        return BTreeSet::new();
    };
    let mut labels = labels.clone();
    labels.extend(TARGET_LABELS.iter().map(|l| (*l).to_owned()));
    for matcher in &selector.matchers.matchers {
        if !labels.contains(&matcher.name) {
            problems.push(format!("{name} has no label {}", matcher.name));
        }
        if matcher.name == "check" {
            for id in matcher.value.split('|') {
                if !zerohop_doctor::checks::CHECKS
                    .iter()
                    .any(|check| check.info.id == id)
                {
                    problems.push(format!("{name}{{check={id:?}}}: no such check"));
                }
            }
        }
    }
    labels
}

/// The labels a Go template or a Grafana legend prints: `{{ $labels.x }}`
/// and `{{x}}`.
fn printed_labels(text: &str) -> Vec<String> {
    text.split("{{")
        .skip(1)
        .filter_map(|rest| rest.split("}}").next())
        .map(|inside| inside.trim().trim_start_matches("$labels.").to_owned())
        .collect()
}

/// Parses `expr` and checks it and the labels `printed` against the
/// catalog.
fn judge(
    what: &str,
    expr: &str,
    printed: &[String],
    catalog: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let parsed = match parser::parse(expr) {
        Ok(parsed) => parsed,
        Err(err) => return vec![format!("{what}: {expr}: does not parse: {err}")],
    };
    let mut problems = Vec::new();
    let labels = labels_of(&parsed, catalog, &mut problems);
    for label in printed {
        if !labels.contains(label) {
            problems.push(format!("prints {label}, which the expression drops"));
        }
    }
    problems
        .into_iter()
        .map(|problem| format!("{what}: {problem}"))
        .collect()
}

fn prometheus_rule() -> Value {
    let settings = AgentPlan {
        monitors: vec![Monitor::PrometheusRule],
        ..AgentPlan::default()
    };
    zerohop_plan::agent::objects(&settings, Platform::Kubernetes)
        .into_iter()
        .find(|o| o["kind"] == "PrometheusRule")
        .expect("a PrometheusRule")
}

#[test]
fn every_alert_asks_for_what_the_agent_serves() {
    let catalog = catalog();
    let rule = prometheus_rule();
    let mut problems = Vec::new();
    let mut names = BTreeSet::new();
    for group in rule["spec"]["groups"].as_array().unwrap() {
        for alert in group["rules"].as_array().unwrap() {
            let name = alert["alert"].as_str().expect("an alerting rule");
            assert!(names.insert(name), "{name} twice");
            let mut printed = Vec::new();
            for text in alert["annotations"].as_object().unwrap().values() {
                printed.extend(printed_labels(text.as_str().unwrap()));
            }
            problems.extend(judge(
                name,
                alert["expr"].as_str().unwrap(),
                &printed,
                &catalog,
            ));
            assert!(alert["labels"]["severity"].is_string(), "{name}");
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    // The alerts the operators asked for.
    for wanted in [
        "ZerohopDataPathNotReady",
        "ZerohopRdmaLinkFlapping",
        "ZerohopNfsFellBackToTcp",
        "ZerohopGpuDirectErrors",
        "ZerohopAgentStale",
        "ZerohopAgentAbsent",
    ] {
        assert!(names.contains(wanted), "{wanted} is missing");
    }
}

#[test]
fn every_panel_asks_for_what_the_agent_serves() {
    let catalog = catalog();
    let dashboard = monitoring::dashboard();
    let mut problems = Vec::new();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 8);
    for panel in panels {
        let title = panel["title"].as_str().unwrap();
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title}");
        let ref_ids: BTreeSet<&str> = targets
            .iter()
            .map(|t| t["refId"].as_str().unwrap())
            .collect();
        assert_eq!(ref_ids.len(), targets.len(), "{title}: refIds repeat");
        for target in targets {
            let printed = printed_labels(target["legendFormat"].as_str().unwrap_or_default());
            problems.extend(judge(
                title,
                target["expr"].as_str().unwrap(),
                &printed,
                &catalog,
            ));
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{title}");
        }
        let grid = &panel["gridPos"];
        let right = grid["x"].as_u64().unwrap() + grid["w"].as_u64().unwrap();
        assert!(right <= 24, "{title} is wider than the grid");
    }
    assert!(problems.is_empty(), "{problems:#?}");
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    assert!(
        variables
            .iter()
            .any(|v| v["name"] == "datasource" && v["type"] == "datasource")
    );
}

/// The judge itself: a family that is not served, a label a family does
/// not have, a check that does not exist, a join on a missing label and a
/// legend of a dropped label are each found.
#[test]
fn the_judge_finds_what_the_agent_does_not_serve() {
    let catalog = catalog();
    for (expr, printed) in [
        ("zerohop_no_such_metric", vec![]),
        (r#"zerohop_data_path_status{device="x"}"#, vec![]),
        (r#"zerohop_check_status{check="NOPE001"}"#, vec![]),
        (
            "zerohop_build_info unless on (mountpoint) zerohop_nfs_transports",
            vec![],
        ),
        ("sum by (device) (zerohop_data_path_status)", vec![]),
        (
            "sum by (node) (zerohop_infiniband_state_id)",
            vec!["device".to_owned()],
        ),
        ("sum by (node (", vec![]),
    ] {
        assert!(
            !judge("test", expr, &printed, &catalog).is_empty(),
            "{expr} passed"
        );
    }
    assert_eq!(
        judge(
            "test",
            "sum by (node, device) (rate(zerohop_infiniband_symbol_error_total[5m]))",
            &["device".to_owned()],
            &catalog
        ),
        Vec::<String>::new()
    );
}
