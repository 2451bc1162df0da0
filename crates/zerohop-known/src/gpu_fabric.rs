//! The slowest RDMA link each GPU generation is deployed with, for judging
//! a multi-node NCCL run whose fabric nobody named.
//!
//! A capture of nccl-tests names its GPUs (`# Rank 0 … device 0 [..]
//! NVIDIA H100 80GB HBM3`) but not the network between the nodes. What it
//! can still be held to is the slowest RDMA link that GPUs of that
//! generation are deployed with: one such link per node carries
//! `rate / 8` GB/s of bus bandwidth for the ring and tree collectives
//! (nccl-tests `doc/PERFORMANCE.md`: the bus bandwidth "should reflect the
//! speed of the hardware bottleneck"), so a run far below it did not use
//! RDMA, or used it well below its rate. The rates are per port and
//! deliberately the lowest a cluster of that generation is likely to have
//! bought, so that a real RDMA run on a slow fabric is not taken for a
//! fallback: where no NVIDIA system document fixes the slowest rate, the
//! row says that the rate is chosen, and why.

/// One GPU generation and the slowest RDMA link it is deployed with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuGeneration {
    /// The architecture, as NVIDIA names it.
    pub architecture: &'static str,
    /// Model tokens of the CUDA device name (`NVIDIA H100 80GB HBM3` has
    /// the token `H100`), compared with whole words of the name.
    pub models: &'static [&'static str],
    /// The slowest RDMA port rate taken for the generation, Gb/s.
    pub slowest_rdma_gbps: f64,
    /// Where that rate comes from: a system and its NIC, or why it was chosen.
    pub reference: &'static str,
}

/// The generations, newest first. Sources, one per row:
///
/// * Blackwell data-centre GPUs (400 Gb/s): NVIDIA DGX B200 User Guide,
///   "Introduction to NVIDIA DGX B200 Systems", "Hardware Overview"
///   (<https://docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html>):
///   "4 x OSFP ports for 8 x NVIDIA ConnectX-7 Single Port Cards",
///   InfiniBand up to 400 Gb/s.
/// * GB10 (100 Gb/s, chosen): the DGX Spark's ConnectX-7 is run at
///   200 Gb/s per port (NVIDIA's playbook "Connect Multiple DGX Spark
///   through a Switch",
///   <https://build.nvidia.com/spark/multi-sparks-through-switch/multi-sparks>),
///   but the NIC reaches the GB10 through two PCIe Gen5 x4 links of about
///   100 Gb/s each, and two ports together were measured at 160 to
///   198 Gb/s (ServeTheHome, "The NVIDIA GB10 ConnectX-7 200GbE Networking
///   is Really Different"): one port's share, 100 Gb/s, is taken.
/// * Blackwell RTX PRO, Hopper and Ada (100 Gb/s, chosen): their
///   ConnectX-7 and BlueField-3 NICs are also sold and run at 100 Gb/s
///   (BlueField-3 B3210: "100GbE (default mode) / HDR100 IB", NVIDIA
///   BlueField DPU BSP v4.2.2, "Supported Platforms and Interoperability";
///   100 GbE RoCE is common with PCIe GPUs such as the L40S), and nothing
///   in a capture says which rate a cluster bought. NVIDIA's own systems
///   are faster (the DGX H100 has 400 Gb/s per GPU), so this is a floor
///   for any deployment, not the expectation of a DGX.
/// * Ampere (100 Gb/s, chosen): the ConnectX-6 and ConnectX-6 Dx of that
///   generation run InfiniBand EDR/HDR100 and 100 GbE (uplink speeds of
///   the NVIDIA MLNX_OFED v5.9-0.5.6.0.107 release notes); 100 Gb/s is the
///   slowest RDMA rate of those NICs' cluster deployments.
/// * Volta and Pascal (100 Gb/s): the DGX-1 pairs them with "four 100 Gb
///   InfiniBand network interface cards" (NVIDIA, "NVIDIA DGX-1 With Tesla
///   V100 System Architecture" white paper), ConnectX-4 EDR.
/// * Kepler and Maxwell (40 Gb/s, chosen): GPUDirect RDMA "is a technology
///   introduced in Kepler-class GPUs and CUDA 5.0" (CUDA "GPUDirect RDMA"
///   guide, "Overview"); 40 Gb/s is QDR InfiniBand and 40 GbE, the slowest
///   RDMA rates of the ConnectX-3 NICs of that time.
pub const GENERATIONS: &[GpuGeneration] = &[
    GpuGeneration {
        architecture: "Blackwell",
        models: &["B100", "B200", "B300", "GB200", "GB300"],
        slowest_rdma_gbps: 400.0,
        reference: "DGX B200 User Guide, ConnectX-7 at 400 Gb/s",
    },
    GpuGeneration {
        architecture: "Blackwell (GB10)",
        models: &["GB10"],
        slowest_rdma_gbps: 100.0,
        reference: "chosen: one 200 Gb/s ConnectX-7 port of a DGX Spark behind a PCIe Gen5 x4 link",
    },
    GpuGeneration {
        architecture: "Blackwell (RTX PRO)",
        models: &["RTX PRO 6000"],
        slowest_rdma_gbps: 100.0,
        reference: "chosen: ConnectX-7 or BlueField-3 at 100 Gb/s, their slowest deployed rate",
    },
    GpuGeneration {
        architecture: "Hopper",
        models: &["H100", "H200", "H800", "H20", "GH200"],
        slowest_rdma_gbps: 100.0,
        reference: "chosen: ConnectX-7 or BlueField-3 at 100 Gb/s, their slowest deployed rate",
    },
    GpuGeneration {
        architecture: "Ada Lovelace",
        models: &["L40S", "L40", "L20", "L4", "RTX 6000 Ada"],
        slowest_rdma_gbps: 100.0,
        reference: "chosen: 100 GbE RoCE, common with PCIe GPUs of this generation",
    },
    GpuGeneration {
        architecture: "Ampere",
        models: &["A100", "A800", "A30", "A40", "A10", "A16"],
        slowest_rdma_gbps: 100.0,
        reference: "chosen: ConnectX-6 or ConnectX-6 Dx at 100 Gb/s (EDR, HDR100, 100 GbE)",
    },
    GpuGeneration {
        architecture: "Volta",
        models: &["V100"],
        slowest_rdma_gbps: 100.0,
        reference: "DGX-1 white paper, four 100 Gb/s EDR InfiniBand NICs",
    },
    GpuGeneration {
        architecture: "Pascal",
        models: &["P100", "P40"],
        slowest_rdma_gbps: 100.0,
        reference: "DGX-1 white paper, four 100 Gb/s EDR InfiniBand NICs",
    },
    GpuGeneration {
        architecture: "Kepler/Maxwell",
        models: &["K80", "K40", "K40m", "K20", "K20X", "K20m", "M40", "M60"],
        slowest_rdma_gbps: 40.0,
        reference: "chosen: ConnectX-3 at 40 Gb/s (QDR InfiniBand, 40 GbE)",
    },
];

