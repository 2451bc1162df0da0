//! Hostile intent files and output directories, tried as an attacker
//! would: a value that would run a command in a root script, a unit line
//! smuggled in through a mount point, a FIFO as the intent, a user's
//! directory as the output. Each is refused where it is found, or made
//! harmless where it is written, and never deletes anything.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine;
use zerohop_plan::{
    Foreign, InputError, ManifestFile, ManifestSet, NfsMount, Plan, Platform, WriteError, load,
    read_intent, render, write_set,
};

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The example with `from` replaced by `to`, which must occur.
fn edited(name: &str, from: &str, to: &str) -> String {
    let text = example(name);
    assert!(text.contains(from), "{from:?} not in {name}");
    text.replacen(from, to, 1)
}

/// 1-based line and column (in characters) of the first `needle` in `text`.
fn position(text: &str, needle: &str) -> (u64, u64) {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in the text"));
    let before = &text[..at];
    let line = before.matches('\n').count() as u64 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..at].chars().count() as u64 + 1)
}

/// Asserts that `text` is refused with a diagnostic at the scalar
/// `written` (as it is written in the text, quotes included) whose message
/// starts with `field`.
fn refused_at(text: &str, written: &str, field: &str) {
    let err = match load("hostile.yaml", text, None) {
        Ok(_) => panic!("accepted {written}"),
        Err(err) => err,
    };
    let (line, column) = position(text, written);
    assert!(
        err.diagnostics
            .iter()
            .any(|d| d.line == line && d.column == column && d.message.starts_with(field)),
        "no diagnostic for {field} at {line}:{column}:\n{err}"
    );
    // Diagnostics quote the value, so nothing in them reaches a terminal raw.
    assert!(
        !err.to_string().contains(['\u{1b}', '\u{7}', '\r']),
        "{err}"
    );
}

#[test]
fn a_command_substitution_in_a_pf_is_refused_at_the_pf() {
    let written = "'x$(touch${IFS}/tmp/p)'";
    let text = edited(
        "cluster.yaml",
        "{pf: ens1f0np0,",
        &format!("{{pf: {written},"),
    );
    refused_at(&text, written, "pf");
    // Short enough for IFNAMSIZ, still not a name the kernel gives.
    let written = "'a$(id)/b'";
    let text = edited(
        "cluster.yaml",
        "{pf: ens1f0np0,",
        &format!("{{pf: {written},"),
    );
    refused_at(&text, written, "pf");
}

#[test]
fn an_rdma_device_with_white_space_or_a_slash_is_refused_at_its_field() {
    for written in ["'mlx5_0 $(reboot)'", "'mlx5/0'", "\"mlx5_0\\n\""] {
        let text = edited(
            "cluster.yaml",
            "rdmaDevice: mlx5_0,",
            &format!("rdmaDevice: {written},"),
        );
        refused_at(&text, written, "rdmaDevice");
    }
}

#[test]
fn a_mount_point_with_a_control_character_or_dot_dot_is_refused_at_its_field() {
    for written in [
        "\"/mnt/data\\n$(touch /tmp/p)\"",
        "\"/mnt/\\e]0;owned\\a\"",
        "/mnt/../etc",
        "mnt/data",
        "'/'",
    ] {
        let text = edited(
            "cluster.yaml",
            "mountPoint: /mnt/ai-data",
            &format!("mountPoint: {written}"),
        );
        refused_at(&text, written, "mount point");
    }
}

