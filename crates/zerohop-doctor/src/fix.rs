//! How the checks write the commands and snippets of their fixes.
//!
//! A fix interpolates what the host holds: mount points and sources, device,
//! netdev and driver names, sysfs paths, file paths. A host tree is input
//! like any other (a capture from elsewhere, a mount point named
//! `/mnt/data;$(touch /tmp/p)`), and users paste fixes into a root shell,
//! so every interpolated word goes through [`quote`] (or [`join`]), even
//! where its grammar makes quoting a no-op today. Lines in another format
//! use that format's escaping, each rule written once: `/etc/fstab` fields
//! through [`fstab_field`].

use std::fmt::Write as _;

pub(crate) use zerohop_known::shell::{join, quote};

/// A field of an `/etc/fstab` line: a space, a backslash and every control
/// character written as octal escapes of its bytes (`\040`, `\134`,
/// `\012`, `\033`), so a field stays one field and the line one line, with
/// no control character left to reach a terminal. util-linux's libmount
/// (`mount(8)`, systemd's fstab generator) reads every such escape back;
/// `getmntent(3)` reads the space, tab, newline and backslash ones.
pub(crate) fn fstab_field(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    for c in field.chars() {
        if c == ' ' || c == '\\' || c.is_control() {
            let mut bytes = [0u8; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(out, "\\{byte:03o}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `echo VALUE > PATH`, both quoted: the way sysfs and procfs settings are
/// written.
pub(crate) fn write_to(value: &str, path: &str) -> String {
    format!("echo {} > {}", quote(value), quote(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fstab_fields_keep_their_separators_escaped() {
        assert_eq!(fstab_field("/mnt/ai-data"), "/mnt/ai-data");
        assert_eq!(
            fstab_field("/mnt/my data\tx\ny\\z\u{1b}]0;t\u{7}"),
            "/mnt/my\\040data\\011x\\012y\\134z\\033]0;t\\007"
        );
    }

    #[test]
    fn writes_quote_both_sides() {
        assert_eq!(write_to("1", "/sys/x"), "echo 1 > /sys/x");
        assert_eq!(
            write_to("1", "/sys/class/net/a;b/x"),
            "echo 1 > '/sys/class/net/a;b/x'"
        );
    }
}
