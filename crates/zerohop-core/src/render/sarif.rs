//! SARIF 2.1.0, the format code-scanning services (GitHub, GitLab, Azure
//! DevOps) read: one run, the rules as the tool's `driver.rules`, one result
//! per problem with its physical location and the Kubernetes object as a
//! logical location.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::finding::{Finding, Severity, Status};
use crate::report::Report;
use crate::rule::RuleInfo;

/// The SARIF schema the document declares.
pub const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// What the columns of every region count: characters (Unicode code
/// points), as findings' locations do (SARIF 2.1.0 §3.14.17; its default,
/// UTF-16 code units, would misplace every column after a character beyond
/// U+FFFF).
pub const COLUMN_KIND: &str = "unicodeCodePoints";

/// Writes `report` as a SARIF 2.1.0 log. `rules` are the rules that ran
/// (all of them, so that a viewer can explain a rule that found nothing);
/// findings of rules not in `rules` are still written, without a rule index.
pub fn write(report: &Report, rules: &[&RuleInfo], out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &to_value(report, rules))?;
    writeln!(out)
}

/// The SARIF log as a JSON value.
pub fn to_value(report: &Report, rules: &[&RuleInfo]) -> Value {
    let descriptors: Vec<Value> = rules.iter().map(|rule| descriptor(rule)).collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Fail | Status::Warn | Status::Info))
        .map(|finding| result(finding, rules))
        .collect();
    json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "zerohop",
                    "version": report.zerohop_version,
                    "informationUri": "https://github.com/zerohop/zerohop",
                    "rules": descriptors,
                }
            },
            "columnKind": COLUMN_KIND,
            "results": results,
        }]
    })
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn status_level(status: Status) -> &'static str {
    match status {
        Status::Fail => "error",
        Status::Warn => "warning",
        _ => "note",
    }
}

fn descriptor(rule: &RuleInfo) -> Value {
    json!({
        "id": rule.id,
        "name": rule.name,
        "shortDescription": { "text": rule.summary() },
        "fullDescription": { "text": rule.summary() },
        "help": { "text": rule.docs, "markdown": rule.docs },
        "defaultConfiguration": { "level": level(rule.severity) },
        "properties": { "tags": [rule.group] },
    })
}

fn result(finding: &Finding, rules: &[&RuleInfo]) -> Value {
    let mut text = finding.message.clone();
    if let Some(fix) = &finding.remediation {
        text.push_str("; fix: ");
        text.push_str(&fix.summary);
    }
    let mut location = serde_json::Map::new();
    if let Some(at) = &finding.location {
        let mut region = json!({ "startLine": at.line, "startColumn": at.column });
        if let (Some(line), Some(column)) = (at.end_line, at.end_column) {
            region["endLine"] = json!(line);
            region["endColumn"] = json!(column);
        }
        location.insert(
            "physicalLocation".to_owned(),
            json!({ "artifactLocation": { "uri": uri(&at.file) }, "region": region }),
        );
    }
    if let Some(object) = &finding.object {
        let namespace = object
            .namespace
            .as_deref()
            .map_or(String::new(), |ns| format!("{ns}/"));
        location.insert(
            "logicalLocations".to_owned(),
            json!([{
                "fullyQualifiedName": format!("{}/{namespace}{}", object.kind, object.name),
                "kind": "object",
            }]),
        );
    }
    let mut value = json!({
        "ruleId": finding.id,
        "level": status_level(finding.status),
        "message": { "text": text },
        "locations": [Value::Object(location)],
    });
    if let Some(index) = rules.iter().position(|rule| rule.id == finding.id) {
        value["ruleIndex"] = json!(index);
    }
    if !finding.subject.is_empty() {
        value["properties"] = json!({ "subject": finding.subject });
    }
    value
}

/// A relative URI reference for a file name: `/` separators, and characters
/// outside the URI unreserved set percent-encoded. Standard input is
/// `stdin`.
fn uri(file: &str) -> String {
    if file == "-" {
        return "stdin".to_owned();
    }
    let mut out = String::with_capacity(file.len());
    for byte in file.replace('\\', "/").bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Location, Remediation};

    const RULE: RuleInfo = RuleInfo {
        id: "ZL030",
        name: "nicclusterpolicy-name-ignored",
        group: "lint",
        severity: Severity::Error,
        docs: "Only nic-cluster-policy is reconciled.\n## What it checks\na\n## Why it matters\nb\n## How to fix\nc\n",
        location: "x.rs#L1",
    };

    #[test]
    fn results_carry_rule_region_and_level() {
        let finding = Finding {
            id: "ZL030".into(),
            name: RULE.name.into(),
            group: "lint".into(),
            status: Status::Fail,
            severity: Severity::Error,
            subject: "metadata.name".into(),
            message: "ignored".into(),
            evidence: vec![],
            remediation: Some(Remediation::new("rename it")),
            blocked_by: None,
            location: Some(Location {
                file: "dir/my file.yaml".into(),
                line: 4,
                column: 9,
                end_line: Some(4),
                end_column: Some(20),
            }),
            object: None,
        };
        let report = Report::new("lint", "dir", vec![finding]);
        let value = to_value(&report, &[&RULE]);
        assert_eq!(value["version"], "2.1.0");
        assert_eq!(value["runs"][0]["columnKind"], "unicodeCodePoints");
        let result = &value["runs"][0]["results"][0];
        assert_eq!(result["ruleId"], "ZL030");
        assert_eq!(result["ruleIndex"], 0);
        assert_eq!(result["level"], "error");
        assert_eq!(result["message"]["text"], "ignored; fix: rename it");
        let physical = &result["locations"][0]["physicalLocation"];
        assert_eq!(physical["artifactLocation"]["uri"], "dir/my%20file.yaml");
        assert_eq!(physical["region"]["startLine"], 4);
        assert_eq!(physical["region"]["endColumn"], 20);
        let rule = &value["runs"][0]["tool"]["driver"]["rules"][0];
        assert_eq!(rule["defaultConfiguration"]["level"], "error");
        assert_eq!(
            rule["shortDescription"]["text"],
            "Only nic-cluster-policy is reconciled."
        );
    }
}
