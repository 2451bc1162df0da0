//! What the user expects of a host, beyond what every host needs.
//!
//! Every field is optional: a check with no expectation judges what the
//! host shows (SR-IOV is wanted when VFs are enabled, say) and reports
//! `info` rather than `fail` where only an expectation could decide.

use serde::Deserialize;

/// The user's expectations of the host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Profile {
    /// SR-IOV VFs are (or are not) part of the data path. Unset: wanted
    /// when any physical function has VFs enabled.
    #[serde(default)]
    pub sriov: Option<bool>,
    /// 1 GiB hugepages each NUMA node that hosts a GPU or NIC must have.
    #[serde(default)]
    pub hugepages_1g_per_node: Option<u64>,
}

impl Profile {
    /// Whether SR-IOV VFs are part of the data path on this host.
    pub fn wants_sriov(&self, facts: &zerohop_host::Facts) -> bool {
        self.sriov.unwrap_or_else(|| {
            facts
                .pci
                .list()
                .iter()
                .any(|device| matches!(device.sriov, Ok(Some(sriov)) if sriov.num_vfs > 0))
        })
    }
}
