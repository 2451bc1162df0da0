//! PCI class codes and vendor IDs zerohop recognises functions by.
//!
//! Class codes are the upper 16 bits of a function's `class` attribute
//! (base class and subclass, as `lspci -n` prints them), from the PCI-SIG
//! "PCI Code and ID Assignment Specification" and `pci.ids`.

/// PCI class codes zerohop cares about.
pub mod class {
    /// VGA-compatible display controller (some NVIDIA GPUs).
    pub const DISPLAY_VGA: u16 = 0x0300;
    /// 3D controller (data-centre NVIDIA GPUs).
    pub const DISPLAY_3D: u16 = 0x0302;
    /// Ethernet controller (RoCE NICs).
    pub const NETWORK_ETHERNET: u16 = 0x0200;
    /// InfiniBand controller.
    pub const NETWORK_INFINIBAND: u16 = 0x0207;
    /// "Network controller", subclass other: ConnectX-3 VPI adapters
    /// (`15b3:1003`, `15b3:1007`) report it, and so do Wi-Fi cards.
    pub const NETWORK_OTHER: u16 = 0x0280;
    /// InfiniBand controller in the serial-bus class (QLogic/Intel HCAs).
    pub const SERIAL_INFINIBAND: u16 = 0x0c06;
    /// NVM Express controller (`0x0108`, programming interface `0x02`).
    pub const STORAGE_NVME: u16 = 0x0108;
    /// PCI-to-PCI bridge (switch ports, root ports).
    pub const BRIDGE_PCI: u16 = 0x0604;

    /// The base class of network controllers: every `0x02xx` code.
    pub const BASE_NETWORK: u8 = 0x02;

    /// Whether `code` is a network controller of any subclass, or an
    /// InfiniBand controller filed under the serial-bus class.
    pub fn is_network(code: u16) -> bool {
        code >> 8 == u16::from(BASE_NETWORK) || code == SERIAL_INFINIBAND
    }
}

/// PCI vendor ID of NVIDIA GPUs and switches (`10de` in `pci.ids`); the
/// networking products keep Mellanox's, [`crate::nic::MELLANOX_VENDOR`].
pub const NVIDIA_VENDOR: u16 = 0x10de;

#[cfg(test)]
mod tests {
    use super::class::*;

    #[test]
    fn network_controllers_of_every_subclass() {
        for code in [
            NETWORK_ETHERNET,
            NETWORK_INFINIBAND,
            NETWORK_OTHER,
            SERIAL_INFINIBAND,
        ] {
            assert!(is_network(code), "{code:04x}");
        }
        for code in [DISPLAY_3D, STORAGE_NVME, BRIDGE_PCI, 0x0c03] {
            assert!(!is_network(code), "{code:04x}");
        }
    }
}
