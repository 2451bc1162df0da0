//! The facts the checks judge serialise to JSON: those of a fixture root
//! and those of a real capture (`../shared/corpus`), with the values each
//! read gave. Every assertion says what in the data justifies it.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use zerohop_host::{Facts, HostRoot};

fn facts_json(dir: &Path) -> Value {
    let facts = Facts::collect(&HostRoot::at(dir).unwrap());
    serde_json::to_value(&facts).unwrap()
}

#[test]
fn the_facts_of_a_fixture_root_serialise() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/KRN001/pass-intel-on-pt");
    let facts = facts_json(&dir);
    assert_eq!(facts["live"], false);
    // Its /proc/cmdline: `BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt quiet`.
    let params = facts["kernel"]["cmdline"]["Ok"]["params"]
        .as_array()
        .unwrap();
    assert!(params.contains(&json!(["intel_iommu", "on"])), "{params:?}");
    assert!(params.contains(&json!(["quiet", null])), "{params:?}");
    // Its /proc/cpuinfo says `vendor_id : GenuineIntel`.
    assert_eq!(facts["kernel"]["cpu_vendor"], json!({"Ok": "Intel"}));
    // No /sys: the host has no PCI bus to show, which is not a gap.
    assert_eq!(facts["pci"]["devices"], json!({"Ok": null}));
    // A directory root does not hold the reading process's limits.
    assert_eq!(facts["kernel"]["memlock"], Value::Null);
    // Neither a kernel-log capture nor this machine's boot id: a gap
    // whose kind says that nothing is there to read.
    let gap = &facts["kernel_log"]["Err"];
    assert_eq!(gap["kind"], "missing", "{gap}");
    assert_eq!(gap["path"], "/var/log/zerohop/kmsg");
}

#[test]
fn the_facts_of_a_corpus_capture_serialise() {
    let Some(corpus) = support::corpus() else {
        return;
    };
    let dir = support::untar(&corpus.join("ghw_snapshot_linux-amd64-accel-nvidia.tar.gz"));
    let facts = facts_json(dir.path());
    // The capture's /proc/cpuinfo: `vendor_id : GenuineIntel` (a Xeon E5-2695 v4).
    assert_eq!(facts["kernel"]["cpu_vendor"], json!({"Ok": "Intel"}));
    // `sys/bus/pci/devices/0000:06:00.0`: vendor 0x10de, device 0x15f8,
    // its `driver` link names `nvidia`.
    let devices = facts["pci"]["devices"]["Ok"].as_array().unwrap();
    let gpu = devices
        .iter()
        .find(|device| device["address"] == "0000:06:00.0")
        .unwrap_or_else(|| panic!("{devices:?}"));
    assert_eq!(gpu["vendor"], 0x10de);
    assert_eq!(gpu["device"], 0x15f8);
    assert_eq!(gpu["driver"], "nvidia");
    // 29 functions under sys/bus/pci/devices, every one serialised.
    assert_eq!(devices.len(), 29);
}
