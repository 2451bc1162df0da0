//! `/sys/class/infiniband/<dev>/ports/<p>/*` formats: port states
//! (`4: ACTIVE`), rates (`400 Gb/sec (4X NDR)`), GIDs and GID types.

use std::fmt;

/// Why an RDMA sysfs value could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RdmaParseError {
    /// Not `<number>: <name>`.
    #[error("expected `<number>: <name>`")]
    NotNumbered,
    /// The number and the name disagree (`4: LinkUp` for a physical state).
    #[error("code {code} is {expected}, not {found}")]
    Inconsistent {
        /// The number in the file.
        code: u8,
        /// The kernel's name for that number.
        expected: &'static str,
        /// The name in the file.
        found: String,
    },
    /// The number is not one the kernel defines.
    #[error("code {0} is not defined by the kernel")]
    UnknownCode(u8),
    /// A rate without a number of Gb/s.
    #[error("expected `<number> Gb/sec (...)`")]
    NotARate,
    /// A GID that is not eight groups of four hex digits.
    #[error("expected eight colon-separated groups of hex digits")]
    NotAGid,
}

/// The logical state of an RDMA port (`state`), as the kernel's
/// `ib_port_state` numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum PortState {
    /// 1: DOWN.
    Down,
    /// 2: INIT (link up, no subnet manager configured the port yet).
    Init,
    /// 3: ARMED.
    Armed,
    /// 4: ACTIVE.
    Active,
    /// 5: ACTIVE_DEFER.
    ActiveDefer,
}

/// Parses `N: NAME` against a table of codes, names and values: the number
/// decides, the name must agree with it.
fn numbered_in<T: Copy>(table: &[(u8, &'static str, T)], text: &str) -> Result<T, RdmaParseError> {
    let (code, name) = numbered(text)?;
    let (_, expected, value) = table
        .iter()
        .find(|(c, ..)| *c == code)
        .ok_or(RdmaParseError::UnknownCode(code))?;
    agree(code, expected, name)?;
    Ok(*value)
}

const PORT_STATES: [(u8, &str, PortState); 5] = [
    (1, "DOWN", PortState::Down),
    (2, "INIT", PortState::Init),
    (3, "ARMED", PortState::Armed),
    (4, "ACTIVE", PortState::Active),
    (5, "ACTIVE_DEFER", PortState::ActiveDefer),
];

impl PortState {
    /// Parses `4: ACTIVE`; the number decides, the name must agree with it.
    pub fn parse(text: &str) -> Result<PortState, RdmaParseError> {
        numbered_in(&PORT_STATES, text)
    }

    /// The kernel's text for this state (`4: ACTIVE`).
    pub fn as_str(self) -> &'static str {
        match self {
            PortState::Down => "1: DOWN",
            PortState::Init => "2: INIT",
            PortState::Armed => "3: ARMED",
            PortState::Active => "4: ACTIVE",
            PortState::ActiveDefer => "5: ACTIVE_DEFER",
        }
    }
}

/// The physical state of an RDMA port (`phys_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum PhysState {
    /// 1: Sleep.
    Sleep,
    /// 2: Polling (no cable, or nothing answers at the other end).
    Polling,
    /// 3: Disabled.
    Disabled,
    /// 4: PortConfigurationTraining.
    Training,
    /// 5: LinkUp.
    LinkUp,
    /// 6: LinkErrorRecovery.
    LinkErrorRecovery,
    /// 7: Phy Test.
    PhyTest,
}

const PHYS_STATES: [(u8, &str, PhysState); 7] = [
    (1, "Sleep", PhysState::Sleep),
    (2, "Polling", PhysState::Polling),
    (3, "Disabled", PhysState::Disabled),
    (4, "PortConfigurationTraining", PhysState::Training),
    (5, "LinkUp", PhysState::LinkUp),
    (6, "LinkErrorRecovery", PhysState::LinkErrorRecovery),
    (7, "Phy Test", PhysState::PhyTest),
];

impl PhysState {
    /// Parses `5: LinkUp`; the number decides, the name must agree with it.
    pub fn parse(text: &str) -> Result<PhysState, RdmaParseError> {
        numbered_in(&PHYS_STATES, text)
    }

    /// The kernel's text for this state (`5: LinkUp`).
    pub fn as_str(self) -> &'static str {
        match self {
            PhysState::Sleep => "1: Sleep",
            PhysState::Polling => "2: Polling",
            PhysState::Disabled => "3: Disabled",
            PhysState::Training => "4: PortConfigurationTraining",
            PhysState::LinkUp => "5: LinkUp",
            PhysState::LinkErrorRecovery => "6: LinkErrorRecovery",
            PhysState::PhyTest => "7: Phy Test",
        }
    }
}

