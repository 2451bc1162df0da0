//! The agent's HTTP endpoints: `/metrics`, `/report`, `/healthz` and
//! `/readyz`.
//!
//! Nothing here runs a check or reads the host: every answer is made from
//! the last published snapshot, whose encodings are shared bytes. The
//! server bounds what a client can hold: a fixed number of connections,
//! a deadline on reading request headers (a client that opens a
//! connection and says nothing is dropped), a limit on their size
//! ([`MAX_HEADER_BYTES`]) and a deadline on each write (a client
//! that does not read its answers is dropped), and it always accepts: at
//! the cap, the connection longest without a complete request makes room
//! (see [`crate::connections`]), so that the probes stay answered while
//! stalled clients hold every slot.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::connections::{Connections, WRITE_TIMEOUT, WriteDeadline};
use crate::metrics::{self, Live};
use crate::snapshot::{CounterSnapshot, Snapshot};

/// The most connections served at once; past it, the connection longest
/// without a complete request is closed for each new one. Prometheus keeps
/// one; probes open one each.
pub const MAX_CONNECTIONS: usize = 64;

/// How long a client may take to send its request headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// The most bytes a request's head may take: the request line and the
/// headers, up to and including the blank line that ends them. A larger
/// one is answered `431 Request Header Fields Too Large` and the
/// connection is closed (a client still sending may see it reset before
/// it reads the answer).
///
/// hyper's `max_buf_size` alone does not bound this. In hyper 1.12
/// (`src/proto/h1/io.rs`, `Buffered::parse`) the buffer's length is
/// compared with it only after a parse came out incomplete, and a read
/// fills all of the buffer's spare capacity (`poll_read_from_io`, through
/// `BytesMut::chunk_mut`), which `reserve` grows by doubling; so a head
/// over the cap that lands in that capacity parses whole and is served, as
/// heads of up to about 100 KiB were. hyper's `max_header_size`, set in
/// [`serve_connection`], is checked against the parsed length of a complete
/// head (`src/proto/h1/role.rs`, `Server::parse`) as well as against an
/// incomplete one.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// What the endpoints answer from.
#[derive(Debug)]
pub struct Shared {
    /// The node name, the `node` label of every series.
    pub node: String,
    /// The last pass; `None` until the first one is published.
    pub snapshot: watch::Receiver<Option<Arc<Snapshot>>>,
    /// The last counter sample.
    pub counters: watch::Receiver<Option<Arc<CounterSnapshot>>>,
    /// The agent's own counters.
    pub live: Arc<Live>,
}

/// Serves `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let connections = Connections::new(MAX_CONNECTIONS);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(err) => {
                // Out of file descriptors, say: wait a little rather than spin.
                crate::log::warn("cannot accept a connection", &[("error", &err.to_string())]);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Admitted before the task starts, so that the set never holds
        // more than the cap however fast connections come.
        let admitted = Arc::new(connections.admit());
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let held = Arc::clone(&admitted);
            let connection = serve_connection(stream, shared, move || held.requested());
            tokio::select! {
                _ = connection => {}
                () = admitted.evicted() => {}
            }
        });
    }
}

/// Serves HTTP/1.1 on one connection, as [`serve`] does each one it
/// accepts, until the client closes it or it fails: the header deadline,
/// the head's size limit and the write deadline hold on any stream.
/// `on_request` is called on each complete request.
pub async fn serve_connection<S>(
    stream: S,
    shared: Arc<Shared>,
    on_request: impl Fn() + Send + 'static,
) -> Result<(), hyper::Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        on_request();
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(answer(&shared, &request)) }
    });
    http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_header_size(MAX_HEADER_BYTES)
        // Bounds the read buffer while a body is read, and the write
        // buffer; the head is bounded by the line above.
        .max_buf_size(MAX_HEADER_BYTES)
        .serve_connection(
            TokioIo::new(WriteDeadline::new(stream, WRITE_TIMEOUT)),
            service,
        )
        .await
}

/// The response to one request.
pub fn answer(shared: &Shared, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    answer_to(
        shared,
        request.method(),
        request.uri().path(),
        accept(request),
    )
}

fn accept(request: &Request<Incoming>) -> Option<&str> {
    request
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
}

/// The response to `method path` with the given `Accept` header.
pub fn answer_to(
    shared: &Shared,
    method: &Method,
    path: &str,
    accept: Option<&str>,
) -> Response<Full<Bytes>> {
    let known = matches!(path, "/metrics" | "/report" | "/healthz" | "/readyz");
    if !known {
        return text(
            StatusCode::NOT_FOUND,
            "not found: try /metrics, /report, /healthz or /readyz\n",
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let snapshot = shared.snapshot.borrow().clone();
    let mut response = match path {
        // The process answers: that is all liveness means. A node whose
        // data path is broken is not an unhealthy pod.
        "/healthz" => text(StatusCode::OK, "ok\n"),
        "/readyz" => match &snapshot {
            Some(_) => text(StatusCode::OK, "ready\n"),
            None => text(StatusCode::SERVICE_UNAVAILABLE, "no pass published yet\n"),
        },
        "/report" => match &snapshot {
            None => text(StatusCode::SERVICE_UNAVAILABLE, "no pass published yet\n"),
            Some(snapshot) => match snapshot.report_json() {
                Some(json) => body(StatusCode::OK, "application/json", json.clone()),
                None => text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!(
                        "the last pass did not finish: {}\n",
                        snapshot.verdict.message
                    ),
                ),
            },
        },
        _ => {
            let format = metrics::negotiate(accept);
            let live = metrics::encode_live(&shared.node, &shared.live);
            let counters = shared.counters.borrow().clone();
            let mut parts = vec![&live];
            if let Some(snapshot) = &snapshot {
                parts.push(snapshot.exposition());
            }
            if let Some(counters) = &counters {
                parts.push(counters.exposition());
            }
            let text = metrics::assemble(format, &parts);
            body(StatusCode::OK, format.content_type(), Bytes::from(text))
        }
    };
    if method == Method::HEAD {
        *response.body_mut() = Full::new(Bytes::new());
    }
    response
}

fn text(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    body(
        status,
        "text/plain; charset=utf-8",
        Bytes::copy_from_slice(message.as_bytes()),
    )
}

fn body(status: StatusCode, content_type: &'static str, bytes: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(bytes));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
