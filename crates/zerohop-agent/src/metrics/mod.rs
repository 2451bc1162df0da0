//! `/metrics`: the last pass, the last counter sample and the agent's own
//! counters, in OpenMetrics or the classic Prometheus text format.
//!
//! Every series carries a constant `node` label (from the downward API),
//! so a series means the same thing however it is scraped. Series exist
//! only for what the last pass found: when a problem is fixed, its `fail`
//! series disappears instead of staying at a stale value. The names are
//! documented in `docs/metrics.md` and are stable.

pub mod classic;
mod live;

use std::borrow::Cow;
use std::collections::BTreeMap;

use bytes::Bytes;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode_registry;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use zerohop_core::Status;

pub use live::{ApiCall, Live, PassOutcome};

use crate::counters::{Sample, nfs, rdma};
use crate::snapshot::Snapshot;

/// The prefix of every metric.
pub const PREFIX: &str = "zerohop";

/// The two formats `/metrics` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
    /// The Prometheus text format 0.0.4.
    Classic,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Classic => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Picks the format from an `Accept` header: OpenMetrics when the client
/// ranks it at least as high as the classic text format, the classic
/// format otherwise (and for clients that send nothing, like `curl`).
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Classic;
    };
    let mut openmetrics: f32 = 0.0;
    let mut classic: f32 = 0.0;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut quality: f32 = 1.0;
        for parameter in parts {
            if let Some(value) = parameter.strip_prefix("q=") {
                quality = value.parse().unwrap_or(0.0);
            }
        }
        match media.as_str() {
            "application/openmetrics-text" => openmetrics = openmetrics.max(quality),
            "text/plain" | "text/*" | "*/*" => classic = classic.max(quality),
            _ => {}
        }
    }
    if openmetrics > 0.0 && openmetrics >= classic {
        Format::OpenMetrics
    } else {
        Format::Classic
    }
}

/// A part of the exposition, in both formats, without `# EOF`.
#[derive(Debug, Clone)]
pub struct Exposition {
    /// OpenMetrics text.
    pub openmetrics: Bytes,
    /// Classic text.
    pub classic: Bytes,
}

impl Exposition {
    fn from_openmetrics(text: String) -> Exposition {
        Exposition {
            classic: Bytes::from(classic::from_openmetrics(&text)),
            openmetrics: Bytes::from(text),
        }
    }

    /// This part in `format`.
    pub fn get(&self, format: Format) -> &Bytes {
        match format {
            Format::OpenMetrics => &self.openmetrics,
            Format::Classic => &self.classic,
        }
    }
}

/// The whole response body: the parts in order, then `# EOF` for
/// OpenMetrics.
pub fn assemble(format: Format, parts: &[&Exposition]) -> Vec<u8> {
    let size: usize = parts.iter().map(|p| p.get(format).len()).sum();
    let mut body = Vec::with_capacity(size + 6);
    for part in parts {
        body.extend_from_slice(part.get(format));
    }
    if format == Format::OpenMetrics {
        body.extend_from_slice(b"# EOF\n");
    }
    body
}

/// Encodes one collector under the prefix and the `node` label.
fn encode(node: &str, collector: impl Collector) -> Exposition {
    let labels = [(Cow::Borrowed("node"), Cow::Owned(node.to_owned()))];
    let mut registry = Registry::with_prefix_and_labels(PREFIX, labels.into_iter());
    registry.register_collector(Box::new(collector));
    let mut text = String::new();
    // Encoding into a String cannot fail.
    let _ = encode_registry(&mut text, &registry);
    Exposition::from_openmetrics(text)
}

/// A family of gauges with labels.
fn gauges<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (L, f64)>,
) -> Result<(), std::fmt::Error> {
    let mut rows = rows.into_iter().peekable();
    // A family without samples is left out: it would only be noise.
    if rows.peek().is_none() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in rows {
        family.encode_family(&labels)?.encode_gauge(&value)?;
    }
    Ok(())
}

