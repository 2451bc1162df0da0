//! The scanner of the common subset against the general parser, which is
//! the judge: wherever the scanner loads a stream, the tree (values, keys,
//! spans, YAML 1.1 notes) must be the one the parser gives, and the scanner
//! must never load what the parser refuses.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::strategy::ValueTree as _;

use super::super::{subset, tree};
use super::*;

/// Loads `text` both ways; whether the scanner took it.
fn agrees(text: &str) -> bool {
    agrees_within(text, &Limits::default())
}

fn agrees_within(text: &str, limits: &Limits) -> bool {
    let general = tree::build_general(text, limits);
    match subset::build(text, limits) {
        Some(Ok(documents)) => {
            assert_eq!(
                Ok(documents),
                general,
                "the subset scanner and the parser disagree on:\n{text}"
            );
            true
        }
        // Refused at a limit: the parser refuses it too, at the same node
        // or at a syntax error it reads ahead first.
        Some(Err(error)) => {
            assert!(
                general.is_err(),
                "the subset scanner refused ({error}) what the parser loads:\n{text}"
            );
            true
        }
        None => false,
    }
}

fn within(text: &str) {
    assert!(
        agrees(text),
        "the subset scanner left this to the parser:\n{text}"
    );
}

fn outside(text: &str) {
    assert!(!agrees(text), "the subset scanner took this:\n{text}");
}

#[test]
fn what_manifests_are_made_of_is_within_the_subset() {
    for text in [
        "",
        "# only a comment\n",
        "a: 1",
        "a: 1\n# trailing\n\n",
        "a: 1\nb:\n  c: x y   # comment\n  d:\n  - e\n  -   f\n  - g: h\n    i: j\n  -\n  - k\nl: \"q\"\nm:\n\n# c\nn: {a: 1, b: [x]}\n",
        "---\na: 1\n---\nb: 2\n...\n",
        "---\n---\na: 1\n",
        "a: 1\n---\n",
        "k: v\n...\n# after\n",
        "k: v\n...\nk: w\n",
        "-\n  a: 1\n-\n  - x\n- \n  b: 2\n",
        "- a\n- b\n",
        "a:   \nb:   # x\nc:\n-   \n- # c\n-\n",
        "a: 'it''s'\nb: \"x\"  # c\nc: ''\nd: \"\"\n",
        "a:\n  # c\n  b: 1\n\n# x\nc: 2\n",
        "spec:\n  containers:\n  - name: a\n    env:\n    - name: X\n      value: \"1\"\n    resources:\n      limits: {rdma/x: 1, hugepages-1Gi: 1Gi}\n  volumes: []\n",
        "mode: 0644\nenabled: yes\nport: 20049\nratio: 1.5\nnone: ~\nempty:\nflag: on\npci: 0000:18:00.1\nneg: -1\n",
        "\"quoted key\": v\n'single': w\ny: z\n0644: k\n",
        "a: b#c\nd: e:f\ng: -x\nh: http://example.com/a?b=c#d\n",
        "name: ünïcode # côté\nnext: wert\n\"clé\": 'vàl'\nlast: [é, {ü: ö}]\n",
        "  indented: root\n  second: key\n",
        "a:\n- x\n- y\nb:\n  - z\n",
        "a: [1, 'two', \"three\", {k: v}, []]\nb: {}\nc: [ a , b ]\n",
        "<<: {a: 1}\nb: 2\n",
        "a: 1\na: 2\n",
        "a: &x 1\nb: *x\nc: &m\n  k: v\nd: *m\ne: &s\n- 1\nf:\n  - &i a\n  - *i\n  - &j\n    k: 1\n  - &e\ng: [&f 1, *f]\nh: &x 2\ni: *x # again\nj: {k: *f, l: &g [*f]}\nk: *g\n",
        "a: &x\nb: *x\nc:\n- &y\n",
        "base: &base {cpu: 1}\npod: *base\n",
        "a: !!str 1\nb: !!int \"2\"\nc: !!bool yes\nd: !!float 3\ne: !!null ''\nf: [!!str 3, {k: !!int '4'}]\ng: !!other x\nh:\n- !!str 5\n",
        "a: \"tab\\t quote \\\" slash \\\\ \\/ \\u00e9 \\x41 \\U0001F600 \\N\\_\\L\\P\\0\\a\\b\\v\\f\\r\\e\\ \"\nb: [\"\\n\", {\"k\\\"\": \"v\"}]\n",
    ] {
        within(text);
    }
}

