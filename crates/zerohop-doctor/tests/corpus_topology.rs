//! The GPU ↔ NIC topology on a real workstation whose NICs are all down,
//! and with display functions whose vendor is not known: what `zerohop
//! topo` must say rather than guess. The root is assembled from the Puget
//! WRX90's own `lspci -tv`, `lspci -vvv` and `ibv_devinfo`
//! (`../shared/corpus/stelline_validated_hardware/`, see SOURCES.md).

mod support;

use std::fs;

use zerohop_core::Status;
use zerohop_doctor::profile::GpuExpectation;
use zerohop_doctor::topology::Topology;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};
use zerohop_known::pci::class;

use support::builder::{self, Host};

const DIR: &str = "stelline_validated_hardware/";

/// The Puget WRX90: two RTX 6000 Ada (`c1:00.0`, `c2:00.0`) and one
/// dual-port ConnectX-7 (`21:00.0`, `21:00.1`), both ports `PORT_DOWN`.
/// `lspci -tv` names the GPUs' vendor but not their class: with
/// `display`, they get the class `lspci -vvv` gives the same model on the
/// ASUS ESC8000A of the same corpus (`VGA compatible controller`); without,
/// they keep none, as a capture without the class file would.
fn puget(display: bool) -> Option<Host> {
    let corpus = support::corpus()?;
    let read = |name: &str| fs::read_to_string(corpus.join(DIR).join(name)).unwrap();
    let tree = builder::lspci_tree(&read("puget-wrx90__lspci_tv.txt"));
    let cx7 = builder::lspci_vvv(&read("puget-wrx90__lspci_vvv_21-00.0_connectx7.txt"));
    let rtx = builder::lspci_vvv(&read("asus-esc8000a-e12__lspci_vvv_41-00.0_rtx6000ada.txt"));
    assert_eq!(rtx[0].class, Some(class::DISPLAY_VGA));
    let mut host = Host::new();
    for (function, chain) in &tree {
        let mut function = cx7
            .iter()
            .find(|d| d.address == function.address)
            .cloned()
            .unwrap_or_else(|| function.clone());
        if function.description.contains("[RTX 6000 Ada Generation]") {
            if display {
                function.class = rtx[0].class;
            } else {
                function.class = Some(class::DISPLAY_VGA);
                function.vendor = None;
            }
        }
        if function.address.starts_with("0000:21:00.") {
            function.driver = Some("mlx5_core".to_owned());
            function.class = cx7[0].class;
        }
        host.function(chain, &function);
    }
    let cas = builder::ibv_devinfo(&read("puget-wrx90__ibv_devinfo.txt"));
    assert_eq!(cas.len(), 2);
    for (ca, address) in cas.iter().zip(["0000:21:00.0", "0000:21:00.1"]) {
        host.rdma(address, ca);
    }
    Some(host)
}

fn topology(host: &Host) -> Topology {
    Topology::of(&Facts::collect(&HostRoot::at(host.path()).unwrap()))
}

#[test]
fn nics_paired_without_an_active_port_are_marked_down() {
    let Some(host) = puget(true) else { return };
    let topology = topology(&host);
    assert_eq!(topology.pairings.len(), 2);
    assert_eq!(topology.nics.len(), 2);
    // ibv_devinfo: both ports `PORT_DOWN (1)`. NCCL_IB_HCA still names the
    // nearest NICs, and each says it has no ACTIVE port, so the output
    // can say so.
    assert!(!topology.nccl_ib_hca.is_empty());
    assert!(
        topology.nics.iter().all(|nic| !nic.active),
        "{:#?}",
        topology.nics
    );
    let json = serde_json::to_value(topology.document("/")).unwrap();
    assert_eq!(json["nics"][0]["active"], false);
}

#[test]
fn display_functions_without_a_vendor_make_the_gpus_unknown() {
    let Some(host) = puget(false) else { return };
    let topology = topology(&host);
    // No function is known to be an NVIDIA GPU, but two display functions
    // have no vendor: "no nvidia gpu" would be a guess.
    assert!(topology.pairings.is_empty());
    let gap = topology
        .pci_unreadable
        .expect("the display functions are unknown");
    assert!(gap.path.ends_with("/vendor"), "{}", gap.path);
    assert!(
        gap.reason.contains("may be an nvidia gpu"),
        "{}",
        gap.reason
    );
    // The pool's two GPUs are not missing either: the count is unknown.
    let profile = Profile {
        gpus: Some(GpuExpectation {
            count: 2,
            from: None,
        }),
        ..Profile::default()
    };
    let report = support::doctor_with(
        host.path(),
        &profile,
        &Selection::parse(["CONF001"]).unwrap(),
    );
    let count = support::findings(&report, "CONF001")[0];
    assert_eq!(count.status, Status::Unknown, "{}", count.message);
    assert!(
        count.message.contains("0000:c1:00.0 0000:c2:00.0"),
        "{}",
        count.message
    );
}