/// A family of counters with labels; the encoder adds `_total`.
fn counters<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (L, u64)>,
) -> Result<(), std::fmt::Error> {
    let mut rows = rows.into_iter().peekable();
    if rows.peek().is_none() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in rows {
        family
            .encode_family(&labels)?
            .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}

/// A single unlabelled gauge.
fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: f64,
) -> Result<(), std::fmt::Error> {
    encoder
        .encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&value)
}

/// The metrics of one pass.
pub fn encode_snapshot(snapshot: &Snapshot) -> Exposition {
    encode(&snapshot.node, SnapshotCollector(snapshot_rows(snapshot)))
}

/// Everything the snapshot collector writes, computed before encoding so
/// that the collector owns its data (collectors must be `'static`).
#[derive(Debug)]
struct SnapshotRows {
    status: &'static str,
    reason: String,
    completed: bool,
    finished_at: f64,
    duration: f64,
    checks: Vec<[String; 4]>,
    subjects: Vec<([String; 2], usize)>,
    findings: Vec<([String; 2], usize)>,
    capabilities: Vec<[String; 2]>,
}

fn snapshot_rows(snapshot: &Snapshot) -> SnapshotRows {
    let mut checks: BTreeMap<&str, (&str, &str, Status)> = BTreeMap::new();
    let mut subjects: BTreeMap<(&str, Status), usize> = BTreeMap::new();
    let mut findings: BTreeMap<(&str, Status), usize> = BTreeMap::new();
    let mut groups: Vec<&str> = Vec::new();
    for finding in snapshot.report.iter().flat_map(|r| &r.findings) {
        let entry =
            checks
                .entry(&finding.id)
                .or_insert((&finding.name, &finding.group, finding.status));
        entry.2 = entry.2.max(finding.status);
        *subjects.entry((&finding.id, finding.status)).or_default() += 1;
        *findings
            .entry((&finding.group, finding.status))
            .or_default() += 1;
        if !groups.contains(&finding.group.as_str()) {
            groups.push(&finding.group);
        }
    }
    let mut per_group = Vec::new();
    for group in groups {
        for status in Status::ALL {
            let count = findings.get(&(group, status)).copied().unwrap_or(0);
            per_group.push(([group.to_owned(), status.as_str().to_owned()], count));
        }
    }
    SnapshotRows {
        status: snapshot.verdict.readiness.condition_status(),
        reason: snapshot.verdict.reason.clone(),
        completed: snapshot.report.is_some(),
        finished_at: snapshot.finished_at.as_millisecond() as f64 / 1000.0,
        duration: snapshot.duration.as_secs_f64(),
        checks: checks
            .into_iter()
            .map(|(id, (name, group, status))| {
                [
                    id.to_owned(),
                    name.to_owned(),
                    group.to_owned(),
                    status.as_str().to_owned(),
                ]
            })
            .collect(),
        subjects: subjects
            .into_iter()
            .map(|((id, status), n)| ([id.to_owned(), status.as_str().to_owned()], n))
            .collect(),
        findings: per_group,
        capabilities: snapshot
            .capabilities
            .iter()
            .map(|(c, s)| [c.name.to_owned(), s.as_str().to_owned()])
            .collect(),
    }
}

#[derive(Debug)]
struct SnapshotCollector(SnapshotRows);

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let rows = &self.0;
        gauges(
            &mut encoder,
            "data_path_status",
            "The node condition zerohop.dev/DataPathReady as the last pass judged it: 1 for its status and reason",
            [(
                [("status", rows.status), ("reason", rows.reason.as_str())],
                1.0,
            )],
        )?;
        gauges(
            &mut encoder,
            "check_status",
            "1 per check, labelled with its worst status over all subjects in the last pass",
            rows.checks.iter().map(|[id, name, group, status]| {
                (
                    [
                        ("check", id),
                        ("name", name),
                        ("group", group),
                        ("status", status),
                    ],
                    1.0,
                )
            }),
        )?;
        gauges(
            &mut encoder,
            "check_subjects",
            "Subjects (devices, ports, mounts) per check and status in the last pass",
            rows.subjects
                .iter()
                .map(|([id, status], n)| ([("check", id), ("status", status)], *n as f64)),
        )?;
        gauges(
            &mut encoder,
            "findings",
            "Findings per layer and status in the last pass",
            rows.findings
                .iter()
                .map(|([group, status], n)| ([("group", group), ("status", status)], *n as f64)),
        )?;
        gauges(
            &mut encoder,
            "capability",
            "1 per capability the node has, labelled with its state (the Node Feature Discovery label's value)",
            rows.capabilities
                .iter()
                .map(|[name, state]| ([("capability", name), ("state", state)], 1.0)),
        )?;
        gauge(
            &mut encoder,
            "last_pass_completed",
            "1 when the last pass finished, 0 when it hit its deadline or failed",
            if rows.completed { 1.0 } else { 0.0 },
        )?;
        gauge(
            &mut encoder,
            "last_pass_timestamp_seconds",
            "When the last pass ended, in seconds since the Unix epoch",
            rows.finished_at,
        )?;
        gauge(
            &mut encoder,
            "last_pass_duration_seconds",
            "How long the last pass took",
            rows.duration,
        )
    }
}

