//! `zerohop agent`: the doctor on a schedule, published as metrics, a node
//! condition, Node Feature Discovery labels, events and a report object.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use zerohop_agent::agent::{self, Options};
use zerohop_cluster::duration;
use zerohop_core::exit::ExitCode;
use zerohop_doctor::Profile;

use zerohop_plan::{AgentPlan, Monitor, Platform};

use crate::commands::plan::PlatformArg;
use crate::error::CliError;
use crate::output;

/// Arguments of `zerohop agent`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Read the host tree under DIR: the host mounted at /host in the DaemonSet.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Serve /metrics, /report, /healthz and /readyz on this address.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:9477")]
    listen: SocketAddr,
    /// Time between passes, spread by ±10 % (`90s`, `5m`, `1h`).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    interval: Duration,
    /// Give up on a pass that takes longer (a read blocked on a wedged device).
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration)]
    pass_timeout: Duration,
    /// Time between samples of the RDMA port and NFS transport counters.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    counters_interval: Duration,
    /// Write the capability labels for Node Feature Discovery into DIR
    /// (its features.d), removed when the agent stops.
    #[arg(long, value_name = "DIR")]
    features_dir: Option<PathBuf>,
    /// Write the zerohop.dev/DataPathReady condition on this node, and
    /// announce its changes as events.
    #[arg(long)]
    node_condition: bool,
    /// Write this node's DataPathReport object.
    #[arg(long)]
    report_object: bool,
    /// This node's name [default: $NODE_NAME, set from spec.nodeName by the DaemonSet].
    #[arg(long, value_name = "NAME")]
    node_name: Option<String>,
    /// Use this kubeconfig instead of the pod's service account.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// What the host is expected to have: a YAML file with the doctor's
    /// expectations as keys (`rdma: true`, `roce-mtu: 9000`, `mounts: [/data]`).
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Also sample the counters of SR-IOV virtual functions' RDMA devices.
    #[arg(long)]
    vf_counters: bool,
    /// Print the deployment (namespace, CRD, RBAC, DaemonSet) and exit.
    #[arg(long)]
    print_manifests: bool,
    /// Remove what the agents wrote from the cluster and exit: the
    /// zerohop.dev/DataPathReady condition from every node, and every
    /// DataPathReport. Delete the DaemonSet first (docs/agent.md, "Uninstall").
    #[arg(long, conflicts_with = "print_manifests")]
    uninstall: bool,
    /// The image the printed DaemonSet runs.
    #[arg(long, value_name = "IMAGE", requires = "print_manifests")]
    image: Option<String>,
    /// The namespace of the printed DaemonSet.
    #[arg(
        long,
        value_name = "NAMESPACE",
        default_value = "zerohop-system",
        requires = "print_manifests"
    )]
    namespace: String,
    /// Also print a Prometheus Operator monitor, or the alerts; repeatable.
    #[arg(long, value_enum, value_name = "KIND", requires = "print_manifests")]
    monitor: Vec<MonitorArg>,
    /// A label of the printed monitors and alerts, for the Prometheus that
    /// selects them (kube-prometheus-stack: `release=<its release>`); repeatable.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_label, requires = "print_manifests")]
    monitor_label: Vec<(String, String)>,
    /// Print a DaemonSet that does not read the kernel log: an
    /// unprivileged container, whose kernel-log checks say unknown.
    #[arg(long, requires = "print_manifests")]
    no_kernel_log: bool,
    /// The platform of the printed deployment: OpenShift adds the
    /// SecurityContextConstraints that admit the agent.
    #[arg(
        long,
        value_enum,
        default_value = "kubernetes",
        requires = "print_manifests"
    )]
    platform: PlatformArg,
}

/// The monitors `--monitor` can add.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum MonitorArg {
    /// A ServiceMonitor and the headless Service it selects.
    ServiceMonitor,
    /// A PodMonitor.
    PodMonitor,
    /// A PrometheusRule with the agent's alerts.
    PrometheusRule,
}

fn parse_label(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .ok_or_else(|| format!("{text:?} is not KEY=VALUE"))
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    duration::parse(text).map_err(|err| err.to_string())
}

/// Runs `zerohop agent`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    if args.print_manifests {
        let monitors = args
            .monitor
            .iter()
            .map(|m| match m {
                MonitorArg::ServiceMonitor => Monitor::ServiceMonitor,
                MonitorArg::PodMonitor => Monitor::PodMonitor,
                MonitorArg::PrometheusRule => Monitor::PrometheusRule,
            })
            .collect();
        let image = args
            .image
            .unwrap_or_else(zerohop_known::zerohop_api::default_image);
        let mut settings = AgentPlan::new(args.namespace, image, monitors)
            .and_then(|plan| plan.with_monitor_labels(args.monitor_label.into_iter().collect()))
            .map_err(CliError::usage)?;
        settings.kernel_log = !args.no_kernel_log;
        let text = zerohop_plan::agent::render(&settings, Platform::from(args.platform));
        output::to_stdout(|out| out.write_all(text.as_bytes()))
            .context("failed to write the manifests")?;
        return Ok(ExitCode::OK);
    }
    if args.uninstall {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let code = zerohop_agent::uninstall::run(args.kubeconfig.as_deref(), &mut out)
            .map_err(|err| CliError::usage(err.to_string()))?;
        return match out.flush() {
            Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(anyhow::Error::from(err)
                    .context("failed to write the summary")
                    .into())
            }
            _ => Ok(code),
        };
    }
    let profile = match &args.profile {
        Some(path) => zerohop_doctor::Profile::load(path).map_err(CliError::usage)?,
        None => Profile::default(),
    };
    let node_name = args
        .node_name
        .or_else(|| std::env::var("NODE_NAME").ok().filter(|n| !n.is_empty()));
    // The agent waits for SIGTERM and SIGINT itself, to remove its
    // features file; it runs until one of them.
    crate::interrupt::handled_by_the_command();
    agent::run(Options {
        root: args.root,
        listen: args.listen,
        interval: args.interval,
        pass_timeout: args.pass_timeout,
        counters_interval: args.counters_interval,
        features_dir: args.features_dir,
        node_condition: args.node_condition,
        report_object: args.report_object,
        node_name,
        kubeconfig: args.kubeconfig,
        profile,
        vf_counters: args.vf_counters,
    })
    .map_err(|err| CliError::usage(err.to_string()))?;
    Ok(crate::interrupt::unless_signalled(ExitCode::OK))
}
