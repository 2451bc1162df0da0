//! `zerohop fleet`: every node's data path, from what the agents published
//! to the API server. Read-only: it lists (or watches) Nodes and
//! `DataPathReport` objects and never writes.

pub mod html;
mod slim;
pub mod state;
pub mod view;

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::Resource as _;
use kube::api::{DynamicObject, ListParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};

use slim::{Page, SlimNode, SlimReport};
use view::Fleet;
use zerohop_cluster::api::{self, ApiError, within_deadline};

/// Objects asked for per page: enough to keep the number of requests low
/// on a large cluster, small enough that one page is a few MiB.
pub const PAGE_SIZE: u32 = 500;
/// The most pages followed: a server that keeps sending continue tokens is
/// not followed forever.
const MAX_PAGES: usize = 1000;
/// How many times a list whose continue token expired is started again
/// from its first page before `fleet` gives up.
const MAX_LIST_RESTARTS: usize = 3;
/// How often a watch re-renders when something changed.
const WATCH_REFRESH: Duration = Duration::from_secs(1);
/// How often a watch re-renders when nothing changed, so that ages advance
/// and a node whose agent stopped turns stale on screen as it would in a
/// one-shot `fleet` (sooner with an interval shorter than this).
const AGE_REFRESH: Duration = Duration::from_secs(10);

/// How to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Tables.
    Human,
    /// One JSON document (one per line with `--watch`).
    Json,
    /// One self-contained HTML page (not with `--watch`).
    Html,
}

/// Everything `fleet` is told.
#[derive(Debug, Clone)]
pub struct Options {
    /// A kubeconfig; else as `kubectl` finds one.
    pub kubeconfig: Option<PathBuf>,
    /// A label selector for the nodes.
    pub selector: Option<String>,
    /// Keep watching and re-render on every change.
    pub watch: bool,
    /// Show which nodes fail which check instead of one row per node.
    pub by_check: bool,
    /// The output format.
    pub format: OutputFormat,
    /// The agents' interval, for nodes whose report object does not say:
    /// a heartbeat older than three intervals is stale.
    pub interval: Duration,
    /// The longest one API request may take, response included.
    pub request_timeout: Duration,
}

/// Why `fleet` could not look; exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FleetError(pub String);

impl From<ApiError> for FleetError {
    fn from(err: ApiError) -> FleetError {
        let hint = if err.is_forbidden() {
            ": listing nodes needs the zerohop-fleet-reader ClusterRole (from `zerohop agent --print-manifests`)"
        } else if err.code == Some(400) {
            ": check --selector"
        } else {
            ""
        };
        FleetError(format!("the API server refused: {err}{hint}"))
    }
}

/// Runs `fleet`, writing to `out`; returns the exit code.
pub fn run(options: &Options, out: &mut dyn Write) -> Result<i32, FleetError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| FleetError(format!("cannot start the runtime: {err}")))?;
    let result = runtime.block_on(async {
        let client = api::client(
            options.kubeconfig.as_deref(),
            options.request_timeout,
            options.watch,
        )
        .await
        .map_err(|err| FleetError(err.to_string()))?;
        if options.watch {
            watch(&client, options, out).await
        } else {
            let fleet = look(&client, options).await?;
            match write(options, &fleet, out) {
                Ok(()) => Ok(fleet.exit_code()),
                Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(fleet.exit_code()),
                Err(err) => Err(FleetError(format!("cannot write the output: {err}"))),
            }
        }
    });
    // Requests still in flight (a watch) are dropped, not waited for.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}

fn write(options: &Options, fleet: &Fleet, out: &mut dyn Write) -> io::Result<()> {
    match options.format {
        OutputFormat::Human if options.by_check => {
            out.write_all(view::checks_table(fleet).as_bytes())
        }
        OutputFormat::Human => out.write_all(view::nodes_table(fleet).as_bytes()),
        OutputFormat::Json if options.watch => {
            serde_json::to_writer(&mut *out, &view::json(fleet))?;
            out.write_all(b"\n")
        }
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &view::json(fleet))?;
            out.write_all(b"\n")
        }
        OutputFormat::Html => out.write_all(html::page_of(fleet).as_bytes()),
    }?;
    out.flush()
}