#[test]
fn what_the_subset_leaves_out_goes_to_the_parser() {
    for text in [
        "a: &x k: v\n",
        "a: !local 1\n",
        "a: !!map\n  k: v\n",
        "a: &x !!str 1\n",
        "a: |\n  text\n",
        "a: >-\n  text\n",
        "a: one\n  two\n",
        "a: \"one\n  two\"\n",
        "a: \"unknown \\q escape\"\n",
        "a: \"a \\ud800 surrogate\"\n",
        "a:\tb\n",
        "a: b\r\nc: d\r\n",
        "%YAML 1.2\n---\na: 1\n",
        "? a\n: b\n",
        "- - a\n",
        "[a, b]\n",
        "just a scalar\n",
        "a: [1, 2,]\n",
        "a: [1,\n  2]\n",
        "a: b: c\n",
        "a : b\n",
        "--- a\n",
        "\u{feff}a: 1\n",
    ] {
        outside(text);
    }
}

#[test]
fn errors_are_never_taken() {
    for text in [
        "a: 1\n- b\n",
        "- a\nb: 1\n",
        "a:\n  b: 1\n c: 2\n",
        "a: 1\n  b: 2\n",
        "a: 'open\n",
        "a: \"open\n",
        "a: {b: 1\n",
        "a: [b\n",
        "a: \"x\" y\n",
        "  a: 1\nb: 2\n",
        "...\n",
        "a: 1\n...\n...\n",
    ] {
        outside(text);
    }
}

#[test]
fn limits_stop_the_scanner_where_they_stop_the_parser() {
    // 64 bytes allow 8 nodes; the ninth value passes the limit.
    let small = Limits {
        max_bytes: 64,
        ..Limits::default()
    };
    let mut dense = String::from("items: [");
    for _ in 0..600 {
        dense.push_str("a,");
    }
    dense.push_str("a]\n");
    let deep = format!("k: {}1{}\n", "[".repeat(200), "]".repeat(200));
    let nested = (0..200).fold(String::new(), |text, level| {
        format!("{text}{:width$}k:\n", "", width = level)
    });
    for (text, limits, kind) in [
        (
            "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\ng: 7\nh: 8\ni: 9\n",
            small,
            LoadErrorKind::TooManyNodes(8),
        ),
        // Under the limits: loaded, not refused.
        (
            dense.as_str(),
            Limits::default(),
            LoadErrorKind::TooManyNodes(0),
        ),
        (
            deep.as_str(),
            Limits::default(),
            LoadErrorKind::TooDeep(128),
        ),
        (
            nested.as_str(),
            Limits::default(),
            LoadErrorKind::TooDeep(128),
        ),
    ] {
        assert!(
            agrees_within(text, &limits),
            "the scanner left this to the parser:\n{text}"
        );
        // Valid YAML past a limit: the same error, at the same place.
        assert_eq!(
            subset::build(text, &limits),
            Some(tree::build_general(text, &limits))
        );
        match load_str(text, &limits) {
            Err(error) => assert_eq!(error.kind, kind, "{text}"),
            Ok(_) => assert_eq!(kind, LoadErrorKind::TooManyNodes(0), "{text}"),
        }
    }
    // Invalid YAML just past the depth limit (found by the `yaml_subset`
    // fuzz target): the scanner stops at the limit; the parser, reading
    // ahead for a possible key, meets the syntax error first. Both refuse.
    let text = format!("k: {}\"a\" b{}\n", "[".repeat(130), "]".repeat(130));
    let scanned = subset::build(&text, &Limits::default());
    assert!(
        matches!(
            &scanned,
            Some(Err(LoadError {
                kind: LoadErrorKind::TooDeep(128),
                ..
            }))
        ),
        "{scanned:?}"
    );
    let general = tree::build_general(&text, &Limits::default());
    assert!(
        matches!(
            &general,
            Err(LoadError {
                kind: LoadErrorKind::Syntax(_),
                ..
            })
        ),
        "{general:?}"
    );
}

