//! RDMA port counters: `ports/<n>/counters/*` (the InfiniBand port
//! counters, also kept for RoCE) and `ports/<n>/hw_counters/*` (the
//! driver's RoCE counters: CNPs, out-of-buffer drops, sequence errors).
//!
//! The metric names are node_exporter's `infiniband` collector's, with the
//! `zerohop_infiniband_` prefix instead of `node_infiniband_`, so that
//! dashboards and alerts written for one read the other.

use zerohop_host::HostRoot;

/// Where a counter lives under the port directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// `counters/`: the port counters of the InfiniBand specification.
    Counters,
    /// `hw_counters/`: the driver's own counters.
    HwCounters,
}

impl Dir {
    /// The directory name.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Counters => "counters",
            Dir::HwCounters => "hw_counters",
        }
    }
}

/// One counter file and the metric it becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// The directory.
    pub dir: Dir,
    /// The file name.
    pub file: &'static str,
    /// The metric name after `zerohop_infiniband_`, without `_total`.
    pub metric: &'static str,
    /// The help text.
    pub help: &'static str,
    /// What one unit of the file is worth: `port_rcv_data` and
    /// `port_xmit_data` count 4-byte words.
    pub scale: u64,
}

const fn spec(dir: Dir, file: &'static str, metric: &'static str, help: &'static str) -> Spec {
    Spec {
        dir,
        file,
        metric,
        help,
        scale: 1,
    }
}

use Dir::{Counters as C, HwCounters as H};

