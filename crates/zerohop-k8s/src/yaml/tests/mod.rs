use proptest::prelude::*;
use serde_json::json;

use super::*;

mod subset;

fn load(text: &str) -> Vec<Node> {
    load_str(text, &Limits::default()).expect("valid yaml")
}

fn load_err(text: &str) -> LoadError {
    load_str(text, &Limits::default()).expect_err("invalid yaml")
}

#[test]
fn every_node_and_key_has_a_span() {
    let docs = load(
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: a\n      image: \"x\"\n",
    );
    let root = &docs[0];
    let found = root.find([
        PathStep::Key("spec"),
        PathStep::Key("containers"),
        PathStep::Index(0),
        PathStep::Key("image"),
    ]);
    assert_eq!(found.depth, 4);
    assert_eq!(
        found.node.span.start,
        Mark {
            line: 6,
            column: 14
        }
    );
    assert_eq!(
        found.key_span.map(|s| s.start),
        Some(Mark { line: 6, column: 7 })
    );
    assert_eq!(found.node.as_str(), Some("x"));
}

#[test]
fn a_missing_path_stops_at_the_deepest_node() {
    let docs = load("spec:\n  a: 1\n");
    let found = docs[0].find([
        PathStep::Key("spec"),
        PathStep::Key("b"),
        PathStep::Key("c"),
    ]);
    assert_eq!(found.depth, 1);
    assert_eq!(found.span().start, Mark { line: 1, column: 1 });
}

#[test]
fn multi_document_streams_and_lists_expand() {
    let docs = load(
        "---\nkind: A\n---\n# only a comment\n---\nkind: List\nitems:\n  - kind: B\n  - kind: C\n...\n",
    );
    let objects = objects(&docs);
    let kinds: Vec<_> = objects
        .iter()
        .filter_map(|o| o.get("kind")?.as_str())
        .collect();
    assert_eq!(kinds, ["A", "B", "C"]);
}

#[test]
fn yaml_1_1_scalars_are_read_as_kubernetes_reads_them() {
    let docs = load("mode: 0644\nquoted: \"0644\"\nflag: on\nspoof: 'on'\npci: 0000:18:00.1\n");
    let root = &docs[0];
    assert_eq!(root.get("mode").and_then(Node::as_i64), Some(420));
    assert_eq!(
        root.get("mode")
            .and_then(|n| n.yaml11.as_deref())
            .map(|r| r.kind),
        Some(Yaml11::Octal)
    );
    assert_eq!(root.get("quoted").and_then(Node::as_str), Some("0644"));
    assert_eq!(root.get("flag").and_then(Node::as_bool), Some(true));
    assert_eq!(root.get("spoof").and_then(Node::as_str), Some("on"));
    assert_eq!(
        root.get("pci")
            .and_then(|n| n.yaml11.as_deref())
            .map(|r| r.kind),
        Some(Yaml11::Sexagesimal)
    );
}

#[test]
fn tags_override_resolution() {
    let docs = load("a: !!str 0644\nb: !!int \"12\"\nc: !custom yes\n");
    assert_eq!(docs[0].to_json(), json!({"a": "0644", "b": 12, "c": true}));
}

#[test]
fn json_conversion_keeps_the_last_duplicate_and_merges() {
    let docs = load("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nd: 1\nd: 2\n");
    assert_eq!(
        docs[0].to_json(),
        json!({"base": {"x": 1, "y": 2}, "m": {"y": 3, "x": 1}, "d": 2})
    );
    assert_eq!(docs[0].entries().iter().filter(|e| e.key == "d").count(), 2);
}