/// One look: every page of Nodes and of report objects, each page parsed
/// into only what the view reads (see [`slim`]).
async fn look(client: &Client, options: &Options) -> Result<Fleet, FleetError> {
    let deadline = options.request_timeout;
    let nodes: Vec<Node> = list_slim::<SlimNode>(
        client,
        &Node::url_path(&(), None),
        options.selector.as_deref(),
        deadline,
    )
    .await?
    .into_iter()
    .map(Node::from)
    .collect();
    let reports_path = DynamicObject::url_path(&api::report_resource(), None);
    let (reports, available) =
        match list_slim::<SlimReport>(client, &reports_path, None, deadline).await {
            Ok(objects) => (
                objects
                    .into_iter()
                    .map(SlimReport::into_named_value)
                    .collect(),
                true,
            ),
            // No CRD, or not allowed to read it: the conditions still say a lot.
            Err(err) if err.is_not_found() || err.is_forbidden() => (HashMap::new(), false),
            Err(err) => return Err(err.into()),
        };
    Ok(assemble(options, nodes.iter(), &reports, available))
}

fn by_name(objects: Vec<DynamicObject>) -> HashMap<String, Value> {
    objects
        .into_iter()
        .filter_map(|object| {
            let name = object.metadata.name.clone()?;
            Some((name, serde_json::to_value(object).ok()?))
        })
        .collect()
}

fn assemble<'a>(
    options: &Options,
    nodes: impl Iterator<Item = &'a Node>,
    reports: &HashMap<String, Value>,
    available: bool,
) -> Fleet {
    let now = Timestamp::now();
    let mut rows = Vec::new();
    let mut others = 0;
    for node in nodes {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        match state::classify(node, reports.get(name), now, options.interval) {
            Some(row) => rows.push(row),
            None => others += 1,
        }
    }
    Fleet::new(rows, others, available, options.interval, now)
}

/// Lists every object under `url_path`, page by page, each page parsed
/// as `T`.
///
/// A continue token names the revision of the list's first page, and the
/// API server answers 410 Gone to one whose revision is no longer kept:
/// kube-apiserver serves a continued page from its watch cache while the
/// cache still holds that revision, and otherwise from etcd, where it is
/// gone once compacted (every five minutes by default). So a list that
/// spans a restart of its API server (or, behind a load balancer, reaches
/// another one for its next page) after a compaction is answered 410
/// midway, and neither the pages already read nor the rest are a
/// consistent list. It is started again from its first page, as
/// client-go's pager does, at most [`MAX_LIST_RESTARTS`] times.
async fn list_slim<T: DeserializeOwned>(
    client: &Client,
    url_path: &str,
    selector: Option<&str>,
    deadline: Duration,
) -> Result<Vec<T>, ApiError> {
    let mut restarts = 0;
    loop {
        match list_pages(client, url_path, selector, deadline).await {
            Err(ListFailure::Expired(err)) if restarts < MAX_LIST_RESTARTS => {
                restarts += 1;
                crate::log::warn(
                    "the list's continue token expired (410 Gone); listing again from the first page",
                    &[
                        ("path", url_path),
                        ("error", &err.to_string()),
                        ("restart", &restarts.to_string()),
                    ],
                );
            }
            Err(ListFailure::Expired(err) | ListFailure::Other(err)) => return Err(err),
            Ok(items) => return Ok(items),
        }
    }
}

/// Why a list failed: its continue token expired, or anything else.
enum ListFailure {
    /// 410 Gone to a page asked for with a continue token.
    Expired(ApiError),
    /// Every other failure.
    Other(ApiError),
}