/// The YAML files of the reference data and of this repository.
fn yaml_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut roots = vec![
        repository.join("crates"),
        repository.join("examples"),
        repository.join("deploy"),
    ];
    if let Some(reference) = zerohop_testkit::shared_data::reference() {
        roots.push(reference);
    }
    if let Some(corpus) = zerohop_testkit::shared_data::corpus() {
        roots.push(corpus);
    }
    while let Some(dir) = roots.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // Not followed: the host fixtures hold sysfs-like links that
            // lead back up the tree.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if path.file_name().is_some_and(|name| name == "target") || kind.is_symlink() {
                continue;
            }
            if kind.is_dir() {
                roots.push(path);
            } else if path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_yaml_file_here_and_in_the_reference_data_loads_the_same() {
    let files = yaml_files();
    let mut taken = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if charset::first_forbidden(&text).is_some() {
            continue;
        }
        if agrees(&text) {
            taken += 1;
        }
    }
    // Most of these files are in the subset (the rest use block scalars,
    // anchors or long flow collections); a scanner that gave up on all of
    // them would compare nothing.
    assert!(
        files.len() > 300 && taken * 2 > files.len(),
        "the scanner took {taken} of {} YAML files",
        files.len()
    );
}

/// A node of a generated document.
#[derive(Debug, Clone)]
enum Gen {
    Scalar(String),
    Sequence(Vec<Gen>),
    Mapping(Vec<(String, Gen)>),
}

fn scalar_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9./-]{0,8}",
        Just("0644".to_owned()),
        Just("yes".to_owned()),
        Just("1Gi".to_owned()),
        Just("-1".to_owned()),
        Just("~".to_owned()),
        Just("a b".to_owned()),
        Just("x#y".to_owned()),
        Just("h:p".to_owned()),
        Just("'q'".to_owned()),
        Just("'it''s'".to_owned()),
        Just("\"d q\"".to_owned()),
        Just("\"\"".to_owned()),
        Just("\"esc\\\"aped\\n\\u00e9\"".to_owned()),
        Just("é".to_owned()),
        Just("[a, b]".to_owned()),
        Just("{k: v, 'l': \"m\"}".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("&a x".to_owned()),
        Just("*a".to_owned()),
        Just("*c".to_owned()),
        Just("*undefined".to_owned()),
        Just("[&b 1, *b]".to_owned()),
        Just("!!str 0644".to_owned()),
        Just("!!int '7'".to_owned()),
        Just(String::new()),
    ]
}

fn node() -> impl Strategy<Value = Gen> {
    scalar_text()
        .prop_map(Gen::Scalar)
        .prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 1..4).prop_map(Gen::Sequence),
                proptest::collection::vec(("[a-z]{1,3}|\"k e\"|'q'|0644", inner), 1..4)
                    .prop_map(Gen::Mapping),
            ]
        })
}

/// How a generated tree is written: indentation steps, sequences under
/// their key or indented, mappings compact after their dash or below it,
/// comments and blank lines.
#[derive(Debug, Clone, Copy)]
struct Style {
    /// Collections are anchored `&c` when set.
    anchored: bool,
    step: usize,
    indentless: bool,
    compact: bool,
    comments: bool,
}

