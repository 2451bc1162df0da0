//! Where a [`HostRoot`]'s reads go: a directory tree (the live `/` among
//! them), optionally recording what they find, or a tree held in memory.
//!
//! [`HostRoot`]: crate::HostRoot

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::kmsg_device::{self, KmsgRead};
use crate::memory::MemoryTree;
use crate::read_error::ReadError;
use crate::reader::Remote;
use crate::reader::request::Op;
use crate::record::Recorder;
use crate::tree::{self, Tail, Tree};
use crate::watchdog::Watchdog;

/// The files a root reads. Every read takes the root's watchdog, whose
/// deadline a read in a reader process runs under (a read here runs in
/// the watchdog's lane instead).
pub(crate) enum Source {
    /// A directory, or the live `/`.
    Tree {
        files: Files,
        /// Notes every read's result when recording (boxed: most roots
        /// do not record).
        recorder: Option<Box<Recorder>>,
    },
    /// A tree in memory, shown as `shown`.
    Memory { tree: MemoryTree, shown: String },
}

/// Where the reads of a directory tree run.
pub(crate) enum Files {
    /// In this process.
    Here(Tree),
    /// In reader processes (see [`crate::reader`]).
    Elsewhere(Remote),
}

impl Files {
    pub(crate) fn base(&self) -> &Path {
        match self {
            Files::Here(tree) => tree.base(),
            Files::Elsewhere(remote) => remote.base(),
        }
    }

    pub(crate) fn is_live(&self) -> bool {
        match self {
            Files::Here(tree) => tree.is_live(),
            Files::Elsewhere(remote) => remote.is_live(),
        }
    }

    /// The same files for a new pass, nothing learnt about them kept.
    pub(crate) fn fresh(&self) -> Files {
        match self {
            Files::Here(tree) => Files::Here(tree.fresh()),
            Files::Elsewhere(remote) => Files::Elsewhere(remote.fresh()),
        }
    }

    fn read_direct(
        &self,
        watchdog: &Arc<Watchdog>,
        path: &str,
        cap: usize,
    ) -> Result<Option<(Vec<u8>, bool)>, ReadError> {
        match self {
            Files::Here(tree) => tree.read_direct(path, cap),
            Files::Elsewhere(remote) => {
                let op = Op::ReadDirect { cap: cap as u64 };
                remote.call(watchdog, op, path, |input| {
                    input.result(|input| input.option(|input| Ok((input.bytes()?, input.bool()?))))
                })?
            }
        }
    }

    fn read_tail(
        &self,
        watchdog: &Arc<Watchdog>,
        path: &str,
        cap: usize,
    ) -> Result<Option<Tail>, ReadError> {
        match self {
            Files::Here(tree) => tree.read_tail(path, cap),
            Files::Elsewhere(remote) => {
                let op = Op::ReadTail { cap: cap as u64 };
                remote.call(watchdog, op, path, |input| {
                    input.result(|input| input.option(|input| input.tail()))
                })?
            }
        }
    }

    fn list(&self, watchdog: &Arc<Watchdog>, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        match self {
            Files::Here(tree) => tree.list(path),
            Files::Elsewhere(remote) => remote.call(watchdog, Op::List, path, |input| {
                input.result(|input| input.option(|input| input.strings()))
            })?,
        }
    }

    fn read_link(&self, watchdog: &Arc<Watchdog>, path: &str) -> Result<Option<String>, ReadError> {
        match self {
            Files::Here(tree) => tree.read_link(path),
            Files::Elsewhere(remote) => remote.call(watchdog, Op::ReadLink, path, |input| {
                input.result(|input| input.opt_str())
            })?,
        }
    }

    fn canonical(&self, watchdog: &Arc<Watchdog>, path: &str) -> Result<Option<String>, ReadError> {
        match self {
            Files::Here(tree) => tree.canonical(path),
            Files::Elsewhere(remote) => remote.call(watchdog, Op::Canonical, path, |input| {
                input.result(|input| input.opt_str())
            })?,
        }
    }

    fn exists(&self, watchdog: &Arc<Watchdog>, path: &str) -> Result<bool, ReadError> {
        match self {
            Files::Here(tree) => tree.exists(path),
            Files::Elsewhere(remote) => remote.call(watchdog, Op::Exists, path, |input| {
                input.result(|input| input.bool())
            })?,
        }
    }

