//! RDMA port counters in sysfs: the file names under
//! `/sys/class/infiniband/<dev>/ports/<n>/{counters,hw_counters}/`, what
//! each counts, how wide it is, and the limits the doctor judges the error
//! counters by. The agent exports the same counters as metrics; both take
//! the names from here.
//!
//! Sources: the kernel's `drivers/infiniband/core/sysfs.c` (`PORT_PMA_ATTR`:
//! counter, width in bits and offset of each `counters/` file, read from the
//! PortCounters attribute of the InfiniBand specification, vol. 1, §16.1.3.5);
//! NVIDIA's "Understanding mlx5 Linux Counters and Status Parameters" for
//! the `hw_counters/` of `mlx5`; the rdma-core man page `ibqueryerrors(8)`
//! ("The default threshold is zero (0)") for judging the error counters.

/// Where a counter lives under the port directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// `counters/`: the port counters of the InfiniBand specification,
    /// also kept for RoCE ports.
    Counters,
    /// `hw_counters/`: the driver's own counters (RoCE congestion control,
    /// sequence errors, drops).
    HwCounters,
}

impl Dir {
    /// The directory name.
    pub const fn name(self) -> &'static str {
        match self {
            Dir::Counters => "counters",
            Dir::HwCounters => "hw_counters",
        }
    }
}

/// One counter file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    /// The directory it is in.
    pub dir: Dir,
    /// The file name.
    pub file: &'static str,
    /// What it counts, one line.
    pub help: &'static str,
    /// The counter's width in bits where the kernel reads a PortCounters
    /// field that stops at its maximum (4, 8 or 16 bits); `None` for 32-
    /// and 64-bit counters, which do not saturate in practice.
    pub bits: Option<u8>,
    /// What one unit of the file is worth: `port_rcv_data` and
    /// `port_xmit_data` count 4-byte words.
    pub scale: u64,
}

impl Counter {
    /// The largest value the counter holds: at that value it has
    /// saturated and stops counting (InfiniBand specification, vol. 1,
    /// §16.1.3.5: the error counters "stop at all ones").
    pub const fn saturated_at(&self) -> Option<u64> {
        match self.bits {
            Some(bits) => Some((1 << bits) - 1),
            None => None,
        }
    }

    /// Whether `value` is the counter's saturation value.
    pub fn is_saturated(&self, value: u64) -> bool {
        self.saturated_at() == Some(value)
    }

    /// The path of the file under a port directory: `counters/link_downed`.
    pub fn path_in(&self, port_dir: &str) -> String {
        format!("{port_dir}/{}/{}", self.dir.name(), self.file)
    }
}

const fn counter(file: &'static str, bits: Option<u8>, help: &'static str) -> Counter {
    Counter {
        dir: Dir::Counters,
        file,
        help,
        bits,
        scale: 1,
    }
}

const fn hw(file: &'static str, help: &'static str) -> Counter {
    Counter {
        dir: Dir::HwCounters,
        file,
        help,
        bits: None,
        scale: 1,
    }
}

/// `counters/port_rcv_data`.
pub const PORT_RCV_DATA: Counter = Counter {
    scale: 4,
    ..counter("port_rcv_data", None, "Data octets received on the port")
};
/// `counters/port_xmit_data`.
pub const PORT_XMIT_DATA: Counter = Counter {
    scale: 4,
    ..counter(
        "port_xmit_data",
        None,
        "Data octets transmitted on the port",
    )
};
/// `counters/port_rcv_packets`.
pub const PORT_RCV_PACKETS: Counter = counter(
    "port_rcv_packets",
    None,
    "Packets received on the port, errors included",
);
/// `counters/port_xmit_packets`.
pub const PORT_XMIT_PACKETS: Counter = counter(
    "port_xmit_packets",
    None,
    "Packets transmitted on the port, errors included",
);
/// `counters/unicast_rcv_packets`.
pub const UNICAST_RCV_PACKETS: Counter =
    counter("unicast_rcv_packets", None, "Unicast packets received");
