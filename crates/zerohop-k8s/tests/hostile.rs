//! Hostile input to the YAML loader and the CRD schema validator: raw
//! control characters, alias bombs, and the shapes that made a step
//! quadratic in the size of one object. Each test runs under a deadline of
//! its own, so a regression fails it rather than stalling the suite.

use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use zerohop_k8s::schema::{CrdCatalog, ViolationKind, display_path};
use zerohop_k8s::yaml::{
    Finder, Limits, LoadError, LoadErrorKind, Mark, Node, PathStep, load_bytes, load_str, objects,
};

/// Far above what any test here needs, even in a debug build on a busy
/// machine; far below what a quadratic step would take.
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `test` on a thread of its own and fails if it does not finish in
/// time (the thread is left behind; the test binary ends with the suite).
fn within_deadline<T: Send + 'static>(test: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(test());
    });
    result
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("did not finish within {DEADLINE:?} (or panicked)"))
}

fn load_err(text: &str) -> LoadError {
    load_str(text, &Limits::default()).expect_err("the input is refused")
}

fn load(text: &str) -> Vec<Node> {
    load_str(text, &Limits::default()).expect("the input loads")
}

/// The shortest of three timings of `run`, which is what its cost is when
/// the machine is not busy with something else.
fn fastest(mut run: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Asserts that quadrupling the input at most multiplies the time by ten:
/// a linear step takes four times as long, a quadratic one sixteen times.
fn assert_near_linear(what: &str, mut run: impl FnMut(usize), n: usize) {
    run(n / 4); // warm up allocator and caches
    let small = fastest(|| run(n));
    let large = fastest(|| run(4 * n));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    assert!(
        ratio < 10.0,
        "{what}: {n} took {small:?}, {} took {large:?} ({ratio:.1}x): not linear",
        4 * n
    );
}

// ---- control characters ----------------------------------------------------

#[test]
fn a_raw_osc_in_a_quoted_scalar_is_refused_at_its_position_by_code_point() {
    let err = load_err("kind: Pod\nname: \"x\u{1b}]0;pwned\u{7}y\"\n");
    assert_eq!(err.kind, LoadErrorKind::ControlCharacter('\u{1b}'));
    assert_eq!(err.at, Mark { line: 2, column: 9 });
    let message = err.to_string();
    assert!(message.contains("U+001B"), "{message}");
    assert!(
        !message.chars().any(|c| c.is_control()),
        "the message quotes the character raw: {message:?}"
    );
}

#[test]
fn escaped_control_characters_stay_legal() {
    let docs = load("a: \"\\e]0;title\\a\"\nb: \"\\x1b[31m\"\nc: \"\\u0007\"\n");
    let root = &docs[0];
    assert_eq!(
        root.get("a").and_then(Node::as_str),
        Some("\u{1b}]0;title\u{7}")
    );
    assert_eq!(root.get("b").and_then(Node::as_str), Some("\u{1b}[31m"));
    assert_eq!(root.get("c").and_then(Node::as_str), Some("\u{7}"));
}

#[test]
fn every_character_outside_yaml_c_printable_is_refused_wherever_it_is() {
    let refused = (0u32..0x20)
        .filter(|c| ![0x9, 0xA, 0xD].contains(c))
        .chain([0x7F])
        .chain((0x80..0xA0).filter(|&c| c != 0x85))
        .chain([0xFFFE, 0xFFFF])
        .filter_map(char::from_u32);
    for character in refused {
        for text in [
            format!("# a comment {character}\na: 1\n"),
            format!("a: 'single {character} quoted'\n"),
            format!("a: \"double {character} quoted\"\n"),
            format!("a: plain{character}\n"),
            format!("a: |\n  block {character}\n"),
            format!("[\"flow {character}\"]\n"),
        ] {
            let err = load_err(&text);
            assert_eq!(
                err.kind,
                LoadErrorKind::ControlCharacter(character),
                "U+{:04X} in {text:?}",
                u32::from(character)
            );
        }
    }
    // What YAML allows raw stays allowed: tab, NEL, no-break space, the
    // rest of Unicode outside the surrogates and U+FFFE/U+FFFF.
    let docs = load("a: \"tab\there\"\nb: 'nel\u{85} nbsp\u{A0} \u{E000} \u{FFFD} 😀'\n");
    assert_eq!(docs[0].get("a").and_then(Node::as_str), Some("tab\there"));
}

#[test]
fn the_position_of_a_control_character_counts_characters_and_every_line_break() {
    let err = load_err("é: ü\u{1b}\n");
    assert_eq!(err.at, Mark { line: 1, column: 5 });
    let err = load_err("a: 1\r\nb: 2\r\nc: \u{9b}\n");
    assert_eq!(err.at, Mark { line: 3, column: 4 });
    let err = load_err("a: 1\rb: \u{0}");
    assert_eq!(err.at, Mark { line: 2, column: 4 });
    let err = load_bytes(b"a: 1\nb: \"\x1b\"\n", &Limits::default()).expect_err("refused");
    assert_eq!(err.at, Mark { line: 2, column: 5 });
}

/// Upstream samples the parser refuses for their syntax, as it always has:
/// none of them for a character.
const REFUSED_FOR_SYNTAX: &[&str] = &[
    // Fragments cut out of documentation pages and charts, not whole YAML.
    "samples/machine-config-operator/from-docs/MachineConfig__block04_L147-156.yaml",
    "samples/network-operator/bundled-sriov-chart.supported-nic-ids.configmap.yaml",
];

#[test]
fn no_upstream_crd_or_sample_is_refused_for_its_characters() {
    let Some(reference) = zerohop_testkit::shared_data::reference() else {
        return;
    };
    let mut pending = vec![reference.to_path_buf()];
    let (mut loaded, mut refused) = (0, 0);
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("reference directory readable") {
            let path = entry.expect("reference entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let yaml_or_json = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
            if yaml_or_json {
                let bytes = std::fs::read(&path).expect("reference file readable");
                let relative = path.strip_prefix(&reference).unwrap_or(&path);
                let known = REFUSED_FOR_SYNTAX
                    .iter()
                    .any(|refused| relative == Path::new(refused));
                match load_bytes(&bytes, &Limits::default()) {
                    Ok(_) if !known => loaded += 1,
                    Err(LoadError {
                        kind: LoadErrorKind::Syntax(_),
                        ..
                    }) if known => refused += 1,
                    other => panic!("{}: {:?}", relative.display(), other.map(|d| d.len())),
                }
            }
        }
    }
    assert!(loaded > 100, "only {loaded} reference files found");
    assert_eq!(refused, REFUSED_FOR_SYNTAX.len());
}

// ---- aliases and anchors ---------------------------------------------------

#[test]
fn a_long_scalar_aliased_many_times_is_refused_before_it_takes_memory() {
    within_deadline(|| {
        let mut text = format!("a: &a {}\nb: [", "x".repeat(1 << 20));
        text.push_str(&"*a, ".repeat(1000));
        text.push_str("*a]\n");
        let start = Instant::now();
        let err = load_str(&text, &Limits::default()).expect_err("an alias bomb");
        assert_eq!(err.kind, LoadErrorKind::AliasBytes(32 << 20));
        assert_eq!(err.at.line, 2);
        // Refused after about 32 copies, not after 1,000.
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
    });
}

#[test]
fn anchors_that_nothing_refers_to_are_not_copied() {
    within_deadline(|| {
        // 100 nested anchors around 1 MiB of text: copying each would copy
        // 100 MiB, past the budget; nothing refers to them, so nothing is.
        let depth = 100;
        let mut text = String::new();
        for level in 0..depth {
            text.push_str(&format!("&a{level} ["));
        }
        text.push_str(&"x".repeat(1 << 20));
        text.push_str(&"]".repeat(depth));
        text.push('\n');
        let docs = load(&text);
        assert_eq!(docs.len(), 1);
        // Referring to the outermost one copies it once: within budget.
        let aliased = format!("a: {text}b: *a0\n");
        let docs = load(&aliased);
        assert_eq!(docs[0].get("b"), docs[0].get("a"));
    });
}

#[test]
fn merge_keys_take_the_mapping_first_then_the_first_source() {
    let docs =
        load("a: &a {x: a, y: a, z: a}\nb: &b {y: b, w: b, w: b2}\nm:\n  x: own\n  <<: [*a, *b]\n");
    let merged = docs[0].get("m").expect("m");
    assert_eq!(
        merged.to_json(),
        json!({"x": "own", "y": "a", "z": "a", "w": "b2"})
    );
    let keys: Vec<&str> = merged.entries().iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["x", "y", "z", "w"], "no merged key is repeated");
}

