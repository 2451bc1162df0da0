//! The argument shared by the commands that read a host: where.

use std::path::PathBuf;

use zerohop_host::{HostRoot, RootError};

use crate::error::CliError;

/// Which host to read.
#[derive(Debug, clap::Args)]
pub(crate) struct HostArgs {
    /// Read the host tree under DIR instead of this machine: a host mounted
    /// at /host in a container, or an unpacked capture.
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
}

impl HostArgs {
    /// The host root to read: `--root DIR`, else this machine. A `DIR` that
    /// is missing, unreadable or holds no host (neither `proc/` nor `sys/`)
    /// is an input error (exit code 2), not a report of checks that cannot
    /// tell or do not apply.
    pub(crate) fn open(&self) -> Result<HostRoot, CliError> {
        match &self.root {
            Some(dir) => HostRoot::at_host(dir).map_err(|err| match err {
                RootError::Missing(_) | RootError::NotADirectory(_) => CliError::usage(format!(
                    "{err}: --root takes a directory holding proc/ and sys/"
                )),
                RootError::NotAHost { .. } | RootError::Unreadable { .. } => CliError::usage(err),
            }),
            None => Ok(HostRoot::live()),
        }
    }
}