/// The metrics of one counter sample.
pub fn encode_counters(node: &str, sample: &Sample) -> Exposition {
    encode(node, CounterCollector(sample.clone()))
}

#[derive(Debug)]
struct CounterCollector(Sample);

impl Collector for CounterCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let sample = &self.0;
        gauge(
            &mut encoder,
            "counters_sample_timestamp_seconds",
            "When the RDMA and NFS counters were last read, in seconds since the Unix epoch",
            sample.taken_at.as_millisecond() as f64 / 1000.0,
        )?;
        gauge(
            &mut encoder,
            "counters_sample_duration_seconds",
            "How long reading the counters took",
            sample.duration.as_secs_f64(),
        )?;
        gauge(
            &mut encoder,
            "counters_read_failures",
            "Counter files that exist but could not be read or parsed in the last sample",
            sample.failures as f64,
        )?;
        let port_label = |p: &rdma::PortSample| {
            [
                ("device", p.port.device.clone()),
                ("port", p.port.port.to_string()),
            ]
        };
        gauges(
            &mut encoder,
            "infiniband_state_id",
            "State of the RDMA port (1: down, 2: init, 3: armed, 4: active, 5: active defer)",
            sample
                .ports
                .iter()
                .filter_map(|p| p.state.map(|s| (port_label(p), f64::from(s)))),
        )?;
        for (index, spec) in rdma::SPECS.iter().enumerate() {
            let rows: Vec<_> = sample
                .ports
                .iter()
                .filter_map(|p| {
                    p.values
                        .iter()
                        .find(|(i, _)| *i == index)
                        .map(|(_, v)| (port_label(p), *v))
                })
                .collect();
            counters(
                &mut encoder,
                &format!("infiniband_{}", spec.metric),
                spec.help,
                rows,
            )?;
        }
        let mount_label = |m: &nfs::MountSample, protocol: &str| {
            [
                ("mountpoint", m.mount_point.clone()),
                ("export", m.export.clone()),
                ("protocol", protocol.to_owned()),
            ]
        };
        gauges(
            &mut encoder,
            "nfs_transports",
            "RPC transports (xprt lines) per NFS data mount and protocol: tcp on a mount meant for RDMA is a silent fallback",
            sample.mounts.iter().flat_map(|m| {
                m.protocols
                    .iter()
                    .map(move |(protocol, sums)| (mount_label(m, protocol), sums.transports as f64))
            }),
        )?;
        for (index, spec) in nfs::COMMON.iter().enumerate() {
            let rows: Vec<_> = sample
                .mounts
                .iter()
                .flat_map(|m| {
                    m.protocols.iter().filter_map(move |(protocol, sums)| {
                        sums.common
                            .get(index)
                            .copied()
                            .flatten()
                            .map(|v| (mount_label(m, protocol), v))
                    })
                })
                .collect();
            counters(
                &mut encoder,
                &format!("nfs_transport_{}", spec.metric),
                spec.help,
                rows,
            )?;
        }
        for (index, spec) in nfs::RDMA.iter().enumerate() {
            let rows: Vec<_> = sample
                .mounts
                .iter()
                .filter_map(|m| {
                    let sums = m.protocols.get("rdma")?;
                    let value = sums.rdma.get(index).copied().flatten()?;
                    Some((
                        [
                            ("mountpoint", m.mount_point.clone()),
                            ("export", m.export.clone()),
                        ],
                        value,
                    ))
                })
                .collect();
            counters(
                &mut encoder,
                &format!("nfs_rdma_{}", spec.metric),
                spec.help,
                rows,
            )?;
        }
        Ok(())
    }
}

