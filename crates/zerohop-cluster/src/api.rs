//! Talking to the Kubernetes API server: a client whose every call has a
//! deadline and whose responses have a size cap, errors that say what to
//! do, and the calls the agent, `fleet` and `validate run` share.

use std::fmt;
use std::fs;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::Limited;
use k8s_openapi::api::core::v1::Node;
use kube::api::ApiResource;
use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use tower::BoxError;
use tower::util::MapResultLayer;
use zerohop_input::{Follow, NotRegular, os_reason, read_regular};
use zerohop_known::zerohop_api;

/// The longest any one call may take, response body included.
pub const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// The largest response body read: a page of 500 Nodes is a few MiB; a
/// response larger than this is refused rather than held in memory.
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// The largest kubeconfig file read.
const MAX_KUBECONFIG_BYTES: u64 = 16 << 20;

/// An API call that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status, when the server answered.
    pub code: Option<u16>,
    /// The server's message, or what went wrong on the way.
    pub message: String,
    /// How long the server asked us to wait before trying again: its
    /// `Retry-After` header on a 429 or 503, or the `retryAfterSeconds` of
    /// its `Status`.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// The server refused: the service account lacks a permission.
    pub fn is_forbidden(&self) -> bool {
        matches!(self.code, Some(401 | 403))
    }

    /// The object (or its kind) does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code == Some(404)
    }

    /// The object already exists.
    pub fn is_conflict(&self) -> bool {
        self.code == Some(409)
    }

    fn deadline(deadline: Duration) -> ApiError {
        ApiError {
            code: None,
            message: format!("no answer within {}", crate::duration::format(deadline)),
            retry_after: None,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "{code}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl From<kube::Error> for ApiError {
    fn from(err: kube::Error) -> ApiError {
        match err {
            kube::Error::Api(status) => ApiError {
                code: Some(status.code),
                message: if status.message.is_empty() {
                    status.reason.clone()
                } else {
                    status.message.clone()
                },
                retry_after: status
                    .details
                    .as_ref()
                    .map(|d| d.retry_after_seconds)
                    .filter(|s| *s > 0)
                    .map(|s| Duration::from_secs(s.into())),
            },
            kube::Error::Service(inner) if inner.is::<AskedToWait>() => {
                let asked = inner.downcast_ref::<AskedToWait>().copied();
                ApiError {
                    code: asked.map(|a| a.code),
                    message: inner.to_string(),
                    retry_after: asked.map(|a| a.wait),
                }
            }
            other => ApiError {
                code: None,
                message: error_chain(&other),
                retry_after: None,
            },
        }
    }
}

/// A 429 or 503 answer that says, in `Retry-After`, when to come back.
///
/// kube-apiserver sheds load with exactly such an answer: its
/// max-in-flight and priority-and-fairness filters reply 429 with a
/// `Retry-After` header and a plain-text body, no `Status`
/// (`tooManyRequests` in
/// `staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go`). kube
/// turns an error answer into an error from its body alone and the header
/// is lost on the way; this is taken from the answer before that, so that
/// the caller's back-off can honour it. Only the delay-seconds form is
/// read, the one kube-apiserver sends; an HTTP date is left to the
/// caller's own back-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the API server answered {code} and asks to retry after {}", crate::duration::format(*.wait))]
pub struct AskedToWait {
    /// 429 or 503.
    pub code: u16,
    /// The delay it asked for.
    pub wait: Duration,
}

impl AskedToWait {
    /// The request to wait in `response`, if it makes one.
    pub fn from_response<B>(response: &hyper::Response<B>) -> Option<AskedToWait> {
        let code = response.status().as_u16();
        if !matches!(code, 429 | 503) {
            return None;
        }
        let seconds: u64 = response
            .headers()
            .get(hyper::header::RETRY_AFTER)?
            .to_str()
            .ok()?
            .trim()
            .parse()
            .ok()?;
        Some(AskedToWait {
            code,
            wait: Duration::from_secs(seconds.min(MAX_RETRY_AFTER_SECS)),
        })
    }
}

/// The longest `Retry-After` taken as given: a day. A larger value is a
/// broken server; the caller's back-off has its own cap anyway.
const MAX_RETRY_AFTER_SECS: u64 = 24 * 3600;

/// An error and its causes as one line.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// Runs one call of the agent with [`CALL_DEADLINE`].
pub async fn within<T>(call: impl Future<Output = Result<T, kube::Error>>) -> Result<T, ApiError> {
    within_deadline(CALL_DEADLINE, call).await
}

/// Runs one call with `deadline`, response body included.
pub async fn within_deadline<T>(
    deadline: Duration,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiError> {
    match tokio::time::timeout(deadline, call).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(_) => Err(ApiError::deadline(deadline)),
    }
}

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig could not be read or used.
    #[error("{0}")]
    Config(String),
}

