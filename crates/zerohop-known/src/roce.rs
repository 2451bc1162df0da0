//! RoCE v2 quality of service: which traffic class reaches which priority.
//!
//! With the port trusting DSCP, an mlx5 NIC maps DSCP `d` to priority
//! `d / 8` unless told otherwise (the default `dscp2prio` table that
//! `mlnx_qos -i PF --trust dscp` prints: `prio:3 dscp:31,…,24`). A verbs
//! traffic class is the IPv4 ToS byte: DSCP in its upper six bits, ECN in
//! the lower two. NVIDIA's RoCE configuration uses DSCP 26 on priority 3
//! with PFC and DCQCN.

/// The priority given PFC (lossless) and DCQCN.
pub const LOSSLESS_PRIORITY: u8 = 3;

/// The DSCP that the default `dscp2prio` table maps to [`LOSSLESS_PRIORITY`].
pub const LOSSLESS_DSCP: u8 = 26;

/// The ToS byte (a verbs traffic class, `NCCL_IB_TC`, perftest `--tclass`)
/// of `dscp` with the ECN-capable transport codepoint ECT(0), which DCQCN
/// needs to mark congestion: 106 for DSCP 26.
pub const fn traffic_class(dscp: u8) -> u8 {
    (dscp << 2) | 0b10
}

/// The priority a traffic class lands on under the default `dscp2prio`
/// table: its DSCP divided by 8.
pub const fn priority_of_traffic_class(traffic_class: u8) -> u8 {
    traffic_class >> 5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dscp_26_is_traffic_class_106_on_priority_3() {
        assert_eq!(traffic_class(LOSSLESS_DSCP), 106);
        assert_eq!(priority_of_traffic_class(106), LOSSLESS_PRIORITY);
        assert_eq!(priority_of_traffic_class(0), 0);
    }
}