    fn pseudo_file_system(
        &self,
        watchdog: &Arc<Watchdog>,
    ) -> Result<Option<&'static str>, ReadError> {
        match self {
            Files::Here(tree) => Ok(tree.pseudo_file_system()),
            Files::Elsewhere(remote) => remote.call(watchdog, Op::PseudoFileSystem, "/", |input| {
                match input.opt_str()? {
                    None => Ok(None),
                    Some(why) => tree::pseudo_file_system_named(&why)
                        .map(Some)
                        .ok_or(crate::reader::wire::Malformed),
                }
            }),
        }
    }

    fn kmsg(
        &self,
        watchdog: &Arc<Watchdog>,
        since_usec: u64,
        budget: Duration,
        beside: bool,
    ) -> Result<Option<KmsgRead>, ReadError> {
        match self {
            Files::Here(tree) => kmsg_device::read(beside.then(|| tree.base()), since_usec, budget),
            Files::Elsewhere(remote) => {
                let op = Op::Kmsg {
                    since_usec,
                    budget_usec: u64::try_from(budget.as_micros()).unwrap_or(u64::MAX),
                    beside,
                };
                remote.call(watchdog, op, kmsg_device::KMSG, |input| {
                    input.result(|input| input.option(|input| input.kmsg()))
                })?
            }
        }
    }
}

impl Source {
    pub(crate) fn files(files: Files) -> Source {
        Source::Tree {
            files,
            recorder: None,
        }
    }

    /// Whether reads run in reader processes, each under its own deadline
    /// there, rather than in a lane of this process.
    pub(crate) fn reads_elsewhere(&self) -> bool {
        matches!(
            self,
            Source::Tree {
                files: Files::Elsewhere(_),
                ..
            }
        )
    }

    pub(crate) fn display(&self) -> String {
        match self {
            Source::Tree { files, .. } => files.base().display().to_string(),
            Source::Memory { shown, .. } => shown.clone(),
        }
    }

    pub(crate) fn recorder(&self) -> Option<&Recorder> {
        match self {
            Source::Tree { recorder, .. } => recorder.as_deref(),
            Source::Memory { .. } => None,
        }
    }

    pub(crate) fn pseudo_file_system(
        &self,
        watchdog: &Arc<Watchdog>,
    ) -> Result<Option<&'static str>, ReadError> {
        match self {
            Source::Tree { files, .. } => files.pseudo_file_system(watchdog),
            Source::Memory { .. } => Ok(None),
        }
    }

    pub(crate) fn read_bytes(
        &self,
        watchdog: &Arc<Watchdog>,
        path: &str,
        cap: usize,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        match self {
            Source::Tree {
                files,
                recorder: None,
            } => Ok(files
                .read_direct(watchdog, path, cap)?
                .map(|(bytes, _)| bytes)),
            Source::Tree {
                files,
                recorder: Some(recorder),
            } => {
                let (result, direct) = match files.read_direct(watchdog, path, cap) {
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

    pub(crate) fn list(
        &self,
        watchdog: &Arc<Watchdog>,
        path: &str,
    ) -> Result<Option<Vec<String>>, ReadError> {
        match self {
            Source::Tree { files, recorder } => {
                let result = files.list(watchdog, path);
                if let Some(recorder) = recorder {
                    recorder.list(path, &result);
                }
                result
            }
            Source::Memory { tree, .. } => tree.list(path),
        }
    }

    pub(crate) fn read_link(
        &self,
        watchdog: &Arc<Watchdog>,
        path: &str,
    ) -> Result<Option<String>, ReadError> {
        match self {
            Source::Tree { files, recorder } => {
                let result = files.read_link(watchdog, path);
                if let Some(recorder) = recorder {
                    let target = result.as_ref().ok().and_then(Option::as_deref);
                    recorder.link(path, target);
                }
                result
            }
            Source::Memory { tree, .. } => tree.read_link(path),
        }
    }

    pub(crate) fn canonical(
        &self,
        watchdog: &Arc<Watchdog>,
        path: &str,
    ) -> Result<Option<String>, ReadError> {
        match self {
            Source::Tree { files, recorder } => {
                if let Some(recorder) = recorder {
                    recorder.resolved(path);
                }
                files.canonical(watchdog, path)
            }
            Source::Memory { tree, .. } => tree.canonical(path),
        }
    }

    pub(crate) fn exists(&self, watchdog: &Arc<Watchdog>, path: &str) -> Result<bool, ReadError> {
        match self {
            Source::Tree { files, recorder } => {
                if let Some(recorder) = recorder {
                    recorder.resolved(path);
                }
                files.exists(watchdog, path)
            }
            Source::Memory { tree, .. } => tree.exists(path),
        }
    }

    /// The last `cap` bytes of a file. A recording keeps the part read and
    /// how much came before it; in memory, that part is the file.
    pub(crate) fn read_tail(
        &self,
        watchdog: &Arc<Watchdog>,
        path: &str,
        cap: usize,
    ) -> Result<Option<Tail>, ReadError> {
        match self {
            Source::Tree { files, recorder } => {
                let result = files.read_tail(watchdog, path, cap);
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
        watchdog: &Arc<Watchdog>,
        since_usec: u64,
        budget: Duration,
        beside: bool,
    ) -> Result<Option<KmsgRead>, ReadError> {
        match self {
            Source::Tree { files, recorder } => {
                let result = files.kmsg(watchdog, since_usec, budget, beside);
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
