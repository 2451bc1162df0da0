//! The topology drawn as one self-contained SVG: the tree from the host
//! on the left to the devices aligned on the right, one row per device,
//! each GPU's path to its NIC painted under the boxes in the colour of its
//! distance class, and `NCCL_IB_HCA` under it all.
//!
//! Text is monospace so that its width is known without a font engine:
//! a line longer than its box is cut with `…` and kept whole in the box's
//! `<title>`, so no text leaves its box or covers another.

use std::fmt::Write as _;

use zerohop_core::render::html::escape;
use zerohop_known::nccl;

use super::tree::{HOST, Kind, Node, Path, Severity, Tree};
use crate::topology::{Distance, Topology};

/// Space around the drawing.
const MARGIN: f64 = 16.0;
/// Width of a host, NUMA node, host bridge or port box.
const BRIDGE_W: f64 = 80.0;
/// Height of such a box.
const BRIDGE_H: f64 = 24.0;
/// Width of a device box.
const DEVICE_W: f64 = 380.0;
/// Space between columns: the trunk and the link labels live here.
const GAP: f64 = 110.0;
/// Where a parent's trunk runs, right of its box.
const TRUNK: f64 = 14.0;
/// Height of one text line in a box.
const LINE_H: f64 = 15.0;
/// Space between device rows.
const ROW_GAP: f64 = 18.0;
/// Width of one character of box text (11 px monospace).
const CHAR_W: f64 = 6.7;
/// Width of one character of link labels (10 px monospace).
const SMALL_CHAR_W: f64 = 6.1;
/// Height of the title and of each line under the drawing.
const TEXT_ROW: f64 = 20.0;

const STYLE: &str = "\
.zh-box{fill:#fff;stroke:#6b6b80;stroke-width:1}\
.zh-host{fill:#eef0f8}.zh-numa{fill:#f3f0ff}.zh-hb{fill:#f6f6f6}\
.zh-gpu{fill:#eaf6ec;stroke:#2d7a3e}.zh-nic{fill:#e9f1fb;stroke:#2b5d9c}.zh-nvme{fill:#fbf3e6;stroke:#8a5a12}\
.zh-fault{stroke:#b3261e;stroke-width:2.5}\
.zh-edge{fill:none;stroke:#8a8a9c;stroke-width:1.2}\
.zh-edge.zh-fault{stroke:#b3261e;stroke-width:2;stroke-dasharray:6 3}\
.zh-t{font:11px 'DejaVu Sans Mono',ui-monospace,monospace;fill:#1b1b22}\
.zh-s{font:10px 'DejaVu Sans Mono',ui-monospace,monospace;fill:#4a4a5c}\
.zh-b{font-weight:bold}\
.zh-red{fill:#b3261e}.zh-amber{fill:#9a5b00}\
.zh-path{fill:none;stroke-width:7;stroke-linejoin:round;stroke-linecap:round;opacity:.45}\
.zh-near{stroke:#2e9e4f}.zh-phb{stroke:#d49a00}.zh-node{stroke:#e0661b;stroke-dasharray:10 5}\
.zh-sys{stroke:#c62828;stroke-dasharray:10 5}.zh-unknown{stroke:#777}";

/// A box's place.
#[derive(Debug, Clone, Copy, Default)]
struct Place {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Place {
    fn cy(&self) -> f64 {
        self.y + self.h / 2.0
    }

