//! systemd unit names for paths (`systemd-escape --path`, the rules of
//! `unit_name_path_escape()` in systemd's `src/basic/unit-name.c`).

/// The escaped form of a path, as `systemd-escape --path` prints it:
/// slashes trimmed and collapsed, inner `/` → `-`, and every byte other
/// than ASCII alphanumerics, `:`, `_` and a non-leading `.` written as
/// `\xNN`. The root is `-`.
pub fn escape_path(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() {
        return "-".to_owned();
    }
    let joined = parts.join("/");
    let mut out = String::with_capacity(joined.len());
    for (index, byte) in joined.bytes().enumerate() {
        match byte {
            b'/' => out.push('-'),
            b'.' if index > 0 => out.push('.'),
            b if b.is_ascii_alphanumeric() || b == b':' || b == b'_' => out.push(char::from(b)),
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The name of the `.mount` unit for a mount point.
pub fn mount_unit_name(mount_point: &str) -> String {
    format!("{}.mount", escape_path(mount_point))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn matches_systemd_escape_path() {
        // Expected values are what `systemd-escape --path` prints.
        assert_eq!(mount_unit_name("/mnt/ai-data"), r"mnt-ai\x2ddata.mount");
        assert_eq!(escape_path("/"), "-");
        assert_eq!(escape_path("//mnt//data/"), "mnt-data");
        assert_eq!(escape_path("/mnt/.hidden"), r"mnt-.hidden");
        assert_eq!(escape_path("/.x"), r"\x2ex");
        assert_eq!(escape_path("/mnt/a b"), r"mnt-a\x20b");
        assert_eq!(escape_path("/mnt/dätä"), r"mnt-d\xc3\xa4t\xc3\xa4");
        assert_eq!(escape_path("/data/x_y:z"), "data-x_y:z");
    }

    proptest! {
        #[test]
        fn escaped_names_use_only_unit_name_characters(path in "\\PC{0,40}") {
            let name = escape_path(&path);
            prop_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b":_.\\-".contains(&b)));
        }
    }
}
