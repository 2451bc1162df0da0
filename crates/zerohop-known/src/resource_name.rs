//! Device plugin resource names (`rdma_rail0` in `nvidia.com/rdma_rail0`):
//! what each component that advertises or admits one accepts.
//!
//! The components disagree, and one that admits a name can hand it to one
//! that rejects it (research survey `kubernetes-operators-survey.md`, §a.7):
//!
//! | component | source | besides letters and digits |
//! |---|---|---|
//! | SR-IOV Network Operator webhook | `pkg/webhook/validate.go` | `_`, `-` inside, at most 63 |
//! | sriov-network-device-plugin | `pkg/utils/utils.go` | `_`, `-` |
//! | Network Operator webhook, `sriovDevicePlugin` | `api/v1alpha1/nicpolicy_webhook.go` | `_`, `.` inside |
//! | Network Operator webhook, `rdmaSharedDevicePlugin`, `HostDeviceNetwork` | same file | `_`, `-`, `.` inside |
//! | k8s-rdma-shared-dev-plugin | `pkg/resources/resources_manager.go` | `_` |
//!
//! Every rule here also wants a letter or digit at both ends, the
//! strictest form of the table.

/// What the RDMA shared device plugin accepts besides letters and digits.
pub const RDMA_SHARED_DEVICE_PLUGIN: &[char] = &['_'];

/// What a resource of the SR-IOV device plugin (configured through the
/// Network Operator) survives besides letters and digits: the webhook
/// refuses `-`, the plugin refuses `.`.
pub const SRIOV_DEVICE_PLUGIN: &[char] = &['_'];

/// What the SR-IOV Network Operator webhook accepts in a
/// `SriovNetworkNodePolicy`'s `resourceName` besides letters and digits.
pub const SRIOV_OPERATOR: &[char] = &['_', '-'];

/// What the Network Operator webhook accepts in a `HostDeviceNetwork`'s
/// `resourceName` besides letters and digits.
pub const HOST_DEVICE_NETWORK: &[char] = &['_', '-', '.'];

/// What every component above accepts besides letters and digits: the
/// names zerohop itself writes.
pub const PORTABLE: &[char] = &['_'];

/// The longest name the SR-IOV Network Operator webhook admits.
pub const MAX_LEN: usize = 63;

/// Whether `name` matches `^[A-Za-z0-9]([A-Za-z0-9<extra>]*[A-Za-z0-9])?$`:
/// letters and digits at both ends, `extra` characters allowed inside.
pub fn matches(name: &str, extra: &[char]) -> bool {
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
}

/// Checks a name every component accepts: [`PORTABLE`] characters, at most
/// [`MAX_LEN`].
///
/// # Errors
/// What is wrong with the name.
pub fn portable(name: &str) -> Result<(), String> {
    if name.len() <= MAX_LEN && matches(name, PORTABLE) {
        Ok(())
    } else {
        Err("is rejected by some device plugin or webhook".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_by_component() {
        assert!(matches("rdma_shared_device_a", RDMA_SHARED_DEVICE_PLUGIN));
        assert!(!matches("sriov-rdma", RDMA_SHARED_DEVICE_PLUGIN));
        assert!(matches("sriov-rdma", SRIOV_OPERATOR));
        assert!(matches("a.b", HOST_DEVICE_NETWORK));
        assert!(!matches("_x", PORTABLE));
        assert!(!matches("", PORTABLE));
    }

    #[test]
    fn portable_names_satisfy_every_component() {
        assert_eq!(portable("rdma_rail0"), Ok(()));
        assert!(portable("rdma-rail0").is_err());
        assert!(portable("_x").is_err());
        assert!(portable(&"a".repeat(64)).is_err());
    }
}
