//! The Node Feature Discovery features file: the capability labels, written
//! atomically into `features.d`, with an expiry, and removed when the agent
//! stops.
//!
//! NFD's worker reads every file in the directory (ignoring dot files) on
//! each re-discovery and makes each `name=value` line a node label; the
//! `# +expiry-time` directive makes it drop labels an agent stopped
//! refreshing. NFD owns the labels: the agent never patches the Node's
//! metadata.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;

use zerohop_known::zerohop_api::LABEL_PREFIX;

use crate::capabilities::{Capability, State};

/// The file's name in `features.d`.
pub const FILE_NAME: &str = "zerohop";

/// The name the file is written under before the rename; NFD skips dot
/// files, so a half-written file is never read.
const TEMP_NAME: &str = ".zerohop.tmp";

/// NFD ignores a features file larger than this (`MaxFeatureFileSize`).
pub const NFD_MAX_BYTES: usize = 65536;

/// The file's text: a header, the expiry directive, one label per
/// capability that applies.
pub fn render(node: &str, states: &[(&Capability, State)], expires: Timestamp) -> String {
    let mut text = String::new();
    // The node name comes from the downward API; a name with a line break
    // would end the comment and start a bogus label line.
    let node: String = node.chars().filter(|c| !c.is_control()).collect();
    text.push_str(&format!(
        "# zerohop agent on {node}: data path capabilities; removed when the agent stops\n"
    ));
    text.push_str(&format!(
        "# +expiry-time={}\n",
        expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    ));
    for (capability, state) in states {
        text.push_str(&format!("{LABEL_PREFIX}{}={state}\n", capability.name));
    }
    text
}

/// Writes `text` as `dir/zerohop`: to a dot file first, synced, then
/// renamed over the old file, so NFD sees the old file or the new one,
/// never a part. Links are not followed: the temporary is created with
/// `O_CREAT | O_EXCL`, which fails on anything already at the path (a
/// link, a FIFO) instead of opening it, and the rename replaces a link at
/// the final name rather than writing through it.
pub fn write(dir: &Path, text: &str) -> io::Result<PathBuf> {
    let temp = dir.join(TEMP_NAME);
    let target = dir.join(FILE_NAME);
    // A stale temporary (a crash between write and rename, or something
    // planted there) is removed, not opened: O_EXCL below refuses it.
    match fs::remove_file(&temp) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let mut file: File = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&temp)?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    drop(file);
    if let Err(err) = written.and_then(|()| fs::rename(&temp, &target)) {
        let _ = fs::remove_file(&temp);
        return Err(err);
    }
    Ok(target)
}

/// Removes `dir/zerohop`, so that NFD drops the labels at its next pass.
/// A file that is already gone is fine.
pub fn remove(dir: &Path) -> io::Result<()> {
    for name in [FILE_NAME, TEMP_NAME] {
        match fs::remove_file(dir.join(name)) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Checks that `dir` is a directory, before the agent starts serving.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(format!("--features-dir {}: not a directory", dir.display())),
        Err(err) => Err(format!("--features-dir {}: {err}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::capabilities::CAPABILITIES;

    #[test]
    fn renders_labels_with_their_expiry() {
        let expires = Timestamp::from_second(1_800_000_900).unwrap();
        let text = render(
            "gpu-node-1\n# +no-label",
            &[
                (&CAPABILITIES[0], State::Ready),
                (&CAPABILITIES[2], State::Broken),
            ],
            expires,
        );
        insta::assert_snapshot!(text, @r"
        # zerohop agent on gpu-node-1# +no-label: data path capabilities; removed when the agent stops
        # +expiry-time=2027-01-15T08:15:00Z
        zerohop.dev/gpudirect-rdma=ready
        zerohop.dev/gds=broken
        ");
        assert!(text.len() < NFD_MAX_BYTES);
    }

    #[test]
    fn writes_atomically_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "a=b\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "a=b\n");
        write(dir.path(), "c=d\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "c=d\n");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE_NAME]);
        remove(dir.path()).unwrap();
        assert!(!path.exists());
        remove(dir.path()).unwrap();
    }

    #[test]
    fn a_link_planted_at_either_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::write(&outside, "keep").unwrap();
        let features = dir.path().join("features.d");
        fs::create_dir(&features).unwrap();
        symlink(&outside, features.join(TEMP_NAME)).unwrap();
        symlink(&outside, features.join(FILE_NAME)).unwrap();
        write(&features, "a=b\n").unwrap();
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
        let meta = fs::symlink_metadata(features.join(FILE_NAME)).unwrap();
        assert!(meta.is_file());
    }
}
