//! `topo --format svg|html` and `doctor --format html` seen in a browser:
//! real hosts of the shared corpus drawn and laid out by headless
//! Chromium at a desktop width, checked for overflow and overlap from the
//! element boxes, for every GPU, NIC and failing check, and for requests
//! (none may leave the page). Screenshots land in the target directory
//! (`pictures/*.png`) for a person to look at.
//!
//! `docs/topology.md` shows the drawing of the HGX H100 below; regenerate
//! it with `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop --test pictures`.

#[path = "../../zerohop-doctor/tests/support/mod.rs"]
mod support;

mod browser;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::builder::{self, Host};
use zerohop_known::pci::class;

/// The name the assembled HGX root gets (`/proc/sys/kernel/hostname`):
/// the capture names no host, and the drawing's title should not be a
/// temporary directory.
const HGX_NAME: &str = "hgx-h100-gpud";

/// gpud's HGX H100 (`lspci_vvv_full_hgx_h100_8xcx7_gpud.txt`: eight H100,
/// eight ConnectX-7 rails, four ConnectX-6 Dx front-end functions) with
/// the RDMA devices of `ibstat_h100_some_ports_down_gpud.txt` (the eight
/// MT4129 ports ACTIVE, three of the four MT4125 ports Down), each MT4129
/// on a ConnectX-7 and each MT4125 on a ConnectX-6 Dx in address and name
/// order, as the doctor's corpus tests pair them.
fn hgx() -> Option<(Host, Vec<String>)> {
    let corpus = support::corpus()?;
    let lspci = fs::read_to_string(corpus.join("lspci_vvv_full_hgx_h100_8xcx7_gpud.txt")).unwrap();
    let ibstat = fs::read_to_string(corpus.join("ibstat_h100_some_ports_down_gpud.txt")).unwrap();
    let functions = builder::lspci_vvv(&lspci);
    let tree = builder::tree_from_buses(&functions);
    let mut host = Host::new();
    for function in &functions {
        host.function(&tree[&function.address], function);
    }
    let of_model = |model: &str| -> Vec<String> {
        functions
            .iter()
            .filter(|f| f.description.contains(model))
            .map(|f| f.address.clone())
            .collect()
    };
    let (cx7, cx6dx) = (of_model("[ConnectX-7]"), of_model("[ConnectX-6 Dx]"));
    assert_eq!((cx7.len(), cx6dx.len()), (8, 4));
    let mut cas = builder::ibstat(&ibstat);
    cas.sort_by_key(|ca| ca.name.trim_start_matches("mlx5_").parse::<u32>().unwrap());
    let (rails, front): (Vec<_>, Vec<_>) = cas.iter().partition(|ca| ca.device == 4129);
    for (address, ca) in cx7.iter().zip(&rails).chain(cx6dx.iter().zip(&front)) {
        host.rdma(address, ca);
    }
    host.file("/proc/sys/kernel/hostname", HGX_NAME);
    let gpus = functions
        .iter()
        .filter(|f| f.description.contains("NVIDIA") && f.class.is_some_and(|c| c >> 8 == 0x03))
        .map(|f| f.address.clone())
        .collect();
    let mut devices: Vec<String> = gpus;
    devices.extend(cx7);
    devices.extend(cx6dx);
    Some((host, devices))
}

/// The ASUS ESC8000A-E12 of the Stelline validated-hardware captures
/// (`lspci -tv`, `ibv_devinfo`): RTX 6000 Ada GPUs, ConnectX-7 NICs and
/// seventeen NVMe drives, sixteen of them behind two levels of PCIe
/// switches.
fn asus() -> Option<Host> {
    let corpus = support::corpus()?.join("stelline_validated_hardware");
    let read = |name: &str| fs::read_to_string(corpus.join(name)).unwrap();
    let tree = builder::lspci_tree(&read("asus-esc8000a-e12__lspci_tv.txt"));
    let mut cx7 = builder::lspci_vvv(&read("asus-esc8000a-e12__lspci_vvv_21-00.0_connectx7.txt"));
    cx7.extend(builder::lspci_vvv(&read(
        "asus-esc8000a-e12__lspci_vvv_81-00.0_connectx7.txt",
    )));
    let rtx = builder::lspci_vvv(&read("asus-esc8000a-e12__lspci_vvv_41-00.0_rtx6000ada.txt"));
    let mut host = Host::new();
    let mut nics = Vec::new();
    for (function, chain) in &tree {
        let mut function = cx7
            .iter()
            .chain(&rtx)
            .find(|d| d.address == function.address)
            .cloned()
            .unwrap_or_else(|| function.clone());
        if function.description.contains("[RTX 6000 Ada Generation]") {
            // `lspci -tv` names the model, `-vvv` of one of them the class.
            function.class = rtx[0].class;
        }
        if function.description.contains("NVMe SSD Controller") {
            // `lspci -tv` prints no class; the model name says what the
            // class code (0108, NVM Express) is.
            function.class = Some(class::STORAGE_NVME);
        }
        if function.description.contains("[ConnectX-7]") {
            function.driver = Some("mlx5_core".to_owned());
            function.class = cx7[0].class;
            nics.push(function.address.clone());
        }
        host.function(chain, &function);
    }
    let cas = builder::ibv_devinfo(&read("asus-esc8000a-e12__ibv_devinfo.txt"));
    for (ca, address) in cas.iter().zip(&nics) {
        host.rdma(address, ca);
    }
    host.file("/proc/sys/kernel/hostname", "asus-esc8000a-e12");
    Some(host)
}

