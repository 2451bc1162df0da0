//! Hostile input: what an attacker can put in the manifests of a pull
//! request, or around them, must not hang lint, leak the files of the
//! machine that runs it, control its terminal, or make it use time, memory
//! or output out of proportion to the input.
//!
//! Every test that could hang or run away does its work on a thread and
//! fails when that thread misses its deadline.

use std::fs;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use rustix::fs::{CWD, FileType, Mode, mknodat};
use zerohop_core::Report;
use zerohop_core::render::printable::needs_escape;
use zerohop_core::render::{sarif, snippet};
use zerohop_core::{Finding, Status};
use zerohop_k8s::yaml::Limits;
use zerohop_lint::{
    Batch, CollectError, Input, MAX_HELD_BYTES, NotRead, Options, lint, lint_loaded, texts,
};

/// Runs `work` on its own thread and returns its result, or fails the test
/// when it takes longer than `deadline` (a hang must fail, not stall CI).
fn within<T: Send + 'static>(deadline: Duration, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    let worker = thread::spawn(move || {
        let _ = sender.send(work());
    });
    match receiver.recv_timeout(deadline) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => panic!("the work ended without a result"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("did not finish within {deadline:?}"),
    }
}

fn batch() -> Batch {
    Batch::new(Limits::default(), MAX_HELD_BYTES)
}

/// Lints what `paths` name, as the command line does.
fn lint_paths(paths: &[&Path]) -> Result<(Batch, zerohop_lint::Outcome), CollectError> {
    let mut batch = batch();
    for path in paths {
        batch.add_path(path)?;
    }
    let outcome = lint_loaded(batch.loaded(), &Options::default());
    Ok((batch, outcome))
}

/// The human report of `outcome`, as `zerohop lint` writes it (with its
/// styles).
fn human(batch: &Batch, findings: Vec<Finding>) -> String {
    let report = Report::new("lint", "x", findings);
    let mut out = Vec::new();
    snippet::write(&report, &mut texts(batch.loaded()), &mut out).expect("write");
    String::from_utf8(out).expect("utf-8")
}

/// `text` without the renderer's own styles (`ESC [ digits ; … m`).
fn without_styles(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[end..].starts_with('m') {
            rest = &after[end + 1..];
        } else {
            out.push_str("\u{1b}[");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: yes\n";

fn mkfifo(path: &Path) {
    mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).expect("mkfifo");
}

fn ids(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.id.as_str()).collect()
}

#[test]
fn a_fifo_in_a_linted_directory_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    mkfifo(&dir.path().join("a-pipe.yaml"));
    fs::write(dir.path().join("b.yaml"), CONFIGMAP).expect("write");
    let path = dir.path().to_owned();
    let (_, outcome) = within(Duration::from_secs(20), move || lint_paths(&[&path])).expect("lint");
    assert_eq!(outcome.invalid_inputs, 1);
    let refused = &outcome.findings[0];
    assert_eq!(refused.id, "ZL001");
    assert!(refused.message.contains("fifo"), "{}", refused.message);
    let fix = &refused.remediation.as_ref().expect("fix").summary;
    assert!(fix.contains("zerohop lint -"), "{fix}");
    // The other file is still linted.
    assert!(
        ids(&outcome.findings).contains(&"ZL003"),
        "{:?}",
        outcome.findings
    );
}

#[test]
fn a_fifo_named_on_the_command_line_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    // A symlink to it, as a repository could carry one.
    let link = dir.path().join("link.yaml");
    std::os::unix::fs::symlink(&fifo, &link).expect("symlink");
    let (_, outcome) =
        within(Duration::from_secs(20), move || lint_paths(&[&fifo, &link])).expect("lint");
    assert_eq!(outcome.invalid_inputs, 2);
    assert!(
        outcome
            .findings
            .iter()
            .all(|f| f.id == "ZL001" && f.message.contains("fifo")),
        "{:?}",
        outcome.findings
    );
}

