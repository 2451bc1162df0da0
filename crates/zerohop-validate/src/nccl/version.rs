//! NCCL versions, and what the numbers in its GPUDirect RDMA distance
//! messages mean in each of them.

use std::fmt;

/// An NCCL release, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NcclVersion {
    /// Major version (2).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch level.
    pub patch: u32,
}

impl NcclVersion {
    /// A version from its parts.
    pub const fn new(major: u32, minor: u32, patch: u32) -> NcclVersion {
        NcclVersion {
            major,
            minor,
            patch,
        }
    }

    /// Parses `2.27.7`, also with a suffix (`2.22.3+cuda12.2`).
    pub fn parse(text: &str) -> Option<NcclVersion> {
        let core = text.split(|c: char| c == '+' || c.is_whitespace()).next()?;
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next()?.parse().ok()?;
        Some(NcclVersion::new(major, minor, patch))
    }

    /// Decodes `NCCL_VERSION_CODE` as nccl-tests prints it
    /// (`nccl-library=22807`): `major*10000 + minor*100 + patch` since 2.9,
    /// `major*1000 + minor*100 + patch` before (`src/nccl.h.in`).
    pub fn from_code(code: u32) -> Option<NcclVersion> {
        if code >= 20900 {
            Some(NcclVersion::new(code / 10000, code / 100 % 100, code % 100))
        } else if (2000..2900).contains(&code) {
            Some(NcclVersion::new(code / 1000, code / 100 % 10, code % 100))
        } else {
            None
        }
    }
}

impl fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The path types of NCCL's topology, by their number, as each release
/// numbers them (`PATH_*` in `src/graph/topo.h`, named by
/// `topoPathTypeStr` in `src/graph/topo.cc`). NCCL prints these numbers in
/// `GPU Direct RDMA Disabled for GPU … (distance D > L)`.
const PATH_TYPES: &[(NcclVersion, &[&str])] = &[
    (
        NcclVersion::new(2, 27, 5),
        &[
            "LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS",
        ],
    ),
    (
        NcclVersion::new(2, 27, 0),
        &[
            "LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS", "NET", "DIS",
        ],
    ),
    (
        NcclVersion::new(2, 26, 0),
        &[
            "LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS",
        ],
    ),
    (
        NcclVersion::new(2, 12, 0),
        &[
            "LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS",
        ],
    ),
    (
        NcclVersion::new(2, 8, 0),
        &["LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS"],
    ),
    (
        NcclVersion::new(2, 6, 0),
        &["LOC", "NVL", "PIX", "PXB", "PHB", "SYS", "NET"],
    ),
];

/// The name of path type number `number` in NCCL `version`, or `None` when
/// the version is unknown, older than 2.6, or has no such number.
pub fn path_type_name(version: Option<NcclVersion>, number: u32) -> Option<&'static str> {
    let version = version?;
    let (_, names) = PATH_TYPES.iter().find(|(since, _)| version >= *since)?;
    names.get(usize::try_from(number).ok()?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_banners_and_codes() {
        assert_eq!(
            NcclVersion::parse("2.22.3+cuda12.2"),
            Some(NcclVersion::new(2, 22, 3))
        );
        assert_eq!(NcclVersion::parse("2.27"), None);
        assert_eq!(
            NcclVersion::from_code(22807),
            Some(NcclVersion::new(2, 28, 7))
        );
        assert_eq!(
            NcclVersion::from_code(2708),
            Some(NcclVersion::new(2, 7, 8))
        );
        assert_eq!(NcclVersion::from_code(12), None);
        assert_eq!(NcclVersion::new(2, 9, 9).to_string(), "2.9.9");
    }

    #[test]
    fn distance_numbers_follow_the_release() {
        let v = |m, p| Some(NcclVersion::new(2, m, p));
        // PXB is 4 until C2C was inserted in 2.26, 5 after.
        assert_eq!(path_type_name(v(21, 5), 4), Some("PXB"));
        assert_eq!(path_type_name(v(26, 2), 4), Some("PIX"));
        assert_eq!(path_type_name(v(26, 2), 5), Some("PXB"));
        // 2.27.3 had PXN before P2C; 2.27.5 swapped them.
        assert_eq!(path_type_name(v(27, 3), 7), Some("P2C"));
        assert_eq!(path_type_name(v(27, 7), 7), Some("PXN"));
        assert_eq!(path_type_name(v(10, 3), 5), Some("PHB"));
        assert_eq!(path_type_name(v(5, 6), 3), None);
        assert_eq!(path_type_name(None, 3), None);
        assert_eq!(path_type_name(v(21, 5), 99), None);
    }
}
