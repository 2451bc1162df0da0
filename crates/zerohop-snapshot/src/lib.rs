//! Snapshots of a host: exactly what one doctor pass reads, in one
//! deterministic archive that the doctor reads back without the host.
//!
//! * [`Snapshot::capture`] records one full doctor pass through a
//!   recording [`HostRoot`](zerohop_host::HostRoot): every file, listing,
//!   link and absence it met, the report it gave, the host name, the
//!   kernel and the time.
//! * [`encode`] writes it as tar + zstd: `manifest.json` (every path with
//!   its size and SHA-256), `report.json`, then the files and links under
//!   `root/`, sorted, with fixed owners, modes and times.
//! * [`open`] reads an archive from anyone: caps checked before reading,
//!   every member matched against the manifest, nothing written.
//! * [`save`] writes the archive file without following a link or
//!   replacing anything but a regular file, and a regular file only when
//!   it is a snapshot unless forced.
//! * [`redact::redact`] replaces the host's identifiers (names,
//!   addresses, MACs, GUIDs, serials, NQNs) with consistent pseudonyms.
//! * [`diff::compare`] tells what differs between two snapshots: findings,
//!   then typed facts by layer, then raw files.

pub mod diff;
pub mod limits;
pub mod manifest;
mod read;
pub mod redact;
mod save;
mod snapshot;
mod write;

pub use read::{OpenError, open, open_file};
pub use save::{Kind, Replace, SaveError, save};
pub use snapshot::{CaptureError, Meta, Snapshot};
pub use write::{WriteError, encode};
