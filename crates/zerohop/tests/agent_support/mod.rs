//! Running the real `zerohop agent` and `zerohop fleet` binaries against
//! the real API server (or, for faults, the in-memory one), with a
//! deadline on everything: a hang fails the test instead of stalling CI.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test file uses part of the support"
)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test.
pub fn zerohop() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zerohop"))
}

/// A doctor fixture root of this repository.
pub fn fixture(case: &str) -> PathBuf {
    [
        env!("CARGO_MANIFEST_DIR"),
        "../zerohop-doctor/tests/fixtures",
        case,
    ]
    .iter()
    .collect()
}

pub use zerohop_testkit::shared_data::copy_tree;

/// Polls `check` every 50 ms until it is true or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if check() {
            return true;
        }
        thread::sleep(Duration::from_millis(50));
    }
    check()
}

/// A running agent; killed when dropped.
pub struct Agent {
    pub child: Child,
    pub address: SocketAddr,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Agent {
    /// Starts `zerohop agent ARGS --listen 127.0.0.1:0` with `env` and waits
    /// (at most 10 s) for it to say where it listens.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Agent {
        let mut command = zerohop();
        command
            .arg("agent")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env_remove("NODE_NAME")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("the agent starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&log);
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let mut address = None;
        let found = wait_until(Duration::from_secs(10), || {
            let log = log.lock().unwrap();
            address = log.iter().find_map(|line| {
                let rest = line.split(" listen=").nth(1)?;
                rest.split(' ').next()?.parse().ok()
            });
            address.is_some()
        });
        if !found {
            let _ = child.kill();
            panic!("the agent did not start: {:?}", log.lock().unwrap());
        }
        Agent {
            child,
            address: address.unwrap(),
            log,
        }
    }

    /// `GET path` with an optional `Accept` header.
    pub fn get(&self, path: &str, accept: Option<&str>) -> Reply {
        get(self.address, path, accept)
    }

    /// The log so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Sends SIGTERM and waits at most `limit` for the exit.
    pub fn terminate(&mut self, limit: Duration) -> Option<(ExitStatus, Duration)> {
        let started = Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some((status, started.elapsed()));
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Reply {
    /// A header's value (name in lowercase).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim().eq_ignore_ascii_case(name)).then(|| value.trim().to_owned())
        })
    }
}

/// One HTTP/1.1 request with a 5 s deadline on every step.
pub fn get(address: SocketAddr, path: &str, accept: Option<&str>) -> Reply {
    let mut stream =
        TcpStream::connect_timeout(&address, Duration::from_secs(5)).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .expect("the answer arrives in time");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// A Node object as the API server stores it.
pub fn node(
    name: &str,
    labels: serde_json::Value,
    conditions: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "labels": labels },
        "spec": {},
        "status": { "conditions": conditions },
    })
}

/// Runs `zerohop fleet ARGS` with a deadline; returns exit code, stdout, stderr.
pub fn fleet(args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = zerohop()
        .arg("fleet")
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fleet starts");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fleet did not end within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    (code, out.join().unwrap(), err.join().unwrap())
}

/// The time `seconds` ago, as the API server writes it (RFC 3339, UTC).
pub fn now_minus(seconds: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t = now - seconds;
    // RFC 3339 in UTC without a date library: days from the epoch.
    let (days, rest) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    let (y, mo, d) = civil(days);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// Days since 1970-01-01 to a calendar date (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The namespace `zerohop agent --print-manifests` installs the agent in
/// by default.
pub const AGENT_NAMESPACE: &str = "zerohop-system";

/// `zerohop agent --print-manifests`, applied to `plane` as an
/// administrator would, the report CRD served.
pub fn install_agent(plane: &zerohop_testkit::control_plane::ControlPlane) {
    let out = zerohop()
        .args(["agent", "--print-manifests"])
        .output()
        .unwrap();
    assert!(out.status.success());
    plane.apply(std::str::from_utf8(&out.stdout).unwrap());
    plane.wait_for_crds();
    // Granted a moment after the role is created: wait for what the
    // agent's role says.
    let account = format!(
        "system:serviceaccount:{AGENT_NAMESPACE}:{}",
        zerohop_known::zerohop_api::AGENT_NAME
    );
    plane.await_can_i(
        &account,
        &[
            &["patch", "nodes", "--subresource=status"],
            &["create", "datapathreports.zerohop.dev", "--all-namespaces"],
            &["create", "events.events.k8s.io", "--namespace=default"],
        ],
        true,
    );
}

/// The agent's Pod on `node`, as the DaemonSet controller and the
/// scheduler would leave it (neither runs here), and a kubeconfig in `dir`
/// with the token the kubelet would get for it: the agent's service
/// account, bound to the Pod, with the node's name in its claims.
pub fn agent_identity(
    plane: &zerohop_testkit::control_plane::ControlPlane,
    node: &str,
    dir: &std::path::Path,
) -> PathBuf {
    let account = zerohop_known::zerohop_api::AGENT_NAME;
    let pod = format!("{account}-{node}");
    let object = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": pod, "namespace": AGENT_NAMESPACE },
        "spec": {
            "serviceAccountName": account,
            "nodeName": node,
            "containers": [{ "name": "agent", "image": "zerohop:test" }],
        },
    });
    plane.kubectl_ok(&["create", "-f", "-"], Some(&object.to_string()));
    let token = plane.pod_token(AGENT_NAMESPACE, account, &pod);
    plane.write_token_kubeconfig(&token, &dir.join(format!("{node}.kubeconfig")))
}