/// The agent's own counters, encoded on every scrape (a few lines).
pub fn encode_live(node: &str, live: &Live) -> Exposition {
    encode(node, live.rows())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use k8s_openapi::jiff::Timestamp;
    use zerohop_core::{Finding, Report, Severity};

    use super::*;
    use crate::counters::nfs::{MountSample, ProtocolSums};
    use crate::counters::rdma::{PortRef, PortSample};

    fn finding(id: &str, group: &str, status: Status, subject: &str) -> Finding {
        Finding {
            id: id.into(),
            name: format!("{}-check", id.to_lowercase()),
            group: group.into(),
            status,
            severity: Severity::Error,
            subject: subject.into(),
            message: "m".into(),
            evidence: vec![],
            remediation: None,
            blocked_by: None,
            location: None,
            object: None,
        }
    }

    fn snapshot() -> Snapshot {
        let report = Report::new(
            "doctor",
            "/host",
            vec![
                finding("RDMA004", "rdma", Status::Fail, "mlx5_0/1"),
                finding("RDMA004", "rdma", Status::Pass, "mlx5_1/1"),
                finding("GPU003", "gpu", Status::Pass, ""),
                finding("QOS001", "qos", Status::Warn, "eth0"),
            ],
        );
        Snapshot::completed(
            "gpu-node-1",
            7,
            Timestamp::from_second(1_800_000_000).unwrap(),
            Duration::from_millis(250),
            report,
            Default::default(),
        )
    }

    #[test]
    fn the_metrics_of_a_pass() {
        let snapshot = snapshot();
        let exposition = snapshot.exposition();
        insta::assert_snapshot!(
            "pass_classic",
            String::from_utf8_lossy(&assemble(Format::Classic, &[exposition]))
        );
        let openmetrics = assemble(Format::OpenMetrics, &[exposition]);
        let text = String::from_utf8_lossy(&openmetrics);
        assert!(text.ends_with("# EOF\n"));
        assert_eq!(text.matches("# EOF").count(), 1);
    }

    #[test]
    fn the_metrics_of_a_counter_sample() {
        let sample = Sample {
            taken_at: Timestamp::from_second(1_800_000_010).unwrap(),
            duration: Duration::from_millis(3),
            ports: vec![PortSample {
                port: PortRef {
                    device: "mlx5_0".into(),
                    port: 1,
                },
                state: Some(4),
                // port_rcv_data counts 4-byte words: stored already scaled.
                values: vec![(0, 4000), (21, 17), (25, 2)],
            }],
            mounts: vec![MountSample {
                mount_point: "/mnt/data".into(),
                export: "srv:/data".into(),
                protocols: BTreeMap::from([(
                    "rdma".to_owned(),
                    ProtocolSums {
                        transports: 16,
                        common: vec![Some(0), Some(5808), Some(10), Some(9), Some(1)],
                        rdma: vec![Some(3); nfs::RDMA.len()],
                    },
                )]),
            }],
            failures: 1,
        };
        let exposition = encode_counters("gpu-node-1", &sample);
        insta::assert_snapshot!(
            "counters_openmetrics",
            String::from_utf8_lossy(&assemble(Format::OpenMetrics, &[&exposition]))
        );
    }

    #[test]
    fn prometheus_gets_openmetrics_and_curl_gets_text() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(negotiate(None), Format::Classic);
        assert_eq!(negotiate(Some("*/*")), Format::Classic);
        assert_eq!(
            negotiate(Some(
                "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5"
            )),
            Format::Classic
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0")),
            Format::Classic
        );
        assert_eq!(negotiate(Some("garbage;;;q=x,")), Format::Classic);
    }
}
