//! `zerohop validate`: judges what the fabric tests printed (nccl-tests,
//! `NCCL_DEBUG` logs, perftest, `nvidia-smi topo -m`, GDS tools).

use std::io;
use std::path::{Path, PathBuf};

use zerohop_core::exit::ExitCode;
use zerohop_input::{Follow, NotRegular, open_regular, os_reason, read_capped};
use zerohop_validate::judge::{self, Capture, Expectations, PlannedFabric};
use zerohop_validate::nccl::collective::Collective;

use super::validate_intent;
use crate::error::CliError;
use crate::output;
use crate::output::Format;

/// The largest capture read: an `NCCL_DEBUG=INFO` log of a large job runs
/// to tens of MiB; anything larger is refused rather than held in memory.
pub(crate) const MAX_CAPTURE_BYTES: u64 = 128 << 20;

/// Subcommands of `zerohop validate`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Args {
    /// Judge captured outputs: nccl-tests, NCCL_DEBUG logs, perftest,
    /// nvidia-smi topo -m, gdscheck, gdsio, nvidia-fs stats, show_gids, mount.
    Parse(ParseArgs),
    /// Create the fabric tests `zerohop plan` rendered under validate/
    /// (perftest per rail between two nodes, nccl-tests over several),
    /// follow them, judge their logs and delete them.
    #[cfg(feature = "cluster")]
    Run(super::validate_run::RunArgs),
}

/// Arguments of `zerohop validate parse`.
#[derive(Debug, clap::Args)]
pub(crate) struct ParseArgs {
    /// Captured outputs to judge; `-` reads standard input. The tool that
    /// wrote each one is told from its content.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(output::HUMAN_OR_JSON))]
    format: Format,
    /// Also list findings that passed or do not apply.
    #[arg(long, short)]
    verbose: bool,
    /// Link rate of one rail (one NIC port) in Gb/s, e.g. 400 [default:
    /// the NCCL log's NET/IB speed; none for perftest].
    #[arg(long, value_name = "GBPS", value_parser = positive_rate)]
    link_rate: Option<f64>,
    /// RDMA NICs (rails) NCCL uses per node [default: the NCCL log's
    /// NET/IB devices].
    #[arg(long, value_name = "COUNT", value_parser = clap::value_parser!(u32).range(1..=1024))]
    rails: Option<u32>,
    /// GPUs (ranks) per node [default: nccl-tests' device list].
    #[arg(long, value_name = "COUNT", value_parser = clap::value_parser!(u32).range(1..=1024))]
    gpus_per_node: Option<u32>,
    /// The nccl-tests binary when its output does not name it (before
    /// nccl-tests 2.17), e.g. all_reduce_perf.
    #[arg(long, value_name = "NAME", value_parser = collective)]
    collective: Option<Collective>,
    /// Share of the expected bandwidth that passes, in percent; below half
    /// the expected bandwidth fails.
    #[arg(long, value_name = "PERCENT", default_value_t = 80, value_parser = clap::value_parser!(u8).range(1..=100))]
    min_efficiency: u8,
    /// The cluster intent (`kind: DataPathPlan`, the file `zerohop plan`
    /// reads): its pool's NIC ports are the rails, its GPUs the ranks per
    /// node, their linkRateGbps the link rate, their linkType the link layer
    /// NCCL must use. --rails, --gpus-per-node and --link-rate override it.
    #[arg(long, value_name = "FILE")]
    intent: Option<PathBuf>,
    /// The directory `zerohop plan -o` wrote: the rails and GPUs per node
    /// its validate/ tests were rendered for.
    #[cfg(feature = "cluster")]
    #[arg(long, value_name = "DIR", conflicts_with = "intent")]
    plan: Option<PathBuf>,
    /// The node pool of --intent or --plan [default: the only pool].
    #[arg(long, value_name = "NAME")]
    pool: Option<String>,
}

impl ParseArgs {
    /// The fabric --intent or --plan describes, if either was given.
    fn planned(&self) -> Result<Option<PlannedFabric>, CliError> {
        if let Some(path) = &self.intent {
            return validate_intent::from_intent(path, self.pool.as_deref()).map(Some);
        }
        #[cfg(feature = "cluster")]
        if let Some(dir) = &self.plan {
            return validate_intent::from_plan(dir, self.pool.as_deref()).map(Some);
        }
        if self.pool.is_some() {
            return Err(CliError::usage("--pool names a pool of --intent or --plan"));
        }
        Ok(None)
    }
}

