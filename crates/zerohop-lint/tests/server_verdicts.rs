//! `zerohop lint --crds`'s schema verdicts against the real kube-apiserver
//! (`tools/control-plane`, v1.37) with the same CRDs installed: over every
//! custom resource of `../shared/reference/samples` and, for each, variants
//! that break its CRD's schema in one way each (a wrong type, an unknown
//! field, a missing required field, an enum violation) and a few that break
//! one of its CEL rules, lint reports a schema violation (ZL010, ZL011 or
//! ZL012) exactly when the server refuses to create the object. Where they
//! differ the server is right, but for the CEL rules, which lint does not
//! evaluate: those cases are listed in [`CEL`], each one asserted to be
//! refused by the server and passed by lint.
//!
//! Beyond those four, each sample is varied where a validator is most
//! easily wrong about the server: a whole integer written as a float, a
//! null field, ObjectMeta (a bad name, a bad label value, an unknown
//! field), and the `status` of a CRD with the status subresource, which the
//! server resets on create (a wrong type there is admitted, an unknown
//! field refused); and [`PROBES`] adds an object of our own for the one
//! `date-time` outside a status in the reference CRDs. The status and the
//! date-time are where lint and the server differed, until lint was made
//! to agree (zerohop-k8s `schema`).
//!
//! The server is asked as `kubectl create --dry-run=server
//! --validate=strict` asks it (`fieldValidation=Strict`, kubectl's default):
//! an unknown field refused. That is the mode lint's ZL010 mirrors. Without
//! it the server admits the object and prunes the field silently, which
//! is what makes an unknown field worth an error (a misspelled `pfName`
//! leaves the policy without its filter): the test shows that too, under
//! `--validate=ignore`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use zerohop_k8s::schema::CrdCatalog;
use zerohop_k8s::yaml::{self, Limits};
use zerohop_lint::{Input, Options, lint};
use zerohop_testkit::control_plane::{ControlPlane, reference_crd_files};

/// The schema rules of lint: unknown field, missing required field,
/// invalid value.
const SCHEMA_RULES: &[&str] = &["ZL010", "ZL011", "ZL012"];

/// A field no CRD declares.
const UNKNOWN: &str = "zerohopUnknownField";

/// How a variant departs from its sample.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Mutation {
    /// The sample as published.
    Original,
    /// A scalar of the wrong JSON type at the path.
    WrongType(String),
    /// A field the schema does not declare, added to the object at the path.
    UnknownField(String),
    /// A required field removed from the object at the path.
    MissingRequired(String),
    /// A value outside the enum at the path.
    NotInEnum(String),
    /// One of [`CEL`].
    Cel(&'static str),
    // Beyond the four kinds the differential is about, the places where
    // a validator is most easily wrong about the server:
    /// A whole integer written as a float (`3.0`) at the path.
    FloatInteger(String),
    /// A field that is neither required nor nullable set to null.
    NullField(String),
    /// A `date-time` string that is no date at the path.
    NotADateTime(String),
    /// An unknown field in `status`, of a CRD with a status subresource.
    UnknownStatusField,
    /// A wrong type in `status`, of a CRD with a status subresource.
    WrongStatusType(String),
    /// `metadata.name` that is no DNS subdomain.
    BadName,
    /// A label value with characters a label may not hold.
    BadLabel,
    /// A field ObjectMeta does not declare.
    UnknownMetadataField,
}

impl Mutation {
    fn label(&self) -> &'static str {
        match self {
            Mutation::Original => "original",
            Mutation::WrongType(_) => "wrong type",
            Mutation::UnknownField(_) => "unknown field",
            Mutation::MissingRequired(_) => "missing required",
            Mutation::NotInEnum(_) => "not in enum",
            Mutation::Cel(_) => "cel rule",
            Mutation::FloatInteger(_) => "float integer",
            Mutation::NullField(_) => "null field",
            Mutation::NotADateTime(_) => "not a date-time",
            Mutation::UnknownStatusField => "unknown status field",
            Mutation::WrongStatusType(_) => "wrong status type",
            Mutation::BadName => "bad name",
            Mutation::BadLabel => "bad label",
            Mutation::UnknownMetadataField => "unknown metadata field",
        }
    }
}