/// One pass over the pages of a list; see [`list_slim`].
async fn list_pages<T: DeserializeOwned>(
    client: &Client,
    url_path: &str,
    selector: Option<&str>,
    deadline: Duration,
) -> Result<Vec<T>, ListFailure> {
    let mut params = ListParams::default().limit(PAGE_SIZE);
    if let Some(selector) = selector {
        params = params.labels(selector);
    }
    let lists = kube::core::Request::new(url_path);
    let mut items = Vec::new();
    for _ in 0..MAX_PAGES {
        let request = lists.list(&params).map_err(|err| {
            ListFailure::Other(ApiError {
                code: None,
                message: format!("cannot build the list request: {err}"),
                retry_after: None,
            })
        })?;
        let page: Page<T> = within_deadline(deadline, client.request(request))
            .await
            .map_err(|err| {
                if err.code == Some(410) && params.continue_token.is_some() {
                    ListFailure::Expired(err)
                } else {
                    ListFailure::Other(err)
                }
            })?;
        items.extend(page.items);
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(items),
        }
    }
    Err(ListFailure::Other(ApiError {
        code: None,
        message: format!("the list did not end after {MAX_PAGES} pages"),
        retry_after: None,
    }))
}

/// `--watch`: reflectors on Nodes (and report objects, when they can be
/// read), re-rendered at most once per second while something changes,
/// and at least every [`AGE_REFRESH`] (or interval, when shorter) while
/// nothing does, since ages and staleness change with time alone; until
/// SIGINT or SIGTERM. Returns the exit code of the last view.
async fn watch(client: &Client, options: &Options, out: &mut dyn Write) -> Result<i32, FleetError> {
    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(|err| FleetError(format!("cannot handle SIGINT: {err}")))?;
    let mut terminate = signal(SignalKind::terminate())
        .map_err(|err| FleetError(format!("cannot handle SIGTERM: {err}")))?;
    // One object of each list first: a refused request or a bad selector
    // is an error now, not a retry loop, and whether the report objects
    // can be read is known. The first view is the reflectors' own: a whole
    // one-shot look before them read the fleet twice (at 10,000 nodes, 40
    // pages of Nodes and 32 of reports instead of 20 and 16, and twice the
    // API server's time).
    let report_objects = probe(client, options).await?;
    // No view yet; a signal before the first one exits as signalled anyway.
    let mut last_code = 0;
    let mut config = watcher::Config::default().page_size(PAGE_SIZE);
    if let Some(selector) = &options.selector {
        config = config.labels(selector);
    }
    // The reflector keeps each Node as slim as a list's page does.
    let (nodes, node_writer) = reflector::store::<SlimNode>();
    let mut node_events = watcher(Api::<SlimNode>::all(client.clone()), config)
        .default_backoff()
        .reflect(node_writer)
        .boxed();
    let reports_api = Api::<DynamicObject>::all_with(client.clone(), &api::report_resource());
    let resource = api::report_resource();
    let report_writer = reflector::store::Writer::<DynamicObject>::new(resource);
    let reports = report_writer.as_reader();
    let mut report_events = if report_objects {
        watcher(reports_api, watcher::Config::default().page_size(PAGE_SIZE))
            .default_backoff()
            .reflect(report_writer)
            .boxed()
    } else {
        futures::stream::pending().boxed()
    };
    let mut dirty = false;
    // A reflector's store is whole only after its first list is done;
    // until then a view would show a partial fleet.
    let mut nodes_listed = false;
    let mut reports_listed = !report_objects;
    let mut shown = false;
    let mut last_error = String::new();
    let mut tick = tokio::time::interval(WATCH_REFRESH);
    let age_refresh = AGE_REFRESH.min(options.interval).max(WATCH_REFRESH);
    let mut last_view = tokio::time::Instant::now();
    loop {
        let ticked = tokio::select! {
            _ = interrupt.recv() => return Ok(last_code),
            _ = terminate.recv() => return Ok(last_code),
            event = node_events.next() => {
                dirty |= note(event, &mut nodes_listed, &mut last_error);
                false
            }
            event = report_events.next() => {
                dirty |= note(event, &mut reports_listed, &mut last_error);
                false
            }
            _ = tick.tick() => true,
        };
        if !nodes_listed || !reports_listed {
            continue;
        }
        // The first view as soon as both stores are whole; then at most
        // one a tick while something changes, and one every `age_refresh`
        // while nothing does.
        let due = !shown || (ticked && (dirty || last_view.elapsed() >= age_refresh));
        if !due {
            continue;
        }
        shown = true;
        dirty = false;
        last_view = tokio::time::Instant::now();
        let fleet = from_stores(options, &nodes, &reports, report_objects);
        last_code = fleet.exit_code();
        if let Err(err) = write(options, &fleet, out) {
            return finish_on_write_error(err, last_code);
        }
    }
}

