//! The `http` target: the agent's HTTP serving path
//! ([`zerohop_agent::http::serve_connection`], the one the agent runs on
//! every connection it accepts: hyper's HTTP/1 parser with the agent's
//! header deadline, head size limit and write deadline, and the
//! endpoints' answers) over an in-memory stream.
//!
//! The input is what a client sends on one connection; the client reads
//! every answer and closes its sending side [`CLIENT_CLOSES_AFTER`] later
//! (hyper drops a request in flight when the client's side closes, so it
//! cannot close at once). The runtime's clock is paused and jumps ahead
//! whenever every task waits, so the deadlines cost no real time. Besides
//! a panic, a run fails when the server writes more than
//! [`MAX_ANSWER_BYTES`] per request the input can hold, or when the
//! connection has not ended [`DEADLINE`] after the input was sent.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use zerohop_agent::http::{MAX_HEADER_BYTES, Shared, serve_connection};
use zerohop_agent::metrics::Live;
use zerohop_agent::snapshot::Snapshot;
use zerohop_core::Report;

use crate::seeds::Sources;
use crate::signature::signature;

/// The fewest bytes one request can take (`A / HTTP/1.1\n\n`), so an
/// input of `n` bytes holds at most `n / MIN_REQUEST_BYTES + 1` requests.
const MIN_REQUEST_BYTES: usize = 14;

/// The most bytes one answer may take: the largest, `/metrics` of a
/// published pass without findings, is a few KiB.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How long after sending the input the client closes its side: past the
/// header deadline, so that a server waiting for a head closes first, and
/// one waiting for a body learns that none is coming.
pub const CLIENT_CLOSES_AFTER: Duration = Duration::from_secs(10);

/// How long after the input was sent the connection must have ended, on
/// the runtime's paused clock.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Tokens of HTTP/1.x requests.
pub const TOKENS: &[&[u8]] = &[
    b"GET ",
    b"HEAD ",
    b"POST ",
    b"OPTIONS * ",
    b"CONNECT ",
    b"/metrics",
    b"/report",
    b"/healthz",
    b"/readyz",
    b" HTTP/1.1\r\n",
    b" HTTP/1.0\r\n",
    b"\r\n",
    b"\r\n\r\n",
    b"\n",
    b"Host: x\r\n",
    b"Connection: close\r\n",
    b"Connection: keep-alive\r\n",
    b"Content-Length: ",
    b"Transfer-Encoding: chunked\r\n",
    b"0\r\n\r\n",
    b"Expect: 100-continue\r\n",
    b"Upgrade: h2c\r\n",
    b"Accept: application/openmetrics-text;version=1.0.0\r\n",
    b"Accept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n",
    b": ",
    b"%2e%2e/",
    b"?x=1#y",
    b"\t",
    b"\x00",
    b"\xff",
];

/// The shapes of the requests the agent meets: the kubelet's probes,
/// Prometheus' scrapes, a person's `curl`, pipelined and keep-alive
/// requests, bodies on methods that take none, methods it refuses,
/// unknown paths, and a head just over [`MAX_HEADER_BYTES`].
pub fn seeds(_: &Sources) -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = [
        "GET /healthz HTTP/1.1\r\nHost: 10.0.0.7:9400\r\nUser-Agent: kube-probe/1.34\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        "GET /readyz HTTP/1.1\r\nHost: 10.0.0.7:9400\r\nUser-Agent: kube-probe/1.34\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost: 10.0.0.7:9400\r\nUser-Agent: Prometheus/3.5.0\r\nAccept: application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nHost: localhost:9400\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n",
        "GET /report HTTP/1.1\r\nHost: localhost:9400\r\nAccept: application/json\r\n\r\n",
        "HEAD /metrics HTTP/1.0\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /report HTTP/1.1\r\nHost: x\r\n\r\nHEAD /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        "PUT /report HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        "BREW /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET http://x/metrics?name[]=up HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
        "GET /metrics HTTP/2.0\r\n\r\n",
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "GET /metrics\r\n\r\n",
    ]
    .iter()
    .map(|text| text.as_bytes().to_vec())
    .collect();
    let mut oversized = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
    oversized.resize(MAX_HEADER_BYTES - 3, b'a');
    oversized.extend_from_slice(b"\r\n\r\n");
    seeds.push(oversized);
    seeds
}

