//! The caps every archive is held to, writing and reading alike: what a
//! snapshot writes is always small enough to be opened again, and what is
//! opened is refused as soon as it passes a cap, before it is all read.
//!
//! A doctor pass over a large host (2,080 PCI functions, 2,064 RDMA
//! devices and netdevs) records about 40,000 files and links holding less
//! than 1 MiB; the caps leave room for hosts several times that size.

use zerohop_host::facts::kernel_log::CAPTURE_CAP;
use zerohop_host::memory::MAX_PATH_BYTES;
use zerohop_host::root::DEFAULT_READ_CAP;

pub use zerohop_host::root::MAX_DIR_ENTRIES;

/// The most members (files and links) an archive holds.
pub const MAX_MEMBERS: usize = 80_000;

/// The most bytes of file content an archive holds, all files together.
pub const MAX_CONTENT_BYTES: u64 = 64 << 20;

/// The most bytes one file holds: the most one host read returns, the
/// tail of a kernel-log capture (up to [`CAPTURE_CAP`]) included.
pub const MAX_FILE_BYTES: u64 = if CAPTURE_CAP > DEFAULT_READ_CAP {
    CAPTURE_CAP as u64
} else {
    DEFAULT_READ_CAP as u64
};

/// The most bytes of `manifest.json`.
pub const MAX_MANIFEST_BYTES: u64 = 32 << 20;

/// The most entries (paths) a manifest lists, and the most nodes the tree
/// opened from it holds, the directories it makes above the listed paths
/// included. A large host records about 96,000 paths, each directory on
/// the way to them among them.
pub const MAX_ENTRIES: usize = 400_000;

/// The most names the manifest's listings hold, all listings together;
/// each listing holds at most [`MAX_DIR_ENTRIES`], as a listing of a host
/// tree does.
pub const MAX_NAMES: usize = 1_000_000;

/// The most bytes of paths the tree opened from a manifest holds, the
/// directories it makes above the listed paths included. A manifest
/// written by zerohop lists every directory on the way to its paths, so
/// its paths never come to more than the manifest's own size; without
/// this cap, a few thousand deep paths in a small manifest would make
/// gigabytes of directories.
pub const MAX_TREE_PATH_BYTES: u64 = MAX_MANIFEST_BYTES;

/// The most bytes of a GNU long-name or long-link record: `root`, the
/// longest host path and the terminating NUL.
pub const MAX_LONG_NAME_BYTES: u64 = (MAX_PATH_BYTES + 5) as u64;

/// The most bytes of `report.json`.
pub const MAX_REPORT_BYTES: u64 = 16 << 20;

/// The most bytes of a compressed archive file.
pub const MAX_ARCHIVE_BYTES: usize = 64 << 20;

/// The most bytes the compressed stream may expand to: the content, the
/// manifest and the report, and per member its header, a long-name record
/// and padding.
pub const MAX_TAR_BYTES: u64 =
    MAX_CONTENT_BYTES + MAX_MANIFEST_BYTES + MAX_REPORT_BYTES + MAX_MEMBERS as u64 * 3 * 512;

/// The largest zstd window a reader allocates (2^24 bytes = 16 MiB); the
/// writer's level uses far less, and a frame asking for more is refused
/// rather than allowed to claim memory.
pub const MAX_WINDOW_LOG: u32 = 24;