pub(crate) fn positive_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("`{text}` is not a positive rate in Gb/s")),
    }
}

pub(crate) fn collective(text: &str) -> Result<Collective, String> {
    Collective::parse(text).ok_or_else(|| {
        let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
        format!(
            "`{text}` is not an nccl-tests collective ({})",
            names.join(", ")
        )
    })
}

/// Runs `zerohop validate`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    match args {
        Args::Parse(args) => parse(args),
        #[cfg(feature = "cluster")]
        Args::Run(args) => super::validate_run::run(args),
    }
}

/// Runs `zerohop validate parse`: exit 0 when nothing failed, 1 when a
/// finding failed, 2 when a file could not be read or recognised (the
/// other files are still judged and reported).
fn parse(args: ParseArgs) -> Result<i32, CliError> {
    let planned = args.planned()?;
    let expectations = Expectations {
        link_rate_gbps: args.link_rate,
        rails: args.rails,
        gpus_per_node: args.gpus_per_node,
        collective: args.collective,
        min_efficiency: f64::from(args.min_efficiency) / 100.0,
        planned,
    };
    let mut findings = Vec::new();
    let mut unreadable = 0;
    for path in &args.files {
        let name = path.display().to_string();
        let text = match read_capture(path) {
            Ok(text) => text,
            Err(reason) => {
                eprintln!("error: {name}: {reason}");
                unreadable += 1;
                continue;
            }
        };
        let capture = Capture {
            name: &name,
            text: &text,
        };
        match judge::judge(&capture, &expectations) {
            Ok((_, judged)) => findings.extend(judged),
            Err(err) => {
                eprintln!("error: {err}");
                unreadable += 1;
            }
        }
    }
    let target = args
        .files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let report = judge::report(findings, target);
    if report.findings.is_empty() && unreadable > 0 && args.format == Format::Human {
        // Every file was refused, each with its reason on standard error:
        // an empty report would only say that nothing was checked.
        return Ok(ExitCode::USAGE);
    }
    output::report(&report, args.format, args.verbose)?;
    Ok(if unreadable > 0 {
        ExitCode::USAGE
    } else {
        report.exit_code()
    })
}

/// Reads a capture: standard input for `-`, else a regular file of at most
/// [`MAX_CAPTURE_BYTES`]. Opening does not wait (a FIFO without a writer
/// would block an ordinary open) and anything that is not a regular file
/// (a FIFO, a device, a directory, a socket) is refused by the type of
/// what was opened, not of what the path named a moment before. Meant for
/// every command that reads a captured output (`topo --compare` too).
pub(crate) fn read_capture(path: &Path) -> Result<String, String> {
    let cap = usize::try_from(MAX_CAPTURE_BYTES).unwrap_or(usize::MAX);
    let bytes = if path.as_os_str() == "-" {
        read_capped(io::stdin().lock(), cap)
            .map_err(|err| format!("cannot read standard input: {}", os_reason(&err)))?
    } else {
        let file = open_regular(path, Follow::Links).map_err(|err| match err {
            NotRegular::Kind(kind) => format!("{kind}, not a regular file: refused"),
            NotRegular::Io(err) => format!("cannot open: {}", os_reason(&err)),
        })?;
        let size = file.metadata().map(|meta| meta.len()).unwrap_or(0);
        if size > MAX_CAPTURE_BYTES {
            return Err(format!(
                "{size} bytes, over the {} MiB a capture may have",
                MAX_CAPTURE_BYTES >> 20
            ));
        }
        read_capped(file, cap).map_err(|err| format!("cannot read: {}", os_reason(&err)))?
    };
    // A file that grew while it was read (or a `/proc` file whose size
    // reads as 0) is still bounded.
    if bytes.len() > cap {
        return Err(format!(
            "over the {} MiB a capture may have",
            MAX_CAPTURE_BYTES >> 20
        ));
    }
    // Valid UTF-8 (nearly every capture) is taken as it is, without a copy.
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned()))
}
