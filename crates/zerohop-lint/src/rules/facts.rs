//! Facts the rules share: NVIDIA/Mellanox device IDs, the DOCA driver's
//! environment variables, resource-name syntaxes.

/// Vendor ID of NVIDIA/Mellanox network adapters.
pub(crate) const MELLANOX_VENDOR: &str = "15b3";

/// Adapter name, PF device ID and VF device ID, from the SR-IOV Network
/// Operator's `supported-nic-ids` ConfigMap.
pub(crate) const ADAPTERS: &[(&str, &str, &str)] = &[
    ("ConnectX-4", "1013", "1014"),
    ("ConnectX-4 Lx", "1015", "1016"),
    ("ConnectX-5", "1017", "1018"),
    ("ConnectX-5 Ex", "1019", "101a"),
    ("ConnectX-6", "101b", "101c"),
    ("ConnectX-6 Dx", "101d", "101e"),
    ("ConnectX-6 Lx", "101f", "101e"),
    ("ConnectX-7", "1021", "101e"),
    ("ConnectX-8", "1023", "101e"),
    ("ConnectX-9", "1025", "101e"),
    ("BlueField-2", "a2d6", "101e"),
    ("BlueField-3", "a2dc", "101e"),
];

/// The adapters whose VF has device ID `vf`.
pub(crate) fn adapters_with_vf(vf: &str) -> Vec<&'static str> {
    ADAPTERS
        .iter()
        .filter(|(_, _, id)| id.eq_ignore_ascii_case(vf))
        .map(|(name, _, _)| *name)
        .collect()
}

/// The adapter whose PF has device ID `pf`, with its VF device ID.
pub(crate) fn adapter_with_pf(pf: &str) -> Option<(&'static str, &'static str)> {
    ADAPTERS
        .iter()
        .find(|(_, id, _)| id.eq_ignore_ascii_case(pf))
        .map(|(name, _, vf)| (*name, *vf))
}

/// Whether `id` is a Mellanox VF device ID.
pub(crate) fn is_vf_id(id: &str) -> bool {
    !adapters_with_vf(id).is_empty()
}

/// The environment variables the DOCA-OFED driver container reads
/// (Mellanox/doca-driver-build entrypoint, network-operator
/// `docs/mofed-container-env-vars.md`).
pub(crate) const DOCA_DRIVER_ENV: &[&str] = &[
    "ENABLE_NFSRDMA",
    "UNLOAD_STORAGE_MODULES",
    "STORAGE_MODULES",
    "RESTORE_DRIVER_ON_POD_TERMINATION",
    "CREATE_IFNAMES_UDEV",
    "DRIVER_READY_PATH",
];

/// The DOCA driver variable `name` most likely means, when `name` is not one
/// the driver reads but is a near miss: the same words in another order
/// (`NFSRDMA_ENABLE`), a known one with a suffix (`ENABLE_NFSRDMA_NO_NVME`),
/// or a small misspelling.
pub(crate) fn doca_env_near_miss(name: &str) -> Option<&'static str> {
    if DOCA_DRIVER_ENV.contains(&name) {
        return None;
    }
    let words = |text: &str| {
        let mut words: Vec<String> = text.split('_').map(str::to_ascii_uppercase).collect();
        words.sort();
        words
    };
    let mine = words(name);
    DOCA_DRIVER_ENV
        .iter()
        .copied()
        .find(|known| {
            words(known) == mine || name.to_ascii_uppercase().starts_with(&format!("{known}_"))
        })
        .or_else(|| zerohop_known::suggest::closest(name, DOCA_DRIVER_ENV.iter().copied()))
}

/// Whether `name` matches `^[A-Za-z0-9]([A-Za-z0-9<extra>]*[A-Za-z0-9])?$`:
/// alphanumeric ends, `extra` characters allowed inside.
pub(crate) fn is_resource_name(name: &str, extra: &[char]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doca_env_near_misses() {
        assert_eq!(doca_env_near_miss("NFSRDMA_ENABLE"), Some("ENABLE_NFSRDMA"));
        assert_eq!(
            doca_env_near_miss("ENABLE_NFSRDMA_NO_NVME"),
            Some("ENABLE_NFSRDMA")
        );
        assert_eq!(doca_env_near_miss("ENABLE_NFSRDMA"), None);
        assert_eq!(doca_env_near_miss("HTTP_PROXY"), None);
    }

    #[test]
    fn resource_names() {
        assert!(is_resource_name("rdma_shared_device_a", &['_']));
        assert!(!is_resource_name("sriov-rdma", &['_']));
        assert!(is_resource_name("sriov-rdma", &['_', '-']));
        assert!(!is_resource_name("_x", &['_']));
        assert!(!is_resource_name("", &['_']));
    }

    #[test]
    fn device_ids() {
        assert!(is_vf_id("101E"));
        assert!(!is_vf_id("1017"));
        assert_eq!(adapter_with_pf("1017"), Some(("ConnectX-5", "1018")));
    }
}
