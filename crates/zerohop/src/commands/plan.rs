//! `zerohop plan`: renders the manifest set for an intent file.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use zerohop_core::render::printable::printable;
use zerohop_plan::{Platform, WriteError};

use crate::error::CliError;

/// Arguments of `zerohop plan`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The intent file (`kind: DataPathPlan`), e.g. examples/cluster.yaml.
    file: PathBuf,
    /// Output directory: created, or replaced as a whole when it is a
    /// previous plan output with no file added or changed.
    #[arg(short, long, default_value = "plan")]
    output: PathBuf,
    /// Target platform; defaults to `spec.platform` of the intent file.
    #[arg(long, value_enum)]
    platform: Option<PlatformArg>,
}

/// `--platform` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum PlatformArg {
    /// Vanilla Kubernetes (host files under host/).
    Kubernetes,
    /// OpenShift (MachineConfigs).
    Openshift,
}

impl From<PlatformArg> for Platform {
    fn from(arg: PlatformArg) -> Platform {
        match arg {
            PlatformArg::Kubernetes => Platform::Kubernetes,
            PlatformArg::Openshift => Platform::Openshift,
        }
    }
}

/// A usage error whose message may carry paths and values from the user:
/// each line escaped before it reaches a terminal (the diagnostics of an
/// intent file are several lines, the line breaks are ours).
fn refused(message: impl std::fmt::Display) -> CliError {
    let text = message.to_string();
    let lines: Vec<_> = text.split('\n').map(printable).collect();
    CliError::usage(lines.join("\n"))
}

/// Runs `zerohop plan`. Exit codes: 0 written; 2 for anything wrong with
/// the intent file, the output directory or the file system (each said in
/// one sentence); 128 + the signal when interrupted by SIGINT (130) or
/// SIGTERM (143), having written nothing or the whole output; 3 only for a
/// bug.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    let interrupted = crate::interrupt::stop_flag()?;
    let text = zerohop_plan::read_intent(&args.file).map_err(refused)?;
    let platform = args.platform.map(Platform::from);
    let file = args.file.display().to_string();
    let plan = zerohop_plan::load(&file, &text, platform)
        .map_err(|err| refused(format!("{err}\nnothing was written")))?;
    let set = zerohop_plan::render(&plan);
    if interrupted.load(Ordering::Relaxed) {
        eprintln!("interrupted; nothing was written");
        return Ok(crate::interrupt::exit_code());
    }
    let written = zerohop_plan::write_set(&set, &args.output).map_err(|err| match err {
        WriteError::UnsafePath { .. } => CliError::Internal(anyhow::Error::new(err)),
        other => refused(other),
    })?;
    let dir = args.output.display().to_string();
    let dir = printable(&dir);
    if interrupted.load(Ordering::Relaxed) {
        eprintln!("interrupted after {dir}/ was written in full");
        return Ok(crate::interrupt::exit_code());
    }
    // The fabric tests are run by `zerohop validate run` once the rest is
    // deployed, not applied with it.
    let fabric = format!("{}/", zerohop_plan::validation::DIR);
    let (tests, deploy): (Vec<&String>, Vec<&String>) =
        written.iter().partition(|path| path.starts_with(&fabric));
    crate::output::to_stdout(|w| {
        writeln!(
            w,
            "wrote {} files to {dir}/ (apply in this order; see {dir}/README.md for the checks between steps):",
            deploy.len()
        )?;
        for path in &deploy {
            writeln!(w, "  {}", printable(path))?;
        }
        if !tests.is_empty() {
            let command = format!(
                "zerohop validate run --plan {}",
                zerohop_known::shell::quote(&args.output.display().to_string())
            );
            writeln!(
                w,
                "and {} fabric tests for `{}` once it is deployed:",
                tests.len(),
                printable(&command)
            )?;
            for path in &tests {
                writeln!(w, "  {}", printable(path))?;
            }
        }
        Ok(())
    })
    .map_err(|err| {
        // The output is written by then: a full disk or a closed terminal
        // behind standard output is the environment's doing, not a bug.
        let reason = err
            .downcast_ref::<std::io::Error>()
            .map_or_else(|| err.to_string(), |io| io.kind().to_string());
        refused(format!("cannot write to standard output: {reason}"))
    })?;
    Ok(0)
}