#[test]
fn merging_into_a_large_mapping_is_linear() {
    within_deadline(|| {
        assert_near_linear(
            "merge",
            |n| {
                let mut text = String::from("base: &b {");
                for i in 0..n {
                    text.push_str(&format!("m{i}: 1, "));
                }
                text.push_str("end: 1}\nmerged:\n  <<: *b\n");
                for i in 0..n {
                    text.push_str(&format!("  o{i}: 1\n"));
                }
                let limits = Limits {
                    max_alias_nodes: usize::MAX,
                    ..Limits::default()
                };
                let docs = load_str(&text, &limits).expect("loads");
                assert_eq!(
                    docs[0].get("merged").map(|m| m.entries().len()),
                    Some(2 * n + 1)
                );
            },
            5_000,
        );
    });
}

// ---- bounded work in the loader --------------------------------------------

#[test]
fn a_mapping_with_many_keys_loads_in_linear_time() {
    within_deadline(|| {
        assert_near_linear(
            "keys",
            |n| {
                let mut text = String::from("data:\n");
                for i in 0..n {
                    text.push_str(&format!("  k{i}: v\n"));
                }
                let docs = load(&text);
                let _ = docs[0].to_json();
            },
            20_000,
        );
    });
}

#[test]
fn a_long_line_of_non_ascii_scalars_loads_in_linear_time() {
    // Columns count characters; on a line that is not ASCII, each mark
    // must not recount the line from its start.
    within_deadline(|| {
        assert_near_linear(
            "non-ASCII flow items on one line",
            |n| {
                let text = format!("items: [{}é]\n", "é, ".repeat(n));
                let docs = load(&text);
                assert_eq!(
                    docs[0].get("items").map(|items| items.items().len()),
                    Some(n + 1)
                );
            },
            20_000,
        );
    });
}

