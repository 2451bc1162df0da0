//! Opening and checking the files or block devices of a run before any I/O,
//! with the device facts read from sysfs (logical block size, NUMA node).

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;
use zerohop_host::HostRoot;
use zerohop_input::FileKind;

use crate::units::format_bytes;

/// Why a run or a prepare cannot go on: a problem with the input or the
/// machine, found before any I/O (but for [`InputError::CannotReplace`],
/// found after writing and before replacing), so the command exits with
/// the usage code and nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// No paths given.
    #[error("no file to read")]
    NoPaths,
    /// A path that does not exist.
    #[error("{path}: no such file or device")]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// A path we may not open.
    #[error(
        "{path}: permission denied (run as a user who can read it, or add it to the disk group for a device)"
    )]
    PermissionDenied {
        /// The path.
        path: PathBuf,
    },
    /// A directory.
    #[error("{path}: is a directory (give a file or a block device)")]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// Something that is neither a regular file nor a block device.
    #[error("{path}: is a {kind}, not a regular file or block device")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// Any other failure to open or inspect.
    // The kernel's error is part of the message, so it is not also a
    // `source`: a reader that prints the chain would repeat it.
    #[error("{path}: cannot open: {error}")]
    Open {
        /// The path.
        path: PathBuf,
        /// The error from the kernel.
        error: io::Error,
    },
    /// The path was replaced by something else between two looks at it.
    #[error("{path}: changed while it was being opened (run again)")]
    Changed {
        /// The path.
        path: PathBuf,
    },
    /// The filesystem refuses `O_DIRECT`.
    #[error("{path}: the filesystem does not support O_DIRECT ({error}); run without --direct")]
    DirectUnsupported {
        /// The path.
        path: PathBuf,
        /// The error from the kernel.
        error: io::Error,
    },
    /// `prepare` was given a symbolic link.
    #[error(
        "{path}: is a symbolic link; prepare does not write through links, even with --force (give the path it points to)"
    )]
    Symlink {
        /// The path.
        path: PathBuf,
    },
    /// `prepare` was given a device, FIFO or socket.
    #[error("{path}: is a {kind}; prepare writes only regular files")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// `prepare` would replace a file it did not write.
    #[error(
        "{path}: exists and was not written by `zerohop bench prepare` ({why}); refusing to replace it (remove it, choose another path, or add --force)"
    )]
    NotABenchFile {
        /// The path.
        path: PathBuf,
        /// What showed it, e.g. that its first bytes are not the pattern.
        why: &'static str,
    },
    /// `prepare` may not look at or write the destination.
    #[error("{path}: permission denied (run as a user who may write there)")]
    WriteDenied {
        /// The path.
        path: PathBuf,
    },
    /// `prepare` cannot create its new file next to the destination.
    #[error("{dir}: cannot create the new file in this directory: {error}")]
    CannotCreate {
        /// The directory.
        dir: PathBuf,
        /// The error from the kernel.
        error: io::Error,
    },
    /// `prepare` wrote its file but cannot rename it over the destination.
    #[error("{path}: cannot put the new file in place: {error}; nothing was replaced")]
    CannotReplace {
        /// The destination.
        path: PathBuf,
        /// The error from the kernel.
        error: io::Error,
    },
    /// Not enough free space for the file `prepare` would write.
    #[error(
        "{dir}: {needed} bytes ({}) needed, {available} bytes ({}) available on this filesystem (free some space or use a smaller --size)",
        format_bytes(*.needed as f64),
        format_bytes(*.available as f64)
    )]
    NoSpace {
        /// The directory of the file.
        dir: PathBuf,
        /// Bytes the file needs.
        needed: u64,
        /// Bytes free for this user.
        available: u64,
    },
    /// A file shorter than one block.
    #[error(
        "{path}: {len} bytes is shorter than the block size of {block_size} bytes (use a smaller --bs or `zerohop bench prepare` a larger file)"
    )]
    ShorterThanBlock {
        /// The path.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The block size asked for.
        block_size: u64,
    },
    /// A block size that O_DIRECT cannot use on this device.
    #[error(
        "{path}: block size {block_size} is not a multiple of the logical block size {logical} required by O_DIRECT"
    )]
    Misaligned {
        /// The path.
        path: PathBuf,
        /// The block size asked for.
        block_size: u64,
        /// The device's logical block size.
        logical: u64,
    },
    /// A numeric option out of range.
    #[error("{option} {reason}")]
    OutOfRange {
        /// The option, e.g. `--workers`.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Options that do not go together.
    #[error("{0}")]
    Conflict(String),
}

