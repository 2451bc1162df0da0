//! Whereabouts, the cluster-wide IPAM of the secondary networks: which
//! addresses a configuration hands out, as whereabouts itself decides it.
//!
//! Mirrors k8snetworkplumbingwg/whereabouts at
//! 3a262bd0cd873e13d9b379342f8251b852a89b8f:
//! - `pkg/config/config.go` (`LoadIPAMConfig`): the top-level `range`,
//!   `range_start`, `range_end` and `exclude` are one range, put before the
//!   `ipRanges`; a range written `first-last/prefix` has its start and end
//!   in it; otherwise `range_start` defaults to the network address;
//! - `pkg/iphelpers/iphelpers.go` (`GetIPRange`): addresses go from the
//!   first usable (network + 1) to the last usable (broadcast − 1), narrowed
//!   by `range_start`/`range_end` only when those lie inside; a `gateway` is
//!   parsed but never kept out of the range;
//! - `pkg/allocate/allocate.go` (`IterateForAssignment`,
//!   `parseExcludedRange`): every address of an `exclude` CIDR (a bare
//!   address is a /32 or /128) is skipped.

use std::net::IpAddr;

use serde_json::Value as Json;

/// An address as a number, with its family: IPv4 and IPv6 never compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Address {
    v6: bool,
    value: u128,
}

impl Address {
    pub(crate) fn of(ip: IpAddr) -> Address {
        match ip {
            IpAddr::V4(v4) => Address {
                v6: false,
                value: u128::from(u32::from(v4)),
            },
            IpAddr::V6(v6) => Address {
                v6: true,
                value: u128::from(v6),
            },
        }
    }

    fn bits(self) -> u32 {
        if self.v6 { 128 } else { 32 }
    }
}

/// A CIDR block: `10.10.0.0/24`, with the address as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cidr {
    /// The address as written (`10.10.0.5` in `10.10.0.5/24`).
    written: Address,
    prefix: u32,
}

impl Cidr {
    /// Parses `address/prefix`.
    pub(crate) fn parse(text: &str) -> Option<Cidr> {
        let (address, prefix) = text.trim().split_once('/')?;
        let written = Address::of(address.parse().ok()?);
        let prefix: u32 = prefix.parse().ok()?;
        (prefix <= written.bits()).then_some(Cidr { written, prefix })
    }

    fn mask(self) -> u128 {
        let host_bits = self.written.bits() - self.prefix;
        let all = if self.written.v6 {
            u128::MAX
        } else {
            u128::from(u32::MAX)
        };
        if host_bits >= 128 {
            0
        } else {
            all & !((1u128 << host_bits) - 1)
        }
    }

    fn network(self) -> u128 {
        self.written.value & self.mask()
    }

    fn broadcast(self) -> u128 {
        let all = if self.written.v6 {
            u128::MAX
        } else {
            u128::from(u32::MAX)
        };
        self.network() | (all & !self.mask())
    }

    /// Whether the block holds `address`.
    pub(crate) fn contains(self, address: Address) -> bool {
        address.v6 == self.written.v6 && address.value & self.mask() == self.network()
    }

    /// The first and last address of the block.
    pub(crate) fn block(self) -> (Address, Address) {
        let v6 = self.written.v6;
        (
            Address {
                v6,
                value: self.network(),
            },
            Address {
                v6,
                value: self.broadcast(),
            },
        )
    }

    /// The network address and prefix, as whereabouts prints a range.
    pub(crate) fn display(self) -> String {
        let network = if self.written.v6 {
            IpAddr::from(self.network().to_be_bytes())
        } else {
            let v4 = u32::try_from(self.network()).unwrap_or_default();
            IpAddr::from(v4.to_be_bytes())
        };
        format!("{network}/{}", self.prefix)
    }
}

/// One range of a whereabouts configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Range {
    /// The subnet.
    pub(crate) net: Cidr,
    start: Option<Address>,
    end: Option<Address>,
    exclude: Vec<Cidr>,
}