/// The endpoints' data: a published pass without findings, no counters.
fn shared() -> Arc<Shared> {
    let report = Report::new("doctor", "/host", Vec::new());
    let snapshot = Snapshot::completed(
        "n1",
        1,
        Timestamp::UNIX_EPOCH,
        Duration::ZERO,
        report,
        Default::default(),
    );
    let (_, snapshot) = watch::channel(Some(Arc::new(snapshot)));
    let (_, counters) = watch::channel(None);
    Arc::new(Shared {
        node: "n1".into(),
        snapshot,
        counters,
        live: Arc::new(Live::default()),
    })
}

/// Serves one connection whose client sends `bytes` and reads every
/// answer; the signature is the statuses answered and how
/// the connection ended.
pub fn run(bytes: &[u8]) -> u64 {
    let (answers, ended) = exchange(bytes);
    signature((statuses(&answers), ended))
}

/// What the server answers to a client that sends `bytes`, and how the connection ended (hyper's error, or `closed`).
fn exchange(bytes: &[u8]) -> (Vec<u8>, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let bound = (bytes.len() / MIN_REQUEST_BYTES + 1) * MAX_ANSWER_BYTES;
    let (answers, ended) = runtime.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let server = tokio::spawn(serve_connection(server, shared(), || {}));
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let send = async {
            // The server may close before reading everything.
            let _ = to_server.write_all(bytes).await;
            tokio::time::sleep(CLIENT_CLOSES_AFTER).await;
            let _ = to_server.shutdown().await;
        };
        let receive = async {
            let mut answers = Vec::new();
            let mut chunk = vec![0; 16 * 1024];
            loop {
                match from_server.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => answers.extend_from_slice(&chunk[..n]),
                }
                assert!(
                    answers.len() <= bound,
                    "{} bytes answered to {} bytes sent",
                    answers.len(),
                    bytes.len()
                );
            }
            answers
        };
        tokio::time::timeout(DEADLINE, async {
            let ((), answers) = tokio::join!(send, receive);
            (answers, server.await)
        })
        .await
        .expect("the connection ends once the client has sent everything")
    });
    let ended = match ended {
        Ok(Ok(())) => "closed".to_owned(),
        Ok(Err(err)) => err.to_string(),
        Err(join) => std::panic::resume_unwind(join.into_panic()),
    };
    (answers, ended)
}

/// The status codes of the answers, in order, at most 8.
fn statuses(answers: &[u8]) -> Vec<u16> {
    answers
        .windows(13)
        .filter(|w| w.starts_with(b"HTTP/1.") && w[8] == b' ' && w[12] == b' ')
        .filter_map(|w| std::str::from_utf8(&w[9..12]).ok()?.parse().ok())
        .take(8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(text: &[u8]) -> Vec<u16> {
        statuses(&exchange(text).0)
    }

    #[test]
    fn the_seeds_reach_the_endpoints() {
        let seeds = seeds(&Sources::of_this_checkout());
        // The kubelet's probes, Prometheus' scrape, the pipelined four.
        assert_eq!(answered(&seeds[0]), [200]);
        assert_eq!(answered(&seeds[1]), [200]);
        assert_eq!(answered(&seeds[2]), [200]);
        assert_eq!(answered(&seeds[6]), [200, 200, 200, 200]);
        // A body on a refused method, then a probe on the same connection.
        assert_eq!(answered(&seeds[7]), [405, 200]);
        assert_eq!(answered(&seeds[10]), [405]);
        assert_eq!(answered(&seeds[11]), [404]);
        let oversized = seeds.last().unwrap();
        assert_eq!(oversized.len(), MAX_HEADER_BYTES + 1);
        assert_eq!(answered(oversized), [431]);
    }

    #[test]
    fn the_deadlines_end_every_connection_without_waiting_for_them() {
        let started = std::time::Instant::now();
        // A head cut short: the header deadline.
        let (answers, ended) = exchange(b"GET /metrics HTTP/1.1\r\nHost:");
        assert!(answers.is_empty(), "{}", String::from_utf8_lossy(&answers));
        assert!(ended.contains("timeout"), "{ended}");
        // A body that never comes: the client's close.
        let (answers, ended) =
            exchange(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab");
        assert_eq!(statuses(&answers), [405]);
        assert!(!ended.is_empty());
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
