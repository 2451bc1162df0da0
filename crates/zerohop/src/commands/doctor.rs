//! `zerohop doctor`: checks a host, every layer of the data path.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use zerohop_doctor::render;
use zerohop_doctor::topology::Topology;
use zerohop_doctor::{Profile, Selection, npd};
use zerohop_host::facts::kernel_log::DEFAULT_WINDOW;
use zerohop_host::{CollectOptions, Facts, HostRoot};

use crate::commands::host::HostArgs;
use crate::commands::intent::{self, IntentArgs};
use crate::error::CliError;
use crate::output::{self, Format};

/// Arguments of `zerohop doctor`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    intent: IntentArgs,
    /// Output format: `npd` answers as a node-problem-detector custom
    /// plugin (exit 0 OK, 1 NonOK, 2 Unknown; one line of at most 80 bytes).
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(&[Format::Human, Format::Json, Format::Npd, Format::Html]))]
    format: Format,
    /// Only these groups or check IDs (comma-separated or repeated), e.g.
    /// `--only kernel,PCI001`.
    #[arg(long, value_name = "GROUP|ID", value_delimiter = ',')]
    only: Vec<String>,
    /// Also list checks that passed or do not apply.
    #[arg(long, short)]
    verbose: bool,
    /// Judge the workload pod this runs in (the `pod` checks: its RDMA
    /// devices, RoCE addresses, limits, GPUs and NCCL environment) instead
    /// of the node. The default in a Kubernetes pod (`KUBERNETES_SERVICE_HOST`
    /// is set) reading this machine's `/` without `--only`.
    #[arg(long)]
    pod: bool,
    /// What the host is expected to have: a YAML file with the expectations
    /// below as keys (`rdma: true`, `roce-mtu: 9000`, `mounts: [/data]`), the
    /// agent's `--profile`. The flags override it; it overrides `--intent`.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Expect SR-IOV VFs on the data path (default: when VFs are enabled).
    #[arg(long, value_name = "BOOL")]
    expect_sriov: Option<bool>,
    /// Expect this many 1 GiB hugepages on each NUMA node with a GPU or NIC.
    #[arg(long, value_name = "PAGES")]
    expect_hugepages_1g: Option<u64>,
    /// Expect RDMA on the data path (default: when RDMA devices or Mellanox NICs exist).
    #[arg(long, value_name = "BOOL")]
    expect_rdma: Option<bool>,
    /// Expect every active RDMA port to run at this rate, in Gb/s.
    #[arg(long, value_name = "GBPS")]
    expect_rdma_rate: Option<u32>,
    /// Expect this MTU on every RoCE netdev (at least 4200 either way).
    #[arg(long, value_name = "BYTES")]
    expect_mtu: Option<u32>,
    /// The priority RoCE traffic uses, where DCQCN must be on (default 3).
    #[arg(long, value_name = "0-7", value_parser = clap::value_parser!(u8).range(0..8))]
    roce_priority: Option<u8>,
    /// Expect this many VFs on each RDMA physical function.
    #[arg(long, value_name = "COUNT")]
    expect_vfs_per_pf: Option<u32>,
    /// How GPUDirect RDMA must reach GPU memory (default: either path).
    #[arg(long, value_enum, value_name = "PATH")]
    expect_gpudirect: Option<GpuDirectArg>,
    /// Expect GPUDirect Storage (`nvidia_fs` loaded).
    #[arg(long, value_name = "BOOL")]
    expect_gds: Option<bool>,
    /// Expect GDRCopy (`gdrdrv` loaded).
    #[arg(long, value_name = "BOOL")]
    expect_gdrcopy: Option<bool>,
    /// A data mount (or a path under one) that carries training data;
    /// repeatable; it must be mounted. Default for the NFS checks: the
    /// NFS mounts over RDMA.
    #[arg(long = "mount", value_name = "PATH", value_parser = parse_mount)]
    mounts: Vec<String>,
    /// Expect NFS data mounts over RDMA (default: when declared with
    /// --mount or asked for in /etc/fstab).
    #[arg(long, value_name = "BOOL")]
    expect_nfs_rdma: Option<bool>,
    /// Expect this NVMe multipath I/O policy on fabric subsystems.
    #[arg(long, value_name = "POLICY", value_parser = ["round-robin", "queue-depth", "numa"])]
    expect_iopolicy: Option<String>,
    /// Expect NVMe-oF controllers on this transport.
    #[arg(long, value_name = "TRANSPORT", value_parser = ["rdma", "tcp", "fc"])]
    expect_nvme_transport: Option<String>,
    /// Probe the live data path at PATH (read-only): an O_DIRECT read of
    /// one block, and io_uring set up from this process.
    #[arg(long, value_name = "PATH")]
    probe: Option<PathBuf>,
    /// How far back the kernel-log checks look (default 24h): before now
    /// on this host, before the last record of a capture under --root.
    #[arg(long, value_name = "DURATION", value_parser = parse_window)]
    log_window: Option<Duration>,
}