#[test]
fn nfs_servers_exports_and_nvme_targets_follow_their_grammar() {
    for (from, written, field) in [
        ("server: 10.10.0.10", "'10.10.0.10;reboot'", "server"),
        ("server: 10.10.0.10", "'nfs server'", "server"),
        ("export: /export/ai-data", "export/ai-data", "export"),
        ("export: /export/ai-data", "\"/export/a\\nb\"", "export"),
        ("export: /export/ai-data", "'/export/a\\'", "export"),
    ] {
        let text = edited(
            "cluster.yaml",
            from,
            &format!("{}: {written}", &from[..from.find(':').unwrap_or(0)]),
        );
        refused_at(&text, written, field);
    }
    // NVMe-oF takes IP addresses only: discovery.conf lines are split
    // into arguments by nvme-cli.
    let text = edited(
        "infiniband.yaml",
        "  workload:",
        "  storage:\n    nvmeOf:\n      targets:\n      - address: '10.0.0.1 --hostnqn=x'\n  workload:",
    );
    refused_at(&text, "'10.0.0.1 --hostnqn=x'", "nvme-of target");
}

#[test]
fn node_selector_labels_follow_the_kubernetes_grammar() {
    const SELECTOR: &str = "feature.node.kubernetes.io/pci-10de.present: \"true\"";
    let text = edited("cluster.yaml", SELECTOR, "'bad key': \"true\"");
    refused_at(&text, "'bad key'", "label key");
    let text = edited(
        "cluster.yaml",
        SELECTOR,
        "feature.node.kubernetes.io/pci-10de.present: '$(reboot)'",
    );
    // The value's problem is reported at its key, the start of the entry.
    refused_at(
        &text,
        "feature.node.kubernetes.io/pci-10de.present",
        "label value",
    );
}

/// GPU Feature Discovery's labels appear only after the GPU driver, long
/// after the SR-IOV objects that select the pool's nodes (issue #14,
/// defect 9): a pool selected by one is refused.
#[test]
fn a_pool_selected_by_a_gpu_feature_discovery_label_is_refused() {
    let text = edited(
        "cluster.yaml",
        "feature.node.kubernetes.io/pci-10de.present: \"true\"",
        "nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3",
    );
    refused_at(
        &text,
        "nvidia.com/gpu.product",
        "label \"nvidia.com/gpu.product\" is set by gpu feature discovery",
    );
}

#[test]
fn a_pool_name_cannot_leave_the_host_directory() {
    for written in ["../../etc", "a/b", "'..'"] {
        let text = edited(
            "cluster.yaml",
            "- name: h100",
            &format!("- name: {written}"),
        );
        refused_at(&text, written, "pool name");
    }
}

#[test]
fn namespaces_names_versions_and_images_follow_their_grammar() {
    let text = edited(
        "cluster.yaml",
        "  nodePools:",
        "  operators:\n    gpuOperatorNamespace: 'gpu operator'\n    networkOperatorVersion: 'v1;reboot'\n    docaDriverVersion: '1$(reboot)'\n  nodePools:",
    );
    refused_at(&text, "'gpu operator'", "namespace");
    refused_at(&text, "'v1;reboot'", "operator version");
    refused_at(&text, "'1$(reboot)'", "docaDriverVersion");
    let text = edited(
        "cluster.yaml",
        "    image: nvcr.io/nvidia/pytorch:25.08-py3",
        "    image: 'nvcr.io/x:1 --privileged'\n    ncclSocketIfname: 'eth0,$(id)/x'",
    );
    refused_at(&text, "'nvcr.io/x:1 --privileged'", "image");
    refused_at(&text, "'eth0,$(id)/x'", "ncclSocketIfname");
    let text = edited("cluster.yaml", "memory: 512Gi", "memory: '512Gi; rm -rf /'");
    refused_at(&text, "'512Gi; rm -rf /'", "size");
}

/// A plan of the example, mutated after validation to carry `edit`: what
/// the renderers must make harmless on their own.
fn hostile_plan(name: &str, platform: Platform, edit: impl FnOnce(&mut Plan)) -> ManifestSet {
    let mut plan = load(name, &example(name), Some(platform)).unwrap_or_else(|e| panic!("{e}"));
    edit(&mut plan);
    render(&plan)
}