/// `counters/unicast_xmit_packets`.
pub const UNICAST_XMIT_PACKETS: Counter =
    counter("unicast_xmit_packets", None, "Unicast packets transmitted");
/// `counters/multicast_rcv_packets`.
pub const MULTICAST_RCV_PACKETS: Counter =
    counter("multicast_rcv_packets", None, "Multicast packets received");
/// `counters/multicast_xmit_packets`.
pub const MULTICAST_XMIT_PACKETS: Counter = counter(
    "multicast_xmit_packets",
    None,
    "Multicast packets transmitted",
);
/// `counters/port_rcv_errors` (16 bits).
pub const PORT_RCV_ERRORS: Counter = counter(
    "port_rcv_errors",
    Some(16),
    "Received packets with an error",
);
/// `counters/port_xmit_discards` (16 bits).
pub const PORT_XMIT_DISCARDS: Counter = counter(
    "port_xmit_discards",
    Some(16),
    "Outbound packets discarded because the port was down or congested",
);
/// `counters/port_rcv_constraint_errors` (8 bits).
pub const PORT_RCV_CONSTRAINT_ERRORS: Counter = counter(
    "port_rcv_constraint_errors",
    Some(8),
    "Received packets discarded by a constraint",
);
/// `counters/port_xmit_constraint_errors` (8 bits).
pub const PORT_XMIT_CONSTRAINT_ERRORS: Counter = counter(
    "port_xmit_constraint_errors",
    Some(8),
    "Packets not transmitted because of a constraint",
);
/// `counters/port_xmit_wait`.
pub const PORT_XMIT_WAIT: Counter = counter(
    "port_xmit_wait",
    None,
    "Ticks during which the port had data to send but sent none",
);
/// `counters/symbol_error` (16 bits).
pub const SYMBOL_ERROR: Counter = counter(
    "symbol_error",
    Some(16),
    "Minor link errors on one or more physical lanes",
);
/// `counters/link_error_recovery` (8 bits).
pub const LINK_ERROR_RECOVERY: Counter = counter(
    "link_error_recovery",
    Some(8),
    "Times the link recovered from an error",
);
/// `counters/link_downed` (8 bits).
pub const LINK_DOWNED: Counter = counter(
    "link_downed",
    Some(8),
    "Times the link failed to recover from an error and went down",
);
/// `counters/local_link_integrity_errors` (4 bits).
pub const LOCAL_LINK_INTEGRITY_ERRORS: Counter = counter(
    "local_link_integrity_errors",
    Some(4),
    "Times local physical errors exceeded their threshold",
);
/// `counters/excessive_buffer_overrun_errors` (4 bits).
pub const EXCESSIVE_BUFFER_OVERRUN_ERRORS: Counter = counter(
    "excessive_buffer_overrun_errors",
    Some(4),
    "Times consecutive flow control periods each had a buffer overrun",
);
/// `counters/port_rcv_remote_physical_errors` (16 bits).
pub const PORT_RCV_REMOTE_PHYSICAL_ERRORS: Counter = counter(
    "port_rcv_remote_physical_errors",
    Some(16),
    "Received packets marked with an End of Bad Packet delimiter",
);
/// `counters/port_rcv_switch_relay_errors` (16 bits).
pub const PORT_RCV_SWITCH_RELAY_ERRORS: Counter = counter(
    "port_rcv_switch_relay_errors",
    Some(16),
    "Packets that could not be forwarded",
);
/// `counters/VL15_dropped` (16 bits).
pub const VL15_DROPPED: Counter = counter(
    "VL15_dropped",
    Some(16),
    "Incoming VL15 packets dropped for lack of resources",
);
/// `hw_counters/np_cnp_sent`.
pub const NP_CNP_SENT: Counter = hw(
    "np_cnp_sent",
    "Congestion notification packets sent by this notification point",
);
/// `hw_counters/np_ecn_marked_roce_packets`.
pub const NP_ECN_MARKED_ROCE_PACKETS: Counter = hw(
    "np_ecn_marked_roce_packets",
    "RoCEv2 packets received marked for congestion (ECN)",
);
/// `hw_counters/rp_cnp_handled`.
pub const RP_CNP_HANDLED: Counter = hw(
    "rp_cnp_handled",
    "Congestion notification packets handled by this reaction point",
);
/// `hw_counters/rp_cnp_ignored`.
pub const RP_CNP_IGNORED: Counter = hw(
    "rp_cnp_ignored",
    "Congestion notification packets received and ignored: ECN may be off on the adapter",
);
/// `hw_counters/out_of_buffer`.
pub const OUT_OF_BUFFER: Counter = hw(
    "out_of_buffer",
    "Drops for lack of receive work queue entries",
);
/// `hw_counters/out_of_sequence`.
pub const OUT_OF_SEQUENCE: Counter = hw("out_of_sequence", "Out-of-sequence packets received");
/// `hw_counters/packet_seq_err`.
pub const PACKET_SEQ_ERR: Counter = hw("packet_seq_err", "NAK sequence error packets received");
/// `hw_counters/local_ack_timeout_err`.
pub const LOCAL_ACK_TIMEOUT_ERR: Counter = hw(
    "local_ack_timeout_err",
    "Times a queue pair's ack timer expired at the sender",
);
/// `hw_counters/rnr_nak_retry_err`.
pub const RNR_NAK_RETRY_ERR: Counter = hw(
    "rnr_nak_retry_err",
    "Receiver-not-ready NAK packets received",
);
/// `hw_counters/implied_nak_seq_err`.
pub const IMPLIED_NAK_SEQ_ERR: Counter = hw("implied_nak_seq_err", "Implied NAK sequence errors");
/// `hw_counters/duplicate_request`.
pub const DUPLICATE_REQUEST: Counter = hw("duplicate_request", "Duplicate requests received");
/// `hw_counters/roce_adp_retrans`.
pub const ROCE_ADP_RETRANS: Counter = hw(
    "roce_adp_retrans",
    "Adaptive retransmissions of RoCE traffic",
);
/// `hw_counters/roce_adp_retrans_to`.
pub const ROCE_ADP_RETRANS_TO: Counter = hw(
    "roce_adp_retrans_to",
    "Times RoCE traffic reached the adaptive retransmission timeout",
);
/// `hw_counters/roce_slow_restart`.
pub const ROCE_SLOW_RESTART: Counter = hw("roce_slow_restart", "Times RoCE slow restart was used");
/// `hw_counters/roce_slow_restart_cnps`.
pub const ROCE_SLOW_RESTART_CNPS: Counter = hw(
    "roce_slow_restart_cnps",
    "Congestion notification packets generated by RoCE slow restart",
);
/// `hw_counters/roce_slow_restart_trans`.
pub const ROCE_SLOW_RESTART_TRANS: Counter = hw(
    "roce_slow_restart_trans",
    "Times RoCE slow restart changed state to slow restart",
);
/// `hw_counters/rx_icrc_encapsulated`.
pub const RX_ICRC_ENCAPSULATED: Counter =
    hw("rx_icrc_encapsulated", "RoCE packets with an ICRC error");