#[test]
fn devices_and_sockets_are_refused_without_being_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("socket.yaml");
    let _listener = UnixListener::bind(&socket).expect("bind");
    // /dev/zero would feed a reader forever and /dev/null is a character
    // device every system has; neither needs privileges to name.
    let paths = [
        Path::new("/dev/zero").to_owned(),
        Path::new("/dev/null").to_owned(),
        socket,
    ];
    let outcome = within(Duration::from_secs(20), move || {
        let paths: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
        lint_paths(&paths).map(|(_, outcome)| outcome)
    })
    .expect("lint");
    let messages: Vec<&str> = outcome
        .findings
        .iter()
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "not a regular file but a character device; not read",
            "not a regular file but a character device; not read",
            "not a regular file but a socket; not read",
        ]
    );
    assert_eq!(outcome.invalid_inputs, 3);
}

#[test]
fn a_symlink_out_of_a_linted_directory_is_skipped_and_its_target_never_read() {
    let outside = tempfile::tempdir().expect("tempdir");
    let secret = outside.path().join("secret.yaml");
    fs::write(
        &secret,
        "TOKEN=hunter2-secret-value\napiVersion: v1\nkind: [unclosed\n",
    )
    .expect("write");
    let tree = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(&secret, tree.path().join("env.yaml")).expect("symlink");
    std::os::unix::fs::symlink("/proc/self/environ", tree.path().join("environ.yaml"))
        .expect("symlink");
    std::os::unix::fs::symlink("../nowhere", tree.path().join("dangling.yaml")).expect("symlink");
    fs::write(tree.path().join("ok.yaml"), CONFIGMAP).expect("write");

    let (batch, outcome) = lint_paths(&[tree.path()]).expect("lint");
    assert_eq!(outcome.invalid_inputs, 0, "{:?}", outcome.findings);
    let skipped: Vec<(&str, Status)> = outcome
        .findings
        .iter()
        .filter(|f| f.id == "ZL007")
        .map(|f| (f.message.as_str(), f.status))
        .collect();
    assert_eq!(skipped.len(), 3, "{:?}", outcome.findings);
    assert!(skipped.iter().all(|(_, status)| *status == Status::Info));
    assert!(
        skipped
            .iter()
            .any(|(m, _)| m.contains("`/proc/self/environ` leads outside the linted directory"))
    );
    let report = human(&batch, outcome.findings);
    assert!(!report.contains("hunter2"), "{report}");
    assert!(!report.contains("PATH="), "{report}");
}

#[test]
fn a_symlink_inside_a_linted_directory_or_named_on_the_command_line_is_followed() {
    let tree = tempfile::tempdir().expect("tempdir");
    fs::create_dir(tree.path().join("base")).expect("mkdir");
    fs::write(tree.path().join("base/settings.yaml"), CONFIGMAP).expect("write");
    std::os::unix::fs::symlink("base/settings.yaml", tree.path().join("link.yaml"))
        .expect("symlink");
    // A symlinked directory is not followed, even inside: no loop, no file
    // read twice.
    std::os::unix::fs::symlink(".", tree.path().join("loop.yaml")).expect("symlink");
    let (_, outcome) = lint_paths(&[tree.path()]).expect("lint");
    let files: Vec<&str> = outcome
        .findings
        .iter()
        .filter_map(|f| f.location.as_ref().map(|l| l.file.as_str()))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files[0].ends_with("base/settings.yaml") && files[1].ends_with("link.yaml"));

    // Named on the command line, a link inside its own directory is
    // followed.
    let (_, outcome) = lint_paths(&[&tree.path().join("link.yaml")]).expect("lint");
    assert_eq!(ids(&outcome.findings), ["ZL003"]);
    // One whose target leaves its directory only when asked.
    let outside = tempfile::tempdir().expect("tempdir");
    let named = outside.path().join("named.yaml");
    std::os::unix::fs::symlink(tree.path().join("base/settings.yaml"), &named).expect("symlink");
    let (_, outcome) = lint_paths(&[&named]).expect("lint");
    assert_eq!(ids(&outcome.findings), ["ZL007"]);
    let mut batch = batch().with_follow_symlinks(true);
    batch.add_path(&named).expect("lint");
    let outcome = lint_loaded(batch.loaded(), &Options::default());
    assert_eq!(ids(&outcome.findings), ["ZL003"]);
}

