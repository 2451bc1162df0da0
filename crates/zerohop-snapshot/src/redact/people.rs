//! Names the kernel, the audit system and configuration files write at
//! known places: other hosts, users and serial numbers in prose, found by
//! the key in front of them rather than by their shape (a user or host
//! name has none).

/// User names that name nobody: the superuser, and audit's placeholders
/// for an unset or unknown user.
const KEPT_USERS: [&str; 5] = ["root", "?", "unset", "(none)", "(unknown)"];

/// Audit record fields whose value is a user or group name: `acct=` of
/// PAM records, and the names of the enriched format (`auditd.conf`
/// `log_format = ENRICHED` appends `UID="alice" AUID="alice"`; the fields
/// are listed in linux-audit/audit-documentation `specs/fields/field-dictionary.csv`).
const USER_KEYS: [&str; 12] = [
    "acct", "UID", "AUID", "EUID", "SUID", "FSUID", "OUID", "GID", "EGID", "SGID", "FSGID", "OGID",
];

/// Fields whose value is a serial number: the USB core's `SerialNumber:`
/// (`drivers/usb/core/hub.c`, `announce_device`) and `serial=`.
const SERIAL_KEYS: [&str; 2] = ["SerialNumber:", "serial="];

/// Whether `byte` may stand before a key: the start of a field (a
/// `/dev/kmsg` record's message starts after its `;`).
fn boundary(byte: Option<&u8>) -> bool {
    byte.is_none_or(|b| b.is_ascii_whitespace() || matches!(b, b'\'' | b'"' | b'(' | b',' | b';'))
}

/// The spans of the values after `key` in `text` (quoted values without
/// their quotes), where `key` starts a field.
fn values<'a>(text: &'a [u8], key: &'a str) -> impl Iterator<Item = (usize, usize)> + 'a {
    let mut from = 0;
    std::iter::from_fn(move || {
        loop {
            let found = text[from..]
                .windows(key.len())
                .position(|w| w == key.as_bytes())?;
            let at = from + found;
            from = at + key.len();
            if !boundary(at.checked_sub(1).and_then(|i| text.get(i))) {
                continue;
            }
            let mut start = from;
            while text.get(start) == Some(&b' ') {
                start += 1;
            }
            let quoted = text.get(start) == Some(&b'"');
            if quoted {
                start += 1;
            }
            let mut end = start;
            while let Some(&b) = text.get(end) {
                let stop = if quoted {
                    b == b'"' || b == b'\n'
                } else {
                    b.is_ascii_whitespace() || matches!(b, b'\'' | b'"' | b',' | b';' | b')')
                };
                if stop {
                    break;
                }
                end += 1;
            }
            from = end;
            if end > start {
                return Some((start, end));
            }
        }
    })
}

/// The spans of user names: audit's user fields, and the directory under
/// `/home/` a path names.
pub(crate) fn users(text: &[u8]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = USER_KEYS
        .iter()
        .flat_map(|key| values(text, &format!("{key}=")).collect::<Vec<_>>())
        .filter(|(start, end)| {
            let value = &text[*start..*end];
            !value.iter().all(u8::is_ascii_digit)
                && !KEPT_USERS.iter().any(|k| k.as_bytes() == value)
        })
        .collect();
    let home = b"/home/";
    let mut from = 0;
    while let Some(found) = text[from..].windows(home.len()).position(|w| w == home) {
        let start = from + found + home.len();
        let mut end = start;
        while text
            .get(end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            end += 1;
        }
        if end > start {
            spans.push((start, end));
        }
        from = end.max(start);
    }
    spans.sort_unstable();
    spans.dedup();
    spans
}

/// The spans of serial numbers after their keys.
pub(crate) fn serials(text: &[u8]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = SERIAL_KEYS
        .iter()
        .flat_map(|key| values(text, key).collect::<Vec<_>>())
        .collect();
    spans.sort_unstable();
    spans
}

/// Names of other hosts at the places the kernel and audit write them: the
/// host-name field of `ip=` on the kernel command line
/// (`client:server:gateway:netmask:hostname:device:autoconf`, the kernel's
/// `Documentation/admin-guide/nfs/nfsroot.rst`), the server of `nfs: server
/// NAME not responding` (`fs/nfs/client.c`, `fs/nfs/write.c`), audit's
/// `hostname=`. Addresses are left to the address scanner.
pub(crate) fn hosts(text: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    for (start, end) in values(text, "ip=") {
        if let Some(name) = text[start..end].split(|b| *b == b':').nth(4) {
            names.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    for key in ["nfs: server ", "hostname="] {
        for (start, end) in values(text, key) {
            names.push(String::from_utf8_lossy(&text[start..end]).into_owned());
        }
    }
    names.retain(|name| {
        name.parse::<std::net::IpAddr>().is_err()
            && name.bytes().any(|b| b.is_ascii_alphabetic())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    });
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str, spans: &[(usize, usize)]) -> Vec<String> {
        spans.iter().map(|(s, e)| text[*s..*e].to_owned()).collect()
    }

    #[test]
    fn audit_users_and_home_directories_are_found() {
        let text = "audit: type=1101 audit(1.2:3): pid=9 uid=0 auid=1000 ses=1 msg='op=PAM:accounting acct=\"alice\" exe=\"/usr/bin/sudo\" hostname=jump-01.corp.example addr=? res=success' UID=\"root\" AUID=\"bob\"\n\"dir\": \"/home/carol/gds-logs\"\n";
        assert_eq!(
            shown(text, &users(text.as_bytes())),
            ["alice", "bob", "carol"]
        );
        assert_eq!(hosts(text.as_bytes()), ["jump-01.corp.example"]);
    }

    #[test]
    fn kernel_log_hosts_and_serials_are_found() {
        let text = "ip=10.0.0.7::10.0.0.1:255.255.255.0:gpu-node-17.corp.example:eth0:off\n3,1026,4051280,-;nfs: server nas-02.corp.example not responding, still trying\nnfs: server 10.0.0.9 OK\nusb 1-1: SerialNumber: 0123ABCD4567\n";
        assert_eq!(
            hosts(text.as_bytes()),
            ["gpu-node-17.corp.example", "nas-02.corp.example"]
        );
        assert_eq!(shown(text, &serials(text.as_bytes())), ["0123ABCD4567"]);
    }

    #[test]
    fn a_key_inside_a_word_is_not_a_field() {
        let text = "myacct=alice shortserial=X unquoted_UID=bob";
        assert!(users(text.as_bytes()).is_empty());
        assert!(serials(text.as_bytes()).is_empty());
    }
}
