//! Every set `zerohop plan` renders, judged by the real kube-apiserver
//! (`tools/control-plane`, v1.37) with the operators' real CRDs installed
//! (`../shared/reference/crds`, one copy of each: `reference_crd_files`
//! says which and why), OpenShift's among them:
//! `kubectl apply --server-side --dry-run=server --validate=strict`, as an
//! administrator applies the directory, must admit every object, warn about
//! none, and keep each as it was sent.
//!
//! The sets are those of both examples, the feature intents of
//! `tests/consumers/` and every passing rule fixture (`tests/fixtures/*/pass`),
//! each on both platforms. "As sent" is the renderer's own object (not the
//! YAML text, which is what kubectl parses and sends): a field the server
//! prunes (a structural schema that does not declare it), a value it
//! rewrites (a quantity in a form it does not keep) or a list it changes is
//! a defect of the renderer, since the live object would differ from the
//! file forever (`kubectl diff`, every GitOps tool). What the server adds
//! is not: server-set metadata (uid, resourceVersion, managedFields,
//! creationTimestamp, generation), `status`, and defaults, which are the
//! only other additions a server makes (built-in defaulting such as a
//! container's `imagePullPolicy`, a CRD schema's `default`, admission such
//! as DefaultTolerationSeconds' tolerations).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use zerohop_k8s::yaml::{self, Limits};
use zerohop_plan::{ManifestSet, Platform, load, render};
use zerohop_testkit::control_plane::{ControlPlane, reference_crd_files};

/// The field manager of every request, as `kubectl apply --server-side` of
/// a person would name itself.
const MANAGER: &str = "--field-manager=zerohop-plan";

/// API groups that only OpenShift serves. Their CRDs are installed in this
/// plane for the OpenShift sets; a Kubernetes set that used one would be
/// admitted here and refused on every real Kubernetes cluster.
const OPENSHIFT_GROUPS: &[&str] = &[
    "security.openshift.io",
    "machineconfiguration.openshift.io",
    "operators.coreos.com",
    "nfd.openshift.io",
    "config.openshift.io",
];

/// Intents that do not plan on one platform, and the rule that refuses
/// them there: they are not rendered for it.
const REFUSED: &[(&str, Platform, &str)] = &[(
    // `resourcePrefix` with SR-IOV: OpenShift's SR-IOV operator advertises
    // every VF as `openshift.io/<name>`, whatever the prefix.
    "fixtures/ZP037/pass/intent.yaml",
    Platform::Openshift,
    "ZP037",
)];

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every intent the tests plan: the examples, the feature intents and the
/// passing rule fixtures, as (name, text) in a fixed order.
fn intents() -> Vec<(String, String)> {
    let mut paths: Vec<(String, PathBuf)> = ["cluster.yaml", "infiniband.yaml"]
        .iter()
        .map(|name| {
            (
                format!("examples/{name}"),
                crate_dir().join("../../examples").join(name),
            )
        })
        .collect();
    for dir in ["consumers", "fixtures"] {
        let mut found = Vec::new();
        for entry in fs::read_dir(crate_dir().join("tests").join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml") {
                found.push(path);
            } else if path.join("pass/intent.yaml").is_file() {
                found.push(path.join("pass/intent.yaml"));
            }
        }
        found.sort();
        for path in found {
            let name = path
                .strip_prefix(crate_dir().join("tests"))
                .unwrap()
                .to_string_lossy()
                .into_owned();
            paths.push((name, path));
        }
    }
    paths
        .into_iter()
        .map(|(name, path)| {
            let text =
                fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            (name, text)
        })
        .collect()
}

/// The shared plane with the operators' CRDs (one copy of each) installed,
/// or `None` where the plane or `../shared` is missing (after saying so).
fn plane() -> Option<&'static ControlPlane> {
    static READY: OnceLock<Option<&'static ControlPlane>> = OnceLock::new();
    *READY.get_or_init(|| {
        let crds = zerohop_testkit::shared_data::shared_dir("reference/crds")?;
        let plane = ControlPlane::shared()?;
        let files = reference_crd_files(&crds);
        assert_unique_crds(&files);
        plane.install_crds(&files);
        Some(plane)
    })
}

