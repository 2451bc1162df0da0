//! The control plane the cluster tests run against (`tools/control-plane`):
//! its scripts pass shellcheck, it is the release its `go.mod` pins, and
//! it stops, restarts and compacts as the tests that rely on it assume.

use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use zerohop_testkit::control_plane::ControlPlane;
use zerohop_testkit::prerequisite;

fn tools() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/control-plane")
}

#[test]
fn the_scripts_pass_shellcheck() {
    let scripts: Vec<_> = ["build", "up", "down"]
        .iter()
        .map(|name| tools().join(name))
        .collect();
    let output = match Command::new("shellcheck").args(&scripts).output() {
        Ok(output) => output,
        Err(e) => return prerequisite::missing(format_args!("shellcheck: {e}")),
    };
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

/// The release `go.mod` requires, as `v1.MINOR.PATCH`.
fn pinned_release() -> String {
    let go_mod = std::fs::read_to_string(tools().join("go.mod")).unwrap();
    go_mod
        .lines()
        .find_map(|line| {
            let rest = line.trim().strip_prefix("k8s.io/kubernetes v")?;
            Some(format!("v{}", rest.split_whitespace().next()?))
        })
        .expect("go.mod requires k8s.io/kubernetes")
}

#[test]
fn it_is_the_pinned_release_and_survives_a_restart_and_a_compaction() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    // The version stamp of `build`: server and client say the release
    // go.mod pins, not component-base's `v0.0.0-master` default.
    let version: serde_json::Value =
        serde_json::from_str(&plane.kubectl_ok(&["version", "-o", "json"], None)).unwrap();
    let release = pinned_release();
    assert_eq!(version["serverVersion"]["gitVersion"], release.as_str());
    assert_eq!(version["clientVersion"]["gitVersion"], release.as_str());

    // What the tests of ServiceAccounts and admission policies rely on:
    // the API groups served and the system namespaces made.
    let groups = plane.kubectl_ok(&["api-versions"], None);
    for group in [
        "admissionregistration.k8s.io/v1",
        "authentication.k8s.io/v1",
        "events.k8s.io/v1",
        "rbac.authorization.k8s.io/v1",
    ] {
        assert!(groups.lines().any(|g| g == group), "{group}: {groups}");
    }
    let namespace = plane.namespace("restart");
    plane.kubectl_ok(&["create", "configmap", "kept", "-n", &namespace], None);
    let old_version = plane
        .get_json(&["configmap", "kept", "-n", &namespace])
        .unwrap()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();

    // Stopped: nothing listens on its address any more.
    let server = plane.server();
    let address = server.trim_start_matches("https://").to_owned();
    plane.stop();
    assert!(
        TcpStream::connect(&address).is_err(),
        "{address} still answers after down"
    );

    // Started again: the same address, the same data.
    plane.start_again();
    assert_eq!(plane.server(), server);
    assert!(
        plane
            .get_json(&["configmap", "kept", "-n", &namespace])
            .is_some()
    );

    // Compacted past an object's version: a list at that version is
    // answered 410 Gone, as a watch or a continue token would be.
    plane.kubectl_ok(&["create", "configmap", "newer", "-n", &namespace], None);
    plane.compact_etcd();
    let stale = plane.kubectl_output(
        &[
            "get",
            "--raw",
            &format!(
                "/api/v1/namespaces/{namespace}/configmaps?resourceVersion={old_version}&resourceVersionMatch=Exact"
            ),
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&stale.stderr);
    assert!(!stale.status.success(), "a list at a compacted version");
    assert!(
        stderr.contains("(410)") || stderr.contains("Gone") || stderr.contains("too old"),
        "{stderr}"
    );
}

#[test]
fn up_and_down_leave_a_directory_that_is_not_a_planes_alone() {
    // Somebody's directory: `up` would lock it, write into it and, with
    // `--owner`, remove it; `down` would signal the ids its `*.pid` files
    // name. Both refuse, before anything is built or started.
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("etcd.pid");
    std::fs::write(&precious, "1\n").unwrap();
    for script in ["up", "down"] {
        let output = Command::new(tools().join(script))
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{script}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&dir.path().display().to_string()),
            "{stderr}"
        );
    }
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "1\n");
    // A newline would end the path's YAML scalar in the kubeconfig.
    let output = Command::new(tools().join("up"))
        .arg(dir.path().join("a\nb"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(!dir.path().join("a\nb").exists());
}
