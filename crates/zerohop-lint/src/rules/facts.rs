//! Facts the rules share: the DOCA driver's environment variables,
//! quantities, the platform. NIC models and device IDs are in [`zerohop_known::nic`].

use zerohop_k8s::yaml::{Node, Value};

use crate::model::Workspace;

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

/// A quantity's value in base units (`1Gi` → 1073741824, `500m` → 0.5):
/// an integer as written, else its text by `zerohop_known::quantity`.
pub(crate) fn quantity(node: &Node) -> Option<f64> {
    match &node.value {
        Value::Int(number) => Some(*number as f64),
        // Read in place: rules compare a quantity per request.
        Value::String(text) => zerohop_known::quantity::value(text.trim()),
        _ => zerohop_known::quantity::value(node.scalar_text()?.trim()),
    }
}

/// Whether the set is for OpenShift: it holds an object only OpenShift
/// serves (a MachineConfig, SecurityContextConstraints, a `config.openshift.io`
/// object). The SR-IOV operator's `sriovnetwork.openshift.io` runs on plain
/// Kubernetes too and does not count.
pub(crate) fn is_openshift(workspace: &Workspace<'_>) -> bool {
    workspace.objects.iter().any(|object| {
        matches!(
            object.group(),
            "machineconfiguration.openshift.io" | "security.openshift.io" | "config.openshift.io"
        )
    })
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
}
