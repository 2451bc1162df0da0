//! RoCE v2 quality of service: which traffic class reaches which priority.
//!
//! With the port trusting DSCP, an mlx5 NIC maps DSCP `d` to priority
//! `d / 8` unless told otherwise (the default `dscp2prio` table that
//! `mlnx_qos -i PF --trust dscp` prints: `prio:3 dscp:31,…,24`). A verbs
//! traffic class is the IPv4 ToS byte: DSCP in its upper six bits, ECN in
//! the lower two. NVIDIA's RoCE configuration uses DSCP 26 on priority 3
//! with PFC and DCQCN.

/// The smallest netdev MTU that lets a RoCE port run with the 4096-byte
/// path MTU: the RoCE payload MTU is the largest IB MTU (256…4096) that
/// fits in the netdev MTU less the RoCE v2 headers (mlx5 and the kernel's
/// `ib_mtu_int_to_enum(iboe_get_mtu(netdev->mtu))`, include/rdma/ib_addr.h:
/// `iboe_get_mtu` subtracts the GRH, UDP, BTH, extended headers and ICRC), so
/// a 1500-byte netdev gives a 1024-byte path MTU. By that arithmetic a
/// netdev MTU of 4096 + [`ROCE_HEADER_BYTES`] (4192) is the least that
/// carries 4096; the floor is 4200, a round figure a few bytes above it
/// (RoCE rails usually run 9000, as NVIDIA's configuration guides do).
/// `plan`, `lint` and the doctor all hold RoCE rails to it.
pub const MIN_MTU: u32 = 4200;

/// The bytes of RoCE v2 headers the kernel takes off a netdev's MTU to
/// find the RDMA path MTU: GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28 and
/// ICRC 4 (`iboe_get_mtu`, include/rdma/ib_addr.h, Linux v6.12).
pub const ROCE_HEADER_BYTES: u32 = 96;

/// The RDMA path MTU (`active_mtu` of `ibv_devinfo`) a RoCE port runs with
/// over a netdev of MTU `netdev_mtu`: the largest IB MTU (256…4096) that
/// fits once [`ROCE_HEADER_BYTES`] are taken off; 0 when not even 256
/// does (`iboe_get_mtu` returns 0 then).
pub const fn roce_path_mtu(netdev_mtu: u32) -> u32 {
    let payload = netdev_mtu.saturating_sub(ROCE_HEADER_BYTES);
    let mut mtu = 4096;
    while mtu >= 256 {
        if payload >= mtu {
            return mtu;
        }
        mtu /= 2;
    }
    0
}

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

/// The priorities a shell script turns PFC on for, with the two tools
/// that set it: `mlnx_qos … --pfc 0,0,0,1,0,0,0,0` (one flag per priority,
/// mlnx_qos `--help`) and iproute2's `dcb pfc set dev PF prio-pfc all:off
/// 3:on` (dcb-pfc(8): `prio-pfc` takes `PRIO:on|off` pairs, `all` for
/// every priority, later pairs overriding earlier ones). Empty when the
/// script sets no PFC. Shell variables are not expanded: a value that is
/// not a literal is skipped.
pub fn pfc_priorities(script: &str) -> std::collections::BTreeSet<u8> {
    let mut lossless = std::collections::BTreeSet::new();
    for line in script.lines() {
        let words: Vec<&str> = line
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
            .collect();
        for (index, word) in words.iter().enumerate() {
            let value = words.get(index + 1).copied().unwrap_or("");
            if *word == "--pfc" && words[..index].contains(&"mlnx_qos") {
                let flags: Vec<&str> = value.split(',').collect();
                if flags.len() == 8 && flags.iter().all(|f| matches!(*f, "0" | "1")) {
                    lossless.extend((0u8..8).filter(|p| flags[usize::from(*p)] == "1"));
                }
            }
            if *word == "prio-pfc" && words[..index].contains(&"dcb") {
                let mut on = [false; 8];
                for pair in words[index + 1..].iter().take_while(|w| w.contains(':')) {
                    let Some((prio, state)) = pair.split_once(':') else {
                        continue;
                    };
                    let state = match state {
                        "on" => true,
                        "off" => false,
                        _ => continue,
                    };
                    match prio {
                        "all" => on = [state; 8],
                        digit => {
                            if let Ok(prio) = digit.parse::<usize>()
                                && prio < 8
                            {
                                on[prio] = state;
                            }
                        }
                    }
                }
                lossless.extend((0u8..8).filter(|p| on[usize::from(*p)]));
            }
        }
    }
    lossless
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_mtu_of_a_netdev_as_the_kernel_computes_it() {
        assert_eq!(roce_path_mtu(1500), 1024);
        assert_eq!(roce_path_mtu(MIN_MTU), 4096);
        // The kernel's arithmetic: 4192 is the least netdev MTU for 4096.
        assert_eq!(roce_path_mtu(4096 + ROCE_HEADER_BYTES), 4096);
        assert_eq!(roce_path_mtu(4096 + ROCE_HEADER_BYTES - 1), 2048);
        assert_eq!(roce_path_mtu(4191), 2048);
        assert_eq!(roce_path_mtu(9000), 4096);
        assert_eq!(roce_path_mtu(300), 0);
    }

    #[test]
    fn pfc_priorities_from_mlnx_qos_and_dcb() {
        let both = "mlnx_qos -i \"$pf\" --trust dscp --pfc 0,0,0,1,0,0,0,0 >/dev/null\n\
                    dcb pfc set dev \"$pf\" prio-pfc all:off 5:on || fail";
        assert_eq!(pfc_priorities(both).into_iter().collect::<Vec<_>>(), [3, 5]);
        assert!(pfc_priorities("mlnx_qos -i eth0 --pfc $PFC").is_empty());
        assert!(pfc_priorities("echo --pfc 1,1,1,1,1,1,1,1").is_empty());
        assert!(pfc_priorities("dcb pfc set dev x prio-pfc all:off").is_empty());
    }

    #[test]
    fn dscp_26_is_traffic_class_106_on_priority_3() {
        assert_eq!(traffic_class(LOSSLESS_DSCP), 106);
        assert_eq!(priority_of_traffic_class(106), LOSSLESS_PRIORITY);
        assert_eq!(priority_of_traffic_class(0), 0);
    }
}