fn zerohop(args: &[&str], root: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty() || out.status.code() != Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("utf-8 output"),
    )
}

/// Where the screenshots go: the target directory, for a person to see.
fn pictures() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pictures");
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `html` as `name.html`, looks at it in the browser, takes its
/// screenshot, and checks what every page must hold to: nothing past the
/// viewport or its block, no text over another, no box over another, no
/// script, no request.
fn seen(browser: &Path, name: &str, html: &str) -> browser::Look {
    let dir = pictures();
    let page = dir.join(format!("{name}.html"));
    fs::write(&page, html).unwrap();
    let look = browser::look(browser, &page);
    let png = dir.join(format!("{name}.png"));
    browser::screenshot(browser, &page, &png, 1200);
    assert_eq!(browser::png_size(&png).0, browser::WIDTH, "{name}");
    let r = &look.result;
    assert_eq!(r["viewport"], browser::WIDTH, "{name}: {r}");
    assert!(
        r["scroll_width"].as_u64() <= Some(u64::from(browser::WIDTH)),
        "{name}: the page is wider than the window: {r}"
    );
    for key in [
        "outside",
        "clipped",
        "text_overlaps",
        "text_outside_box",
        "box_overlaps",
    ] {
        assert!(
            look.list(key).is_empty(),
            "{name}: {key}: {:#?}",
            look.list(key)
        );
    }
    assert_eq!(r["text_outside_svg"], 0, "{name}: {r}");
    assert_eq!(r["scripts"], 0, "{name}");
    assert!(look.requests().is_empty(), "{name}: {:?}", look.requests());
    look
}

/// The failing check IDs of the doctor's JSON report on `root`.
fn failing(root: &Path) -> Vec<String> {
    let (_, json) = zerohop(&["doctor", "--format", "json"], root);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut ids: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "fail")
        .map(|f| f["id"].as_str().unwrap().to_owned())
        .collect();
    ids.dedup();
    ids
}

#[test]
fn hgx_report_page_shows_every_gpu_nic_and_failing_check_legibly() {
    let Some((host, devices)) = hgx() else { return };
    let Some(browser) = browser::chromium() else {
        return;
    };
    let (code, html) = zerohop(&["doctor", "--format", "html"], host.path());
    assert_eq!(code, Some(1), "three front-end ports are down");
    assert!(html.len() < 2 << 20, "{} bytes", html.len());
    let look = seen(&browser, "doctor-hgx-h100", &html);
    assert_eq!(devices.len(), 20);
    let boxes = look.list("boxes");
    for address in &devices {
        assert!(
            boxes.iter().any(|b| b.ends_with(&format!(" {address}"))),
            "{address} is not drawn: {boxes:#?}"
        );
    }
    let text = look.result["text"].as_str().unwrap();
    let fails = failing(host.path());
    assert!(fails.iter().any(|id| id == "RDMA004"), "{fails:?}");
    for id in &fails {
        assert!(text.contains(id.as_str()), "{id} is not on the page");
    }
    assert!(text.contains(HGX_NAME), "the host's name");
    assert!(text.contains("data path not ready"));
}

#[test]
fn hgx_drawing_pairs_each_gpu_with_its_rail_and_marks_the_down_ports() {
    let Some((host, _)) = hgx() else { return };
    let (code, svg) = zerohop(&["topo", "--format", "svg"], host.path());
    assert_eq!(code, Some(0));
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    // Eight GPU paths, each PIX to its own rail, as the text table says.
    assert_eq!(svg.matches("class=\"zh-path zh-near\"").count(), 8);
    assert_eq!(svg.matches("<polyline class=\"zh-path").count(), 8);
    // The three down MT4125 ports of the front-end NICs are marked.
    assert_eq!(svg.matches("class=\"zh-box zh-nic zh-fault\"").count(), 3);
    let (_, text) = zerohop(&["topo"], host.path());
    let hca = text
        .lines()
        .find(|l| l.starts_with("NCCL_IB_HCA="))
        .unwrap();
    assert!(svg.contains(hca), "{hca}");
}

