//! Rules about the input itself: readable, valid YAML, read as intended.

use std::collections::HashMap;

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Found, LoadErrorKind, Mark, Node, PathStep, Span, Value, Yaml11};

use crate::NotRead;
use crate::model::{InputFailure, Object, Workspace, Yaml11Scalars};
use crate::paths::first_of_each_key;
use crate::registry::declare_lint;
use crate::sink::{MAX_LISTED_PER_FILE, Sink};

declare_lint! {
    /// An input could not be read, or is not YAML that can be linted.
    ///
    /// ## What it checks
    /// Every file (or standard input) must be a readable regular file of
    /// UTF-8 text, valid YAML (no tabs in indentation), at most 32 MiB,
    /// nested at most 128 levels, with aliases that expand to at most
    /// 100,000 nodes. A FIFO, socket or device is refused without being
    /// read. YAML is read as `kubectl` reads it (goyaml): the continuation
    /// lines of a quoted scalar may sit left of its key.
    ///
    /// ## Why it matters
    /// `kubectl apply` rejects the same input, and nothing in it can be
    /// checked. An alias "bomb" (billion laughs) can exhaust the memory of
    /// every tool that expands it; a FIFO or a device can block a reader
    /// forever or feed it without end.
    ///
    /// ## How to fix
    /// Fix the YAML at the reported line and column: indent with spaces,
    /// close brackets and quotes, render templates (`helm template`,
    /// `envsubst`) before linting, and split huge streams into files. Lint
    /// regular files; pipe the output of a command to `zerohop lint -`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL001/fail/`:
    ///
    /// ```text
    /// error[ZL001]: invalid YAML: tabs disallowed within this context (block indentation)
    ///  --> fail/input.yaml:4:2
    ///   |
    /// 4 |  name: tabbed
    ///   |  ^^^^^^^^^^^^
    ///   = help: fix the input at this position so that it is valid YAML, then lint it again
    /// ```
    pub(crate) static INVALID_INPUT = {
        id: "ZL001",
        name: "invalid-input",
        severity: Error,
        check: invalid_input,
    };
}

fn invalid_input(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for (file, failure) in &workspace.failed_inputs {
        let (at, message, fix) = match failure {
            InputFailure::Unreadable(not_read) => (
                Mark { line: 1, column: 1 },
                not_read.to_string(),
                unreadable_fix(not_read),
            ),
            InputFailure::Invalid(err) => (err.at, err.kind.to_string(), invalid_fix(&err.kind)),
        };
        sink.report_in_file(
            file,
            None,
            Span { start: at, end: at },
            String::new(),
            message,
            Remediation::new(fix),
        );
    }
}

/// What to do about an input that was not read.
fn unreadable_fix(not_read: &NotRead) -> &'static str {
    match not_read {
        NotRead::NotRegular(_) => {
            "lint regular files only; to lint the output of a command, pipe it to `zerohop lint -`"
        }
        _ => "check that the path exists and that this user may read it, then lint it again",
    }
}

/// What to do about an input that is not YAML that can be linted.
fn invalid_fix(kind: &LoadErrorKind) -> &'static str {
    match kind {
        LoadErrorKind::TooLarge { .. } => {
            "split the input into files of at most 32 MiB (the API server takes objects of about 1.5 MiB at most)"
        }
        LoadErrorKind::NotText => {
            "lint text manifests only; convert the file to UTF-8 if it is text in another encoding"
        }
        LoadErrorKind::AliasBomb(_) => {
            "write the repeated content out, or use fewer nested aliases"
        }
        LoadErrorKind::Json(_) => {
            "fix the input at this position so that it is valid JSON (comments are allowed), then lint it again"
        }
        _ => "fix the input at this position so that it is valid YAML, then lint it again",
    }
}

declare_lint! {
    /// A mapping sets the same key twice.
    ///
    /// ## What it checks
    /// Every mapping of every document, for a key that appears more than once.
    ///
    /// ## Why it matters
    /// With strict field validation (`kubectl apply`'s default) the API
    /// server rejects the object; otherwise the last value silently wins and
    /// the first one, often the one that was edited, is ignored.
    ///
    /// ## How to fix
    /// Keep one of the two keys and merge their values.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL002/fail/`:
    ///
    /// ```text
    /// error[ZL002]: key `a` is set twice (first at line 6); the API server keeps only the last
    ///  --> fail/input.yaml:7:3
    ///   |
    /// 7 |   a: "2"
    ///   |   ^
    ///   = object: ConfigMap/c
    ///   = help: remove one of the two keys and merge their values
    /// ```
    pub(crate) static DUPLICATE_KEY = {
        id: "ZL002",
        name: "duplicate-key",
        severity: Error,
        check: duplicate_key,
    };
}

