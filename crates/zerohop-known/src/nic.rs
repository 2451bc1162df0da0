//! NVIDIA (Mellanox) network adapters: PCI vendor and device IDs, the VF
//! device ID each PF creates, and the operators' limit on VFs.

/// PCI vendor ID of NVIDIA/Mellanox network adapters (`15b3` in `pci.ids`).
pub const MELLANOX_VENDOR: u16 = 0x15b3;

/// [`MELLANOX_VENDOR`] as the operators write it: four lowercase hex digits.
pub const MELLANOX_VENDOR_HEX: &str = "15b3";

/// The most VFs the SR-IOV Network Operator's webhook accepts per Mellanox
/// PF (`MlxMaxVFs` in k8snetworkplumbingwg/sriov-network-operator
/// `pkg/webhook/validate.go`; `../shared/research/kubernetes-operators-survey.md`
/// §SR-IOV, "numVfs ≤ 128").
pub const MELLANOX_MAX_VFS: u32 = 128;

/// ConnectX-3 and older functions (`1003` ConnectX-3, `1004` its VF, `1007`
/// ConnectX-3 Pro, `6750` ConnectX-2 EN), driven by `mlx4_core` rather than
/// `mlx5_core` (`pci.ids`; the kernel's `mlx4_pci_table` in
/// `drivers/net/ethernet/mellanox/mlx4/main.c`).
pub const MLX4_DEVICE_IDS: [u16; 4] = [0x1003, 0x1004, 0x1007, 0x6750];

/// The fastest port rate, in Gb/s, that Linux's RDMA core can report:
/// `IB_RATE_1600_GBPS`, the last of `enum ib_rate` in
/// `include/rdma/ib_verbs.h` (XDR at 8x width, added by "RDMA/core: Add new
/// IB rate for XDR (8x) support", linux-rdma, 2025-11-20; 800 Gb/s before).
/// A link rate above it is a typing error, not a NIC.
pub const MAX_LINK_RATE_GBPS: u32 = 1600;

/// A NIC model the operators support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NicModel {
    /// Marketing name.
    pub name: &'static str,
    /// PF device ID (lowercase hex).
    pub pf_device_id: &'static str,
    /// VF device ID (lowercase hex), what the device plugins select VFs by.
    pub vf_device_id: &'static str,
    /// Whether the ports can run InfiniBand.
    pub infiniband: bool,
}

/// The supported models: the SR-IOV Network Operator's `supported-nic-ids`
/// ConfigMap (`deployment/sriov-network-operator-chart/templates/configmap.yaml`,
/// `"<vendor> <PF id> <VF id>"`), checked against `pci.ids`; every
/// ConnectX-6 Dx and later function creates the generic `101e` VF
/// (sriov-network-operator PR #360). The table with its sources is
/// `../shared/research/kubernetes-operators-survey.md` §"NIC models".
pub const MODELS: &[NicModel] = &[
    model("ConnectX-4", "1013", "1014", true),
    model("ConnectX-4 Lx", "1015", "1016", false),
    model("ConnectX-5", "1017", "1018", true),
    model("ConnectX-5 Ex", "1019", "101a", true),
    model("ConnectX-6", "101b", "101c", true),
    model("ConnectX-6 Dx", "101d", "101e", false),
    model("ConnectX-6 Lx", "101f", "101e", false),
    model("ConnectX-7", "1021", "101e", true),
    model("ConnectX-8", "1023", "101e", true),
    model("ConnectX-9", "1025", "101e", true),
    model("BlueField-2 (ConnectX-6 Dx)", "a2d6", "101e", false),
    model("BlueField-3 (ConnectX-7)", "a2dc", "101e", true),
];

const fn model(
    name: &'static str,
    pf_device_id: &'static str,
    vf_device_id: &'static str,
    infiniband: bool,
) -> NicModel {
    NicModel {
        name,
        pf_device_id,
        vf_device_id,
        infiniband,
    }
}

/// The model with this PF device ID (case-insensitive, optional `0x`).
pub fn by_pf_id(device_id: &str) -> Option<&'static NicModel> {
    let id = normalize(device_id);
    MODELS.iter().find(|m| m.pf_device_id == id)
}

/// The models whose VF has this device ID.
pub fn with_vf_id(device_id: &str) -> Vec<&'static NicModel> {
    let id = normalize(device_id);
    MODELS.iter().filter(|m| m.vf_device_id == id).collect()
}

/// True when `device_id` is a VF device ID of a supported model.
pub fn is_vf_id(device_id: &str) -> bool {
    !with_vf_id(device_id).is_empty()
}

fn normalize(device_id: &str) -> String {
    let lower = device_id.trim().to_ascii_lowercase();
    lower.strip_prefix("0x").unwrap_or(&lower).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connectx7_pf_maps_to_the_generic_vf_id() {
        let model = by_pf_id("0x1021").expect("known");
        assert_eq!(model.vf_device_id, "101e");
        assert!(is_vf_id("101E"));
        assert!(!is_vf_id("1017"));
        assert!(by_pf_id("101e").is_none());
        assert!(by_pf_id("abcd").is_none());
        assert_eq!(with_vf_id("1018")[0].name, "ConnectX-5");
        assert_eq!(with_vf_id("101e").len(), 7);
    }

    #[test]
    fn ids_are_four_lowercase_hex_digits_and_pfs_unique() {
        for (index, m) in MODELS.iter().enumerate() {
            for id in [m.pf_device_id, m.vf_device_id] {
                assert!(
                    id.len() == 4 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                    "{id}"
                );
            }
            assert!(
                MODELS[..index]
                    .iter()
                    .all(|o| o.pf_device_id != m.pf_device_id)
            );
            assert!(
                !is_vf_id(m.pf_device_id),
                "{} is a pf and a vf",
                m.pf_device_id
            );
        }
        assert_eq!(format!("{MELLANOX_VENDOR:04x}"), MELLANOX_VENDOR_HEX);
    }
}