/// A CEL rule (`x-kubernetes-validations`) of a reference CRD, broken on
/// purpose: the sample (relative to `samples/`, its first document), what
/// is changed, and the rule. Lint does not evaluate CEL (zerohop-k8s
/// `schema` says so), so each is refused by the server and passed by lint;
/// the sample itself, admitted by both, shows that the rule alone refuses it.
struct CelCase {
    sample: &'static str,
    break_rule: fn(&mut Value),
    rule: &'static str,
}

const CEL: &[CelCase] = &[
    CelCase {
        sample: "gpu-operator/alm-examples.NVIDIADriver.gpu-driver.json",
        break_rule: |driver| {
            driver["spec"]["default"] = json!(true);
            driver["spec"]["nodeSelector"] = json!({"nvidia.com/gpu.present": "true"});
        },
        rule: "NVIDIADriver spec: default NVIDIADriver must not use nodeSelector",
    },
    CelCase {
        sample: "machine-config-operator/worker.machineconfigpool.yaml",
        break_rule: |pool| {
            pool["spec"]["osImageStream"] = json!({"name": "Not_A_Subdomain"});
        },
        rule: "MachineConfigPool spec.osImageStream.name: format.dns1123Subdomain()",
    },
];

/// Objects of our own beside the samples, varied as they are: a schema rule
/// that no sample reaches. (A name, and the object.)
const PROBES: &[(&str, &str)] = &[(
    // The only `date-time` outside a status in the reference CRDs; the
    // server checks the format.
    "probe: NodeFeatureRule with a taint's timeAdded",
    r#"{"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
        "metadata": {"name": "zerohop-probe"},
        "spec": {"rules": [{"name": "gpu", "matchFeatures": [],
                            "taints": [{"key": "zerohop.dev/probe", "effect": "NoSchedule",
                                        "timeAdded": "2026-01-31T12:00:00Z"}]}]}}"#,
)];

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(path);
        }
    }
}

/// The documents of a YAML (or JSON) text, as JSON; a top-level list of
/// objects (an `alm-examples` annotation) is its objects. Nothing for a
/// text that is not YAML: two samples are not (a shell prompt pasted from
/// the docs, a chart template), which `reference_samples.rs` has ZL001
/// report; they hold no object to judge.
fn documents(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let Ok(nodes) = yaml::load_str(text, &Limits::default()) else {
        return out;
    };
    for node in nodes {
        match node.to_json() {
            Value::Array(items) => out.extend(items),
            Value::Null => {}
            doc => out.push(doc),
        }
    }
    out
}

/// What a CRD says of one served version.
struct Served {
    schema: Value,
    /// Whether `status` is a subresource: the server then ignores the
    /// `status` of an object it creates.
    status_subresource: bool,
    /// Whether a CEL rule of the root reads `metadata.name` (GPUCluster's
    /// singleton): its objects keep their names.
    name_rule: bool,
}

/// The CRDs of `files`, and what each serves by (apiVersion, kind).
fn schemas(files: &[PathBuf]) -> (Vec<Value>, BTreeMap<(String, String), Served>) {
    let mut crds = Vec::new();
    let mut by_kind = BTreeMap::new();
    for file in files {
        for crd in documents(&fs::read_to_string(file).unwrap()) {
            if crd["kind"] != "CustomResourceDefinition" {
                continue;
            }
            let group = crd["spec"]["group"].as_str().unwrap();
            let kind = crd["spec"]["names"]["kind"].as_str().unwrap();
            for version in crd["spec"]["versions"].as_array().unwrap() {
                if version["served"] == true {
                    let api = format!("{group}/{}", version["name"].as_str().unwrap());
                    let served = Served {
                        schema: version["schema"]["openAPIV3Schema"].clone(),
                        status_subresource: version["subresources"]["status"].is_object(),
                        name_rule: version["schema"]["openAPIV3Schema"]["x-kubernetes-validations"]
                            .to_string()
                            .contains("metadata.name"),
                    };
                    by_kind.insert((api, kind.to_owned()), served);
                }
            }
            crds.push(crd);
        }
    }
    (crds, by_kind)
}

