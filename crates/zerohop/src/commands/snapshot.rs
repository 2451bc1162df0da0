//! `zerohop snapshot`: records what one doctor pass reads on a host into
//! one archive, for `doctor --snapshot`, `topo --snapshot` and `diff`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use anyhow::Context as _;
use zerohop_core::exit::ExitCode;
use zerohop_core::render::printable::printable;
use zerohop_snapshot::redact::redact;
use zerohop_snapshot::{Kind, Replace, Snapshot, encode, save};

use crate::commands::host::HostArgs;
use crate::error::CliError;

/// Arguments of `zerohop snapshot`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Record the host tree under DIR instead of this machine.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Where to write the archive (`-` for standard output). An existing
    /// snapshot is replaced; any other file is refused (a regular file is
    /// replaced with --force; a symlink or anything else never).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Replace an existing regular file at FILE (and at the redaction
    /// map's FILE) even if it is not what `zerohop snapshot` writes.
    #[arg(long)]
    force: bool,
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

/// Runs `zerohop snapshot`. Exit codes: 0 written; 2 for a host, an output
/// or a file system that does not allow it; 128 + the signal when interrupted (nothing
/// written, or the whole file).
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    let interrupted = crate::interrupt::stop_flag()?;
    let stopped = || {
        let stop = interrupted.load(Ordering::Relaxed);
        if stop {
            eprintln!("interrupted; nothing was written");
        }
        stop
    };
    let replace = if args.force {
        Replace::AnyRegularFile
    } else {
        Replace::SameKind
    };
    let host = HostArgs {
        root: args.root,
        snapshot: None,
    };
    let root = host.open()?;
    let mut snapshot = Snapshot::capture(&root, SystemTime::now()).map_err(CliError::usage)?;
    if stopped() {
        return Ok(crate::interrupt::exit_code());
    }
    let mut map = None;
    if args.redact {
        let redacted = redact(&snapshot).map_err(CliError::usage)?;
        if let Some(path) = &args.redact_map {
            let mut json = serde_json::to_vec_pretty(&redacted.map)
                .context("failed to write the redaction map")?;
            json.push(b'\n');
            map = Some((path, json));
        }
        snapshot = redacted.snapshot;
    }
    let archive = encode(&snapshot).map_err(CliError::usage)?;
    if stopped() {
        return Ok(crate::interrupt::exit_code());
    }
    if args.output.as_os_str() == "-" {
        // Raw bytes: the styled stream of `output` strips what looks like
        // terminal escapes, which a compressed archive is full of.
        let mut stdout = std::io::stdout().lock();
        match stdout.write_all(&archive).and_then(|()| stdout.flush()) {
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other.context("failed to write the archive")?,
        }
    } else {
        save(&args.output, &archive, Kind::Archive, replace).map_err(refused)?;
    }
    // The map after the archive it explains.
    if let Some((path, json)) = map {
        save(path, &json, Kind::RedactionMap, replace).map_err(refused)?;
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
        printable(&args.output.display().to_string()),
        archive.len()
    );
    if interrupted.load(Ordering::Relaxed) {
        eprintln!("interrupted after the archive was written in full");
        return Ok(crate::interrupt::exit_code());
    }
    Ok(ExitCode::OK)
}

/// A usage error whose message names a path from the user, escaped.
fn refused(err: impl std::fmt::Display) -> CliError {
    CliError::usage(printable(&err.to_string()).into_owned())
}
