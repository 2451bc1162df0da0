//! The matrix of `nvidia-smi topo -m` (and `-mp`): how each GPU and NIC
//! reaches each other, with CPU and NUMA affinity and the NIC legend.
//!
//! Read as printed by drivers old and new: tab- or space-separated, the
//! header in ANSI underline, indented (a capture pasted into Markdown),
//! with or without NICs, the `GPU NUMA ID` column and the NIC legend, and
//! cut at the terminal's width (cells missing at the end of rows).

use std::collections::HashSet;
use std::fmt;

use crate::notes::Notes;
use crate::text::{excerpt, lines};

/// How two devices of the matrix reach each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// `X`: the device itself.
    Itself,
    /// `NV#`: a bonded set of # NVLinks.
    NvLink(u32),
    /// `PIX`: at most a single PCIe bridge.
    Pix,
    /// `PXB`: several PCIe bridges, no host bridge.
    Pxb,
    /// `PHB`: a PCIe host bridge (the CPU).
    Phb,
    /// `NODE`: between host bridges within a NUMA node.
    Node,
    /// `SYS`: across the link between NUMA nodes.
    Sys,
    /// Anything else the driver prints.
    Other(String),
}

impl Link {
    /// Parses a cell.
    pub fn parse(cell: &str) -> Link {
        match cell {
            "X" => Link::Itself,
            "PIX" => Link::Pix,
            "PXB" => Link::Pxb,
            "PHB" => Link::Phb,
            "NODE" => Link::Node,
            "SYS" => Link::Sys,
            other => match other.strip_prefix("NV").and_then(|n| n.parse().ok()) {
                Some(count) => Link::NvLink(count),
                None => Link::Other(other.to_owned()),
            },
        }
    }

    /// Rank of a PCIe path, nearest first (`PIX` 0 … `SYS` 4); `None` for
    /// links that are not PCIe paths.
    pub fn pcie_rank(&self) -> Option<u8> {
        match self {
            Link::Pix => Some(0),
            Link::Pxb => Some(1),
            Link::Phb => Some(2),
            Link::Node => Some(3),
            Link::Sys => Some(4),
            _ => None,
        }
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Link::Itself => f.write_str("X"),
            Link::NvLink(count) => write!(f, "NV{count}"),
            Link::Pix => f.write_str("PIX"),
            Link::Pxb => f.write_str("PXB"),
            Link::Phb => f.write_str("PHB"),
            Link::Node => f.write_str("NODE"),
            Link::Sys => f.write_str("SYS"),
            Link::Other(text) => f.write_str(text),
        }
    }
}

/// One row of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its line.
    pub line: u32,
    /// `GPU0`, `NIC3`, or a device name in old layouts (`mlx5_0`).
    pub label: String,
    /// One cell per column, `None` where the row was cut.
    pub links: Vec<Option<Link>>,
    /// `CPU Affinity` of a GPU.
    pub cpu_affinity: Option<String>,
    /// `NUMA Affinity` of a GPU.
    pub numa_affinity: Option<String>,
}

/// The whole matrix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopoMatrix {
    /// The header's line.
    pub header_line: u32,
    /// The device columns, in order.
    pub columns: Vec<String>,
    /// The rows, in order.
    pub rows: Vec<Row>,
    /// `NIC0: mlx5_0` lines of the NIC legend: label, device, line.
    pub nic_legend: Vec<(String, String, u32)>,
    /// The legend has the `NV#` line (`-m`); `-mp` prints PCIe paths only.
    pub nvlink_legend: bool,
    /// What could not be read.
    pub notes: Notes,
}

/// The most columns or rows read: a server with sixteen GPUs and sixteen
/// NICs of fifteen VFs each stays below it.
pub const MAX_DEVICES: usize = 256;

impl TopoMatrix {
    /// The GPU labels, in order.
    pub fn gpus(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter(|c| is_gpu(c))
            .map(String::as_str)
            .collect()
    }