#[test]
fn a_snapshot_is_drawn_as_its_host() {
    let Some((host, _)) = hgx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("hgx.zhsnap");
    let (code, _) = zerohop(
        &["snapshot", "--output", archive.to_str().unwrap()],
        host.path(),
    );
    assert_eq!(code, Some(0));
    let (_, from_root) = zerohop(&["topo", "--format", "svg"], host.path());
    let out = Command::new(env!("CARGO_BIN_EXE_zerohop"))
        .args(["topo", "--format", "svg", "--snapshot"])
        .arg(&archive)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // A snapshot records what the doctor reads, which is not the host's
    // name: the drawing is titled with the archive instead, and is the
    // same drawing otherwise.
    let from_snapshot = String::from_utf8(out.stdout).unwrap();
    let drawing = |svg: &str, title: &str| -> Vec<String> {
        svg.replace(title, HGX_NAME)
            .lines()
            .filter(|line| !line.starts_with("<g class=\"zh-host-box\""))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        drawing(&from_snapshot, archive.to_str().unwrap()),
        drawing(&from_root, HGX_NAME)
    );
}

#[test]
fn asus_topology_page_folds_the_nvme_behind_its_switches() {
    let Some(host) = asus() else { return };
    let Some(browser) = browser::chromium() else {
        return;
    };
    let (code, html) = zerohop(&["topo", "--format", "html"], host.path());
    assert_eq!(code, Some(0));
    let look = seen(&browser, "topo-asus-esc8000a-e12", &html);
    let boxes = look.list("boxes");
    let count = |kind: &str| boxes.iter().filter(|b| b.starts_with(kind)).count();
    assert!(count("zh-gpu-box") >= 2, "{boxes:#?}");
    assert!(count("zh-nic-box") >= 2, "{boxes:#?}");
    // Two runs of four alike drives behind the switch are drawn once each.
    // Seventeen NVMe functions: one on its own root port, and four runs
    // of four drives, each drive on its own switch port.
    assert_eq!(html.matches("<g class=\"zh-nvme-box\"").count(), 5);
    assert_eq!(html.matches("\">and 3 alike").count(), 4);
}

#[test]
fn a_script_in_a_host_name_stays_text() {
    let Some(browser) = browser::chromium() else {
        return;
    };
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zerohop-doctor/tests/fixtures/GPU005/warn-cross-socket");
    let dir = tempfile::tempdir().unwrap();
    copy(&fixture, dir.path());
    let hostile =
        "<script>document.title='owned'</script><img src=\"http://127.0.0.1:9/leak.png\">";
    let hostname = dir.path().join("proc/sys/kernel/hostname");
    fs::create_dir_all(hostname.parent().unwrap()).unwrap();
    fs::write(&hostname, format!("{hostile}\n")).unwrap();
    for (args, name) in [
        (&["doctor", "--format", "html"][..], "hostile-doctor"),
        (&["topo", "--format", "html"][..], "hostile-topo"),
    ] {
        let (_, html) = zerohop(args, dir.path());
        assert!(!html.contains("<script"), "{name}");
        let look = seen(&browser, name, &html);
        let text = look.result["text"].as_str().unwrap();
        assert!(text.contains(hostile), "{name}: the name is shown as text");
    }
    let (_, svg) = zerohop(&["topo", "--format", "svg"], dir.path());
    assert!(!svg.contains("<script") && !svg.contains("<img"));
}

#[test]
fn the_request_detector_sees_a_page_that_makes_one() {
    // The control for `seen`: a request must show in the NetLog, else "no
    // request" would prove nothing.
    let Some(browser) = browser::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("fetching.html");
    fs::write(
        &page,
        "<!DOCTYPE html><p>x</p><img src=\"http://127.0.0.1:9/probe.png\">",
    )
    .unwrap();
    let look = browser::look(&browser, &page);
    assert_eq!(
        look.requests(),
        ["http://127.0.0.1:9/probe.png"],
        "{}",
        look.netlog.len()
    );
}

#[test]
fn docs_topology_drawing_is_current() {
    let Some((host, _)) = hgx() else { return };
    let (_, svg) = zerohop(&["topo", "--format", "svg"], host.path());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/topology.svg");
    if std::env::var_os("ZEROHOP_UPDATE_DOCS").is_some() {
        fs::write(&path, &svg).unwrap();
    }
    let committed = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == svg,
        "docs/topology.svg is stale: ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop --test pictures docs_topology_drawing_is_current"
    );
    let doc =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/topology.md"))
            .unwrap();
    assert!(doc.contains("![") && doc.contains("(topology.svg)"));
}

fn copy(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            fs::create_dir_all(&target).unwrap();
            copy(&entry.path(), &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}
