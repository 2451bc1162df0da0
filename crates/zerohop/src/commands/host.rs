//! The arguments shared by the commands that read a host: where, and in
//! which format to answer.

use std::path::PathBuf;

use zerohop_host::HostRoot;

use crate::error::CliError;

/// Output formats of the host commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Tables for people.
    Human,
    /// One versioned JSON document.
    Json,
}

/// Which host to read and how to answer.
#[derive(Debug, clap::Args)]
pub(crate) struct HostArgs {
    /// Read the host tree under DIR instead of this machine: a host mounted
    /// at /host in a container, or an unpacked capture.
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub(crate) format: Format,
}

impl HostArgs {
    /// The host root to read: `--root DIR`, else this machine. A `DIR` that
    /// is not a directory is a usage error.
    pub(crate) fn open(&self) -> Result<HostRoot, CliError> {
        match &self.root {
            Some(dir) => HostRoot::at(dir).map_err(|err| {
                CliError::usage(format!(
                    "{err}: --root takes a directory holding proc/ and sys/"
                ))
            }),
            None => Ok(HostRoot::live()),
        }
    }
}
