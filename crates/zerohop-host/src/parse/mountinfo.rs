//! Mount tables: `/proc/self/mountinfo`, `/proc/mounts` and `/etc/fstab`.
//!
//! The kernel escapes space, tab, newline and backslash in paths as
//! three-digit octal (`\040`, `\011`, `\012`, `\134`); [`unescape`] undoes
//! that, so mount points compare equal to the paths users type.

/// Mount options in the order written: `rw,proto=rdma,hard`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Options(pub Vec<(String, Option<String>)>);

impl Options {
    /// Parses a comma-separated option list. Empty items are skipped.
    pub fn parse(text: &str) -> Options {
        Options(
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| match item.split_once('=') {
                    Some((key, value)) => (key.to_owned(), Some(value.to_owned())),
                    None => (item.to_owned(), None),
                })
                .collect(),
        )
    }

    /// The value of `key`; the last one wins when repeated, as in the kernel.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Whether the flag `key` (without a value) is present.
    pub fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, v)| k == key && v.is_none())
    }

    /// The value of `key` as a number.
    pub fn number(&self, key: &str) -> Option<u64> {
        self.get(key)?.parse().ok()
    }

    /// `key=value` (or `key`) as written, for evidence.
    pub fn show(&self, key: &str) -> Option<String> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
    }

    /// Appends the options of `other` (later options win in [`Options::get`]).
    pub fn extend(&mut self, other: &Options) {
        self.0.extend(other.0.iter().cloned());
    }
}

/// One mounted file system.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MountEntry {
    /// `major:minor` of the device (mountinfo only).
    pub device_number: Option<String>,
    /// The mounted path, unescaped.
    pub mount_point: String,
    /// The file system type (`nfs4`, `xfs`); a `fuse.` subtype is kept.
    pub fstype: String,
    /// The source: `server:/export`, `/dev/nvme0n1p1`, `tmpfs`; unescaped.
    pub source: String,
    /// Per-mount and per-super-block options together.
    pub options: Options,
    /// The line as read, for evidence.
    pub line: String,
}

impl MountEntry {
    /// Whether it is an NFS mount (`nfs`, `nfs4`).
    pub fn is_nfs(&self) -> bool {
        self.fstype == "nfs" || self.fstype == "nfs4"
    }

    /// Whether its options ask for RDMA: `proto=rdma`, or the `rdma` flag
    /// that nfs(5) documents as its synonym.
    pub fn asks_for_rdma(&self) -> bool {
        self.options.has("rdma") || self.options.get("proto") == Some("rdma")
    }
}

/// Undoes the kernel's octal escapes (`\040` is a space). A backslash not
/// followed by three octal digits is kept as it is.
pub fn unescape(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'\\'
            && let Some(value) = bytes.get(index + 1..index + 4).and_then(octal)
        {
            out.push(value);
            index += 4;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn octal(digits: &[u8]) -> Option<u8> {
    digits
        .iter()
        .try_fold(0u16, |acc, d| match d {
            b'0'..=b'7' => Some(acc * 8 + u16::from(d - b'0')),
            _ => None,
        })
        .and_then(|value| u8::try_from(value).ok())
}

/// Parses `/proc/<pid>/mountinfo`:
/// `id parent major:minor root mount-point mount-options [optional…] - fstype source super-options`.
/// Lines that do not fit are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines().filter_map(mountinfo_line).collect()
}

fn mountinfo_line(line: &str) -> Option<MountEntry> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let separator = fields.iter().position(|field| *field == "-")?;
    if separator < 6 || fields.len() < separator + 3 {
        return None;
    }
    let mut options = Options::parse(fields[5]);
    if let Some(super_options) = fields.get(separator + 3) {
        options.extend(&Options::parse(super_options));
    }
    Some(MountEntry {
        device_number: Some(fields[2].to_owned()),
        mount_point: unescape(fields[4]),
        fstype: fields[separator + 1].to_owned(),
        source: unescape(fields[separator + 2]),
        options,
        line: line.trim().to_owned(),
    })
}

/// Parses the fstab format shared by `/proc/mounts` and `/etc/fstab`:
/// `source mount-point fstype options [dump pass]`. Comments, blank lines
/// and lines with fewer than four fields are skipped.
pub fn parse_fstab(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let source = fields.next()?;
            let mount_point = fields.next()?;
            let fstype = fields.next()?;
            let options = fields.next()?;
            Some(MountEntry {
                device_number: None,
                mount_point: unescape(mount_point),
                fstype: fstype.to_owned(),
                source: unescape(source),
                options: Options::parse(options),
                line: line.trim().to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn mountinfo_with_escapes_and_optional_fields() {
        let text = "36 35 98:0 /mnt1 /mnt/my\\040data rw,noatime master:1 shared:2 - nfs4 srv:/ex\\134port rw,proto=rdma,port=20049\n\
                    1 1 0:5 /  /root rw,nosuid shared:8 - rootfs rootfs rw\n\
                    garbage line\n";
        let mounts = parse_mountinfo(text);
        assert_eq!(mounts.len(), 2);
        let nfs = &mounts[0];
        assert_eq!(nfs.mount_point, "/mnt/my data");
        assert_eq!(nfs.source, "srv:/ex\\port");
        assert_eq!(nfs.fstype, "nfs4");
        assert_eq!(nfs.device_number.as_deref(), Some("98:0"));
        assert_eq!(nfs.options.get("proto"), Some("rdma"));
        assert!(nfs.options.has("noatime"));
        assert_eq!(nfs.options.number("port"), Some(20049));
        assert_eq!(mounts[1].mount_point, "/root");
    }

    #[test]
    fn fstab_skips_comments_and_short_lines() {
        let text =
            "# comment\nsrv:/data /mnt/data\\040x nfs rdma,port=20049,_netdev 0 0\n\n/dev/sda1 /\n";
        let mounts = parse_fstab(text);
        assert_eq!(mounts.len(), 1);
        assert_eq!(mounts[0].mount_point, "/mnt/data x");
        assert!(mounts[0].options.has("rdma"));
    }

    #[test]
    fn unescape_keeps_what_is_not_an_escape() {
        assert_eq!(unescape("a\\040b\\011c"), "a b\tc");
        assert_eq!(unescape("a\\9xy\\"), "a\\9xy\\");
        assert_eq!(unescape("\\777"), "\\777");
    }

    #[test]
    fn last_option_wins() {
        let options = Options::parse("proto=tcp,,proto=rdma,hard");
        assert_eq!(options.get("proto"), Some("rdma"));
        assert_eq!(options.show("hard").as_deref(), Some("hard"));
        assert_eq!(options.show("proto").as_deref(), Some("proto=rdma"));
        assert!(!options.has("proto"));
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,400}") {
            let _ = parse_mountinfo(&text);
            let _ = parse_fstab(&text);
            let _ = unescape(&text);
        }

        #[test]
        fn escaped_paths_round_trip(path in "/[a-z \\t\\\\]{0,30}") {
            let escaped = path.replace('\\', "\\134").replace(' ', "\\040").replace('\t', "\\011");
            let line = format!("1 0 8:1 / {escaped} rw - ext4 /dev/sda1 rw");
            let mounts = parse_mountinfo(&line);
            prop_assert_eq!(mounts.len(), 1);
            prop_assert_eq!(&mounts[0].mount_point, &path);
        }
    }
}