/// `lint dir/*.yaml`, a shell glob in CI, names every link committed in
/// `dir`: one that leaves `dir` is skipped as it is under a linted
/// directory, and what it points to is never read or printed.
#[test]
fn a_symlink_named_by_a_glob_that_leaves_its_directory_is_not_followed() {
    let outside = tempfile::tempdir().expect("tempdir");
    let credentials = outside.path().join("credentials");
    fs::write(
        &credentials,
        "aws_secret_access_key: hunter2-secret-value\nkind: [unclosed\n",
    )
    .expect("write");
    let tree = tempfile::tempdir().expect("tempdir");
    let links = [
        (
            tree.path().join("env.yaml"),
            Path::new("/proc/self/environ"),
        ),
        (tree.path().join("creds.yaml"), credentials.as_path()),
        (tree.path().join("up.yaml"), Path::new("../../etc/hostname")),
    ];
    for (link, target) in &links {
        std::os::unix::fs::symlink(target, link).expect("symlink");
    }
    let ok = tree.path().join("ok.yaml");
    fs::write(&ok, CONFIGMAP).expect("write");
    let mut named: Vec<&Path> = links.iter().map(|(link, _)| link.as_path()).collect();
    named.push(&ok);
    let (batch, outcome) = lint_paths(&named).expect("lint");
    assert_eq!(outcome.invalid_inputs, 0, "{:?}", outcome.findings);
    let skipped: Vec<&Finding> = outcome
        .findings
        .iter()
        .filter(|f| f.id == "ZL007")
        .collect();
    assert_eq!(skipped.len(), 3, "{:?}", outcome.findings);
    assert!(
        skipped
            .iter()
            .any(|f| f.message.contains("`/proc/self/environ` leads outside"))
    );
    let report = human(&batch, outcome.findings);
    assert!(!report.contains("hunter2"), "{report}");
    assert!(!report.contains("PATH="), "{report}");
}

#[test]
fn nothing_to_lint_is_an_error_not_a_clean_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    assert!(matches!(
        lint_paths(&[&missing]),
        Err(CollectError::NotFound(_))
    ));

    let empty = dir.path().join("empty");
    fs::create_dir(&empty).expect("mkdir");
    let error = lint_paths(&[&empty]).expect_err("an error");
    assert!(matches!(
        error,
        CollectError::NoManifests { skipped: 0, .. }
    ));
    assert!(
        error
            .to_string()
            .ends_with("no *.yaml, *.yml or *.json file to lint in this directory")
    );

    let docs = dir.path().join("docs");
    fs::create_dir(&docs).expect("mkdir");
    fs::write(docs.join("README.md"), "# not a manifest\n").expect("write");
    std::os::unix::fs::symlink("/etc/hostname", docs.join("host.yaml")).expect("symlink");
    let error = lint_paths(&[&docs]).expect_err("an error");
    assert!(
        matches!(error, CollectError::NoManifests { skipped: 1, .. }),
        "{error}"
    );
}

#[test]
fn invalid_input_says_what_to_do_for_each_failure() {
    let mut huge = b"apiVersion: v1\nkind: ConfigMap\n".to_vec();
    huge.resize(Limits::default().max_bytes + 1, b' ');
    let cases: Vec<(Input, &str)> = vec![
        (
            Input {
                name: "gone.yaml".into(),
                content: Err(NotRead::Failed("Permission denied (os error 13)".into())),
            },
            "check that the path exists and that this user may read it",
        ),
        (
            Input {
                name: "pipe.yaml".into(),
                content: Err(NotRead::NotRegular(zerohop_input::FileKind::Fifo)),
            },
            "pipe it to `zerohop lint -`",
        ),
        (
            Input {
                name: "huge.yaml".into(),
                content: Ok(huge),
            },
            "split the input into files of at most 32 MiB",
        ),
        (
            Input {
                name: "binary.yaml".into(),
                content: Ok(vec![0x7f, b'E', b'L', b'F', 0xff, 0xfe]),
            },
            "lint text manifests only",
        ),
        (
            Input {
                name: "broken.yaml".into(),
                content: Ok(b"kind: [x\n".to_vec()),
            },
            "so that it is valid YAML",
        ),
    ];
    for (input, wanted) in cases {
        let name = input.name.clone();
        let outcome = lint(&[input], &Options::default());
        let fix = &outcome.findings[0]
            .remediation
            .as_ref()
            .expect("fix")
            .summary;
        assert!(fix.contains(wanted), "{name}: {fix}");
    }
}

