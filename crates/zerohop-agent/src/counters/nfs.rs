//! NFS transport counters per data mount, from the `xprt:` lines of
//! `mountstats`: how many transports of each protocol a mount has (a mount
//! that fell back to TCP shows `tcp`), the RPC counters every transport
//! has, and the RPC-over-RDMA counters of `rdma` transports (chunks, and
//! the copies and slow registrations that mean the data was not moved
//! zero-copy).
//!
//! Field positions follow the kernel's `xs_tcp_print_stats`,
//! `xs_udp_print_stats` and `xprt_rdma_print_stats`; a mount with
//! `nconnect=16` has 16 lines, summed here.

use std::collections::BTreeMap;

use zerohop_host::parse::mountstats::MountStats;

/// An RPC counter every transport has, and where it sits per protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommonSpec {
    /// The metric name after `zerohop_nfs_transport_`, without `_total`.
    pub metric: &'static str,
    /// The help text.
    pub help: &'static str,
    /// Position on `tcp` and `rdma` lines (same layout for the first ten).
    pub stream: usize,
    /// Position on `udp` lines.
    pub udp: usize,
}

/// The counters of every transport; names as node_exporter's mountstats
/// collector (`node_mountstats_nfs_transport_*`).
pub const COMMON: &[CommonSpec] = &[
    CommonSpec {
        metric: "bind",
        help: "Times the transport was bound to a port",
        stream: 1,
        udp: 1,
    },
    CommonSpec {
        metric: "connect",
        help: "Times the client connected to the server",
        stream: 2,
        udp: usize::MAX,
    },
    CommonSpec {
        metric: "sends",
        help: "RPC requests sent",
        stream: 5,
        udp: 2,
    },
    CommonSpec {
        metric: "receives",
        help: "RPC replies received",
        stream: 6,
        udp: 3,
    },
    CommonSpec {
        metric: "bad_transaction_ids",
        help: "Replies with a transaction ID no request had",
        stream: 7,
        udp: 4,
    },
];

/// An RPC-over-RDMA counter and its position on `rdma` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdmaSpec {
    /// The metric name after `zerohop_nfs_rdma_`, without `_total`.
    pub metric: &'static str,
    /// The help text.
    pub help: &'static str,
    /// Position on the line.
    pub index: usize,
}

/// The RPC-over-RDMA counters.
pub const RDMA: &[RdmaSpec] = &[
    RdmaSpec {
        metric: "read_chunks",
        help: "Read chunks sent: the server pulls the payload with RDMA reads",
        index: 10,
    },
    RdmaSpec {
        metric: "write_chunks",
        help: "Write chunks sent: the server pushes the payload with RDMA writes",
        index: 11,
    },
    RdmaSpec {
        metric: "reply_chunks",
        help: "Reply chunks sent",
        index: 12,
    },
    RdmaSpec {
        metric: "request_bytes",
        help: "Bytes of RPC requests sent over RDMA",
        index: 13,
    },
    RdmaSpec {
        metric: "reply_bytes",
        help: "Bytes of RPC replies received over RDMA",
        index: 14,
    },
    RdmaSpec {
        metric: "pullup_copies",
        help: "Requests whose payload was copied into the send buffer instead of sent in place",
        index: 15,
    },
    RdmaSpec {
        metric: "fixup_copies",
        help: "Replies whose payload was copied out of the receive buffer",
        index: 16,
    },
    RdmaSpec {
        metric: "hardway_registrations",
        help: "Memory registrations done the slow way",
        index: 17,
    },
    RdmaSpec {
        metric: "failed_marshals",
        help: "Requests that could not be marshalled",
        index: 18,
    },
    RdmaSpec {
        metric: "bad_replies",
        help: "Malformed replies received",
        index: 19,
    },
    RdmaSpec {
        metric: "mrs_orphaned",
        help: "Memory regions orphaned by a disconnect",
        index: 22,
    },
    RdmaSpec {
        metric: "empty_sendctx_queue",
        help: "Times a request waited for a free send context",
        index: 25,
    },
];