/// Regular file or block device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A regular file.
    File,
    /// A block device.
    BlockDevice,
}

/// Facts about the block device behind a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceInfo {
    /// Kernel name of the whole disk, e.g. `nvme0n1`.
    pub name: Option<String>,
    /// Logical block size in bytes; `None` when sysfs does not say.
    pub logical_block_size: Option<u64>,
    /// NUMA node of the device's controller; `None` when not reported.
    pub numa_node: Option<u32>,
    /// Most memory segments one request may carry (`queue/max_segments`).
    pub max_segments: Option<u64>,
}

/// An opened, checked file or block device.
#[derive(Debug)]
pub struct Target {
    /// The path as given.
    pub path: PathBuf,
    /// Its length in bytes.
    pub len: u64,
    /// File or device.
    pub kind: TargetKind,
    /// The device behind it.
    pub device: DeviceInfo,
    /// The alignment O_DIRECT needs (logical block size, or 4096 when unknown).
    pub alignment: u64,
    /// Descriptor for the reads (`O_DIRECT` when asked).
    pub file: File,
    /// A second, buffered descriptor for an unaligned tail under `O_DIRECT`.
    pub buffered: Option<File>,
}

/// Maps an `open`/`stat` error on `path` to an input error.
pub fn classify_open_error(path: &Path, err: io::Error) -> InputError {
    let path = path.to_path_buf();
    match err.kind() {
        io::ErrorKind::NotFound => InputError::NotFound { path },
        io::ErrorKind::PermissionDenied => InputError::PermissionDenied { path },
        io::ErrorKind::IsADirectory => InputError::IsDirectory { path },
        _ => InputError::Open { path, error: err },
    }
}

/// The `(major, minor)` of a Linux `dev_t`.
fn split_dev(dev: u64) -> (u32, u32) {
    (libc::major(dev), libc::minor(dev))
}

/// How many directories above a disk's `device` are searched for the
/// `numa_node` of its controller (an NVMe namespace's is two up).
const NUMA_NODE_DEPTH: usize = 6;

/// Reads the device facts for `dev` from the host's sysfs.
pub fn device_info(root: &HostRoot, dev: u64) -> DeviceInfo {
    let (major, minor) = split_dev(dev);
    // A fact that cannot be read is unknown, as if sysfs did not say.
    let value = |path: &str| root.read_value(path).ok().flatten();
    let canonical = |path: &str| root.canonical(path).ok().flatten();
    let Some(mut disk) = canonical(&format!("/sys/dev/block/{major}:{minor}")) else {
        return DeviceInfo {
            name: None,
            logical_block_size: None,
            numa_node: None,
            max_segments: None,
        };
    };
    // A partition has a `partition` file and its queue lives on the parent.
    if root.exists(&format!("{disk}/partition")).unwrap_or(false)
        && let Some((parent, _)) = disk.rsplit_once('/')
        && !parent.is_empty()
    {
        disk = parent.to_owned();
    }
    let name = disk
        .rsplit('/')
        .next()
        .filter(|name| !name.is_empty())
        .map(str::to_owned);
    let logical_block_size = value(&format!("{disk}/queue/logical_block_size"))
        .and_then(|s| s.parse().ok())
        .filter(|&n: &u64| n.is_power_of_two());
    let max_segments = value(&format!("{disk}/queue/max_segments"))
        .and_then(|s| s.parse().ok())
        .filter(|&n: &u64| n > 0);
    let mut numa_node = None;
    if let Some(mut dir) = canonical(&format!("{disk}/device")) {
        for _ in 0..NUMA_NODE_DEPTH {
            if let Some(node) = value(&format!("{dir}/numa_node")) {
                numa_node = node.parse::<i64>().ok().and_then(|n| u32::try_from(n).ok());
                break;
            }
            match dir.rsplit_once('/') {
                Some((parent, _)) if !parent.is_empty() => dir = parent.to_owned(),
                _ => break,
            }
        }
    }
    DeviceInfo {
        name,
        logical_block_size,
        numa_node,
        max_segments,
    }
}

/// What `file_type` is, in words (`fifo`, `character device`), when it is
/// not a regular file.
pub fn special_kind(file_type: std::fs::FileType) -> &'static str {
    FileKind::of(file_type).map_or("regular file", FileKind::name)
}

