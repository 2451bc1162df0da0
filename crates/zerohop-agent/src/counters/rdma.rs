//! RDMA port counters: `ports/<n>/counters/*` (the InfiniBand port
//! counters, also kept for RoCE) and `ports/<n>/hw_counters/*` (the
//! driver's RoCE counters: CNPs, out-of-buffer drops, sequence errors).
//!
//! The metric names are node_exporter's `infiniband` collector's, with the
//! `zerohop_infiniband_` prefix instead of `node_infiniband_`, so that
//! dashboards and alerts written for one read the other.

use zerohop_host::HostRoot;

pub use zerohop_known::rdma_counters::Dir;
use zerohop_known::rdma_counters::{self as known, Counter};

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

/// The metric `metric` of `counter`: the file, its help text and its
/// scale are the counter's, as `zerohop-known` describes it.
const fn spec(counter: Counter, metric: &'static str) -> Spec {
    Spec {
        dir: counter.dir,
        file: counter.file,
        metric,
        help: counter.help,
        scale: counter.scale,
    }
}

/// Every counter read, in exposition order.
pub const SPECS: &[Spec] = &[
    spec(known::PORT_RCV_DATA, "port_data_received_bytes"),
    spec(known::PORT_XMIT_DATA, "port_data_transmitted_bytes"),
    spec(known::PORT_RCV_PACKETS, "port_packets_received"),
    spec(known::PORT_XMIT_PACKETS, "port_packets_transmitted"),
    spec(known::UNICAST_RCV_PACKETS, "unicast_packets_received"),
    spec(known::UNICAST_XMIT_PACKETS, "unicast_packets_transmitted"),
    spec(known::MULTICAST_RCV_PACKETS, "multicast_packets_received"),
    spec(
        known::MULTICAST_XMIT_PACKETS,
        "multicast_packets_transmitted",
    ),
    spec(known::PORT_RCV_ERRORS, "port_errors_received"),
    spec(known::PORT_XMIT_DISCARDS, "port_discards_transmitted"),
    spec(
        known::PORT_RCV_CONSTRAINT_ERRORS,
        "port_constraint_errors_received",
    ),
    spec(
        known::PORT_XMIT_CONSTRAINT_ERRORS,
        "port_constraint_errors_transmitted",
    ),
    spec(known::PORT_XMIT_WAIT, "port_transmit_wait"),
    spec(known::SYMBOL_ERROR, "symbol_error"),
    spec(known::LINK_ERROR_RECOVERY, "link_error_recovery"),
    spec(known::LINK_DOWNED, "link_downed"),
    spec(
        known::LOCAL_LINK_INTEGRITY_ERRORS,
        "local_link_integrity_errors",
    ),
    spec(
        known::EXCESSIVE_BUFFER_OVERRUN_ERRORS,
        "excessive_buffer_overrun_errors",
    ),
    spec(
        known::PORT_RCV_REMOTE_PHYSICAL_ERRORS,
        "port_receive_remote_physical_errors",
    ),
    spec(
        known::PORT_RCV_SWITCH_RELAY_ERRORS,
        "port_receive_switch_relay_errors",
    ),
    spec(known::VL15_DROPPED, "vl15_dropped"),
    spec(known::NP_CNP_SENT, "np_cnp_packets_sent"),
    spec(
        known::NP_ECN_MARKED_ROCE_PACKETS,
        "np_ecn_marked_roce_packets_received",
    ),
    spec(known::RP_CNP_HANDLED, "rp_cnp_packets_handled"),
    spec(known::RP_CNP_IGNORED, "rp_cnp_ignored_packets_received"),
    spec(known::OUT_OF_BUFFER, "out_of_buffer_drops"),
    spec(known::OUT_OF_SEQUENCE, "out_of_sequence_packets_received"),
    spec(known::PACKET_SEQ_ERR, "packet_sequence_errors"),
    spec(known::LOCAL_ACK_TIMEOUT_ERR, "local_ack_timeout_errors"),
    spec(known::RNR_NAK_RETRY_ERR, "rnr_nak_retry_packets_received"),
    spec(known::IMPLIED_NAK_SEQ_ERR, "implied_nak_seq_errors"),
    spec(known::DUPLICATE_REQUEST, "duplicate_requests_packets"),
    spec(known::ROCE_ADP_RETRANS, "roce_adp_retransmits"),
    spec(known::ROCE_ADP_RETRANS_TO, "roce_adp_retransmits_timeout"),
    spec(known::ROCE_SLOW_RESTART, "roce_slow_restart_used"),
    spec(known::ROCE_SLOW_RESTART_CNPS, "roce_slow_restart_cnps"),
    spec(known::ROCE_SLOW_RESTART_TRANS, "roce_slow_restart"),
    spec(known::RX_ICRC_ENCAPSULATED, "rx_icrc_encapsulated_errors"),
    spec(known::REQ_CQE_ERROR, "req_cqes_errors"),
    spec(known::REQ_CQE_FLUSH_ERROR, "req_cqes_flush_errors"),
    spec(known::RESP_CQE_ERROR, "resp_cqes_errors"),
    spec(known::RESP_CQE_FLUSH_ERROR, "resp_cqes_flush_errors"),
    spec(known::REQ_REMOTE_ACCESS_ERRORS, "req_remote_access_errors"),
    spec(
        known::REQ_REMOTE_INVALID_REQUEST,
        "req_remote_invalid_request_errors",
    ),
    spec(known::RESP_LOCAL_LENGTH_ERROR, "resp_local_length_errors"),
    spec(
        known::RESP_REMOTE_ACCESS_ERRORS,
        "resp_remote_access_errors",
    ),
    spec(known::RX_READ_REQUESTS, "rx_read_requests"),
    spec(known::RX_WRITE_REQUESTS, "rx_write_requests"),
    spec(known::RX_ATOMIC_REQUESTS, "rx_atomic_requests"),
    spec(known::RX_DCT_CONNECT, "rx_dct_connect_requests"),
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
