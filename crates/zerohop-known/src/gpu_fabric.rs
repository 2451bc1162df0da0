//! The slowest RDMA fabric each GPU generation is built with, for judging a
//! multi-node NCCL run whose fabric nobody named.
//!
//! A capture of nccl-tests names its GPUs (`# Rank 0 … device 0 [..]
//! NVIDIA H100 80GB HBM3`) but not the network between the nodes. What it
//! can still be held to is the slowest RDMA link that NVIDIA's reference
//! systems of that generation pair with its GPUs: one such link per node
//! carries `rate / 8` GB/s of bus bandwidth for every collective but
//! all-to-all (nccl-tests `doc/PERFORMANCE.md`), so a run far below it did
//! not use RDMA, or used a fabric slower than any built for that GPU.
//! The rates are per port and deliberately the lowest of each generation's
//! systems, so that a real RDMA run is not taken for a fallback.

/// One GPU generation and the slowest RDMA link its reference systems use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuGeneration {
    /// The architecture, as NVIDIA names it.
    pub architecture: &'static str,
    /// Model tokens of the CUDA device name (`NVIDIA H100 80GB HBM3` has
    /// the token `H100`), compared with whole words of the name.
    pub models: &'static [&'static str],
    /// The slowest RDMA port rate of the generation's reference systems, Gb/s.
    pub slowest_rdma_gbps: f64,
    /// The system and NIC that rate comes from.
    pub reference: &'static str,
}

/// The generations, newest first. Sources, one per row:
///
/// * Blackwell data-centre GPUs: NVIDIA DGX B200 User Guide, "Hardware
///   Overview": eight single-port ConnectX-7 at 400 Gb/s (InfiniBand NDR
///   or 400 GbE) for the compute fabric.
/// * GB10: NVIDIA DGX Spark User Guide, "Hardware Overview": one
///   ConnectX-7 with two 200 Gb/s QSFP ports.
/// * Hopper, Ada and Blackwell PCIe GPUs: NVIDIA Enterprise Reference
///   Architecture 2-8-5-200 and 2-4-3-200 (H100 NVL, H200 NVL, L40S, RTX
///   PRO 6000 Blackwell Server Edition): 200 Gb/s of east-west RDMA per
///   GPU, ConnectX-7 or BlueField-3 (the DGX H100 has 400 Gb/s per GPU).
/// * Ampere: NVIDIA DGX A100 User Guide: ConnectX-6 at 200 Gb/s HDR; A100
///   PCIe, A30 and A40 servers ship with the ConnectX-6 Dx, whose ports run
///   at 100 Gb/s, the rate taken here.
/// * Volta and Pascal: NVIDIA DGX-1 data sheet: four ConnectX-4 at 100 Gb/s
///   EDR InfiniBand.
/// * Kepler and Maxwell: GPUDirect RDMA was introduced with Kepler and the
///   ConnectX-3 (CUDA 5 GPUDirect RDMA documentation, "Supported Systems";
///   Mellanox OFED 2.1 release notes), whose slowest RDMA ports are 40 Gb/s
///   (QDR InfiniBand, 40 GbE RoCE).
pub const GENERATIONS: &[GpuGeneration] = &[
    GpuGeneration {
        architecture: "Blackwell",
        models: &["B100", "B200", "B300", "GB200", "GB300"],
        slowest_rdma_gbps: 400.0,
        reference: "DGX B200, ConnectX-7 at 400 Gb/s",
    },
    GpuGeneration {
        architecture: "Blackwell (GB10)",
        models: &["GB10"],
        slowest_rdma_gbps: 200.0,
        reference: "DGX Spark, ConnectX-7 at 200 Gb/s",
    },
    GpuGeneration {
        architecture: "Blackwell (RTX PRO)",
        models: &["RTX PRO 6000"],
        slowest_rdma_gbps: 200.0,
        reference: "Enterprise Reference Architecture 2-8-5-200, 200 Gb/s per GPU",
    },
    GpuGeneration {
        architecture: "Hopper",
        models: &["H100", "H200", "H800", "H20", "GH200"],
        slowest_rdma_gbps: 200.0,
        reference: "Enterprise Reference Architecture 2-8-5-200, 200 Gb/s per GPU",
    },
    GpuGeneration {
        architecture: "Ada Lovelace",
        models: &["L40S", "L40", "L20", "L4", "RTX 6000 Ada"],
        slowest_rdma_gbps: 200.0,
        reference: "Enterprise Reference Architecture 2-4-3-200, 200 Gb/s per GPU",
    },
    GpuGeneration {
        architecture: "Ampere",
        models: &["A100", "A800", "A30", "A40", "A10", "A16"],
        slowest_rdma_gbps: 100.0,
        reference: "A100 PCIe and A30/A40 servers, ConnectX-6 Dx at 100 Gb/s",
    },
    GpuGeneration {
        architecture: "Volta",
        models: &["V100"],
        slowest_rdma_gbps: 100.0,
        reference: "DGX-1, ConnectX-4 at 100 Gb/s EDR",
    },
    GpuGeneration {
        architecture: "Pascal",
        models: &["P100", "P40"],
        slowest_rdma_gbps: 100.0,
        reference: "DGX-1, ConnectX-4 at 100 Gb/s EDR",
    },
    GpuGeneration {
        architecture: "Kepler/Maxwell",
        models: &["K80", "K40", "K40m", "K20", "K20X", "K20m", "M40", "M60"],
        slowest_rdma_gbps: 40.0,
        reference: "ConnectX-3, 40 Gb/s QDR InfiniBand or 40 GbE",
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
    fn every_rate_is_a_real_rdma_rate() {
        for generation in GENERATIONS {
            assert!(
                [40.0, 100.0, 200.0, 400.0].contains(&generation.slowest_rdma_gbps),
                "{generation:?}"
            );
        }
    }
}