#[test]
fn a_run_stops_past_its_memory_budget() {
    let mut batch = Batch::new(Limits::default(), 1024 * 1024);
    let dense = format!(
        "apiVersion: v1\nkind: ConfigMap\nitems: [{}a]\n",
        "a,".repeat(20_000)
    );
    let mut stopped = None;
    for index in 0..100 {
        if let Err(err) = batch.add(Input {
            name: format!("dense-{index}.yaml"),
            content: Ok(dense.clone().into_bytes()),
        }) {
            stopped = Some((index, err));
            break;
        }
    }
    let (index, error) = stopped.expect("the budget stops the batch");
    assert!(index < 10, "{index}");
    assert!(batch.held_bytes() > 1024 * 1024);
    assert!(
        error
            .to_string()
            .contains("the inputs of this run hold more than 1 MiB once parsed"),
        "{error}"
    );
}

#[test]
fn inputs_that_fail_to_load_hold_almost_nothing() {
    // 80 sparse 31 MiB files of zeros once took 2.5 GB.
    let dir = tempfile::tempdir().expect("tempdir");
    for index in 0..8 {
        let file =
            fs::File::create(dir.path().join(format!("zeros-{index}.yaml"))).expect("create");
        file.set_len(31 * 1024 * 1024).expect("set_len");
    }
    let path = dir.path().to_owned();
    let (batch, outcome) =
        within(Duration::from_secs(60), move || lint_paths(&[&path])).expect("lint");
    assert_eq!(outcome.invalid_inputs, 8);
    assert!(batch.held_bytes() < 1024 * 1024, "{}", batch.held_bytes());
}

#[test]
fn terminal_controls_in_manifests_do_not_reach_the_terminal() {
    let name = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let escaped = "apiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: \"\\e]0;pwned\\a\\e[2J\"\nspec: {}\n";
    let raw =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x{name}\ndata: {{a: yes}}\n");
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("escaped.yaml"), escaped).expect("write");
    fs::write(dir.path().join("raw.yaml"), raw).expect("write");
    fs::write(dir.path().join(format!("file{name}.yaml")), CONFIGMAP).expect("write");
    let (batch, outcome) = lint_paths(&[dir.path()]).expect("lint");
    assert!(
        outcome.findings.iter().any(|f| f.message.contains(name)),
        "the name reaches a message: {:?}",
        outcome.findings
    );
    let report = without_styles(&human(&batch, outcome.findings));
    assert!(
        report.lines().all(|line| !line.chars().any(needs_escape)),
        "{report:?}"
    );
    assert!(report.contains(r"\x1b]0;pwned\x07\x1b[2J"), "{report}");
}

#[test]
fn a_long_line_with_thousands_of_findings_prints_a_bounded_report() {
    // 2,000 findings on a single 19 KB line once printed 56 MB, and on a
    // 1 MB line 4 GB.
    let items: Vec<String> = (0..2000).map(|i| format!("k{i}: yes")).collect();
    let padding = "x".repeat(1024 * 1024);
    let text = format!(
        "{{apiVersion: v1, kind: ConfigMap, metadata: {{name: x, annotations: {{pad: {padding}}}}}, data: {{{}}}}}\n",
        items.join(", ")
    );
    let (batch, report) = within(Duration::from_secs(60), move || {
        let mut batch = batch();
        batch
            .add(Input {
                name: "one-line.yaml".into(),
                content: Ok(text.into_bytes()),
            })
            .expect("within budget");
        let outcome = lint_loaded(batch.loaded(), &Options::default());
        // 1,000 listed and one that counts the other 1,000.
        assert_eq!(outcome.findings.len(), 1001);
        let report = human(&batch, outcome.findings);
        (batch, report)
    });
    drop(batch);
    assert!(report.len() < 2 * 1024 * 1024, "{} bytes", report.len());
    assert!(report.lines().all(|line| line.chars().count() < 400));
}

