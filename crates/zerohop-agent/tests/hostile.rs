//! Hostile input to the agent's endpoints and API client: clients that
//! hold connections without speaking, floods of connections, oversized
//! requests, API responses larger than any real one, kubeconfigs that are
//! FIFOs. Every test has its own deadline: a hang fails it.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::fs::{CWD, FileType, Mode, mknodat};
use tokio::net::TcpListener;
use tokio::sync::watch;
use zerohop_agent::http::{self, HEADER_TIMEOUT, MAX_CONNECTIONS, MAX_HEADER_BYTES, Shared};
use zerohop_agent::metrics::Live;
use zerohop_cluster::api;
use zerohop_testkit::fake_api_server::{FakeApiServer, Fault};

/// Serves the endpoints on a runtime of their own; returns the address.
fn serve() -> (SocketAddr, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let address = listener.local_addr().unwrap();
    let (_, snapshot) = watch::channel(None);
    let (_, counters) = watch::channel(None);
    let shared = Arc::new(Shared {
        node: "n1".into(),
        snapshot,
        counters,
        live: Arc::new(Live::default()),
    });
    runtime.spawn(http::serve(listener, shared));
    (address, runtime)
}

fn request(address: SocketAddr, text: &[u8]) -> String {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.write_all(text);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

#[test]
fn a_client_that_never_sends_its_request_is_dropped_after_the_header_deadline() {
    let (address, _runtime) = serve();
    let mut silent = TcpStream::connect(address).unwrap();
    silent.write_all(b"GET /metrics HTTP/1.1\r\nHost:").unwrap();
    silent
        .set_read_timeout(Some(HEADER_TIMEOUT + Duration::from_secs(5)))
        .unwrap();
    let started = Instant::now();
    // Others are served meanwhile.
    assert!(request(address, HEALTHZ).starts_with("HTTP/1.1 200"));
    let mut rest = Vec::new();
    let read = silent.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(read.is_ok(), "the server closed the connection: {read:?}");
    assert!(
        waited >= HEADER_TIMEOUT - Duration::from_millis(200)
            && waited < HEADER_TIMEOUT + Duration::from_secs(3),
        "{waited:?}"
    );
}

#[test]
fn a_flood_of_idle_connections_queues_and_is_drained_by_the_deadline() {
    let (address, _runtime) = serve();
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS + 16)
        .map(|_| TcpStream::connect(address).unwrap())
        .collect();
    let started = Instant::now();
    // Every slot is taken by a silent client: this request waits in the
    // backlog until the header deadline frees the slots, and is then served.
    let answer = request(address, HEALTHZ);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        started.elapsed() < HEADER_TIMEOUT * 3,
        "{:?}",
        started.elapsed()
    );
    drop(idle);
}

#[test]
fn oversized_request_headers_are_refused_not_buffered() {
    let (address, _runtime) = serve();
    let mut huge = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 1 << 20));
    huge.extend_from_slice(b"\r\n\r\n");
    let started = Instant::now();
    let answer = request(address, &huge);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{}",
        &answer[..answer.len().min(200)]
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(request(address, HEALTHZ).starts_with("HTTP/1.1 200"));
}

/// A `GET /metrics` whose head (request line, headers and the blank line
/// that ends them) is exactly `size` bytes.
fn head_of(size: usize) -> Vec<u8> {
    let start = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: ";
    let mut head = start.to_vec();
    head.resize(size - 4, b'a');
    head.extend_from_slice(b"\r\n\r\n");
    assert_eq!(head.len(), size);
    head
}

/// What the server answers to `text`, and how reading the answer ended.
fn answer_and_end(address: SocketAddr, text: &[u8]) -> (String, std::io::Result<usize>) {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.write_all(text);
    let mut answer = Vec::new();
    let end = stream.read_to_end(&mut answer);
    (String::from_utf8_lossy(&answer).into_owned(), end)
}

#[test]
fn request_heads_over_64_kib_are_refused_and_up_to_it_served() {
    let (address, _runtime) = serve();
    assert_eq!(MAX_HEADER_BYTES, 64 * 1024, "docs/agent.md says 64 KiB");
    for size in [MAX_HEADER_BYTES - 1, MAX_HEADER_BYTES] {
        let (answer, end) = answer_and_end(address, &head_of(size));
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.contains("zerohop_"),
            "a head of {size} bytes: {end:?} {}",
            &answer[..answer.len().min(200)]
        );
    }
    // Just over, and the ~100 KiB that a read-buffer cap alone let through.
    for size in [MAX_HEADER_BYTES + 1, MAX_HEADER_BYTES + 2, 100 << 10] {
        let (answer, end) = answer_and_end(address, &head_of(size));
        // hyper answers 431 and closes; a close with the request not read
        // to its end resets the connection, which may discard the answer.
        let reset = answer.is_empty()
            && end
                .as_ref()
                .is_err_and(|err| err.kind() == std::io::ErrorKind::ConnectionReset);
        assert!(
            answer.starts_with("HTTP/1.1 431") || reset,
            "a head of {size} bytes: {end:?} {}",
            &answer[..answer.len().min(200)]
        );
    }
}

