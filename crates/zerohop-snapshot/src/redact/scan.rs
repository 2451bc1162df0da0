//! Finding identifiers in bytes and writing them back pseudonymised.
//!
//! One scanner serves both passes: the first only adds addresses to the
//! sets renumbered and numbers the counted identifiers in order of first
//! appearance; the second rewrites. Identifiers are ASCII, so the bytes
//! are scanned as they are, UTF-8 or not, and every other byte is copied.
//!
//! A token starts after a byte that cannot be part of a word and is
//! classified by its whole run, so that a GID is never read as a GUID and
//! a MAC in it, and a dotted version (`5.8-1.0.1.1`, `16.35.2000`) is not
//! an IPv4 address. Runs longer than any identifier are skipped whole:
//! hostile input costs one pass.

use std::net::{Ipv4Addr, Ipv6Addr};

use zerohop_host::parse::rdma::Gid;

use super::pseudonym::{Maps, hex_colons};

/// Which pass the scanner is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Collecting: addresses into the sets, counted identifiers numbered.
    Collect,
    /// Writing every identifier as its pseudonym.
    Rewrite,
}

/// What to look for in one text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scope {
    /// Dotted IPv4 and compressed IPv6 addresses, and host names: in files
    /// that carry addresses in prose (mount tables, the kernel command line,
    /// `cufile.json`, the kernel log), never in sysfs values, where a
    /// dotted number is a version.
    pub(crate) prose: bool,
}

/// The longest run that may still be one identifier (an IPv6 address with
/// a dotted tail is 45 bytes, an InfiniBand hardware address 59).
const MAX_TOKEN: usize = 64;

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.'
}

fn is_hex_colon(byte: u8) -> bool {
    byte.is_ascii_hexdigit() || byte == b':'
}