    /// The NIC columns: their label and their device name (from the NIC
    /// legend, or the label itself in layouts that print device names).
    pub fn nics(&self) -> Vec<(&str, &str)> {
        self.columns
            .iter()
            .filter(|c| !is_gpu(c))
            .map(|label| {
                let name = self
                    .nic_legend
                    .iter()
                    .find(|(l, _, _)| l == label)
                    .map_or(label.as_str(), |(_, name, _)| name.as_str());
                (label.as_str(), name)
            })
            .collect()
    }

    /// The link from `from` to `to` (labels), read from `from`'s row or, when
    /// that row lacks the cell, from `to`'s; with the line it was read on.
    pub fn link(&self, from: &str, to: &str) -> Option<(&Link, u32)> {
        let cell = |row: &str, column: &str| {
            let index = self.columns.iter().position(|c| c == column)?;
            let row = self.rows.iter().find(|r| r.label == row)?;
            row.links.get(index)?.as_ref().map(|link| (link, row.line))
        };
        cell(from, to).or_else(|| cell(to, from))
    }

    /// The row of a label.
    pub fn row(&self, label: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.label == label)
    }
}

fn is_gpu(label: &str) -> bool {
    label
        .strip_prefix("GPU")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Reads the matrix; a capture without one gives an empty matrix and a note.
pub fn parse(text: &str) -> TopoMatrix {
    let mut matrix = TopoMatrix::default();
    // The column labels, and the labels that already have their row.
    let mut labels: HashSet<String> = HashSet::new();
    let mut done: HashSet<String> = HashSet::new();
    let mut in_rows = false;
    let mut in_nic_legend = false;
    for line in lines(text) {
        let number = line.number;
        let trimmed = line.text.trim();
        if matrix.columns.is_empty() {
            if let Some(columns) = header(trimmed) {
                if columns.1 {
                    matrix.notes.push(
                        number,
                        "the header is cut: its last column is incomplete".to_owned(),
                    );
                }
                matrix.columns = columns.0;
                labels = matrix.columns.iter().cloned().collect();
                matrix.header_line = number;
                in_rows = true;
            }
            continue;
        }
        if trimmed.is_empty() {
            in_rows = false;
            continue;
        }
        if trimmed.starts_with("NIC Legend") {
            in_nic_legend = true;
            in_rows = false;
            continue;
        }
        if trimmed.starts_with("Legend") {
            in_rows = false;
            continue;
        }
        if trimmed.starts_with("NV#") {
            matrix.nvlink_legend = true;
            continue;
        }
        if in_nic_legend {
            if let Some((label, name)) = trimmed.split_once(':') {
                matrix
                    .nic_legend
                    .push((label.trim().to_owned(), name.trim().to_owned(), number));
            }
            continue;
        }
        if in_rows {
            row(number, trimmed, &labels, &mut done, &mut matrix);
        }
    }
    if matrix.columns.is_empty() {
        matrix
            .notes
            .push(0, "no `nvidia-smi topo -m` header (GPU0 …)");
    }
    matrix
}

/// The device columns of a header line and whether the line was cut in the
/// middle of a column name; `None` when `text` is not the header.
fn header(text: &str) -> Option<(Vec<String>, bool)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.first() != Some(&"GPU0") {
        return None;
    }
    let end = words
        .windows(2)
        .position(|w| w == ["CPU", "Affinity"])
        .unwrap_or(words.len());
    let mut columns: Vec<String> = words[..end]
        .iter()
        .take(MAX_DEVICES)
        .map(|w| (*w).to_owned())
        .collect();
    // Without the affinity columns the line was cut by the terminal; a last
    // word that is not a whole label (`NI`, `GPU`) is dropped.
    let mut cut = false;
    if end == words.len()
        && columns
            .last()
            .is_some_and(|last| !(is_gpu(last) || is_nic_label(last)))
    {
        columns.pop();
        cut = true;
    }
    Some((columns, cut))
}

fn is_nic_label(label: &str) -> bool {
    label
        .strip_prefix("NIC")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        || label.contains('_')
}

