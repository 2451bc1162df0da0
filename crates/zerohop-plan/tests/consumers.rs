//! The programs that consume the rendered files judge them: systemd loads
//! every unit, the shells parse and shellcheck lints every script and every
//! command of the README, a pasted host step does what the README says, and
//! `kubectl kustomize` builds the kustomization. Each set of the examples
//! and of the intents under `tests/consumers/` (RoCE and InfiniBand, shared
//! and SR-IOV exclusive RDMA, NFS over RDMA with GDS, NVMe-oF) is rendered
//! on both platforms.
//!
//! A program that is not installed fails the test under CI (`CI=true`,
//! where `.ci/run` installs them all: systemd and nvme-cli from Debian,
//! shellcheck, kubectl from PyPI) and skips it visibly elsewhere.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine;
use serde_json::Value;
use zerohop_plan::{ManifestSet, Platform, load, render, write_set};

/// Every intent the consumers judge: the examples and the feature intents.
fn intents() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![
        root.join("../../examples/cluster.yaml"),
        root.join("../../examples/infiniband.yaml"),
    ];
    let mut features: Vec<PathBuf> = std::fs::read_dir(root.join("tests/consumers"))
        .expect("tests/consumers")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    features.sort();
    assert!(features.len() >= 2, "the feature intents are missing");
    paths.extend(features);
    paths
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            (name, text)
        })
        .collect()
}

/// Every set: each intent on both platforms, named `intent platform`.
fn sets() -> Vec<(String, Platform, ManifestSet)> {
    let mut sets = Vec::new();
    for (name, text) in intents() {
        for platform in [Platform::Kubernetes, Platform::Openshift] {
            let plan = load(&name, &text, Some(platform)).unwrap_or_else(|err| panic!("{err}"));
            sets.push((format!("{name} {platform:?}"), platform, render(&plan)));
        }
    }
    sets
}

/// Whether `program` is installed; under CI its absence fails the test.
fn installed(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{program} is not installed: .ci/run installs it, and CI must not pass without it"
        );
        eprintln!("skipped: {program} is not installed (.ci/run installs it)");
    }
    found
}

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|err| panic!("{command:?}: {err}"))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

// ---------------------------------------------------------------- systemd

/// One node's file system as the set leaves it: the files and units the
/// set places (the host tree on Kubernetes, the MachineConfigs of one role
/// on OpenShift), with their modes, and the units each asks to enable.
struct NodeFiles {
    what: String,
    files: Vec<(String, Vec<u8>, u32)>,
    units: Vec<String>,
}

/// The node file systems of a set.
fn node_files(what: &str, platform: Platform, set: &ManifestSet) -> Vec<NodeFiles> {
    let mut nodes: Vec<NodeFiles> = Vec::new();
    if platform == Platform::Kubernetes {
        for file in &set.files {
            let Some(rest) = file.path.strip_prefix("host/") else {
                continue;
            };
            let (pool, path) = rest.split_once('/').expect("host/<pool>/<path>");
            let what = format!("{what} host/{pool}");
            let index = match nodes.iter().position(|n| n.what == what) {
                Some(index) => index,
                None => {
                    nodes.push(NodeFiles {
                        what,
                        files: Vec::new(),
                        units: Vec::new(),
                    });
                    nodes.len() - 1
                }
            };
            // The README has the scripts installed executable.
            let mode = if path.starts_with("usr/local/sbin/") {
                0o755
            } else {
                0o644
            };
            if let Some(unit) = path.strip_prefix("etc/systemd/system/") {
                nodes[index].units.push(unit.to_owned());
            }
            nodes[index]
                .files
                .push((format!("/{path}"), file.contents.clone().into_bytes(), mode));
        }
        return nodes;
    }
    for file in &set.files {
        for object in &file.objects {
            if object["kind"] != "MachineConfig" {
                continue;
            }
            let role = object["metadata"]["labels"]["machineconfiguration.openshift.io/role"]
                .as_str()
                .expect("role")
                .to_owned();
            let what = format!("{what} role {role}");
            let index = match nodes.iter().position(|n| n.what == what) {
                Some(index) => index,
                None => {
                    nodes.push(NodeFiles {
                        what,
                        files: Vec::new(),
                        units: Vec::new(),
                    });
                    nodes.len() - 1
                }
            };
            let config = &object["spec"]["config"];
            for entry in config["storage"]["files"].as_array().into_iter().flatten() {
                let source = entry["contents"]["source"].as_str().expect("source");
                let encoded = source.rsplit(',').next().expect("data url");
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .expect("base64");
                let mode = u32::try_from(entry["mode"].as_u64().expect("mode")).expect("mode");
                nodes[index].files.push((
                    entry["path"].as_str().expect("path").to_owned(),
                    bytes,
                    mode,
                ));
            }
            for unit in config["systemd"]["units"].as_array().into_iter().flatten() {
                let name = unit["name"].as_str().expect("unit name");
                // An entry without contents only enables or disables a
                // unit the node's packages ship.
                if let Some(contents) = unit["contents"].as_str() {
                    nodes[index].files.push((
                        format!("/etc/systemd/system/{name}"),
                        contents.as_bytes().to_vec(),
                        0o644,
                    ));
                    nodes[index].units.push(name.to_owned());
                }
            }
        }
    }
    nodes
}