fn numbered(text: &str) -> Result<(u8, &str), RdmaParseError> {
    let (code, name) = text
        .trim()
        .split_once(':')
        .ok_or(RdmaParseError::NotNumbered)?;
    let code = code
        .trim()
        .parse()
        .map_err(|_| RdmaParseError::NotNumbered)?;
    Ok((code, name.trim()))
}

/// Names compare without case and spaces: kernels wrote `Phy Test` and
/// `PhyTest` over the years.
fn agree(code: u8, expected: &'static str, found: &str) -> Result<(), RdmaParseError> {
    let squash = |s: &str| {
        s.chars()
            .filter(|c| !c.is_whitespace() && *c != '_')
            .collect::<String>()
            .to_ascii_lowercase()
    };
    if found.is_empty() || squash(found) == squash(expected) {
        Ok(())
    } else {
        Err(RdmaParseError::Inconsistent {
            code,
            expected,
            found: found.chars().take(40).collect(),
        })
    }
}

/// A port's signalling rate (`rate`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Rate {
    /// Gb/s.
    pub gbps: f64,
    /// The file's text, for messages (`400 Gb/sec (4X NDR)`).
    pub text: String,
}

impl Rate {
    /// Parses `400 Gb/sec (4X NDR)`, `2.5 Gb/sec (1X SDR)`, `10 Gb/sec (4X)`.
    pub fn parse(text: &str) -> Result<Rate, RdmaParseError> {
        let text = text.trim();
        let mut words = text.split_whitespace();
        let gbps: f64 = words
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or(RdmaParseError::NotARate)?;
        let unit = words.next().ok_or(RdmaParseError::NotARate)?;
        if !gbps.is_finite() || gbps < 0.0 || !unit.eq_ignore_ascii_case("Gb/sec") {
            return Err(RdmaParseError::NotARate);
        }
        Ok(Rate {
            gbps,
            text: text.to_owned(),
        })
    }
}

/// A port's link layer (`link_layer`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum LinkLayer {
    /// InfiniBand.
    InfiniBand,
    /// Ethernet: RoCE.
    Ethernet,
    /// Anything else the file says (`Unknown`, vendor strings).
    Other(String),
}

impl LinkLayer {
    /// Parses the file's text; never fails.
    pub fn parse(text: &str) -> LinkLayer {
        match text.trim() {
            t if t.eq_ignore_ascii_case("InfiniBand") => LinkLayer::InfiniBand,
            t if t.eq_ignore_ascii_case("Ethernet") => LinkLayer::Ethernet,
            t => LinkLayer::Other(t.chars().take(40).collect()),
        }
    }
}

impl fmt::Display for LinkLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkLayer::InfiniBand => f.write_str("InfiniBand"),
            LinkLayer::Ethernet => f.write_str("Ethernet"),
            LinkLayer::Other(text) => f.write_str(text),
        }
    }
}

/// A 128-bit GID, as eight 16-bit groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Gid(pub [u16; 8]);

impl Gid {
    /// Parses `fe80:0000:0000:0000:0002:c903:00f9:bfa1` (the kernel always
    /// writes eight groups of four digits).
    pub fn parse(text: &str) -> Result<Gid, RdmaParseError> {
        let mut groups = [0u16; 8];
        let mut count = 0;
        for part in text.trim().split(':') {
            if count == 8 || part.is_empty() || part.len() > 4 {
                return Err(RdmaParseError::NotAGid);
            }
            groups[count] = u16::from_str_radix(part, 16).map_err(|_| RdmaParseError::NotAGid)?;
            count += 1;
        }
        if count != 8 {
            return Err(RdmaParseError::NotAGid);
        }
        Ok(Gid(groups))
    }

    /// An unused table entry.
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|g| *g == 0)
    }

    /// `fe80::/10`: derived from the MAC, present without any IP address.
    pub fn is_link_local(&self) -> bool {
        self.0[0] & 0xffc0 == 0xfe80
    }

    /// `::ffff:a.b.c.d`: an IPv4 address, which RDMA-CM over IPv4 needs.
    pub fn ipv4(&self) -> Option<[u8; 4]> {
        let g = &self.0;
        (g[..5].iter().all(|x| *x == 0) && g[5] == 0xffff).then(|| {
            [
                (g[6] >> 8) as u8,
                (g[6] & 0xff) as u8,
                (g[7] >> 8) as u8,
                (g[7] & 0xff) as u8,
            ]
        })
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some([a, b, c, d]) = self.ipv4() {
            return write!(f, "::ffff:{a}.{b}.{c}.{d}");
        }
        let groups: Vec<String> = self.0.iter().map(|g| format!("{g:04x}")).collect();
        f.write_str(&groups.join(":"))
    }
}

