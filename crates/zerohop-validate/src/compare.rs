//! zerohop's own GPU↔NIC topology (from sysfs) against the matrix
//! `nvidia-smi topo -m` printed: the pairs where they disagree, with both
//! classes, for `zerohop topo --compare FILE`.
//!
//! GPUs are matched by position: `nvidia-smi` numbers them in PCI bus
//! order (NVML's default enumeration), the order of zerohop's pairings.
//! NICs are matched by RDMA device name (the NIC legend, or the column
//! name in layouts without one).

use std::io::{self, Write};

use serde::Serialize;
use zerohop_core::render::printable::printable;
use zerohop_doctor::topology::{Distance, Topology};

use crate::smi_topo::{Link, TopoMatrix};

/// One GPU/NIC pair whose classes differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    /// The GPU's label in the matrix (`GPU3`).
    pub gpu: String,
    /// The GPU's PCI address in sysfs.
    pub gpu_address: String,
    /// The NIC's RDMA device name.
    pub nic: String,
    /// zerohop's class (`None`: it could not tell).
    pub zerohop: Option<Distance>,
    /// `nvidia-smi`'s class as printed (`PIX`, `NODE` …).
    pub nvidia_smi: String,
    /// The matrix line the class was read from.
    pub line: u32,
}

/// The result of a comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// GPU/NIC pairs compared.
    pub compared: usize,
    /// Those whose classes differ.
    pub disagreements: Vec<Disagreement>,
    /// What could not be compared, as lowercase fragments.
    pub not_compared: Vec<String>,
}

/// Compares `topology` (sysfs) with `matrix` (`nvidia-smi topo -m`).
pub fn compare(topology: &Topology, matrix: &TopoMatrix) -> Comparison {
    let mut result = Comparison::default();
    let gpus = matrix.gpus();
    let nics = matrix.nics();
    if gpus.len() != topology.pairings.len() {
        result.not_compared.push(format!(
            "nvidia-smi shows {} gpu(s) and sysfs {}: the gpus cannot be matched",
            gpus.len(),
            topology.pairings.len()
        ));
        return result;
    }
    for (_, name) in &nics {
        if !topology.nics.iter().any(|n| n.name == *name) {
            result.not_compared.push(format!(
                "nvidia-smi lists {name}, which zerohop does not pair (a virtual function, or a NIC without an RDMA device)"
            ));
        }
    }
    for nic in &topology.nics {
        if !nics.iter().any(|(_, name)| *name == nic.name) {
            result.not_compared.push(format!(
                "zerohop pairs {}, which nvidia-smi does not list",
                nic.name
            ));
        }
    }
    for (gpu, pairing) in gpus.iter().zip(&topology.pairings) {
        for (index, nic) in topology.nics.iter().enumerate() {
            let Some((label, _)) = nics.iter().find(|(_, name)| *name == nic.name) else {
                continue;
            };
            let Some((link, line)) = matrix.link(gpu, label) else {
                result
                    .not_compared
                    .push(format!("the matrix has no cell for {gpu} and {}", nic.name));
                continue;
            };
            let ours = pairing.all.get(index).copied().flatten();
            result.compared += 1;
            if !same(ours, link) {
                result.disagreements.push(Disagreement {
                    gpu: (*gpu).to_owned(),
                    gpu_address: pairing.gpu.clone(),
                    nic: nic.name.clone(),
                    zerohop: ours,
                    nvidia_smi: link.to_string(),
                    line,
                });
            }
        }
    }
    result
}

fn same(ours: Option<Distance>, theirs: &Link) -> bool {
    matches!(
        (ours, theirs),
        (Some(Distance::Pix), Link::Pix)
            | (Some(Distance::Pxb), Link::Pxb)
            | (Some(Distance::Phb), Link::Phb)
            | (Some(Distance::Node), Link::Node)
            | (Some(Distance::Sys), Link::Sys)
    )
}