/// Every counter read, in exposition order.
pub const SPECS: &[Spec] = &[
    Spec {
        scale: 4,
        ..spec(
            C,
            "port_rcv_data",
            "port_data_received_bytes",
            "Data octets received on the port",
        )
    },
    Spec {
        scale: 4,
        ..spec(
            C,
            "port_xmit_data",
            "port_data_transmitted_bytes",
            "Data octets transmitted on the port",
        )
    },
    spec(
        C,
        "port_rcv_packets",
        "port_packets_received",
        "Packets received on the port, errors included",
    ),
    spec(
        C,
        "port_xmit_packets",
        "port_packets_transmitted",
        "Packets transmitted on the port, errors included",
    ),
    spec(
        C,
        "unicast_rcv_packets",
        "unicast_packets_received",
        "Unicast packets received",
    ),
    spec(
        C,
        "unicast_xmit_packets",
        "unicast_packets_transmitted",
        "Unicast packets transmitted",
    ),
    spec(
        C,
        "multicast_rcv_packets",
        "multicast_packets_received",
        "Multicast packets received",
    ),
    spec(
        C,
        "multicast_xmit_packets",
        "multicast_packets_transmitted",
        "Multicast packets transmitted",
    ),
    spec(
        C,
        "port_rcv_errors",
        "port_errors_received",
        "Received packets with an error",
    ),
    spec(
        C,
        "port_xmit_discards",
        "port_discards_transmitted",
        "Outbound packets discarded because the port was down or congested",
    ),
    spec(
        C,
        "port_rcv_constraint_errors",
        "port_constraint_errors_received",
        "Received packets discarded by a constraint",
    ),
    spec(
        C,
        "port_xmit_constraint_errors",
        "port_constraint_errors_transmitted",
        "Packets not transmitted because of a constraint",
    ),
    spec(
        C,
        "port_xmit_wait",
        "port_transmit_wait",
        "Ticks during which the port had data to send but sent none",
    ),
    spec(
        C,
        "symbol_error",
        "symbol_error",
        "Minor link errors on one or more physical lanes",
    ),
    spec(
        C,
        "link_error_recovery",
        "link_error_recovery",
        "Times the link recovered from an error",
    ),
    spec(
        C,
        "link_downed",
        "link_downed",
        "Times the link failed to recover from an error and went down",
    ),
    spec(
        C,
        "local_link_integrity_errors",
        "local_link_integrity_errors",
        "Times local physical errors exceeded their threshold",
    ),
    spec(
        C,
        "excessive_buffer_overrun_errors",
        "excessive_buffer_overrun_errors",
        "Times consecutive flow control periods each had a buffer overrun",
    ),
    spec(
        C,
        "port_rcv_remote_physical_errors",
        "port_receive_remote_physical_errors",
        "Received packets marked with an End of Bad Packet delimiter",
    ),
    spec(
        C,
        "port_rcv_switch_relay_errors",
        "port_receive_switch_relay_errors",
        "Packets that could not be forwarded",
    ),
    spec(
        C,
        "VL15_dropped",
        "vl15_dropped",
        "Incoming VL15 packets dropped for lack of resources",
    ),
    spec(
        H,
        "np_cnp_sent",
        "np_cnp_packets_sent",
        "Congestion notification packets sent by this notification point",
    ),
    spec(
        H,
        "np_ecn_marked_roce_packets",
        "np_ecn_marked_roce_packets_received",
        "RoCEv2 packets received marked for congestion (ECN)",
    ),
    spec(
        H,
        "rp_cnp_handled",
        "rp_cnp_packets_handled",
        "Congestion notification packets handled by this reaction point",
    ),
    spec(
        H,
        "rp_cnp_ignored",
        "rp_cnp_ignored_packets_received",
        "Congestion notification packets received and ignored: ECN may be off on the adapter",
    ),
    spec(
        H,
        "out_of_buffer",
        "out_of_buffer_drops",
        "Drops for lack of receive work queue entries",
    ),
    spec(
        H,
        "out_of_sequence",
        "out_of_sequence_packets_received",
        "Out-of-sequence packets received",
    ),
    spec(
        H,
        "packet_seq_err",
        "packet_sequence_errors",
        "NAK sequence error packets received",
    ),
    spec(
        H,
        "local_ack_timeout_err",
        "local_ack_timeout_errors",
        "Times a queue pair's ack timer expired at the sender",
    ),
    spec(
        H,
        "rnr_nak_retry_err",
        "rnr_nak_retry_packets_received",
        "Receiver-not-ready NAK packets received",
    ),
    spec(
        H,
        "implied_nak_seq_err",
        "implied_nak_seq_errors",
        "Implied NAK sequence errors",
    ),
    spec(
        H,
        "duplicate_request",
        "duplicate_requests_packets",
        "Duplicate requests received",
    ),
    spec(
        H,
        "roce_adp_retrans",
        "roce_adp_retransmits",
        "Adaptive retransmissions of RoCE traffic",
    ),
    spec(
        H,
        "roce_adp_retrans_to",
        "roce_adp_retransmits_timeout",
        "Times RoCE traffic reached the adaptive retransmission timeout",
    ),
    spec(
        H,
        "roce_slow_restart",
        "roce_slow_restart_used",
        "Times RoCE slow restart was used",
    ),
    spec(
        H,
        "roce_slow_restart_cnps",
        "roce_slow_restart_cnps",
        "Congestion notification packets generated by RoCE slow restart",
    ),
    spec(
        H,
        "roce_slow_restart_trans",
        "roce_slow_restart",
        "Times RoCE slow restart changed state to slow restart",
    ),
    spec(
        H,
        "rx_icrc_encapsulated",
        "rx_icrc_encapsulated_errors",
        "RoCE packets with an ICRC error",
    ),
    spec(
        H,
        "req_cqe_error",
        "req_cqes_errors",
        "Completions with an error at the requester",
    ),
    spec(
        H,
        "req_cqe_flush_error",
        "req_cqes_flush_errors",
        "Completions flushed with an error at the requester",
    ),
    spec(
        H,
        "resp_cqe_error",
        "resp_cqes_errors",
        "Completions with an error at the responder",
    ),
    spec(
        H,
        "resp_cqe_flush_error",
        "resp_cqes_flush_errors",
        "Completions flushed with an error at the responder",
    ),
    spec(
        H,
        "req_remote_access_errors",
        "req_remote_access_errors",
        "Remote access errors seen by the requester",
    ),
    spec(
        H,
        "req_remote_invalid_request",
        "req_remote_invalid_request_errors",
        "Remote invalid request errors seen by the requester",
    ),
    spec(
        H,
        "resp_local_length_error",
        "resp_local_length_errors",
        "Local length errors seen by the responder",
    ),
    spec(
        H,
        "resp_remote_access_errors",
        "resp_remote_access_errors",
        "Remote access errors seen by the responder",
    ),
    spec(
        H,
        "rx_read_requests",
        "rx_read_requests",
        "RDMA read requests received",
    ),
    spec(
        H,
        "rx_write_requests",
        "rx_write_requests",
        "RDMA write requests received",
    ),
    spec(
        H,
        "rx_atomic_requests",
        "rx_atomic_requests",
        "Atomic requests received",
    ),
    spec(
        H,
        "rx_dct_connect",
        "rx_dct_connect_requests",
        "Connection requests received by DC targets",
    ),
];