/// Where a mutation of each kind can go in `value` (of `schema`), the first
/// place of each in document order: a variant per kind and sample.
#[derive(Default)]
struct Targets {
    wrong_type: Option<Vec<String>>,
    unknown_field: Option<Vec<String>>,
    missing_required: Option<(Vec<String>, String)>,
    not_in_enum: Option<Vec<String>>,
    float_integer: Option<Vec<String>>,
    null_field: Option<Vec<String>>,
    date_time: Option<Vec<String>>,
}

fn flag(schema: &Value, key: &str) -> bool {
    schema[key] == true
}

/// The first place of each kind, walking `value` with `schema`; `required`
/// says whether the value's parent requires it.
fn find_targets(
    schema: &Value,
    value: &Value,
    required: bool,
    path: &mut Vec<String>,
    found: &mut Targets,
) {
    let typed = matches!(
        schema["type"].as_str(),
        Some("string" | "integer" | "boolean" | "number")
    ) && !flag(schema, "x-kubernetes-int-or-string");
    if typed && !required && !flag(schema, "nullable") && found.null_field.is_none() {
        found.null_field = Some(path.clone());
    }
    match value {
        Value::Object(map) => {
            let properties = schema["properties"].as_object();
            let closed = properties.is_some()
                && !flag(schema, "x-kubernetes-preserve-unknown-fields")
                && !flag(schema, "x-kubernetes-embedded-resource")
                && schema.get("additionalProperties").is_none();
            if closed && !path.is_empty() && found.unknown_field.is_none() {
                found.unknown_field = Some(path.clone());
            }
            let needed: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if found.missing_required.is_none()
                && !path.is_empty()
                && let Some(name) = needed.iter().find(|name| map.contains_key(**name))
            {
                found.missing_required = Some((path.clone(), (*name).to_owned()));
            }
            for (key, field) in map {
                if path.is_empty()
                    && matches!(key.as_str(), "apiVersion" | "kind" | "metadata" | "status")
                {
                    continue;
                }
                let child = properties
                    .and_then(|p| p.get(key))
                    .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()));
                if let Some(child) = child {
                    path.push(key.clone());
                    find_targets(child, field, needed.contains(&key.as_str()), path, found);
                    path.pop();
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    path.push(index.to_string());
                    // An item is no field: null there is no pruned field.
                    find_targets(item_schema, item, true, path, found);
                    path.pop();
                }
            }
        }
        Value::Null => {}
        _ => {
            if typed && found.wrong_type.is_none() {
                found.wrong_type = Some(path.clone());
            }
            if value.is_string() && schema["enum"].is_array() && found.not_in_enum.is_none() {
                found.not_in_enum = Some(path.clone());
            }
            if value.is_i64() && schema["type"] == "integer" && found.float_integer.is_none() {
                found.float_integer = Some(path.clone());
            }
            if value.is_string() && schema["format"] == "date-time" && found.date_time.is_none() {
                found.date_time = Some(path.clone());
            }
        }
    }
}

/// The value at `path` (keys and list indices).
fn at<'v>(value: &'v mut Value, path: &[String]) -> &'v mut Value {
    path.iter().fold(value, |node, step| match node {
        Value::Array(items) => &mut items[step.parse::<usize>().unwrap()],
        _ => &mut node[step.as_str()],
    })
}

fn dotted(path: &[String]) -> String {
    path.join(".")
}

