//! `zerohop validate run`: creates the fabric tests `zerohop plan` rendered
//! under `validate/`, follows them with watches, collects their logs and
//! judges them with the judgements of `validate parse`, per rail and node
//! pair. Whatever happens (a finding, a timeout, Ctrl-C, SIGTERM, an API
//! error), everything it created is deleted by its run label before it
//! returns.

mod cluster;
pub mod workloads;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use serde_json::Value;
use zerohop_cluster::api::{self, ApiError};
use zerohop_core::{Finding, Report, Status};
use zerohop_plan::validation::{LABEL_COMPONENT, LABEL_RAIL, Role};

use crate::judge::{self, Capture, Expectations, Judgement};
pub use workloads::{RUN_LABEL, Workloads};

/// How long cleanup may take, whatever the run's own timeout.
const CLEANUP_DEADLINE: Duration = Duration::from_secs(30);

/// What to run, where, and how to judge it.
#[derive(Debug, Clone)]
pub struct Options {
    /// The kubeconfig; `None` finds one as `kubectl` does.
    pub kubeconfig: Option<PathBuf>,
    /// The namespace; `None` for the plan's.
    pub namespace: Option<String>,
    /// Node names: the first two carry the perftest server and client, all
    /// of them the nccl-tests workers; empty to let the scheduler choose
    /// within the pool.
    pub nodes: Vec<String>,
    /// The whole run's time limit.
    pub timeout: Duration,
    /// What the judgements expect.
    pub expectations: Expectations,
}

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    /// The tests ran (or ran out of time) and were judged; `cleaned` says
    /// whether everything created was deleted.
    Judged {
        /// The findings, as `validate parse` reports them.
        report: Report,
        /// `None` when cleanup succeeded, else what to delete by hand.
        leftover: Option<String>,
    },
    /// SIGINT or SIGTERM: the run stopped and cleaned up.
    Interrupted {
        /// `None` when cleanup succeeded, else what to delete by hand.
        leftover: Option<String>,
    },
}

/// Why a run could not start: a usage, configuration or cluster error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError(pub String);

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunError {}

/// Runs the fabric tests of `workloads`, telling `progress` what happens.
///
/// # Errors
/// [`RunError`] when no client can be made, or when the first object
/// cannot be created (forbidden, no such namespace): nothing was judged.
pub fn run(
    workloads: Workloads,
    options: &Options,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Outcome, RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| RunError(format!("cannot start the runtime: {err}")))?;
    runtime.block_on(run_async(workloads, options, progress))
}

