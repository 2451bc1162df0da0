//! `/proc/<pid>/mountstats`: per-mount statistics, and for NFS the options
//! in effect and one `xprt:` line per RPC transport.
//!
//! Format (`fs/nfs/super.c` `nfs_show_stats`, `net/sunrpc/xprtsock.c` and
//! `net/sunrpc/xprtrdma/transport.c` `*_print_stats`):
//!
//! ```text
//! device srv:/export mounted on /mnt/data with fstype nfs statvers=1.1
//!         opts:   rw,vers=3,rsize=1048576,…,proto=rdma,nconnect=16,port=20049
//!         xprt:   rdma 0 0 5808 62 0 …
//! ```

use crate::parse::mountinfo::{Options, unescape};

/// The `statvers` values whose layout this parser knows.
pub const KNOWN_STATVERS: &[&str] = &["1.0", "1.1"];

/// One RPC transport of an NFS mount (`xprt:` line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Transport {
    /// `tcp`, `udp`, `rdma`, `tcp-tls`…
    pub protocol: String,
    /// The counters as written; their meaning depends on the protocol.
    pub counters: Vec<u64>,
    /// The line as read, for evidence.
    pub line: String,
}

/// The block of one mount.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MountStats {
    /// The mounted device (`server:/export`).
    pub device: String,
    /// The mount point, unescaped.
    pub mount_point: String,
    /// The file system type.
    pub fstype: String,
    /// `statvers=` of NFS blocks; `None` for other file systems.
    pub statvers: Option<String>,
    /// `opts:` in effect (NFS only).
    pub options: Option<Options>,
    /// The `opts:` line as read.
    pub options_line: Option<String>,
    /// The `RPC iostats version:` value.
    pub rpc_version: Option<String>,
    /// The `xprt:` lines.
    pub transports: Vec<Transport>,
    /// The `device … mounted on …` line as read.
    pub line: String,
}

impl MountStats {
    /// Whether this is an NFS mount (`nfs`, `nfs4`).
    pub fn is_nfs(&self) -> bool {
        self.fstype == "nfs" || self.fstype == "nfs4"
    }

    /// Whether the block's `statvers` is one this parser knows.
    pub fn known_version(&self) -> bool {
        self.statvers
            .as_deref()
            .is_some_and(|v| KNOWN_STATVERS.contains(&v))
    }

    /// The transports of `protocol`.
    pub fn transports_of(&self, protocol: &str) -> usize {
        self.transports
            .iter()
            .filter(|t| t.protocol == protocol)
            .count()
    }
}

/// Parses a mountstats file. Blocks start at `device … mounted on … with
/// fstype …` lines; lines before the first block or that fit nothing are
/// skipped.
pub fn parse_mountstats(text: &str) -> Vec<MountStats> {
    let mut mounts: Vec<MountStats> = Vec::new();
    for line in text.lines() {
        if let Some(header) = header(line) {
            mounts.push(header);
            continue;
        }
        let Some(current) = mounts.last_mut() else {
            continue;
        };
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("opts:") {
            current.options = Some(Options::parse(rest.trim()));
            current.options_line = Some(trimmed.to_owned());
        } else if let Some(rest) = trimmed.strip_prefix("xprt:") {
            let mut fields = rest.split_whitespace();
            if let Some(protocol) = fields.next() {
                current.transports.push(Transport {
                    protocol: protocol.to_owned(),
                    counters: fields.map_while(|f| f.parse().ok()).collect(),
                    line: trimmed.to_owned(),
                });
            }
        } else if let Some(rest) = trimmed.strip_prefix("RPC iostats version:") {
            current.rpc_version = rest.split_whitespace().next().map(str::to_owned);
        }
    }
    mounts
}

fn header(line: &str) -> Option<MountStats> {
    let rest = line.strip_prefix("device ")?;
    let (device, rest) = rest.split_once(" mounted on ")?;
    let (mount_point, rest) = rest.rsplit_once(" with fstype ")?;
    let mut fields = rest.split_whitespace();
    let fstype = fields.next()?.to_owned();
    let statvers = fields
        .find_map(|f| f.strip_prefix("statvers="))
        .map(str::to_owned);
    Some(MountStats {
        device: unescape(device),
        mount_point: unescape(mount_point),
        fstype,
        statvers,
        line: line.trim().to_owned(),
        ..MountStats::default()
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const TEXT: &str = "device rootfs mounted on / with fstype rootfs\n\
        device srv:/ex mounted on /mnt/my\\040data with fstype nfs statvers=1.1\n\
        \topts:\trw,vers=3,rsize=1048576,proto=rdma,nconnect=2,port=20049\n\
        \tRPC iostats version: 1.1  p/v: 100003/3 (nfs)\n\
        \txprt:\trdma 0 0 5808 62\n\
        \txprt:\trdma 0 0 14094 145\n\
        \tper-op statistics\n\
        \t        NULL: 0 0 0 0 0 0 0 0\n\
        device srv:/b mounted on /b with fstype nfs4 statvers=9.9\n\
        \txprt:\ttcp 832 0 1\n";

    #[test]
    fn blocks_options_and_transports() {
        let mounts = parse_mountstats(TEXT);
        assert_eq!(mounts.len(), 3);
        assert!(!mounts[0].is_nfs());
        let nfs = &mounts[1];
        assert_eq!(nfs.mount_point, "/mnt/my data");
        assert_eq!(nfs.statvers.as_deref(), Some("1.1"));
        assert!(nfs.known_version());
        assert_eq!(nfs.options.as_ref().unwrap().get("nconnect"), Some("2"));
        assert_eq!(nfs.rpc_version.as_deref(), Some("1.1"));
        assert_eq!(nfs.transports_of("rdma"), 2);
        assert_eq!(nfs.transports[0].counters, vec![0, 0, 5808, 62]);
        assert!(!mounts[2].known_version());
        assert_eq!(mounts[2].transports_of("tcp"), 1);
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,400}") {
            let _ = parse_mountstats(&text);
        }

        #[test]
        fn never_panics_on_shuffled_real_lines(lines in proptest::collection::vec(proptest::sample::select(TEXT.lines().collect::<Vec<_>>()), 0..20)) {
            let _ = parse_mountstats(&lines.join("\n"));
        }
    }
}