/// The sample and its variants.
fn variants(sample: &Value, served: &Served) -> Vec<(Mutation, Value)> {
    let mut out = vec![(Mutation::Original, sample.clone())];
    let mut found = Targets::default();
    find_targets(&served.schema, sample, true, &mut Vec::new(), &mut found);
    let mut change = |mutation: Mutation, path: &[String], to: &dyn Fn(&Value) -> Value| {
        let mut object = sample.clone();
        let leaf = at(&mut object, path);
        *leaf = to(leaf);
        out.push((mutation, object));
    };
    if let Some(path) = found.wrong_type {
        change(Mutation::WrongType(dotted(&path)), &path, &|leaf| {
            if leaf.is_string() {
                json!(12345)
            } else {
                json!("zerohop")
            }
        });
    }
    if let Some(path) = found.not_in_enum {
        change(Mutation::NotInEnum(dotted(&path)), &path, &|_| {
            json!("zerohop-not-in-enum")
        });
    }
    if let Some(path) = found.float_integer {
        change(Mutation::FloatInteger(dotted(&path)), &path, &|leaf| {
            json!(leaf.as_f64().unwrap_or_default())
        });
    }
    if let Some(path) = found.null_field {
        change(Mutation::NullField(dotted(&path)), &path, &|_| Value::Null);
    }
    if let Some(path) = found.date_time {
        change(Mutation::NotADateTime(dotted(&path)), &path, &|_| {
            json!("the day before yesterday")
        });
    }
    if let Some(path) = found.unknown_field {
        let mut object = sample.clone();
        at(&mut object, &path)[UNKNOWN] = json!("x");
        out.push((Mutation::UnknownField(dotted(&path)), object));
    }
    if let Some((path, name)) = found.missing_required {
        let mut object = sample.clone();
        if let Value::Object(map) = at(&mut object, &path) {
            map.remove(&name);
        }
        out.push((
            Mutation::MissingRequired(format!("{}.{name}", dotted(&path))),
            object,
        ));
    }
    let status = &served.schema["properties"]["status"];
    if served.status_subresource
        && let Some(fields) = status["properties"].as_object()
    {
        if !flag(status, "x-kubernetes-preserve-unknown-fields") {
            let mut object = sample.clone();
            object["status"] = json!({ UNKNOWN: "x" });
            out.push((Mutation::UnknownStatusField, object));
        }
        let scalar = fields.iter().find(|(_, field)| {
            matches!(
                field["type"].as_str(),
                Some("string" | "integer" | "boolean")
            )
        });
        if let Some((name, field)) = scalar {
            let wrong = if field["type"] == "string" {
                json!(12345)
            } else {
                json!("zerohop")
            };
            let mut object = sample.clone();
            object["status"] = json!({ name: wrong });
            out.push((Mutation::WrongStatusType(format!("status.{name}")), object));
        }
    }
    out
}

/// The variants of ObjectMeta, made of the first sample of each kind.
fn metadata_variants(sample: &Value) -> Vec<(Mutation, Value)> {
    let mut name = sample.clone();
    name["metadata"]["name"] = json!("Not_A_Subdomain");
    let mut label = sample.clone();
    label["metadata"]["labels"] = json!({"zerohop.dev/probe": "not a label value!"});
    let mut unknown = sample.clone();
    unknown["metadata"][UNKNOWN] = json!("x");
    vec![
        (Mutation::BadName, name),
        (Mutation::BadLabel, label),
        (Mutation::UnknownMetadataField, unknown),
    ]
}

/// One object judged by both.
struct Case {
    /// The sample, relative to `samples/`, and its document.
    sample: String,
    mutation: Mutation,
    object: Value,
    /// Lint's schema findings on it.
    lint: Vec<String>,
    /// Whether the server refused it.
    refused: bool,
    /// What the server said about it.
    said: String,
}

/// Whether `name` is a DNS-1123 subdomain (what the server asks of a
/// custom resource's name), ignoring its length.
fn is_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes
                    .iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && bytes[0] != b'-'
                && bytes[bytes.len() - 1] != b'-'
        })
}

/// `kind.group/name`, as `kubectl … -o name` prints an object.
fn kubectl_name(object: &Value) -> String {
    let api = object["apiVersion"].as_str().unwrap_or("");
    let group = api.rsplit_once('/').map_or("", |(group, _)| group);
    format!(
        "{}.{group}/{}",
        object["kind"].as_str().unwrap_or("").to_ascii_lowercase(),
        object["metadata"]["name"].as_str().unwrap_or("")
    )
}

