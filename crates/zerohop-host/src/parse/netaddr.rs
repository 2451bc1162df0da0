//! Local IP addresses from procfs. Sysfs has no IP addresses, so IPv4
//! comes from `/proc/net/fib_trie` (the `/32 host LOCAL` leaves) with the
//! interface found through the connected routes of `/proc/net/route`, and
//! IPv6 from `/proc/net/if_inet6`, which names the interface.

use std::net::{Ipv4Addr, Ipv6Addr};

/// One route of `/proc/net/route`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<'a> {
    /// The interface name.
    pub iface: &'a str,
    /// Destination network.
    pub destination: Ipv4Addr,
    /// Network mask.
    pub mask: Ipv4Addr,
    /// Gateway; `0.0.0.0` for a directly connected network.
    pub gateway: Ipv4Addr,
}

impl Route<'_> {
    /// Whether `addr` is inside the route's network.
    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        u32::from(addr) & u32::from(self.mask) == u32::from(self.destination) & u32::from(self.mask)
    }
}

/// The local IPv4 addresses in `/proc/net/fib_trie`: every `|-- A.B.C.D`
/// leaf that carries a `/32 host LOCAL` entry. Sorted, without repeats.
pub fn local_ipv4(fib_trie: &str) -> Vec<Ipv4Addr> {
    let mut addresses = Vec::new();
    let mut leaf: Option<Ipv4Addr> = None;
    for line in fib_trie.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("|--") {
            leaf = rest.trim().parse().ok();
        } else if trimmed.starts_with("+--") {
            leaf = None;
        } else if trimmed.starts_with("/32")
            && trimmed.split_whitespace().any(|word| word == "LOCAL")
            && let Some(addr) = leaf
        {
            addresses.push(addr);
        }
    }
    addresses.sort_unstable();
    addresses.dedup();
    addresses
}

/// Parses `/proc/net/route`. The kernel prints addresses as host-order
/// hexadecimal; captures are read as little-endian (x86-64, arm64).
pub fn routes(text: &str) -> Vec<Route<'_>> {
    text.lines()
        .skip_while(|line| line.starts_with("Iface"))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 8 {
                return None;
            }
            Some(Route {
                iface: fields[0],
                destination: hex_ipv4(fields[1])?,
                gateway: hex_ipv4(fields[2])?,
                mask: hex_ipv4(fields[7])?,
            })
        })
        .collect()
}

/// An address as `/proc/net/route` prints it: eight hex digits of the
/// value in host order, read as little-endian.
pub fn hex_ipv4(text: &str) -> Option<Ipv4Addr> {
    if text.len() != 8 {
        return None;
    }
    u32::from_str_radix(text, 16)
        .ok()
        .map(|value| Ipv4Addr::from(value.swap_bytes()))
}

/// The interface whose directly connected network holds `addr`: the most
/// specific route without a gateway.
pub fn iface_of<'a>(routes: &[Route<'a>], addr: Ipv4Addr) -> Option<&'a str> {
    routes
        .iter()
        .filter(|route| route.gateway.is_unspecified() && route.contains(addr))
        .max_by_key(|route| u32::from(route.mask).count_ones())
        .map(|route| route.iface)
}

/// Parses `/proc/net/if_inet6`: `address ifindex prefix scope flags name`.
pub fn if_inet6(text: &str) -> Vec<(Ipv6Addr, &str)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let hex = fields.first()?;
            if hex.len() != 32 || fields.len() < 6 {
                return None;
            }
            let value = u128::from_str_radix(hex, 16).ok()?;
            Some((Ipv6Addr::from(value), fields[5]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const FIB: &str = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     +-- 10.0.9.0/24 2 0 2\n        |-- 10.0.9.0\n           /32 link BROADCAST\n           /24 link UNICAST\n        |-- 10.0.9.7\n           /32 host LOCAL\nLocal:\n        |-- 10.0.9.7\n           /32 host LOCAL\n        |-- 127.0.0.1\n           /32 host LOCAL\n";
    const ROUTE: &str = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
        eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
        ens1f0\t0009000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";

    #[test]
    fn local_addresses_and_their_interface() {
        let local = local_ipv4(FIB);
        assert_eq!(local, vec![Ipv4Addr::new(10, 0, 9, 7), Ipv4Addr::LOCALHOST]);
        let routes = routes(ROUTE);
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[1].destination, Ipv4Addr::new(10, 0, 9, 0));
        assert_eq!(
            iface_of(&routes, Ipv4Addr::new(10, 0, 9, 7)),
            Some("ens1f0")
        );
        assert_eq!(iface_of(&routes, Ipv4Addr::new(8, 8, 8, 8)), None);
    }

    #[test]
    fn ipv6_with_names() {
        let text = "fe800000000000000000000000000001 02 40 20 80 ens1f0\nshort 1 2 3 4 x\n";
        let addrs = if_inet6(text);
        assert_eq!(addrs.len(), 1);
        assert_eq!(addrs[0].1, "ens1f0");
        assert_eq!(addrs[0].0, "fe80::1".parse::<Ipv6Addr>().unwrap());
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,300}") {
            let _ = local_ipv4(&text);
            let routes = routes(&text);
            let _ = iface_of(&routes, Ipv4Addr::new(10, 0, 0, 1));
            let _ = if_inet6(&text);
        }
    }
}