    fn right(&self) -> f64 {
        self.x + self.w
    }
}

/// The drawing of `tree`, with the `NCCL_IB_HCA` line and the notes of
/// `topology` under it, titled `host`.
pub(crate) fn draw(tree: &Tree, topology: &Topology, host: &str) -> String {
    let depth = |mut index: usize| {
        let mut d = 0;
        while let Some(parent) = tree.nodes[index].parent {
            d += 1;
            index = parent;
        }
        d
    };
    // The boxes still hanging off the host: a folded branch's are not.
    let mut shown = Vec::with_capacity(tree.nodes.len());
    let mut stack = vec![HOST];
    while let Some(at) = stack.pop() {
        shown.push(at);
        stack.extend(tree.nodes[at].children.iter().rev());
    }
    let deepest = shown
        .iter()
        .copied()
        .filter(|&i| !tree.nodes[i].kind.is_device())
        .map(depth)
        .max()
        .unwrap_or(0);
    let column_x = |d: usize| MARGIN + d as f64 * (BRIDGE_W + GAP);
    let device_x = column_x(deepest + 1);
    let width = (device_x + DEVICE_W + MARGIN).max(760.0);
    let top = MARGIN + TEXT_ROW * 1.5;

    let mut places = vec![Place::default(); tree.nodes.len()];
    let mut next_y = top;
    place(tree, HOST, 0, &mut places, &mut next_y, &column_x, device_x);
    let drawing_bottom = if tree.nodes[HOST].children.is_empty() {
        top + BRIDGE_H
    } else {
        next_y - ROW_GAP
    };

    let footer = footer(topology, width);
    let height = drawing_bottom + TEXT_ROW * (footer.len() as f64 + 1.0) + MARGIN;
    let mut out = String::with_capacity(4096 + tree.nodes.len() * 600);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"zh-topology\" viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"data path topology of {}\">\n<style>{STYLE}</style>\n<rect x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"#fff\"/>\n",
        escape(host)
    );
    let title = format!("data path of {host}: GPUs, RDMA NICs and NVMe on the PCIe tree");
    text(
        &mut out,
        MARGIN,
        MARGIN + 12.0,
        "zh-t zh-b",
        &fit(&title, width - 2.0 * MARGIN, CHAR_W),
    );
    for path in &tree.paths {
        draw_path(&mut out, tree, &places, path);
    }
    for &index in &shown {
        let node = &tree.nodes[index];
        if let Some(parent) = node.parent {
            edge(&mut out, &places[parent], &places[index], node);
        }
    }
    for &index in &shown {
        draw_box(&mut out, &tree.nodes[index], &places[index]);
    }
    let mut y = drawing_bottom + TEXT_ROW * 1.5;
    for (class, line) in &footer {
        text(&mut out, MARGIN, y, class, line);
        y += TEXT_ROW;
    }
    out.push_str("</svg>\n");
    out
}

/// Places `index` and its branch: devices one per row in the device
/// column, every other box at its depth on the row of its first child.
fn place(
    tree: &Tree,
    index: usize,
    depth: usize,
    places: &mut [Place],
    next_y: &mut f64,
    column_x: &dyn Fn(usize) -> f64,
    device_x: f64,
) {
    let node = &tree.nodes[index];
    if node.kind.is_device() {
        let h = node.lines.len() as f64 * LINE_H + 10.0;
        places[index] = Place {
            x: device_x,
            y: *next_y,
            w: DEVICE_W,
            h,
        };
        *next_y += h + ROW_GAP;
        return;
    }
    let start = *next_y;
    for &child in &node.children {
        place(tree, child, depth + 1, places, next_y, column_x, device_x);
    }
    let cy = node
        .children
        .first()
        .map_or(start + BRIDGE_H / 2.0, |&c| places[c].cy());
    places[index] = Place {
        x: column_x(depth),
        y: cy - BRIDGE_H / 2.0,
        w: BRIDGE_W,
        h: BRIDGE_H,
    };
}

/// The edge from `parent` to `child`: along the parent's trunk and across
/// to the child, with the link's width and speed over it and what is wrong
/// under it.
fn edge(out: &mut String, parent: &Place, child: &Place, node: &Node) {
    let trunk = parent.right() + TRUNK;
    let fault = node
        .link
        .as_ref()
        .and_then(|l| l.mark.as_ref())
        .is_some_and(|(s, _)| *s == Severity::Fault);
    let _ = writeln!(
        out,
        "<polyline class=\"zh-edge{}\" points=\"{:.1},{:.1} {trunk:.1},{:.1} {trunk:.1},{:.1} {:.1},{:.1}\"/>",
        if fault { " zh-fault" } else { "" },
        parent.right(),
        parent.cy(),
        parent.cy(),
        child.cy(),
        child.x,
        child.cy(),
    );
    let Some(link) = &node.link else {
        return;
    };
    let room = child.x - trunk - 10.0;
    let x = child.x - 5.0;
    let anchored = |out: &mut String, y: f64, class: &str, line: &str| {
        let _ = writeln!(
            out,
            "<text class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"end\">{}</text>",
            escape(&fit(line, room, SMALL_CHAR_W))
        );
    };
    anchored(out, child.cy() - 4.0, "zh-s", &link.label);
    if let Some((severity, why)) = &link.mark {
        let class = match severity {
            Severity::Fault => "zh-s zh-red",
            Severity::Note => "zh-s zh-amber",
        };
        anchored(out, child.cy() + 12.0, class, why);
    }
}

