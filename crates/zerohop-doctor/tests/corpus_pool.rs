//! With an intent that names the pool's NICs, the NIC checks judge those
//! NICs; the host's other NICs (front-end ports, management LOMs) are
//! information. On a root assembled from a real HGX H100's `lspci -vvv`
//! and a real H100 node's `ibstat` (`../shared/corpus`, see its
//! SOURCES.md).

mod support;

use std::collections::BTreeMap;
use std::fs;

use zerohop_core::Status;
use zerohop_doctor::profile::NicExpectation;
use zerohop_doctor::{Profile, Selection};

use support::builder::{self, Host};

/// `Total VFs` and `Number of VFs` of each function's SR-IOV capability in
/// an `lspci -vvv` listing, by full address.
fn sriov_of(lspci: &str) -> BTreeMap<String, (u32, u32)> {
    let mut found = BTreeMap::new();
    let mut current = String::new();
    for line in lspci.lines() {
        if !line.starts_with(char::is_whitespace)
            && let Some((address, _)) = line.split_once(' ')
        {
            current = format!("0000:{address}");
        }
        if let Some((_, rest)) = line.split_once("Total VFs: ") {
            let number =
                |text: &str| -> u32 { text.split(',').next().unwrap().trim().parse().unwrap() };
            let total = number(rest);
            let (_, enabled) = rest.split_once("Number of VFs: ").unwrap();
            found.insert(current.clone(), (total, number(enabled)));
        }
    }
    found
}

/// The HGX H100 of `lspci_vvv_full_hgx_h100_8xcx7_gpud.txt` (eight
/// ConnectX-7 rails, four ConnectX-6 Dx front-end functions) with the RDMA
/// devices of `ibstat_h100_some_ports_down_gpud.txt` (eight MT4129 ports
/// ACTIVE, three of the four MT4125 ports Down), each MT4129 device on a
/// ConnectX-7 function and each MT4125 on a ConnectX-6 Dx, in address and
/// name order. The rails have the eight VFs the intent's policy enables;
/// the front-end functions have none, as `lspci` shows.
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
    assert_eq!((rails.len(), front.len()), (8, 4));
    for (address, ca) in cx7.iter().zip(&rails).chain(cx6dx.iter().zip(&front)) {
        host.rdma(address, ca);
    }
    let sriov = sriov_of(&lspci);
    for address in cx7.iter().chain(&cx6dx) {
        let (total, enabled) = sriov[address];
        let enabled = if cx7.contains(address) { 8 } else { enabled };
        let dir = format!("/sys/bus/pci/devices/{address}");
        host.file(&format!("{dir}/sriov_totalvfs"), &total.to_string());
        host.file(&format!("{dir}/sriov_numvfs"), &enabled.to_string());
    }
    let rail_names = rails.iter().map(|ca| ca.name.clone()).collect();
    Some((host, rail_names))
}

#[test]
fn front_end_nics_outside_the_pool_are_information() {
    let Some((host, rails)) = hgx() else { return };
    let selection = Selection::parse(["RDMA004", "SRIOV002"]).unwrap();
    let without = Profile {
        sriov: Some(true),
        ..Profile::default()
    };
    // Without an intent every NIC is judged: the three Down MT4125 ports
    // and the four ConnectX-6 Dx functions without VFs fail.
    let report = support::doctor_with(host.path(), &without, &selection);
    let fails = |id: &str| {
        support::findings(&report, id)
            .iter()
            .filter(|f| f.status == Status::Fail)
            .count()
    };
    assert_eq!((fails("RDMA004"), fails("SRIOV002")), (3, 4));

    // The pool names the eight ConnectX-7 rails: nothing fails, the
    // four front-end ports (one of them Active) are information, the
    // rails pass.
    let intent = Profile {
        nics: rails
            .iter()
            .map(|name| NicExpectation {
                rdma_device: Some(name.clone()),
                vfs: Some(8),
                ..NicExpectation::default()
            })
            .collect(),
        ..without
    };
    let report = support::doctor_with(host.path(), &intent, &selection);
    for id in ["RDMA004", "SRIOV002"] {
        let findings = support::findings(&report, id);
        let count = |status: Status| findings.iter().filter(|f| f.status == status).count();
        assert_eq!(
            (
                count(Status::Pass),
                count(Status::Info),
                count(Status::Fail)
            ),
            (8, 4, 0),
            "{id}: {findings:#?}"
        );
        let infos = findings.iter().filter(|f| f.status == Status::Info);
        let was_fail = infos
            .filter(|f| f.message.starts_with("not a nic of the pool: fail: "))
            .inspect(|f| assert!(f.remediation.is_none()))
            .count();
        assert_eq!(was_fail, if id == "RDMA004" { 3 } else { 4 }, "{id}");
    }
    // A Down rail of the pool still fails.
    let down = Profile {
        nics: vec![NicExpectation {
            rdma_device: Some("mlx5_2".to_owned()),
            ..NicExpectation::default()
        }],
        ..Profile::default()
    };
    let report = support::doctor_with(host.path(), &down, &Selection::parse(["RDMA004"]).unwrap());
    let failed: Vec<&str> = support::findings(&report, "RDMA004")
        .iter()
        .filter(|f| f.status == Status::Fail)
        .map(|f| f.subject.as_str())
        .collect();
    assert_eq!(failed, ["mlx5_2/1"]);
}

/// CONF001 and CONF002 on the HGX: eight H100s (`3D controller: NVIDIA
/// Corporation Device 2330`) and the eight ConnectX-7 rails the pool names.
#[test]
fn hgx_gpus_and_rails_against_the_intent() {
    let Some((host, rails)) = hgx() else { return };
    let intent = |gpus: u32| Profile {
        gpus: Some(zerohop_doctor::profile::GpuExpectation {
            count: gpus,
            from: Some("cluster.yaml:15".to_owned()),
        }),
        nics: rails
            .iter()
            .map(|name| NicExpectation {
                rdma_device: Some(name.clone()),
                vfs: Some(8),
                ..NicExpectation::default()
            })
            .collect(),
        ..Profile::default()
    };
    let selection = Selection::parse(["CONF001", "CONF002"]).unwrap();
    let report = support::doctor_with(host.path(), &intent(8), &selection);
    assert_eq!(support::statuses(&report, "CONF001"), vec![Status::Pass]);
    assert_eq!(support::statuses(&report, "CONF002"), vec![Status::Pass; 8]);
    let report = support::doctor_with(host.path(), &intent(9), &selection);
    let gpus = &support::findings(&report, "CONF001")[0];
    assert_eq!(gpus.status, Status::Fail);
    assert!(gpus.message.contains("seen 8"), "{}", gpus.message);
}