/// The objects in rounds in which no two share a kind and name: kubectl
/// prints an admitted object by kind and name only, and the samples reuse
/// names (`nic-cluster-policy` a dozen times).
fn rounds(objects: &[&Value]) -> Vec<Vec<usize>> {
    let mut rounds: Vec<(HashSet<String>, Vec<usize>)> = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        let name = kubectl_name(object);
        match rounds.iter_mut().find(|(names, _)| !names.contains(&name)) {
            Some((names, members)) => {
                names.insert(name);
                members.push(index);
            }
            None => rounds.push((HashSet::from([name]), vec![index])),
        }
    }
    rounds.into_iter().map(|(_, members)| members).collect()
}

/// Which of `objects` the server refuses to create, asked with
/// `--validate=MODE`, each with what the server said about it (the lines
/// of its request that name it, or that name no object: a strict decoding
/// error names only the kind).
fn server_refuses(plane: &ControlPlane, objects: &[&Value], mode: &str) -> Vec<(bool, String)> {
    let mut verdicts = vec![(true, String::new()); objects.len()];
    for round in rounds(objects) {
        let stream: String = round
            .iter()
            .map(|&index| format!("---\n{}\n", objects[index]))
            .collect();
        let output = plane.kubectl_output(
            &[
                "create",
                "--dry-run=server",
                &format!("--validate={mode}"),
                "-o",
                "name",
                "-f",
                "-",
            ],
            Some(&stream),
        );
        let admitted: HashSet<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        let said = String::from_utf8_lossy(&output.stderr);
        for &index in &round {
            let object = objects[index];
            let name = format!("\"{}\"", object["metadata"]["name"].as_str().unwrap_or(""));
            let kind = object["kind"].as_str().unwrap_or("");
            let about: Vec<&str> = said
                .lines()
                .filter(|line| {
                    line.contains(kind) && (line.contains(&name) || line.contains("decoding"))
                })
                .collect();
            verdicts[index] = (!admitted.contains(&kubectl_name(object)), about.join("\n"));
        }
    }
    verdicts
}