/// Every script of a set, by path: `.sh` files and the grub snippet, and
/// the scripts inside OpenShift MachineConfigs (base64 data URLs).
fn scripts(set: &ManifestSet) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for file in &set.files {
        if file.path.ends_with(".sh") || file.path.ends_with("90-zerohop.cfg") {
            found.push((file.path.clone(), file.contents.clone()));
        }
        for object in &file.objects {
            let files = object["spec"]["config"]["storage"]["files"].as_array();
            for entry in files.into_iter().flatten() {
                let path = entry["path"].as_str().unwrap_or_default();
                let source = entry["contents"]["source"].as_str().unwrap_or_default();
                if path.ends_with(".sh") {
                    let encoded = source.rsplit(',').next().unwrap_or_default();
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .expect("base64");
                    found.push((path.to_owned(), String::from_utf8(bytes).expect("utf-8")));
                }
            }
        }
    }
    found
}

/// Runs `script` with `shell -c`, `None` when the shell is not installed.
fn run_shell(shell: &str, script: &str) -> Option<std::process::Output> {
    Command::new(shell).arg("-c").arg(script).output().ok()
}

const HOSTILE_PF: &str = "x$(touch${IFS}CANARY)";
const HOSTILE_DEVICE: &str = "mlx5_0;touch CANARY `touch CANARY` 'q\"";

#[test]
fn the_qos_script_reads_hostile_names_back_as_single_words_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("temp");
    let canary = dir.path().join("canary");
    let canary_text = canary.to_str().expect("utf-8 temp path");
    let pf = HOSTILE_PF.replace("CANARY", canary_text);
    let device = HOSTILE_DEVICE.replace("CANARY", canary_text);
    for platform in [Platform::Kubernetes, Platform::Openshift] {
        let set = hostile_plan("cluster.yaml", platform, |plan| {
            plan.pools[0].nics[0].pf = pf.clone();
            plan.pools[0].nics[0].rdma_device = device.clone();
        });
        let found = scripts(&set);
        let (_, script) = found
            .iter()
            .find(|(path, _)| path.ends_with("zerohop-roce-qos.sh"))
            .expect("qos script rendered");
        // The shell is the oracle: with `configure` printing its
        // arguments, the calls must give back exactly the names.
        let calls: String = script
            .lines()
            .filter(|l| l.starts_with("configure "))
            .map(|l| format!("{l}\n"))
            .collect();
        for shell in ["sh", "bash"] {
            let Some(output) = run_shell(
                shell,
                &format!("configure() {{ printf '%s\\n' \"$1\" \"$2\"; }}\n{calls}"),
            ) else {
                eprintln!("skipped: {shell} is not installed");
                continue;
            };
            assert!(output.status.success(), "{shell}: {output:?}");
            let words = String::from_utf8(output.stdout).expect("utf-8");
            let words: Vec<&str> = words.lines().collect();
            assert!(
                words
                    .chunks(2)
                    .any(|pair| pair == [pf.as_str(), device.as_str()]),
                "{shell} read {words:?}"
            );
            assert!(!canary.exists(), "{shell} ran a command from a name");
        }
    }
}

