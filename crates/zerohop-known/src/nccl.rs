//! NCCL's environment variables zerohop writes advice for, and the defaults
//! NCCL applies without them.

/// Selects the RDMA devices (and ports) NCCL uses: `=mlx5_0:1,mlx5_3:1`.
/// A leading `=` matches names exactly; without it `mlx5_1` also selects
/// `mlx5_10` (NCCL's `env.rst`, `NCCL_IB_HCA`).
pub const IB_HCA: &str = "NCCL_IB_HCA";

/// The farthest GPU–NIC distance class over which NCCL still uses
/// GPUDirect RDMA: `PIX`, `PXB`, `PHB` or `SYS` (also `LOC`, `NVL`, …).
pub const NET_GDR_LEVEL: &str = "NCCL_NET_GDR_LEVEL";

/// [`NET_GDR_LEVEL`] when unset, on PCIe hosts: `PXB`. NVIDIA/nccl
/// `src/graph/paths.cc`, `ncclTopoCheckGdr`: `netGdrLevel` starts at
/// `PATH_PXB` (recent releases start at `PATH_P2C` when `NCCL_NET_GDR_C2C`
/// is on: a class only GPUs attached to the CPU over NVLink-C2C reach, and
/// which sits between `PXB` and `PHB` in `src/graph/topo.h`), and a GPU–NIC path farther than
/// it logs "GPU Direct RDMA Disabled" and stages through host memory.
/// NCCL has no `NODE` class: a path between two host bridges of one CPU
/// goes through the CPU node and is `PHB` to NCCL.
pub const NET_GDR_LEVEL_DEFAULT: &str = "PXB";
