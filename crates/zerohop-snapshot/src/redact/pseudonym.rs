//! The pseudonyms: one map per kind of identifier, each deterministic and
//! each keeping what checks judge (the address class, the subnet, the
//! vendor part, the format).
//!
//! Counters number values in order of first appearance; addresses are
//! renumbered from the whole set seen (see [`Compressor`]), so both depend
//! only on what the snapshot holds, never on a random seed, and the same
//! host gives the same pseudonyms.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One identifier and what it became, for `--redact-map`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Pseudonym {
    /// What kind of identifier: `hostname`, `ipv4`, `ipv6`, `mac`, `guid`,
    /// `uuid`, `nqn`, `serial`.
    pub kind: &'static str,
    /// The value on the host.
    pub original: String,
    /// The value in the archive.
    pub pseudonym: String,
}

/// Values numbered from 1 in order of first appearance.
#[derive(Debug)]
pub(crate) struct Counter<K> {
    numbers: HashMap<K, u64>,
}

impl<K: Hash + Eq> Default for Counter<K> {
    fn default() -> Self {
        Counter {
            numbers: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq + Clone> Counter<K> {
    /// The number of `key`, given the next one when it is new.
    pub(crate) fn number(&mut self, key: &K) -> u64 {
        let next = self.numbers.len() as u64 + 1;
        *self.numbers.entry(key.clone()).or_insert(next)
    }
}

/// The most values of one domain checked against each other.
const MAX_CROSS: usize = 2048;

/// A prefix-preserving renumbering of a set of fixed-width values.
///
/// Seen as a binary trie, a value keeps its bit wherever the set branches
/// (values on both sides), and gets 0 wherever it does not. Two values
/// share exactly as many leading bits after as before, so every subnet,
/// whatever its mask, holds the same addresses after as before, and a
/// network address (the smallest of its subnet) keeps its zero host bits;
/// what is not a branch, which is what identifies a network, is gone.
///
/// The result is then XORed with a constant of the domain, set only in its
/// leading bits, chosen so that no address stays what it was (a lone
/// `10.0.0.7` would otherwise be its own pseudonym).
#[derive(Debug, Default)]
pub(crate) struct Compressor {
    /// `(domain, depth, prefix)` of every trie node the set reaches.
    nodes: HashSet<(u128, u32, u128)>,
    /// Every value by domain, with its width.
    values: BTreeMap<u128, (u32, Vec<u128>)>,
    /// The constant of each domain, once sealed.
    constants: HashMap<u128, u128>,
}

impl Compressor {
    /// Adds `value`, `width` bits wide, in `domain` (values of different
    /// domains never share a trie).
    pub(crate) fn add(&mut self, domain: u128, value: u128, width: u32) {
        if self.nodes.insert((domain, width, value)) {
            for depth in 1..width {
                self.nodes.insert((domain, depth, value >> (width - depth)));
            }
            self.values
                .entry(domain)
                .or_insert((width, Vec::new()))
                .1
                .push(value);
        }
    }

    /// Chooses each domain's constant, once every value is added: the
    /// first, highest bits first, in the leading bits (up to sixteen) that
    /// makes no pseudonym one of the originals, so that no address is
    /// left as it was nor reads as another address of the host. A domain
    /// of more than [`MAX_CROSS`] values is only kept from mapping a value
    /// to itself.
    pub(crate) fn seal(&mut self) {
        for (domain, (width, values)) in &self.values {
            let lead = (*width).min(16);
            let mapped: Vec<u128> = values
                .iter()
                .map(|v| self.compress(*domain, *v, *width))
                .collect();
            let bad: HashSet<u128> = if values.len() > MAX_CROSS {
                mapped.iter().zip(values).map(|(m, v)| m ^ v).collect()
            } else {
                mapped
                    .iter()
                    .flat_map(|m| values.iter().map(move |v| m ^ v))
                    .collect()
            };
            // Leading bits first (`k` bit-reversed): a constant in the high
            // bits leaves the network addresses of long masks at zero.
            let constant = (1..1u128 << lead)
                .map(|k| (k.reverse_bits() >> (128 - lead)) << (width - lead))
                .find(|c| !bad.contains(c))
                .unwrap_or(0);
            self.constants.insert(*domain, constant);
        }
    }

    /// The renumbered `value`.
    pub(crate) fn map(&self, domain: u128, value: u128, width: u32) -> u128 {
        self.compress(domain, value, width) ^ self.constants.get(&domain).copied().unwrap_or(0)
    }

    fn compress(&self, domain: u128, value: u128, width: u32) -> u128 {
        let mut mapped = 0u128;
        for depth in 0..width {
            let prefix = value >> (width - depth);
            let bit = (value >> (width - depth - 1)) & 1;
            let both = self.nodes.contains(&(domain, depth + 1, prefix << 1))
                && self.nodes.contains(&(domain, depth + 1, (prefix << 1) | 1));
            mapped = (mapped << 1) | if both { bit } else { 0 };
        }
        mapped
    }
}

/// Which leading bits of an IPv4 address are kept, or `None` when the whole
/// address is: `0.0.0.0/8`, loopback `127.0.0.0/8`, multicast and the
/// reserved `224.0.0.0/3` (netmasks and the broadcast address among them)
/// and the documentation networks identify no host. Private and shared
/// blocks keep their block (RFC 1918, RFC 6598, RFC 3927 link-local, RFC
/// 2544 benchmarking), other addresses their first octet.
fn ipv4_kept_bits(addr: Ipv4Addr) -> Option<u32> {
    let [a, b, c, _] = addr.octets();
    match (a, b, c) {
        (0 | 127 | 224..=255, _, _) => None,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => None,
        (192, 168, _) | (169, 254, _) => Some(16),
        (172, 16..=31, _) => Some(12),
        (100, 64..=127, _) => Some(10),
        (198, 18..=19, _) => Some(15),
        _ => Some(8),
    }
}

/// The renumbered bits of an IPv4 address: those between the kept block
/// and the last octet. The last octet (the host within its /24) is kept,
/// so network, gateway and broadcast addresses keep their look.
fn ipv4_span(addr: Ipv4Addr) -> Option<(u128, u128, u32)> {
    let kept = ipv4_kept_bits(addr)?;
    let value = u32::from(addr);
    let width = 24 - kept;
    let domain = u128::from(kept) << 32 | u128::from(value >> (32 - kept));
    let middle = (value >> 8) & ((1u32 << width) - 1);
    Some((domain, u128::from(middle), width))
}

/// The IPv6 prefix kept: the first 16 bits (the registry block), the
/// whole /64 of a link-local address.
fn ipv6_kept_bits(addr: Ipv6Addr) -> Option<u32> {
    let first = addr.segments()[0];
    if addr.is_unspecified() || addr.is_loopback() || first & 0xff00 == 0xff00 {
        return None;
    }
    if first == 0x2001 && addr.segments()[1] == 0x0db8 {
        return None;
    }
    Some(if first & 0xffc0 == 0xfe80 { 64 } else { 16 })
}

/// The renumbered network bits of an IPv6 address: between the kept
/// prefix and the interface identifier.
fn ipv6_span(addr: Ipv6Addr) -> Option<(u128, u128, u32)> {
    let kept = ipv6_kept_bits(addr)?;
    let width = 64 - kept;
    let value = u128::from(addr);
    let domain = 1 << 64 | value >> (128 - kept);
    Some((domain, (value >> 64) & ((1u128 << width) - 1), width))
}

/// Every map, filled as identifiers are met.
#[derive(Debug, Default)]
pub(crate) struct Maps {
    ipv4: Compressor,
    ipv6: Compressor,
    macs: Counter<[u8; 6]>,
    guids: Counter<u64>,
    uuids: Counter<String>,
    serials: Counter<String>,
    hosts: Counter<String>,
    users: Counter<String>,
    /// Every original and its pseudonym, by kind and original.
    pub(crate) seen: BTreeMap<(&'static str, String), String>,
}

impl Maps {
    fn note(&mut self, kind: &'static str, original: String, pseudonym: &str) {
        self.seen
            .entry((kind, original))
            .or_insert_with(|| pseudonym.to_owned());
    }

    /// Fixes the renumbering once every address is added.
    pub(crate) fn seal(&mut self) {
        self.ipv4.seal();
        self.ipv6.seal();
    }

    /// Adds an IPv4 address to the set renumbered.
    pub(crate) fn add_ipv4(&mut self, addr: Ipv4Addr) {
        if let Some((domain, value, width)) = ipv4_span(addr) {
            self.ipv4.add(domain, value, width);
        }
    }

    /// Adds an IPv6 address to the set renumbered (an IPv4-mapped one to
    /// the IPv4 set).
    pub(crate) fn add_ipv6(&mut self, addr: Ipv6Addr) {
        if let Some(v4) = addr.to_ipv4_mapped() {
            self.add_ipv4(v4);
        } else if let Some((domain, value, width)) = ipv6_span(addr) {
            self.ipv6.add(domain, value, width);
        }
    }

    /// Numbers the counted part of an IPv6 address (its interface
    /// identifier) in order of appearance, as [`Maps::ipv6`] will map it.
    pub(crate) fn number_ipv6(&mut self, addr: Ipv6Addr) {
        if addr.to_ipv4_mapped().is_none() && ipv6_span(addr).is_some() {
            self.interface_id(u128::from(addr) as u64);
        }
    }

    /// The pseudonym of an IPv4 address.
    pub(crate) fn ipv4(&mut self, addr: Ipv4Addr) -> Ipv4Addr {
        let Some((domain, value, width)) = ipv4_span(addr) else {
            return addr;
        };
        let middle = self.ipv4.map(domain, value, width) as u32;
        let raw = u32::from(addr);
        let kept = 32 - 8 - width;
        let block = if kept == 0 {
            0
        } else {
            raw >> (32 - kept) << (32 - kept)
        };
        let mapped = Ipv4Addr::from(block | middle << 8 | (raw & 0xff));
        self.note("ipv4", addr.to_string(), &mapped.to_string());
        mapped
    }

    /// The pseudonym of an IPv6 address: an IPv4-mapped one embeds the
    /// IPv4 pseudonym; the network bits are renumbered; the interface
    /// identifier is a MAC's pseudonym when it is derived from a MAC
    /// (modified EUI-64, `ff:fe` in the middle), else a GUID's.
    pub(crate) fn ipv6(&mut self, addr: Ipv6Addr) -> Ipv6Addr {
        if let Some(v4) = addr.to_ipv4_mapped() {
            return self.ipv4(v4).to_ipv6_mapped();
        }
        let Some((domain, value, width)) = ipv6_span(addr) else {
            return addr;
        };
        let raw = u128::from(addr);
        let kept = 64 - width;
        let network =
            raw >> (128 - kept) << (128 - kept) | self.ipv6.map(domain, value, width) << 64;
        let mapped = Ipv6Addr::from(network | u128::from(self.interface_id(raw as u64)));
        self.note("ipv6", addr.to_string(), &mapped.to_string());
        mapped
    }

    fn interface_id(&mut self, iid: u64) -> u64 {
        let b = iid.to_be_bytes();
        if iid == 0 {
            0
        } else if b[3] == 0xff && b[4] == 0xfe {
            let mac = self.mac([b[0] ^ 0x02, b[1], b[2], b[5], b[6], b[7]]);
            u64::from_be_bytes([
                mac[0] ^ 0x02,
                mac[1],
                mac[2],
                0xff,
                0xfe,
                mac[3],
                mac[4],
                mac[5],
            ])
        } else {
            self.guid(iid)
        }
    }

    /// The pseudonym of a MAC: the zero, broadcast and multicast addresses
    /// are kept; a universal address keeps its vendor (OUI) and gets a
    /// number, a locally administered one becomes `02:00:00` and a number.
    pub(crate) fn mac(&mut self, mac: [u8; 6]) -> [u8; 6] {
        if mac == [0; 6] || mac[0] & 0x01 == 0x01 {
            return mac;
        }
        let [_, _, _, _, _, n1, n2, n3] = self.macs.number(&mac).to_be_bytes();
        let mapped = if mac[0] & 0x02 == 0x02 {
            [0x02, 0, 0, n1, n2, n3]
        } else {
            [mac[0], mac[1], mac[2], n1, n2, n3]
        };
        self.note("mac", hex_colons(&mac, 1), &hex_colons(&mapped, 1));
        mapped
    }

    /// The pseudonym of a 64-bit GUID: zero and all-ones are kept, others
    /// keep their vendor (the first 24 bits) and get a number.
    pub(crate) fn guid(&mut self, guid: u64) -> u64 {
        if guid == 0 || guid == u64::MAX {
            return guid;
        }
        let mapped = guid & !((1 << 40) - 1) | self.guids.number(&guid);
        self.note(
            "guid",
            hex_colons(&guid.to_be_bytes(), 2),
            &hex_colons(&mapped.to_be_bytes(), 2),
        );
        mapped
    }

    /// The pseudonym of a UUID or of anything a UUID stands for (an NQN
    /// without one): `00000000-0000-4000-8000-` and a number, a valid
    /// version 4 UUID.
    pub(crate) fn uuid(&mut self, key: &str) -> String {
        let mapped = format!(
            "00000000-0000-4000-8000-{:012x}",
            self.uuids.number(&key.to_ascii_lowercase())
        );
        self.note("uuid", key.to_owned(), &mapped);
        mapped
    }

    /// The pseudonym of a serial number: `S` and a number, as long as the
    /// original (at least five characters).
    pub(crate) fn serial(&mut self, serial: &str) -> String {
        let width = serial.len().max(5) - 1;
        let mapped = format!("S{:0width$}", self.serials.number(&serial.to_owned()));
        self.note("serial", serial.to_owned(), &mapped);
        mapped
    }

    /// The pseudonym of a user name: `user<n>`.
    pub(crate) fn user(&mut self, name: &str) -> String {
        let mapped = format!("user{}", self.users.number(&name.to_owned()));
        self.note("user", name.to_owned(), &mapped);
        mapped
    }

    /// The serial numbers met so far, longest first.
    pub(crate) fn serials(&self) -> Vec<(String, String)> {
        let mut serials: Vec<(String, String)> = self
            .seen
            .iter()
            .filter(|((kind, _), _)| *kind == "serial")
            .map(|((_, original), pseudonym)| (original.clone(), pseudonym.clone()))
            .collect();
        serials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        serials
    }

    /// The pseudonym of a host name: `host<n>`, and `host<n>.invalid` for a
    /// dotted one (RFC 2606 reserves `.invalid`). `key` is the name the
    /// number is kept under, so that a host's short and full names agree.
    pub(crate) fn host(&mut self, name: &str, key: &str) -> String {
        let number = self.hosts.number(&key.to_ascii_lowercase());
        let mapped = if name.contains('.') {
            format!("host{number}.invalid")
        } else {
            format!("host{number}")
        };
        self.note("hostname", name.to_owned(), &mapped);
        mapped
    }
}

/// `bytes` as hex, `group` bytes per colon-separated group.
pub(crate) fn hex_colons(bytes: &[u8], group: usize) -> String {
    let mut text = String::with_capacity(bytes.len() * 3);
    for (index, byte) in bytes.iter().enumerate() {
        if index > 0 && index % group == 0 {
            text.push(':');
        }
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(text: &str) -> Ipv4Addr {
        text.parse().unwrap()
    }

    fn maps_of(addresses: &[&str]) -> Maps {
        let mut maps = Maps::default();
        for addr in addresses {
            maps.add_ipv4(v4(addr));
        }
        maps.seal();
        maps
    }

    #[test]
    fn ipv4_keeps_its_block_its_subnets_and_its_host_octet() {
        let set = [
            "10.20.30.1",
            "10.20.30.77",
            "10.20.31.5",
            "10.99.0.1",
            "192.168.7.9",
        ];
        let mut maps = maps_of(&set);
        let mapped: Vec<Ipv4Addr> = set.iter().map(|a| maps.ipv4(v4(a))).collect();
        for (before, after) in set.iter().zip(&mapped) {
            let before = v4(before);
            assert_eq!(before.octets()[3], after.octets()[3], "{before} -> {after}");
            assert_ne!(before, *after, "{before} is redacted");
        }
        assert!(mapped[..4].iter().all(|a| a.octets()[0] == 10));
        assert_eq!(mapped[4].octets()[..2], [192, 168]);
        // Same /24, same /24 after; the /23 of .30 and .31 is kept too.
        let prefix = |a: Ipv4Addr, bits: u32| u32::from(a) >> (32 - bits);
        assert_eq!(prefix(mapped[0], 24), prefix(mapped[1], 24));
        assert_ne!(prefix(mapped[0], 24), prefix(mapped[2], 24));
        assert_eq!(prefix(mapped[0], 23), prefix(mapped[2], 23));
        assert_ne!(prefix(mapped[0], 16), prefix(mapped[3], 16));
    }

    #[test]
    fn every_mask_holds_the_same_addresses_after() {
        let set = [
            "172.20.16.0",
            "172.20.17.5",
            "172.20.31.200",
            "172.21.0.3",
            "172.20.32.1",
        ];
        let mut maps = maps_of(&set);
        let mapped: Vec<u32> = set.iter().map(|a| u32::from(maps.ipv4(v4(a)))).collect();
        let raw: Vec<u32> = set.iter().map(|a| u32::from(v4(a))).collect();
        for bits in 1..=32 {
            let mask = u32::MAX << (32 - bits);
            for i in 0..set.len() {
                for j in 0..set.len() {
                    assert_eq!(
                        raw[i] & mask == raw[j] & mask,
                        mapped[i] & mask == mapped[j] & mask,
                        "/{bits}: {} {}",
                        set[i],
                        set[j]
                    );
                }
            }
        }
        // The network address of the /20 stays a network address.
        assert_eq!(mapped[0] & 0xfff, 0);
    }

    #[test]
    fn well_known_ipv4_addresses_are_kept() {
        let mut maps = Maps::default();
        for addr in [
            "127.0.0.1",
            "0.0.0.0",
            "255.255.255.0",
            "255.255.255.255",
            "224.0.0.251",
        ] {
            maps.add_ipv4(v4(addr));
            assert_eq!(maps.ipv4(v4(addr)), v4(addr));
        }
    }

    #[test]
    fn an_ipv4_mapped_gid_embeds_the_ipv4_pseudonym() {
        let mut maps = maps_of(&["192.168.100.1", "192.168.3.4"]);
        let gid: Ipv6Addr = "::ffff:192.168.100.1".parse().unwrap();
        maps.add_ipv6(gid);
        maps.seal();
        let alone = maps.ipv4(v4("192.168.100.1"));
        assert_eq!(maps.ipv6(gid), alone.to_ipv6_mapped());
        assert_ne!(alone, v4("192.168.100.1"));
    }

    #[test]
    fn link_local_ipv6_keeps_its_prefix_and_follows_its_mac() {
        let mut maps = Maps::default();
        // fe80::ec4:7aff:fe12:3456 is the modified EUI-64 of 0c:c4:7a:12:34:56.
        let addr: Ipv6Addr = "fe80::ec4:7aff:fe12:3456".parse().unwrap();
        maps.add_ipv6(addr);
        maps.seal();
        let mapped = maps.ipv6(addr);
        let mac = maps.mac([0x0c, 0xc4, 0x7a, 0x12, 0x34, 0x56]);
        assert_eq!(mac, [0x0c, 0xc4, 0x7a, 0, 0, 1]);
        assert_eq!(mapped, "fe80::ec4:7aff:fe00:1".parse::<Ipv6Addr>().unwrap());
        let global: Ipv6Addr = "2a01:4f8:1:2::5".parse().unwrap();
        maps.add_ipv6(global);
        maps.seal();
        let mapped = maps.ipv6(global);
        assert_eq!(mapped.segments()[0], 0x2a01);
        assert_ne!(mapped, global);
        let loopback = Ipv6Addr::LOCALHOST;
        assert_eq!(maps.ipv6(loopback), loopback);
    }

    #[test]
    fn macs_keep_their_shape() {
        let mut maps = Maps::default();
        let universal = maps.mac([0xb8, 0x3f, 0xd2, 0x11, 0x22, 0x33]);
        let local = maps.mac([0x26, 0x9e, 0x01, 0x02, 0x03, 0x04]);
        assert_eq!(universal, [0xb8, 0x3f, 0xd2, 0, 0, 1]);
        assert_eq!(local, [0x02, 0, 0, 0, 0, 2]);
        // Consistent, and the special addresses kept.
        assert_eq!(maps.mac([0xb8, 0x3f, 0xd2, 0x11, 0x22, 0x33]), universal);
        for kept in [[0; 6], [0xff; 6], [0x33, 0x33, 0, 0, 0, 1]] {
            assert_eq!(maps.mac(kept), kept);
        }
    }

    #[test]
    fn guids_keep_their_vendor() {
        let mut maps = Maps::default();
        let guid = 0x0c42_a103_0065_8a5e;
        assert_eq!(maps.guid(guid), 0x0c42_a100_0000_0001);
        assert_eq!(maps.guid(0), 0);
    }

    #[test]
    fn counters_number_in_order_of_first_appearance() {
        let mut maps = Maps::default();
        assert_eq!(maps.uuid("B"), "00000000-0000-4000-8000-000000000001");
        assert_eq!(maps.uuid("a"), "00000000-0000-4000-8000-000000000002");
        assert_eq!(maps.uuid("b"), "00000000-0000-4000-8000-000000000001");
        assert_eq!(maps.serial("PHLJ9123004X1P0FGN"), "S00000000000000001");
        assert_eq!(maps.host("node7.corp.example", "node7"), "host1.invalid");
        assert_eq!(maps.host("node7", "node7"), "host1");
    }
}