#[test]
fn only_get_and_head_on_known_paths() {
    let (address, _runtime) = serve();
    let post = request(
        address,
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(post.starts_with("HTTP/1.1 405"), "{post}");
    assert!(
        post.to_ascii_lowercase().contains("allow: get, head"),
        "{post}"
    );
    let unknown = request(
        address,
        b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(unknown.starts_with("HTTP/1.1 404"), "{unknown}");
    let not_yet = request(
        address,
        b"GET /report HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(not_yet.starts_with("HTTP/1.1 503"), "{not_yet}");
    let head = request(
        address,
        b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

fn fifo(path: &Path) {
    mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
}

#[tokio::test]
async fn a_kubeconfig_that_is_a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    fifo(&path);
    let started = Instant::now();
    let err = api::client(Some(&path), Duration::from_secs(30), false)
        .await
        .err()
        .expect("refused");
    assert!(err.to_string().contains("not a regular file"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn an_api_response_larger_than_the_cap_is_refused_not_held() {
    let server = FakeApiServer::start();
    server.inject(Fault {
        path_prefix: "/api/v1/nodes/n1".into(),
        huge_body: Some(api::MAX_RESPONSE_BYTES + (1 << 20)),
        ..Fault::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path());
    let client = api::client(Some(&kubeconfig), Duration::from_secs(20), false)
        .await
        .unwrap();
    let started = Instant::now();
    let err = api::read_node(&client, "n1").await.unwrap_err();
    assert!(err.code.is_none(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_server_that_never_answers_costs_one_deadline() {
    let server = FakeApiServer::start();
    server.inject(Fault {
        path_prefix: "/api/v1/nodes".into(),
        delay: Some(Duration::from_secs(120)),
        ..Fault::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path());
    let client = api::client(Some(&kubeconfig), Duration::from_secs(1), false)
        .await
        .unwrap();
    let started = Instant::now();
    let err = api::read_node(&client, "n1").await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(err.code.is_none(), "{err}");
}

/// The longest a `/healthz` may take under load: half the 5 s the
/// DaemonSet's probes allow, with room for a loaded CI machine running a
/// debug build.
const PROBE_BOUND: Duration = Duration::from_millis(2500);

/// Time for one `/healthz`.
fn probe(address: SocketAddr) -> Duration {
    let started = Instant::now();
    let answer = request(address, HEALTHZ);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    started.elapsed()
}

#[test]
fn clients_that_pipeline_and_never_read_leave_the_probes_answered() {
    let (address, _runtime) = serve();
    // Every slot is taken by a client that pipelines requests for the
    // largest answer and reads none of them, so that every write of the
    // server waits on a full socket.
    let mut pipelined = Vec::new();
    let mut requests = Vec::new();
    for _ in 0..2_000 {
        requests.extend_from_slice(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    for _ in 0..MAX_CONNECTIONS {
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_write_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        // The server stops reading once its writes wait: the rest of the
        // requests stay unsent.
        let _ = stream.write_all(&requests);
        pipelined.push(stream);
    }
    for _ in 0..5 {
        let took = probe(address);
        assert!(took < PROBE_BOUND, "/healthz took {took:?}");
    }
    drop(pipelined);
}

/// Raises this process's descriptor limit to its hard limit and says how
/// many client connections it leaves room for (each costs two here: the
/// client's and the server's).
fn room_for_connections(wanted: usize) -> usize {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    let _ = setrlimit(Resource::Nofile, limit);
    let current = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    let room = usize::try_from(current.saturating_sub(256) / 2).unwrap_or(usize::MAX);
    if room < wanted {
        eprintln!("only {room} connections fit under the descriptor limit of {current}");
    }
    wanted.min(room)
}

#[test]
fn a_sustained_slowloris_leaves_the_probes_answered() {
    let (address, _runtime) = serve();
    let count = room_for_connections(1_000);
    assert!(count > MAX_CONNECTIONS * 4, "{count} connections");
    let mut slow: Vec<TcpStream> = (0..count)
        .map(|_| {
            let mut stream = TcpStream::connect(address).unwrap();
            stream.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
            stream
        })
        .collect();
    // For longer than the header deadline, every slow client sends one
    // more header line a second, and reconnects when it is dropped: the
    // flood is sustained, not a burst that the deadline drains.
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    while started.elapsed() < HEADER_TIMEOUT + Duration::from_secs(3) {
        for stream in &mut slow {
            if stream.write_all(b"X-Slow: 1\r\n").is_err() {
                let mut again = TcpStream::connect(address).unwrap();
                let _ = again.write_all(b"GET /metrics HTTP/1.1\r\n");
                *stream = again;
            }
        }
        slowest = slowest.max(probe(address));
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        slowest < PROBE_BOUND,
        "the slowest /healthz took {slowest:?}"
    );
}