/// The generation of a CUDA device name (`NVIDIA H100 80GB HBM3`, `Tesla
/// K80`, `NVIDIA L40S`), by a model token that is a whole word of it (or
/// whole words, for names like `RTX PRO 6000`). Case-insensitive.
pub fn generation(device_name: &str) -> Option<&'static GpuGeneration> {
    let words: Vec<String> = device_name
        .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
        .collect();
    GENERATIONS.iter().find(|generation| {
        generation.models.iter().any(|model| {
            let tokens: Vec<String> = model
                .split_whitespace()
                .map(str::to_ascii_uppercase)
                .collect();
            words.windows(tokens.len()).any(|window| window == tokens)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_of_nccl_tests_find_their_generation() {
        for (name, architecture) in [
            ("NVIDIA H100 80GB HBM3", "Hopper"),
            ("NVIDIA A100-SXM4-40GB", "Ampere"),
            ("NVIDIA A100 80GB PCIe", "Ampere"),
            ("NVIDIA L40S", "Ada Lovelace"),
            ("Tesla K80", "Kepler/Maxwell"),
            ("Tesla V100-SXM2-32GB", "Volta"),
            ("NVIDIA GB10", "Blackwell (GB10)"),
            ("NVIDIA B200", "Blackwell"),
            (
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                "Blackwell (RTX PRO)",
            ),
        ] {
            assert_eq!(
                generation(name).map(|g| g.architecture),
                Some(architecture),
                "{name}"
            );
        }
    }

    #[test]
    fn a_model_is_a_whole_word_not_a_prefix() {
        // `L4` must not match `L40S`, nor `A10` match `A100`.
        assert_eq!(generation("NVIDIA L40S").map(|g| g.models[0]), Some("L40S"));
        assert_eq!(
            generation("NVIDIA A10").map(|g| g.architecture),
            Some("Ampere")
        );
        assert_eq!(generation("Quadro K1200"), None);
        assert_eq!(generation("GeForce GTX 1080 Ti"), None);
        assert_eq!(generation(""), None);
    }

    #[test]
    fn every_rate_names_its_document_or_says_it_is_chosen() {
        for generation in GENERATIONS {
            let reference = generation.reference;
            assert!(
                reference.starts_with("chosen: ")
                    || reference.contains("User Guide")
                    || reference.contains("white paper"),
                "{generation:?}"
            );
        }
    }

    #[test]
    fn every_rate_is_a_real_rdma_rate() {
        for generation in GENERATIONS {
            assert!(
                [40.0, 100.0, 200.0, 400.0].contains(&generation.slowest_rdma_gbps),
                "{generation:?}"
            );
        }
    }
}
