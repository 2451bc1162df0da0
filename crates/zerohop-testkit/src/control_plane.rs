//! A real Kubernetes control plane for the tests: the upstream
//! kube-apiserver and etcd, built from the modules pinned in
//! `tools/control-plane/go.mod` and started on 127.0.0.1 by
//! `tools/control-plane/up` (the same script a person runs), with the
//! kubectl of the same release to drive it.
//!
//! One plane serves a whole test binary ([`ControlPlane::shared`]); a test
//! that restarts or compacts it starts its own ([`ControlPlane::start`]).
//! Either way it stops when the test process ends, however it ends: `up`
//! watches the process that started it. Tests share a plane by taking a
//! namespace of their own ([`ControlPlane::namespace`]) or names of their
//! own for cluster-scoped objects; without a controller manager nothing is
//! ever garbage-collected and no namespace finishes deleting.
//!
//! Without Go (a user's clone) the tests skip visibly; in CI a plane that
//! cannot be built or started fails them ([`prerequisite`]).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tempfile::TempDir;

use crate::prerequisite;

/// `tools/control-plane` of this repository.
fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/control-plane")
}

/// A running etcd and kube-apiserver.
pub struct ControlPlane {
    /// Where `up` keeps its data, keys, logs and the admin kubeconfig.
    dir: PathBuf,
    /// The directory of the built kube-apiserver, etcd and kubectl.
    bin: PathBuf,
    /// A plane of its own is removed with its owner; the shared one is
    /// removed by `up`'s watcher when the test process ends.
    owned: Option<TempDir>,
}

static SHARED: OnceLock<Option<ControlPlane>> = OnceLock::new();
static NAMES: AtomicUsize = AtomicUsize::new(0);