#[test]
fn every_rendered_script_parses_with_sh_and_bash() {
    let mut sets = Vec::new();
    for name in ["cluster.yaml", "infiniband.yaml"] {
        for platform in [Platform::Kubernetes, Platform::Openshift] {
            sets.push(hostile_plan(name, platform, |_| {}));
            sets.push(hostile_plan(name, platform, |plan| {
                plan.pools[0].nics[0].pf = HOSTILE_PF.to_owned();
                plan.pools[0].nics[0].rdma_device = HOSTILE_DEVICE.to_owned();
                plan.pools[0].isolated_cpus = Some("1\"; reboot; \"".to_owned());
            }));
        }
    }
    let mut checked = 0;
    for set in &sets {
        for (path, script) in scripts(set) {
            for shell in ["sh", "bash"] {
                let Ok(output) = Command::new(shell)
                    .arg("-n")
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .and_then(|mut child| {
                        use std::io::Write;
                        child
                            .stdin
                            .take()
                            .expect("stdin")
                            .write_all(script.as_bytes())?;
                        child.wait_with_output()
                    })
                else {
                    eprintln!("skipped: {shell} is not installed");
                    continue;
                };
                assert!(
                    output.status.success(),
                    "{shell} -n {path}: {}\n{script}",
                    String::from_utf8_lossy(&output.stderr)
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no script was checked");
}

#[test]
fn a_grub_snippet_keeps_hostile_cpu_lists_inside_one_quoted_word() {
    let dir = tempfile::tempdir().expect("temp");
    let canary = dir.path().join("canary");
    let cpus = format!("1\"; touch {} #", canary.display());
    let set = hostile_plan("cluster.yaml", Platform::Kubernetes, |plan| {
        plan.pools[0].isolated_cpus = Some(cpus.clone());
    });
    let (_, grub) = scripts(&set)
        .into_iter()
        .find(|(path, _)| path.ends_with("90-zerohop.cfg"))
        .expect("grub snippet");
    let Some(output) = run_shell(
        "sh",
        &format!("GRUB_CMDLINE_LINUX=quiet\n{grub}printf '%s' \"$GRUB_CMDLINE_LINUX\""),
    ) else {
        eprintln!("skipped: sh is not installed");
        return;
    };
    let value = String::from_utf8(output.stdout).expect("utf-8");
    assert!(
        value.starts_with("quiet intel_iommu=on iommu=pt "),
        "{value}"
    );
    assert!(value.contains(&format!("nohz_full={cpus}")), "{value}");
    assert!(!canary.exists());
}

#[test]
fn mount_units_keep_one_setting_per_line_and_expand_no_specifier() {
    for platform in [Platform::Kubernetes, Platform::Openshift] {
        let set = hostile_plan("cluster.yaml", platform, |plan| {
            let nfs = plan.nfs.as_mut().expect("nfs in the example");
            nfs.via = NfsMount::Host("/mnt/100%h\nExecStartPre=/bin/sh -c reboot\\".to_owned());
            nfs.export = "/export/%n".to_owned();
        });
        let mut units: Vec<String> = set
            .files
            .iter()
            .filter(|f| f.path.ends_with(".mount") || f.path.ends_with(".path"))
            .map(|f| f.contents.clone())
            .collect();
        for file in &set.files {
            for object in &file.objects {
                let listed = object["spec"]["config"]["systemd"]["units"].as_array();
                for unit in listed.into_iter().flatten() {
                    let name = unit["name"].as_str().unwrap_or_default();
                    if name.ends_with(".mount")
                        || (name.ends_with(".path") && name != "zerohop-roce-qos.path")
                    {
                        units.push(unit["contents"].as_str().unwrap_or_default().to_owned());
                    }
                }
            }
        }
        let units: Vec<String> = units
            .into_iter()
            .filter(|u| !u.contains("RoCE QoS"))
            .collect();
        assert_eq!(units.len(), 2, "{platform:?}: a .mount and its .path");
        for unit in &units {
            for line in unit.lines() {
                let known = line.is_empty()
                    || line.starts_with('[')
                    || [
                        "Description=",
                        "Wants=",
                        "After=",
                        "What=",
                        "Where=",
                        "Type=",
                        "Options=",
                        "TimeoutSec=",
                        "PathExists=",
                        "Unit=",
                        "WantedBy=",
                    ]
                    .iter()
                    .any(|key| line.starts_with(key));
                assert!(known, "{platform:?}: smuggled line {line:?} in\n{unit}");
                assert!(
                    !line.ends_with('\\'),
                    "{platform:?}: continued line {line:?}"
                );
                // Every % is doubled: no specifier is expanded.
                assert!(
                    !line.replace("%%", "").contains('%'),
                    "{platform:?}: {line:?}"
                );
            }
        }
        assert!(
            units[0].contains("What=10.10.0.10:/export/%%n\n"),
            "{}",
            units[0]
        );
    }
}

#[test]
fn readme_checks_pass_a_hostile_mount_point_as_one_word() {
    let dir = tempfile::tempdir().expect("temp");
    let canary = dir.path().join("canary");
    let seen = dir.path().join("seen");
    let point = format!("/mnt/data;$(touch {0}) `touch {0}`'\"", canary.display());
    let set = hostile_plan("cluster.yaml", Platform::Openshift, |plan| {
        plan.nfs.as_mut().expect("nfs").via = NfsMount::Host(point.clone());
    });
    let readme = &set
        .files
        .iter()
        .find(|f| f.path == "README.md")
        .expect("readme")
        .contents;
    let check = readme
        .lines()
        .find(|l| l.starts_with("oc debug node/") && l.contains("-- chroot /host sh -c"))
        .expect("mount check in the readme");
    // The user sets NODE to a node's name first.
    let check = format!("NODE=gpu-1\n{check}");
    // `oc` prints its last argument, the command run on the node, which is
    // then run with `ls` recording what it was given.
    let Some(outer) = run_shell(
        "sh",
        &format!("oc() {{ for word; do last=$word; done; printf '%s\\n' \"$last\"; }}\n{check}"),
    ) else {
        eprintln!("skipped: sh is not installed");
        return;
    };
    let on_node = String::from_utf8(outer.stdout).expect("utf-8");
    let script = format!(
        "ls() {{ printf '%s' \"$1\" > '{}'; }}\nnfsstat() {{ :; }}\ngrep() {{ :; }}\n{on_node}",
        seen.display()
    );
    let inner = run_shell("sh", &script).expect("sh");
    assert!(inner.status.success(), "{inner:?}");
    assert_eq!(fs::read_to_string(&seen).expect("ls ran"), point);
    assert!(
        !canary.exists(),
        "the readme's check ran a command from the mount point"
    );
}

/// Runs `read` on another thread and fails the test if it does not
/// return within five seconds: a hang must fail, not stall the suite.
fn within_deadline<T: Send + 'static>(read: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(read());
    });
    receive
        .recv_timeout(Duration::from_secs(5))
        .expect("the read did not return within 5 s")
}

#[test]
fn a_fifo_as_the_intent_file_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().expect("temp");
    let fifo = dir.path().join("intent.yaml");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let result = within_deadline(move || read_intent(&fifo));
    assert!(
        matches!(result, Err(InputError::NotAFile { kind: "a fifo", .. })),
        "{result:?}"
    );
}

