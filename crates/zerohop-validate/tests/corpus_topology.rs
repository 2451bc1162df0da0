//! Every `nvidia-smi topo -m` capture of `../shared/corpus/outputs/nvidia-smi-topo`,
//! one test each, and the matrices elsewhere in the corpus that the
//! parser was not written against.

mod support;

use support::{capture, judge, line, of};
use zerohop_core::Status;
use zerohop_validate::smi_topo::{self, Link};

const DIR: &str = "outputs/nvidia-smi-topo/";

fn read(name: &str) -> Option<(String, String)> {
    let path = format!("{DIR}{name}");
    capture(&path).map(|text| (path, text))
}

#[test]
fn two_gtx_1080_ti_on_a_desktop() {
    let Some((name, text)) = read("nvidia_smi_topo_m_2xGTX1080Ti_PHB_desktop_no-nic.txt") else {
        return;
    };
    let matrix = smi_topo::parse(&text);
    assert!(matrix.notes.is_empty(), "{:?}", matrix.notes);
    // Line 1: the older header without `GPU NUMA ID`; line 2: `GPU0 X PHB 0-11 N/A`.
    assert_eq!(matrix.columns, vec!["GPU0", "GPU1"]);
    assert_eq!(matrix.link("GPU0", "GPU1"), Some((&Link::Phb, 2)));
    let gpu0 = matrix.row("GPU0").unwrap();
    assert_eq!(
        (gpu0.cpu_affinity.as_deref(), gpu0.numa_affinity.as_deref()),
        (Some("0-11"), Some("N/A"))
    );
    // Line 13: the `NV#` legend line of `-m`.
    assert!(matrix.nvlink_legend);
    let findings = judge(&name, &text);
    // No NIC column (line 1).
    let distance = of(&findings, "VAL301");
    assert_eq!(
        (distance[0].status, line(distance[0])),
        (Status::NotApplicable, 1)
    );
}

#[test]
fn two_h100_nvl_indented_by_markdown() {
    let Some((name, text)) =
        read("nvidia_smi_topo_m_2xH100-NVL_NV12_hpe-dl380a-gen11_6space-indented.txt")
    else {
        return;
    };
    let matrix = smi_topo::parse(&text);
    assert!(matrix.notes.is_empty(), "{:?}", matrix.notes);
    // Line 2: `      GPU0     X      NV12    32-63,96-127    1               N/A`.
    assert_eq!(matrix.link("GPU0", "GPU1"), Some((&Link::NvLink(12), 2)));
    assert_eq!(
        matrix.row("GPU0").unwrap().cpu_affinity.as_deref(),
        Some("32-63,96-127")
    );
    assert_eq!(
        matrix.row("GPU1").unwrap().numa_affinity.as_deref(),
        Some("1")
    );
    let findings = judge(&name, &text);
    assert_eq!(of(&findings, "VAL301")[0].status, Status::NotApplicable);
}

#[test]
fn three_rtx_a6000_with_an_ansi_underlined_header() {
    let Some((name, text)) =
        read("nvidia_smi_topo_m_3xRTXA6000_NV4-NODE_no-nic_ansi-underline-header.txt")
    else {
        return;
    };
    let matrix = smi_topo::parse(&text);
    assert!(matrix.notes.is_empty(), "{:?}", matrix.notes);
    // Line 1: `\t\x1b[4mGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\x1b[0m`.
    assert_eq!(matrix.header_line, 1);
    assert_eq!(matrix.columns, vec!["GPU0", "GPU1", "GPU2"]);
    // Line 2: `GPU0\t X \tNV4\tNODE`; line 3: `GPU1\tNV4\t X \tNODE`.
    assert_eq!(matrix.link("GPU0", "GPU1"), Some((&Link::NvLink(4), 2)));
    assert_eq!(matrix.link("GPU1", "GPU2"), Some((&Link::Node, 3)));
    assert_eq!(matrix.link("GPU2", "GPU2"), Some((&Link::Itself, 4)));
    let findings = judge(&name, &text);
    assert_eq!(of(&findings, "VAL301")[0].status, Status::NotApplicable);
}

#[test]
fn four_a10_far_from_their_two_nics() {
    let Some((name, text)) = read("nvidia_smi_topo_m_4xA10_SYS_2xmlx5-PIX_no-nvlink.txt") else {
        return;
    };
    let matrix = smi_topo::parse(&text);
    assert!(matrix.notes.is_empty(), "{:?}", matrix.notes);
    // Lines 21-22: `NIC0: mlx5_0`, `NIC1: mlx5_1`.
    assert_eq!(matrix.nics(), vec![("NIC0", "mlx5_0"), ("NIC1", "mlx5_1")]);
    // Line 6: `NIC0 … X PIX`: the two NICs share a switch.
    assert_eq!(matrix.link("NIC0", "NIC1"), Some((&Link::Pix, 6)));
    let findings = judge(&name, &text);
    let distance = of(&findings, "VAL301");
    assert_eq!(distance.len(), 4);
    // Lines 2-5: every GPU is SYS from both NICs.
    for (finding, at) in distance.iter().zip(2..) {
        assert_eq!((finding.status, line(finding)), (Status::Warn, at));
        assert!(
            finding.message.contains("is SYS away"),
            "{}",
            finding.message
        );
    }
}