fn duplicate_key(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in &workspace.objects {
        let mut path = Vec::new();
        walk_duplicates(object, object.node, &mut path, sink);
    }
}

/// Mappings with at most this many entries are searched for duplicates by
/// scanning: cheaper than a map for the small mappings manifests are made
/// of.
const SMALL_MAPPING: usize = 16;

fn walk_duplicates<'a>(
    object: &Object<'_>,
    node: &'a Node,
    path: &mut Vec<PathStep<'a>>,
    sink: &mut Sink<'_>,
) {
    match &node.value {
        Value::Mapping(entries) => {
            // The first entry of each key: a scan of the few entries of a
            // small mapping, one pass with tables over a large one.
            let firsts = if entries.len() <= SMALL_MAPPING {
                Vec::new()
            } else {
                first_of_each_key(entries.len(), |index| &entries[index].key)
            };
            for (index, entry) in entries.iter().enumerate() {
                let first = if entries.len() <= SMALL_MAPPING {
                    entries
                        .get(..index)
                        .and_then(|before| before.iter().find(|e| e.key == entry.key))
                } else if firsts[index] == index {
                    None
                } else {
                    Some(&entries[firsts[index]])
                };
                let Some(first) = first else {
                    continue;
                };
                if sink.counted_only(object.file) {
                    continue;
                }
                path.push(PathStep::Key(&entry.key));
                sink.report_in_file(
                    object.file,
                    Some(object),
                    entry.key_span,
                    crate::model::display_path(path),
                    format!(
                        "key `{}` is set twice (first at line {}); the API server keeps only the last",
                        entry.key, first.key_span.start.line
                    ),
                    Remediation::new("remove one of the two keys and merge their values"),
                );
                path.pop();
            }
            for entry in entries {
                path.push(PathStep::Key(&entry.key));
                walk_duplicates(object, &entry.value, path, sink);
                path.pop();
            }
        }
        Value::Sequence(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(PathStep::Index(index));
                walk_duplicates(object, item, path, sink);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Walks every object once for [`Yaml11Scalars`].
fn find_yaml11_scalars<'a>(workspace: &Workspace<'a>) -> Yaml11Scalars<'a> {
    let mut scalars = Yaml11Scalars::default();
    // Looked up once per scalar: foldhash, seeded per process.
    let mut per_file: HashMap<(Yaml11, &str), usize, foldhash::fast::RandomState> =
        HashMap::default();
    for (index, object) in workspace.objects.iter().enumerate() {
        let root = Found {
            node: object.node,
            key_span: None,
            depth: 0,
        };
        walk_yaml11(root, &mut Vec::new(), &mut |kind, path, found| {
            let seen = per_file.entry((kind, object.file)).or_default();
            *seen += 1;
            if *seen <= MAX_LISTED_PER_FILE {
                scalars
                    .listed
                    .entry(kind)
                    .or_default()
                    .push((index, path.to_vec(), found));
            }
        });
    }
    scalars.unlisted = per_file
        .into_iter()
        .filter(|&(_, seen)| seen > MAX_LISTED_PER_FILE)
        .map(|(place, seen)| (place, seen - MAX_LISTED_PER_FILE))
        .collect();
    scalars
}

/// Calls `report` for every plain scalar that YAML 1.1 reads differently,
/// with its path and where it is (the walk already stands on the node: no
/// path to follow again).
fn walk_yaml11<'a>(
    found: Found<'a>,
    path: &mut Vec<PathStep<'a>>,
    report: &mut dyn FnMut(Yaml11, &[PathStep<'a>], Found<'a>),
) {
    let node = found.node;
    match &node.value {
        Value::Mapping(entries) => {
            for entry in entries {
                path.push(PathStep::Key(&entry.key));
                let child = Found {
                    node: &entry.value,
                    key_span: Some(entry.key_span),
                    depth: path.len(),
                };
                walk_yaml11(child, path, report);
                path.pop();
            }
        }
        Value::Sequence(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(PathStep::Index(index));
                let child = Found {
                    node: item,
                    key_span: None,
                    depth: path.len(),
                };
                walk_yaml11(child, path, report);
                path.pop();
            }
        }
        _ => {
            if let Some(reading) = &node.yaml11 {
                report(reading.kind, path, found);
            }
        }
    }
}

/// Runs `report` for every scalar YAML 1.1 reads as `kind` that the rule
/// lists, and counts the rest.
fn each_yaml11(
    workspace: &Workspace<'_>,
    sink: &mut Sink<'_>,
    kind: Yaml11,
    report: impl Fn(&mut Sink<'_>, &Object<'_>, &[PathStep<'_>], Found<'_>),
) {
    let scalars = workspace
        .yaml11
        .get_or_init(|| find_yaml11_scalars(workspace));
    for (index, path, found) in scalars
        .listed
        .get(&kind)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let object = &workspace.objects[*index];
        if !sink.counted_only(object.file) {
            report(sink, object, path, *found);
        }
    }
    for (&(of, file), &count) in &scalars.unlisted {
        if of == kind {
            sink.count_unlisted(file, count);
        }
    }
}