/// Whether `meta` is something a run may read.
fn target_kind(path: &Path, meta: &std::fs::Metadata) -> Result<TargetKind, InputError> {
    let file_type = meta.file_type();
    if file_type.is_file() {
        Ok(TargetKind::File)
    } else if file_type.is_block_device() {
        Ok(TargetKind::BlockDevice)
    } else if file_type.is_dir() {
        Err(InputError::IsDirectory {
            path: path.to_path_buf(),
        })
    } else {
        Err(InputError::NotAFile {
            path: path.to_path_buf(),
            kind: special_kind(file_type),
        })
    }
}

/// Opens `path` for reading and checks, on the open descriptor, that it is
/// still what `expected` describes (a regular file or block device, the
/// same inode).
///
/// The open is non-blocking: a FIFO or terminal put in the place of the
/// path after the caller's `stat` would otherwise hold the open (a FIFO
/// until a writer comes). The flag is cleared once `fstat` agrees.
fn open_checked(
    path: &Path,
    direct: bool,
    expected: &std::fs::Metadata,
) -> Result<File, OpenFailure> {
    let mut options = OpenOptions::new();
    options.read(true);
    options.custom_flags(libc::O_NONBLOCK | if direct { libc::O_DIRECT } else { 0 });
    let file = options.open(path).map_err(OpenFailure::Open)?;
    let meta = file
        .metadata()
        .map_err(|err| OpenFailure::Input(classify_open_error(path, err)))?;
    target_kind(path, &meta).map_err(OpenFailure::Input)?;
    if (meta.dev(), meta.ino()) != (expected.dev(), expected.ino()) {
        return Err(OpenFailure::Input(InputError::Changed {
            path: path.to_path_buf(),
        }));
    }
    crate::sys::set_blocking(&file)
        .map_err(|err| OpenFailure::Input(classify_open_error(path, err)))?;
    Ok(file)
}

/// Why [`open_checked`] failed: the `open` itself (whose error the caller
/// reads, e.g. `EINVAL` for O_DIRECT), or a check after it.
enum OpenFailure {
    Open(io::Error),
    Input(InputError),
}

