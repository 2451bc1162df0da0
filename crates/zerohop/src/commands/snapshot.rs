//! `zerohop snapshot`: records what one doctor pass reads on a host into
//! one archive, for `doctor --snapshot`, `topo --snapshot` and `diff`.

use std::io::Write;
use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::Context as _;
use zerohop_core::exit::ExitCode;
use zerohop_snapshot::redact::redact;
use zerohop_snapshot::{Snapshot, encode, save};

use crate::commands::host::HostArgs;
use crate::error::CliError;

/// Arguments of `zerohop snapshot`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Record the host tree under DIR instead of this machine.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Where to write the archive (`-` for standard output). An existing
    /// regular file is replaced; a symlink or anything else is refused.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Replace the host's identifiers (host names, IP and MAC addresses,
    /// GUIDs, serial numbers, NQNs) with consistent pseudonyms; the doctor
    /// judges the redacted snapshot as the original.
    #[arg(long)]
    redact: bool,
    /// With --redact, also write which pseudonym stands for which value to
    /// FILE (JSON, readable by its owner only), to keep beside the archive
    /// and never send with it.
    #[arg(long, value_name = "FILE", requires = "redact")]
    redact_map: Option<PathBuf>,
}

/// Runs `zerohop snapshot`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    let host = HostArgs {
        root: args.root,
        snapshot: None,
    };
    let root = host.open()?;
    let mut snapshot = Snapshot::capture(&root, SystemTime::now()).map_err(CliError::usage)?;
    if args.redact {
        let redacted = redact(&snapshot).map_err(CliError::usage)?;
        if let Some(path) = &args.redact_map {
            let mut json = serde_json::to_vec_pretty(&redacted.map)
                .context("failed to write the redaction map")?;
            json.push(b'\n');
            save(path, &json).map_err(CliError::usage)?;
        }
        snapshot = redacted.snapshot;
    }
    let archive = encode(&snapshot).map_err(CliError::usage)?;
    if args.output.as_os_str() == "-" {
        // Raw bytes: the styled stream of `output` strips what looks like
        // terminal escapes, which a compressed archive is full of.
        let mut stdout = std::io::stdout().lock();
        match stdout.write_all(&archive).and_then(|()| stdout.flush()) {
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other.context("failed to write the archive")?,
        }
    } else {
        save(&args.output, &archive).map_err(CliError::usage)?;
    }
    let files = snapshot
        .tree
        .nodes()
        .filter(|(_, node)| {
            matches!(
                node,
                zerohop_host::memory::Node::File(zerohop_host::memory::Content::Read(_))
            )
        })
        .count();
    eprintln!(
        "recorded {files} files of {} ({} paths) into {} ({} bytes)",
        snapshot
            .meta
            .hostname
            .as_deref()
            .unwrap_or(&snapshot.meta.root),
        snapshot.tree.len(),
        args.output.display(),
        archive.len()
    );
    Ok(ExitCode::OK)
}