#[test]
fn a_rule_lists_at_most_a_thousand_findings_per_file() {
    let mut text = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n");
    for index in 0..50_000 {
        text.push_str(&format!("  k{index}: yes\n"));
    }
    let outcome = within(Duration::from_secs(120), move || {
        lint(
            &[Input {
                name: "many.yaml".into(),
                content: Ok(text.into_bytes()),
            }],
            &Options::default(),
        )
    });
    let zl003: Vec<&Finding> = outcome
        .findings
        .iter()
        .filter(|f| f.id == "ZL003")
        .collect();
    assert_eq!(zl003.len(), 1001);
    let rest = zl003
        .iter()
        .find(|f| f.message.contains("more findings"))
        .expect("the count of the rest");
    assert_eq!(
        rest.message,
        "49000 more findings of this rule in this file are not listed (at most 1000 are)"
    );
}

#[test]
fn findings_carry_clipped_texts_from_huge_scalars() {
    let name = "n".repeat(512 * 1024);
    let mut text = String::new();
    for index in 0..50 {
        text.push_str(&format!(
            "---\napiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: {name}{index}\nspec: {{}}\n"
        ));
    }
    let outcome = within(Duration::from_secs(120), move || {
        lint(
            &[Input {
                name: "names.yaml".into(),
                content: Ok(text.into_bytes()),
            }],
            &Options::default(),
        )
    });
    let json = serde_json::to_string(&outcome.findings).expect("json");
    // 49 findings naming two 512 KiB names each would be 50 MB.
    assert!(json.len() < 1024 * 1024, "{} bytes", json.len());
    assert!(outcome.findings.iter().any(|f| f.id == "ZL022"));
}

#[test]
fn a_long_value_quoted_by_many_findings_is_not_copied_for_each() {
    // One 8 MiB device plugin config with 200,000 resources, each a finding
    // that quotes the config as evidence: copying it whole for each of the
    // 1,000 listed findings would move 8 GB.
    let resources: Vec<String> = (0..200_000)
        .map(|i| {
            format!(
                "{{\"resourceName\": \"r{i}\", \"padding\": \"{}\"}}",
                "p".repeat(8)
            )
        })
        .collect();
    let text = format!(
        "apiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: nic-cluster-policy\nspec:\n  sriovDevicePlugin:\n    config: '{{\"resourceList\": [{}]}}'\n",
        resources.join(", ")
    );
    assert!(text.len() > 8 * 1024 * 1024);
    let (spent, outcome) = within(Duration::from_secs(120), move || {
        let start = cpu_time();
        let outcome = lint(
            &[Input {
                name: "policy.yaml".into(),
                content: Ok(text.into_bytes()),
            }],
            &Options::default(),
        );
        (cpu_time().saturating_sub(start), outcome)
    });
    let evidence = &outcome
        .findings
        .iter()
        .find(|f| f.id == "ZL034" && !f.evidence.is_empty())
        .expect("ZL034")
        .evidence[0]
        .value;
    assert_eq!(evidence.chars().count(), 1000);
    assert!(spent < Duration::from_secs(30), "{spent:?}");
}

/// The CPU time this thread has used (on a machine shared with other
/// work, wall time would also count the waiting).
fn cpu_time() -> Duration {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(time.tv_sec).unwrap_or(0),
        u32::try_from(time.tv_nsec).unwrap_or(0),
    )
}

/// Builds an input of a given shape with `n` elements.
type Shape = fn(usize) -> String;

/// The CPU time of loading and linting the shape `make` builds with `n`
/// elements.
fn cost(make: Shape, n: usize) -> (Duration, usize) {
    within(Duration::from_secs(300), move || {
        let input = Input {
            name: "shape.yaml".to_owned(),
            content: Ok(make(n).into_bytes()),
        };
        let start = cpu_time();
        let outcome = lint(&[input], &Options::default());
        (cpu_time().saturating_sub(start), outcome.findings.len())
    })
}

fn wide_configmap(n: usize) -> String {
    let mut text = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n");
    for index in 0..n {
        text.push_str(&format!("  k{index}: \"on\"\n  d{}: yes\n", index % 100));
    }
    text
}

fn many_containers(n: usize) -> String {
    let mut text =
        String::from("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n");
    for index in 0..n {
        text.push_str(&format!(
            "  - name: c{index}\n    resources:\n      limits: {{rdma/x: 1, hugepages-1Gi: 1Gi}}\n      requests: {{hugepages-1Gi: 2Gi}}\n"
        ));
    }
    text
}