/// The distribution's own units, which the node's units order themselves
/// after and are wanted by (`network-online.target`, `multi-user.target`).
fn distribution_units() -> &'static Path {
    [
        Path::new("/usr/lib/systemd/system"),
        Path::new("/lib/systemd/system"),
    ]
    .into_iter()
    .find(|dir| dir.join("multi-user.target").exists())
    .expect("systemd is installed but its units are not in /usr/lib/systemd/system")
}

/// The programs a unit runs: the first word of each `Exec*=` line, without
/// its prefixes (systemd.service(5), "Command lines": `@`, `-`, `:`, `+`,
/// `!`).
fn executables(unit: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|line| line.strip_prefix("Exec"))
        .filter_map(|line| line.split_once('=').map(|(_, command)| command))
        .filter_map(|command| command.split_whitespace().next())
        .map(|word| {
            word.trim_start_matches(['@', '-', ':', '+', '!'])
                .to_owned()
        })
        .collect()
}

/// Writes a node's file system under `root`, as systemd's `--root` reads
/// it: the set's files with their modes, the distribution's units, and the
/// programs the units run that come from the node's packages (nvme-cli's
/// `nvme`), copied from this machine, which has them installed. A program
/// neither the set nor this machine has is reported; `false` when it is not
/// installed here, outside CI, and the node is skipped.
fn lay_out(root: &Path, node: &NodeFiles) -> Result<bool, String> {
    use std::os::unix::fs::PermissionsExt;
    let units = root.join("usr/lib/systemd");
    std::fs::create_dir_all(&units).map_err(|e| e.to_string())?;
    let copied = run(Command::new("cp")
        .arg("-a")
        .arg(distribution_units())
        .arg(&units));
    if !copied.status.success() {
        return Err(text(&copied));
    }
    for (path, bytes, mode) in &node.files {
        let target = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().expect("parent")).map_err(|e| e.to_string())?;
        std::fs::write(&target, bytes).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(*mode))
            .map_err(|e| e.to_string())?;
    }
    for (path, bytes, _) in &node.files {
        if !path.starts_with("/etc/systemd/system/") {
            continue;
        }
        for program in executables(&String::from_utf8_lossy(bytes)) {
            let inside = root.join(program.trim_start_matches('/'));
            if inside.exists() {
                continue;
            }
            let host = Path::new(&program);
            if !host.is_file() {
                let name = host
                    .file_name()
                    .map_or(program.clone(), |n| n.to_string_lossy().into_owned());
                // Like a consumer: the package that has it is one .ci/run installs.
                if !installed(&name) {
                    return Ok(false);
                }
                return Err(format!(
                    "{path} runs {program}, which neither the set nor this machine has"
                ));
            }
            std::fs::create_dir_all(inside.parent().expect("parent")).map_err(|e| e.to_string())?;
            std::fs::copy(host, &inside).map_err(|e| e.to_string())?;
        }
    }
    Ok(true)
}