/// Every CRD of `files` once: two copies of one name would leave the
/// server with whichever came last.
fn assert_unique_crds(files: &[PathBuf]) {
    let mut names = HashSet::new();
    for file in files {
        for doc in documents(&fs::read_to_string(file).unwrap()) {
            if doc["kind"] == "CustomResourceDefinition" {
                let name = doc["metadata"]["name"].as_str().unwrap().to_owned();
                // reference_crd_files keeps one copy of each CRD.
                assert!(names.insert(name.clone()), "{name} twice in {files:?}");
            }
        }
    }
    // The operators' CRDs the sets use are among them (a directory that
    // lost its files would otherwise admit nothing and fail obscurely).
    assert!(names.len() >= 25, "{names:?}");
}

/// The documents of a YAML stream, as JSON.
fn documents(text: &str) -> Vec<Value> {
    yaml::load_str(text, &Limits::default())
        .unwrap()
        .iter()
        .map(yaml::Node::to_json)
        .filter(|doc| !doc.is_null())
        .collect()
}

/// One rendered object: its file, the object as the renderer built it, and
/// its YAML document as the file holds it.
struct Rendered {
    file: String,
    object: Value,
    text: String,
}

/// The objects of a set in deploy order: the numbered manifests, then the
/// fabric tests under `validate/` (applied by `zerohop validate run`).
fn objects(set: &ManifestSet) -> Vec<Rendered> {
    let mut out = Vec::new();
    for file in set.files.iter().filter(|file| !file.objects.is_empty()) {
        // The renderer writes `---` before each object, and never a line
        // `---` inside one (block scalars are indented).
        let texts: Vec<String> =
            file.contents
                .split_inclusive('\n')
                .fold(Vec::new(), |mut docs: Vec<String>, line| {
                    if line == "---\n" {
                        docs.push(String::new());
                    } else if let Some(doc) = docs.last_mut() {
                        doc.push_str(line);
                    }
                    docs
                });
        // A document per object, or the texts would pair with the wrong
        // objects.
        assert_eq!(texts.len(), file.objects.len(), "{}", file.path);
        for (object, text) in file.objects.iter().zip(texts) {
            out.push(Rendered {
                file: file.path.clone(),
                object: object.clone(),
                text,
            });
        }
    }
    out
}