impl ControlPlane {
    /// The plane of this test binary, started by the first test that asks;
    /// `None` (after saying the test skipped) where Go is not installed
    /// outside CI.
    pub fn shared() -> Option<&'static ControlPlane> {
        SHARED
            .get_or_init(|| {
                let dir = tempfile::Builder::new()
                    .prefix("zerohop-control-plane-")
                    .tempdir()
                    .expect("a temporary directory")
                    .keep();
                ControlPlane::up(dir, None)
            })
            .as_ref()
    }

    /// A plane for one test, stopped and removed when dropped.
    pub fn start() -> Option<ControlPlane> {
        let owned = tempfile::Builder::new()
            .prefix("zerohop-control-plane-")
            .tempdir()
            .expect("a temporary directory");
        ControlPlane::up(owned.path().to_owned(), Some(owned))
    }

    fn up(dir: PathBuf, owned: Option<TempDir>) -> Option<ControlPlane> {
        if !go_is_installed() {
            prerequisite::missing(
                "Go is not installed: the real control plane is built from its Go modules \
                 (tools/control-plane/build)",
            );
            return None;
        }
        let built = run(Command::new(tools().join("build")));
        assert!(
            built.status.success(),
            "tools/control-plane/build failed:\n{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let bin = PathBuf::from(String::from_utf8_lossy(&built.stdout).trim());
        let plane = ControlPlane { dir, bin, owned };
        let output = plane.run_up();
        if !output.status.success() {
            // `up` stopped what it started; its watcher, which would have
            // removed the directory of the shared plane, never ran.
            let _ = std::fs::remove_dir_all(&plane.dir);
            panic!(
                "tools/control-plane/up failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Some(plane)
    }

    /// The admin kubeconfig (a member of `system:masters`).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// The HTTPS address of the API server.
    pub fn server(&self) -> String {
        format!("https://127.0.0.1:{}", self.port(2))
    }

    /// The port `up` wrote at `index` of `DIR/ports`: etcd's clients, its
    /// peers, the API server.
    fn port(&self, index: usize) -> String {
        let ports = std::fs::read_to_string(self.dir.join("ports")).expect("up wrote the ports");
        ports
            .split_whitespace()
            .nth(index)
            .expect("three ports")
            .to_owned()
    }

    /// The CA file that verifies the API server's certificate.
    pub fn certificate_authority(&self) -> PathBuf {
        self.dir.join("certs/apiserver.crt")
    }

    /// kubectl of the server's release, as the admin.
    pub fn kubectl(&self) -> Command {
        let mut command = Command::new(self.bin.join("kubectl"));
        command
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .arg("--request-timeout=60s")
            .env_remove("KUBECONFIG");
        command
    }

    /// Runs `kubectl ARGS` with `stdin` and returns its output, whatever
    /// its exit status.
    pub fn kubectl_output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut command = self.kubectl();
        command.args(args);
        run_with_input(command, stdin)
    }

    /// Runs `kubectl ARGS` with `stdin`; panics with its error unless it
    /// succeeds, and returns its standard output.
    pub fn kubectl_ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.kubectl_output(args, stdin);
        assert!(
            output.status.success(),
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("kubectl prints UTF-8")
    }

    /// The one object `kubectl get ARGS -o json` names, or `None` when it
    /// does not exist.
    pub fn get_json(&self, args: &[&str]) -> Option<serde_json::Value> {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json", "--ignore-not-found"]);
        let out = self.kubectl_ok(&full, None);
        (!out.trim().is_empty()).then(|| serde_json::from_str(&out).expect("kubectl prints JSON"))
    }

    /// The items of `kubectl get ARGS -o json`, a list.
    pub fn list(&self, args: &[&str]) -> Vec<serde_json::Value> {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        let out = self.kubectl_ok(&full, None);
        let list: serde_json::Value = serde_json::from_str(&out).expect("kubectl prints JSON");
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Creates or updates the objects of a manifest (server-side apply, as
    /// the admin).
    pub fn apply(&self, manifest: &str) {
        self.kubectl_ok(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=zerohop-test",
                "-f",
                "-",
            ],
            Some(manifest),
        );
    }

    /// Creates `objects` in one request of kubectl's (a `List`), as the
    /// admin: a thousand Nodes in seconds, not a process each.
    pub fn create_all(&self, objects: impl IntoIterator<Item = serde_json::Value>) {
        let list = serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": objects.into_iter().collect::<Vec<_>>(),
        });
        self.kubectl_ok(&["create", "-f", "-"], Some(&list.to_string()));
    }

    /// Waits, at most 30 s, until `kubectl auth can-i ARGS --as USER`
    /// answers `allowed` for every `ARGS` of `checks`.
    ///
    /// The authorizer takes new roles and bindings from its informers, a
    /// moment after they are created: a test that runs as `user` right
    /// after granting (or taking) a right waits for it here.
    pub fn await_can_i(&self, user: &str, checks: &[&[&str]], allowed: bool) {
        let answers = |args: &[&str]| {
            let mut full = vec!["auth", "can-i"];
            full.extend_from_slice(args);
            full.extend_from_slice(&["--as", user]);
            let output = self.kubectl_output(&full, None);
            String::from_utf8_lossy(&output.stdout).trim() == if allowed { "yes" } else { "no" }
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !checks.iter().all(|args| answers(args)) {
            assert!(
                std::time::Instant::now() < deadline,
                "RBAC never answered {allowed} to {user} for {checks:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Installs the CustomResourceDefinitions in `files` (YAML, one CRD or
    /// several each) and waits until the server serves every one of them.
    pub fn install_crds(&self, files: &[PathBuf]) {
        // One kubectl for all of them: a process per file cost a second
        // per five files. A document separator between files, since a file
        // need not end with a newline nor begin with `---`.
        let mut manifest = String::new();
        for file in files {
            let text =
                std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            manifest.push_str("\n---\n");
            manifest.push_str(&text);
        }
        self.apply(&manifest);
        self.wait_for_crds();
    }

    /// Waits, at most 60 s, until the server establishes (serves) every
    /// CustomResourceDefinition it holds.
    ///
    /// Not `kubectl wait --for=condition=Established`: on a CRD created a
    /// moment ago, whose status has no conditions yet, kubectl v1.37.2
    /// fails at once (".status.conditions accessor error: <nil> is of the
    /// type <nil>") rather than waiting.
    pub fn wait_for_crds(&self) {
        let established = |crd: &serde_json::Value| {
            crd["status"]["conditions"]
                .as_array()
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let waiting: Vec<String> = self
                .list(&["crd"])
                .iter()
                .filter(|crd| !established(crd))
                .map(|crd| crd["metadata"]["name"].to_string())
                .collect();
            if waiting.is_empty() {
                return;
            }
            // The server establishes a valid CRD within a second or two.
            assert!(
                std::time::Instant::now() < deadline,
                "never established: {}",
                waiting.join(", ")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A namespace that no other test uses, created now; its name starts
    /// with `prefix`.
    pub fn namespace(&self, prefix: &str) -> String {
        let name = self.unique_name(prefix);
        self.kubectl_ok(&["create", "namespace", &name], None);
        name
    }

    /// A name no other caller in this process gets, for cluster-scoped
    /// objects (Nodes) that tests of one binary share a plane for.
    pub fn unique_name(&self, prefix: &str) -> String {
        format!(
            "{prefix}-{}-{}",
            std::process::id(),
            NAMES.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// A token for service account `namespace/account` bound to Pod
    /// `namespace/pod`, from the TokenRequest API as the kubelet asks for
    /// one: the server adds the pod's node to its claims
    /// (`authentication.kubernetes.io/node-name` in the user's extra).
    pub fn pod_token(&self, namespace: &str, account: &str, pod: &str) -> String {
        let uid = self.kubectl_ok(
            &[
                "get",
                "pod",
                "-n",
                namespace,
                pod,
                "-o",
                "jsonpath={.metadata.uid}",
            ],
            None,
        );
        let request = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": ["https://kubernetes.default.svc.cluster.local"],
                "expirationSeconds": 3600,
                "boundObjectRef": { "apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid },
            },
        });
        let out = self.kubectl_ok(
            &[
                "create",
                "--raw",
                &format!("/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"),
                "-f",
                "-",
            ],
            Some(&request.to_string()),
        );
        let answer: serde_json::Value = serde_json::from_str(&out).expect("a TokenRequest");
        answer["status"]["token"]
            .as_str()
            .expect("the server issued a token")
            .to_owned()
    }

    /// Writes a kubeconfig for this server that authenticates with `token`
    /// to `path`, and returns `path`.
    pub fn write_token_kubeconfig(&self, token: &str, path: &Path) -> PathBuf {
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{ "name": "zerohop-test", "cluster": {
                "server": self.server(),
                "certificate-authority": self.certificate_authority(),
            }}],
            "users": [{ "name": "token", "user": { "token": token } }],
            "contexts": [{ "name": "zerohop-test",
                           "context": { "cluster": "zerohop-test", "user": "token" } }],
            "current-context": "zerohop-test",
        });
        std::fs::write(path, config.to_string()).expect("the kubeconfig is written");
        path.to_owned()
    }

    /// Stops kube-apiserver and etcd (`tools/control-plane/down`).
    pub fn stop(&self) {
        let output = run({
            let mut command = Command::new(tools().join("down"));
            command.arg(&self.dir);
            command
        });
        assert!(
            output.status.success(),
            "tools/control-plane/down failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Starts the stopped plane again, on the same ports with the same
    /// data and credentials: a restart, as a client that keeps its
    /// kubeconfig sees one.
    pub fn start_again(&self) {
        let output = self.run_up();
        assert!(
            output.status.success(),
            "tools/control-plane/up failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// `tools/control-plane/up DIR --owner THIS-PROCESS`.
    fn run_up(&self) -> Output {
        let mut command = Command::new(tools().join("up"));
        command
            .arg(&self.dir)
            .args(["--owner", &std::process::id().to_string()]);
        run(command)
    }

    /// Compacts etcd's history up to its current revision, as the API
    /// server does every five minutes: a watch or a list continued from a
    /// resourceVersion before it is answered 410 Gone.
    pub fn compact_etcd(&self) {
        let etcd = self.port(0);
        // etcd's JSON gateway (etcdserver/api/v3rpc, the grpc-gateway of
        // KV.Range and KV.Compact): keys are base64; "AA==" is "\0", the
        // first key, with range_end "AA==" meaning every key.
        let range = etcd_post(&etcd, "/v3/kv/range", r#"{"key":"AA==","count_only":true}"#);
        let revision = range["header"]["revision"]
            .as_str()
            .expect("etcd names its revision")
            .to_owned();
        etcd_post(
            &etcd,
            "/v3/kv/compaction",
            &format!(r#"{{"revision":"{revision}","physical":true}}"#),
        );
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if self.owned.is_some() {
            self.stop();
        }
    }
}

/// The files of `crds` (`../shared/reference/crds`) that hold one copy of
/// each CustomResourceDefinition there, in name order: what a plane installs
/// before it judges the operators' objects. The directory holds two copies
/// of some CRDs (one `metadata.name` from two sources, see its
/// `SOURCES.md`), and a server holds one CRD per name; of each pair this
/// keeps
/// * the SR-IOV CRDs of k8snetworkplumbingwg/sriov-network-operator
///   (`sriovnetwork.openshift.io_*`), not the Network Operator chart's
///   downstream fork (`network-operator-bundled.*`): the fork's
///   SriovNetworkNodePolicy only adds optional fields (`devlinkParams`,
///   `bridge.ovs.bridge.groupingPolicy`) and its SriovNetwork differs only
///   in `status`, so an object the upstream copy admits the fork admits too,
///   and the upstream copy is the one OpenShift's SR-IOV operator serves;
/// * the NetworkAttachmentDefinition CRD the Network Operator ships
///   (`*.network-operator.yaml`, identical to the sriov-network-operator
///   chart's), not network-attachment-definition-client's 2019
///   `artifacts/networks-crd.yaml` (`*.nad-client.yaml`): both declare only
///   `spec.config: string`, so they admit the same objects, and the
///   operators install the former.
///
/// `SOURCES.md` and the webhook's JSON Schemas (a subdirectory) are no CRDs.
pub fn reference_crd_files(crds: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(crds)
        .unwrap_or_else(|e| panic!("{}: {e}", crds.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or_default();
            name.ends_with(".yaml")
                && !name.starts_with("network-operator-bundled.")
                && !name.ends_with(".nad-client.yaml")
        })
        .collect();
    files.sort();
    files
}

fn go_is_installed() -> bool {
    Command::new("go")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn run(command: Command) -> Output {
    run_with_input(command, None)
}

fn run_with_input(mut command: Command, stdin: Option<&str>) -> Output {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("a piped stdin");
        let input = input.to_owned();
        // Written from a thread of its own, so that a large manifest never
        // waits on a full stdout pipe.
        std::thread::spawn(move || pipe.write_all(input.as_bytes()));
    }
    child.wait_with_output().expect("the command ends")
}

/// One HTTP/1.1 POST of JSON to etcd's gateway on 127.0.0.1:`port`; the
/// answer's JSON body.
fn etcd_post(port: &str, path: &str, body: &str) -> serde_json::Value {
    let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).expect("etcd listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a timeout");
    write!(
        stream,
        // HTTP/1.0, so that the answer comes whole, never chunked.
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("the request is sent");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .expect("etcd answers in time");
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert_eq!(head.split(' ').nth(1), Some("200"), "etcd {path}: {answer}");
    serde_json::from_str(body.trim())
        .unwrap_or_else(|e| panic!("etcd {path} answered no JSON ({e}): {body}"))
}