/// A port whose counters are sampled.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRef {
    /// The RDMA device (`mlx5_0`).
    pub device: String,
    /// The port number.
    pub port: u32,
}

/// One port's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSample {
    /// The port.
    pub port: PortRef,
    /// The port state number from `state` (`4: ACTIVE` → 4), when readable.
    pub state: Option<u32>,
    /// Index into [`SPECS`] and the scaled value.
    pub values: Vec<(usize, u64)>,
}

/// Reads the counters of `port` through `root`. Files that are absent,
/// unreadable or not a number (`N/A` on some drivers) are skipped; the
/// returned count says how many could not be read.
pub fn sample(root: &HostRoot, port: &PortRef) -> (PortSample, usize) {
    let base = format!("/sys/class/infiniband/{}/ports/{}", port.device, port.port);
    let mut failures = 0;
    let state = match root.read_value(&format!("{base}/state")) {
        Ok(Some(text)) => parse_state(&text),
        Ok(None) => None,
        Err(_) => {
            failures += 1;
            None
        }
    };
    let mut values = Vec::new();
    for dir in [Dir::Counters, Dir::HwCounters] {
        let dir_path = format!("{base}/{}", dir.name());
        let names = match root.list(&dir_path) {
            Ok(Some(names)) => names,
            Ok(None) => continue,
            Err(_) => {
                failures += 1;
                continue;
            }
        };
        for (index, spec) in SPECS.iter().enumerate() {
            if spec.dir != dir || !names.iter().any(|n| n == spec.file) {
                continue;
            }
            match root.read_value(&format!("{dir_path}/{}", spec.file)) {
                Ok(Some(text)) => match text.trim().parse::<u64>() {
                    Ok(value) => values.push((index, value.saturating_mul(spec.scale))),
                    Err(_) => failures += 1,
                },
                Ok(None) => {}
                Err(_) => failures += 1,
            }
        }
    }
    (
        PortSample {
            port: port.clone(),
            state,
            values,
        },
        failures,
    )
}

/// `4: ACTIVE` → 4.
fn parse_state(text: &str) -> Option<u32> {
    text.split(':').next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn metric_names_are_unique_and_prometheus_safe() {
        let mut seen = HashSet::new();
        for spec in SPECS {
            assert!(seen.insert(spec.metric), "{} twice", spec.metric);
            assert!(
                spec.metric
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                spec.metric
            );
            assert!(!spec.metric.ends_with("_total"), "{}", spec.metric);
            assert!(!spec.help.contains('\n'));
        }
    }

    #[test]
    fn states_parse_from_the_sysfs_form() {
        assert_eq!(parse_state("4: ACTIVE"), Some(4));
        assert_eq!(parse_state("1: DOWN"), Some(1));
        assert_eq!(parse_state("garbage"), None);
    }
}
