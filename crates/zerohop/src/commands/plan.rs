//! `zerohop plan`: renders the manifest set for an intent file.

use std::path::PathBuf;

use zerohop_plan::{MAX_INTENT_BYTES, Platform, WriteError};

use crate::error::CliError;

/// Arguments of `zerohop plan`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The intent file (`kind: DataPathPlan`), e.g. examples/cluster.yaml.
    file: PathBuf,
    /// Output directory; replaced as a whole (a previous plan output only).
    #[arg(short, long, default_value = "plan")]
    output: PathBuf,
    /// Target platform; defaults to `spec.platform` of the intent file.
    #[arg(long, value_enum)]
    platform: Option<PlatformArg>,
}

/// `--platform` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PlatformArg {
    /// Vanilla Kubernetes (host files under host/).
    Kubernetes,
    /// OpenShift (MachineConfigs).
    Openshift,
}

/// Runs `zerohop plan`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    let file = args.file.display().to_string();
    let metadata = std::fs::metadata(&args.file)
        .map_err(|err| CliError::usage(format!("cannot read {file}: {err}")))?;
    if metadata.len() > MAX_INTENT_BYTES as u64 {
        return Err(CliError::usage(format!(
            "{file}: file is larger than {MAX_INTENT_BYTES} bytes"
        )));
    }
    let text = std::fs::read_to_string(&args.file)
        .map_err(|err| CliError::usage(format!("cannot read {file}: {err}")))?;
    let platform = args.platform.map(|p| match p {
        PlatformArg::Kubernetes => Platform::Kubernetes,
        PlatformArg::Openshift => Platform::Openshift,
    });
    let plan = zerohop_plan::load(&file, &text, platform)
        .map_err(|err| CliError::usage(format!("{err}\nnothing was written")))?;
    let set = zerohop_plan::render(&plan);
    let written = zerohop_plan::write_set(&set, &args.output).map_err(|err| match err {
        WriteError::NotOurs { .. } => CliError::usage(err),
        WriteError::Io { .. } => CliError::Internal(anyhow::Error::new(err)),
    })?;
    let dir = args.output.display();
    crate::output::to_stdout(|w| {
        writeln!(
            w,
            "wrote {} files to {dir}/ (apply in this order; see {dir}/README.md for the checks between steps):",
            written.len()
        )?;
        for path in &written {
            writeln!(w, "  {path}")?;
        }
        Ok(())
    })?;
    Ok(0)
}
