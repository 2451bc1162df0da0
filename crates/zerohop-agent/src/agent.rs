//! `zerohop agent`: the doctor on a schedule, its result published
//! everywhere users look.
//!
//! One task runs a pass every interval (±10 %, so that the agents of a
//! cluster spread their load), on the one thread kept for passes, with a
//! deadline. Its snapshot goes to the HTTP endpoints, the features file
//! and, through the publisher, to the API server. A second schedule, on a
//! thread of its own, samples the RDMA and NFS counters. A pass that blocks
//! on a read is cut at its deadline and reported as such; nothing waits
//! for it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot, Process};

use crate::bounded::{Bounded, Outcome};
use crate::counters::{self, Targets};
use crate::features_file;
use crate::http::{self, Shared};
use crate::jitter;
use crate::log;
use crate::metrics::{Live, PassOutcome};
use crate::publisher::{self, Settings};
use crate::snapshot::{CounterSnapshot, Snapshot};
use zerohop_cluster::duration;

/// The default interval between passes. A full pass on a large host (2,000
/// PCI functions, 2,000 RDMA devices) takes about a quarter of a second, so
/// five minutes costs under 0.1 % of a core; it is also the heartbeat of
/// the node condition (one Node write per node per five minutes, as
/// node-problem-detector's default) and the resolution at which a broken
/// data path is noticed.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);
/// The default deadline of one pass: far above a slow pass, far below the
/// interval.
pub const DEFAULT_PASS_TIMEOUT: Duration = Duration::from_secs(120);
/// The default interval between counter samples: fine enough for rates
/// over a Prometheus `rate(…[2m])`.
pub const DEFAULT_COUNTERS_INTERVAL: Duration = Duration::from_secs(30);
/// The shortest interval accepted.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The longest a counter sample may take.
const SAMPLE_DEADLINE: Duration = Duration::from_secs(20);

/// Everything the agent is told.
#[derive(Debug, Clone)]
pub struct Options {
    /// The host tree (`/host` in the DaemonSet); `None` for this machine.
    pub root: Option<PathBuf>,
    /// Where to serve the endpoints.
    pub listen: SocketAddr,
    /// Time between passes.
    pub interval: Duration,
    /// Deadline of one pass.
    pub pass_timeout: Duration,
    /// Time between counter samples.
    pub counters_interval: Duration,
    /// Node Feature Discovery's `features.d`, when labels are wanted.
    pub features_dir: Option<PathBuf>,
    /// Write the node condition (and events).
    pub node_condition: bool,
    /// Write the `DataPathReport` object.
    pub report_object: bool,
    /// The node's name (`NODE_NAME` from the downward API).
    pub node_name: Option<String>,
    /// A kubeconfig; else in-cluster configuration.
    pub kubeconfig: Option<PathBuf>,
    /// What the host is expected to have.
    pub profile: Profile,
    /// Sample the counters of VFs too.
    pub vf_counters: bool,
}

/// Why the agent did not start; always an exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

