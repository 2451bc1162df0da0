//! `zerohop doctor`: checks a host, every layer of the data path.

use std::path::PathBuf;

use anyhow::Context as _;
use zerohop_core::render::{human, json};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};

use crate::error::CliError;
use crate::output;

/// Output formats of the doctor.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// A table per layer and a plan of what to fix first.
    Human,
    /// One versioned JSON document (see docs/report-json.md).
    Json,
}

/// Arguments of `zerohop doctor`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Check the host tree under DIR instead of this machine: a host mounted
    /// at /host in a container, or an unpacked capture.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Only these groups or check IDs (comma-separated or repeated), e.g.
    /// `--only kernel,PCI001`.
    #[arg(long, value_name = "GROUP|ID", value_delimiter = ',')]
    only: Vec<String>,
    /// Also list checks that passed or do not apply.
    #[arg(long, short)]
    verbose: bool,
    /// Expect SR-IOV VFs on the data path (default: when VFs are enabled).
    #[arg(long, value_name = "BOOL")]
    expect_sriov: Option<bool>,
    /// Expect this many 1 GiB hugepages on each NUMA node with a GPU or NIC.
    #[arg(long, value_name = "PAGES")]
    expect_hugepages_1g: Option<u64>,
}

/// Runs `zerohop doctor`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    let root = match &args.root {
        Some(dir) => HostRoot::at(dir).map_err(|err| CliError::usage(format!("{err}: --root takes a directory holding proc/ and sys/")))?,
        None => HostRoot::live(),
    };
    let selection = Selection::parse(args.only.iter().map(String::as_str)).map_err(|name| {
        CliError::usage(format!("`{name}` is neither a check group nor a check id: `zerohop checks` lists both"))
    })?;
    let profile = Profile {
        sriov: args.expect_sriov,
        hugepages_1g_per_node: args.expect_hugepages_1g,
    };
    let facts = Facts::collect(&root);
    let report = zerohop_doctor::run(&facts, &profile, &selection);
    output::to_stdout(|out| match args.format {
        Format::Human => human::write(&report, human::HumanOptions { verbose: args.verbose }, out),
        Format::Json => json::write(&report, out),
    })
    .context("failed to write the report")?;
    Ok(report.exit_code())
}