fn group(object: &Value) -> &str {
    object["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit_once('/'))
        .map_or("", |(group, _)| group)
}

fn describe(object: &Value) -> String {
    format!(
        "{} {}/{}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["namespace"].as_str().unwrap_or(""),
        object["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// The namespaces the README has `helm install … --namespace NS
/// --create-namespace` create: the operators' on Kubernetes.
fn helm_namespaces(set: &ManifestSet) -> BTreeSet<String> {
    let readme = set
        .files
        .iter()
        .find(|file| file.path == "README.md")
        .map_or("", |file| file.contents.as_str());
    let words: Vec<&str> = readme.split_whitespace().collect();
    words
        .windows(3)
        .filter(|w| w[0] == "--namespace" && w[2] == "--create-namespace")
        .map(|w| w[1].to_owned())
        .collect()
}

/// Where the server's copy differs from what was sent, other than by
/// additions: pruned fields, changed values, changed lists.
fn changes(sent: &Value, stored: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, stored) {
        (Value::Object(sent), Value::Object(stored)) => {
            for (key, value) in sent {
                let at = format!("{path}.{key}");
                match stored.get(key) {
                    Some(kept) => changes(value, kept, &at, out),
                    None => out.push(format!("{at}: pruned (sent {value})")),
                }
            }
        }
        (Value::Array(sent), Value::Array(stored))
            if sent.len() == stored.len()
                || (path.ends_with(".spec.tolerations")
                    && stored.len() > sent.len()
                    && stored[sent.len()..].iter().all(default_toleration)) =>
        {
            for (index, (value, kept)) in sent.iter().zip(stored).enumerate() {
                changes(value, kept, &format!("{path}[{index}]"), out);
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        _ if sent == stored => {}
        _ => out.push(format!("{path}: sent {sent}, stored {stored}")),
    }
}

/// A toleration the DefaultTolerationSeconds admission plugin appends to
/// a pod's own (`node.kubernetes.io/not-ready` and `…/unreachable`, 300 s).
fn default_toleration(toleration: &Value) -> bool {
    matches!(
        toleration["key"].as_str(),
        Some("node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable")
    ) && toleration["effect"] == "NoExecute"
        && toleration["tolerationSeconds"] == 300
}

/// The items of a `kubectl … -o json` answer: a List for several objects,
/// the object itself for one.
fn items(stdout: &str) -> Vec<Value> {
    if stdout.trim().is_empty() {
        return Vec::new();
    }
    let answer: Value = serde_json::from_str(stdout).expect("kubectl prints JSON");
    match answer["items"].as_array() {
        Some(items) if answer["kind"] == "List" => items.clone(),
        _ => vec![answer],
    }
}

/// What the whole run judged, for the coverage assertions.
#[derive(Default)]
struct Tally {
    sets: usize,
    objects: usize,
    distinct: usize,
    requests: usize,
    kinds: BTreeSet<String>,
}

/// The objects of one set not judged yet, waiting for a request.
struct Pending {
    what: String,
    objects: Vec<Rendered>,
}

/// The state of the run: what was judged, the namespaces as really
/// applied, what waits, what was found.
#[derive(Default)]
struct Run {
    /// The YAML of every object judged or waiting: the fixtures differ from
    /// each other in a field or two, and an object's verdict depends only
    /// on it and its namespace (which exists whenever it is judged).
    judged: HashSet<String>,
    /// The namespace each name was last really applied as.
    namespaces: HashMap<String, String>,
    pending: Vec<Pending>,
    problems: Vec<String>,
    tally: Tally,
}

#[test]
fn every_rendered_set_is_admitted_unchanged_by_the_server() {
    let Some(plane) = plane() else {
        return;
    };
    let started = std::time::Instant::now();
    let mut run = Run::default();
    // Platform by platform: their namespaces differ (OpenShift's
    // `gpu-operator` is the set's own, labelled for cluster monitoring), and
    // each change of a namespace ends a batch of the dry run.
    let intents = intents();
    for platform in [Platform::Kubernetes, Platform::Openshift] {
        for (name, text) in &intents {
            let plan = match load(name, text, Some(platform)) {
                Ok(plan) => plan,
                Err(err) => {
                    // Only the listed intents may be refused, by their rule.
                    let listed = REFUSED.iter().any(|(file, on, rule)| {
                        file == name
                            && *on == platform
                            && err.diagnostics.iter().all(|d| d.rule.id == *rule)
                    });
                    assert!(listed, "{name} {platform:?} does not plan:\n{err}");
                    continue;
                }
            };
            run.tally.sets += 1;
            run.add_set(
                plane,
                format!("{name} {platform:?}"),
                &render(&plan),
                platform,
            );
        }
    }
    run.flush(plane);
    let Run {
        problems, tally, ..
    } = run;
    eprintln!(
        "{} sets, {} objects ({} distinct) judged by the server in {} requests, {:.1?}",
        tally.sets,
        tally.objects,
        tally.distinct,
        tally.requests,
        started.elapsed()
    );
    // Every object admitted, without a warning, and stored as sent (but
    // for what the server adds).
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    // Coverage: the examples, 3 feature intents and the 30-odd fixtures on
    // two platforms, and among their objects every kind the renderer
    // writes; a test that judged nothing would pass as well.
    assert!(tally.sets >= 70, "only {} sets", tally.sets);
    for kind in [
        "Namespace",
        "NicClusterPolicy",
        "SriovNetworkNodePolicy",
        "SriovNetwork",
        "SriovIBNetwork",
        "ClusterPolicy",
        "MachineConfig",
        "KubeletConfig",
        "SecurityContextConstraints",
        "Subscription",
        "OperatorGroup",
        "NodeFeatureDiscovery",
        "DaemonSet",
        "Pod",
        "MPIJob",
        "CustomResourceDefinition",
        "ValidatingAdmissionPolicy",
    ] {
        assert!(
            tally.kinds.contains(kind),
            "no {kind} judged: {:?}",
            tally.kinds
        );
    }
}

impl Run {
    /// Takes in one rendered set: checks what needs no server, creates its
    /// namespaces and queues its objects not judged yet.
    fn add_set(
        &mut self,
        plane: &ControlPlane,
        what: String,
        set: &ManifestSet,
        platform: Platform,
    ) {
        let rendered = objects(set);
        self.tally.objects += rendered.len();
        // Each object once in a set: kubectl would apply the second over
        // the first.
        let mut seen = HashSet::new();
        for r in &rendered {
            let id = (r.object["apiVersion"].clone(), describe(&r.object));
            assert!(seen.insert(id), "{what}: {} twice", describe(&r.object));
            self.tally
                .kinds
                .insert(r.object["kind"].as_str().unwrap_or("").to_owned());
            if platform == Platform::Kubernetes {
                // See OPENSHIFT_GROUPS: admitted here only because this
                // plane serves OpenShift's CRDs too.
                assert!(
                    !OPENSHIFT_GROUPS.contains(&group(&r.object)),
                    "{what}: {} {} is OpenShift's",
                    r.file,
                    describe(&r.object)
                );
            }
        }

        // The namespaces, really created, as applying the directory in
        // order creates them before what lives in them: the set's own, and
        // those the README's `helm install --create-namespace` creates.
        // Every other namespace an object names must be one of these or
        // `default`.
        let mut own: BTreeMap<String, String> = BTreeMap::new();
        for r in rendered.iter().filter(|r| r.object["kind"] == "Namespace") {
            own.insert(
                r.object["metadata"]["name"].as_str().unwrap().to_owned(),
                r.text.clone(),
            );
        }
        for ns in helm_namespaces(set) {
            let text = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n");
            own.entry(ns).or_insert(text);
        }
        for r in &rendered {
            if let Some(ns) = r.object["metadata"]["namespace"].as_str() {
                // A namespace nothing creates: the set cannot be applied.
                assert!(
                    ns == "default" || own.contains_key(ns),
                    "{what}: {} {} lives in {ns}, which neither the set nor its README creates",
                    r.file,
                    describe(&r.object)
                );
            }
        }
        let fresh: Vec<&String> = own
            .iter()
            .filter(|(name, text)| self.namespaces.get(*name) != Some(text))
            .map(|(_, text)| text)
            .collect();
        if !fresh.is_empty() {
            // What waits was queued for the namespaces as they are now.
            self.flush(plane);
            let stream: String = fresh.iter().map(|text| format!("---\n{text}")).collect();
            plane.kubectl_ok(
                &["apply", "--server-side", MANAGER, "-f", "-"],
                Some(&stream),
            );
            self.tally.requests += 1;
            for (name, text) in own {
                self.namespaces.insert(name, text);
            }
        }

        let new: Vec<Rendered> = rendered
            .into_iter()
            .filter(|r| self.judged.insert(r.text.clone()))
            .collect();
        self.tally.distinct += new.len();
        if !new.is_empty() {
            self.pending.push(Pending { what, objects: new });
        }
    }

    /// Judges every waiting object in one request; when the server has
    /// something to say, again set by set, so that each problem names its
    /// set.
    fn flush(&mut self, plane: &ControlPlane) {
        let pending = std::mem::take(&mut self.pending);
        let all: Vec<&Rendered> = pending.iter().flat_map(|p| &p.objects).collect();
        if all.is_empty() {
            return;
        }
        self.tally.requests += 1;
        if let Ok(stored) = dry_run(plane, &all) {
            let mut stored = stored.into_iter();
            for p in &pending {
                let kept: Vec<Value> = stored.by_ref().take(p.objects.len()).collect();
                self.compare(&p.what, &p.objects, &kept);
            }
            return;
        }
        for p in &pending {
            let objects: Vec<&Rendered> = p.objects.iter().collect();
            self.tally.requests += 1;
            match dry_run(plane, &objects) {
                Ok(kept) => self.compare(&p.what, &p.objects, &kept),
                Err(said) => self.problems.push(format!("{}: {said}", p.what)),
            }
        }
    }

    fn compare(&mut self, what: &str, sent: &[Rendered], stored: &[Value]) {
        for (sent, kept) in sent.iter().zip(stored) {
            // The answer lists the objects in the order they were sent.
            assert_eq!(
                (&kept["kind"], &kept["metadata"]["name"]),
                (&sent.object["kind"], &sent.object["metadata"]["name"]),
                "{what}"
            );
            let mut found = Vec::new();
            changes(&sent.object, kept, "", &mut found);
            if !found.is_empty() {
                self.problems.push(format!(
                    "{what}: {} {} changed by the server:\n  {}",
                    sent.file,
                    describe(&sent.object),
                    found.join("\n  ")
                ));
            }
        }
    }
}

/// `objects` applied in a server-side dry run, in one request stream in
/// deploy order: what the server would store, or what it said when it
/// refused one or warned.
fn dry_run(plane: &ControlPlane, objects: &[&Rendered]) -> Result<Vec<Value>, String> {
    let stream: String = objects.iter().map(|r| format!("---\n{}", r.text)).collect();
    let output = plane.kubectl_output(
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            // Unknown fields refused rather than pruned and warned about.
            "--validate=strict",
            MANAGER,
            "-o",
            "json",
            "-f",
            "-",
        ],
        Some(&stream),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Refusals and warnings both land on stderr; the server has nothing to
    // say about a correct object.
    if !output.status.success() || !stderr.trim().is_empty() {
        return Err(format!("the server said:\n{stderr}"));
    }
    let stored = items(&String::from_utf8_lossy(&output.stdout));
    if stored.len() == objects.len() {
        Ok(stored)
    } else {
        Err(format!(
            "{} objects sent, {} admitted",
            objects.len(),
            stored.len()
        ))
    }
}

/// The sizes an intent names reach the server in the form it keeps, however
/// they are spelled: the memory and shared memory of the workload, written
/// into the example pod's resources and its `/dev/shm` volume.
#[test]
fn sizes_are_rendered_in_the_form_the_server_keeps() {
    let Some(plane) = plane() else {
        return;
    };
    let example = fs::read_to_string(crate_dir().join("../../examples/cluster.yaml")).unwrap();
    let ns = plane.namespace("sizes");
    let spellings = [
        "512Gi",
        "524288Mi",
        "0.5Ti",
        "1.5Gi",
        "1536Mi",
        "64G",
        "64000M",
        "6.4e10",
        "1e12",
        "1000Gi",
        "1024Gi",
        "100000M",
        "2Ti",
        "1.25Ti",
        "750G",
        "+600G",
        "6E11",
        "0.6T",
        "600000000000",
        "1.5e12",
    ];
    let mut stream = String::new();
    let mut sent = Vec::new();
    for (index, size) in spellings.iter().enumerate() {
        let text = example
            .replace("memory: 512Gi", &format!("memory: {size:?}"))
            .replace("shmSize: 64Gi", &format!("shmSize: {size:?}"));
        // The substitution took: otherwise every case judges the example.
        assert!(text.contains(&format!("memory: {size:?}")), "{size}");
        let plan = load("cluster.yaml", &text, None).unwrap_or_else(|err| panic!("{size}: {err}"));
        let set = render(&plan);
        let mut pod = set
            .files
            .iter()
            .flat_map(|file| &file.objects)
            .find(|object| {
                object["kind"] == "Pod" && object["metadata"]["name"] == "nccl-allreduce"
            })
            .expect("the example pod")
            .clone();
        pod["metadata"]["name"] = Value::from(format!("size-{index}"));
        pod["metadata"]["namespace"] = Value::from(ns.clone());
        stream.push_str(&format!("---\n{pod}\n"));
        sent.push((size, pod));
    }
    let out = plane.kubectl_ok(
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "--validate=strict",
            MANAGER,
            "-o",
            "json",
            "-f",
            "-",
        ],
        Some(&stream),
    );
    let stored = items(&out);
    // kubectl_ok: none was refused, so each comes back.
    assert_eq!(stored.len(), sent.len());
    let mut problems = Vec::new();
    for ((size, pod), kept) in sent.iter().zip(&stored) {
        let mut found = Vec::new();
        changes(pod, kept, "", &mut found);
        if !found.is_empty() {
            problems.push(format!("{size}: {}", found.join("; ")));
        }
    }
    // Each spelling is kept as rendered: the renderer wrote what the
    // server stores (e.g. 524288Mi as 512Gi).
    assert!(problems.is_empty(), "{problems:#?}");
    // And the renderer did rewrite the spellings the server would have
    // changed: the test above compares something.
    let rendered = &sent[1].1["spec"]["containers"][0]["resources"]["limits"]["memory"];
    assert_eq!(rendered, "512Gi");
}
