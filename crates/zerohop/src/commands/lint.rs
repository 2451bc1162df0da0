//! `zerohop lint`: finds the mistakes in Kubernetes manifests.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use zerohop_core::Report;
use zerohop_core::exit::ExitCode;
use zerohop_core::render::{json, sarif, snippet};
use zerohop_k8s::schema::CrdCatalog;
use zerohop_lint::{Input, Options};

use crate::error::CliError;
use crate::output;

/// Output formats of `zerohop lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// rustc-style diagnostics with the source line and a caret.
    Human,
    /// The versioned JSON report shared with `zerohop doctor`.
    Json,
    /// SARIF 2.1.0 for code scanning.
    Sarif,
}

/// Arguments of `zerohop lint`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Files or directories to lint; directories are searched recursively for
    /// *.yaml, *.yml and *.json; `-` reads standard input.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Validate custom resources against the CRDs in this directory.
    #[arg(long, value_name = "DIR")]
    crds: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Change a rule's severity, e.g. `ZL034=error` (info, warning, error);
    /// may be repeated.
    #[arg(long = "severity-override", value_name = "ID=LEVEL")]
    severity_overrides: Vec<String>,
}

/// Deepest directory nesting searched; deeper trees (or symlink loops,
/// which are not followed anyway) are cut off.
const MAX_DIRECTORY_DEPTH: usize = 32;

/// Runs `zerohop lint`: exit 0 when nothing failed, 1 when a finding
/// failed, 2 when an input could not be read or parsed (the other inputs are
/// still linted and reported).
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    let mut options = Options::default();
    for text in &args.severity_overrides {
        let (id, severity) =
            zerohop_lint::parse_severity_override(text).map_err(CliError::usage)?;
        options.overrides.insert(id, severity);
    }
    if let Some(dir) = &args.crds {
        let catalog = CrdCatalog::load_dir(dir).map_err(|err| {
            CliError::usage(format!("cannot load CRDs from {}: {err}", dir.display()))
        })?;
        options.catalog = Some(catalog);
    }

    let limit = options.limits.max_bytes;
    let mut inputs = Vec::new();
    for path in &args.paths {
        collect(path, limit, &mut inputs);
    }
    let outcome = zerohop_lint::lint(&inputs, &options);
    let target = args
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let report = Report::new("lint", target, outcome.findings);

    let sources: HashMap<&str, &str> = inputs
        .iter()
        .filter_map(|input| {
            let bytes = input.content.as_ref().ok()?;
            Some((input.name.as_str(), std::str::from_utf8(bytes).ok()?))
        })
        .collect();
    let lookup = |name: &str| sources.get(name).copied();
    output::to_stdout(|out| match args.format {
        Format::Human => snippet::write(&report, &lookup, out),
        Format::Json => json::write(&report, out),
        Format::Sarif => {
            let rules: Vec<_> = zerohop_lint::rules().collect();
            sarif::write(&report, &rules, out)
        }
    })?;
    Ok(if outcome.invalid_inputs > 0 {
        ExitCode::USAGE
    } else {
        report.exit_code()
    })
}

/// Adds the inputs named by `path`: standard input, a file, or the matching
/// files under a directory in name order.
fn collect(path: &Path, limit: usize, inputs: &mut Vec<Input>) {
    if path.as_os_str() == "-" {
        inputs.push(Input {
            name: "-".to_owned(),
            content: read_bounded(io::stdin().lock(), limit),
        });
        return;
    }
    if path.is_dir() {
        walk(path, limit, 0, inputs);
        return;
    }
    inputs.push(read_file(path, limit));
}

fn walk(dir: &Path, limit: usize, depth: usize, inputs: &mut Vec<Input>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            inputs.push(Input {
                name: dir.display().to_string(),
                content: Err(format!("cannot read directory: {err}")),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    for path in paths {
        // Symlinked directories are not followed, so a loop cannot recurse.
        let Ok(metadata) = fs::symlink_metadata(&path) else {
            continue;
        };
        if metadata.is_dir() {
            if depth < MAX_DIRECTORY_DEPTH {
                walk(&path, limit, depth + 1, inputs);
            }
        } else if is_manifest(&path) && path.is_file() {
            inputs.push(read_file(&path, limit));
        }
    }
}

fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "yaml" | "yml" | "json"))
}

fn read_file(path: &Path, limit: usize) -> Input {
    let content = fs::File::open(path)
        .map_err(|err| err.to_string())
        .and_then(|file| read_bounded(file, limit));
    Input {
        name: path.display().to_string(),
        content,
    }
}

/// Reads at most one byte past `limit`, so that an oversized input is
/// recognised without reading (or holding) all of it.
fn read_bounded(reader: impl Read, limit: usize) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(&mut bytes)
        .map_err(|err| err.to_string())?;
    Ok(bytes)
}
