//! What rules see: the objects of every input, with their file and nodes.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;

use zerohop_core::ObjectRef;
use zerohop_k8s::schema::{CrdCatalog, SchemaViolation};
use zerohop_k8s::yaml::{Found, LoadError, Node, PathStep, Yaml11};

use crate::NotRead;
use crate::rules::resources::{self, Advertised, Request};
use crate::sink::short;

/// A Kubernetes object found in an input.
#[derive(Debug, Clone, Copy)]
pub struct Object<'a> {
    /// The input's name as the user gave it.
    pub file: &'a str,
    /// The object's root node.
    pub node: &'a Node,
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `kind`.
    pub kind: &'a str,
    /// `metadata.name` (empty when absent).
    pub name: &'a str,
    /// `metadata.namespace`, when set.
    pub namespace: Option<&'a str>,
    /// The API group of `api_version`: found once, since nearly every rule
    /// asks every object for it.
    group: &'a str,
}

impl<'a> Object<'a> {
    /// Reads an object from a document; `None` when the document has no
    /// string `apiVersion` and `kind` (not a Kubernetes object).
    pub fn from_node(file: &'a str, node: &'a Node) -> Option<Object<'a>> {
        let api_version = node.get("apiVersion")?.as_str()?;
        let kind = node.get("kind")?.as_str()?;
        let metadata = node.get("metadata");
        let name = metadata
            .and_then(|m| m.get("name"))
            .and_then(Node::as_str)
            .unwrap_or("");
        let namespace = metadata
            .and_then(|m| m.get("namespace"))
            .and_then(Node::as_str);
        Some(Object {
            file,
            node,
            api_version,
            kind,
            name,
            namespace,
            group: api_version.rsplit_once('/').map_or("", |(group, _)| group),
        })
    }

    /// Whether the object is `kind` in API group `group` (any version; `""`
    /// for the core group).
    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.kind == kind && self.group() == group
    }

    /// The API group, `""` for the core group.
    pub fn group(&self) -> &'a str {
        self.group
    }

    /// The node at `path` when the whole path exists.
    pub fn get(&self, path: &[PathStep<'_>]) -> Option<&'a Node> {
        let found = self.node.find(path.iter().copied());
        (found.depth == path.len()).then_some(found.node)
    }

    /// A string at `path`.
    pub fn str_at(&self, path: &[PathStep<'_>]) -> Option<&'a str> {
        self.get(path).and_then(Node::as_str)
    }

    /// Whether `other` is the same object: same API group, kind, namespace
    /// and a name. Applied to one cluster, the later of two such documents
    /// replaces the earlier (`kubectl apply` keys objects by them), so two
    /// copies are one object, never two that clash.
    pub fn is_same_object(&self, other: &Object<'_>) -> bool {
        !self.name.is_empty()
            && self.name == other.name
            && self.kind == other.kind
            && self.group() == other.group()
            && self.namespace_or_default() == other.namespace_or_default()
    }

    /// The reference to this object that findings carry.
    pub fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            api_version: short(self.api_version).to_string(),
            kind: short(self.kind).to_string(),
            namespace: self.namespace.map(|namespace| short(namespace).to_string()),
            name: short(self.name).to_string(),
        }
    }

    /// The namespace the object lives in for name resolution: its own, or
    /// `default` when unset.
    pub fn namespace_or_default(&self) -> &'a str {
        self.namespace.unwrap_or("default")
    }
}

/// Everything one lint run looks at.
#[derive(Debug, Default)]
pub struct Workspace<'a> {
    /// Every Kubernetes object, in input order.
    pub objects: Vec<Object<'a>>,
    /// Documents that are not Kubernetes objects, with their file.
    pub other_documents: Vec<(&'a str, &'a Node)>,
    /// Documents of Helm values files
    /// (`zerohop_known::operators::is_helm_values_file`), with their file:
    /// not objects, but what a chart makes of them.
    pub helm_values: Vec<(&'a str, &'a Node)>,
    /// `cufile.json` documents, with their file.
    pub cufiles: Vec<(&'a str, &'a Node)>,
    /// Host files: the node configuration of a set for plain Kubernetes.
    pub host_files: Vec<HostFile<'a>>,
    /// The set's instructions (`README.md`), whose commands install what
    /// the objects need but do not carry.
    pub instructions: Vec<HostFile<'a>>,
    /// Inputs that could not be read or parsed.
    pub failed_inputs: Vec<(&'a str, InputFailure<'a>)>,
    /// Paths skipped on purpose while searching directories, with why.
    pub skipped: Vec<(&'a str, &'a NotRead)>,
    /// The CRDs to validate against, when given.
    pub catalog: Option<&'a CrdCatalog>,
    /// The pod templates, found on first use and shared by the rules that
    /// need them (finding them walks every container and resource).
    pub(crate) templates: OnceCell<Vec<PodTemplate<'a>>>,
    /// The advertised resources, found on first use and shared (finding
    /// them parses every device plugin config).
    pub(crate) advertised: OnceCell<Vec<Advertised<'a>>>,
    /// Each object's violations of its CRD's schema (empty for a kind no
    /// CRD serves), found on first use and shared by the schema rules:
    /// validating is the costliest step of a run with `--crds`.
    pub(crate) violations: OnceCell<Vec<Vec<SchemaViolation>>>,
    /// The scalars YAML 1.1 reads differently, found on first use and
    /// shared by the three rules about them (finding them walks every
    /// node).
    pub(crate) yaml11: OnceCell<Yaml11Scalars<'a>>,
}