fn write_node(out: &mut String, node: &Gen, indent: usize, style: Style) {
    match node {
        Gen::Scalar(text) => {
            let _ = writeln!(out, " {text}");
        }
        Gen::Sequence(items) => {
            if style.anchored {
                out.push_str(" &c");
            }
            out.push('\n');
            for item in items {
                let _ = write!(out, "{:indent$}-", "");
                match item {
                    Gen::Scalar(_) => write_node(out, item, indent + 2, style),
                    Gen::Mapping(entries) if style.compact => {
                        out.push(' ');
                        write_entries(out, entries, indent + 2, true, style);
                    }
                    _ => write_node(out, item, indent + style.step, style),
                }
            }
        }
        Gen::Mapping(entries) => {
            if style.anchored {
                out.push_str(" &c");
            }
            out.push('\n');
            write_entries(out, entries, indent, false, style);
        }
    }
}

/// A mapping's entries at `indent`, the first one already placed when
/// `inline` (after its dash).
fn write_entries(
    out: &mut String,
    entries: &[(String, Gen)],
    indent: usize,
    inline: bool,
    style: Style,
) {
    for (index, (key, value)) in entries.iter().enumerate() {
        let first_inline = inline && index == 0;
        if style.comments && !first_inline {
            let _ = writeln!(out, "{:width$}# about {key}", "", width = indent + 1);
        }
        if first_inline {
            let _ = write!(out, "{key}:");
        } else {
            let _ = write!(out, "{:indent$}{key}:", "");
        }
        let inner = match value {
            Gen::Sequence(_) if style.indentless => indent,
            _ => indent + style.step,
        };
        write_node(out, value, inner, style);
        if style.comments {
            out.push('\n');
        }
    }
}

fn document() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(node(), 1..3),
        1usize..4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(roots, step, indentless, compact, comments, anchored)| {
            let style = Style {
                anchored,
                step,
                indentless,
                compact,
                comments,
            };
            let mut out = String::new();
            for root in roots {
                // Anchors that the generated aliases `*a` and `*c` refer to.
                out.push_str("---\nfirst: &a x\nsecond: &c [1]\nthird:");
                let mut body = String::new();
                write_node(
                    &mut body,
                    &Gen::Mapping(vec![("root".to_owned(), root)]),
                    0,
                    style,
                );
                out.push_str(&body);
            }
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Generated manifests-like streams: the scanner takes most of them and
    /// builds the parser's tree.
    #[test]
    fn generated_streams_load_the_same(text in document()) {
        agrees(&text);
    }

    /// The same streams with bytes cut or inserted: mostly invalid or off
    /// the subset, where the scanner must give up, or agree.
    #[test]
    fn damaged_streams_load_the_same_or_go_to_the_parser(
        text in document(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), prop_oneof![
            Just(""), Just(" "), Just("-"), Just(":"), Just("#"), Just("'"), Just("\""),
            Just("\n"), Just("{"), Just("}"), Just("["), Just("]"), Just(","), Just("x"),
            Just("---\n"), Just("...\n"), Just("é"), Just("- "), Just(": "),
        ]), 1..4),
    ) {
        let mut text = text;
        for (index, insert) in edits {
            let mut at = index.index(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if insert.is_empty() {
                let next = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                text.replace_range(at..next, "");
            } else {
                text.insert_str(at, insert);
            }
        }
        agrees(&text);
    }
}

#[test]
fn the_generator_writes_streams_the_scanner_takes() {
    // Without this, the properties above could pass by the scanner giving
    // up on everything.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = document();
    let mut taken = 0;
    for _ in 0..200 {
        let text = strategy
            .new_tree(&mut runner)
            .expect("a generated stream")
            .current();
        if agrees(&text) {
            taken += 1;
        }
    }
    assert!(
        taken > 100,
        "the scanner took {taken} of 200 generated streams"
    );
}