/// Hex groups of exactly `digits` digits separated by `:`, `count` of them.
fn groups(token: &[u8], count: usize, digits: usize) -> Option<Vec<u16>> {
    let parts: Vec<&[u8]> = token.split(|b| *b == b':').collect();
    if parts.len() != count || parts.iter().any(|p| p.len() != digits) {
        return None;
    }
    parts
        .iter()
        .map(|p| u16::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

/// Whether `text` is written in uppercase hex, so that a pseudonym is
/// written the same way.
fn upper(token: &[u8]) -> bool {
    token.iter().any(u8::is_ascii_uppercase)
}

fn cased(text: String, upper: bool) -> String {
    if upper {
        text.to_ascii_uppercase()
    } else {
        text
    }
}

/// A dotted quad: four decimal octets without leading zeros.
pub(crate) fn dotted_ipv4(token: &[u8]) -> Option<Ipv4Addr> {
    let parts: Vec<&[u8]> = token.split(|b| *b == b'.').collect();
    if parts.len() != 4
        || parts
            .iter()
            .any(|p| p.is_empty() || p.len() > 3 || (p.len() > 1 && p[0] == b'0'))
    {
        return None;
    }
    std::str::from_utf8(token).ok()?.parse().ok()
}

/// A UUID `8-4-4-4-12` in hex.
fn is_uuid(token: &[u8]) -> bool {
    token.len() == 36
        && token.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

impl Maps {
    /// Scans `text`: in [`Pass::Rewrite`], the text with every identifier
    /// replaced, `None` when nothing was.
    pub(crate) fn scan(&mut self, text: &[u8], scope: Scope, pass: Pass) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(text.len());
        let mut changed = false;
        let mut i = 0;
        while i < text.len() {
            let prev = i.checked_sub(1).map(|p| text[p]);
            let start = prev.is_none_or(|b| !is_word(b) && b != b'-');
            let hex = start && prev != Some(b':');
            if start && let Some((len, replacement)) = self.token(&text[i..], scope, pass, hex) {
                match replacement {
                    Some(new) if new.as_bytes() != &text[i..i + len] => {
                        out.extend_from_slice(new.as_bytes());
                        changed = true;
                    }
                    _ => out.extend_from_slice(&text[i..i + len]),
                }
                i += len;
                continue;
            }
            // Skip the rest of a word at once.
            let end = text[i..]
                .iter()
                .position(|b| !is_word(*b))
                .map_or(text.len(), |n| i + n.max(1));
            out.extend_from_slice(&text[i..end]);
            i = end;
        }
        (changed && pass == Pass::Rewrite).then_some(out)
    }

    /// The identifier at the start of `text`: its length and, rewriting,
    /// its pseudonym. `hex` says whether a token of hex digits and colons
    /// may start here (not right after a colon, inside one).
    fn token(
        &mut self,
        text: &[u8],
        scope: Scope,
        pass: Pass,
        hex: bool,
    ) -> Option<(usize, Option<String>)> {
        for prefix in [b"GPU-", b"MIG-"] {
            if text.starts_with(prefix)
                && text.len() >= 40
                && is_uuid(&text[4..40])
                && text.get(40).is_none_or(|b| !is_word(*b) && *b != b'-')
            {
                let uuid = std::str::from_utf8(&text[4..40]).ok()?;
                let mapped = self.uuid(uuid);
                let prefix = std::str::from_utf8(prefix).ok()?;
                return Some((
                    40,
                    Some(format!("{prefix}{}", cased(mapped, upper(&text[4..40])))),
                ));
            }
        }
        if text.starts_with(b"nqn.") {
            let len = text
                .iter()
                .position(|b| b.is_ascii_whitespace() || b"\"',;)]}".contains(b))
                .unwrap_or(text.len());
            let nqn = std::str::from_utf8(&text[..len]).ok()?;
            return Some((len, Some(self.nqn(nqn))));
        }
        let run = text
            .iter()
            .take(MAX_TOKEN + 1)
            .take_while(|b| is_hex_colon(**b))
            .count();
        if run > MAX_TOKEN {
            return None;
        }
        if hex
            && run > 0
            && let Some(found) = self.hex_token(text, run, scope, pass)
        {
            return Some(found);
        }
        if scope.prose {
            let run = text
                .iter()
                .take(MAX_TOKEN)
                .take_while(|b| b.is_ascii_digit() || **b == b'.')
                .count();
            let mut token = &text[..run];
            if token.ends_with(b".") {
                token = &token[..token.len() - 1];
            }
            let after = text.get(token.len());
            let ends = after.is_none_or(|b| {
                !(b.is_ascii_alphanumeric() || *b == b'_' || (*b == b'.' && token.len() < run))
            });
            if ends && let Some(addr) = dotted_ipv4(token) {
                return Some((
                    token.len(),
                    self.address_v4(addr, pass).map(|a| a.to_string()),
                ));
            }
        }
        None
    }

    /// A token of hex digits and colons (`run` bytes, an IPv6 address
    /// perhaps with a dotted tail): a MAC, an InfiniBand hardware address,
    /// a GID, a GUID, or in prose an IPv6 address.
    fn hex_token(
        &mut self,
        text: &[u8],
        run: usize,
        scope: Scope,
        pass: Pass,
    ) -> Option<(usize, Option<String>)> {
        let token = &text[..run];
        let next = text.get(run).copied();
        // A token must end where a word would: not in letters, `_` or `-`,
        // nor in a dot that continues it.
        let ends = |len: usize| {
            text.get(len).is_none_or(|b| {
                !(b.is_ascii_alphanumeric()
                    || *b == b'_'
                    || *b == b'-'
                    || (*b == b'.' && text.get(len + 1).is_some_and(u8::is_ascii_alphanumeric)))
            })
        };
        let up = upper(token);
        if next != Some(b'.') && ends(run) {
            if let Some(bytes) = groups(token, 6, 2) {
                let mac: Vec<u8> = bytes.iter().map(|b| *b as u8).collect();
                let mapped = self.mac(mac.try_into().ok()?);
                return Some((run, Some(cased(hex_colons(&mapped, 1), up))));
            }
            if let Some(bytes) = groups(token, 20, 2) {
                // An InfiniBand netdev's address: flags and QPN, then the
                // port's GID.
                let bytes: Vec<u8> = bytes.iter().map(|b| *b as u8).collect();
                let gid: [u8; 16] = bytes[4..].try_into().ok()?;
                let mapped = self.address_v6(Ipv6Addr::from(gid), pass)?;
                let mut all = bytes[..4].to_vec();
                all.extend_from_slice(&mapped.octets());
                return Some((run, Some(cased(hex_colons(&all, 1), up))));
            }
            if groups(token, 8, 4).is_some() {
                let gid = Gid::parse(std::str::from_utf8(token).ok()?).ok()?;
                if gid.is_zero() {
                    return Some((run, None));
                }
                let mut octets = [0u8; 16];
                for (i, group) in gid.0.iter().enumerate() {
                    octets[2 * i..2 * i + 2].copy_from_slice(&group.to_be_bytes());
                }
                let mapped = self.address_v6(Ipv6Addr::from(octets), pass)?;
                return Some((run, Some(cased(hex_colons(&mapped.octets(), 2), up))));
            }
            if let Some(parts) = groups(token, 4, 4) {
                let guid = parts.iter().fold(0u64, |acc, p| acc << 16 | u64::from(*p));
                let mapped = self.guid(guid);
                return Some((run, Some(cased(hex_colons(&mapped.to_be_bytes(), 2), up))));
            }
        }
        if !scope.prose {
            return None;
        }
        // An IPv6 address in prose, perhaps `::ffff:a.b.c.d`.
        let mut len = run;
        if next == Some(b'.') {
            len += text[run..]
                .iter()
                .take(MAX_TOKEN)
                .take_while(|b| b.is_ascii_digit() || **b == b'.')
                .count();
        }
        while len > 0 && text[len - 1] == b':' && !text[..len].ends_with(b"::") {
            len -= 1;
        }
        let token = &text[..len];
        let colons = token.iter().filter(|b| **b == b':').count();
        if colons < 2 || !ends(len) {
            return None;
        }
        let addr: Ipv6Addr = std::str::from_utf8(token).ok()?.parse().ok()?;
        let mapped = self.address_v6(addr, pass)?;
        Some((len, Some(cased(mapped.to_string(), upper(token)))))
    }

    fn address_v4(&mut self, addr: Ipv4Addr, pass: Pass) -> Option<Ipv4Addr> {
        match pass {
            Pass::Collect => {
                self.add_ipv4(addr);
                None
            }
            Pass::Rewrite => Some(self.ipv4(addr)),
        }
    }

    fn address_v6(&mut self, addr: Ipv6Addr, pass: Pass) -> Option<Ipv6Addr> {
        match pass {
            Pass::Collect => {
                self.add_ipv6(addr);
                self.number_ipv6(addr);
                None
            }
            Pass::Rewrite => Some(self.ipv6(addr)),
        }
    }

    /// The pseudonym of an NVMe Qualified Name: the discovery NQN is kept;
    /// others become `nqn.2014-08.org.nvmexpress:uuid:<uuid>`, the UUID of
    /// a UUID-form NQN mapped like the same UUID elsewhere (`hostid`).
    pub(crate) fn nqn(&mut self, nqn: &str) -> String {
        const PREFIX: &str = "nqn.2014-08.org.nvmexpress:uuid:";
        if nqn == "nqn.2014-08.org.nvmexpress.discovery" {
            return nqn.to_owned();
        }
        let key = nqn
            .strip_prefix(PREFIX)
            .filter(|uuid| is_uuid(uuid.as_bytes()))
            .unwrap_or(nqn);
        let mapped = format!("{PREFIX}{}", self.uuid(key));
        self.seen
            .entry(("nqn", nqn.to_owned()))
            .or_insert_with(|| mapped.clone());
        mapped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSFS: Scope = Scope { prose: false };
    const PROSE: Scope = Scope { prose: true };

    fn redact(texts: &[(&str, Scope)]) -> Vec<String> {
        let mut maps = Maps::default();
        for (text, scope) in texts {
            assert!(maps.scan(text.as_bytes(), *scope, Pass::Collect).is_none());
        }
        maps.seal();
        texts
            .iter()
            .map(|(text, scope)| {
                let out = maps.scan(text.as_bytes(), *scope, Pass::Rewrite);
                out.map_or_else(|| (*text).to_owned(), |b| String::from_utf8(b).unwrap())
            })
            .collect()
    }

    #[test]
    fn a_gid_is_one_token_and_its_ipv4_agrees_with_prose() {
        let out = redact(&[
            ("0000:0000:0000:0000:0000:ffff:c0a8:6401\n", SYSFS),
            ("fe80:0000:0000:0000:0c42:a103:0065:8a5e\n", SYSFS),
            ("0c42:a103:0065:8a5e\n", SYSFS),
            (
                "ip=192.168.100.1::192.168.100.254:255.255.255.0:node7:eth0:off\n",
                PROSE,
            ),
            ("0000:0000:0000:0000:0000:0000:0000:0000\n", SYSFS),
        ]);
        // 192.168.100.1 is c0a8:6401; the /16 and the last octet stay, the
        // lone /24 becomes the first one that is not its own.
        assert_eq!(out[0], "0000:0000:0000:0000:0000:ffff:c0a8:8001\n");
        assert_eq!(
            out[3],
            "ip=192.168.128.1::192.168.128.254:255.255.255.0:node7:eth0:off\n"
        );
        // The IB GID's interface identifier is the port GUID: both agree.
        assert_eq!(out[1], "fe80:0000:0000:0000:0c42:a100:0000:0001\n");
        assert_eq!(out[2], "0c42:a100:0000:0001\n");
        assert_eq!(out[4], "0000:0000:0000:0000:0000:0000:0000:0000\n");
    }

    #[test]
    fn versions_and_pci_addresses_are_not_addresses() {
        let texts = [
            ("16.35.2000\n", PROSE),
            ("MLNX_OFED_LINUX-5.8-1.0.1.1\n", PROSE),
            ("0000:3b:00.0\n", PROSE),
            ("GDS release 1.7.2.11.3 here\n", PROSE),
            ("rw,relatime 259:0 0:22 12:34:56\n", PROSE),
            ("10.0.0.1 in sysfs is a version\n", SYSFS),
        ];
        let out = redact(&texts);
        for ((text, _), out) in texts.iter().zip(&out) {
            assert_eq!(text, out);
        }
    }

    #[test]
    fn prose_addresses_macs_and_nqns_are_rewritten() {
        let out = redact(&[
            ("b8:3f:d2:11:22:33\n", SYSFS),
            (
                "10.1.2.3:/export /mnt nfs4 rw,addr=10.1.2.3,clientaddr=10.1.9.9 0 0\n",
                PROSE,
            ),
            ("traddr=fd12:3456::1,trsvcid=4420\n", PROSE),
            (
                "nqn.2014-08.org.nvmexpress:uuid:4c4c4544-0031-3510-8033-b4c04f4e3332\n",
                SYSFS,
            ),
            ("4c4c4544-0031-3510-8033-B4C04F4E3332\n", SYSFS),
            ("nqn.2014-08.org.nvmexpress.discovery\n", SYSFS),
            (
                "GPU UUID: GPU-8f0e3c5a-1f2b-3c4d-5e6f-a1b2c3d4e5f6\n",
                SYSFS,
            ),
        ]);
        assert_eq!(out[0], "b8:3f:d2:00:00:01\n");
        assert_eq!(
            out[1],
            "10.128.0.3:/export /mnt nfs4 rw,addr=10.128.0.3,clientaddr=10.128.8.9 0 0\n"
        );
        assert_eq!(out[2], "traddr=fd12:8000::1,trsvcid=4420\n");
        assert_eq!(
            out[3],
            "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001\n"
        );
        // A bare UUID is not looked for in text; `hostid` is read whole.
        assert_eq!(out[4], "4c4c4544-0031-3510-8033-B4C04F4E3332\n");
        assert_eq!(out[5], "nqn.2014-08.org.nvmexpress.discovery\n");
        assert_eq!(
            out[6],
            "GPU UUID: GPU-00000000-0000-4000-8000-000000000002\n"
        );
    }

    #[test]
    fn an_infiniband_hardware_address_carries_its_gid() {
        let out = redact(&[
            (
                "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:65:8a:5e\n",
                SYSFS,
            ),
            ("0c42:a103:0065:8a5e\n", SYSFS),
        ]);
        assert_eq!(
            out[0],
            "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:00:00:00:00:01\n"
        );
        assert_eq!(out[1], "0c42:a100:0000:0001\n");
    }

    #[test]
    fn hostile_runs_are_skipped_whole() {
        let text = "a:".repeat(100_000) + &"1.".repeat(100_000);
        let out = redact(&[(&text, PROSE)]);
        assert_eq!(out[0], text);
    }
}