/// What systemd makes of a node's units: `systemd-analyze verify` loads
/// each (syntax, settings, the programs they run, their dependencies) and
/// must succeed; and every unit a path, timer or socket unit triggers must
/// exist. systemd's loader resolves the trigger (the one `Unit=` names, or
/// by default the service of the unit's own name: systemd.path(5),
/// `Unit=`) and reports one that has no file, in its debug log, as
/// "NAME: Failed to load configuration"; `verify` itself exits 0 there
/// (systemd 252), while the real `systemctl start` of the path unit refuses
/// ("unit to trigger not loaded", `src/core/path.c`, `path_start`).
fn verify(root: &Path, node: &NodeFiles) -> Result<(), String> {
    let output = run(Command::new("systemd-analyze")
        .env("SYSTEMD_LOG_LEVEL", "debug")
        .args(["verify", "--man=no"])
        .arg(format!("--root={}", root.display()))
        .args(&node.units));
    let log = text(&output);
    if !output.status.success() {
        let errors: Vec<&str> = log
            .lines()
            .filter(|line| !line.starts_with(['\t', ' ']))
            .filter(|line| node.units.iter().any(|unit| line.contains(unit.as_str())))
            .collect();
        return Err(format!(
            "systemd-analyze verify failed:\n{}",
            errors.join("\n")
        ));
    }
    let missing: BTreeSet<&str> = log
        .lines()
        .filter_map(|line| {
            line.strip_suffix(": Failed to load configuration: No such file or directory")
        })
        .collect();
    let mut unit = "";
    let mut problems = Vec::new();
    for line in log.lines() {
        let line = line.trim();
        if let Some(name) = line
            .strip_prefix("-> Unit ")
            .and_then(|n| n.strip_suffix(':'))
        {
            unit = name;
        } else if let Some(targets) = line.strip_prefix("Triggers: ") {
            let target = targets.split_whitespace().next().unwrap_or_default();
            if node.units.iter().any(|u| u == unit) && missing.contains(target) {
                problems.push(format!("{unit} triggers {target}, which does not exist"));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// systemd's judgement of a node's units; `Ok(false)` when a program they
/// run is not installed here (outside CI) and they were not judged.
fn systemd_judges(node: &NodeFiles) -> Result<bool, String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    if lay_out(root.path(), node)? {
        verify(root.path(), node).map(|()| true)
    } else {
        Ok(false)
    }
}

/// Issue #25, defects 1 and 2, and every unit: systemd loads the units of
/// every node of every set, each path unit starts a unit that exists, and
/// the NVMe-oF connection is made by a unit that waits for the driver.
#[test]
fn systemd_loads_every_unit_and_every_trigger_exists() {
    if !installed("systemd-analyze") {
        return;
    }
    let mut verified = 0;
    for (what, platform, set) in sets() {
        for node in node_files(&what, platform, &set) {
            if node.units.is_empty() {
                continue;
            }
            if systemd_judges(&node).unwrap_or_else(|err| panic!("{}: {err}", node.what)) {
                verified += node.units.len();
            }
        }
    }
    assert!(
        verified >= 20 || std::env::var("CI").as_deref() != Ok("true"),
        "only {verified} units verified"
    );
}

/// A mount and the path unit that starts it, as the plan renders them.
fn good_node() -> NodeFiles {
    NodeFiles {
        what: "a path unit that names its mount".to_owned(),
        files: vec![
            (
                r"/etc/systemd/system/mnt-ai\x2ddata.mount".to_owned(),
                b"[Mount]\nWhat=10.10.0.10:/export\nWhere=/mnt/ai-data\nType=nfs\n".to_vec(),
                0o644,
            ),
            (
                r"/etc/systemd/system/mnt-ai\x2ddata.path".to_owned(),
                b"[Path]\nPathExists=/run/mellanox/drivers/.driver-ready\nUnit=mnt-ai\\x2ddata.mount\n\n[Install]\nWantedBy=multi-user.target\n".to_vec(),
                0o644,
            ),
        ],
        units: vec![
            r"mnt-ai\x2ddata.mount".to_owned(),
            r"mnt-ai\x2ddata.path".to_owned(),
        ],
    }
}

/// The harness itself: a path unit without `Unit=` beside a mount of the
/// same name fails, a service whose program is not executable fails, and
/// the same mount with a path unit that names it passes.
#[test]
fn systemd_refuses_a_path_unit_whose_service_does_not_exist() {
    if !installed("systemd-analyze") {
        return;
    }
    let node = NodeFiles {
        what: "a path unit without Unit=".to_owned(),
        files: vec![
            (
                r"/etc/systemd/system/mnt-ai\x2ddata.mount".to_owned(),
                b"[Mount]\nWhat=10.10.0.10:/export\nWhere=/mnt/ai-data\nType=nfs\n".to_vec(),
                0o644,
            ),
            (
                r"/etc/systemd/system/mnt-ai\x2ddata.path".to_owned(),
                b"[Path]\nPathExists=/run/mellanox/drivers/.driver-ready\n\n[Install]\nWantedBy=multi-user.target\n".to_vec(),
                0o644,
            ),
        ],
        units: vec![
            r"mnt-ai\x2ddata.mount".to_owned(),
            r"mnt-ai\x2ddata.path".to_owned(),
        ],
    };
    let err =
        systemd_judges(&node).expect_err("the path unit starts a service that does not exist");
    assert!(err.contains(r"triggers mnt-ai\x2ddata.service"), "{err}");
    let broken = NodeFiles {
        what: "a service whose program is not executable".to_owned(),
        files: vec![
            (
                "/usr/local/sbin/x.sh".to_owned(),
                b"#!/bin/sh\n".to_vec(),
                0o644,
            ),
            (
                "/etc/systemd/system/x.service".to_owned(),
                b"[Service]\nType=oneshot\nExecStart=/usr/local/sbin/x.sh\n".to_vec(),
                0o644,
            ),
        ],
        units: vec!["x.service".to_owned()],
    };
    assert!(systemd_judges(&broken).is_err());
    assert!(matches!(systemd_judges(&good_node()), Ok(true)));
}

// ----------------------------------------------------------------- shells

/// A script of a set, with the shell that runs it.
struct Script {
    what: String,
    shell: &'static str,
    text: String,
}

/// Every script of a set: the host scripts (the QoS script; the grub
/// snippet, which grub-mkconfig sources with sh), the `sh -c` commands of
/// the fabric tests' containers, and each `sh` block of the README, which
/// a user pastes into bash.
fn scripts(what: &str, platform: Platform, set: &ManifestSet) -> Vec<Script> {
    let mut scripts = Vec::new();
    for node in node_files(what, platform, set) {
        for (path, bytes, _) in &node.files {
            if path.ends_with(".sh") || path.ends_with("grub.d/90-zerohop.cfg") {
                scripts.push(Script {
                    what: format!("{} {path}", node.what),
                    shell: "sh",
                    text: String::from_utf8_lossy(bytes).into_owned(),
                });
            }
        }
    }
    for file in &set.files {
        for object in &file.objects {
            for container in containers(object) {
                let command: Vec<&str> = container["command"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if let ["sh", "-c", script] = command.as_slice() {
                    scripts.push(Script {
                        what: format!("{what} {} {}", file.path, object["metadata"]["name"]),
                        shell: "sh",
                        text: format!("{script}\n"),
                    });
                }
            }
        }
        if file.path == "README.md" {
            for (index, block) in readme_blocks(&file.contents).into_iter().enumerate() {
                scripts.push(Script {
                    what: format!("{what} README.md block {}", index + 1),
                    shell: "bash",
                    text: block,
                });
            }
        }
    }
    scripts
}

/// Every container of a pod, a pod template or an MPIJob's replicas.
fn containers(object: &Value) -> Vec<&Value> {
    let specs = [
        &object["spec"],
        &object["spec"]["template"]["spec"],
        &object["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"],
        &object["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"],
    ];
    specs
        .into_iter()
        .flat_map(|spec| spec["containers"].as_array().into_iter().flatten())
        .collect()
}

/// The fenced `sh` blocks of a Markdown text, with the indentation of a
/// list item's block removed.
fn readme_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut current {
            None if trimmed == "```sh" => current = Some((indent, String::new())),
            None => {}
            Some(_) if trimmed == "```" => {
                if let Some((_, block)) = current.take() {
                    blocks.push(block);
                }
            }
            Some((indent, block)) => {
                block.push_str(line.get(*indent..).unwrap_or(trimmed));
                block.push('\n');
            }
        }
    }
    assert!(current.is_none(), "an unterminated code block");
    blocks
}

/// shellcheck's findings on `script`, read as `shell` reads it, at every
/// severity.
fn shellcheck_lint(shell: &str, script: &str) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new("shellcheck")
        .args(["--norc", "--shell", shell, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("shellcheck starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("shellcheck reads the script");
    child.wait_with_output().expect("shellcheck ends")
}

/// Issue #25, defect 4, and every script: each parses in its shell and in
/// bash (`-n`), and shellcheck finds nothing in it.
#[test]
fn every_script_and_readme_command_passes_the_shells_and_shellcheck() {
    let shellcheck = installed("shellcheck");
    let mut checked = 0;
    let mut failures = Vec::new();
    for (what, platform, set) in sets() {
        for script in scripts(&what, platform, &set) {
            for shell in BTreeSet::from([script.shell, "bash"]) {
                let output = run(Command::new(shell).args(["-n", "-c", &script.text]));
                if !output.status.success() {
                    failures.push(format!(
                        "{} does not parse in {shell}: {}\n{}",
                        script.what,
                        text(&output),
                        script.text
                    ));
                }
            }
            if shellcheck {
                let output = shellcheck_lint(script.shell, &script.text);
                if !output.status.success() {
                    failures.push(format!(
                        "shellcheck on {}:\n{}\n{}",
                        script.what,
                        text(&output),
                        script.text
                    ));
                }
            }
            checked += 1;
        }
    }
    // One failure of each kind: the same script recurs across rails and sets.
    failures.sort_by_key(|f| f.split_once('\n').map(|(_, rest)| rest.to_owned()));
    failures.dedup_by_key(|f| f.split_once('\n').map(|(_, rest)| rest.to_owned()));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 40, "only {checked} scripts checked");
}

/// Issue #25, defect 4: the README's host step, pasted into bash, enables
/// exactly the units the set places in `/etc/systemd/system`: every
/// program it calls is a stub that writes down its arguments, so the
/// test sees the words bash hands it (an unquoted `mnt-ai\x2ddata.path`
/// reaches systemctl as `mnt-aix2ddata.path`).
#[test]
fn the_pasted_host_step_enables_the_rendered_units() {
    let mut enabled_somewhere = false;
    for (what, platform, set) in sets() {
        if platform != Platform::Kubernetes {
            continue;
        }
        let readme = set
            .files
            .iter()
            .find(|f| f.path == "README.md")
            .expect("README.md");
        let blocks = readme_blocks(&readme.contents);
        let host = blocks
            .iter()
            .find(|block| block.contains("systemctl daemon-reload"))
            .unwrap_or_else(|| panic!("{what}: the host step is not a command block"));
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("calls");
        // Each command the block runs on a node is a shell function that
        // records its words: functions are found before `PATH`, and no
        // executable is written while other tests of this binary fork (an
        // exec of a file still open for writing in a forked child fails
        // with ETXTBSY).
        let stubs: String = ["update-grub", "sysctl", "systemctl", "rm", "reboot"]
            .iter()
            .map(|program| {
                format!("{program}() {{ for a in {program} \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$CALLS\"; echo -- >> \"$CALLS\"; }}\n")
            })
            .collect();
        let output = run(Command::new("bash")
            .args(["-e", "-c", &format!("{stubs}{host}")])
            .env("PATH", "/usr/bin:/bin")
            .env("CALLS", &log));
        assert!(output.status.success(), "{what}: {}", text(&output));
        let calls = std::fs::read_to_string(&log).expect("calls");
        let enable: Vec<&str> = calls
            .split("--\n")
            .map(|call| call.lines().collect::<Vec<_>>())
            .find(|words| words.get(..2) == Some(&["systemctl", "enable"][..]))
            .map(|words| words[2..].to_vec())
            .unwrap_or_default();
        let rendered: BTreeSet<String> = set
            .files
            .iter()
            .filter_map(|f| {
                f.path
                    .split_once("/etc/systemd/system/")
                    .map(|(_, name)| name.to_owned())
            })
            .collect();
        for unit in &enable {
            assert!(
                rendered.contains(*unit),
                "{what}: systemctl enable got {unit:?}, which is not a rendered unit ({rendered:?})"
            );
        }
        // Every unit with an [Install] section is enabled: the path units
        // and the QoS service; the mount and the services they start are not.
        for unit in &rendered {
            let contents = &set
                .files
                .iter()
                .find(|f| f.path.ends_with(&format!("/etc/systemd/system/{unit}")))
                .expect("unit")
                .contents;
            assert_eq!(
                contents.contains("[Install]"),
                enable.contains(&unit.as_str()),
                "{what}: {unit} is enabled iff it has an [Install] section"
            );
        }
        enabled_somewhere |= enable.iter().any(|u| u.contains(r"\x2d"));
        assert!(calls.contains("reboot\n"), "{what}: the step reboots");
    }
    assert!(
        enabled_somewhere,
        "no set enables a unit whose name is escaped"
    );
}

// -------------------------------------------------------------- kustomize

/// Every set's `kustomization.yaml`, as `kubectl kustomize` builds it from
/// the written directory: it loads every listed file, refuses two objects
/// of one kind, namespace and name, and prints every object.
#[test]
fn kubectl_kustomize_builds_every_set() {
    if !installed("kubectl") {
        return;
    }
    for (what, _, set) in sets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("plan");
        write_set(&set, &out).unwrap_or_else(|err| panic!("{what}: {err}"));
        let output = run(Command::new("kubectl").arg("kustomize").arg(&out));
        assert!(output.status.success(), "{what}: {}", text(&output));
        let built = String::from_utf8_lossy(&output.stdout);
        let documents = built
            .split("\n---\n")
            .filter(|doc| doc.contains("kind:"))
            .count();
        let expected: usize = set
            .files
            .iter()
            .filter(|f| {
                f.path.ends_with(".yaml") && !f.path.contains('/') && f.path != "kustomization.yaml"
            })
            .map(|f| f.objects.len())
            .sum();
        assert_eq!(
            documents, expected,
            "{what}: kustomize printed another number of objects"
        );
    }
}
