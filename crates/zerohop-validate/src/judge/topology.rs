//! Judgements of `nvidia-smi topo -m` on its own.

use zerohop_core::{Finding, Remediation, Status};

use crate::declare_judgement;
use crate::judge::Capture;
use crate::smi_topo::{Link, TopoMatrix};

declare_judgement! {
    /// Each GPU has an RDMA NIC under the same PCIe switch.
    ///
    /// ## What it checks
    /// In the matrix of `nvidia-smi topo -m`, the nearest NIC of each GPU
    /// and how it is reached: `PIX` (one PCIe switch) or `PXB` (several
    /// switches) pass; `PHB` (the host bridge), `NODE` (another host bridge
    /// of the NUMA node) and `SYS` (the other socket) warn.
    /// The legend is the one `nvidia-smi topo -m` prints below its matrix;
    /// `PXB` is NCCL's default `NCCL_NET_GDR_LEVEL` (`netGdrLevel = PATH_PXB`
    /// in `src/graph/paths.cc`, NVIDIA/nccl v2.27.3-1).
    ///
    /// ## Why it matters
    /// NCCL uses GPUDirect RDMA only up to `NCCL_NET_GDR_LEVEL`, `PXB` by
    /// default: a GPU whose nearest NIC is farther sends through host memory,
    /// and its rail limits every collective. The same holds for a pod whose
    /// VF sits on the other socket.
    ///
    /// ## How to fix
    /// Use the NIC nearest each GPU (`zerohop topo` prints the pairing and
    /// its `NCCL_IB_HCA`); in Kubernetes, align the GPU and the VF with the
    /// topology manager (`single-numa-node`). When no NIC shares a switch
    /// with the GPU, the server's PCIe layout decides: compare with the
    /// vendor's GPU/NIC pairing guide, and `zerohop topo --compare FILE`
    /// cross-checks this matrix against sysfs.
    ///
    /// ## Example
    ///
    /// The capture `topo.txt`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    ///         GPU0    NIC0    CPU Affinity    NUMA Affinity
    /// GPU0     X      PHB     0-31    0
    /// NIC0    PHB      X
    ///
    /// NIC Legend:
    ///
    ///   NIC0: mlx5_0
    /// ```
    ///
    /// `zerohop validate parse topo.txt` says:
    ///
    /// ```text
    /// topology
    ///   warn           VAL301  topo-nic-far-from-gpu  topo.txt GPU0: nearest NIC mlx5_0 is PHB away: NCCL keeps GPUDirect RDMA off beyond PXB by default
    ///                  topo.txt:2 = GPU0 mlx5_0 PHB
    ///
    /// what to fix first
    ///   1. VAL301 topo-nic-far-from-gpu (topo.txt GPU0): nearest NIC mlx5_0 is PHB away: NCCL keeps GPUDirect RDMA off beyond PXB by default
    ///      fix: pair the GPU with a NIC under its PCIe switch, or align GPU and VF on one NUMA node
    ///        zerohop topo
    ///        zerohop topo --compare topo.txt
    /// ```
    pub static TOPO_GPU_NIC_DISTANCE = {
        id: "VAL301",
        name: "topo-nic-far-from-gpu",
        group: Topology,
        severity: Warning,
    };
}

/// The topology judgements of a matrix.
pub(crate) fn judge(capture: &Capture<'_>, matrix: &TopoMatrix) -> Vec<Finding> {
    let judgement = &TOPO_GPU_NIC_DISTANCE;
    let gpus = matrix.gpus();
    let nics = matrix.nics();
    if gpus.is_empty() {
        return Vec::new();
    }
    if nics.is_empty() {
        return vec![
            judgement
                .verdict(
                    capture,
                    Status::NotApplicable,
                    "",
                    format!("{} gpu(s), no NIC in the matrix", gpus.len()),
                )
                .at(capture, matrix.header_line, "no NIC column")
                .done(),
        ];
    }
    gpus.iter()
        .map(|gpu| {
            let nearest = nics
                .iter()
                .filter_map(|(label, name)| {
                    let (link, line) = matrix.link(gpu, label)?;
                    Some((link.pcie_rank()?, link, *name, line))
                })
                .min_by_key(|(rank, _, _, _)| *rank);
            let Some((_, link, name, line)) = nearest else {
                return judgement
                    .verdict(
                        capture,
                        Status::Unknown,
                        gpu,
                        "no PCIe path to a NIC in its row (the row is cut)",
                    )
                    .done();
            };
            let value = format!("{gpu} {name} {link}");
            if matches!(link, Link::Pix | Link::Pxb) {
                judgement
                    .verdict(capture, Status::Pass, gpu, format!("nearest NIC {name} at {link}"))
                    .at(capture, line, value)
                    .done()
            } else {
                judgement
                    .verdict(
                        capture,
                        judgement.problem(),
                        gpu,
                        format!(
                            "nearest NIC {name} is {link} away: NCCL keeps GPUDirect RDMA off beyond PXB by default"
                        ),
                    )
                    .at(capture, line, value)
                    .fix(
                        Remediation::new("pair the GPU with a NIC under its PCIe switch, or align GPU and VF on one NUMA node")
                            .command("zerohop topo")
                            .command("zerohop topo --compare topo.txt"),
                    )
                    .done()
            }
        })
        .collect()
}
