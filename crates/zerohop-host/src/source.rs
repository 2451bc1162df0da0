//! Where a [`HostRoot`]'s reads go: a directory tree (the live `/` among
//! them), optionally recording what they find, or a tree held in memory.
//!
//! [`HostRoot`]: crate::HostRoot

use std::time::Duration;

use crate::kmsg_device::{self, KmsgRead};
use crate::memory::MemoryTree;
use crate::read_error::ReadError;
use crate::record::Recorder;
use crate::tree::{Tail, Tree};

/// The files a root reads.
pub(crate) enum Source {
    /// A directory, or the live `/`.
    Tree {
        tree: Tree,
        /// Notes every read's result when recording (boxed: most roots
        /// do not record).
        recorder: Option<Box<Recorder>>,
    },
    /// A tree in memory, shown as `shown`.
    Memory { tree: MemoryTree, shown: String },
}

impl Source {
    pub(crate) fn tree(tree: Tree) -> Source {
        Source::Tree {
            tree,
            recorder: None,
        }
    }

    pub(crate) fn display(&self) -> String {
        match self {
            Source::Tree { tree, .. } => tree.base().display().to_string(),
            Source::Memory { shown, .. } => shown.clone(),
        }
    }

    pub(crate) fn recorder(&self) -> Option<&Recorder> {
        match self {
            Source::Tree { recorder, .. } => recorder.as_deref(),
            Source::Memory { .. } => None,
        }
    }

    pub(crate) fn pseudo_file_system(&self) -> Option<&'static str> {
        match self {
            Source::Tree { tree, .. } => tree.pseudo_file_system(),
            Source::Memory { .. } => None,
        }
    }

    pub(crate) fn read_bytes(&self, path: &str, cap: usize) -> Result<Option<Vec<u8>>, ReadError> {
        match self {
            Source::Tree {
                tree,
                recorder: None,
            } => tree.read_bytes(path, cap),
            Source::Tree {
                tree,
                recorder: Some(recorder),
            } => {
                let (result, direct) = match tree.read_direct(path, cap) {
                    Ok(Some((bytes, direct))) => (Ok(Some(bytes)), direct),
                    Ok(None) => (Ok(None), false),
                    Err(err) => (Err(err), false),
                };
                recorder.read(path, &result, direct);
                result
            }
            Source::Memory { tree, .. } => tree.read_bytes(path, cap),
        }
    }

    pub(crate) fn list(&self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        match self {
            Source::Tree { tree, recorder } => {
                let result = tree.list(path);
                if let Some(recorder) = recorder {
                    recorder.list(path, &result);
                }
                result
            }
            Source::Memory { tree, .. } => tree.list(path),
        }
    }

    pub(crate) fn read_link(&self, path: &str) -> Result<Option<String>, ReadError> {
        match self {
            Source::Tree { tree, recorder } => {
                let result = tree.read_link(path);
                if let Some(recorder) = recorder {
                    let target = result.as_ref().ok().and_then(Option::as_deref);
                    recorder.link(path, target);
                }
                result
            }
            Source::Memory { tree, .. } => tree.read_link(path),
        }
    }

    pub(crate) fn canonical(&self, path: &str) -> Result<Option<String>, ReadError> {
        match self {
            Source::Tree { tree, recorder } => {
                if let Some(recorder) = recorder {
                    recorder.resolved(path);
                }
                tree.canonical(path)
            }
            Source::Memory { tree, .. } => tree.canonical(path),
        }
    }

    pub(crate) fn exists(&self, path: &str) -> Result<bool, ReadError> {
        match self {
            Source::Tree { tree, recorder } => {
                if let Some(recorder) = recorder {
                    recorder.resolved(path);
                }
                tree.exists(path)
            }
            Source::Memory { tree, .. } => tree.exists(path),
        }
    }

    /// The last `cap` bytes of a file. A recording keeps the part read and
    /// how much came before it; in memory, that part is the file.
    pub(crate) fn read_tail(&self, path: &str, cap: usize) -> Result<Option<Tail>, ReadError> {
        match self {
            Source::Tree { tree, recorder } => {
                let result = tree.read_tail(path, cap);
                if let Some(recorder) = recorder {
                    recorder.tail(path, &result);
                }
                result
            }
            Source::Memory { tree, .. } => Ok(tree.read_bytes(path, cap)?.map(|bytes| Tail {
                bytes,
                skipped: tree.skipped(path),
            })),
        }
    }

    /// The running kernel's log records (see `kmsg_device`), from the
    /// tree's own device node too when the reader is `beside` the tree. A
    /// recording keeps the window read; a tree in memory answers with the
    /// window it keeps, if any (a snapshot recorded where the device was
    /// read).
    pub(crate) fn kmsg(
        &self,
        since_usec: u64,
        budget: Duration,
        beside: bool,
    ) -> Result<Option<KmsgRead>, ReadError> {
        match self {
            Source::Tree { tree, recorder } => {
                let base = beside.then(|| tree.base());
                let result = kmsg_device::read(base, since_usec, budget);
                if let (Ok(Some(read)), Some(recorder)) = (&result, recorder) {
                    recorder.kmsg(read);
                }
                result
            }
            Source::Memory { tree, .. } => tree.kmsg(),
        }
    }

    /// Whether this is a tree in memory that keeps the window of a
    /// kernel log read live.
    pub(crate) fn replays_kmsg(&self) -> bool {
        match self {
            Source::Tree { .. } => false,
            Source::Memory { tree, .. } => tree.kernel_log().is_some(),
        }
    }
}