/// `hw_counters/req_cqe_error`.
pub const REQ_CQE_ERROR: Counter = hw(
    "req_cqe_error",
    "Completions with an error at the requester",
);
/// `hw_counters/req_cqe_flush_error`.
pub const REQ_CQE_FLUSH_ERROR: Counter = hw(
    "req_cqe_flush_error",
    "Completions flushed with an error at the requester",
);
/// `hw_counters/resp_cqe_error`.
pub const RESP_CQE_ERROR: Counter = hw(
    "resp_cqe_error",
    "Completions with an error at the responder",
);
/// `hw_counters/resp_cqe_flush_error`.
pub const RESP_CQE_FLUSH_ERROR: Counter = hw(
    "resp_cqe_flush_error",
    "Completions flushed with an error at the responder",
);
/// `hw_counters/req_remote_access_errors`.
pub const REQ_REMOTE_ACCESS_ERRORS: Counter = hw(
    "req_remote_access_errors",
    "Remote access errors seen by the requester",
);
/// `hw_counters/req_remote_invalid_request`.
pub const REQ_REMOTE_INVALID_REQUEST: Counter = hw(
    "req_remote_invalid_request",
    "Remote invalid request errors seen by the requester",
);
/// `hw_counters/resp_local_length_error`.
pub const RESP_LOCAL_LENGTH_ERROR: Counter = hw(
    "resp_local_length_error",
    "Local length errors seen by the responder",
);
/// `hw_counters/resp_remote_access_errors`.
pub const RESP_REMOTE_ACCESS_ERRORS: Counter = hw(
    "resp_remote_access_errors",
    "Remote access errors seen by the responder",
);
/// `hw_counters/rx_read_requests`.
pub const RX_READ_REQUESTS: Counter = hw("rx_read_requests", "RDMA read requests received");
/// `hw_counters/rx_write_requests`.
pub const RX_WRITE_REQUESTS: Counter = hw("rx_write_requests", "RDMA write requests received");
/// `hw_counters/rx_atomic_requests`.
pub const RX_ATOMIC_REQUESTS: Counter = hw("rx_atomic_requests", "Atomic requests received");
/// `hw_counters/rx_dct_connect`.
pub const RX_DCT_CONNECT: Counter = hw(
    "rx_dct_connect",
    "Connection requests received by DC targets",
);