impl Range {
    /// Parses `range` (`cidr` or `first-last/prefix`) with its own
    /// `range_start`, `range_end` and `exclude`; `None` where whereabouts
    /// refuses the configuration.
    fn parse(
        range: &str,
        start: Option<&str>,
        end: Option<&str>,
        exclude: &[Json],
    ) -> Option<Range> {
        let address = |text: Option<&str>| -> Option<Option<Address>> {
            match text {
                None => Some(None),
                Some(text) => Some(Some(Address::of(text.trim().parse().ok()?))),
            }
        };
        let (net, start, end) = match range.split_once('-') {
            Some((first, rest)) => {
                let first = Address::of(first.trim().parse().ok()?);
                let net = Cidr::parse(rest)?;
                if !net.contains(first) {
                    return None;
                }
                (net, Some(first), Some(net.written))
            }
            None => (Cidr::parse(range)?, address(start)?, address(end)?),
        };
        let exclude = exclude
            .iter()
            .map(|item| {
                let text = item.as_str()?.trim();
                Cidr::parse(text).or_else(|| {
                    let address = Address::of(text.parse().ok()?);
                    Some(Cidr {
                        written: address,
                        prefix: address.bits(),
                    })
                })
            })
            .collect::<Option<Vec<Cidr>>>()?;
        Some(Range {
            net,
            start,
            end,
            exclude,
        })
    }

    /// The addresses whereabouts hands out from this range before
    /// exclusions (`GetIPRange`): from the first usable to the last usable,
    /// narrowed by `range_start`/`range_end` where those lie inside; `None`
    /// for a block without usable addresses (/31, /32).
    fn bounds(&self) -> Option<(Address, Address)> {
        if self.net.written.bits() - self.net.prefix < 2 {
            return None;
        }
        let mut first = self.net.network() + 1;
        let mut last = self.net.broadcast() - 1;
        if let Some(start) = self.start.filter(|s| (first..=last).contains(&s.value)) {
            first = start.value;
        }
        if let Some(end) = self.end.filter(|e| (first..=last).contains(&e.value)) {
            last = end.value;
        }
        let v6 = self.net.written.v6;
        Some((Address { v6, value: first }, Address { v6, value: last }))
    }

    /// Whether whereabouts can hand out `address` from this range
    /// (`GetIPRange`, then the exclusions of `IterateForAssignment`).
    pub(crate) fn hands_out(&self, address: Address) -> bool {
        self.first_handed_out(std::slice::from_ref(&address))
            .is_some()
    }

    /// The first of `sorted` (ascending) that this range hands out: the
    /// candidates between its bounds, found by binary search, walked against
    /// the excluded blocks sorted by start, so that the cost is linear in
    /// both lists however many addresses and exclusions there are.
    pub(crate) fn first_handed_out(&self, sorted: &[Address]) -> Option<Address> {
        let (first, last) = self.bounds()?;
        let from = sorted.partition_point(|a| *a < first);
        let to = sorted.partition_point(|a| *a <= last);
        let mut excluded: Vec<(u128, u128)> = self
            .exclude
            .iter()
            .filter(|cidr| cidr.written.v6 == first.v6)
            .map(|cidr| (cidr.network(), cidr.broadcast()))
            .collect();
        excluded.sort_unstable();
        // The largest end of the blocks that start at or before a candidate.
        let (mut next, mut reach) = (0, None::<u128>);
        for &candidate in sorted.get(from..to).unwrap_or_default() {
            while let Some(&(start, end)) = excluded.get(next)
                && start <= candidate.value
            {
                reach = Some(reach.map_or(end, |r| r.max(end)));
                next += 1;
            }
            if reach.is_none_or(|end| end < candidate.value) {
                return Some(candidate);
            }
        }
        None
    }
}

/// A whereabouts IPAM configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Whereabouts {
    /// The ranges, the top-level one first.
    pub(crate) ranges: Vec<Range>,
    /// `gateway`, as written and parsed, which whereabouts does not keep
    /// out of its ranges.
    pub(crate) gateway: Option<(String, Address)>,
}

impl Whereabouts {
    /// Reads an IPAM object of `"type": "whereabouts"`; `None` for another
    /// type or a configuration whereabouts refuses.
    pub(crate) fn parse(ipam: &Json) -> Option<Whereabouts> {
        if ipam.get("type").and_then(Json::as_str) != Some("whereabouts") {
            return None;
        }
        fn text<'j>(block: &'j Json, key: &str) -> Option<&'j str> {
            block.get(key).and_then(Json::as_str)
        }
        let list = |block: &Json, key: &str| {
            block
                .get(key)
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let mut ranges = Vec::new();
        if let Some(range) = text(ipam, "range").filter(|r| !r.is_empty()) {
            ranges.push(Range::parse(
                range,
                text(ipam, "range_start"),
                text(ipam, "range_end"),
                &list(ipam, "exclude"),
            )?);
        }
        for block in list(ipam, "ipRanges") {
            ranges.push(Range::parse(
                text(&block, "range")?,
                text(&block, "range_start"),
                text(&block, "range_end"),
                &list(&block, "exclude"),
            )?);
        }
        let gateway = match text(ipam, "gateway").filter(|g| !g.is_empty()) {
            Some(gateway) => Some((
                gateway.trim().to_owned(),
                Address::of(gateway.trim().parse().ok()?),
            )),
            None => None,
        };
        Some(Whereabouts { ranges, gateway })
    }
}

