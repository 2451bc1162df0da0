//! Redacting a snapshot (`zerohop snapshot --redact`): every identifier of
//! the host replaced by a pseudonym, the same one wherever it appears, so
//! that the doctor on the redacted snapshot judges as on the original.
//!
//! What is replaced, in every file's content, in path names, directory
//! listings and link targets, and in the manifest's host name and root:
//!
//! * host names: the host's own (`/proc/sys/kernel/hostname`, short and
//!   full) and NFS servers named in mount sources (`server:/export`),
//!   where prose carries them, as `host<n>` (`host<n>.invalid` when
//!   dotted);
//! * IPv4 and IPv6 addresses, also inside RoCE GIDs, InfiniBand hardware
//!   addresses and `/proc/net/route` and `/proc/net/if_inet6`, renumbered
//!   so that every subnet holds the same addresses after as before (see
//!   [`pseudonym::Compressor`]);
//! * MAC addresses, InfiniBand GUIDs, GPU UUIDs, NVMe Qualified Names and
//!   host IDs, serial numbers, numbered in order of first appearance; a
//!   serial number a sysfs file gives is replaced wherever prose repeats it
//!   (the kernel log, an NVMe drive's NQN), and serials after `SerialNumber:`
//!   or `serial=` too;
//! * the host's full name wherever its short name starts a dotted name
//!   (`ip=` on the kernel command line, the kernel log), and other hosts
//!   named where the kernel and audit write host names (the host-name field
//!   of `ip=`, `nfs: server NAME`, audit's `hostname=`);
//! * user names: audit's user fields (`acct=`, and `UID=`, `AUID=` … of the
//!   enriched format) and the directory under `/home/` a path names, as
//!   `user<n>`; the comments of `cufile.json` are blanked (spaces, so lines
//!   and columns stay), since people write their names in them.
//!
//! What is kept, because it identifies no host and checks judge it:
//! loopback, unspecified, multicast, broadcast and reserved addresses
//! (netmasks among them), documentation networks, the zero and broadcast
//! MACs and GUIDs, the vendor part (OUI) of MACs and GUIDs, the class of
//! an address (private, link-local, public block), the last octet of an
//! IPv4 address, the NVMe discovery NQN.
//!
//! Files are read in sorted path order twice: first to collect every
//! address (the renumbering depends on the whole set) and number the
//! rest, then to rewrite. No randomness is involved, so the same host
//! gives the same archive. The report is the doctor's on the redacted
//! tree, so that the report in the archive is the one `doctor --snapshot`
//! gives.

mod people;
mod pseudonym;
mod scan;

use std::net::{Ipv4Addr, Ipv6Addr};

use zerohop_doctor::{Profile, Selection};
use zerohop_host::memory::{Content, Listing, MemoryTree, Node, TreeError};
use zerohop_host::parse::jsonc::strip_comments;
use zerohop_host::parse::netaddr::hex_ipv4;
use zerohop_host::{Facts, HostRoot};

use pseudonym::Maps;
pub use pseudonym::Pseudonym;
use scan::{Pass, Scope};

use crate::snapshot::{Meta, Snapshot, report_json};

/// A redacted snapshot and the pseudonyms it uses.
#[derive(Debug, Clone)]
pub struct Redacted {
    /// The snapshot with every identifier replaced; its report is the
    /// doctor's on the redacted tree.
    pub snapshot: Snapshot,
    /// Every identifier replaced and its pseudonym, sorted by kind and
    /// original. Never written into the archive.
    pub map: Vec<Pseudonym>,
}

/// Why a snapshot could not be redacted.
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    /// Two paths became one, or a rewritten path is not valid.
    #[error("redacting the paths of the snapshot failed: {0}")]
    Tree(#[from] TreeError),
}

/// Files whose whole value is a serial number: NVMe controllers
/// (`/sys/class/nvme/<ctrl>/serial`), DMI (`/sys/class/dmi/id/*_serial`).
const SERIAL_FILES: [&str; 4] = ["serial", "product_serial", "board_serial", "chassis_serial"];

