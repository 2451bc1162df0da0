//! `nccl-link-type-mismatch`: the link layer NCCL used against the one
//! the cluster intent plans.

use zerohop_core::{Finding, Remediation, Status};

use super::{DEBUG_COMMAND, NCCL_LINK_TYPE};
use crate::judge::{Capture, Expectations, LinkLayer};
use crate::nccl::log::{IbDevice, NcclLog};

/// The finding of a capture's NCCL log against the planned link layer.
pub(super) fn judge(
    capture: &Capture<'_>,
    log: &NcclLog,
    expectations: &Expectations,
    single_node: bool,
) -> Finding {
    let judgement = &NCCL_LINK_TYPE;
    let Some((planned, source)) = expectations
        .planned
        .as_ref()
        .and_then(|p| Some((p.link_layer?, p.source.as_str())))
    else {
        return judgement
            .verdict(
                capture,
                Status::NotApplicable,
                "",
                "no planned link type: --intent or --plan gives the rails' link type",
            )
            .done();
    };
    if single_node {
        return judgement
            .verdict(
                capture,
                Status::NotApplicable,
                "",
                "one node: no channel leaves it",
            )
            .done();
    }
    let want = planned.nccl_name();
    let plan = format!("{want} rails ({source})");
    let socket = log
        .net_channels
        .iter()
        .find(|c| c.net == "Socket")
        .map(|c| c.line)
        .or_else(|| {
            log.networks
                .iter()
                .find(|(_, n)| n == "Socket")
                .map(|(line, _)| *line)
        });
    if let Some(line) = socket {
        let ipoib = log.ipoib_socket_interfaces();
        let over = if ipoib.is_empty() {
            "TCP sockets".to_owned()
        } else {
            format!("TCP over IPoIB ({})", ipoib.join(", "))
        };
        let mut verdict = judgement
            .verdict(
                capture,
                judgement.problem(),
                "",
                format!("the plan has {plan}, NCCL moved data with NET/Socket: {over}, not RDMA"),
            )
            .at(capture, line, "NET/Socket")
            .evidence(source, format!("linkType {}", intent_name(planned)));
        if let Some((line, interfaces)) = &log.socket_interfaces {
            verdict = verdict.at(
                capture,
                *line,
                format!("NET/Socket interfaces {}", interfaces.join(" ")),
            );
        }
        return verdict
            .fix(
                Remediation::new("give NCCL the rails' RDMA devices: the RDMA or SR-IOV resource in the pod, NCCL_IB_DISABLE unset, NCCL_IB_HCA naming the rails")
                    .command("ibv_devinfo -l && ls -l /dev/infiniband")
                    .command("env | grep -E '^NCCL_(IB|NET|SOCKET)'")
                    .command(DEBUG_COMMAND),
            )
            .done();
    }
    let used: Vec<&IbDevice> = log
        .ib_devices
        .iter()
        .filter(|d| d.index.is_some())
        .collect();
    if used.is_empty() {
        if let Some((line, provider, _)) = &log.ofi_provider {
            return judgement
                .verdict(
                    capture,
                    judgement.problem(),
                    "",
                    format!("the plan has {plan}, NCCL used the OFI plugin with provider {provider}: not the planned NICs"),
                )
                .at(capture, *line, format!("provider {provider}"))
                .evidence(source, format!("linkType {}", intent_name(planned)))
                .fix(hca_fix())
                .done();
        }
        return judgement
            .verdict(
                capture,
                Status::Unknown,
                "",
                format!("the plan has {plan}; the log has no NET/IB : Using line, so the link layer NCCL used cannot be seen"),
            )
            .fix(
                Remediation::new("rerun with NCCL_DEBUG=INFO and the INIT and NET subsystems")
                    .command(DEBUG_COMMAND),
            )
            .done();
    }
    let other: Vec<&IbDevice> = used
        .iter()
        .copied()
        .filter(|d| d.link_layer != want)
        .collect();
    if other.is_empty() {
        return judgement
            .verdict(
                capture,
                Status::Pass,
                "",
                format!(
                    "NCCL used {} device(s) over {want}, as the plan has",
                    used.len()
                ),
            )
            .at(capture, used[0].line, named(&used))
            .evidence(source, format!("linkType {}", intent_name(planned)))
            .done();
    }
    judgement
        .verdict(
            capture,
            judgement.problem(),
            "",
            format!(
                "the plan has {plan}, NCCL used {}: the ports' firmware link type (LINK_TYPE) differs from the plan, or NCCL_IB_HCA picks NICs that are not the rails",
                named(&other),
            ),
        )
        .at(capture, other[0].line, named(&other))
        .evidence(source, format!("linkType {}", intent_name(planned)))
        .fix(hca_fix())
        .done()
}