#[test]
fn eight_gpus_with_a_pix_nic_each_tab_separated() {
    let Some((name, text)) = read("nvidia_smi_topo_m_8xGPU-NV18_10xmlx5_2numa_tabs.txt") else {
        return;
    };
    let matrix = smi_topo::parse(&text);
    assert!(matrix.notes.is_empty(), "{:?}", matrix.notes);
    assert_eq!(matrix.gpus().len(), 8);
    assert_eq!(matrix.nics().len(), 10);
    // Line 2: GPU0 is PIX to NIC3 (mlx5_3), NV18 to every other GPU.
    assert_eq!(matrix.link("GPU0", "NIC3"), Some((&Link::Pix, 2)));
    assert_eq!(matrix.link("GPU0", "GPU7"), Some((&Link::NvLink(18), 2)));
    // Line 5: GPU3 is PIX to NIC0, NIC1 and NIC2.
    assert_eq!(matrix.link("GPU3", "NIC2"), Some((&Link::Pix, 5)));
    // Line 6: `… 64-127,192-255\t1\t\tN/A`: the empty cell does not shift the columns.
    let gpu4 = matrix.row("GPU4").unwrap();
    assert_eq!(
        (gpu4.cpu_affinity.as_deref(), gpu4.numa_affinity.as_deref()),
        (Some("64-127,192-255"), Some("1"))
    );
    let findings = judge(&name, &text);
    let distance = of(&findings, "VAL301");
    assert_eq!(distance.len(), 8);
    assert!(distance.iter().all(|f| f.status == Status::Pass));
    // Line 2: GPU0's nearest NIC is mlx5_3.
    assert!(
        distance[0].message.contains("mlx5_3 at PIX"),
        "{}",
        distance[0].message
    );
    assert_eq!(line(distance[0]), 2);
}

#[test]
fn one_l40s_and_ten_pf_and_vf_nics_with_mp() {
    let Some((name, text)) = read("nvidia_smi_topo_mp_1xL40S_10xmlx5-PF-VF_r760xa_openshift.txt")
    else {
        return;
    };
    let matrix = smi_topo::parse(&text);
    assert!(matrix.notes.is_empty(), "{:?}", matrix.notes);
    // Line 1: `\t    GPU0\tNIC0…`; line 2: GPU0 NODE to every NIC.
    assert_eq!(matrix.columns.len(), 11);
    assert_eq!(matrix.link("GPU0", "NIC9"), Some((&Link::Node, 2)));
    // Line 4: NIC1 PIX to NIC2 (a PF and its VFs).
    assert_eq!(matrix.link("NIC1", "NIC2"), Some((&Link::Pix, 4)));
    // `-mp` has no `NV#` legend line.
    assert!(!matrix.nvlink_legend);
    let findings = judge(&name, &text);
    let distance = of(&findings, "VAL301");
    assert_eq!((distance[0].status, line(distance[0])), (Status::Warn, 2));
}

/// Matrices of the corpus that are not in `outputs/`: other machines, other
/// drivers, an older layout that names NICs in the header.
#[test]
fn matrices_the_parser_was_not_written_against() {
    let cases: [(&str, usize, usize, Status); 6] = [
        (
            "nvidia_smi_topo_m_2xA100_mlx5_della.txt",
            2,
            2,
            Status::Warn,
        ),
        (
            "nvidia_smi_topo_m_4xA100_NV3_4xmlx5_della.txt",
            4,
            4,
            Status::Warn,
        ),
        (
            "nvidia_smi_topo_m_8xA100_NV12_trimmed_ml-engineering.txt",
            8,
            0,
            Status::NotApplicable,
        ),
        (
            "nvidia_smi_topo_m_8xH100_NV18_trimmed_ml-engineering.txt",
            8,
            0,
            Status::NotApplicable,
        ),
        (
            "stelline_validated_hardware/asus-esc8000a-e12__nvidia_smi_topo_m.txt",
            4,
            4,
            Status::Warn,
        ),
        (
            "stelline_validated_hardware/puget-wrx90__nvidia_smi_topo_m.txt",
            2,
            2,
            Status::Warn,
        ),
    ];
    for (path, gpus, nics, status) in cases {
        let Some(text) = capture(path) else {
            return;
        };
        let matrix = smi_topo::parse(&text);
        assert!(matrix.notes.is_empty(), "{path}: {:?}", matrix.notes);
        assert_eq!(
            (matrix.gpus().len(), matrix.nics().len()),
            (gpus, nics),
            "{path}"
        );
        let findings = judge(path, &text);
        let distance = of(&findings, "VAL301");
        assert!(
            distance.iter().all(|f| f.status == status),
            "{path}: {distance:#?}"
        );
    }
    // The della capture names NICs in the header (`mlx5_0`) and its first
    // row (line 2) reaches mlx5_0 through another host bridge: `NODE`.
    let Some(text) = capture("nvidia_smi_topo_m_2xA100_mlx5_della.txt") else {
        return;
    };
    let matrix = smi_topo::parse(&text);
    assert_eq!(
        matrix.nics(),
        vec![("mlx5_0", "mlx5_0"), ("mlx5_1", "mlx5_1")]
    );
    assert_eq!(matrix.link("GPU0", "mlx5_0"), Some((&Link::Node, 2)));
}