/// One data mount's transport counters, summed over its transports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountSample {
    /// The mount point.
    pub mount_point: String,
    /// `server:/export`.
    pub export: String,
    /// Per protocol: how many transports, the [`COMMON`] sums (same
    /// order), and for `rdma` the [`RDMA`] sums (same order).
    pub protocols: BTreeMap<String, ProtocolSums>,
}

/// The sums of one protocol's transports on one mount.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtocolSums {
    /// Number of `xprt:` lines.
    pub transports: u64,
    /// Sums of [`COMMON`], `None` where the protocol lacks the counter.
    pub common: Vec<Option<u64>>,
    /// Sums of [`RDMA`]; empty for other protocols.
    pub rdma: Vec<Option<u64>>,
}

/// The samples of the NFS mounts among `stats` whose mount point is in
/// `data_mounts`, or of every NFS mount when `data_mounts` is empty.
pub fn sample(stats: &[MountStats], data_mounts: &[String]) -> Vec<MountSample> {
    stats
        .iter()
        .filter(|m| m.is_nfs())
        .filter(|m| data_mounts.is_empty() || data_mounts.contains(&m.mount_point))
        .map(|mount| {
            let mut protocols: BTreeMap<String, ProtocolSums> = BTreeMap::new();
            for transport in &mount.transports {
                let sums = protocols.entry(transport.protocol.clone()).or_default();
                sums.transports += 1;
                let is_udp = transport.protocol == "udp";
                let common = COMMON.iter().map(|spec| {
                    let index = if is_udp { spec.udp } else { spec.stream };
                    transport.counters.get(index).copied()
                });
                add(&mut sums.common, common);
                if transport.protocol == "rdma" {
                    let rdma = RDMA
                        .iter()
                        .map(|spec| transport.counters.get(spec.index).copied());
                    add(&mut sums.rdma, rdma);
                }
            }
            MountSample {
                mount_point: mount.mount_point.clone(),
                export: mount.device.clone(),
                protocols,
            }
        })
        .collect()
}

/// Adds `values` into `sums` position by position; a value missing on one
/// line (an older kernel's shorter line) makes the sum missing.
fn add(sums: &mut Vec<Option<u64>>, values: impl ExactSizeIterator<Item = Option<u64>>) {
    if sums.is_empty() {
        sums.extend(values);
        return;
    }
    for (sum, value) in sums.iter_mut().zip(values) {
        *sum = match (*sum, value) {
            (Some(a), Some(b)) => Some(a.wrapping_add(b)),
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use zerohop_host::parse::mountstats::parse_mountstats;

    use super::*;

    #[test]
    fn tcp_and_udp_lines_map_their_own_positions() {
        let text = "device srv:/a mounted on /mnt/a with fstype nfs statvers=1.1\n\
                    \txprt:\ttcp 832 1 2 0 11 6428 6427 3 12154 0 24 26 5726\n\
                    device srv:/b mounted on /mnt/b with fstype nfs statvers=1.1\n\
                    \txprt:\tudp 832 4 6428 6427 3 12154 0 24 26 5726\n";
        let samples = sample(&parse_mountstats(text), &[]);
        let tcp = &samples[0].protocols["tcp"];
        assert_eq!(tcp.transports, 1);
        assert_eq!(
            tcp.common,
            [Some(1), Some(2), Some(6428), Some(6427), Some(3)]
        );
        assert!(tcp.rdma.is_empty());
        let udp = &samples[1].protocols["udp"];
        assert_eq!(udp.common, [Some(4), None, Some(6428), Some(6427), Some(3)]);
    }

    #[test]
    fn only_declared_data_mounts_are_sampled() {
        let text = "device srv:/a mounted on /mnt/a with fstype nfs statvers=1.1\n\
                    device srv:/b mounted on /mnt/b with fstype nfs4 statvers=1.1\n\
                    device /dev/sda1 mounted on / with fstype ext4\n";
        let stats = parse_mountstats(text);
        assert_eq!(sample(&stats, &[]).len(), 2);
        let only_b = sample(&stats, &["/mnt/b".to_owned()]);
        assert_eq!(only_b.len(), 1);
        assert_eq!(only_b[0].export, "srv:/b");
    }
}
