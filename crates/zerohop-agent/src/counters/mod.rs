//! The counters the RDMA and NFS-over-RDMA guides tell users to watch, read
//! on their own schedule (every `--counters-interval`), so that rates are
//! fine-grained while the doctor runs every few minutes.
//!
//! Which ports and mounts are read comes from the last pass: the ports of
//! the RDMA devices on the data path (physical functions and bonds, not the
//! VFs handed to pods, unless asked), and the NFS data mounts. A scrape
//! never reads a counter: it serves the last sample.

pub mod nfs;
pub mod rdma;

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use zerohop_host::facts::mounts::MOUNTSTATS;
use zerohop_host::parse::mountstats::parse_mountstats;
use zerohop_host::{Facts, HostRoot};

pub use rdma::PortRef;

/// What to sample, decided by the last pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    /// RDMA ports.
    pub ports: Vec<PortRef>,
    /// NFS data mount points; empty means every NFS mount.
    pub mounts: Vec<String>,
    /// Whether the host has NFS mounts at all (no mountstats read otherwise).
    pub nfs: bool,
}

/// The ports and mounts to sample on the host `facts` describe: every port
/// of the RDMA devices that are not VFs (all of them with `vfs`), and the
/// NFS mounts `declared` names (every NFS mount when it is empty).
pub fn targets(facts: &Facts, vfs: bool, declared: &[String]) -> Targets {
    let mut ports = Vec::new();
    for device in facts.rdma.list() {
        let is_vf = device
            .pci
            .as_deref()
            .and_then(|address| facts.pci.get(address))
            .is_some_and(|function| function.is_vf());
        if is_vf && !vfs {
            continue;
        }
        for port in device.port_list() {
            ports.push(PortRef {
                device: device.name.clone(),
                port: port.number,
            });
        }
    }
    ports.sort();
    let nfs_mounts: Vec<String> = match &facts.mounts.stats {
        Ok(Some(stats)) => stats
            .iter()
            .filter(|m| m.is_nfs())
            .map(|m| m.mount_point.clone())
            .collect(),
        _ => Vec::new(),
    };
    let mounts = if declared.is_empty() {
        Vec::new()
    } else {
        // A declared path may be below its mount point: keep the mount
        // points that hold a declared path.
        nfs_mounts
            .iter()
            .filter(|point| {
                declared.iter().any(|path| {
                    path == *point
                        || path
                            .strip_prefix(point.as_str())
                            .is_some_and(|rest| rest.starts_with('/') || point.ends_with('/'))
                })
            })
            .cloned()
            .collect()
    };
    Targets {
        ports,
        nfs: !nfs_mounts.is_empty(),
        mounts,
    }
}

/// One sample of every target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// When the sample was taken.
    pub taken_at: Timestamp,
    /// How long reading took.
    pub duration: Duration,
    /// Per RDMA port.
    pub ports: Vec<rdma::PortSample>,
    /// Per NFS data mount.
    pub mounts: Vec<nfs::MountSample>,
    /// Files that existed but could not be read or parsed.
    pub failures: usize,
}

/// Reads every counter of `targets` through `root`.
pub fn sample(root: &HostRoot, targets: &Targets) -> Sample {
    let started = Instant::now();
    let mut failures = 0;
    let ports = targets
        .ports
        .iter()
        .map(|port| {
            let (sample, failed) = rdma::sample(root, port);
            failures += failed;
            sample
        })
        .collect();
    let mounts = if targets.nfs {
        match root.read(MOUNTSTATS) {
            Ok(Some(text)) => nfs::sample(&parse_mountstats(&text), &targets.mounts),
            Ok(None) => Vec::new(),
            Err(_) => {
                failures += 1;
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    Sample {
        taken_at: Timestamp::now(),
        duration: started.elapsed(),
        ports,
        mounts,
        failures,
    }
}