async fn run_async(
    workloads: Workloads,
    options: &Options,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Outcome, RunError> {
    // Signals are caught from the start, so that Ctrl-C while connecting
    // still ends with a cleanup (of nothing) rather than a kill.
    let mut interrupt = signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut terminate = signal(tokio::signal::unix::SignalKind::terminate())?;
    let client = api::client(options.kubeconfig.as_deref(), api::CALL_DEADLINE, true)
        .await
        .map_err(|err| RunError(err.to_string()))?;
    let namespace = options
        .namespace
        .clone()
        .unwrap_or_else(|| workloads.namespace.clone());
    let run = Run {
        client,
        namespace,
        id: run_id(),
        options: options.clone(),
        findings: Mutex::new(Vec::new()),
        current: Mutex::new(None),
        progress,
        stopped: std::sync::atomic::AtomicBool::new(false),
    };
    progress(&format!(
        "run {} in namespace {} (label {RUN_LABEL}={})",
        run.id, run.namespace, run.id
    ));
    let ended = tokio::select! {
        result = run.tests(&workloads) => Ended::Done(result),
        () = tokio::time::sleep(options.timeout) => Ended::TimedOut,
        _ = interrupt.recv() => Ended::Interrupted,
        _ = terminate.recv() => Ended::Interrupted,
    };
    progress("cleaning up");
    let leftover = run.cleanup().await;
    let target = format!("validate run {} (pool {})", run.id, workloads.pool);
    match ended {
        Ended::Interrupted => Ok(Outcome::Interrupted { leftover }),
        Ended::Done(Err(err)) => Err(RunError(match leftover {
            Some(left) => format!("{err}; {left}"),
            None => err.0,
        })),
        Ended::Done(Ok(())) => Ok(Outcome::Judged {
            report: judge::report(run.take_findings(), target),
            leftover,
        }),
        Ended::TimedOut => {
            let current = lock(&run.current).take();
            if let Some(current) = current {
                let (state, fix) = current.state(&run.namespace);
                run.add(judge::without_capture(
                    current.judgement,
                    &current.subject,
                    Status::Fail,
                    format!(
                        "did not finish within {}: {state}",
                        zerohop_cluster::duration::format(options.timeout)
                    ),
                    &fix,
                ));
            }
            Ok(Outcome::Judged {
                report: judge::report(run.take_findings(), target),
                leftover,
            })
        }
    }
}

enum Ended {
    Done(Result<(), RunError>),
    TimedOut,
    Interrupted,
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal, RunError> {
    tokio::signal::unix::signal(kind)
        .map_err(|err| RunError(format!("cannot catch signals: {err}")))
}

/// An ID unique enough among the runs of one cluster: the time and the
/// process, as a label value.
fn run_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 40);
    format!("{:010x}", mixed & 0xff_ffff_ffff)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The test in progress, for a timeout's finding.
struct Current {
    judgement: &'static Judgement,
    subject: String,
    last: Option<Pod>,
    /// The `MPIJob` created for the test, whose pods the MPI Operator
    /// makes.
    job: Option<String>,
}

impl Current {
    /// What the test was waiting for, and what to do about it.
    fn state(&self, namespace: &str) -> (String, String) {
        match (&self.last, &self.job) {
            (Some(pod), _) => (
                cluster::describe(pod),
                "see why with kubectl describe pod; a pod that is never scheduled lacks a free GPU or RDMA device of the rail on the pool's nodes, or --nodes names nodes outside the pool".to_owned(),
            ),
            (None, Some(job)) => (
                format!(
                    "MPIJob {job} was created but no launcher pod appeared: the MPI Operator is not running, or does not take MPIJobs in namespace {namespace}"
                ),
                format!(
                    "check that the MPI Operator's pod runs and read the MPIJob's events (kubectl get pods -A | grep mpi-operator; kubectl -n {namespace} describe mpijob {job})"
                ),
            ),
            (None, None) => (
                "nothing created yet".to_owned(),
                "see whether the API server answers (kubectl get --raw /readyz), then run again"
                    .to_owned(),
            ),
        }
    }
}

struct Run<'a> {
    client: Client,
    namespace: String,
    id: String,
    options: Options,
    findings: Mutex<Vec<Finding>>,
    current: Mutex<Option<Current>>,
    progress: &'a (dyn Fn(&str) + Sync),
    /// Set when a test pod's own check found it cannot carry the test: the
    /// run stops with those findings.
    stopped: std::sync::atomic::AtomicBool,
}