/// Whether `fleet` may read the Nodes (with its selector) and the report
/// objects, from one object of each list: the Nodes' error is `fleet`'s;
/// the report objects are read only where their CRD is installed and
/// readable.
async fn probe(client: &Client, options: &Options) -> Result<bool, FleetError> {
    let deadline = options.request_timeout;
    let mut params = ListParams::default().limit(1);
    if let Some(selector) = &options.selector {
        params = params.labels(selector);
    }
    first_page(client, &Node::url_path(&(), None), &params, deadline).await?;
    let reports_path = DynamicObject::url_path(&api::report_resource(), None);
    let params = ListParams::default().limit(1);
    match first_page(client, &reports_path, &params, deadline).await {
        Ok(()) => Ok(true),
        Err(err) if err.is_not_found() || err.is_forbidden() => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// Asks for the first page of the list under `url_path`, and skips it.
async fn first_page(
    client: &Client,
    url_path: &str,
    params: &ListParams,
    deadline: Duration,
) -> Result<(), ApiError> {
    let request = kube::core::Request::new(url_path)
        .list(params)
        .map_err(|err| ApiError {
            code: None,
            message: format!("cannot build the list request: {err}"),
            retry_after: None,
        })?;
    let _: Page<IgnoredAny> = within_deadline(deadline, client.request(request)).await?;
    Ok(())
}

/// Whether a watch event changed anything; `listed` becomes true when the
/// store's first list is complete. Errors are reported once each (the
/// watcher retries them with back-off).
fn note<T>(
    event: Option<Result<watcher::Event<T>, watcher::Error>>,
    listed: &mut bool,
    last_error: &mut String,
) -> bool {
    match event {
        Some(Ok(event)) => {
            if matches!(event, watcher::Event::InitDone) {
                *listed = true;
            }
            last_error.clear();
            true
        }
        Some(Err(err)) => {
            let text = err.to_string();
            if *last_error != text {
                let code = status_code(err);
                let message = if code == Some(410) {
                    // The watcher has gone back to listing: its
                    // resourceVersion is older than the server keeps.
                    "the watch's resourceVersion expired (410 Gone); listing again"
                } else {
                    "watch failed; retrying"
                };
                let code = code.map(|c| c.to_string()).unwrap_or_default();
                let mut fields = vec![("error", text.as_str())];
                if !code.is_empty() {
                    fields.push(("code", &code));
                }
                crate::log::warn(message, &fields);
                *last_error = text;
            }
            false
        }
        None => false,
    }
}

/// The HTTP status the API server answered, when it answered: in the
/// response to a list or a watch, or in a watch's `ERROR` event (how
/// kube-apiserver says 410 Gone to a watch whose resourceVersion is too
/// old).
fn status_code(err: watcher::Error) -> Option<u16> {
    match err {
        watcher::Error::InitialListFailed(err)
        | watcher::Error::WatchStartFailed(err)
        | watcher::Error::WatchFailed(err) => ApiError::from(err).code,
        watcher::Error::WatchError(status) => Some(status.code),
        watcher::Error::NoResourceVersion => None,
    }
}

fn from_stores(
    options: &Options,
    nodes: &Store<SlimNode>,
    reports: &Store<DynamicObject>,
    available: bool,
) -> Fleet {
    let nodes: Vec<Node> = nodes
        .state()
        .iter()
        .map(|node| Node::from(SlimNode::clone(node)))
        .collect();
    let reports = by_name(reports.state().iter().map(|r| (**r).clone()).collect());
    assemble(options, nodes.iter(), &reports, available)
}

fn finish_on_write_error(err: io::Error, code: i32) -> Result<i32, FleetError> {
    if err.kind() == io::ErrorKind::BrokenPipe {
        Ok(code)
    } else {
        Err(FleetError(format!("cannot write the output: {err}")))
    }
}