/// Collections far past the size from which the builder gathers their
/// children in a vector of their own (4,096), nested in and beside small
/// ones, keep every child, in order, with its span, its merge keys and its
/// repeated keys.
#[test]
fn wide_collections_keep_their_children_in_order() {
    const WIDE: usize = 10_000;
    let mut text = String::from("before: 1\nbase: &b {x: 1}\nwide:\n  <<: *b\n");
    let mut expected_wide = serde_json::Map::new();
    for i in 0..WIDE {
        text.push_str(&format!("  k{i}: [{i}, {{n: {i}}}]\n"));
        expected_wide.insert(format!("k{i}"), json!([i, {"n": i}]));
    }
    text.push_str("  k0: last\nitems:\n");
    expected_wide.insert("k0".to_owned(), json!("last"));
    expected_wide.insert("x".to_owned(), json!(1));
    let mut expected_items = Vec::new();
    for i in 0..WIDE {
        text.push_str(&format!("  - {{i: {i}, s: [a, b]}}\n"));
        expected_items.push(json!({"i": i, "s": ["a", "b"]}));
    }
    text.push_str("after: 2\n");
    let docs = load(&text);
    assert_eq!(
        docs[0].to_json(),
        json!({
            "before": 1,
            "base": {"x": 1},
            "wide": expected_wide,
            "items": expected_items,
            "after": 2,
        })
    );
    let wide = docs[0].get("wide").expect("wide");
    // The mapping's own entries, the repeated `k0` last, then the merged `x`.
    assert_eq!(wide.entries().len(), WIDE + 2);
    assert_eq!(wide.entries().first().map(|e| e.key.as_str()), Some("k0"));
    let last_own = &wide.entries()[WIDE];
    assert_eq!(
        (last_own.key.as_str(), last_own.key_span.start.line),
        ("k0", 5 + WIDE as u32)
    );
    let items = docs[0].get("items").expect("items").items();
    assert_eq!(items.len(), WIDE);
    assert_eq!(items[WIDE - 1].span.start.line, 6 + 2 * WIDE as u32);
}

#[test]
fn json_files_load_with_spans() {
    let docs = load("{\n  \"kind\": \"Pod\",\n  \"spec\": {\"x\": [1, 2]}\n}\n");
    let found = docs[0].find([
        PathStep::Key("spec"),
        PathStep::Key("x"),
        PathStep::Index(1),
    ]);
    assert_eq!(found.node.as_i64(), Some(2));
    assert_eq!(
        found.node.span.start,
        Mark {
            line: 3,
            column: 21
        }
    );
}

#[test]
fn tabs_are_an_error_with_a_position() {
    let err = load_err("a:\n\tb: 1\n");
    assert!(matches!(err.kind, LoadErrorKind::Syntax(_)), "{err}");
    assert_eq!(err.at.line, 2);
}

#[test]
fn a_quoted_scalar_may_continue_left_of_its_key_as_in_go() {
    // goyaml.v2 (kubectl, sigs.k8s.io/yaml) does not check the indentation
    // of a quoted scalar's continuation lines; the closing `}'` at column 1
    // below is how upstream examples write a CNI config.
    let docs = load("spec:\n  config: '{\n    \"type\": \"sriov\"\n}'\n");
    let config = docs[0].get("spec").and_then(|s| s.get("config"));
    assert_eq!(
        config.and_then(Node::as_str),
        Some("{ \"type\": \"sriov\" }")
    );
}

#[test]
fn invalid_yaml_is_an_error_with_a_position() {
    let err = load_err("a: [1, 2\nb: 3\n");
    assert!(matches!(err.kind, LoadErrorKind::Syntax(_)));
    assert!(err.at.line >= 2, "{err}");
}

#[test]
fn binary_input_is_not_text() {
    let err = load_bytes(b"kind: Pod\nname: \xff\xfe\x00", &Limits::default()).expect_err("binary");
    assert_eq!(err.kind, LoadErrorKind::NotText);
    assert_eq!(err.at, Mark { line: 2, column: 7 });
    let err =
        load_bytes(b"kind: Pod\x00\x01\x02", &Limits::default()).expect_err("control characters");
    assert_eq!(err.kind, LoadErrorKind::ControlCharacter('\0'));
    assert_eq!(
        err.at,
        Mark {
            line: 1,
            column: 10
        }
    );
}