/// Opens and checks one target for reads of `block_size` bytes, with the
/// facts of the device behind it read from `root` (the host).
///
/// Regular files and block devices are accepted; anything else is refused
/// from its `stat`, before it is opened (opening a character device can
/// have effects of its own: a tape rewinds, a watchdog arms).
pub fn open_target(
    root: &HostRoot,
    path: &Path,
    block_size: u64,
    direct: bool,
) -> Result<Target, InputError> {
    let meta = std::fs::metadata(path).map_err(|err| classify_open_error(path, err))?;
    let kind = target_kind(path, &meta)?;
    let buffered = open_checked(path, false, &meta).map_err(|failure| match failure {
        OpenFailure::Open(err) => classify_open_error(path, err),
        OpenFailure::Input(err) => err,
    })?;
    let dev = if kind == TargetKind::BlockDevice {
        meta.rdev()
    } else {
        meta.dev()
    };
    let device = device_info(root, dev);
    let len = match kind {
        TargetKind::File => meta.len(),
        TargetKind::BlockDevice => (&buffered)
            .seek(SeekFrom::End(0))
            .map_err(|err| classify_open_error(path, err))?,
    };
    if len < block_size {
        return Err(InputError::ShorterThanBlock {
            path: path.to_path_buf(),
            len,
            block_size,
        });
    }
    let alignment = device.logical_block_size.unwrap_or(4096);
    if !direct {
        return Ok(Target {
            path: path.to_path_buf(),
            len,
            kind,
            device,
            alignment,
            file: buffered,
            buffered: None,
        });
    }
    if !block_size.is_multiple_of(alignment) {
        return Err(InputError::Misaligned {
            path: path.to_path_buf(),
            block_size,
            logical: alignment,
        });
    }
    let file = open_checked(path, true, &meta).map_err(|failure| match failure {
        OpenFailure::Open(err) if err.raw_os_error() == Some(libc::EINVAL) => {
            InputError::DirectUnsupported {
                path: path.to_path_buf(),
                error: err,
            }
        }
        OpenFailure::Open(err) => classify_open_error(path, err),
        OpenFailure::Input(err) => err,
    })?;
    Ok(Target {
        path: path.to_path_buf(),
        len,
        kind,
        device,
        alignment,
        file,
        buffered: Some(buffered),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_numbers_split_like_glibc() {
        assert_eq!(split_dev(0xfe00), (254, 0));
        assert_eq!(split_dev(0x0803), (8, 3));
        // Large numbers use the high bits.
        assert_eq!(split_dev(libc::makedev(4100, 0x12345)), (4100, 0x12345));
    }

    #[test]
    fn open_errors_map_to_clear_input_errors() {
        let path = Path::new("/dev/nvme0n1");
        let denied = classify_open_error(path, io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(matches!(denied, InputError::PermissionDenied { .. }));
        assert!(denied.to_string().contains("permission denied"));
        let missing = classify_open_error(path, io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(missing.to_string(), "/dev/nvme0n1: no such file or device");
    }

    #[test]
    fn device_info_reads_the_hosts_sysfs_through_its_links() {
        // A host tree laid out as sysfs is, with relative links: the
        // partition's `dev/block` entry, the namespace's `device` link to
        // its controller, and the controller's NUMA node.
        let host = tempfile::tempdir().unwrap();
        let sys = host.path().join("sys");
        let ctrl = sys.join("devices/pci0000:00/0000:00:04.0/nvme/nvme0");
        let disk = ctrl.join("nvme0n1");
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::create_dir_all(disk.join("nvme0n1p1")).unwrap();
        std::fs::write(disk.join("queue/logical_block_size"), "4096\n").unwrap();
        std::fs::write(disk.join("queue/max_segments"), "127\n").unwrap();
        std::fs::write(disk.join("nvme0n1p1/partition"), "1\n").unwrap();
        std::fs::write(ctrl.join("numa_node"), "1\n").unwrap();
        std::os::unix::fs::symlink("../../nvme0", disk.join("device")).unwrap();
        std::fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1/nvme0n1p1",
            sys.join("dev/block/259:1"),
        )
        .unwrap();
        let root = HostRoot::at(host.path()).unwrap();
        let info = device_info(&root, libc::makedev(259, 1));
        assert_eq!(
            info,
            DeviceInfo {
                name: Some("nvme0n1".into()),
                logical_block_size: Some(4096),
                numa_node: Some(1),
                max_segments: Some(127),
            }
        );
        let unknown = device_info(&root, libc::makedev(7, 0));
        assert_eq!(unknown.logical_block_size, None);
    }

    #[test]
    fn bad_targets_are_refused_before_io() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            open_target(&HostRoot::live(), dir.path(), 4096, false),
            Err(InputError::IsDirectory { .. })
        ));
        let missing = dir.path().join("missing");
        assert!(matches!(
            open_target(&HostRoot::live(), &missing, 4096, false),
            Err(InputError::NotFound { .. })
        ));
        let short = dir.path().join("short");
        std::fs::write(&short, [0u8; 100]).unwrap();
        let err = open_target(&HostRoot::live(), &short, 4096, false).unwrap_err();
        assert!(
            matches!(err, InputError::ShorterThanBlock { len: 100, .. }),
            "{err}"
        );
        let chardev = open_target(&HostRoot::live(), Path::new("/dev/null"), 1, false).unwrap_err();
        assert!(matches!(
            chardev,
            InputError::NotAFile {
                kind: "character device",
                ..
            }
        ));
    }

    #[test]
    #[expect(unsafe_code, reason = "mkfifo has no safe wrapper in std")]
    fn a_fifo_swapped_in_after_the_stat_is_refused_not_waited_on() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [0u8; 8192]).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c_path` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // A blocking open would wait here for a writer, forever.
        match open_checked(&path, false, &meta) {
            Err(OpenFailure::Input(InputError::NotAFile { kind: "fifo", .. })) => {}
            Err(OpenFailure::Input(other)) => panic!("expected a fifo refusal, got {other}"),
            Err(OpenFailure::Open(err)) => panic!("expected a fifo refusal, got {err}"),
            Ok(_) => panic!("a fifo was opened as a target"),
        }
    }

    #[test]
    fn a_file_replaced_after_the_stat_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [0u8; 8192]).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        std::fs::write(dir.path().join("g"), [1u8; 8192]).unwrap();
        std::fs::rename(dir.path().join("g"), &path).unwrap();
        assert!(matches!(
            open_checked(&path, false, &meta),
            Err(OpenFailure::Input(InputError::Changed { .. }))
        ));
    }

    #[test]
    fn direct_io_needs_an_aligned_block_size() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, vec![0u8; 8192]).unwrap();
        match open_target(&HostRoot::live(), &file, 1000, true) {
            Err(InputError::Misaligned { logical, .. }) => assert!(logical >= 512),
            other => panic!("expected a misaligned block size error, got {other:?}"),
        }
    }
}