/// The plain scalars that YAML 1.1 reads differently, found in one walk of
/// every object for the three rules about them (a walk of a 32 MiB input
/// touches millions of nodes).
#[derive(Debug, Default)]
pub(crate) struct Yaml11Scalars<'a> {
    /// Per kind, in walk order: the scalars the rule can list (as many per
    /// file as the sink lists), each with its object, path and where it is.
    pub(crate) listed: HashMap<Yaml11, Vec<(usize, Vec<PathStep<'a>>, Found<'a>)>>,
    /// Per kind and file, how many more there are: the rule only counts
    /// them.
    pub(crate) unlisted: HashMap<(Yaml11, &'a str), usize>,
}

/// A host file of the set (a systemd unit, an NVMe-oF `discovery.conf`),
/// written under a node root as `zerohop plan` writes them:
/// `host/<pool>/etc/systemd/system/mnt-data.mount`.
#[derive(Debug, Clone, Copy)]
pub struct HostFile<'a> {
    /// The input's name.
    pub file: &'a str,
    /// Its text.
    pub text: &'a str,
}

impl<'a> HostFile<'a> {
    /// The file's own name (`mnt-data.mount`). Only `/` separates: a
    /// backslash is part of an escaped unit name (`mnt-ai\x2ddata.mount`).
    pub fn base_name(&self) -> &'a str {
        self.file.rsplit('/').next().unwrap_or(self.file)
    }

    /// The node root the file lies under: its name up to the `etc/` of
    /// its path on the node (`host/<pool>/`), empty when it has none. Files
    /// under one root are on the same nodes.
    pub fn root(&self) -> &'a str {
        let file = self.file;
        if file.starts_with("etc/") {
            return "";
        }
        file.find("/etc/").map_or("", |at| &file[..=at])
    }

    /// The line (1-based) of the first line of the text that starts with
    /// `prefix` once trimmed, or 1.
    pub fn line_of(&self, prefix: &str) -> u32 {
        self.text
            .lines()
            .position(|line| line.trim_start().starts_with(prefix))
            .and_then(|index| u32::try_from(index + 1).ok())
            .unwrap_or(1)
    }
}

/// Why an input could not be linted.
#[derive(Debug, Clone, Copy)]
pub enum InputFailure<'a> {
    /// The input was not read: refused or failed.
    Unreadable(&'a NotRead),
    /// The text is not valid (or acceptable) YAML.
    Invalid(&'a LoadError),
}

impl<'a> Workspace<'a> {
    /// The objects of `kind` in API group `group`.
    pub fn of_kind<'w>(
        &'w self,
        group: &'w str,
        kind: &'w str,
    ) -> impl Iterator<Item = &'w Object<'a>> + 'w {
        self.objects
            .iter()
            .filter(move |object| object.is(group, kind))
    }
}

/// The pod template found in a workload object.
#[derive(Debug, Clone)]
pub struct PodTemplate<'a> {
    /// The object holding the template (a Pod, a Deployment, ...).
    pub object: Object<'a>,
    /// Path from the object's root to the template's `metadata`/`spec`
    /// parent (empty for a Pod).
    pub prefix: Vec<PathStep<'static>>,
    /// Every init container and container, with its path under the spec.
    pub containers: Vec<(Vec<PathStep<'static>>, &'a Node)>,
    /// Every extended resource the containers name.
    pub(crate) requests: Vec<Request<'a>>,
    /// The networks the pod attaches to, read on first use and shared by
    /// the rules that need them (an annotation may name a million).
    pub(crate) networks: OnceCell<Vec<PodNetwork<'a>>>,
}