#[test]
fn a_terminal_as_the_intent_file_is_refused_not_waited_on() {
    // A terminal device node made where the test may (`mknod c 4 5`, as
    // root); without that privilege, the pseudo-terminal multiplexer,
    // which is a terminal device every Linux has.
    let dir = tempfile::tempdir().expect("temp");
    let node = dir.path().join("tty5");
    let path = match rustix::fs::mknodat(
        rustix::fs::CWD,
        &node,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(4, 5),
    ) {
        Ok(()) => node,
        Err(_) => {
            eprintln!("mknod is not permitted here: testing /dev/ptmx instead");
            PathBuf::from("/dev/ptmx")
        }
    };
    let result = within_deadline(move || read_intent(&path));
    // Opening may already fail (no such console): that is refused too.
    assert!(
        matches!(
            result,
            Err(InputError::NotAFile {
                kind: "a character device",
                ..
            } | InputError::Io { .. })
        ),
        "{result:?}"
    );
}

#[test]
fn an_endless_device_is_refused_not_read() {
    let result = within_deadline(|| read_intent(Path::new("/dev/zero")));
    assert!(
        matches!(result, Err(InputError::NotAFile { .. })),
        "{result:?}"
    );
}

fn a_set() -> ManifestSet {
    render(&load("cluster.yaml", &example("cluster.yaml"), None).unwrap_or_else(|e| panic!("{e}")))
}