/// A client for the cluster: from `kubeconfig` when given, else as
/// `kubectl` would find one (`KUBECONFIG`, `~/.kube/config`, the pod's
/// service account). `deadline` bounds connecting, each read and loading
/// the configuration; `watch` leaves out the read timeout, which would cut
/// a quiet watch.
pub async fn client(
    kubeconfig: Option<&Path>,
    deadline: Duration,
    watch: bool,
) -> Result<Client, ClientError> {
    let making = async {
        let mut config = match kubeconfig {
            Some(path) => {
                let text = read_kubeconfig(path)?;
                let parsed = Kubeconfig::from_yaml(&text).map_err(|err| {
                    ClientError::Config(format!("{}: {}", path.display(), error_chain(&err)))
                })?;
                Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
                    .await
                    .map_err(|err| {
                        ClientError::Config(format!("{}: {}", path.display(), error_chain(&err)))
                    })?
            }
            None => {
                for path in default_kubeconfigs() {
                    check_kubeconfig_file(&path)?;
                }
                Config::infer().await.map_err(|err| {
                    ClientError::Config(format!(
                        "no Kubernetes configuration: {}; pass --kubeconfig or run in a pod",
                        error_chain(&err)
                    ))
                })?
            }
        };
        config.connect_timeout = Some(deadline.min(Duration::from_secs(10)));
        config.write_timeout = Some(deadline);
        config.read_timeout = if watch { None } else { Some(deadline) };
        config.reset_reader_on_write = true;
        // kube's own retry layer repeats a 429, 503 or 504 from 5 ms on,
        // inside our deadline and without telling us: eight requests in
        // 1.6 s for one 503, and then only "no answer within 30s". Each
        // caller retries with its own back-off instead, and sees the
        // server's answer.
        config.default_retry = false;
        let builder = ClientBuilder::try_from(config)
            .map_err(|err| ClientError::Config(error_chain(&err)))?;
        let answers = MapResultLayer::new(
            |result: Result<hyper::Response<_>, BoxError>| -> Result<_, BoxError> {
                let response = result?;
                if let Some(asked) = AskedToWait::from_response(&response) {
                    return Err(Box::new(asked));
                }
                Ok(response.map(|body| Limited::new(body, MAX_RESPONSE_BYTES)))
            },
        );
        Ok(builder.with_layer(&answers).build())
    };
    // An exec credential plugin may hang; so may a kubeconfig on a dead mount.
    match tokio::time::timeout(deadline, making).await {
        Ok(result) => result,
        Err(_) => Err(ClientError::Config(format!(
            "loading the Kubernetes configuration did not finish within {}",
            crate::duration::format(deadline)
        ))),
    }
}

/// The kubeconfig files `kubectl` would read.
fn default_kubeconfigs() -> Vec<PathBuf> {
    match std::env::var_os("KUBECONFIG") {
        Some(list) => std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        None => std::env::var_os("HOME")
            .map(|home| vec![Path::new(&home).join(".kube/config")])
            .unwrap_or_default(),
    }
}

/// Refuses a kubeconfig that is a FIFO, a device or a directory (reading
/// it could wait forever), or that is larger than any real one.
fn check_kubeconfig_file(path: &Path) -> Result<(), ClientError> {
    match fs::metadata(path) {
        Err(_) => Ok(()),
        Ok(meta) if meta.is_file() && meta.len() <= MAX_KUBECONFIG_BYTES => Ok(()),
        Ok(meta) if meta.is_file() => Err(ClientError::Config(format!(
            "kubeconfig {} is larger than {} MiB",
            path.display(),
            MAX_KUBECONFIG_BYTES >> 20
        ))),
        Ok(_) => Err(ClientError::Config(format!(
            "kubeconfig {} is not a regular file",
            path.display()
        ))),
    }
}

fn read_kubeconfig(path: &Path) -> Result<String, ClientError> {
    let config_error =
        |what: String| ClientError::Config(format!("kubeconfig {}: {what}", path.display()));
    let cap = usize::try_from(MAX_KUBECONFIG_BYTES).unwrap_or(usize::MAX);
    let bytes = read_regular(path, Follow::Links, cap).map_err(|err| match err {
        NotRegular::Kind(kind) => config_error(format!("{kind}, not a regular file")),
        NotRegular::Io(err) => config_error(format!("cannot read: {}", os_reason(&err))),
    })?;
    if bytes.len() > cap {
        return Err(config_error(format!(
            "larger than {} MiB",
            MAX_KUBECONFIG_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|_| config_error("not UTF-8 text".to_owned()))
}

/// Reads the Node named `name`.
pub async fn read_node(client: &Client, name: &str) -> Result<Node, ApiError> {
    within(Api::<Node>::all(client.clone()).get(name)).await
}

/// The `DataPathReport` resource for dynamic calls.
pub fn report_resource() -> ApiResource {
    ApiResource {
        group: zerohop_api::GROUP.to_owned(),
        version: zerohop_api::VERSION.to_owned(),
        api_version: zerohop_api::API_VERSION.to_owned(),
        kind: zerohop_api::KIND.to_owned(),
        plural: zerohop_api::PLURAL.to_owned(),
    }
}