fn yaml11_text(node: &Node) -> &str {
    node.yaml11
        .as_ref()
        .map_or("", |reading| reading.text.as_str())
}

declare_lint! {
    /// An unquoted `yes`, `no`, `on`, `off`, `y` or `n` that Kubernetes reads as a boolean.
    ///
    /// ## What it checks
    /// Plain (unquoted) scalars that YAML 1.1, which Kubernetes' YAML library
    /// follows, reads as booleans while YAML 1.2 reads them as strings.
    ///
    /// ## Why it matters
    /// A field that wants the string `on` (SriovNetwork `spoofChk`, `trust`)
    /// gets the boolean `true` and is rejected; a value meant as a boolean is
    /// read differently by YAML 1.2 tools such as linters and editors.
    ///
    /// ## How to fix
    /// Quote the value when a string is meant (`spoofChk: "on"`), or write
    /// `true`/`false` when a boolean is meant.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL003/fail/`:
    ///
    /// ```text
    /// warning[ZL003]: unquoted `on` is read by Kubernetes as the boolean true
    ///  --> fail/input.yaml:8:3
    ///   |
    /// 8 |   spoofChk: on
    ///   |   ^^^^^^^^
    ///   = object: SriovNetwork/sriov-network-operator/net
    ///   = help: write "on" if a string is meant, or true if a boolean is meant
    /// ```
    pub(crate) static YAML11_BOOLEAN = {
        id: "ZL003",
        name: "yaml11-boolean",
        severity: Warning,
        check: yaml11_boolean,
    };
}

fn yaml11_boolean(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_yaml11(
        workspace,
        sink,
        Yaml11::Boolean,
        |sink, object, path, found| {
            let text = yaml11_text(found.node);
            let read = found.node.as_bool().unwrap_or_default();
            sink.report_found(
                object,
                path,
                found,
                format!("unquoted `{text}` is read by Kubernetes as the boolean {read}"),
                Remediation::new(format!(
                    "write \"{text}\" if a string is meant, or {read} if a boolean is meant"
                )),
            );
        },
    );
}

declare_lint! {
    /// An unquoted number with a leading zero, which Kubernetes reads as octal.
    ///
    /// ## What it checks
    /// Plain integers such as `0644` that YAML 1.1 (Kubernetes) reads as
    /// octal and YAML 1.2 reads as decimal.
    ///
    /// ## Why it matters
    /// `defaultMode: 0644` is 420 to the API server, which is usually what
    /// was meant, but a YAML 1.2 tool reads 644 (mode `01204`), and a
    /// value that was not meant as octal (`0123` as an ID) silently changes.
    ///
    /// ## How to fix
    /// Write the decimal value (`420` for mode `0644`) or quote the string
    /// if a string is meant.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL004/fail/`:
    ///
    /// ```text
    /// info[ZL004]: `0644` is octal to Kubernetes (420) but decimal to YAML 1.2 tools
    ///   --> fail/input.yaml:13:9
    ///    |
    /// 13 |         defaultMode: 0644
    ///    |         ^^^^^^^^^^^
    ///    = object: Pod/p
    ///    = help: write the decimal value 420, or quote "0644" if a string is meant
    /// ```
    pub(crate) static LEADING_ZERO_OCTAL = {
        id: "ZL004",
        name: "leading-zero-octal",
        severity: Info,
        check: leading_zero_octal,
    };
}

fn leading_zero_octal(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_yaml11(
        workspace,
        sink,
        Yaml11::Octal,
        |sink, object, path, found| {
            let text = yaml11_text(found.node);
            let read = found.node.as_i64().unwrap_or_default();
            sink.report_found(
                object,
                path,
                found,
                format!("`{text}` is octal to Kubernetes ({read}) but decimal to YAML 1.2 tools"),
                Remediation::new(format!(
                    "write the decimal value {read}, or quote \"{text}\" if a string is meant"
                )),
            );
        },
    );
}