/// Files whose whole value is an NQN (`/sys/class/nvme-subsystem/*/subsysnqn`,
/// `/etc/nvme/hostnqn`, `/sys/class/nvme/<ctrl>/hostnqn`); NQNs may hold
/// spaces (a PCIe drive's has its model), so the whole value is one.
const NQN_FILES: [&str; 2] = ["subsysnqn", "hostnqn"];

/// Files whose whole value is a host's UUID (`/etc/nvme/hostid`,
/// `/sys/class/nvme/<ctrl>/hostid`).
const UUID_FILES: [&str; 1] = ["hostid"];

/// The `/proc/net/route` file, whose addresses are little-endian hex.
const ROUTE: &str = "/proc/net/route";

/// The `/proc/net/if_inet6` file, whose addresses are 32 hex digits.
const IF_INET6: &str = "/proc/net/if_inet6";

/// The file whose comments are blanked: `cufile.json`, where people note
/// who tuned what; no check reads a comment, and [`strip_comments`] keeps
/// every line and column, so findings cite the same places.
const COMMENTED: &str = "cufile.json";

/// The shortest serial number replaced wherever it appears in prose:
/// shorter values (`0`, `1234`) are not unique enough to be one.
const MIN_SERIAL_IN_PROSE: usize = 6;

/// Host names that name no host.
const KEPT_HOSTS: [&str; 3] = ["localhost", "localhost.localdomain", "(none)"];

/// How a file's content is redacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The whole trimmed value is a serial number.
    Serial,
    /// The whole trimmed value is an NQN.
    Nqn,
    /// The whole trimmed value is a UUID.
    Uuid,
    /// `/proc/net/route`.
    Route,
    /// `/proc/net/if_inet6`.
    IfInet6,
    /// Identifiers wherever they are.
    Text(Scope),
}

fn kind_of(path: &str) -> Kind {
    let name = path.rsplit('/').next().unwrap_or_default();
    if SERIAL_FILES.contains(&name) {
        Kind::Serial
    } else if NQN_FILES.contains(&name) {
        Kind::Nqn
    } else if UUID_FILES.contains(&name) {
        Kind::Uuid
    } else if path == ROUTE {
        Kind::Route
    } else if path == IF_INET6 {
        Kind::IfInet6
    } else {
        // Sysfs values and driver reports hold versions (`16.35.2000`,
        // `1.7.2.11`) that look like addresses; an NVMe controller's
        // `address` (`traddr=…`) and configfs hold addresses.
        let values = (path.starts_with("/sys/") || path.starts_with("/proc/driver/"))
            && name != "address"
            && !path.starts_with("/sys/kernel/config/");
        Kind::Text(Scope { prose: !values })
    }
}

/// The path-name scope: identifiers of fixed shape only.
const NAMES: Scope = Scope { prose: false };

/// The manifest's fields: prose.
const PROSE: Kind = Kind::Text(Scope { prose: true });

/// Redacts `snapshot`. See the module documentation for what is replaced
/// and what is kept.
pub fn redact(snapshot: &Snapshot) -> Result<Redacted, RedactError> {
    let mut redactor = Redactor::new(snapshot.meta.hostname.as_deref());
    redactor.walk(snapshot, Pass::Collect)?;
    redactor.maps.seal();
    redactor.name_hosts();
    let tree = redactor.walk(snapshot, Pass::Rewrite)?;
    let meta = Meta {
        hostname: snapshot
            .meta
            .hostname
            .as_deref()
            .map(|name| redactor.text(name.as_bytes(), PROSE, Pass::Rewrite))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        root: String::from_utf8_lossy(&redactor.text(
            snapshot.meta.root.as_bytes(),
            PROSE,
            Pass::Rewrite,
        ))
        .into_owned(),
        ..snapshot.meta.clone()
    };
    let root = HostRoot::in_memory(tree.clone(), meta.root.clone());
    let facts = Facts::collect(&root);
    let report = zerohop_doctor::run(&facts, &Profile::default(), &Selection::all());
    let map = redactor
        .maps
        .seen
        .into_iter()
        .filter(|((_, original), pseudonym)| original != pseudonym)
        .map(|((kind, original), pseudonym)| Pseudonym {
            kind,
            original,
            pseudonym,
        })
        .collect();
    Ok(Redacted {
        snapshot: Snapshot {
            meta,
            report: report_json(&report),
            tree,
        },
        map,
    })
}

