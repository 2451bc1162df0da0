//! The image built without a network (`deploy/image/build-offline.sh`):
//! umoci reads the layout back and unpacks it as a runtime bundle (checking
//! every blob's digest on the way), the bundle's process is the image's
//! entrypoint and command, and that entrypoint, run in the image's own root
//! file system (chroot: only the binary and the libraries the image holds),
//! judges a host tree mounted at `/host`: once as `doctor`, once as the
//! agent the image runs by default, whose `/metrics` then shows the failed
//! check and which exits 143 on SIGTERM.
//!
//! It needs umoci (`.ci/run` installs it) and root for chroot and the
//! mount namespace (CI runs as root): without them it fails under CI (`CI=true`) and skips visibly
//! elsewhere.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn required(what: &str, present: bool) -> bool {
    if !present {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{what}: CI must not pass without it"
        );
        eprintln!("skipped: {what}");
    }
    present
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(command: &mut Command) -> std::process::Output {
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("{command:?}: {err}"));
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Builds the image from the binary under test and unpacks it; returns
/// the bundle's directory and its process arguments.
fn built_bundle(dir: &Path) -> (PathBuf, Vec<String>) {
    let layout = dir.join("layout");
    run(
        Command::new(repository().join("deploy/image/build-offline.sh"))
            .arg(env!("CARGO_BIN_EXE_zerohop"))
            .arg(&layout)
            .arg("0.1.0"),
    );
    let bundle = dir.join("bundle");
    run(Command::new("umoci")
        .args(["unpack", "--rootless", "--image"])
        .arg(format!("{}:0.1.0", layout.display()))
        .arg(&bundle));
    let config: Value =
        serde_json::from_slice(&std::fs::read(bundle.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        config["process"]["user"]["uid"], 0,
        "USER 0, as the Containerfile"
    );
    let args = config["process"]["args"]
        .as_array()
        .expect("process.args")
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    (bundle, args)
}

/// Copies a doctor fixture host tree to `/host` in the root file system.
fn plant_host(rootfs: &Path) {
    let fixture =
        repository().join("crates/zerohop-doctor/tests/fixtures/KRN001/fail-off-with-sriov");
    run(Command::new("cp")
        .arg("-a")
        .arg(fixture.join("."))
        .arg(rootfs.join("host")));
}

/// A command run in the image's root file system, the way a runtime runs
/// the container: in a mount namespace of its own with `/proc` and `/dev`
/// mounted (the agent's reader processes start from `/proc/self/exe`,
/// with their output to `/dev/null`), then chrooted. Each step execs the
/// next, so the process keeps its pid and its exit status.
fn in_image(rootfs: &Path, args: &[&str]) -> Command {
    std::fs::create_dir_all(rootfs.join("proc")).unwrap();
    std::fs::create_dir_all(rootfs.join("dev")).unwrap();
    let mut command = Command::new("unshare");
    command
        .args([
            "--mount",
            "sh",
            "-c",
            r#"mount -t proc proc "$0/proc" && mount --bind /dev "$0/dev" && exec chroot "$0" "$@""#,
        ])
        .arg(rootfs)
        .args(args);
    command
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    Some(text)
}

#[test]
fn the_offline_image_runs_its_entrypoint_on_a_host_tree() {
    if !required(
        "umoci is not installed (.ci/run installs it)",
        on_path("umoci"),
    ) || !required("chroot needs root", rustix::process::geteuid().is_root())
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (bundle, args) = built_bundle(dir.path());
    assert_eq!(args, ["/usr/bin/zerohop", "agent", "--root", "/host"]);
    let rootfs = bundle.join("rootfs");
    plant_host(&rootfs);
    let entrypoint = &args[0];

    // One-shot: the entrypoint with `doctor`, as `kubectl debug` runs it.
    let output = in_image(
        &rootfs,
        &[
            entrypoint,
            "doctor",
            "--root",
            "/host",
            "--only",
            "KRN001",
            "--expect-sriov",
            "true",
            "--format",
            "json",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "KRN001 fails on this host: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    let text = report.to_string();
    assert!(
        text.contains("\"KRN001\"") && text.contains("\"fail\""),
        "{text}"
    );

    // The image's own command, on a local port.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    std::fs::write(rootfs.join("tmp/profile.yaml"), "sriov: true\n").unwrap();
    let mut command: Vec<&str> = args.iter().map(String::as_str).collect();
    command.extend(["--listen", &listen, "--profile", "/tmp/profile.yaml"]);
    let mut agent = in_image(&rootfs, &command)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let metrics = loop {
        if let Some(text) = get(port, "/metrics").filter(|t| t.contains("zerohop_check_status{")) {
            break text;
        }
        assert!(Instant::now() < deadline, "no pass within 60 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    let failed = metrics.lines().any(|line| {
        line.starts_with("zerohop_check_status{")
            && line.contains("check=\"KRN001\"")
            && line.contains("status=\"fail\"")
    });
    run(Command::new("kill")
        .arg("-TERM")
        .arg(agent.id().to_string()));
    let status = agent.wait().unwrap();
    let mut stderr = String::new();
    if let Some(mut pipe) = agent.stderr.take() {
        pipe.read_to_string(&mut stderr).unwrap();
    }
    assert!(failed, "{metrics}");
    assert_eq!(status.code(), Some(143), "{stderr}");
}