declare_lint! {
    /// An unquoted value such as a PCI address that YAML 1.1 libraries read as a base-60 number.
    ///
    /// ## What it checks
    /// Plain scalars of the form `a:b[:c][.d]` with two-digit parts below 60,
    /// such as the PCI address `0000:18:00.1`.
    ///
    /// ## Why it matters
    /// Go's YAML library keeps them as strings, but YAML 1.1 libraries such
    /// as PyYAML (Ansible, many generators) read `0000:18:00.1` as the
    /// number 1080.1, so the manifest changes meaning when it passes through
    /// such a tool.
    ///
    /// ## How to fix
    /// Quote the value: `rootDevices: ["0000:18:00.1"]`.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL005/fail/`:
    ///
    /// ```text
    /// warning[ZL005]: unquoted `0000:18:00.1` is a base-60 number to YAML 1.1 libraries such as PyYAML
    ///   --> fail/input.yaml:13:9
    ///    |
    /// 13 |       - 0000:18:00.1
    ///    |         ^^^^^^^^^^^^
    ///    = object: SriovNetworkNodePolicy/sriov-network-operator/policy
    ///    = help: quote it: "0000:18:00.1"
    /// ```
    pub(crate) static UNQUOTED_BASE_60 = {
        id: "ZL005",
        name: "unquoted-base-60-scalar",
        severity: Warning,
        check: unquoted_base_60,
    };
}

fn unquoted_base_60(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    each_yaml11(
        workspace,
        sink,
        Yaml11::Sexagesimal,
        |sink, object, path, found| {
            let text = yaml11_text(found.node);
            sink.report_found(
                object,
                path,
                found,
                format!(
                    "unquoted `{text}` is a base-60 number to YAML 1.1 libraries such as PyYAML"
                ),
                Remediation::new(format!("quote it: \"{text}\"")),
            );
        },
    );
}

declare_lint! {
    /// A document that is not a Kubernetes object was skipped.
    ///
    /// ## What it checks
    /// Documents without a string `apiVersion` and `kind`, such as
    /// configuration mixed into the input. Helm values files (`values.yaml`,
    /// `values-*.yaml`, `*-values.yaml`) are not reported: the rules that
    /// know a chart read them as its values.
    ///
    /// ## Why it matters
    /// Nothing in them is checked; if the document was meant to be an object,
    /// `kubectl apply` rejects it.
    ///
    /// ## How to fix
    /// Add `apiVersion` and `kind` if it is an object; otherwise leave it out
    /// of the linted paths.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL006/fail/`:
    ///
    /// ```text
    /// info[ZL006]: document has no apiVersion or kind; not a kubernetes object, skipped
    ///  --> fail/input.yaml:1:1
    ///   |
    /// 1 | replicas: 3
    ///   | ^^^^^^^^^^^
    ///   = help: add apiVersion and kind if this is meant to be an object
    /// ```
    pub(crate) static NOT_A_KUBERNETES_OBJECT = {
        id: "ZL006",
        name: "not-a-kubernetes-object",
        severity: Info,
        check: not_a_kubernetes_object,
    };
}

fn not_a_kubernetes_object(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for (file, node) in &workspace.other_documents {
        let missing: Vec<&str> = ["apiVersion", "kind"]
            .into_iter()
            .filter(|key| node.get(key).and_then(Node::as_str).is_none())
            .collect();
        sink.report_in_file(
            file,
            None,
            node.span,
            String::new(),
            format!(
                "document has no {}; not a kubernetes object, skipped",
                missing.join(" or ")
            ),
            Remediation::new("add apiVersion and kind if this is meant to be an object"),
        );
    }
}

declare_lint! {
    /// A path under a linted directory was skipped: a symlink that leaves it, or a directory nested too deep.
    ///
    /// ## What it checks
    /// While searching a directory named on the command line: symlinks
    /// whose target lies outside that directory, symlinks that do not
    /// resolve, and directories nested more than 32 levels deep. None of
    /// them is read. A symlink whose target lies inside the directory is
    /// followed; a path named on the command line is always followed.
    ///
    /// ## Why it matters
    /// Manifests under review (a pull request in CI) may carry a symlink to
    /// a secret of the machine that lints them, such as
    /// `/proc/self/environ` or `/etc/shadow`; reading it would print the
    /// secret in the report. Nothing in a skipped path is checked.
    ///
    /// ## How to fix
    /// Nothing to do when the link is not a manifest of this deployment.
    /// Otherwise copy the file into the directory, or name the target on
    /// the command line.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL007/fail/`:
    ///
    /// ```text
    /// info[ZL007]: symlink to `../pass/input.yaml` leads outside the linted directory; not followed
    ///  --> fail/outside.yaml:1:1
    ///   = help: copy the file into the linted directory or name its target on the command line if it should be linted
    /// ```
    pub(crate) static SKIPPED_PATH = {
        id: "ZL007",
        name: "skipped-path",
        severity: Info,
        check: skipped_path,
    };
}

fn skipped_path(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for (file, not_read) in &workspace.skipped {
        let at = Mark { line: 1, column: 1 };
        sink.report_in_file(
            file,
            None,
            Span { start: at, end: at },
            String::new(),
            not_read.to_string(),
            Remediation::new(
                "copy the file into the linted directory or name its target on the command line if it should be linted",
            ),
        );
    }
}