/// The RoCE version of a GID entry (`gid_attrs/types/<i>`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum GidType {
    /// `IB/RoCE v1`: InfiniBand, or RoCE v1 (layer 2, not routable).
    RoceV1,
    /// `RoCE v2`: UDP/IP encapsulated, routable.
    RoceV2,
    /// Anything else.
    Other(String),
}

impl GidType {
    /// Parses the file's text; never fails.
    pub fn parse(text: &str) -> GidType {
        let squashed: String = text
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        if squashed.ends_with("rocev2") {
            GidType::RoceV2
        } else if squashed.ends_with("rocev1") {
            GidType::RoceV1
        } else {
            GidType::Other(text.trim().chars().take(40).collect())
        }
    }
}

/// Parses a RoCE mode as `rdma_cm`'s configfs writes it (`RoCE v2`,
/// `IB/RoCE v1`).
pub fn parse_roce_mode(text: &str) -> GidType {
    GidType::parse(text)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn states() {
        assert_eq!(PortState::parse("4: ACTIVE\n"), Ok(PortState::Active));
        assert_eq!(PortState::parse("1: DOWN"), Ok(PortState::Down));
        assert_eq!(PhysState::parse("5: LinkUp"), Ok(PhysState::LinkUp));
        assert_eq!(PhysState::parse("7: Phy Test"), Ok(PhysState::PhyTest));
        assert_eq!(PhysState::parse("3: Disabled"), Ok(PhysState::Disabled));
        assert!(matches!(
            PhysState::parse("4: ACTIVE"),
            Err(RdmaParseError::Inconsistent { code: 4, .. })
        ));
        assert_eq!(
            PortState::parse("9: WEIRD"),
            Err(RdmaParseError::UnknownCode(9))
        );
        assert_eq!(PortState::parse("ACTIVE"), Err(RdmaParseError::NotNumbered));
    }

    #[test]
    fn rates() {
        assert_eq!(Rate::parse("400 Gb/sec (4X NDR)").unwrap().gbps, 400.0);
        assert_eq!(Rate::parse("2.5 Gb/sec (1X SDR)").unwrap().gbps, 2.5);
        assert_eq!(Rate::parse("10 Gb/sec (4X)").unwrap().gbps, 10.0);
        assert_eq!(Rate::parse("fast"), Err(RdmaParseError::NotARate));
        assert_eq!(Rate::parse("NaN Gb/sec"), Err(RdmaParseError::NotARate));
        assert_eq!(Rate::parse("100 MB/sec"), Err(RdmaParseError::NotARate));
    }

    #[test]
    fn gids() {
        let gid = Gid::parse("0000:0000:0000:0000:0000:ffff:c0a8:d3f2").unwrap();
        assert_eq!(gid.ipv4(), Some([192, 168, 211, 242]));
        assert_eq!(gid.to_string(), "::ffff:192.168.211.242");
        let ll = Gid::parse("fe80:0000:0000:0000:0002:c903:00f9:bfa1").unwrap();
        assert!(ll.is_link_local() && !ll.is_zero() && ll.ipv4().is_none());
        assert!(
            Gid::parse("0000:0000:0000:0000:0000:0000:0000:0000")
                .unwrap()
                .is_zero()
        );
        assert_eq!(Gid::parse("fe80::1"), Err(RdmaParseError::NotAGid));
        assert_eq!(
            Gid::parse("1:2:3:4:5:6:7:8:9"),
            Err(RdmaParseError::NotAGid)
        );
        assert_eq!(GidType::parse("RoCE v2\n"), GidType::RoceV2);
        assert_eq!(GidType::parse("IB/RoCE v1"), GidType::RoceV1);
        assert_eq!(LinkLayer::parse("Ethernet\n"), LinkLayer::Ethernet);
    }

    proptest! {
        #[test]
        fn never_panic(text in "(?s).{0,80}") {
            let _ = PortState::parse(&text);
            let _ = PhysState::parse(&text);
            let _ = Rate::parse(&text);
            let _ = Gid::parse(&text);
            let _ = GidType::parse(&text);
            let _ = LinkLayer::parse(&text);
        }

        #[test]
        fn gids_round_trip(groups in proptest::array::uniform8(any::<u16>())) {
            let text: Vec<String> = groups.iter().map(|g| format!("{g:04x}")).collect();
            prop_assert_eq!(Gid::parse(&text.join(":")), Ok(Gid(groups)));
        }

        #[test]
        fn numbered_states(code in 0u8..12, name in "[A-Za-z_ ]{0,20}") {
            // Whatever the text, a parsed state has the code that was written.
            if let Ok(state) = PortState::parse(&format!("{code}: {name}")) {
                let prefix = format!("{code}:");
                prop_assert!(state.as_str().starts_with(&prefix));
            }
        }
    }
}