fn many_resources(n: usize) -> String {
    let mut text = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  - name: c\n    resources:\n      limits:\n",
    );
    for index in 0..n {
        text.push_str(&format!("        hugepages-{index}: 1Gi\n"));
    }
    text.push_str("      requests:\n");
    for index in 0..n {
        text.push_str(&format!("        hugepages-{index}: 2Gi\n"));
    }
    text
}

fn many_advertised(n: usize) -> String {
    let resources: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "{{\"resourceName\": \"r{}\", \"selectors\": {{}}}}",
                i % 1000
            )
        })
        .collect();
    format!(
        "apiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: nic-cluster-policy\nspec:\n  sriovDevicePlugin:\n    config: '{{\"resourceList\": [{}]}}'\n",
        resources.join(", ")
    )
}

fn many_networks(n: usize) -> String {
    let refs: Vec<String> = (0..n).map(|i| format!("net-{i}")).collect();
    let mut text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    k8s.v1.cni.cncf.io/networks: {}\nspec:\n  containers:\n  - name: c\n",
        refs.join(", ")
    );
    for index in 0..n {
        text.push_str(&format!(
            "---\napiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: net-{index}\n  namespace: other\n"
        ));
    }
    text
}

fn many_pools(n: usize) -> String {
    let mut text = String::new();
    for index in 0..n {
        text.push_str(&format!(
            "---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: pool-{index}\nspec:\n  machineConfigSelector:\n    matchLabels:\n      machineconfiguration.openshift.io/role: pool-{index}\n---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: mc-{index}\n  labels:\n    machineconfiguration.openshift.io/role: missing-{index}\n"
        ));
    }
    text
}

fn many_units(n: usize) -> String {
    let mut text = String::from(
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: mc\n  labels:\n    machineconfiguration.openshift.io/role: worker\nspec:\n  config:\n    systemd:\n      units:\n",
    );
    for index in 0..n {
        text.push_str(&format!(
            "      - name: m{index}.mount\n        contents: \"[Mount]\\nWhat=10.0.0.{}:/e\\nType=nfs\\n\"\n      - name: m{index}.path\n        contents: \"[Path]\\nPathExists=/run/x\\n\"\n",
            index % 250
        ));
    }
    text
}

fn many_pods_and_bindings(n: usize) -> String {
    let mut text = String::from(
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: mc\n",
    );
    for index in 0..n {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p{index}\n  namespace: ns\nspec:\n  serviceAccountName: sa{index}\n  containers:\n  - name: c\n    securityContext: {{capabilities: {{add: [IPC_LOCK]}}}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: b{index}\n  namespace: ns\nroleRef: {{kind: ClusterRole, name: system:openshift:scc:privileged}}\nsubjects: [{{kind: ServiceAccount, name: other{index}}}]\n"
        ));
    }
    text
}

fn many_servers_and_ranges(n: usize) -> String {
    let mut text = String::new();
    for index in 0..n {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: v{index}\nspec:\n  nfs: {{server: 10.{}.{}.{}, path: /e}}\n---\napiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata:\n  name: n{index}\nspec:\n  config: '{{\"type\": \"macvlan\", \"ipam\": {{\"type\": \"whereabouts\", \"range\": \"10.0.0.0/8\", \"exclude\": [\"10.{}.0.0/16\"]}}}}'\n",
            index / 65536 % 256,
            index / 256 % 256,
            index % 256 + 1,
            index % 256
        ));
    }
    text
}

fn many_gpu_containers(n: usize) -> String {
    let mut text =
        String::from("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  volumes:\n");
    for index in 0..n {
        text.push_str(&format!(
            "  - {{name: v{index}, emptyDir: {{medium: Memory}}}}\n"
        ));
    }
    text.push_str("  containers:\n");
    for index in 0..n {
        text.push_str(&format!(
            "  - name: c{index}\n    volumeMounts: [{{name: v{index}, mountPath: /data}}]\n    resources: {{limits: {{nvidia.com/gpu: 2}}}}\n"
        ));
    }
    text
}

