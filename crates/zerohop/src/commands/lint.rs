//! `zerohop lint`: finds the mistakes in Kubernetes manifests.

use std::io;
use std::path::PathBuf;

use zerohop_core::Report;
use zerohop_core::exit::ExitCode;
use zerohop_core::render::printable::printable;
use zerohop_core::render::{json, sarif, snippet};
use zerohop_lint::{Batch, MAX_HELD_BYTES, Options, Scope};

use crate::error::CliError;
use crate::output::{self, Format};

/// Arguments of `zerohop lint`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Files or directories to lint; directories are searched recursively for
    /// *.yaml, *.yml and *.json, and host files (systemd units,
    /// nvme/discovery.conf) (symlinks leaving them are not followed); `-`
    /// reads standard input.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Validate custom resources against the CRDs in this directory (its own
    /// *.yaml, *.yml and *.json files; `kubectl get crd -o yaml` output is
    /// read); a directory without any CRD is an error.
    #[arg(long, value_name = "DIR")]
    crds: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(&[Format::Human, Format::Json, Format::Sarif]))]
    format: Format,
    /// Change a rule's severity, e.g. `ZL034=error` (info, warning, error);
    /// may be repeated.
    #[arg(long = "severity-override", value_name = "ID=LEVEL")]
    severity_overrides: Vec<String>,
    /// Which inputs are one cluster, for the rules that look across objects.
    #[arg(long, value_enum, default_value_t = ScopeArg::Auto)]
    scope: ScopeArg,
    /// Follow a symlink named as a PATH even when its target leaves the
    /// directory it sits in (by default it is skipped, as under a
    /// directory: a shell glob names every link committed there).
    #[arg(long)]
    follow_symlinks: bool,
}

/// `--scope`: which inputs are one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ScopeArg {
    /// A directory with a kustomization.yaml, everything under it included;
    /// the other files under each directory named together; the files named
    /// on the command line together.
    Auto,
    /// Everything given is one cluster.
    All,
    /// Every file alone.
    File,
}

impl From<ScopeArg> for Scope {
    fn from(scope: ScopeArg) -> Scope {
        match scope {
            ScopeArg::Auto => Scope::Auto,
            ScopeArg::All => Scope::All,
            ScopeArg::File => Scope::File,
        }
    }
}

/// Runs `zerohop lint`: exit 0 when nothing failed, 1 when a finding
/// failed, 2 when an input could not be read or parsed (the other inputs are
/// still linted and reported), when a path does not exist or a directory
/// holds no manifest, or when the report cannot be written.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    let mut options = Options::default();
    for text in &args.severity_overrides {
        let (id, severity) =
            zerohop_lint::parse_severity_override(text).map_err(CliError::usage)?;
        options.overrides.insert(id, severity);
    }
    if let Some(dir) = &args.crds {
        let catalog = zerohop_lint::load_crds(dir, &options.limits)
            .map_err(|err| usage(format!("cannot load CRDs from {}: {err}", dir.display())))?;
        // Said on every format: on stderr it leaves a JSON or SARIF report
        // intact, and a run that validated against fewer CRDs than meant
        // is visible.
        eprintln!(
            "note: validating custom resources against {} CustomResourceDefinitions from {}",
            catalog.crd_count(),
            printable(&dir.display().to_string())
        );
        options.catalog = Some(catalog);
    }

    let mut batch = Batch::new(options.limits, MAX_HELD_BYTES)
        .with_scope(args.scope.into())
        .with_follow_symlinks(args.follow_symlinks);
    for path in &args.paths {
        batch.add_path(path).map_err(|err| usage(err.to_string()))?;
    }
    let outcome = zerohop_lint::lint_batch(&batch, &options);
    let target = args
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let report = Report::new("lint", target, outcome.findings);

    output::to_stdout(|out| match args.format {
        // `--format` parses no other value for lint.
        Format::Human | Format::Npd | Format::Svg | Format::Html => {
            let mut texts = zerohop_lint::texts(batch.loaded());
            snippet::write(&report, &mut texts, out)
        }
        Format::Json => json::write(&report, out),
        Format::Sarif => {
            let rules: Vec<_> = zerohop_lint::rules().collect();
            sarif::write(&report, &rules, out)
        }
    })
    .map_err(|err| {
        // Nothing but writing can fail here: the machine's fault (a full
        // disk, a closed file), not the input's and not a bug.
        let reason = err
            .downcast_ref::<io::Error>()
            .map_or_else(|| format!("{err:#}"), io::Error::to_string);
        usage(format!(
            "cannot write the report to standard output: {reason}"
        ))
    })?;
    // The process ends with this command: freeing the loaded tree node by
    // node (millions of them in a 32 MiB input) would only delay the exit,
    // and the system reclaims the memory at once (rustc and cargo leave
    // their large structures the same way).
    std::mem::forget(batch);
    Ok(if outcome.invalid_inputs > 0 {
        ExitCode::USAGE
    } else {
        report.exit_code()
    })
}

/// A usage error whose message may carry paths from the input: escaped, as
/// everything printed from the input is.
fn usage(message: String) -> CliError {
    CliError::usage(printable(&message).into_owned())
}
