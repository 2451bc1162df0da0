//! NVIDIA (Mellanox, vendor `15b3`) NICs as the SR-IOV operator's
//! `supported-nic-ids` ConfigMap knows them: PF device ID → VF device ID.

/// The PCI vendor ID of NVIDIA/Mellanox NICs.
pub const VENDOR: &str = "15b3";

/// The SR-IOV operator webhook's cap on VFs per Mellanox PF.
pub const MELLANOX_MAX_VFS: u32 = 128;

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

/// The supported models (`supported-nic-ids`, SR-IOV operator master).
pub const MODELS: &[NicModel] = &[
    NicModel {
        name: "ConnectX-4",
        pf_device_id: "1013",
        vf_device_id: "1014",
        infiniband: true,
    },
    NicModel {
        name: "ConnectX-4 Lx",
        pf_device_id: "1015",
        vf_device_id: "1016",
        infiniband: false,
    },
    NicModel {
        name: "ConnectX-5",
        pf_device_id: "1017",
        vf_device_id: "1018",
        infiniband: true,
    },
    NicModel {
        name: "ConnectX-5 Ex",
        pf_device_id: "1019",
        vf_device_id: "101a",
        infiniband: true,
    },
    NicModel {
        name: "ConnectX-6",
        pf_device_id: "101b",
        vf_device_id: "101c",
        infiniband: true,
    },
    NicModel {
        name: "ConnectX-6 Dx",
        pf_device_id: "101d",
        vf_device_id: "101e",
        infiniband: false,
    },
    NicModel {
        name: "ConnectX-6 Lx",
        pf_device_id: "101f",
        vf_device_id: "101e",
        infiniband: false,
    },
    NicModel {
        name: "ConnectX-7",
        pf_device_id: "1021",
        vf_device_id: "101e",
        infiniband: true,
    },
    NicModel {
        name: "ConnectX-8",
        pf_device_id: "1023",
        vf_device_id: "101e",
        infiniband: true,
    },
    NicModel {
        name: "ConnectX-9",
        pf_device_id: "1025",
        vf_device_id: "101e",
        infiniband: true,
    },
    NicModel {
        name: "BlueField-2 (ConnectX-6 Dx)",
        pf_device_id: "a2d6",
        vf_device_id: "101e",
        infiniband: false,
    },
    NicModel {
        name: "BlueField-3 (ConnectX-7)",
        pf_device_id: "a2dc",
        vf_device_id: "101e",
        infiniband: true,
    },
];

/// The model with this PF device ID (case-insensitive, optional `0x`).
pub fn by_pf_id(device_id: &str) -> Option<&'static NicModel> {
    let id = normalize(device_id);
    MODELS.iter().find(|m| m.pf_device_id == id)
}

/// True when `device_id` is a VF device ID of a supported model.
pub fn is_vf_id(device_id: &str) -> bool {
    let id = normalize(device_id);
    MODELS.iter().any(|m| m.vf_device_id == id)
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
        assert!(by_pf_id("101e").is_none());
        assert!(by_pf_id("abcd").is_none());
    }
}