#[test]
fn lint_reports_a_schema_violation_exactly_when_the_server_refuses_the_object() {
    let (Some(reference), Some(plane)) = (
        zerohop_testkit::shared_data::reference(),
        ControlPlane::shared(),
    ) else {
        return;
    };
    let started = std::time::Instant::now();
    let files = reference_crd_files(&reference.join("crds"));
    let (crds, schemas) = schemas(&files);
    // One copy of each CRD (see reference_crd_files): lint is given exactly
    // what the server serves, not the best fit of two copies.
    let names: BTreeSet<&str> = crds
        .iter()
        .map(|crd| crd["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), crds.len(), "a CRD twice");
    plane.install_crds(&files);
    let catalog = CrdCatalog::from_documents(crds).expect("the reference CRDs load");

    // Every custom resource of the samples that an installed CRD serves,
    // with its variants.
    let samples = reference.join("samples");
    let mut paths = Vec::new();
    walk(&samples, &mut paths);
    let mut cases: Vec<Case> = Vec::new();
    let mut firsts: BTreeMap<String, Value> = BTreeMap::new();
    let mut kinds: HashSet<(String, String)> = HashSet::new();
    let sources = paths
        .iter()
        .map(|path| {
            let name = path.strip_prefix(&samples).unwrap().to_string_lossy();
            (name.into_owned(), fs::read_to_string(path).unwrap())
        })
        .chain(
            PROBES
                .iter()
                .map(|(name, text)| ((*name).to_owned(), (*text).to_owned())),
        );
    for (name, text) in sources {
        for (index, doc) in documents(&text).into_iter().enumerate() {
            let key = (
                doc["apiVersion"].as_str().unwrap_or("").to_owned(),
                doc["kind"].as_str().unwrap_or("").to_owned(),
            );
            let Some(served) = schemas.get(&key) else {
                continue;
            };
            if index == 0 {
                firsts.insert(name.clone(), doc.clone());
            }
            let mut made = variants(&doc, served);
            if kinds.insert(key) {
                made.extend(metadata_variants(&doc));
            }
            for (mutation, object) in made {
                cases.push(Case {
                    sample: format!("{name}#{index}"),
                    mutation,
                    object,
                    lint: Vec::new(),
                    refused: false,
                    said: String::new(),
                });
            }
        }
    }
    for cel in CEL {
        let mut object = firsts
            .get(cel.sample)
            .unwrap_or_else(|| panic!("{}: no such sample", cel.sample))
            .clone();
        (cel.break_rule)(&mut object);
        cases.push(Case {
            sample: format!("{}#0", cel.sample),
            mutation: Mutation::Cel(cel.rule),
            object,
            lint: Vec::new(),
            refused: false,
            said: String::new(),
        });
    }

    // Each object a name of its own where that changes nothing the server
    // or lint judges: kubectl names an admitted object by kind and name
    // only, and the samples share names (`nic-cluster-policy` a dozen
    // times), so that a name met twice costs a request more (`rounds`). A
    // valid name stays valid with a suffix; an invalid one, a bad-name
    // variant and an object whose CEL rules read its name keep theirs.
    for (index, case) in cases.iter_mut().enumerate() {
        let key = (
            case.object["apiVersion"].as_str().unwrap_or("").to_owned(),
            case.object["kind"].as_str().unwrap_or("").to_owned(),
        );
        let name = case.object["metadata"]["name"].as_str().unwrap_or("");
        if case.mutation != Mutation::BadName
            && !schemas.get(&key).is_some_and(|served| served.name_rule)
            && is_subdomain(name)
            && name.len() < 240
        {
            case.object["metadata"]["name"] = json!(format!("{name}-{index}"));
        }
    }

    // Lint: each object an input of its own, all in one run.
    let inputs: Vec<Input> = cases
        .iter()
        .enumerate()
        .map(|(index, case)| Input {
            name: format!("{index}.yaml"),
            content: Ok(case.object.to_string().into_bytes()),
        })
        .collect();
    let options = Options {
        catalog: Some(catalog),
        ..Options::default()
    };
    for finding in lint(&inputs, &options).findings {
        let Some(location) = &finding.location else {
            continue;
        };
        if SCHEMA_RULES.contains(&finding.id.as_str()) {
            let index: usize = location.file.trim_end_matches(".yaml").parse().unwrap();
            cases[index]
                .lint
                .push(format!("{} {}", finding.id, finding.message));
        }
    }

    // The server: the namespaces the samples name exist (a namespaced
    // object without one goes to `default`), then every object is created
    // in a dry run.
    let namespaces: BTreeSet<&str> = cases
        .iter()
        .filter_map(|case| case.object["metadata"]["namespace"].as_str())
        .collect();
    let stream: String = namespaces
        .iter()
        .map(|ns| {
            format!(
                "---\n{}\n",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            )
        })
        .collect();
    plane.kubectl_ok(&["apply", "--server-side", "-f", "-"], Some(&stream));
    let objects: Vec<&Value> = cases.iter().map(|case| &case.object).collect();
    let requests = rounds(&objects).len();
    let verdicts = server_refuses(plane, &objects, "strict");
    for (case, (refused, said)) in cases.iter_mut().zip(verdicts) {
        case.refused = refused;
        case.said = said;
    }

    let mut disagreements = Vec::new();
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for case in &cases {
        let linted = !case.lint.is_empty();
        let counts = by_kind.entry(case.mutation.label()).or_default();
        counts.0 += 1;
        counts.1 += usize::from(case.refused);
        let expected_lint = match case.mutation {
            // Lint does not evaluate CEL: it passes what the rule refuses.
            Mutation::Cel(_) => false,
            _ => case.refused,
        };
        if linted != expected_lint || (matches!(case.mutation, Mutation::Cel(_)) && !case.refused) {
            disagreements.push(format!(
                "{} {:?}: lint {}, server {}\n  lint: {:?}\n  server: {}",
                case.sample,
                case.mutation,
                if linted { "reports" } else { "passes" },
                if case.refused { "refuses" } else { "admits" },
                case.lint,
                case.said
            ));
        }
    }
    eprintln!(
        "{} objects judged by lint and by the server in {requests} requests, {:.1?}: {by_kind:?}",
        cases.len(),
        started.elapsed()
    );
    // The verdicts agree, object by object (CEL: as listed).
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    // Each kind of mutation was made and the server refused many of them:
    // the agreement above is over refusals as well as admissions.
    for label in [
        "wrong type",
        "unknown field",
        "missing required",
        "not in enum",
    ] {
        let (made, refusals) = by_kind.get(label).copied().unwrap_or_default();
        assert!(
            made >= 5 && refusals >= 5,
            "{label}: {made} made, {refusals} refused"
        );
    }
    // The probes beyond those four were made too: a probe that no sample
    // reaches any more would pass unnoticed.
    for label in [
        "float integer",
        "null field",
        "not a date-time",
        "unknown status field",
        "wrong status type",
        "bad name",
        "bad label",
        "unknown metadata field",
        "cel rule",
    ] {
        let (made, _) = by_kind.get(label).copied().unwrap_or_default();
        assert!(made >= 1, "no {label} variant made");
    }
    // The samples were read: a hundred custom resources, of which a few
    // are known to break their schema (reference_samples.rs MUST_FLAG).
    let (originals, _) = by_kind["original"];
    assert!(originals >= 50, "only {originals} samples");
    // The CEL cases' samples are admitted as published (by the agreement
    // above, lint passes them too): their rule alone refuses the variant.
    for cel in CEL {
        let sample = format!("{}#0", cel.sample);
        let original = cases
            .iter()
            .find(|case| case.sample == sample && case.mutation == Mutation::Original)
            .unwrap();
        assert!(!original.refused, "{sample} is refused as published");
    }

    // Unknown fields under the server's lenient mode: admitted and pruned,
    // which is why lint reports them (the admitted samples only, so that
    // nothing else refuses them).
    let unknown: Vec<&Case> = cases
        .iter()
        .filter(|case| matches!(case.mutation, Mutation::UnknownField(_)))
        .filter(|case| {
            cases.iter().any(|original| {
                original.sample == case.sample
                    && original.mutation == Mutation::Original
                    && !original.refused
            })
        })
        .collect();
    assert!(
        unknown.len() >= 5,
        "{} unknown-field variants",
        unknown.len()
    );
    let objects: Vec<&Value> = unknown.iter().map(|case| &case.object).collect();
    let lenient = server_refuses(plane, &objects, "ignore");
    // Admitted: without strict field validation an unknown field is no
    // error to the server.
    assert!(lenient.iter().all(|(refused, _)| !refused), "{lenient:?}");
    // ... and gone from what it stores.
    assert_eq!(pruned_unknown_fields(plane, &objects), objects.len());
}

/// How many of `objects` come back from a lenient dry run without the
/// unknown field they were sent with.
fn pruned_unknown_fields(plane: &ControlPlane, objects: &[&Value]) -> usize {
    let mut pruned = 0;
    for round in rounds(objects) {
        let stream: String = round
            .iter()
            .map(|&index| format!("---\n{}\n", objects[index]))
            .collect();
        let out = plane.kubectl_ok(
            &[
                "create",
                "--dry-run=server",
                "--validate=ignore",
                "-o",
                "json",
                "-f",
                "-",
            ],
            Some(&stream),
        );
        // `kubectl create -o json` prints each object it created, one
        // JSON document after the other.
        let stored: Vec<Value> = serde_json::Deserializer::from_str(&out)
            .into_iter::<Value>()
            .map(|object| object.expect("kubectl prints JSON"))
            .collect();
        // kubectl_ok: none was refused, so each comes back.
        assert_eq!(stored.len(), round.len());
        pruned += stored
            .iter()
            .filter(|object| !contains_key(object, UNKNOWN))
            .count();
    }
    pruned
}

fn contains_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(map) => map.contains_key(key) || map.values().any(|v| contains_key(v, key)),
        Value::Array(items) => items.iter().any(|v| contains_key(v, key)),
        _ => false,
    }
}