#[test]
fn one_long_line_and_thousands_of_flow_mappings_on_it_load_quickly() {
    within_deadline(|| {
        let long = format!("data: \"{}\"\n", "x".repeat(1 << 20));
        let start = Instant::now();
        assert_eq!(
            load(&long)[0]
                .get("data")
                .and_then(Node::as_str)
                .map(str::len),
            Some(1 << 20)
        );
        let flow = format!("items: [{}{{a: 1}}]\n", "{a: 1, b: [2]}, ".repeat(2_000));
        assert_eq!(
            load(&flow)[0].get("items").map(|i| i.items().len()),
            Some(2_001)
        );
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
        assert_near_linear(
            "flow",
            |n| {
                let text = format!("[{}{{a: 1}}]\n", "{a: 1}, ".repeat(n));
                let _ = load(&text);
            },
            5_000,
        );
    });
}

#[test]
fn a_stream_of_tiny_nodes_is_refused_once_past_one_node_per_8_bytes() {
    within_deadline(|| {
        let limits = Limits {
            max_bytes: 1 << 20,
            ..Limits::default()
        };
        assert_eq!(limits.max_nodes(), 131_072);
        let text = format!("[{}1]\n", "1,".repeat(400_000));
        let err = load_str(&text, &limits).expect_err("too many nodes");
        assert_eq!(err.kind, LoadErrorKind::TooManyNodes(131_072));
        // The sequence is node 1; the scalar refused is the 131,072nd.
        assert_eq!(
            err.at,
            Mark {
                line: 1,
                column: 2 + 2 * 131_071
            }
        );
        // The same with an alias in the stream, which parses it twice.
        let text = format!("- &a 1\n- *a\n{}", "- 1\n".repeat(200_000));
        let err = load_str(&text, &limits).expect_err("too many nodes");
        assert_eq!(err.kind, LoadErrorKind::TooManyNodes(131_072));
        // A manifest of the same size, at one node per 20 bytes, loads.
        let mut text = String::from("data:\n");
        while text.len() < (1 << 20) - 32 {
            text.push_str(&format!("  key-{:08}: value\n", text.len()));
        }
        assert!(load_str(&text, &limits).is_ok());
    });
}

