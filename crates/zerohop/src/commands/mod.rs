//! One module per subcommand; each has an `Args` and a `run`.

#[cfg(feature = "cluster")]
mod agent;
mod bench;
mod catalog;
mod diff;
mod doctor;
#[cfg(feature = "cluster")]
mod fleet;
mod host;
mod intent;
mod lint;
mod plan;
mod snapshot;
mod topo;
mod validate;
mod validate_intent;
#[cfg(feature = "cluster")]
mod validate_run;

use clap::Subcommand;

use crate::error::CliError;

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Check this host (or a captured one), every layer of the data path.
    Doctor(doctor::Args),
    /// List every doctor check, lint rule, intent rule and validate judgement.
    Checks(catalog::ChecksArgs),
    /// Show the documentation of a check, rule or judgement.
    Explain(catalog::ExplainArgs),
    /// Show each GPU's nearest RDMA NIC and the matching NCCL_IB_HCA.
    Topo(topo::Args),
    /// Record what the doctor reads on this host (or a host tree) into one
    /// archive that `doctor --snapshot` and `diff` read elsewhere.
    Snapshot(snapshot::Args),
    /// Show what differs between two hosts (snapshots, host trees, or `-`
    /// for this one): findings, then facts by layer, then files.
    Diff(diff::Args),
    /// Render the full manifest set for an intent file, in deploy order.
    Plan(plan::Args),
    /// Find mistakes in existing Kubernetes manifests.
    Lint(lint::Args),
    /// Measure storage → host memory → GPU throughput, path by path.
    #[command(subcommand)]
    Bench(bench::Args),
    /// Judge what fabric tests printed: nccl-tests, NCCL_DEBUG, perftest, topo, GDS.
    #[command(subcommand)]
    Validate(validate::Args),
    /// Check this node on a schedule and publish the result: metrics, a
    /// node condition, Node Feature Discovery labels, events.
    #[cfg(feature = "cluster")]
    Agent(agent::Args),
    /// Show every node's data path as its agent published it.
    #[cfg(feature = "cluster")]
    Fleet(fleet::Args),
}

/// Runs a subcommand and returns the process exit code.
pub(crate) fn run(command: Command) -> Result<i32, CliError> {
    match command {
        Command::Doctor(args) => doctor::run(args),
        Command::Checks(args) => catalog::checks(args),
        Command::Explain(args) => catalog::explain(args),
        Command::Topo(args) => topo::run(args),
        Command::Snapshot(args) => snapshot::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Lint(args) => lint::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Validate(args) => validate::run(args),
        #[cfg(feature = "cluster")]
        Command::Agent(args) => agent::run(args),
        #[cfg(feature = "cluster")]
        Command::Fleet(args) => fleet::run(args),
    }
}
