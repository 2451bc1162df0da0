//! The collectives of nccl-tests and the bus bandwidth a fabric can carry
//! for each.
//!
//! nccl-tests reports a *bus bandwidth* (`busbw`) that is the algorithm
//! bandwidth (`size / time`, in 10⁹ bytes per second) times a factor of the
//! collective chosen so that it compares with the hardware's bandwidth
//! whatever the number of ranks `n` (`doc/PERFORMANCE.md` of nccl-tests):
//! `2(n-1)/n` for all-reduce, `(n-1)/n` for all-gather, reduce-scatter and
//! all-to-all, 1 for broadcast, reduce and send/receive.
//!
//! Across nodes, the bottleneck is the network. With `N` nodes of `G`
//! ranks each, `R` rails (RDMA NICs NCCL uses) per node of `L` Gb/s each,
//! a node sends at most `R·L/8` GB/s, and:
//!
//! * ring and tree collectives (all-reduce, all-gather, reduce-scatter,
//!   broadcast, reduce) cross each node's NICs with every byte of a
//!   rank's share once per direction, so `busbw ≈ R·L/8`;
//! * all-to-all sends `(n-G)/n` of each rank's buffer off the node, so
//!   `busbw ≈ R·L/8 · (n-1) / (G·(n-G))`;
//! * send/receive pairs rank `r` with `r+1`: the pairs that cross a node
//!   boundary use one rail each, so `busbw ≈ L/8`.
//!
//! Gather, scatter and hypercube have no such expectation here.

use std::fmt;

/// A collective operation of nccl-tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collective {
    /// `all_reduce_perf`.
    AllReduce,
    /// `all_gather_perf`.
    AllGather,
    /// `reduce_scatter_perf`.
    ReduceScatter,
    /// `broadcast_perf`.
    Broadcast,
    /// `reduce_perf`.
    Reduce,
    /// `alltoall_perf`.
    AllToAll,
    /// `sendrecv_perf`.
    SendRecv,
    /// `gather_perf`.
    Gather,
    /// `scatter_perf`.
    Scatter,
    /// `hypercube_perf`.
    HyperCube,
}

