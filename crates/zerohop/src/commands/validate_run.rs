//! `zerohop validate run`: the fabric tests of a plan, run in the cluster
//! and judged like `validate parse` judges captures.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use zerohop_core::exit::ExitCode;
use zerohop_validate::judge::Expectations;
use zerohop_validate::nccl::collective::Collective;
use zerohop_validate::run::{self, Options, Outcome};

use super::validate::{collective, positive_rate};
use super::validate_intent;
use crate::error::CliError;
use crate::output;
use crate::output::Format;

/// Arguments of `zerohop validate run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// Use this kubeconfig [default: $KUBECONFIG, ~/.kube/config, or the pod's service account].
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// The directory `zerohop plan -o` wrote; its validate/ holds the tests.
    #[arg(long, value_name = "DIR", default_value = ".")]
    plan: PathBuf,
    /// The node pool to test [default: the plan's only pool].
    #[arg(long, value_name = "NAME")]
    pool: Option<String>,
    /// Nodes to run on (kubernetes.io/hostname): perftest's server on the
    /// first and client on the second, nccl-tests on all of them [default:
    /// any nodes of the pool, two different ones per pair].
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    nodes: Vec<String>,
    /// Give up on the tests after this long; what did not finish fails.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_timeout)]
    timeout: Duration,
    /// Create the tests in this namespace [default: the plan's].
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(output::HUMAN_OR_JSON))]
    format: Format,
    /// Also list findings that passed or do not apply.
    #[arg(long, short)]
    verbose: bool,
    /// Link rate of one rail in Gb/s, e.g. 400, which perftest's output
    /// does not state.
    #[arg(long, value_name = "GBPS", value_parser = positive_rate)]
    link_rate: Option<f64>,
    /// The nccl-tests collective when its output does not name it.
    #[arg(long, value_name = "NAME", value_parser = collective)]
    collective: Option<Collective>,
    /// Share of the expected bandwidth that passes, in percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 80, value_parser = clap::value_parser!(u8).range(1..=100))]
    min_efficiency: u8,
    /// The cluster intent (`kind: DataPathPlan`) the plan was rendered
    /// from: the pool's rails, GPUs per node and link type [default: the
    /// rails and GPUs per node of the plan's tests].
    #[arg(long, value_name = "FILE")]
    intent: Option<PathBuf>,
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    match zerohop_cluster::duration::parse(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("the timeout must be longer than zero".to_owned()),
        Err(err) => Err(err.to_string()),
    }
}

/// Runs `zerohop validate run`: 0 nothing failed, 1 a finding failed, 2 a
/// usage or cluster error (or what it created could not all be deleted),
/// 128 + the signal when interrupted (130 SIGINT, 143 SIGTERM).
pub(crate) fn run(args: RunArgs) -> Result<i32, CliError> {
    if args.nodes.len() == 1 || args.nodes.iter().any(String::is_empty) {
        return Err(CliError::usage(
            "--nodes needs at least two node names, separated by commas",
        ));
    }
    let workloads = run::workloads::load(&args.plan, args.pool.as_deref()).map_err(|err| {
        CliError::usage(zerohop_core::render::printable::printable(&err).into_owned())
    })?;
    let planned = match &args.intent {
        Some(path) => Some(validate_intent::from_intent(
            path,
            Some(workloads.pool.as_str()),
        )?),
        None => validate_intent::of_workloads(&workloads, &args.plan),
    };
    let options = Options {
        kubeconfig: args.kubeconfig,
        namespace: args.namespace,
        nodes: args.nodes,
        timeout: args.timeout,
        expectations: Expectations {
            link_rate_gbps: args.link_rate,
            collective: args.collective,
            min_efficiency: f64::from(args.min_efficiency) / 100.0,
            planned,
            ..Expectations::default()
        },
    };
    let stderr = std::io::stderr();
    let bar = stderr.is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    });
    let progress = |line: &str| {
        let line = zerohop_core::render::printable::printable(line);
        match &bar {
            Some(bar) => bar.set_message(line.into_owned()),
            None => eprintln!("{line}"),
        }
    };
    // The run waits for SIGINT and SIGTERM itself, to delete what it created.
    crate::interrupt::handled_by_the_command();
    let outcome = run::run(workloads, &options, &progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let outcome = outcome.map_err(|err| CliError::usage(err.to_string()))?;
    let (report, leftover) = match outcome {
        Outcome::Interrupted { leftover } => {
            if let Some(left) = leftover {
                eprintln!("error: {left}");
            }
            eprintln!("interrupted; the tests were deleted");
            return Ok(crate::interrupt::exit_code());
        }
        Outcome::Judged { report, leftover } => (report, leftover),
    };
    output::report(&report, args.format, args.verbose)?;
    if let Some(left) = leftover {
        eprintln!("error: {left}");
        return Ok(ExitCode::USAGE);
    }
    Ok(report.exit_code())
}