/// Every file under `dir`, relative, with its contents.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).expect("list") {
            let entry = entry.expect("entry");
            let kind = entry.file_type().expect("type");
            let relative = entry
                .path()
                .strip_prefix(dir)
                .expect("inside")
                .to_path_buf();
            if kind.is_dir() {
                stack.push(entry.path());
                out.push((relative, Vec::new()));
            } else if kind.is_symlink() {
                out.push((
                    relative,
                    fs::read_link(entry.path())
                        .expect("link")
                        .into_os_string()
                        .into_encoded_bytes(),
                ));
            } else {
                out.push((relative, fs::read(entry.path()).expect("read")));
            }
        }
    }
    out.sort();
    out
}

fn assert_refused_untouched(dir: &Path, expect: impl Fn(&Foreign) -> bool) -> String {
    let before = snapshot(dir);
    let err = write_set(&a_set(), dir).expect_err("refused");
    match &err {
        WriteError::NotOurs { reason, .. } => assert!(expect(reason), "{reason:?}"),
        other => panic!("{other}"),
    }
    assert_eq!(snapshot(dir), before, "the refused directory was changed");
    let parent = dir.parent().expect("parent");
    let left: Vec<_> = fs::read_dir(parent)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("zerohop"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    err.to_string()
}

#[test]
fn a_kustomize_directory_is_never_taken_for_a_previous_output() {
    let root = tempfile::tempdir().expect("temp");
    let deploy = root.path().join("deploy");
    fs::create_dir_all(deploy.join("overlays/prod")).expect("mkdir");
    for (path, text) in [
        ("README.md", "# deploy\n"),
        ("kustomization.yaml", "resources: [app.yaml]\n"),
        ("app.yaml", "kind: Deployment\n"),
        ("overlays/prod/kustomization.yaml", "resources: [../../]\n"),
    ] {
        fs::write(deploy.join(path), text).expect("write");
    }
    let message = assert_refused_untouched(&deploy, |r| *r == Foreign::NoMarker);
    assert!(
        message.contains("deploy") && message.contains("no .zerohop-plan"),
        "{message}"
    );
}

/// A previous output at `root/plan`.
fn previous_output(root: &Path) -> PathBuf {
    let out = root.join("plan");
    write_set(&a_set(), &out).expect("first write");
    out
}

#[test]
fn a_file_added_to_a_previous_output_is_never_deleted() {
    let root = tempfile::tempdir().expect("temp");
    let out = previous_output(root.path());
    fs::write(out.join("notes.md"), "mine").expect("user file");
    fs::create_dir(out.join("patches")).expect("user dir");
    let message = assert_refused_untouched(
        &out,
        |r| matches!(r, Foreign::Changed { added, modified } if added.contains(&"notes.md".to_owned()) && added.contains(&"patches/".to_owned()) && modified.is_empty()),
    );
    assert!(message.contains("notes.md (added)"), "{message}");
}

#[test]
fn a_file_changed_in_a_previous_output_is_never_overwritten() {
    let root = tempfile::tempdir().expect("temp");
    let out = previous_output(root.path());
    let policy = out.join("20-nic-cluster-policy.yaml");
    let mut text = fs::read_to_string(&policy).expect("read");
    text.push_str("# tuned by hand\n");
    fs::write(&policy, text).expect("edit");
    let message = assert_refused_untouched(
        &out,
        |r| matches!(r, Foreign::Changed { added, modified } if added.is_empty() && modified == &["20-nic-cluster-policy.yaml".to_owned()]),
    );
    assert!(
        message.contains("20-nic-cluster-policy.yaml (changed)"),
        "{message}"
    );
}

#[test]
fn a_link_in_a_previous_output_is_refused_not_followed() {
    let root = tempfile::tempdir().expect("temp");
    let out = previous_output(root.path());
    std::os::unix::fs::symlink("/etc/passwd", out.join("passwd.yaml")).expect("link");
    assert_refused_untouched(
        &out,
        |r| matches!(r, Foreign::Changed { added, .. } if added == &["passwd.yaml".to_owned()]),
    );
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&out, &link).expect("link");
    assert_refused_untouched(&link, |r| *r == Foreign::Link);
}