#[test]
fn the_deepest_tree_loaded_is_walked_on_a_small_stack() {
    // Whatever the limits say, nesting stops at 1,024 levels; a tree that
    // deep is loaded, cloned, converted, validated and dropped on the 2 MiB
    // stack of a spawned thread (in a debug build, where frames are largest).
    let limits = Limits {
        max_depth: usize::MAX,
        ..Limits::default()
    };
    let err = load_str(&format!("{}1\n", "- ".repeat(5_000)), &limits).expect_err("too deep");
    assert_eq!(err.kind, LoadErrorKind::TooDeep(1_024));
    let mut schema = json!({"type": "integer"});
    // The root and `spec` are two levels; the sequences are the rest.
    for _ in 0..1_022 {
        schema = json!({"type": "array", "items": schema, "x-kubernetes-list-type": "set"});
    }
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "deep.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Deep"}, "versions": [{"name": "v1",
            "served": true, "schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"spec": schema}}}}]}});
    let handle = thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let text = format!("spec:\n{}1\n", "- ".repeat(1_022));
            let docs = load_str(&text, &limits).expect("1,024 levels load");
            let copy = docs.clone();
            let mut object = copy[0].to_json();
            object["apiVersion"] = json!("example.com/v1");
            object["kind"] = json!("Deep");
            let catalog = CrdCatalog::from_documents([crd]).expect("the crd loads");
            let found = catalog.validate(&object).expect("a known kind");
            drop(docs);
            found.len()
        })
        .expect("a thread");
    assert_eq!(handle.join().expect("no stack overflow"), 0);
}

#[test]
fn columns_count_characters_not_bytes() {
    // What SARIF calls `unicodeCodePoints`: `é` and `😀` are one column each.
    let docs = load("é😀: [ü, x]\n");
    let found = docs[0].find([PathStep::Key("é😀"), PathStep::Index(1)]);
    assert_eq!(found.node.span.start, Mark { line: 1, column: 9 });
}

#[test]
fn a_json_document_loads_with_its_spans() {
    let docs =
        load("# generated\n{\"kind\": \"List\", \"items\": [{\"a\": 1}, {\"b\": [1, 2]}]}\n");
    let found = docs[0].find([
        PathStep::Key("items"),
        PathStep::Index(1),
        PathStep::Key("b"),
    ]);
    assert_eq!(
        found.node.span.start,
        Mark {
            line: 2,
            column: 44
        }
    );
    assert_eq!(
        found.key_span.map(|s| s.start),
        Some(Mark {
            line: 2,
            column: 39
        })
    );
    assert_eq!(objects(&docs).len(), 2);
    // A syntax error on that line is placed where it is, too.
    let err = load_err("{\"a\": 1,, }\n");
    assert_eq!(err.at.line, 1);
    assert!(err.at.column <= 10, "{err}");
}

#[test]
fn a_finder_finds_what_find_finds_in_linear_time() {
    within_deadline(|| {
        let docs = load("a: {b: [x, {c: 1}], b: [y]}\nd: 2\n");
        let finder = Finder::new(&docs[0]);
        for path in [
            vec![PathStep::Key("a"), PathStep::Key("b"), PathStep::Index(0)],
            vec![PathStep::Key("a"), PathStep::Key("z")],
            vec![PathStep::Key("d"), PathStep::Index(3)],
            vec![],
        ] {
            assert_eq!(finder.find(path.clone()), docs[0].find(path));
        }
        // A mapping large enough to be indexed, with repeated keys: the
        // last one wins, as with `find`.
        let mut text = String::from("m:\n");
        for i in 0..40 {
            text.push_str(&format!("  k{}: {i}\n", i % 25));
        }
        let docs = load(&text);
        let finder = Finder::new(&docs[0]);
        for i in 0..30 {
            let key = format!("k{i}");
            let path = [PathStep::Key("m"), PathStep::Key(&key)];
            assert_eq!(finder.find(path), docs[0].find(path), "{key}");
        }
        assert_near_linear(
            "finder",
            |n| {
                let mut text = String::from("data:\n");
                for i in 0..n {
                    text.push_str(&format!("  k{i}: v\n"));
                }
                let docs = load(&text);
                let finder = Finder::new(&docs[0]);
                for i in 0..n {
                    let key = format!("k{i}");
                    let found = finder.find([PathStep::Key("data"), PathStep::Key(&key)]);
                    assert_eq!(found.depth, 2);
                }
            },
            20_000,
        );
    });
}