fn row(
    number: u32,
    text: &str,
    labels: &HashSet<String>,
    done: &mut HashSet<String>,
    matrix: &mut TopoMatrix,
) {
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some(label) = words.first() else {
        return;
    };
    if !labels.contains(*label) {
        matrix.notes.push(
            number,
            format!("unexpected line in the matrix `{}`", excerpt(text)),
        );
        return;
    }
    if matrix.rows.len() >= MAX_DEVICES || !done.insert((*label).to_owned()) {
        return;
    }
    let width = matrix.columns.len();
    let cells = &words[1..];
    let links: Vec<Option<Link>> = (0..width)
        .map(|i| cells.get(i).map(|c| Link::parse(c)))
        .collect();
    if cells.len() < width {
        matrix.notes.push(
            number,
            format!(
                "row {label} has {} of {width} cells: the line was cut",
                cells.len()
            ),
        );
    }
    let extra = cells.get(width..).unwrap_or(&[]);
    matrix.rows.push(Row {
        line: number,
        label: (*label).to_owned(),
        links,
        cpu_affinity: extra.first().map(|s| (*s).to_owned()),
        numa_affinity: extra.get(1).map(|s| (*s).to_owned()),
    });
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const FOUR_A10: &str = "\
        GPU0    GPU1    NIC0    NIC1    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      SYS     SYS     PIX     0-127   0               N/A
GPU1    SYS      X      NODE    SYS     0-127   0               N/A
NIC0    SYS     NODE     X      PIX
NIC1    PIX     SYS     PIX      X 

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
";

    #[test]
    fn gpus_nics_links_and_the_legend_are_read() {
        let matrix = parse(FOUR_A10);
        assert!(matrix.notes.is_empty(), "{:?}", matrix.notes);
        assert_eq!(matrix.gpus(), vec!["GPU0", "GPU1"]);
        assert_eq!(matrix.nics(), vec![("NIC0", "mlx5_0"), ("NIC1", "mlx5_1")]);
        assert_eq!(matrix.link("GPU0", "NIC1"), Some((&Link::Pix, 2)));
        assert_eq!(matrix.link("GPU1", "NIC0"), Some((&Link::Node, 3)));
        assert_eq!(
            matrix.row("GPU0").unwrap().cpu_affinity.as_deref(),
            Some("0-127")
        );
        assert_eq!(
            matrix.row("GPU0").unwrap().numa_affinity.as_deref(),
            Some("0")
        );
        assert!(matrix.nvlink_legend);
    }

    #[test]
    fn ansi_tabs_and_nvlink_counts_are_read() {
        let matrix = parse(
            "\t\u{1b}[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\u{1b}[0m\nGPU0\t X \tNV4\t0-31\t0\nGPU1\tNV4\t X \t0-31\t0\n",
        );
        assert!(matrix.notes.is_empty());
        assert_eq!(matrix.link("GPU0", "GPU1"), Some((&Link::NvLink(4), 2)));
        assert!(matrix.nics().is_empty());
    }

    #[test]
    fn a_matrix_cut_by_the_terminal_is_read_as_far_as_it_goes() {
        let matrix = parse(
            "        GPU0    GPU1    NIC0    NI\nGPU0     X      SYS     PIX\nGPU1    SYS      X\nNIC0    PIX     SYS      X\n",
        );
        assert_eq!(matrix.columns, vec!["GPU0", "GPU1", "NIC0"]);
        // GPU1's cell for NIC0 is cut; NIC0's row still has it.
        assert_eq!(matrix.link("GPU1", "NIC0"), Some((&Link::Sys, 4)));
        assert_eq!(matrix.notes.total(), 2);
    }

    #[test]
    fn text_without_a_matrix_is_noted() {
        let matrix = parse("hello\n");
        assert!(matrix.columns.is_empty());
        assert_eq!(matrix.notes.total(), 1);
    }

    proptest! {
        #[test]
        fn no_input_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&text);
        }

        #[test]
        fn no_mix_of_the_grammar_panics(text in "((GPU[0-9]|NIC[0-9]|X|NV[0-9]{1,2}|PIX|SYS|NODE|CPU Affinity|NIC Legend:|Legend:|: |mlx5_[0-9]|\\t| ){0,20}\n){0,10}") {
            let _ = parse(&text);
        }
    }
}
