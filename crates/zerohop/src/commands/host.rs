//! The arguments shared by the commands that read a host: where, or which
//! snapshot of one.

use std::path::PathBuf;

use zerohop_host::{HostRoot, Process, RootError};

use crate::error::CliError;

/// Which host to read.
#[derive(Debug, clap::Args)]
pub(crate) struct HostArgs {
    /// Read the host tree under DIR instead of this machine: a host mounted
    /// at /host in a container, or an unpacked capture.
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// Read a snapshot written by `zerohop snapshot` instead of this
    /// machine, in memory, without unpacking it.
    #[arg(long, value_name = "FILE", conflicts_with = "root")]
    pub(crate) snapshot: Option<PathBuf>,
}

impl HostArgs {
    /// The host root to read: `--snapshot FILE`, `--root DIR`, else this
    /// machine, read by this process as it was started. A snapshot that cannot be opened is an input error. A `DIR` that
    /// is missing, unreadable or holds no host (neither `proc/` nor `sys/`)
    /// is an input error (exit code 2), not a report of checks that cannot
    /// tell or do not apply.
    pub(crate) fn open(&self) -> Result<HostRoot, CliError> {
        if let Some(file) = &self.snapshot {
            let shown = file.display().to_string();
            return zerohop_snapshot::open_file(file)
                .map(|snapshot| snapshot.root(shown.clone()))
                .map_err(|err| CliError::usage(format!("{shown}: {err}")));
        }
        match &self.root {
            Some(dir) => HostRoot::at_host(dir).map_err(|err| match err {
                RootError::Missing(_) | RootError::NotADirectory(_) => CliError::usage(format!(
                    "{err}: --root takes a directory holding proc/ and sys/"
                )),
                RootError::NotAHost { .. } | RootError::Unreadable { .. } => CliError::usage(err),
            }),
            None => Ok(HostRoot::live_as(Process::current())),
        }
    }
}
