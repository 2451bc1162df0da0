//! Addresses, host names, subnets and interface name patterns.

use std::net::{IpAddr, Ipv6Addr};

use zerohop_known::names;

/// A server address as the intent gives it, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// A DNS name.
    Name(String),
    /// An IP address.
    Ip(IpAddr),
}

impl Host {
    /// The form that goes before `:/export` in an NFS source: IPv6
    /// addresses are bracketed (`[fd00::10]:/export`), as mount.nfs(8)
    /// reads them.
    pub(crate) fn nfs_source_host(&self) -> String {
        match self {
            Host::Name(name) => name.clone(),
            Host::Ip(IpAddr::V4(address)) => address.to_string(),
            Host::Ip(IpAddr::V6(address)) => format!("[{address}]"),
        }
    }
}

/// Checks a server address: an IP address, or a host name of RFC 1123
/// labels (letters, digits and inner dashes, 1 to 63 characters each, at
/// most 253 in all).
pub(crate) fn host(text: &str) -> Result<Host, String> {
    if let Ok(address) = text.parse::<IpAddr>() {
        return Ok(Host::Ip(address));
    }
    // An IPv6 address in the brackets a URL would use is still an address.
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'))
        && let Ok(address) = inner.parse::<Ipv6Addr>()
    {
        return Ok(Host::Ip(IpAddr::V6(address)));
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 63
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    if !text.is_empty() && text.len() <= 253 && text.split('.').all(label_ok) {
        Ok(Host::Name(text.to_owned()))
    } else {
        Err("is neither an ip address nor a host name (letters, digits, '-' and '.')".to_owned())
    }
}

/// Checks an IP address (an NVMe-oF RDMA target is addressed by IP only).
pub(crate) fn ip_address(text: &str) -> Result<IpAddr, String> {
    text.parse::<IpAddr>()
        .map_err(|_| "is not an ip address".to_owned())
}

/// Checks a subnet in CIDR notation, `192.168.10.0/24`.
pub(crate) fn cidr(text: &str) -> Result<(), String> {
    let wrong = || Err("is not a cidr".to_owned());
    let Some((address, prefix)) = text.split_once('/') else {
        return wrong();
    };
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return wrong();
    }
    let Ok(prefix) = prefix.parse::<u8>() else {
        return wrong();
    };
    match address.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) if prefix <= 32 => Ok(()),
        Ok(IpAddr::V6(_)) if prefix <= 128 => Ok(()),
        _ => wrong(),
    }
}

/// A subnet that passed [`cidr`]: its network address and prefix length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subnet {
    network: IpAddr,
    prefix: u8,
}

impl Subnet {
    /// Parses a subnet [`cidr`] accepts; `None` otherwise.
    pub(crate) fn parse(text: &str) -> Option<Subnet> {
        cidr(text).ok()?;
        let (address, prefix) = text.split_once('/')?;
        Some(Subnet {
            network: address.parse().ok()?,
            prefix: prefix.parse().ok()?,
        })
    }

    /// The address bits of the subnet: 32 or 128.
    fn width(self) -> u32 {
        if self.network.is_ipv4() { 32 } else { 128 }
    }

    fn bits(address: IpAddr) -> u128 {
        match address {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => u128::from(v6),
        }
    }

    fn address(self, bits: u128) -> IpAddr {
        match self.network {
            // The bits of a v4 subnet's addresses fit in 32.
            IpAddr::V4(_) => IpAddr::V4(u32::try_from(bits).unwrap_or(u32::MAX).into()),
            IpAddr::V6(_) => IpAddr::V6(bits.into()),
        }
    }