/// `mlx5_0:1/IB mlx5_1:1/IB`, as NCCL lists them.
fn named(devices: &[&IbDevice]) -> String {
    devices
        .iter()
        .map(|d| format!("{}:{}/{}", d.name, d.port, d.link_layer))
        .collect::<Vec<_>>()
        .join(" ")
}

/// How the intent writes the link type.
fn intent_name(layer: LinkLayer) -> &'static str {
    match layer {
        LinkLayer::InfiniBand => "IB",
        LinkLayer::Ethernet => "ETH",
    }
}

fn hca_fix() -> Remediation {
    Remediation::new("point NCCL at the rails the plan names, and set each port's link type in the NIC firmware as the intent says")
        .command("ibv_devinfo | grep -E 'hca_id|link_layer'")
        .command("echo \"NCCL_IB_HCA=$NCCL_IB_HCA\"")
        .command("zerohop doctor --intent cluster.yaml --only CONF002")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::PlannedFabric;
    use crate::nccl;

    fn infiniband() -> Expectations {
        Expectations {
            planned: Some(PlannedFabric {
                source: "intent i.yaml, pool p".to_owned(),
                rails: 1,
                gpus_per_node: None,
                link_layer: Some(LinkLayer::InfiniBand),
                link_rate_gbps: None,
            }),
            ..Expectations::default()
        }
    }

    #[test]
    fn sockets_over_ipoib_are_named() {
        let text = "\
h:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.
h:1:2 [0] NCCL INFO NET/Socket : Using [0]ib0:10.1.0.1<0> [1]eno1:10.0.0.1<0>
h:1:2 [0] NCCL INFO Using network Socket
";
        let log = nccl::parse(text).log;
        let capture = Capture {
            name: "n.log",
            text,
        };
        let finding = judge(&capture, &log, &infiniband(), false);
        assert_eq!(finding.status, Status::Fail);
        assert!(
            finding
                .message
                .ends_with("NCCL moved data with NET/Socket: TCP over IPoIB (ib0), not RDMA"),
            "{}",
            finding.message
        );
        // The transport judgement names IPoIB too.
        let transport = super::super::transport(&capture, &log, false);
        assert_eq!(transport.status, Status::Fail);
        assert!(
            transport
                .message
                .starts_with("NCCL chose the Socket network: traffic between nodes goes over TCP over IPoIB (ib0), not RDMA"),
            "{}",
            transport.message
        );
        // One node: nothing left it, whatever the transport.
        let alone = judge(&capture, &log, &infiniband(), true);
        assert_eq!(alone.status, Status::NotApplicable);
    }

    #[test]
    fn a_log_without_the_using_line_cannot_tell() {
        let text = "h:1:2 [0] NCCL INFO NCCL version 2.27.3+cuda12.9\n";
        let log = nccl::parse(text).log;
        let capture = Capture {
            name: "n.log",
            text,
        };
        let finding = judge(&capture, &log, &infiniband(), false);
        assert_eq!(finding.status, Status::Unknown);
        assert!(finding.remediation.is_some());
    }
}