impl Collective {
    /// Every collective, in the order of nccl-tests' binaries.
    pub const ALL: [Collective; 10] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::AllToAll,
        Collective::SendRecv,
        Collective::Gather,
        Collective::Scatter,
        Collective::HyperCube,
    ];

    /// The name of the test binary without `_perf`: `all_reduce`.
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::AllToAll => "alltoall",
            Collective::SendRecv => "sendrecv",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::HyperCube => "hypercube",
        }
    }

    /// Parses a binary name (`all_reduce_perf`, `all_reduce_perf_mpi`), the
    /// name without `_perf`, or NCCL's own name (`AllReduce`), in any case
    /// and with or without underscores.
    pub fn parse(text: &str) -> Option<Collective> {
        let mut key: String = text
            .trim()
            .chars()
            .filter(|c| *c != '_' && *c != '-')
            .collect::<String>()
            .to_ascii_lowercase();
        for suffix in ["perfmpi", "perf"] {
            if let Some(stripped) = key.strip_suffix(suffix) {
                key = stripped.to_owned();
                break;
            }
        }
        Collective::ALL
            .into_iter()
            .find(|c| c.name().replace('_', "") == key)
    }

    /// The bus bandwidth, in GB/s, that `rails` NICs of `link_gbps` each per
    /// node can carry for this collective over `nodes` nodes of
    /// `ranks_per_node` ranks (see the module documentation). `None` when
    /// this collective has no such expectation or the counts do not allow
    /// one (a single node, no rank off the node).
    pub fn fabric_busbw(
        self,
        rails: u32,
        link_gbps: f64,
        nodes: u32,
        ranks_per_node: u32,
    ) -> Option<f64> {
        let node_gbs = f64::from(rails) * link_gbps / 8.0;
        match self {
            Collective::AllReduce
            | Collective::AllGather
            | Collective::ReduceScatter
            | Collective::Broadcast
            | Collective::Reduce => Some(node_gbs),
            Collective::SendRecv => Some(link_gbps / 8.0),
            Collective::AllToAll => {
                let g = f64::from(ranks_per_node);
                let n = f64::from(nodes) * g;
                (nodes > 1 && ranks_per_node > 0).then(|| node_gbs * (n - 1.0) / (g * (n - g)))
            }
            Collective::Gather | Collective::Scatter | Collective::HyperCube => None,
        }
    }

    /// Whether nccl-tests runs this collective as `ncclSend`/`ncclRecv`
    /// pairs: all-to-all (`AlltoAllRunColl` in `src/alltoall.cu`, before
    /// NCCL 2.28's `ncclAlltoAll`) and send/receive (`src/sendrecv.cu`;
    /// NVIDIA/nccl-tests v2.17.6, da0b547b1b9c6e3b1d4c15578087874522ae3761).
    ///
    /// Their rate between nodes follows how many remote peers share each
    /// NIC, not the rails alone: NCCL gives each remote peer 2 channels per
    /// NIC by default (`ncclTopoGetNchannels` in `src/graph/paths.cc`,
    /// `NCCL_NCHANNELS_PER_NET_PEER`, NVIDIA/nccl v2.27.3-1,
    /// 72d2432094d6ae36abd6e511c3a16a2d052dbf94). One peer per NIC stays
    /// well below the link (13.6 GB/s for both on a pair of H100 nodes with
    /// one GPU each), many peers fill it (all-to-all at 50.6 GB/s, 92% of
    /// [`Collective::fabric_busbw`], over 10 nodes of 8 H100 with eight
    /// 400 Gb/s rails, where send/receive stays at 15.2 GB/s).
    pub fn point_to_point(self) -> bool {
        matches!(self, Collective::AllToAll | Collective::SendRecv)
    }

    /// How `fabric_busbw` is computed for this collective, for messages.
    pub fn formula(self) -> &'static str {
        match self {
            Collective::AllReduce
            | Collective::AllGather
            | Collective::ReduceScatter
            | Collective::Broadcast
            | Collective::Reduce => "rails × link rate / 8",
            Collective::SendRecv => "one rail's link rate / 8",
            Collective::AllToAll => "rails × link rate / 8 × (n-1) / (G·(n-G))",
            Collective::Gather | Collective::Scatter | Collective::HyperCube => "none",
        }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_every_spelling() {
        for text in [
            "all_reduce_perf",
            "all_reduce",
            "AllReduce",
            "allreduce",
            "all_reduce_perf_mpi",
        ] {
            assert_eq!(
                Collective::parse(text),
                Some(Collective::AllReduce),
                "{text}"
            );
        }
        assert_eq!(
            Collective::parse("alltoall_perf"),
            Some(Collective::AllToAll)
        );
        assert_eq!(
            Collective::parse("sendrecv_perf"),
            Some(Collective::SendRecv)
        );
        assert_eq!(Collective::parse("bogus_perf"), None);
        for collective in Collective::ALL {
            assert_eq!(Collective::parse(collective.name()), Some(collective));
        }
    }

    #[test]
    fn fabric_bandwidth_follows_the_collective() {
        // Eight 400 Gb/s rails: 400 GB/s per node for ring collectives.
        assert_eq!(
            Collective::AllReduce.fabric_busbw(8, 400.0, 10, 8),
            Some(400.0)
        );
        assert_eq!(
            Collective::SendRecv.fabric_busbw(8, 400.0, 2, 8),
            Some(50.0)
        );
        // 10 nodes × 8: 400 × 79 / (8 × 72).
        let alltoall = Collective::AllToAll.fabric_busbw(8, 400.0, 10, 8).unwrap();
        assert!((alltoall - 54.861).abs() < 0.01, "{alltoall}");
        assert_eq!(Collective::AllToAll.fabric_busbw(8, 400.0, 1, 8), None);
        assert_eq!(Collective::Gather.fabric_busbw(8, 400.0, 2, 8), None);
    }
}
