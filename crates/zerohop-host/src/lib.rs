//! Read-only access to a host and the typed model of what zerohop reads.
//!
//! Every read goes through a [`HostRoot`]: the live `/`, a host mounted at
//! `/host` in a container, or a directory holding a captured tree. Reads are
//! bounded in size and in time, and only regular files are read (with one
//! exception: the running kernel's log, `/dev/kmsg`); a missing file is
//! `None`, never an error. A root can also record what one pass reads
//! ([`record`]) and be read back from memory ([`memory`]), which is what a
//! snapshot is. Parsers in [`parse`] are pure functions
//! of text, and [`Facts`] is the model the doctor's checks judge.

pub mod facts;
mod in_root;
mod kmsg_device;
pub mod memory;
pub mod parse;
pub mod probe;
pub mod process;
mod read_error;
pub mod reader;
pub mod record;
mod resolve;
pub mod root;
mod source;
mod tree;
pub mod watchdog;

pub use facts::{CollectOptions, Fact, Facts, Gap, GapKind};
pub use kmsg_device::KmsgRead;
pub use process::{Environment, Process};
pub use root::{FileKind, HostRoot, IoKind, ReadError, Recording, RootError};