/// A box with its lines, its full text in its title.
fn draw_box(out: &mut String, node: &Node, place: &Place) {
    let class = match node.kind {
        Kind::Host => "zh-host",
        Kind::Numa => "zh-numa",
        Kind::HostBridge => "zh-hb",
        Kind::Bridge => "",
        Kind::Gpu => "zh-gpu",
        Kind::Nic => "zh-nic",
        Kind::Nvme => "zh-nvme",
    };
    let fault = if node.mark == Some(Severity::Fault) {
        " zh-fault"
    } else {
        ""
    };
    let kind = match node.kind {
        Kind::Host => "host",
        Kind::Numa => "numa",
        Kind::HostBridge => "host-bridge",
        Kind::Bridge => "port",
        Kind::Gpu => "gpu",
        Kind::Nic => "nic",
        Kind::Nvme => "nvme",
    };
    let _ = write!(
        out,
        "<g class=\"zh-{kind}-box\" data-key=\"{}\"><title>{}</title>",
        escape(&node.key),
        escape(&node.lines.join("\n"))
    );
    // A folded run shows as a stack.
    for shadow in (1..node.repeats.min(3)).rev() {
        let offset = shadow as f64 * 3.0;
        let _ = write!(
            out,
            "<rect class=\"zh-box {class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"3\"/>",
            place.x + offset,
            place.y + offset,
            place.w,
            place.h
        );
    }
    let _ = write!(
        out,
        "<rect class=\"zh-box {class}{fault}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"3\"/>",
        place.x, place.y, place.w, place.h
    );
    let room = place.w - 12.0;
    let mut lines = node.lines.clone();
    if node.repeats > 1
        && !node.kind.is_device()
        && let Some(first) = lines.first_mut()
    {
        first.push_str(&format!(" ×{}", node.repeats));
    }
    let mut y = place.y + 5.0 + 11.0;
    for (i, line) in lines.iter().enumerate() {
        let class = if node.kind == Kind::Gpu && i == 1 {
            match node.mark {
                Some(Severity::Fault) => "zh-t zh-red",
                _ => "zh-t",
            }
        } else if node.kind == Kind::Nic && i == 1 && node.mark.is_some() {
            "zh-t zh-red"
        } else if i == 0 && node.kind.is_device() {
            "zh-t zh-b"
        } else {
            "zh-t"
        };
        let y_line = if node.kind.is_device() {
            y
        } else {
            place.cy() + 4.0
        };
        text(out, place.x + 6.0, y_line, class, &fit(line, room, CHAR_W));
        y += LINE_H;
    }
    out.push_str("</g>\n");
}

/// A GPU's path to its NIC along the tree, under the boxes.
fn draw_path(out: &mut String, tree: &Tree, places: &[Place], path: &Path) {
    let ancestors = |mut at: usize| {
        let mut chain = vec![at];
        while let Some(parent) = tree.nodes[at].parent {
            chain.push(parent);
            at = parent;
        }
        chain
    };
    let up_gpu = ancestors(path.gpu);
    let up_nic = ancestors(path.nic);
    let Some(&common) = up_gpu.iter().find(|a| up_nic.contains(a)) else {
        return;
    };
    // From a device up to the common box's trunk.
    let climb = |chain: &[usize]| {
        let mut points = vec![(places[chain[0]].x, places[chain[0]].cy())];
        for pair in chain.windows(2) {
            let (child, parent) = (pair[0], pair[1]);
            let trunk = places[parent].right() + TRUNK;
            points.push((trunk, places[child].cy()));
            if parent == common {
                break;
            }
            points.push((trunk, places[parent].cy()));
            points.push((places[parent].x, places[parent].cy()));
        }
        points
    };
    let mut points = climb(&up_gpu);
    let mut back = climb(&up_nic);
    back.reverse();
    points.extend(back);
    let class = match path.distance {
        Some(Distance::Pix | Distance::Pxb) => "zh-near",
        Some(Distance::Phb) => "zh-phb",
        Some(Distance::Node) => "zh-node",
        Some(Distance::Sys) => "zh-sys",
        None => "zh-unknown",
    };
    let _ = write!(out, "<polyline class=\"zh-path {class}\" points=\"");
    for (x, y) in points {
        let _ = write!(out, "{x:.1},{y:.1} ");
    }
    let _ = writeln!(
        out,
        "\"><title>{} → {}: {}</title></polyline>",
        escape(&tree.nodes[path.gpu].key),
        escape(&tree.nodes[path.nic].key),
        path.distance.map_or("?", Distance::as_str)
    );
}

