//! The NICs an intent's pool names, and the scope they give the NIC
//! checks: a host has NICs the pool leaves out (the front-end ports of an
//! HGX beside its eight rails), and a finding about one of those is
//! information, not a fault of the data path the pool describes.

use std::collections::{BTreeMap, BTreeSet};

use zerohop_core::Status;
use zerohop_host::Facts;

use crate::context::Outcome;
use crate::profile::Profile;

/// The PCI functions (physical functions) of the pool's NICs, and how to
/// find the physical function of any NIC a finding names.
#[derive(Debug, Default)]
pub struct NicPool {
    /// The pool's physical functions.
    members: BTreeSet<String>,
    /// Every name a host NIC goes by (PCI address, RDMA device, netdev),
    /// VFs included, to the address of its physical function.
    names: BTreeMap<String, String>,
}

impl NicPool {
    /// The pool of `profile`'s NICs on this host, when the profile names
    /// NICs and every one of them resolves to a PCI function. When one
    /// does not (renamed, absent, not captured), CONF002 says so and the
    /// NIC checks judge every NIC, as without an intent: a pool that cannot
    /// be told apart must not hide a fault.
    pub fn of(facts: &Facts, profile: &Profile) -> Option<NicPool> {
        if profile.nics.is_empty() {
            return None;
        }
        let mut pool = NicPool::default();
        for device in facts.pci.list().iter().filter(|d| d.is_network()) {
            let pf = device
                .physfn
                .clone()
                .unwrap_or_else(|| device.address.clone());
            pool.names.insert(device.address.clone(), pf);
        }
        for net in facts.net.list() {
            if let Some(pci) = &net.pci {
                let pf = pool.pf_of(pci);
                pool.names.insert(net.name.clone(), pf);
            }
        }
        for device in facts.rdma.list() {
            if let Some(pci) = &device.pci {
                let pf = pool.pf_of(pci);
                pool.names.insert(device.name.clone(), pf);
            }
        }
        for nic in &profile.nics {
            let by_pf = nic.pf.as_ref().and_then(|name| pool.names.get(name));
            let by_rdma = nic
                .rdma_device
                .as_ref()
                .and_then(|name| pool.names.get(name));
            let pf = by_pf.or(by_rdma)?.clone();
            pool.members.insert(pf);
        }
        Some(pool)
    }

    /// The physical function of the PCI function `address`.
    fn pf_of(&self, address: &str) -> String {
        self.names
            .get(address)
            .cloned()
            .unwrap_or_else(|| address.to_owned())
    }

    /// The physical function a finding's subject names: a PCI address, an
    /// RDMA device, a netdev, or an RDMA port (`mlx5_0/1`).
    fn nic_of(&self, subject: &str) -> Option<&String> {
        self.names.get(subject).or_else(|| {
            let (device, port) = subject.rsplit_once('/')?;
            port.parse::<u32>().ok()?;
            self.names.get(device)
        })
    }

    /// `outcome` as information when its subject is a NIC of the host
    /// that the pool does not list: its verdict is kept in the message.
    pub fn scope(&self, outcome: Outcome) -> Outcome {
        let outside = self
            .nic_of(&outcome.subject)
            .is_some_and(|pf| !self.members.contains(pf));
        let judged = matches!(
            outcome.status,
            Status::Pass | Status::Fail | Status::Warn | Status::Unknown
        );
        if !outside || !judged {
            return outcome;
        }
        Outcome {
            status: Status::Info,
            message: format!(
                "not a nic of the pool: {}: {}",
                outcome.status.as_str(),
                outcome.message
            ),
            remediation: None,
            ..outcome
        }
    }
}
