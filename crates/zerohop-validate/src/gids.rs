//! `show_gids` (MLNX_OFED's script): every GID of every RDMA port, with its
//! RoCE version, IPv4 address and netdev.

use crate::notes::Notes;
use crate::text::{excerpt, lines};

/// The most GIDs kept.
pub const MAX_GIDS: usize = 4096;

/// What `show_gids` printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShowGids {
    /// The GID table rows, in order.
    pub gids: Vec<GidEntry>,
    /// `n_gids_found=N`.
    pub found: Option<u32>,
    /// What could not be read.
    pub notes: Notes,
}

/// One row: `mlx5_3  1  3  0000:…:ffff:c0a8:0a02  192.168.10.2  v2  net1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GidEntry {
    /// Its line.
    pub line: u32,
    /// The RDMA device.
    pub device: String,
    /// The port.
    pub port: u32,
    /// The GID index (what `NCCL_IB_GID_INDEX` and perftest's `-x` take).
    pub index: u32,
    /// The GID.
    pub gid: String,
    /// The IPv4 address, for IPv4-mapped GIDs.
    pub ipv4: Option<String>,
    /// `v1` or `v2` (RoCE version); empty on InfiniBand.
    pub version: String,
    /// The netdev.
    pub netdev: Option<String>,
}

/// Reads `show_gids` output.
pub fn parse(text: &str) -> ShowGids {
    let mut out = ShowGids::default();
    for line in lines(text) {
        let number = line.number;
        let trimmed = line.text.trim();
        if trimmed.is_empty() || trimmed.starts_with("DEV") || trimmed.starts_with("---") {
            continue;
        }
        if let Some(count) = trimmed.strip_prefix("n_gids_found=") {
            out.found = count.trim().parse().ok();
            continue;
        }
        match entry(number, trimmed) {
            Some(entry) if out.gids.len() < MAX_GIDS => out.gids.push(entry),
            Some(_) => {}
            None => out
                .notes
                .push(number, format!("unreadable gid row `{}`", excerpt(trimmed))),
        }
    }
    out
}

fn entry(number: u32, text: &str) -> Option<GidEntry> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if !(4..=7).contains(&words.len()) || !words[3].contains(':') {
        return None;
    }
    let rest = &words[4..];
    let ipv4 = rest
        .iter()
        .find(|w| w.split('.').count() == 4 && w.split('.').all(|p| p.parse::<u8>().is_ok()))
        .map(|w| (*w).to_owned());
    let version = rest
        .iter()
        .find(|w| matches!(**w, "v1" | "v2"))
        .map_or_else(String::new, |w| (*w).to_owned());
    let netdev = rest
        .last()
        .filter(|w| Some(**w) != ipv4.as_deref() && **w != version)
        .map(|w| (*w).to_owned());
    Some(GidEntry {
        line: number,
        device: words[0].to_owned(),
        port: words[1].parse().ok()?,
        index: words[2].parse().ok()?,
        gid: words[3].to_owned(),
        ipv4,
        version,
        netdev,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn rows_with_and_without_an_address_are_read() {
        let gids = parse(
            "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV
---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---
mlx5_3\t1\t0\tfe80:0000:0000:0000:0cb0:10ff:fe34:0aad\t\t\tv1\tnet1
mlx5_3\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0a02\t192.168.10.2  \tv2\tnet1
n_gids_found=2
",
        );
        assert!(gids.notes.is_empty());
        assert_eq!(gids.found, Some(2));
        assert_eq!(gids.gids[0].ipv4, None);
        assert_eq!(gids.gids[0].version, "v1");
        assert_eq!(gids.gids[0].netdev.as_deref(), Some("net1"));
        assert_eq!(gids.gids[1].index, 3);
        assert_eq!(gids.gids[1].ipv4.as_deref(), Some("192.168.10.2"));
        assert_eq!(gids.gids[1].version, "v2");
    }

    proptest! {
        #[test]
        fn no_input_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&text);
        }
    }
}