/// The IPAM objects of a CNI configuration (or of an operator network's
/// `ipam`, which is the IPAM object itself): the object, its `ipam`, and the
/// `ipam` of each plugin of a list.
pub(crate) fn ipam_blocks(json: &Json) -> Vec<&Json> {
    let mut blocks = vec![json];
    blocks.extend(json.get("ipam"));
    if let Some(plugins) = json.get("plugins").and_then(Json::as_array) {
        blocks.extend(plugins.iter().filter_map(|plugin| plugin.get("ipam")));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Whereabouts {
        Whereabouts::parse(&serde_json::from_str(text).unwrap()).expect("valid")
    }

    /// Whether any range of the configuration hands out `address`.
    fn hands_out(config: &Whereabouts, address: Address) -> bool {
        config.ranges.iter().any(|range| range.hands_out(address))
    }

    fn ip(text: &str) -> Address {
        Address::of(text.parse().unwrap())
    }

    /// The cases of whereabouts' own `GetIPRange` and
    /// `IterateForAssignment` tests (`pkg/iphelpers/iphelpers_test.go`,
    /// `pkg/allocate/allocate_test.go`), on the question lint asks: is this
    /// address handed out?
    #[test]
    fn ranges_hand_out_what_whereabouts_hands_out() {
        let whole = config(r#"{"type":"whereabouts","range":"10.10.0.0/24"}"#);
        assert!(!hands_out(&whole, ip("10.10.0.0")), "network address");
        assert!(hands_out(&whole, ip("10.10.0.1")));
        assert!(hands_out(&whole, ip("10.10.0.10")));
        assert!(!hands_out(&whole, ip("10.10.0.255")), "broadcast");
        assert!(!hands_out(&whole, ip("10.10.1.1")));

        let started = config(
            r#"{"type":"whereabouts","range":"10.10.0.0/24","range_start":"10.10.0.100","range_end":"10.10.0.200"}"#,
        );
        assert!(!hands_out(&started, ip("10.10.0.10")));
        assert!(hands_out(&started, ip("10.10.0.100")));
        assert!(!hands_out(&started, ip("10.10.0.201")));

        // A start outside the usable range is ignored, not an error.
        let ignored =
            config(r#"{"type":"whereabouts","range":"10.10.0.0/24","range_start":"10.20.0.1"}"#);
        assert!(hands_out(&ignored, ip("10.10.0.10")));

        let dashed = config(r#"{"type":"whereabouts","range":"10.10.0.50-10.10.0.60/24"}"#);
        assert!(!hands_out(&dashed, ip("10.10.0.10")));
        assert!(hands_out(&dashed, ip("10.10.0.55")));
        assert!(!hands_out(&dashed, ip("10.10.0.61")));

        let excluded = config(
            r#"{"type":"whereabouts","range":"10.10.0.0/24","exclude":["10.10.0.0/28","10.10.0.20"]}"#,
        );
        assert!(!hands_out(&excluded, ip("10.10.0.10")));
        assert!(!hands_out(&excluded, ip("10.10.0.20")));
        assert!(hands_out(&excluded, ip("10.10.0.21")));

        let listed = config(
            r#"{"type":"whereabouts","ipRanges":[{"range":"fd00::/64","exclude":["fd00::1/128"]}]}"#,
        );
        assert!(!hands_out(&listed, ip("fd00::1")));
        assert!(hands_out(&listed, ip("fd00::2")));
        assert!(!hands_out(&listed, ip("10.10.0.2")), "another family");
    }

    #[test]
    fn configurations_whereabouts_refuses_are_none() {
        for text in [
            r#"{"type":"whereabouts","range":"10.10.0.0/33"}"#,
            r#"{"type":"whereabouts","range":"10.20.0.5-10.10.0.0/24"}"#,
            r#"{"type":"whereabouts","range":"10.10.0.0/24","exclude":["nonsense"]}"#,
            r#"{"type":"host-local","subnet":"10.10.0.0/24"}"#,
        ] {
            assert_eq!(
                Whereabouts::parse(&serde_json::from_str(text).unwrap()),
                None,
                "{text}"
            );
        }
    }
}