/// Writes the comparison for people: the disagreeing pairs as a table,
/// a summary line, and what could not be compared.
pub fn render(comparison: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    if !comparison.disagreements.is_empty() {
        let address_width = comparison
            .disagreements
            .iter()
            .map(|d| d.gpu_address.len())
            .max()
            .unwrap_or(0)
            .max(7);
        let nic_width = comparison
            .disagreements
            .iter()
            .map(|d| d.nic.len())
            .max()
            .unwrap_or(0)
            .max(3);
        writeln!(
            out,
            "{:<6}  {:<address_width$}  {:<nic_width$}  {:<7}  nvidia-smi",
            "GPU", "address", "NIC", "zerohop"
        )?;
        for d in &comparison.disagreements {
            writeln!(
                out,
                "{:<6}  {:<address_width$}  {:<nic_width$}  {:<7}  {} (line {})",
                printable(&d.gpu),
                printable(&d.gpu_address),
                printable(&d.nic),
                d.zerohop.map_or("?", Distance::as_str),
                printable(&d.nvidia_smi),
                d.line
            )?;
        }
        writeln!(out)?;
    }
    if comparison.compared == 0 {
        writeln!(out, "no GPU/NIC pair could be compared")?;
    } else if comparison.disagreements.is_empty() {
        writeln!(out, "all {} GPU/NIC pairs agree", comparison.compared)?;
    } else {
        writeln!(
            out,
            "{} of {} GPU/NIC pairs disagree",
            comparison.disagreements.len(),
            comparison.compared
        )?;
    }
    for note in &comparison.not_compared {
        writeln!(out, "not compared: {}", printable(note))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use zerohop_doctor::topology::{Nic, Pairing};

    use super::*;
    use crate::smi_topo;

    fn nic(name: &str) -> Nic {
        Nic {
            name: name.to_owned(),
            pci: String::new(),
            port: 1,
            active: true,
            numa_node: Some(0),
        }
    }

    fn pairing(gpu: &str, all: Vec<Option<Distance>>) -> Pairing {
        Pairing {
            gpu: gpu.to_owned(),
            gpu_numa_node: Some(0),
            nic: None,
            distance: None,
            all,
        }
    }

    const MATRIX: &str = "\
        GPU0    GPU1    NIC0    NIC1    NIC2    CPU Affinity    NUMA Affinity
GPU0     X      SYS     PIX     SYS     SYS     0-31    0
GPU1    SYS      X      SYS     NODE    NODE    32-63   1
NIC0    PIX     SYS      X      SYS     SYS
NIC1    SYS     NODE    SYS      X      PIX
NIC2    SYS     NODE    SYS     PIX      X

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
  NIC2: mlx5_2
";

    #[test]
    fn the_pairs_that_differ_are_listed_with_both_classes() {
        let matrix = smi_topo::parse(MATRIX);
        let topology = Topology {
            nics: vec![nic("mlx5_0"), nic("mlx5_1"), nic("mlx5_3")],
            pairings: vec![
                pairing(
                    "0000:17:00.0",
                    vec![Some(Distance::Pix), Some(Distance::Sys), None],
                ),
                pairing(
                    "0000:65:00.0",
                    vec![Some(Distance::Sys), Some(Distance::Phb), None],
                ),
            ],
            nccl_ib_hca: String::new(),
            pci_unreadable: None,
            rdma_unreadable: None,
        };
        let result = compare(&topology, &matrix);
        assert_eq!(result.compared, 4);
        assert_eq!(
            result.disagreements,
            vec![Disagreement {
                gpu: "GPU1".to_owned(),
                gpu_address: "0000:65:00.0".to_owned(),
                nic: "mlx5_1".to_owned(),
                zerohop: Some(Distance::Phb),
                nvidia_smi: "NODE".to_owned(),
                line: 3,
            }]
        );
        assert_eq!(result.not_compared.len(), 2, "{:?}", result.not_compared);
        let mut text = Vec::new();
        render(&result, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("GPU1    0000:65:00.0  mlx5_1  PHB      NODE (line 3)"),
            "{text}"
        );
        assert!(text.contains("1 of 4 GPU/NIC pairs disagree"), "{text}");
        assert!(
            text.contains("not compared: nvidia-smi lists mlx5_2"),
            "{text}"
        );
        assert!(
            text.contains("not compared: zerohop pairs mlx5_3"),
            "{text}"
        );
    }

    #[test]
    fn a_different_gpu_count_is_not_matched_by_position() {
        let matrix = smi_topo::parse(MATRIX);
        let topology = Topology {
            nics: vec![nic("mlx5_0")],
            pairings: vec![pairing("0000:17:00.0", vec![Some(Distance::Pix)])],
            nccl_ib_hca: String::new(),
            pci_unreadable: None,
            rdma_unreadable: None,
        };
        let result = compare(&topology, &matrix);
        assert_eq!(result.compared, 0);
        assert!(result.disagreements.is_empty());
        let mut text = Vec::new();
        render(&result, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("no GPU/NIC pair could be compared"));
        assert!(text.contains("nvidia-smi shows 2 gpu(s) and sysfs 1"));
    }

    #[test]
    fn agreeing_topologies_say_so() {
        let matrix = smi_topo::parse(MATRIX);
        let topology = Topology {
            nics: vec![nic("mlx5_0"), nic("mlx5_1"), nic("mlx5_2")],
            pairings: vec![
                pairing(
                    "a",
                    vec![
                        Some(Distance::Pix),
                        Some(Distance::Sys),
                        Some(Distance::Sys),
                    ],
                ),
                pairing(
                    "b",
                    vec![
                        Some(Distance::Sys),
                        Some(Distance::Node),
                        Some(Distance::Node),
                    ],
                ),
            ],
            nccl_ib_hca: String::new(),
            pci_unreadable: None,
            rdma_unreadable: None,
        };
        let result = compare(&topology, &matrix);
        assert_eq!(result.compared, 6);
        let mut text = Vec::new();
        render(&result, &mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "all 6 GPU/NIC pairs agree\n"
        );
    }
}