/// A window as `30m`, `24h` or seconds; an empty window holds nothing.
fn parse_window(text: &str) -> Result<Duration, String> {
    match zerohop_io::units::parse_duration(text) {
        Ok(window) if window.is_zero() => {
            Err("an empty window holds no record: give one such as 30m or 24h".to_owned())
        }
        Ok(window) => Ok(window),
        Err(err) => Err(err.to_string()),
    }
}

/// A data mount as `--mount` takes it: an absolute path, as mount points
/// are in `/proc/self/mountinfo`. An empty or relative value would match
/// no mount, so the checks would judge a path nobody meant; control
/// characters would reach the report.
fn parse_mount(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("an empty path names no mount: give one such as /data".to_owned());
    }
    if text.chars().any(char::is_control) {
        return Err("a path with control characters names no mount".to_owned());
    }
    if !text.starts_with('/') {
        return Err(
            "a mount is an absolute path, as /proc/self/mountinfo lists it: give one such as /data"
                .to_owned(),
        );
    }
    Ok(text.to_owned())
}

/// The GPUDirect RDMA paths `--expect-gpudirect` accepts.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum GpuDirectArg {
    /// DMA-BUF: the open kernel module on Linux 5.12 or later.
    DmaBuf,
    /// The `nvidia_peermem` module.
    Peermem,
    /// GPUDirect RDMA is not used.
    None,
}

impl GpuDirectArg {
    fn into_profile(self) -> zerohop_doctor::profile::GpuDirect {
        match self {
            GpuDirectArg::DmaBuf => zerohop_doctor::profile::GpuDirect::DmaBuf,
            GpuDirectArg::Peermem => zerohop_doctor::profile::GpuDirect::Peermem,
            GpuDirectArg::None => zerohop_doctor::profile::GpuDirect::None,
        }
    }
}

/// Runs `zerohop doctor`.
pub(crate) fn run(args: Args) -> Result<i32, CliError> {
    let npd = args.format == Format::Npd;
    match check(args) {
        // NPD takes standard output as the condition's message: an input
        // error is an Unknown condition that says why, not an empty one.
        Err(err) if npd => {
            let (_, message) = err.exit();
            let answer = npd::unknown(message.trim_start_matches("error: "));
            output::to_stdout(|out| writeln!(out, "{}", answer.line))?;
            Ok(answer.exit_code)
        }
        other => other,
    }
}

