//! The output of `mount` (`SRC on DIR type FSTYPE (OPTIONS)`) and lines of
//! `/proc/mounts`, as captured when checking how a data set is mounted.
//! The entries and their options are the host layer's
//! ([`zerohop_host::parse::mountinfo`]).

use zerohop_host::parse::mountinfo::{MountEntry, Options, parse_fstab, unescape};

use crate::notes::Notes;
use crate::text::{excerpt, lines};

/// The most mounts kept.
pub const MAX_MOUNTS: usize = 4096;

/// The mounts of a capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mounts {
    /// Each mount with its line.
    pub entries: Vec<(u32, MountEntry)>,
    /// What could not be read.
    pub notes: Notes,
}

/// Reads `mount` output or `/proc/mounts` lines.
pub fn parse(text: &str) -> Mounts {
    let mut out = Mounts::default();
    for line in lines(text) {
        let trimmed = line.text.trim();
        if trimmed.is_empty() {
            continue;
        }
        let entry = mount_line(trimmed).or_else(|| parse_fstab(trimmed).pop());
        match entry {
            Some(entry) if out.entries.len() < MAX_MOUNTS => out.entries.push((line.number, entry)),
            Some(_) => {}
            None => out.notes.push(
                line.number,
                format!("unreadable mount `{}`", excerpt(trimmed)),
            ),
        }
    }
    out
}

/// `192.168.10.101:/export on /mnt type nfs4 (rw,relatime,proto=rdma)`.
fn mount_line(text: &str) -> Option<MountEntry> {
    let (source, rest) = text.split_once(" on ")?;
    let (mount_point, rest) = rest.rsplit_once(" type ")?;
    let (fstype, options) = rest.split_once(' ')?;
    let options = options.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(MountEntry {
        device_number: None,
        mount_point: unescape(mount_point),
        fstype: fstype.to_owned(),
        source: unescape(source),
        options: Options::parse(options),
        line: text.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn mount_output_and_proc_mounts_are_read() {
        let mounts = parse(
            "10.0.0.1:/data on /mnt/my data type nfs4 (rw,vers=4.1,proto=rdma,port=20049)\n\
             srv:/x /mnt/x nfs rw,proto=tcp 0 0\n\
             nonsense\n",
        );
        assert_eq!(mounts.entries.len(), 2);
        let (line, nfs) = &mounts.entries[0];
        assert_eq!(*line, 1);
        assert_eq!(nfs.mount_point, "/mnt/my data");
        assert_eq!(nfs.fstype, "nfs4");
        assert_eq!(nfs.options.get("proto"), Some("rdma"));
        assert_eq!(mounts.entries[1].1.options.get("proto"), Some("tcp"));
        assert_eq!(mounts.notes.total(), 1);
    }

    proptest! {
        #[test]
        fn no_input_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&text);
        }
    }
}