#[test]
fn wide_objects_lint_in_near_linear_time() {
    // Shapes that once took quadratic time: a mapping of many (repeated)
    // keys, a pod of many containers, a container of many resources, a
    // device plugin config of many resources, a pod naming many networks,
    // many MachineConfigs and pools; and for the rules that look across
    // objects since: many units of one MachineConfig, many pods and
    // RoleBindings on OpenShift, many storage servers and whereabouts
    // ranges, many multi-GPU containers and volumes. Four times the elements must cost
    // about four times the CPU time, not sixteen; the limit leaves room
    // for noise and for O(n log n).
    let shapes: [(&str, Shape, usize); 10] = [
        ("configmap", wide_configmap, 10_000),
        ("containers", many_containers, 2_500),
        ("resources", many_resources, 10_000),
        ("advertised", many_advertised, 10_000),
        ("networks", many_networks, 2_500),
        ("pools", many_pools, 2_500),
        ("units", many_units, 2_500),
        ("scc", many_pods_and_bindings, 2_500),
        ("storage", many_servers_and_ranges, 2_500),
        ("gpu containers", many_gpu_containers, 2_500),
    ];
    for (name, make, n) in shapes {
        let (small, findings) = cost(make, n);
        let (large, _) = cost(make, 4 * n);
        assert!(findings > 0, "{name}: no finding");
        let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-3);
        assert!(
            ratio < 9.0,
            "{name}: {n} elements took {small:?}, {} took {large:?} ({ratio:.1}×)",
            4 * n
        );
    }
}

#[test]
fn sarif_columns_count_code_points() {
    // `k` is the 17th character of its line, the 18th UTF-16 code unit and
    // the 21st byte.
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {\"ü😀\": x, k: yes}\n";
    let outcome = lint(
        &[Input {
            name: "wide.yaml".into(),
            content: Ok(text.as_bytes().to_vec()),
        }],
        &Options::default(),
    );
    let finding = outcome
        .findings
        .iter()
        .find(|f| f.id == "ZL003")
        .expect("ZL003");
    let location = finding.location.as_ref().expect("location");
    assert_eq!((location.line, location.column), (4, 17));
    let report = Report::new("lint", "wide.yaml", outcome.findings);
    let rules: Vec<_> = zerohop_lint::rules().collect();
    let log = sarif::to_value(&report, &rules);
    let run = &log["runs"][0];
    assert_eq!(run["columnKind"], "unicodeCodePoints");
    let region = &run["results"][0]["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startColumn"], 17);
}

#[test]
fn crds_read_like_manifests_match_the_catalog_loader() {
    let Some(crds) = zerohop_testkit::shared_data::shared_dir("reference/crds") else {
        return;
    };
    let hardened = zerohop_lint::load_crds(&crds, &Limits::default()).expect("reference crds");
    let catalog = zerohop_k8s::schema::CrdCatalog::load_dir(&crds).expect("reference crds");
    let kinds = |c: &zerohop_k8s::schema::CrdCatalog| -> Vec<(String, String)> {
        c.kinds()
            .map(|(a, k)| (a.to_owned(), k.to_owned()))
            .collect()
    };
    assert!(!kinds(&hardened).is_empty());
    assert_eq!(kinds(&hardened), kinds(&catalog));
}

#[test]
fn crds_behind_a_symlink_out_of_their_directory_are_refused_without_quoting_it() {
    let outside = tempfile::tempdir().expect("tempdir");
    fs::write(outside.path().join("secret"), "TOKEN=hunter2: x: y\n").expect("write");
    let crds = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(outside.path().join("secret"), crds.path().join("x.yaml"))
        .expect("symlink");
    let error = zerohop_lint::load_crds(crds.path(), &Limits::default()).expect_err("refused");
    assert!(
        error.contains("leads outside the linted directory"),
        "{error}"
    );
    assert!(!error.contains("hunter2"), "{error}");

    fs::remove_file(crds.path().join("x.yaml")).expect("remove");
    fs::write(crds.path().join("x.yaml"), "TOKEN=hunter2: x: y\n").expect("write");
    let error = zerohop_lint::load_crds(crds.path(), &Limits::default()).expect_err("invalid");
    assert!(!error.contains("hunter2"), "{error}");
}