/// Runs the agent until SIGTERM or SIGINT.
pub fn run(options: Options) -> Result<(), StartError> {
    let root = match &options.root {
        Some(dir) => HostRoot::at(dir).map_err(|err| {
            StartError(format!(
                "{err}: --root takes a directory holding proc/ and sys/"
            ))
        })?,
        None => HostRoot::live_as(Process::current()),
    };
    if options.interval < MIN_INTERVAL || options.counters_interval < MIN_INTERVAL {
        return Err(StartError(format!(
            "--interval and --counters-interval must be at least {}",
            duration::format(MIN_INTERVAL)
        )));
    }
    if let Some(dir) = &options.features_dir {
        features_file::check_dir(dir).map_err(StartError)?;
    }
    let node = match &options.node_name {
        Some(name) => {
            check_node_name(name).map_err(StartError)?;
            name.clone()
        }
        None if options.node_condition || options.report_object => {
            return Err(StartError(
                "no node name: set NODE_NAME from the downward API (spec.nodeName) or pass --node-name".into(),
            ));
        }
        None => local_hostname(&root),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("zerohop-agent")
        .enable_all()
        .build()
        .map_err(|err| StartError(format!("cannot start the runtime: {err}")))?;
    let result = runtime.block_on(serve(options, root, node));
    // Threads blocked in a host read are not waited for.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}

async fn serve(options: Options, root: HostRoot, node: String) -> Result<(), StartError> {
    let listener = TcpListener::bind(options.listen)
        .await
        .map_err(|err| StartError(format!("cannot listen on {}: {err}", options.listen)))?;
    let client = if options.node_condition || options.report_object {
        Some(
            zerohop_cluster::api::client(
                options.kubeconfig.as_deref(),
                zerohop_cluster::api::CALL_DEADLINE,
                false,
            )
            .await
            .map_err(|err| StartError(err.to_string()))?,
        )
    } else {
        None
    };
    let mut terminate = signal(SignalKind::terminate())
        .map_err(|err| StartError(format!("cannot handle SIGTERM: {err}")))?;
    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(|err| StartError(format!("cannot handle SIGINT: {err}")))?;
    let live = Arc::new(Live::default());
    let (snapshot_tx, snapshot_rx) = watch::channel(None::<Arc<Snapshot>>);
    let (counters_tx, counters_rx) = watch::channel(None::<Arc<CounterSnapshot>>);
    let shared = Arc::new(Shared {
        node: node.clone(),
        snapshot: snapshot_rx.clone(),
        counters: counters_rx,
        live: Arc::clone(&live),
    });
    log::info(
        "agent started",
        &[
            ("node", &node),
            (
                "listen",
                &listener
                    .local_addr()
                    .map_or_else(|_| options.listen.to_string(), |a| a.to_string()),
            ),
            ("root", &root.display()),
            ("interval", &duration::format(options.interval)),
            ("version", env!("CARGO_PKG_VERSION")),
        ],
    );
    let root = Arc::new(root);
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(http::serve(listener, shared));
    if let Some(client) = client {
        let settings = Settings {
            node: node.clone(),
            interval: options.interval,
            condition: options.node_condition,
            report_object: options.report_object,
        };
        tasks.spawn(publisher::run(
            client,
            settings,
            snapshot_rx.clone(),
            Arc::clone(&live),
        ));
    }
    tasks.spawn(sample_counters(
        Arc::clone(&root),
        node.clone(),
        options.counters_interval,
        snapshot_rx,
        counters_tx,
        Arc::clone(&live),
    ));
    tasks.spawn(passes(
        Arc::clone(&root),
        node.clone(),
        options.clone(),
        snapshot_tx,
        Arc::clone(&live),
    ));
    let signal_name = tokio::select! {
        _ = terminate.recv() => "SIGTERM",
        _ = interrupt.recv() => "SIGINT",
        // The tasks loop forever; one ending is a bug, and the agent stops
        // rather than serve without it.
        ended = tasks.join_next() => {
            return Err(StartError(format!("internal error: a task of the agent ended: {ended:?}")));
        }
    };
    if let Some(dir) = &options.features_dir
        && let Err(err) = features_file::remove(dir)
    {
        log::warn(
            "cannot remove the features file",
            &[
                ("dir", &dir.display().to_string()),
                ("error", &err.to_string()),
            ],
        );
    }
    log::info("agent stopped", &[("signal", signal_name)]);
    tasks.abort_all();
    Ok(())
}

/// The pass schedule: a pass now, then every interval ±10 %. Each pass
/// reads through a fresh root, which sees what changed on the host since
/// the last.
async fn passes(
    root: Arc<HostRoot>,
    node: String,
    options: Options,
    snapshots: watch::Sender<Option<Arc<Snapshot>>>,
    live: Arc<Live>,
) {
    let runner = Bounded::new("pass", Arc::clone(&live.abandoned));
    let deadline = options.pass_timeout.min(options.interval);
    let mut targets = Targets::default();
    let mut sequence = 0;
    loop {
        sequence += 1;
        let started = Instant::now();
        let started_at = SystemTime::now();
        let job_root = root.fresh();
        let profile = options.profile.clone();
        let vfs = options.vf_counters;
        let outcome = runner
            .run(deadline, move || {
                let facts = Facts::collect(&job_root);
                let report = zerohop_doctor::run(&facts, &profile, &Selection::all());
                let targets = counters::targets(&facts, vfs, &profile.mounts);
                (report, targets)
            })
            .await;
        let finished_at = Timestamp::now();
        let took = started.elapsed();
        let not_finished = |why: String| {
            Snapshot::not_finished(&node, sequence, finished_at, took, &why, targets.clone())
        };
        let snapshot = match outcome {
            Outcome::Finished((report, new_targets)) => {
                live.pass(PassOutcome::Completed);
                targets = new_targets.clone();
                let report = report.with_pass(started_at, Some(node.clone()), took);
                Snapshot::completed(&node, sequence, finished_at, took, report, new_targets)
            }
            Outcome::TimedOut => {
                live.pass(PassOutcome::TimedOut);
                not_finished(format!(
                    "the pass did not finish within {}: a read of the host blocked; /metrics shows zerohop_abandoned_passes",
                    duration::format(deadline)
                ))
            }
            Outcome::Busy => {
                live.pass(PassOutcome::Skipped);
                not_finished(
                    "the previous pass is still blocked in a read of the host; no new pass was started".to_owned(),
                )
            }
            Outcome::Failed(why) => {
                live.pass(PassOutcome::Failed);
                not_finished(why)
            }
        };
        let snapshot = Arc::new(snapshot);
        log::info(
            "pass published",
            &[
                ("pass", &sequence.to_string()),
                ("ready", snapshot.verdict.readiness.condition_status()),
                ("reason", &snapshot.verdict.reason),
                ("duration", &format!("{:.3}s", took.as_secs_f64())),
            ],
        );
        if snapshot.report.is_some()
            && let Some(dir) = &options.features_dir
        {
            write_features(dir, &snapshot, options.interval).await;
        }
        snapshots.send_replace(Some(snapshot));
        tokio::time::sleep(jitter::spread(options.interval, 0.1, jitter::unit())).await;
    }
}

/// Writes the features file on a blocking thread with a deadline: a
/// hostPath on a hung file system must not stop the passes. A pass that
/// did not finish leaves the last file alone; its expiry removes the
/// labels if no pass finishes for three intervals.
async fn write_features(dir: &Path, snapshot: &Snapshot, interval: Duration) {
    let expires = Timestamp::now()
        .checked_add(SignedDuration::try_from(interval * 3).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX);
    let text = features_file::render(&snapshot.node, &snapshot.capabilities, expires);
    let dir = dir.to_path_buf();
    let job = tokio::task::spawn_blocking(move || features_file::write(&dir, &text));
    let failure = match tokio::time::timeout(Duration::from_secs(10), job).await {
        Ok(Ok(Ok(_))) => return,
        Ok(Ok(Err(err))) => err.to_string(),
        Ok(Err(err)) => err.to_string(),
        Err(_) => "the write did not finish within 10s".to_owned(),
    };
    log::warn("cannot write the features file", &[("error", &failure)]);
}

/// The counter schedule: after the first pass, every counters interval,
/// each sample through a fresh root.
async fn sample_counters(
    root: Arc<HostRoot>,
    node: String,
    interval: Duration,
    mut snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    samples: watch::Sender<Option<Arc<CounterSnapshot>>>,
    live: Arc<Live>,
) {
    let runner = Bounded::new("counters", Arc::clone(&live.abandoned));
    if snapshots.wait_for(Option::is_some).await.is_err() {
        return;
    }
    let mut last_problem = String::new();
    loop {
        let targets = snapshots
            .borrow()
            .as_ref()
            .map(|s| s.targets.clone())
            .unwrap_or_default();
        let job_root = root.fresh();
        let outcome = runner
            .run(SAMPLE_DEADLINE.min(interval), move || {
                counters::sample(&job_root, &targets)
            })
            .await;
        let problem = match outcome {
            Outcome::Finished(sample) => {
                samples.send_replace(Some(Arc::new(CounterSnapshot::new(&node, sample))));
                String::new()
            }
            Outcome::TimedOut => "a counter read blocked past its deadline".to_owned(),
            Outcome::Busy => "the previous sample is still blocked in a read".to_owned(),
            Outcome::Failed(why) => why,
        };
        if !problem.is_empty() && problem != last_problem {
            log::warn("counters not sampled", &[("why", &problem)]);
        }
        last_problem = problem;
        tokio::time::sleep(jitter::spread(interval, 0.1, jitter::unit())).await;
    }
}

/// A node name must be a DNS subdomain: it names the report object, the
/// events and the `node` label.
pub fn check_node_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|part| {
            !part.is_empty()
                && part.len() <= 63
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        });
    if valid {
        Ok(())
    } else {
        Err(format!(
            "node name {:?} is not a Kubernetes node name (a DNS subdomain: lowercase letters, digits, '-' and '.')",
            name
        ))
    }
}

/// The host's name, for the `node` label when the agent runs outside
/// Kubernetes.
fn local_hostname(root: &HostRoot) -> String {
    root.read_value("/proc/sys/kernel/hostname")
        .ok()
        .flatten()
        .filter(|name| check_node_name(name).is_ok())
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_dns_subdomains() {
        assert!(check_node_name("gpu-node-1.example.com").is_ok());
        for bad in ["", "Upper", "a..b", "-a", "a\nb", "a_b", &"a".repeat(254)] {
            assert!(check_node_name(bad).is_err(), "{bad:?}");
        }
    }
}