/// Port error counters in which every count is an event the data path
/// felt, judged against zero as `ibqueryerrors` does by default: the link
/// went down (`link_downed`) or retrained (`link_error_recovery`), local
/// physical errors crossed the port's limit (`local_link_integrity_errors`),
/// the receive buffer overran and dropped packets
/// (`excessive_buffer_overrun_errors`), packets arrived corrupt
/// (`port_rcv_errors`) or marked bad by the sender's side
/// (`port_rcv_remote_physical_errors`), outbound packets were discarded
/// (`port_xmit_discards`), packets were refused by a partition or
/// raw-packet constraint (`port_rcv_constraint_errors`,
/// `port_xmit_constraint_errors`), and subnet management packets were
/// dropped (`VL15_dropped`).
///
/// `ibqueryerrors` (linux-rdma/rdma-core `infiniband-diags/ibqueryerrors.c`
/// at 0c6807aa5847be3f17a935fd941f3db0d03aa7df, `print_results()`) judges
/// every PortCounters field from `SymbolErrorCounter` to `VL15Dropped`,
/// and `PortXmitWait`, against a threshold of zero. Three are judged
/// otherwise here: `symbol_error` by its bit error rate
/// ([`BER_LIMIT_RECIPROCAL`]); `port_rcv_switch_relay_errors` not at all,
/// the one counter `ibqueryerrors --suppress-common` suppresses as common
/// (every port of the corpus' healthy H100 capture counts one or two);
/// and `port_xmit_wait`, ticks spent waiting to send, not at all: it
/// counts congestion on any busy link, which the RoCE congestion counters
/// judge.
pub const PORT_ERRORS: [Counter; 10] = [
    LINK_DOWNED,
    LINK_ERROR_RECOVERY,
    LOCAL_LINK_INTEGRITY_ERRORS,
    EXCESSIVE_BUFFER_OVERRUN_ERRORS,
    PORT_RCV_ERRORS,
    PORT_RCV_REMOTE_PHYSICAL_ERRORS,
    PORT_XMIT_DISCARDS,
    PORT_RCV_CONSTRAINT_ERRORS,
    PORT_XMIT_CONSTRAINT_ERRORS,
    VL15_DROPPED,
];

/// Counters that mean the link is flapping when they saturate: a link
/// that went down or retrained 255 times is unstable, and from then on
/// no further event is counted.
pub const FLAP_COUNTERS: [Counter; 2] = [LINK_DOWNED, LINK_ERROR_RECOVERY];

/// The bit error rate a compliant link stays under, as its reciprocal:
/// 10^-12 (the InfiniBand specification's link BER, and `ibdiagnet`'s
/// default BER threshold, written as `--ber_thresh 1000000000000`). On
/// EDR, HDR and NDR links `symbol_error` counts the errors left after
/// forward error correction (NVIDIA ibdiagnet user manual, "Bit Error Rate
/// (BER)"), so its count against the bits the link carried bounds the BER
/// from below: a link signals continuously, so over `t` seconds at `r`
/// Gb/s it carried at most `r * 10^9 * t` bits. At 400 Gb/s the limit is
/// 1440 symbol errors an hour.
pub const BER_LIMIT_RECIPROCAL: u64 = 1_000_000_000_000;

