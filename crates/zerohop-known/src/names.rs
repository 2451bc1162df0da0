//! The grammars of the names zerohop writes into scripts, units and
//! commands, as the kernel itself checks them.
//!
//! Each validator returns what is wrong as a lowercase fragment, so that the
//! intent's diagnostics and the doctor's messages can say it in their own
//! sentence. Control characters are refused everywhere, even where the
//! kernel would take them: no tool can show such a name, and no script
//! should carry one.

/// `IFNAMSIZ` in `include/uapi/linux/if.h`: a network interface name is at
/// most 15 bytes and a NUL.
pub const IFNAMSIZ: usize = 16;

/// `IB_DEVICE_NAME_MAX` in `include/rdma/ib_verbs.h`: an RDMA device name is
/// at most 63 bytes and a NUL.
pub const IB_DEVICE_NAME_MAX: usize = 64;

/// Checks a network interface name the way the kernel's `dev_valid_name()`
/// does (`net/core/dev.c`): not empty, shorter than [`IFNAMSIZ`], not `.` or
/// `..`, and no `/`, `:` or white space. `ip link` (iproute2
/// `check_ifname()`) refuses the same names.
///
/// # Errors
/// What is wrong with the name.
pub fn netdev(name: &str) -> Result<(), String> {
    kernel_name(name, IFNAMSIZ, &['/', ':'])
}

/// Checks an RDMA device name (`mlx5_0`, `ibp12s0`, `roceP2p1s0f0`): the
/// kernel names it from a template (`ib_device_rename()` and
/// `assign_name()` in `drivers/infiniband/core/device.c`) and exposes it as
/// a directory of `/sys/class/infiniband`, so it is not empty, shorter than
/// [`IB_DEVICE_NAME_MAX`], not `.` or `..`, and has no `/`; like a netdev
/// name it has no white space (`rdma dev set … name` takes one word).
///
/// # Errors
/// What is wrong with the name.
pub fn rdma_device(name: &str) -> Result<(), String> {
    kernel_name(name, IB_DEVICE_NAME_MAX, &['/'])
}

fn kernel_name(name: &str, size: usize, forbidden: &[char]) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".to_owned());
    }
    if name.len() >= size {
        return Err(format!(
            "is {} bytes long; the kernel allows at most {}",
            name.len(),
            size - 1
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("`{name}` names a directory, not a device"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| forbidden.contains(c) || c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "contains {}, which the kernel refuses",
            describe(c)
        ));
    }
    Ok(())
}

/// A PCI function address as sysfs names it, `DDDD:BB:DD.F`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddress {
    /// The PCI domain (segment); above `ffff` behind Intel VMD.
    pub domain: u32,
    /// The bus number.
    pub bus: u8,
    /// The device number, 0 to 31.
    pub device: u8,
    /// The function number, 0 to 7.
    pub function: u8,
}

impl PciAddress {
    /// Parses `DDDD:BB:DD.F` as the kernel prints it (`pci_name()`,
    /// `"%04x:%02x:%02x.%d"` in `drivers/pci/probe.c`): a hexadecimal domain
    /// of at least four digits (VMD domains have five), two-digit bus and
    /// device, and a function digit. Lower- and upper-case hex are both
    /// accepted; the canonical form ([`std::fmt::Display`]) is lower case.
    ///
    /// # Errors
    /// What is wrong with the text.
    pub fn parse(text: &str) -> Result<PciAddress, String> {
        let wrong = || {
            format!(
                "`{}` is not a PCI address like 0000:3b:00.1",
                text.escape_debug()
            )
        };
        let (domain, rest) = text.split_once(':').ok_or_else(wrong)?;
        let (bus, rest) = rest.split_once(':').ok_or_else(wrong)?;
        let (device, function) = rest.split_once('.').ok_or_else(wrong)?;
        let hex = |part: &str, min: usize, max: usize| {
            (part.len() >= min && part.len() <= max && part.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| u32::from_str_radix(part, 16).ok())
                .flatten()
        };
        let domain = hex(domain, 4, 8).ok_or_else(wrong)?;
        let bus = hex(bus, 2, 2)
            .and_then(|b| u8::try_from(b).ok())
            .ok_or_else(wrong)?;
        let device = hex(device, 2, 2)
            .and_then(|d| u8::try_from(d).ok())
            .filter(|d| *d < 32)
            .ok_or_else(wrong)?;
        let function = (function.len() == 1)
            .then(|| function.parse::<u8>().ok())
            .flatten()
            .filter(|f| *f < 8)
            .ok_or_else(wrong)?;
        Ok(PciAddress {
            domain,
            bus,
            device,
            function,
        })
    }
}

impl std::fmt::Display for PciAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// How a character is named in a message: printable ones quoted, others
/// by their code point, so the message itself stays printable.
pub fn describe(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("`{c}`")
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn netdev_names_follow_dev_valid_name() {
        for good in ["eth0", "ens1f0np0", "enp59s0f1v3", "a", "x$(reboot)"] {
            assert_eq!(netdev(good), Ok(()), "{good}");
        }
        // 15 bytes is the longest name IFNAMSIZ leaves room for.
        assert_eq!(netdev("abcdefghijklmno"), Ok(()));
        for bad in [
            "",
            ".",
            "..",
            "abcdefghijklmnop",
            "x$(touch${IFS}/tmp/p)",
            "eth0:1",
            "eth 0",
            "eth\t0",
            "eth\n0",
            "eth\u{1b}]0;x\u{7}",
        ] {
            assert!(netdev(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn rdma_names_allow_colons_but_not_slashes() {
        assert_eq!(rdma_device("mlx5_0"), Ok(()));
        assert_eq!(rdma_device("roceP2p1s0f0"), Ok(()));
        assert!(rdma_device("mlx5/0").is_err());
        assert!(rdma_device(&"m".repeat(64)).is_err());
        assert_eq!(rdma_device(&"m".repeat(63)), Ok(()));
        assert!(
            rdma_device("mlx5_0;reboot").is_ok(),
            "the kernel allows it; scripts quote it"
        );
        assert!(rdma_device("mlx5 0").is_err());
    }

    #[test]
    fn pci_addresses_round_trip() {
        let address = PciAddress::parse("0000:3B:00.1").unwrap();
        assert_eq!(address.to_string(), "0000:3b:00.1");
        assert_eq!(PciAddress::parse("10000:e1:00.0").unwrap().domain, 0x10000);
        for bad in [
            "",
            "0000:3b:00",
            "3b:00.1",
            "0000:3b:20.0",
            "0000:3b:00.8",
            "0000:3b:0g.1",
            "0000:3b:00.1;x",
            "+000:3b:00.1",
        ] {
            assert!(PciAddress::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    proptest! {
        #[test]
        fn valid_netdev_names_are_one_printable_word(name in "\\PC{0,20}") {
            if netdev(&name).is_ok() {
                prop_assert!(!name.is_empty() && name.len() < IFNAMSIZ);
                prop_assert!(!name.contains(['/', ':']) && !name.chars().any(char::is_whitespace));
            }
        }

        #[test]
        fn pci_parse_never_panics_and_round_trips(text in "\\PC{0,20}") {
            if let Ok(address) = PciAddress::parse(&text) {
                prop_assert_eq!(PciAddress::parse(&address.to_string()), Ok(address));
            }
        }
    }
}
