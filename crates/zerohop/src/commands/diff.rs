//! `zerohop diff A B`: what differs between two hosts, or one host at two
//! times; each side a snapshot, a host directory, or `-` for this host.
//! Exit codes as `diff(1)`: 0 the same, 1 different, 2 trouble.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context as _;
use zerohop_core::Document;
use zerohop_core::exit::ExitCode;
use zerohop_core::render::printable::printable;
use zerohop_snapshot::Snapshot;
use zerohop_snapshot::diff::{self, Side};

use crate::commands::host::HostArgs;
use crate::error::CliError;
use crate::output::{self, Format};

/// Arguments of `zerohop diff`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The first side (the reference, e.g. the golden node): a snapshot
    /// file, a host directory, or `-` for this host.
    #[arg(value_name = "A")]
    a: PathBuf,
    /// The second side, as A.
    #[arg(value_name = "B")]
    b: PathBuf,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(output::HUMAN_OR_JSON))]
    format: Format,
    /// Also compare volatile data: counters, free memory and hugepages,
    /// module reference counts.
    #[arg(long)]
    all: bool,
}

/// Runs `zerohop diff`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    // Any trouble is exit code 2, as diff(1) has it.
    compare(&args).map_err(|err| match err {
        CliError::Internal(err) => CliError::Usage(err),
        usage => usage,
    })
}

fn compare(args: &Args) -> Result<i32, CliError> {
    let a = side(&args.a)?;
    let b = side(&args.b)?;
    let diff = diff::compare(&a, &b, args.all);
    output::to_stdout(|out| match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &Document::new("diff", &diff))?;
            writeln!(out)
        }
        // Human, the only other value `--format` parses here.
        _ => diff::write_human(&diff, out),
    })
    .context("failed to write the diff")?;
    Ok(if diff.is_empty() {
        ExitCode::OK
    } else {
        ExitCode::FAILED
    })
}

/// One side: a snapshot opened, or a host recorded now.
fn side(spec: &Path) -> Result<Side, CliError> {
    let label = spec.display().to_string();
    let snapshot = if spec.as_os_str() == "-" {
        record(&HostArgs {
            root: None,
            snapshot: None,
        })?
    } else if spec.is_dir() {
        record(&HostArgs {
            root: Some(spec.to_path_buf()),
            snapshot: None,
        })?
    } else {
        // The name as given may carry terminal escapes: written escaped.
        zerohop_snapshot::open_file(spec)
            .map_err(|err| CliError::usage(format!("{}: {err}", printable(&label))))?
    };
    Ok(Side::new(label, snapshot))
}

fn record(host: &HostArgs) -> Result<Snapshot, CliError> {
    let root = host.open()?;
    Snapshot::capture(&root, SystemTime::now()).map_err(CliError::usage)
}