/// RoCE counters in which every count is a packet lost on a fabric that
/// should be lossless (mlx5 `hw_counters`): packets that arrived out of
/// sequence at the responder (`out_of_sequence`), sequence-error NAKs from
/// the peer (`packet_seq_err`) and ack timeouts at the sender
/// (`local_ack_timeout_err`). Each forces a go-back-N retransmission.
pub const ROCE_LOSS: [Counter; 3] = [OUT_OF_SEQUENCE, PACKET_SEQ_ERR, LOCAL_ACK_TIMEOUT_ERR];

/// RoCE counters in which every count is a receiver that had no buffer
/// posted: packets dropped for lack of receive work queue entries
/// (`out_of_buffer`) and receiver-not-ready NAKs from the peer
/// (`rnr_nak_retry_err`). The application, not the fabric, is short.
pub const ROCE_RECEIVER_SHORT: [Counter; 2] = [OUT_OF_BUFFER, RNR_NAK_RETRY_ERR];

/// The congestion-control counters of a RoCE port: CNPs ignored by the
/// reaction point (DCQCN's `roce_rp` off, or ECN off on the adapter),
/// ECN-marked packets received and CNPs sent by the notification point.
pub const ROCE_CONGESTION: [Counter; 4] = [
    RP_CNP_IGNORED,
    RP_CNP_HANDLED,
    NP_ECN_MARKED_ROCE_PACKETS,
    NP_CNP_SENT,
];

/// Every counter the doctor reads from a port to judge it.
pub const JUDGED: [Counter; 20] = [
    LINK_DOWNED,
    LINK_ERROR_RECOVERY,
    LOCAL_LINK_INTEGRITY_ERRORS,
    EXCESSIVE_BUFFER_OVERRUN_ERRORS,
    PORT_RCV_ERRORS,
    PORT_RCV_REMOTE_PHYSICAL_ERRORS,
    PORT_XMIT_DISCARDS,
    PORT_RCV_CONSTRAINT_ERRORS,
    PORT_XMIT_CONSTRAINT_ERRORS,
    VL15_DROPPED,
    SYMBOL_ERROR,
    OUT_OF_SEQUENCE,
    PACKET_SEQ_ERR,
    LOCAL_ACK_TIMEOUT_ERR,
    OUT_OF_BUFFER,
    RNR_NAK_RETRY_ERR,
    RP_CNP_IGNORED,
    RP_CNP_HANDLED,
    NP_ECN_MARKED_ROCE_PACKETS,
    NP_CNP_SENT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_give_the_saturation_values() {
        assert_eq!(LINK_DOWNED.saturated_at(), Some(255));
        assert_eq!(EXCESSIVE_BUFFER_OVERRUN_ERRORS.saturated_at(), Some(15));
        assert_eq!(SYMBOL_ERROR.saturated_at(), Some(65535));
        assert!(LINK_DOWNED.is_saturated(255));
        assert!(!LINK_DOWNED.is_saturated(254));
        assert_eq!(PORT_RCV_DATA.saturated_at(), None);
        assert_eq!(
            LINK_DOWNED.path_in("/sys/class/infiniband/mlx5_1/ports/1"),
            "/sys/class/infiniband/mlx5_1/ports/1/counters/link_downed"
        );
    }

    #[test]
    fn judged_counters_hold_every_group() {
        for group in [
            &PORT_ERRORS[..],
            &FLAP_COUNTERS[..],
            &ROCE_LOSS[..],
            &ROCE_RECEIVER_SHORT[..],
            &ROCE_CONGESTION[..],
            &[SYMBOL_ERROR][..],
        ] {
            for counter in group {
                assert!(JUDGED.contains(counter), "{}", counter.file);
            }
        }
    }
}