/// The lines under the drawing, each with its class: `NCCL_IB_HCA`, what
/// NCCL does with the pairings, what could not be read, the legend.
fn footer(topology: &Topology, width: f64) -> Vec<(&'static str, String)> {
    let room = width - 2.0 * MARGIN;
    let mut lines = Vec::new();
    let mut push = |class: &'static str, text: String| {
        for line in wrap(&text, room, CHAR_W) {
            lines.push((class, line));
        }
    };
    if topology.pairings.is_empty() {
        push(
            "zh-t",
            match &topology.pci_unreadable {
                Some(gap) => format!("gpus unknown: {}: {}", gap.path, gap.reason),
                None => "no nvidia gpu on the pci bus".to_owned(),
            },
        );
    } else if topology.nics.is_empty() {
        push(
            "zh-t",
            match &topology.rdma_unreadable {
                Some(gap) => format!("rdma devices unknown: {}", gap.reason),
                None => "no rdma device backed by a pci function".to_owned(),
            },
        );
    }
    if !topology.nccl_ib_hca.is_empty() {
        push(
            "zh-t zh-b",
            format!("{}={}", nccl::IB_HCA, topology.nccl_ib_hca),
        );
    }
    if let Some(level) = topology.nccl_net_gdr_level() {
        push(
            "zh-t zh-red",
            format!(
                "{} of {} gpu(s) reach their nic only beyond {}, nccl's default {}: their traffic is staged through host memory unless {}={level}",
                topology.beyond_default_gdr().count(),
                topology.pairings.len(),
                nccl::NET_GDR_LEVEL_DEFAULT,
                nccl::NET_GDR_LEVEL,
                nccl::NET_GDR_LEVEL,
            ),
        );
    }
    push(
        "zh-s",
        "paths: green PIX/PXB (one or more pcie switches), amber PHB (host bridge), orange dashed NODE (between host bridges), red dashed SYS (across sockets)".to_owned(),
    );
    push(
        "zh-s",
        "red: a down port, a link down or trained below what both ends allow (max under the edge); amber: a gpu link below its top speed, usual when idle; ×N: N alike branches drawn once".to_owned(),
    );
    lines
}

fn text(out: &mut String, x: f64, y: f64, class: &str, line: &str) {
    let _ = writeln!(
        out,
        "<text class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\">{}</text>",
        escape(line)
    );
}

/// `line` cut to the characters that fit `room` pixels, ending in `…`
/// when cut.
fn fit(line: &str, room: f64, char_w: f64) -> String {
    let most = ((room / char_w).floor() as usize).max(1);
    if line.chars().count() <= most {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(most - 1).collect();
    cut.push('…');
    cut
}

/// `text` broken at spaces into lines that fit `room` pixels (a word
/// longer than a line is cut).
fn wrap(text: &str, room: f64, char_w: f64) -> Vec<String> {
    let most = ((room / char_w).floor() as usize).max(8);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > most {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > most {
            let head: String = line.chars().take(most).collect();
            line = line.chars().skip(most).collect();
            lines.push(head);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_to_their_box_and_wrapped_under_the_drawing() {
        assert_eq!(fit("mlx5_0", 100.0, 10.0), "mlx5_0");
        assert_eq!(fit("0123456789abc", 50.0, 10.0), "0123…");
        let lines = wrap("aaaa bbbb cccc dddddddddddddddddd", 100.0, 10.0);
        assert!(lines.iter().all(|l| l.chars().count() <= 10), "{lines:?}");
        assert_eq!(
            lines.concat().replace(' ', ""),
            "aaaabbbbccccdddddddddddddddddd"
        );
    }
}