/// The maps and the host names, across both passes.
struct Redactor {
    maps: Maps,
    /// Host names met, each with the name its number is kept under, in
    /// order of first appearance.
    hosts: Vec<(String, String)>,
    /// Host names and their pseudonyms, longest first, once numbered.
    host_names: Vec<(String, String)>,
}

impl Redactor {
    fn new(hostname: Option<&str>) -> Redactor {
        let mut redactor = Redactor {
            maps: Maps::default(),
            hosts: Vec::new(),
            host_names: Vec::new(),
        };
        if let Some(name) = hostname.map(str::trim) {
            let short = name.split('.').next().unwrap_or(name);
            redactor.add_host(name, short);
            redactor.add_host(short, short);
        }
        redactor
    }

    fn add_host(&mut self, name: &str, key: &str) {
        let kept = KEPT_HOSTS.iter().any(|k| k.eq_ignore_ascii_case(name));
        if name.len() < 2 || kept || self.hosts.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return;
        }
        self.hosts.push((name.to_owned(), key.to_owned()));
    }

    /// Numbers the host names met, in order.
    fn name_hosts(&mut self) {
        for (name, key) in &self.hosts {
            let pseudonym = self.maps.host(name, key);
            self.host_names.push((name.to_ascii_lowercase(), pseudonym));
        }
        self.host_names
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    }

    /// One pass over the tree in path order; rewriting, the new tree.
    fn walk(&mut self, snapshot: &Snapshot, pass: Pass) -> Result<MemoryTree, TreeError> {
        let mut tree = MemoryTree::new();
        tree.set_process_view(snapshot.tree.process_view());
        for (path, node) in snapshot.tree.nodes() {
            let new_path = self.path(path, pass);
            let new_node = match node {
                Node::File(Content::Read(bytes)) => {
                    let kind = kind_of(path);
                    let blanked = path
                        .rsplit('/')
                        .next()
                        .is_some_and(|name| name == COMMENTED)
                        .then(|| std::str::from_utf8(bytes).ok())
                        .flatten()
                        .and_then(|text| strip_comments(text).ok());
                    let bytes = blanked.as_ref().map_or(&bytes[..], |text| text.as_bytes());
                    Node::File(Content::Read(self.text(bytes, kind, pass).into()))
                }
                Node::Dir(Listing::Names(names)) => Node::Dir(Listing::Names(
                    names.iter().map(|name| self.name(name, pass)).collect(),
                )),
                Node::Link(target) => Node::Link(self.path(target, pass)),
                other => other.clone(),
            };
            if pass == Pass::Rewrite {
                tree.set_skipped(&new_path, snapshot.tree.skipped(path));
                tree.insert(&new_path, new_node)?;
            }
        }
        if pass == Pass::Collect {
            self.text(snapshot.meta.root.as_bytes(), PROSE, pass);
        }
        Ok(tree)
    }

    fn name(&mut self, name: &str, pass: Pass) -> String {
        match self.maps.scan(name.as_bytes(), NAMES, pass) {
            Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            None => name.to_owned(),
        }
    }

    fn path(&mut self, path: &str, pass: Pass) -> String {
        path.split('/')
            .map(|part| self.name(part, pass))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// A file's content (or a manifest field), redacted when rewriting.
    fn text(&mut self, bytes: &[u8], kind: Kind, pass: Pass) -> Vec<u8> {
        let rewritten = match kind {
            Kind::Serial | Kind::Nqn | Kind::Uuid => self.whole(bytes, kind),
            Kind::Route => self.route(bytes, pass),
            Kind::IfInet6 => self.if_inet6(bytes, pass),
            Kind::Text(scope) => {
                if scope.prose && pass == Pass::Collect {
                    self.collect_servers(bytes);
                    self.collect_hosts(bytes);
                }
                let scanned = self.maps.scan(bytes, scope, pass);
                if scope.prose && pass == Pass::Rewrite {
                    let text = scanned.as_deref().unwrap_or(bytes);
                    let hosts = self.replace_hosts(text);
                    let text = hosts.as_deref().unwrap_or(text);
                    self.replace_people(text).or(hosts).or(scanned)
                } else {
                    scanned
                }
            }
        };
        rewritten.unwrap_or_else(|| bytes.to_vec())
    }

    /// A file whose trimmed value is one identifier.
    fn whole(&mut self, bytes: &[u8], kind: Kind) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(bytes).ok()?;
        let value = text.trim();
        if value.is_empty() {
            return None;
        }
        let start = text.len() - text.trim_start().len();
        let mapped = match kind {
            Kind::Serial => self.maps.serial(value),
            Kind::Nqn => self.maps.nqn(value),
            _ => self.maps.uuid(value),
        };
        Some(format!("{}{mapped}{}", &text[..start], &text[start + value.len()..]).into_bytes())
    }

    /// `/proc/net/route`: the destination and gateway columns.
    fn route(&mut self, bytes: &[u8], pass: Pass) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(bytes).ok()?;
        self.fields(text, &[1, 2], |maps, field| {
            let addr = hex_ipv4(field)?;
            maps.add_ipv4(addr);
            (pass == Pass::Rewrite).then(|| {
                let mapped = maps.ipv4(addr);
                format!("{:08X}", u32::from(mapped).swap_bytes())
            })
        })
    }

    /// `/proc/net/if_inet6`: the address column.
    fn if_inet6(&mut self, bytes: &[u8], pass: Pass) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(bytes).ok()?;
        self.fields(text, &[0], |maps, field| {
            if field.len() != 32 {
                return None;
            }
            let addr = Ipv6Addr::from(u128::from_str_radix(field, 16).ok()?);
            maps.add_ipv6(addr);
            maps.number_ipv6(addr);
            (pass == Pass::Rewrite).then(|| format!("{:032x}", u128::from(maps.ipv6(addr))))
        })
    }

    /// `text` with the whitespace-separated fields `columns` of each line
    /// replaced by what `map` makes of them.
    fn fields(
        &mut self,
        text: &str,
        columns: &[usize],
        mut map: impl FnMut(&mut Maps, &str) -> Option<String>,
    ) -> Option<Vec<u8>> {
        let mut out = String::with_capacity(text.len());
        let mut changed = false;
        for line in text.split_inclusive('\n') {
            let mut column = 0;
            let mut rest = line;
            while !rest.is_empty() {
                let space = rest.len() - rest.trim_start().len();
                out.push_str(&rest[..space]);
                rest = &rest[space..];
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                let field = &rest[..end];
                match columns
                    .contains(&column)
                    .then(|| map(&mut self.maps, field))
                    .flatten()
                {
                    Some(new) => {
                        changed |= new != field;
                        out.push_str(&new);
                    }
                    None => out.push_str(field),
                }
                rest = &rest[end..];
                column += 1;
            }
        }
        changed.then(|| out.into_bytes())
    }

    /// NFS servers named by host name in mount sources (`server:/export`).
    fn collect_servers(&mut self, bytes: &[u8]) {
        for (start, end) in host_tokens(bytes) {
            if bytes[end..].starts_with(b":/") && !bytes[end..].starts_with(b"://") {
                let name = String::from_utf8_lossy(&bytes[start..end]).into_owned();
                let numeric = name.parse::<Ipv4Addr>().is_ok();
                if !numeric && name.bytes().any(|b| b.is_ascii_alphabetic()) {
                    self.add_host(&name, &name);
                }
            }
        }
    }

    /// Other hosts named where the kernel and audit write host names, and
    /// the full names of hosts met by their short name
    /// (`gpu-node-17.corp.example` when `/proc/sys/kernel/hostname` says
    /// `gpu-node-17`), numbered as that host.
    fn collect_hosts(&mut self, bytes: &[u8]) {
        for name in people::hosts(bytes) {
            let short = name.split('.').next().unwrap_or(&name).to_owned();
            let key = self
                .hosts
                .iter()
                .find(|(known, _)| known.eq_ignore_ascii_case(&short))
                .map_or(name.clone(), |(_, key)| key.clone());
            self.add_host(&name, &key);
        }
        for (start, end) in host_tokens(bytes) {
            let token = String::from_utf8_lossy(&bytes[start..end]);
            let Some((first, _)) = token.split_once('.') else {
                continue;
            };
            let key = self
                .hosts
                .iter()
                .find(|(known, key)| known == key && known.eq_ignore_ascii_case(first))
                .map(|(_, key)| key.clone());
            if let Some(key) = key {
                self.add_host(&token, &key);
            }
        }
    }

    /// `bytes` with user names and serial numbers replaced where they are
    /// written: audit's user fields, `/home/NAME`, the serial fields of the
    /// kernel log, and every serial number a sysfs file gave.
    fn replace_people(&mut self, bytes: &[u8]) -> Option<Vec<u8>> {
        let mut spans: Vec<(usize, usize, String)> = Vec::new();
        for (start, end) in people::users(bytes) {
            let name = String::from_utf8_lossy(&bytes[start..end]).into_owned();
            spans.push((start, end, self.maps.user(&name)));
        }
        for (start, end) in people::serials(bytes) {
            let serial = String::from_utf8_lossy(&bytes[start..end]).into_owned();
            spans.push((start, end, self.maps.serial(&serial)));
        }
        for (serial, pseudonym) in self.maps.serials() {
            let serial = serial.trim();
            if serial.len() < MIN_SERIAL_IN_PROSE {
                continue;
            }
            let mut from = 0;
            while let Some(found) = bytes[from..]
                .windows(serial.len())
                .position(|w| w == serial.as_bytes())
            {
                let start = from + found;
                spans.push((start, start + serial.len(), pseudonym.trim().to_owned()));
                from = start + serial.len();
            }
        }
        if spans.is_empty() {
            return None;
        }
        spans.sort_by_key(|(start, end, _)| (*start, std::cmp::Reverse(*end)));
        let mut out = Vec::with_capacity(bytes.len());
        let mut last = 0;
        for (start, end, pseudonym) in spans {
            if start < last {
                continue;
            }
            out.extend_from_slice(&bytes[last..start]);
            out.extend_from_slice(pseudonym.as_bytes());
            last = end;
        }
        out.extend_from_slice(&bytes[last..]);
        Some(out)
    }

    /// `bytes` with every host name met replaced.
    fn replace_hosts(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if self.host_names.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut last = 0;
        for (start, end) in host_tokens(bytes) {
            let token = String::from_utf8_lossy(&bytes[start..end]).to_ascii_lowercase();
            if let Some((_, pseudonym)) = self.host_names.iter().find(|(name, _)| *name == token) {
                out.extend_from_slice(&bytes[last..start]);
                out.extend_from_slice(pseudonym.as_bytes());
                last = end;
            }
        }
        (last > 0).then(|| {
            out.extend_from_slice(&bytes[last..]);
            out
        })
    }
}

/// The spans of what may be a host name: runs of letters, digits, `-`,
/// `_` and `.`, without trailing dots.
fn host_tokens(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.';
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !is_name(bytes[i]) {
            i += 1;
        }
        if i == bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && is_name(bytes[i]) {
            i += 1;
        }
        let mut end = i;
        while end > start && bytes[end - 1] == b'.' {
            end -= 1;
        }
        Some((start, end))
    })
}
