//! The Prometheus text format (version 0.0.4) from OpenMetrics text.
//!
//! `prometheus-client` writes OpenMetrics only. The classic format differs
//! in the few ways handled here, for the metric types zerohop uses
//! (gauge, counter, info):
//! - a counter family is named with its `_total` suffix in `# HELP` and
//!   `# TYPE` (OpenMetrics names the family without it);
//! - there is no `info` type: the family is a gauge named `<name>_info`;
//! - there are no `# UNIT` lines, no `_created` samples and no `# EOF`.
//!
//! Samples, label escaping and values are the same in both formats.

/// Converts OpenMetrics text (with or without `# EOF`) to the classic text
/// format.
pub fn from_openmetrics(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut families: Vec<(String, &str)> = Vec::new();
    // First pass: the type of each family, so that `# HELP` (which comes
    // before `# TYPE`) can be renamed too.
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some((name, kind)) = rest.rsplit_once(' ')
        {
            families.push((name.to_owned(), kind));
        }
    }
    let kind_of = |name: &str| {
        families
            .iter()
            .find(|(family, _)| family == name)
            .map(|(_, kind)| *kind)
    };
    for line in text.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push_str("# HELP ");
            out.push_str(&classic_name(name, kind_of(name)));
            out.push(' ');
            out.push_str(help);
            out.push('\n');
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.rsplit_once(' ').unwrap_or((rest, "unknown"));
            let classic_kind = match kind {
                "counter" | "gauge" | "histogram" | "summary" => kind,
                "info" => "gauge",
                _ => "untyped",
            };
            out.push_str("# TYPE ");
            out.push_str(&classic_name(name, Some(kind)));
            out.push(' ');
            out.push_str(classic_kind);
            out.push('\n');
            continue;
        }
        let sample_name = line.split(['{', ' ']).next().unwrap_or_default();
        if sample_name.ends_with("_created") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn classic_name(name: &str, kind: Option<&str>) -> String {
    match kind {
        Some("counter") => format!("{name}_total"),
        Some("info") => format!("{name}_info"),
        _ => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_infos_are_renamed_and_openmetrics_only_lines_dropped() {
        let openmetrics = "\
# HELP zerohop_passes Passes run.
# TYPE zerohop_passes counter
zerohop_passes_total{outcome=\"completed\"} 3
zerohop_passes_created{outcome=\"completed\"} 1700000000.0
# HELP zerohop_build Build information.
# TYPE zerohop_build info
zerohop_build_info{version=\"0.1.0\"} 1
# HELP zerohop_wait_seconds Wait.
# TYPE zerohop_wait_seconds gauge
# UNIT zerohop_wait_seconds seconds
zerohop_wait_seconds 0.5
# EOF
";
        assert_eq!(
            from_openmetrics(openmetrics),
            "\
# HELP zerohop_passes_total Passes run.
# TYPE zerohop_passes_total counter
zerohop_passes_total{outcome=\"completed\"} 3
# HELP zerohop_build_info Build information.
# TYPE zerohop_build_info gauge
zerohop_build_info{version=\"0.1.0\"} 1
# HELP zerohop_wait_seconds Wait.
# TYPE zerohop_wait_seconds gauge
zerohop_wait_seconds 0.5
"
        );
    }
}