    /// The mask of the host part.
    fn host_mask(self) -> u128 {
        let host_bits = self.width() - u32::from(self.prefix);
        if host_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << host_bits) - 1
        }
    }

    /// Whether `address` is in the subnet (same family, same network bits).
    pub(crate) fn contains(self, address: IpAddr) -> bool {
        address.is_ipv4() == self.network.is_ipv4()
            && Self::bits(address) & !self.host_mask()
                == Self::bits(self.network) & !self.host_mask()
    }

    /// The first address of the subnet's upper half; `None` for a subnet of
    /// one or two addresses, which has no halves to share.
    pub(crate) fn upper_half_start(self) -> Option<IpAddr> {
        let host_bits = self.width() - u32::from(self.prefix);
        if host_bits < 2 {
            return None;
        }
        let network = Self::bits(self.network) & !self.host_mask();
        Some(self.address(network | (1u128 << (host_bits - 1))))
    }
}

/// Checks an `NCCL_SOCKET_IFNAME` value: an optional `^` (exclude) and `=`
/// (exact match) before a comma-separated list of interface names or name
/// prefixes, each a valid netdev name.
pub(crate) fn nccl_socket_ifname(text: &str) -> Result<(), String> {
    let list = text.strip_prefix('^').unwrap_or(text);
    let list = list.strip_prefix('=').unwrap_or(list);
    for name in list.split(',') {
        names::netdev(name)
            .map_err(|problem| format!("has an interface {name:?} that {problem}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_addresses_or_dns_names() {
        assert_eq!(
            host("10.10.0.10").map(|h| h.nfs_source_host()),
            Ok("10.10.0.10".to_owned())
        );
        assert_eq!(
            host("fd00::10").map(|h| h.nfs_source_host()),
            Ok("[fd00::10]".to_owned())
        );
        assert_eq!(
            host("[fd00::10]").map(|h| h.nfs_source_host()),
            Ok("[fd00::10]".to_owned())
        );
        assert_eq!(
            host("nfs-1.storage.example").map(|h| h.nfs_source_host()),
            Ok("nfs-1.storage.example".to_owned())
        );
        for bad in [
            "",
            "nfs;reboot",
            "a..b",
            "-a",
            "a b",
            "x$(id)",
            "nfs\n",
            "[10.0.0.1]",
        ] {
            assert!(host(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn subnets_and_addresses() {
        assert_eq!(cidr("192.168.10.0/24"), Ok(()));
        assert_eq!(cidr("fd00::/64"), Ok(()));
        assert!(cidr("192.168.10.0").is_err());
        assert!(cidr("192.168.10.0/33").is_err());
        assert!(cidr("192.168.10.0/+8").is_err());
        assert!(ip_address("10.0.0.1").is_ok());
        assert!(ip_address("target.example").is_err());
    }

    #[test]
    fn socket_ifname_lists() {
        for good in ["eth0", "^docker,lo", "=eth0", "^=ib0,ib1", "ens"] {
            assert_eq!(nccl_socket_ifname(good), Ok(()), "{good}");
        }
        for bad in ["", "eth0,", "^", "eth 0", "a/b", "$(reboot)x/"] {
            assert!(nccl_socket_ifname(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod subnet_tests {
    use super::*;

    #[test]
    fn subnets_hold_their_addresses_and_split_in_halves() {
        let subnet = Subnet::parse("10.10.0.0/24").expect("subnet");
        assert!(subnet.contains("10.10.0.10".parse().expect("ip")));
        assert!(!subnet.contains("10.10.1.10".parse().expect("ip")));
        assert!(!subnet.contains("::1".parse().expect("ip")));
        assert_eq!(subnet.upper_half_start(), "10.10.0.128".parse().ok());
        let v6 = Subnet::parse("fd00:10::/64").expect("subnet");
        assert_eq!(v6.upper_half_start(), "fd00:10::8000:0:0:0".parse().ok());
        assert!(v6.contains("fd00:10::5".parse().expect("ip")));
        assert_eq!(
            Subnet::parse("10.0.0.0/31").and_then(Subnet::upper_half_start),
            None
        );
        assert_eq!(
            Subnet::parse("0.0.0.0/0").and_then(Subnet::upper_half_start),
            "128.0.0.0".parse().ok()
        );
        assert!(Subnet::parse("10.0.0.0/33").is_none());
    }
}
