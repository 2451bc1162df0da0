//! What an RDMA work completion error means: the `ibv_wc_status` that
//! NCCL and perftest print, and the vendor syndromes seen with it.
//!
//! The statuses are `enum ibv_wc_status` of `libibverbs/verbs.h`
//! (rdma-core). The vendor error is the NIC's own syndrome
//! (`vendor_err_synd` of an mlx5 error CQE, `providers/mlx5/cq.c`); its
//! values are not published as a table, so only those seen with a known
//! cause in NCCL's issue tracker are explained (NVIDIA/nccl#426 for 129,
//! #523 and #1052 for 81, #1405 and #1814 for 249).

/// The name of `ibv_wc_status` number `status`.
pub fn status_name(status: u32) -> Option<&'static str> {
    const NAMES: [&str; 24] = [
        "IBV_WC_SUCCESS",
        "IBV_WC_LOC_LEN_ERR",
        "IBV_WC_LOC_QP_OP_ERR",
        "IBV_WC_LOC_EEC_OP_ERR",
        "IBV_WC_LOC_PROT_ERR",
        "IBV_WC_WR_FLUSH_ERR",
        "IBV_WC_MW_BIND_ERR",
        "IBV_WC_BAD_RESP_ERR",
        "IBV_WC_LOC_ACCESS_ERR",
        "IBV_WC_REM_INV_REQ_ERR",
        "IBV_WC_REM_ACCESS_ERR",
        "IBV_WC_REM_OP_ERR",
        "IBV_WC_RETRY_EXC_ERR",
        "IBV_WC_RNR_RETRY_EXC_ERR",
        "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR",
        "IBV_WC_REM_ABORT_ERR",
        "IBV_WC_INV_EECN_ERR",
        "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR",
        "IBV_WC_RESP_TIMEOUT_ERR",
        "IBV_WC_GENERAL_ERR",
        "IBV_WC_TM_ERR",
        "IBV_WC_TM_RNDV_INCOMPLETE",
    ];
    NAMES.get(usize::try_from(status).ok()?).copied()
}

/// `IBV_WC_WR_FLUSH_ERR`: the queue pair was already in error; the cause
/// is an earlier completion.
pub const WR_FLUSH_ERR: u32 = 5;

/// What a completion error means and what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meaning {
    /// What happened, as a lowercase fragment.
    pub what: &'static str,
    /// The usual causes and the fix, as a lowercase fragment.
    pub fix: &'static str,
    /// Whether this error is only the consequence of an earlier one.
    pub consequence: bool,
}

/// The meaning of completion status `status` with vendor syndrome
/// `vendor_err`.
pub fn meaning(status: u32, vendor_err: Option<u32>) -> Meaning {
    match (status, vendor_err) {
        (12, _) => Meaning {
            what: "transport retry counter exceeded: the peer never acknowledged (vendor err 129 on mlx5)",
            fix: "the packets are lost or unroutable: on RoCE check PFC/ECN on every switch port of the rail, that both sides use the RoCE v2 GID of their rail address (NCCL_IB_GID_INDEX, show_gids), and that the rails can reach each other (NCCL_IB_HCA, NCCL_CROSS_NIC=0 on rail-only fabrics); raise NCCL_IB_TIMEOUT only when the fabric is known to be slow",
            consequence: false,
        },
        (13, _) => Meaning {
            what: "receiver-not-ready retries exceeded: the peer had no receive posted",
            fix: "the peer process stalled or died; read its log first",
            consequence: false,
        },
        (4, _) => Meaning {
            what: "local protection error: the NIC may not touch the registered memory (vendor err 81 on mlx5)",
            fix: "with GPU memory this is GPUDirect RDMA broken on the PCIe path: disable ACS on the PCIe switches between GPU and NIC (or set NCCL_NET_GDR_LEVEL=LOC to confirm), check the IOMMU is off or in passthrough, and that nvidia_peermem or DMA-BUF is in use",
            consequence: false,
        },
        (WR_FLUSH_ERR, _) => Meaning {
            what: "work request flushed: the queue pair had already failed",
            fix: "a consequence of an earlier error on the same connection; fix that one",
            consequence: true,
        },
        (10, _) => Meaning {
            what: "remote access error: the peer refused the RDMA access",
            fix: "the peer's memory registration is gone or lacks the access flags; the peer usually failed first",
            consequence: false,
        },
        (8 | 9 | 11 | 15 | 16, _) => Meaning {
            what: "the peer rejected the request",
            fix: "read the peer's log; a mismatch of NCCL versions or a crashed peer are the usual causes",
            consequence: false,
        },
        (19 | 21, _) => Meaning {
            what: "the NIC reported a fatal or general error",
            fix: "check the NIC's health (dmesg, mlxlink, firmware) and the port state",
            consequence: false,
        },
        _ => Meaning {
            what: "the NIC completed a request with an error",
            fix: "look up the status in libibverbs' ibv_wc_status and the NIC vendor's syndrome",
            consequence: false,
        },
    }
}

/// `status 12 (IBV_WC_RETRY_EXC_ERR), vendor err 129 (0x81)`.
pub fn describe(status: u32, vendor_err: Option<u32>) -> String {
    let name = status_name(status).map_or(String::new(), |n| format!(" ({n})"));
    match vendor_err {
        Some(vendor) => format!("status {status}{name}, vendor err {vendor} (0x{vendor:x})"),
        None => format!("status {status}{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_libibverbs() {
        assert_eq!(status_name(12), Some("IBV_WC_RETRY_EXC_ERR"));
        assert_eq!(status_name(5), Some("IBV_WC_WR_FLUSH_ERR"));
        assert_eq!(status_name(23), Some("IBV_WC_TM_RNDV_INCOMPLETE"));
        assert_eq!(status_name(24), None);
        assert_eq!(
            describe(12, Some(129)),
            "status 12 (IBV_WC_RETRY_EXC_ERR), vendor err 129 (0x81)"
        );
        assert_eq!(describe(99, None), "status 99");
    }

    #[test]
    fn a_flush_is_a_consequence_and_a_retry_is_not() {
        assert!(meaning(5, Some(249)).consequence);
        assert!(!meaning(12, Some(129)).consequence);
        assert!(meaning(4, Some(81)).what.contains("protection"));
    }
}