/// Checks the host and writes the report in the format asked for.
fn check(args: Args) -> Result<i32, CliError> {
    let root = args.host.open()?;
    let selection = Selection::parse(args.only.iter().map(String::as_str)).map_err(|name| {
        CliError::usage(format!(
            "`{name}` is neither a check group nor a check id: `zerohop checks` lists both"
        ))
    })?;
    let flags = Profile {
        sriov: args.expect_sriov,
        hugepages_1g_per_node: args.expect_hugepages_1g,
        rdma: args.expect_rdma,
        rdma_rate_gbps: args.expect_rdma_rate,
        roce_mtu: args.expect_mtu,
        roce_priority: args.roce_priority,
        vfs_per_pf: args.expect_vfs_per_pf,
        gpudirect: args.expect_gpudirect.map(GpuDirectArg::into_profile),
        gds: args.expect_gds,
        gdrcopy: args.expect_gdrcopy,
        mounts: args.mounts.clone(),
        nfs_rdma: args.expect_nfs_rdma,
        nvme_iopolicy: args.expect_iopolicy.clone(),
        nvme_transport: args.expect_nvme_transport.clone(),
        ..Profile::default()
    };
    let flags = match &args.profile {
        Some(path) => flags.over(Profile::load(path).map_err(CliError::usage)?),
        None => flags,
    };
    let options = CollectOptions {
        log_window: args.log_window.unwrap_or(DEFAULT_WINDOW),
    };
    let started_at = SystemTime::now();
    let started = Instant::now();
    let mut facts = Facts::collect_with(&root, options);
    if let Some(target) = &args.probe {
        // The path is looked up under the probes' deadline: a hung mount
        // comes back as a probe that timed out, not as a hung doctor.
        facts.probes = zerohop_host::probe::run(&root, target)
            .map_err(|missing| CliError::usage(format!("--probe {missing}")))?;
    }
    let selection = match pod_mode(&args, &facts) {
        Some(detected) => {
            if detected && args.format == Format::Human {
                eprintln!(
                    "note: running in a kubernetes pod: judging the pod's view (--pod); --root /host judges the node"
                );
            }
            Selection::pod()
        }
        None => selection,
    };
    let profile = match intent::profile(&args.intent, &root, &facts)? {
        Some((expected, pool)) => {
            if args.format == Format::Human {
                eprintln!(
                    "note: checking against pool `{pool}` of {}",
                    args.intent
                        .intent
                        .as_deref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                );
            }
            flags.over(expected)
        }
        None => flags,
    };
    let host = host_name(&root);
    let report = zerohop_doctor::run(&facts, &profile, &selection).with_pass(
        started_at,
        host.clone(),
        started.elapsed(),
    );
    if args.format == Format::Npd {
        // NPD keeps the line as the condition message and maps the exit
        // code to the condition status, not the doctor's own codes.
        let answer = npd::result(&report);
        output::to_stdout(|out| writeln!(out, "{}", answer.line))?;
        return Ok(answer.exit_code);
    }
    if args.format == Format::Html {
        // The page carries the drawing of the same facts the checks judged.
        let host = host.unwrap_or_else(|| facts.root.clone());
        let topology = Topology::of(&facts);
        let svg = render::topology_svg(&facts, &topology, &host);
        let page = render::page::doctor(&report, &svg, &host);
        output::to_stdout(|out| out.write_all(page.as_bytes()))
            .context("failed to write the report")?;
        return Ok(report.exit_code());
    }
    output::report(&report, args.format, args.verbose)?;
    Ok(report.exit_code())
}

/// Whether to judge the pod rather than the node: `Some(false)` when
/// `--pod` asks for it without `--only`, `Some(true)` when it is detected
/// (this machine's `/`, read from inside a Kubernetes pod, no `--only`),
/// `None` for a node's run. `--only pod` selects the pod checks as a
/// group like any other.
fn pod_mode(args: &Args, facts: &Facts) -> Option<bool> {
    if !args.only.is_empty() {
        return None;
    }
    if args.pod {
        return Some(false);
    }
    let this_machine = args.host.root.is_none() && args.host.snapshot.is_none();
    (this_machine && facts.pod.in_pod()).then_some(true)
}

/// The host's name as its root shows it, for the report: `None` when it
/// cannot be read (a snapshot holds only what its recording's pass read).
pub(crate) fn host_name(root: &HostRoot) -> Option<String> {
    root.read_value(intent::HOSTNAME_FILE)
        .ok()
        .flatten()
        .filter(|name| !name.is_empty())
}