#[test]
fn oversized_input_is_refused_before_parsing() {
    let limits = Limits {
        max_bytes: 16,
        ..Limits::default()
    };
    let err = load_bytes(&[b'a'; 17], &limits).expect_err("too large");
    assert_eq!(
        err.kind,
        LoadErrorKind::TooLarge {
            size: 17,
            limit: 16
        }
    );
}

#[test]
fn alias_bombs_are_stopped() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10 {
        let prev = level - 1;
        text.push_str(&format!("a{level}: &a{level} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"));
    }
    let err = load_err(&text);
    assert_eq!(
        err.kind,
        LoadErrorKind::AliasBomb(Limits::default().max_alias_nodes)
    );
    assert!(err.at.line > 1);
}

#[test]
fn deep_nesting_is_stopped() {
    let text = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let err = load_err(&text);
    assert_eq!(err.kind, LoadErrorKind::TooDeep(128));
    // Far deeper input is refused by the parser's own recursion limit.
    assert!(load_str(&"[".repeat(100_000), &Limits::default()).is_err());
}

#[test]
fn unknown_anchors_and_complex_keys_are_errors() {
    // The parser itself rejects an undefined alias; either way it is an error.
    assert!(load_str("a: *nope\n", &Limits::default()).is_err());
    assert_eq!(load_err("? [a]\n: 1\n").kind, LoadErrorKind::ComplexKey);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_loader_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let limits = Limits { max_bytes: 4096, max_depth: 16, max_alias_nodes: 1000 };
        let _ = load_bytes(&bytes, &limits);
    }

    #[test]
    fn the_loader_never_panics_on_yaml_like_text(text in "[-:\\[\\]{}&*!|>'\"#,?\\n\\t a-c0-9<.~]{0,256}") {
        let limits = Limits { max_bytes: 4096, max_depth: 16, max_alias_nodes: 1000 };
        if let Ok(docs) = load_str(&text, &limits) {
            for doc in &docs {
                let _ = doc.to_json();
            }
            let _ = objects(&docs);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_control_character_anywhere_is_the_error_at_its_place(
        text in "[-:\\[\\]{}'\"#,\\n a-c0-9é]{0,64}",
        at in 0usize..65,
        control in prop_oneof![0u32..9, 11u32..13, 14u32..32, 127u32..133, 134u32..160],
    ) {
        let control = char::from_u32(control).expect("a valid character");
        let at = text.char_indices().nth(at).map_or(text.len(), |(offset, _)| offset);
        let hostile = format!("{}{control}{}", &text[..at], &text[at..]);
        let err = load_str(&hostile, &Limits::default()).expect_err("refused");
        prop_assert_eq!(err.kind, LoadErrorKind::ControlCharacter(control));
        prop_assert_eq!(err.at, mark_after(&text[..at]));
    }

    #[test]
    fn a_finder_agrees_with_find(
        text in "[-:\\[\\]{}, \\na-c0-2]{0,128}",
        path in proptest::collection::vec(prop_oneof![
            (0usize..3).prop_map(Step::Index),
            "[a-c0-2]{1,2}".prop_map(Step::Key),
        ], 0..5),
    ) {
        let limits = Limits { max_bytes: 4096, max_depth: 16, max_alias_nodes: 1000 };
        if let Ok(docs) = load_str(&text, &limits) {
            let steps: Vec<PathStep<'_>> = path.iter().map(Step::as_step).collect();
            for doc in &docs {
                prop_assert_eq!(Finder::new(doc).find(steps.clone()), doc.find(steps.clone()));
            }
        }
    }
}

/// An owned [`PathStep`], for generating paths.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

impl Step {
    fn as_step(&self) -> PathStep<'_> {
        match self {
            Step::Key(key) => PathStep::Key(key),
            Step::Index(index) => PathStep::Index(*index),
        }
    }
}