// ---- the schema validator --------------------------------------------------

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: shapes.example.com}
spec:
  group: example.com
  names: {kind: Shape, plural: shapes}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type, reason]
                items:
                  type: object
                  properties:
                    type: {type: string}
                    reason: {type: string}
                    status: {type: string}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {x-kubernetes-preserve-unknown-fields: true}
              strict: {type: object, properties: {resourceName: {type: string}}}
"#;

fn catalog() -> CrdCatalog {
    CrdCatalog::from_documents([load(CRD)[0].to_json()]).expect("the crd loads")
}

fn shape(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Shape", "metadata": {"name": "s"}, "spec": spec})
}

fn messages(catalog: &CrdCatalog, object: &Value) -> Vec<String> {
    catalog
        .validate(object)
        .expect("a known kind")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn list_duplicates_compare_numbers_by_value_and_objects_by_content() {
    let catalog = catalog();
    let object = shape(json!({
        "tags": [1, 1.0, {"a": 1, "b": [2]}, {"b": [2.0], "a": 1}, "1", [1, 2], [2, 1], null, null],
        "conditions": [
            {"type": "Ready", "reason": "A", "status": "True"},
            {"type": "Ready", "reason": "B"},
            {"reason": "A", "type": "Ready", "status": "False"},
            {"type": "Ready"},
            {"type": "Ready", "reason": null},
        ],
    }));
    assert_eq!(
        messages(&catalog, &object),
        [
            r#"spec.conditions[2]: duplicate entry ["Ready","A"]"#,
            r#"spec.conditions[4]: duplicate entry ["Ready",null]"#,
            "spec.tags[1]: duplicate entry 1.0",
            r#"spec.tags[3]: duplicate entry {"a":1,"b":[2.0]}"#,
            "spec.tags[8]: duplicate entry null",
        ]
    );
}

#[test]
fn list_map_and_set_duplicates_are_found_in_linear_time() {
    let catalog = std::sync::Arc::new(catalog());
    within_deadline(move || {
        let catalog = std::sync::Arc::clone(&catalog);
        assert_near_linear(
            "list-map",
            |n| {
                let conditions: Vec<Value> = (0..n)
                    .map(|i| json!({"type": format!("Ready{i}"), "reason": "R", "status": "True"}))
                    .collect();
                let tags: Vec<Value> = (0..n).map(|i| json!(format!("tag-{i}"))).collect();
                let object = shape(json!({"conditions": conditions, "tags": tags}));
                assert_eq!(catalog.validate(&object).map(|v| v.len()), Ok(0));
            },
            5_000,
        );
    });
}

#[test]
fn violations_past_a_thousand_are_counted_not_listed() {
    let catalog = catalog();
    let strict: serde_json::Map<String, Value> = (0..5_000)
        .map(|i| (format!("unknown{i:05}"), json!(1)))
        .collect();
    let found = catalog
        .validate(&shape(json!({"strict": strict})))
        .expect("a known kind");
    assert_eq!(found.len(), 1_001);
    let last = found.last().expect("a last violation");
    assert_eq!(last.kind, ViolationKind::Other);
    assert!(last.path.is_empty());
    assert_eq!(
        last.message,
        "4000 more schema violations in this object, not listed"
    );
}

#[test]
fn a_key_or_value_of_megabytes_is_quoted_short() {
    within_deadline(|| {
        let catalog = catalog();
        let key = "resourceName".repeat(100_000);
        let mut strict = serde_json::Map::new();
        strict.insert(key.clone(), json!(1));
        strict.insert("resourceName".to_owned(), json!("v".repeat(1 << 20)));
        let object =
            shape(json!({"strict": strict, "tags": ["x".repeat(1 << 20), "x".repeat(1 << 20)]}));
        let found = catalog.validate(&object).expect("a known kind");
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(found.len(), 2, "{shown:?}");
        for text in &shown {
            assert!(text.len() < 400, "{} bytes: {}…", text.len(), &text[..200]);
        }
        assert!(matches!(
            &found[0].kind,
            ViolationKind::UnknownField { suggestion: Some(s) } if s == "resourceName"
        ));
        assert!(display_path(&found[0].path).len() < 200);
    });
}