#[test]
fn a_previous_output_with_files_deleted_or_none_changed_is_replaced() {
    let root = tempfile::tempdir().expect("temp");
    let out = previous_output(root.path());
    write_set(&a_set(), &out).expect("unchanged output replaced");
    fs::remove_file(out.join("README.md")).expect("delete a generated file");
    write_set(&a_set(), &out).expect("output with a deleted file replaced");
    assert!(out.join("README.md").is_file());
    let empty = root.path().join("empty");
    fs::create_dir(&empty).expect("mkdir");
    write_set(&a_set(), &empty).expect("empty directory used");
    let mut names: Vec<_> = fs::read_dir(root.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["empty", "plan"]);
}

#[test]
fn dot_dot_dot_and_the_root_are_not_output_directories() {
    for dir in [".", "..", "/", "plan/.."] {
        assert!(
            matches!(
                write_set(&a_set(), Path::new(dir)),
                Err(WriteError::BadTarget { .. })
            ),
            "{dir}"
        );
    }
}

#[test]
fn a_file_or_device_as_output_is_refused() {
    let root = tempfile::tempdir().expect("temp");
    let file = root.path().join("plan");
    fs::write(&file, "mine").expect("write");
    assert!(matches!(
        write_set(&a_set(), &file),
        Err(WriteError::NotOurs {
            reason: Foreign::NotADirectory,
            ..
        })
    ));
    assert_eq!(fs::read_to_string(&file).expect("kept"), "mine");
    assert!(matches!(
        write_set(&a_set(), Path::new("/dev/full")),
        Err(WriteError::NotOurs {
            reason: Foreign::NotADirectory,
            ..
        })
    ));
}

#[test]
fn a_rendered_path_that_leaves_the_output_is_refused_before_anything_is_written() {
    let root = tempfile::tempdir().expect("temp");
    for path in [
        "../escape.yaml",
        "/etc/escape.yaml",
        "host/../../escape.yaml",
        ".zerohop-plan",
        "",
    ] {
        let set = ManifestSet {
            files: vec![ManifestFile {
                path: path.to_owned(),
                contents: "x".to_owned(),
                objects: Vec::new(),
            }],
        };
        let out = root.path().join("plan");
        assert!(
            matches!(write_set(&set, &out), Err(WriteError::UnsafePath { .. })),
            "{path:?}"
        );
        assert_eq!(
            fs::read_dir(root.path()).expect("list").count(),
            0,
            "{path:?}"
        );
    }
}

#[test]
fn a_marker_of_another_format_is_refused() {
    let root = tempfile::tempdir().expect("temp");
    let out = previous_output(root.path());
    fs::write(
        out.join(".zerohop-plan"),
        "# zerohop plan output\n# format: 99\n",
    )
    .expect("write");
    let message = assert_refused_untouched(&out, |r| *r == Foreign::UnknownMarker);
    assert!(message.contains("delete"), "{message}");
}

#[test]
fn a_directory_too_large_or_deep_to_be_an_output_is_refused_without_walking_it_all() {
    let root = tempfile::tempdir().expect("temp");
    let deep = root.path().join("deep");
    let mut path = deep.clone();
    for _ in 0..40 {
        path.push("d");
    }
    fs::create_dir_all(&path).expect("mkdir");
    assert_refused_untouched(&deep, |r| *r == Foreign::Oversized);
    let wide = root.path().join("wide");
    fs::create_dir(&wide).expect("mkdir");
    for i in 0..10_001 {
        fs::write(wide.join(i.to_string()), "").expect("write");
    }
    assert!(matches!(
        write_set(&a_set(), &wide),
        Err(WriteError::NotOurs {
            reason: Foreign::Oversized,
            ..
        })
    ));
}