impl Run<'_> {
    fn add(&self, finding: Finding) {
        lock(&self.findings).push(finding);
    }

    fn take_findings(&self) -> Vec<Finding> {
        std::mem::take(&mut *lock(&self.findings))
    }

    fn begin(&self, judgement: &'static Judgement, subject: String) {
        *lock(&self.current) = Some(Current {
            judgement,
            subject,
            last: None,
            job: None,
        });
    }

    fn created_job(&self, name: &str) {
        if let Some(current) = lock(&self.current).as_mut() {
            current.job = Some(name.to_owned());
        }
    }

    /// The run cannot follow its pods: the server refuses to list or watch
    /// them (403), or no longer takes the credentials (401).
    fn unfollowed(&self, err: &ApiError) -> RunError {
        let needs = if err.code == Some(403) {
            "; validate run needs list and watch on pods there"
        } else {
            ""
        };
        RunError(format!(
            "cannot follow the run's pods in namespace {}: {err}{needs}",
            self.namespace
        ))
    }

    fn saw(&self, pod: &Pod) {
        if let Some(current) = lock(&self.current).as_mut() {
            current.last = Some(pod.clone());
        }
    }

    fn selector(&self, role: Role, rail: Option<u32>) -> String {
        let mut selector = format!("{RUN_LABEL}={},{LABEL_COMPONENT}={}", self.id, role.label());
        if let Some(rail) = rail {
            selector.push_str(&format!(",{LABEL_RAIL}={rail}"));
        }
        selector
    }

    /// Every test, one after the other: perftest rail by rail (each pair
    /// holds a GPU and a VF of both nodes), then nccl-tests.
    async fn tests(&self, workloads: &Workloads) -> Result<(), RunError> {
        for (index, pair) in workloads.perftest.iter().enumerate() {
            if self.stopped() {
                break;
            }
            self.perftest(pair, index == 0).await?;
        }
        if let Some(job) = workloads.mpijob.as_ref().filter(|_| !self.stopped()) {
            self.nccl_tests(job, workloads.perftest.is_empty(), workloads.perftest.len())
                .await?;
        }
        *lock(&self.current) = None;
        Ok(())
    }

    /// Creates an object; the first creation of a run turns a refusal into
    /// a [`RunError`] (the run cannot work at all), later ones into a
    /// finding of the test.
    fn refused(&self, first: bool, err: &ApiError, what: &str) -> Result<String, RunError> {
        let message = format!(
            "cannot create {what} in namespace {}: {err}",
            self.namespace
        );
        if first {
            Err(RunError(message))
        } else {
            Ok(message)
        }
    }

    async fn perftest(&self, pair: &workloads::PerftestPair, first: bool) -> Result<(), RunError> {
        let rail = pair.rail;
        let mut server = pair.server.clone();
        let mut client = pair.client.clone();
        workloads::claim(&mut server, &self.id, &self.namespace);
        workloads::claim(&mut client, &self.id, &self.namespace);
        if let [a, b, ..] = self.options.nodes.as_slice() {
            workloads::pin(&mut server, a);
            workloads::pin(&mut client, b);
        }
        let subject = format!("rail{rail}");
        self.begin(&judge::PERFTEST_FAILED, subject.clone());
        (self.progress)(&format!("perftest rail {rail}: starting the server"));
        if let Err(err) = cluster::create_pod(&self.client, &self.namespace, &server).await {
            let message = self.refused(first, &err, "the perftest server")?;
            self.not_run(&judge::PERFTEST_FAILED, &subject, &message);
            return Ok(());
        }
        let server_selector = self.selector(Role::PerftestServer, Some(rail));
        let running = |pod: &Pod| {
            cluster::finished(pod)
                || pod
                    .status
                    .as_ref()
                    .and_then(|s| s.pod_ip.as_ref())
                    .is_some()
                    && cluster::phase(pod) == "Running"
        };
        let Some(up) = cluster::await_pod(
            &self.client,
            &self.namespace,
            &server_selector,
            |pod| self.saw(pod),
            running,
        )
        .await
        .map_err(|err| self.unfollowed(&err))?
        else {
            self.not_run(
                &judge::PERFTEST_FAILED,
                &subject,
                "the watch of the server ended",
            );
            return Ok(());
        };
        let server_node = node_of(&up);
        let mut ended_server = None;
        let mut ended_client = None;
        let mut client_node = String::from("?");
        if cluster::finished(&up) {
            ended_server = Some(up);
        } else {
            let ip = up
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.clone())
                .unwrap_or_default();
            workloads::point_at(&mut client, &ip);
            (self.progress)(&format!(
                "perftest rail {rail}: server on {server_node}, starting the client"
            ));
            if let Err(err) = cluster::create_pod(&self.client, &self.namespace, &client).await {
                let message = self.refused(false, &err, "the perftest client")?;
                self.not_run(&judge::PERFTEST_FAILED, &subject, &message);
                return self.release(Role::PerftestServer, rail).await;
            }
            let client_selector = self.selector(Role::PerftestClient, Some(rail));
            let done = cluster::await_pod(
                &self.client,
                &self.namespace,
                &client_selector,
                |pod| self.saw(pod),
                cluster::finished,
            )
            .await
            .map_err(|err| self.unfollowed(&err))?;
            if let Some(done) = &done {
                client_node = node_of(done);
            }
            ended_client = done;
            // The server exits after its one client; a failed client can
            // leave it waiting, and its log is read as it is.
            if ended_client
                .as_ref()
                .is_some_and(|c| cluster::phase(c) == "Succeeded")
            {
                ended_server = cluster::await_pod(
                    &self.client,
                    &self.namespace,
                    &server_selector,
                    |pod| self.saw(pod),
                    cluster::finished,
                )
                .await
                .map_err(|err| self.unfollowed(&err))?;
            }
        }
        let pair_name = format!("rail{rail} {server_node}->{client_node}");
        for (side, pod, name) in [
            ("client", ended_client.as_ref(), pod_name(&client)),
            ("server", ended_server.as_ref(), pod_name(&server)),
        ] {
            self.judge_log(
                &format!("{pair_name} {side}"),
                name,
                pod,
                &judge::PERFTEST_FAILED,
                side == "server" && ended_client.is_some(),
            )
            .await;
        }
        (self.progress)(&format!("perftest rail {rail}: done"));
        // The next rail needs a GPU of the same nodes.
        self.release_all(rail).await
    }

    fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// When the pod's own check (`zerohop doctor --pod`, its
    /// [`workloads::POD_CHECK`] init container) failed, adds its problems
    /// and a finding of `judgement` that the test did not run, stops the
    /// run, and says so.
    async fn pod_check_failed(
        &self,
        subject: &str,
        name: &str,
        pod: &Pod,
        judgement: &'static Judgement,
    ) -> bool {
        if !cluster::init_failed(pod, workloads::POD_CHECK) {
            return false;
        }
        self.stopped
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let log = cluster::container_log(&self.client, &self.namespace, name, workloads::POD_CHECK)
            .await
            .unwrap_or_default();
        // The log is the JSON document of `doctor --format json`.
        let problems: Vec<Finding> = serde_json::from_str::<Value>(&log)
            .ok()
            .and_then(|document| {
                serde_json::from_value::<Vec<Finding>>(document["findings"].clone()).ok()
            })
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.status.is_problem())
            .collect();
        let named: Vec<String> = problems
            .iter()
            .map(|f| format!("{} {}", f.id, f.subject))
            .collect();
        lock(&self.findings).extend(problems);
        self.add(judge::without_capture(
            judgement,
            subject,
            Status::Fail,
            format!(
                "not run: pod {name} cannot carry the test, its own check failed ({})",
                if named.is_empty() {
                    "its log holds no report".to_owned()
                } else {
                    named.join(", ")
                }
            ),
            "fix what the pod check found (kubectl logs POD -c zerohop-pod-check), then run again",
        ));
        true
    }

    /// Reads a finished pod's log and judges it; a pod that left nothing a
    /// parser recognises is a finding of `judgement` with its termination.
    /// `quiet_if_unread`: a server whose client was judged adds nothing when
    /// it printed nothing.
    async fn judge_log(
        &self,
        subject: &str,
        name: &str,
        pod: Option<&Pod>,
        judgement: &'static Judgement,
        quiet_if_unread: bool,
    ) {
        if let Some(pod) = pod
            && self.pod_check_failed(subject, name, pod, judgement).await
        {
            return;
        }
        if pod.is_none() && self.stopped() {
            return;
        }
        let text = match cluster::log(&self.client, &self.namespace, name).await {
            Ok(text) => text,
            Err(err) if pod.is_some() => {
                self.not_run(
                    judgement,
                    subject,
                    &format!("cannot read the log of {name}: {err}"),
                );
                return;
            }
            Err(_) => String::new(),
        };
        let capture = Capture {
            name: subject,
            text: &text,
        };
        match judge::judge(&capture, &self.options.expectations) {
            Ok((_, findings)) => lock(&self.findings).extend(findings),
            Err(_) if quiet_if_unread => {}
            Err(_) => {
                let how = pod.map_or_else(
                    || "did not finish".to_owned(),
                    |p| format!("ended with {}", cluster::termination(p)),
                );
                self.not_run(
                    judgement,
                    subject,
                    &format!(
                        "pod {name} {how} and printed no result ({} bytes of log)",
                        text.len()
                    ),
                );
            }
        }
    }

    fn not_run(&self, judgement: &'static Judgement, subject: &str, message: &str) {
        self.add(judge::without_capture(
            judgement,
            subject,
            Status::Fail,
            message,
            "read the pod's events and log (kubectl describe pod, kubectl logs) and fix what they show",
        ));
    }

    async fn release(&self, role: Role, rail: u32) -> Result<(), RunError> {
        let selector = self.selector(role, Some(rail));
        cluster::delete_pods(&self.client, &self.namespace, &selector)
            .await
            .map_err(|err| RunError(format!("cannot delete pods {selector}: {err}")))
    }

    async fn release_all(&self, rail: u32) -> Result<(), RunError> {
        let selector = format!("{RUN_LABEL}={},{LABEL_RAIL}={rail}", self.id);
        cluster::delete_pods(&self.client, &self.namespace, &selector)
            .await
            .map_err(|err| RunError(format!("cannot delete pods {selector}: {err}")))
    }

    async fn nccl_tests(&self, job: &Value, first: bool, rails: usize) -> Result<(), RunError> {
        let mut job = job.clone();
        workloads::claim(&mut job, &self.id, &self.namespace);
        if self.options.nodes.len() >= 2 {
            workloads::pin_mpijob(&mut job, &self.options.nodes);
        }
        let subject = "nccl-tests".to_owned();
        self.begin(&judge::NCCL_TESTS_ABORTED, subject.clone());
        (self.progress)("nccl-tests: creating the MPIJob");
        match cluster::create_mpijob(&self.client, &self.namespace, &job).await {
            Ok(()) => self.created_job(job["metadata"]["name"].as_str().unwrap_or_default()),
            Err(cluster::NotCreated::NotServed) => {
                self.add(judge::without_capture(
                    &judge::NCCL_TESTS_ABORTED,
                    &subject,
                    Status::Unknown,
                    "not run: the MPI Operator is not installed (no kubeflow.org/v2beta1 MPIJob resource)",
                    "install the Kubeflow MPI Operator (kubectl apply --server-side -f https://raw.githubusercontent.com/kubeflow/mpi-operator/master/deploy/v2beta1/mpi-operator.yaml), then run again",
                ));
                return Ok(());
            }
            Err(cluster::NotCreated::Refused(err)) => {
                let message = self.refused(first, &err, "the nccl-tests MPIJob")?;
                self.not_run(&judge::NCCL_TESTS_ABORTED, &subject, &message);
                return Ok(());
            }
        }
        let selector = self.selector(Role::NcclLauncher, None);
        let launcher = cluster::await_pod(
            &self.client,
            &self.namespace,
            &selector,
            |pod| self.saw(pod),
            cluster::finished,
        )
        .await
        .map_err(|err| self.unfollowed(&err))?;
        let name = launcher
            .as_ref()
            .and_then(|p| p.metadata.name.clone())
            .unwrap_or_default();
        let mut expectations = self.options.expectations.clone();
        if expectations.rails.is_none() && expectations.planned.is_none() && rails > 0 {
            expectations.rails = u32::try_from(rails).ok();
        }
        let text = match cluster::log(&self.client, &self.namespace, &name).await {
            Ok(text) => text,
            Err(err) => {
                self.not_run(
                    &judge::NCCL_TESTS_ABORTED,
                    &subject,
                    &format!("cannot read the launcher's log: {err}"),
                );
                return Ok(());
            }
        };
        let capture = Capture {
            name: &subject,
            text: &text,
        };
        match judge::judge(&capture, &expectations) {
            Ok((_, findings)) => lock(&self.findings).extend(findings),
            Err(_) => {
                let how = launcher
                    .as_ref()
                    .map_or_else(|| "did not finish".to_owned(), cluster::termination);
                self.not_run(
                    &judge::NCCL_TESTS_ABORTED,
                    &subject,
                    &format!("the launcher {name} ended with {how} and printed no result"),
                );
            }
        }
        (self.progress)("nccl-tests: done");
        Ok(())
    }

    /// Deletes every pod and `MPIJob` of the run, by its label. `None` when
    /// that worked, else what to delete by hand.
    async fn cleanup(&self) -> Option<String> {
        let selector = format!("{RUN_LABEL}={}", self.id);
        let deleting = async {
            let jobs = cluster::delete_mpijobs(&self.client, &self.namespace, &selector).await;
            let pods = cluster::delete_pods(&self.client, &self.namespace, &selector).await;
            jobs.and(pods)
        };
        let failed = match tokio::time::timeout(CLEANUP_DEADLINE, deleting).await {
            Ok(Ok(())) => return None,
            Ok(Err(err)) => err.to_string(),
            Err(_) => "no answer within 30s".to_owned(),
        };
        Some(format!(
            "cleanup failed ({failed}): delete what is left with kubectl -n {} delete pods,mpijobs -l {selector}",
            self.namespace
        ))
    }
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_else(|| "?".to_owned())
}

fn pod_name(pod: &Value) -> &str {
    pod["metadata"]["name"].as_str().unwrap_or_default()
}
