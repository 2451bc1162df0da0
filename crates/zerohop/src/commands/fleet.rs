//! `zerohop fleet`: every node's data path as its agent published it.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use zerohop_agent::fleet::{self, Options, OutputFormat};
use zerohop_cluster::duration;

use crate::error::CliError;
use crate::output::{self, Format};

/// Arguments of `zerohop fleet`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Use this kubeconfig [default: $KUBECONFIG, ~/.kube/config, or the pod's service account].
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Only the nodes matching this label selector (`kubectl get -l` syntax).
    #[arg(long, short = 'l', value_name = "SELECTOR")]
    selector: Option<String>,
    /// Keep watching and show the fleet again whenever it changes (Ctrl-C ends).
    #[arg(long, short = 'w')]
    watch: bool,
    /// One row per failing check with the nodes it fails on.
    #[arg(long)]
    by_check: bool,
    /// Output format (`html`: one page, not with `--watch`).
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(&[Format::Human, Format::Json, Format::Html]))]
    format: Format,
    /// The agents' interval: a heartbeat older than three intervals is
    /// stale (a node's report object, when there is one, says its own).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    interval: Duration,
    /// Give up on an API request that takes longer, response included.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    request_timeout: Duration,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    duration::parse(text)
        .map_err(|err| err.to_string())
        .and_then(|d| {
            if d.is_zero() {
                Err("the interval must be longer than zero".to_owned())
            } else {
                Ok(d)
            }
        })
}

/// Runs `zerohop fleet`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    if args.watch && args.format == Format::Html {
        return Err(CliError::usage(
            "--format html writes one page and cannot follow --watch: drop one of them",
        ));
    }
    let options = Options {
        kubeconfig: args.kubeconfig,
        selector: args.selector,
        watch: args.watch,
        by_check: args.by_check,
        format: match args.format {
            Format::Json => OutputFormat::Json,
            Format::Html => OutputFormat::Html,
            // Human, the only other value `--format` parses here.
            _ => OutputFormat::Human,
        },
        interval: args.interval,
        request_timeout: args.request_timeout,
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    if options.watch {
        // `--watch` runs until SIGINT or SIGTERM, which its runtime waits for.
        crate::interrupt::handled_by_the_command();
    }
    fleet::run(&options, &mut out)
        .map(crate::interrupt::unless_signalled)
        .map_err(|err| CliError::usage(err.to_string()))
}