/// A network a pod attaches to: the namespace it resolves in and its name,
/// borrowed from the annotation where written out plainly.
pub(crate) type PodNetwork<'a> = (Cow<'a, str>, Cow<'a, str>);

impl<'a> PodTemplate<'a> {
    /// The annotations of the pod (template).
    pub fn annotations(&self) -> Option<&'a Node> {
        let mut path = self.prefix.clone();
        path.extend([PathStep::Key("metadata"), PathStep::Key("annotations")]);
        self.object.get(&path)
    }

    /// `prefix` + `spec` + `rest`: a path from the object's root.
    pub fn path<'p>(&self, rest: &[PathStep<'p>]) -> Vec<PathStep<'p>> {
        let mut path: Vec<PathStep<'p>> = self.prefix.clone();
        path.push(PathStep::Key("spec"));
        path.extend_from_slice(rest);
        path
    }
}

/// Every container and init container of a pod spec, with its path under
/// the spec.
fn containers(spec: &Node) -> Vec<(Vec<PathStep<'static>>, &Node)> {
    let mut containers = Vec::new();
    for list in ["initContainers", "containers"] {
        if let Some(items) = spec.get(list) {
            for (index, container) in items.items().iter().enumerate() {
                containers.push((vec![PathStep::Key(list), PathStep::Index(index)], container));
            }
        }
    }
    containers
}

/// Every pod template in the workspace: Pods and the templates of
/// Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs and
/// MPIJobs (launcher and workers).
/// Found once per run.
pub fn pod_templates<'w, 'a>(workspace: &'w Workspace<'a>) -> &'w [PodTemplate<'a>] {
    workspace
        .templates
        .get_or_init(|| find_pod_templates(workspace))
}

fn find_pod_templates<'a>(workspace: &Workspace<'a>) -> Vec<PodTemplate<'a>> {
    const TEMPLATE: &[PathStep<'static>] = &[PathStep::Key("spec"), PathStep::Key("template")];
    const CRON_TEMPLATE: &[PathStep<'static>] = &[
        PathStep::Key("spec"),
        PathStep::Key("jobTemplate"),
        PathStep::Key("spec"),
        PathStep::Key("template"),
    ];
    /// The replica types of a kubeflow MPIJob (`kubeflow.org/v2beta1`,
    /// kubeflow/mpi-operator `pkg/apis/kubeflow/v2beta1/types.go`,
    /// `MPIReplicaTypeLauncher`, `MPIReplicaTypeWorker`), each with a pod
    /// template.
    const MPI_REPLICAS: [[PathStep<'static>; 4]; 2] = [
        [
            PathStep::Key("spec"),
            PathStep::Key("mpiReplicaSpecs"),
            PathStep::Key("Launcher"),
            PathStep::Key("template"),
        ],
        [
            PathStep::Key("spec"),
            PathStep::Key("mpiReplicaSpecs"),
            PathStep::Key("Worker"),
            PathStep::Key("template"),
        ],
    ];
    let mut templates = Vec::new();
    for object in &workspace.objects {
        if object.is("kubeflow.org", "MPIJob") {
            for prefix in &MPI_REPLICAS {
                push_template(&mut templates, object, prefix);
            }
            continue;
        }
        let prefix: &[PathStep<'static>] = match (object.group(), object.kind) {
            ("", "Pod") => &[],
            ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
            | ("batch", "Job")
            | ("", "ReplicationController") => TEMPLATE,
            ("batch", "CronJob") => CRON_TEMPLATE,
            _ => continue,
        };
        push_template(&mut templates, object, prefix);
    }
    templates
}

/// Adds the pod template at `prefix` of `object`, when it has a spec.
fn push_template<'a>(
    templates: &mut Vec<PodTemplate<'a>>,
    object: &Object<'a>,
    prefix: &[PathStep<'static>],
) {
    let mut spec_path = prefix.to_vec();
    spec_path.push(PathStep::Key("spec"));
    if let Some(spec) = object.get(&spec_path) {
        let containers = containers(spec);
        let requests = resources::requests(&containers);
        templates.push(PodTemplate {
            object: *object,
            prefix: prefix.to_vec(),
            containers,
            requests,
            networks: OnceCell::new(),
        });
    }
}

/// Writes a path as `spec.containers[0].env[1]`, each key clipped as
/// messages clip what they quote.
pub fn display_path(path: &[PathStep<'_>]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            PathStep::Index(index) => out.push_str(&format!("[{index}]")),
            PathStep::Key(key)
                if key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
            {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&short(key).to_string());
            }
            PathStep::Key(key) => out.push_str(&format!("[{:?}]", short(key).to_string())),
        }
    }
    out
}
