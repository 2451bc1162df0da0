//! Inside each crate, too, imports run one way: the graph of the `crate::…`
//! paths between a crate's modules has no cycle. A cycle hides which module
//! is the lower one; where a lower module needs a constant or a type of a
//! higher one, that item moves down.
//!
//! The graph is read from the sources, simply. Each file under `src/` is a
//! module (`a/b.rs` and `a/b/mod.rs` are `a::b`). The crate root (`lib.rs`,
//! `main.rs`), which declares the modules and re-exports their items, is
//! left out, and so are test modules: files named `tests.rs`, and the rest
//! of a file from a `#[cfg(test)]` on a `mod` (test modules end their
//! files). Every `crate::a::b::…` path outside a comment, the groups of
//! `use crate::{a, b::{c, d}}` included, is an edge to the longest module
//! its segments name; a path into the module's own ancestors is not (a
//! parent is its children's façade), nor one to an item of the root.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The cycles that remain, each a crate and the modules in it, to be
/// untangled and taken off this list (the test fails when one is gone, so
/// that the list only shrinks):
/// - the agent's pass result caches its own `/metrics` encoding, which is
///   made from that result;
/// - lint's workspace model counts the container requests with the
///   resource rules' helpers and clips texts with the findings sink's
///   `short`, which quotes the model's objects.
const KNOWN: &[(&str, &[&str])] = &[
    ("zerohop-agent", &["metrics", "snapshot"]),
    ("zerohop-lint", &["model", "rules::resources", "sink"]),
];

/// A crate's modules (by path) and the modules each one imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The module graph of the crate whose sources are under `src`.
fn graph(src: &Path) -> Graph {
    let mut files = BTreeMap::new();
    collect(src, src, &mut files);
    let modules: BTreeSet<String> = files.keys().cloned().collect();
    let mut graph = Graph::new();
    for (module, text) in &files {
        let mut edges = BTreeSet::new();
        for path in crate_paths(&code(text)) {
            // The longest prefix of the path that is a module.
            let target = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|prefix| modules.contains(prefix));
            if let Some(target) = target
                && target != *module
                && !module.starts_with(&format!("{target}::"))
            {
                edges.insert(target);
            }
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

/// Every module file under `dir`, by module path, with its text.
fn collect(src: &Path, dir: &Path, files: &mut BTreeMap<String, String>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(src, &path, files);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(src).unwrap().with_extension("");
        let mut segments: Vec<String> = relative
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if segments.last().is_some_and(|s| s == "tests") {
            continue;
        }
        if segments.last().is_some_and(|s| s == "mod") {
            segments.pop();
        }
        if segments == ["lib"] || segments == ["main"] {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        files.insert(segments.join("::"), text);
    }
}

/// The code of a file that counts: without comment lines, and without the
/// test module that ends it.
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut out = String::new();
    for (index, line) in lines.iter().enumerate() {
        if *line == "#[cfg(test)]"
            && lines[index + 1..]
                .iter()
                .find(|next| !next.is_empty() && !next.starts_with("#["))
                .is_some_and(|next| next.starts_with("mod ") || next.starts_with("pub mod "))
        {
            break;
        }
        if !line.starts_with("//") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The segments of every `crate::…` path in `code`, groups expanded.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let used = use_tree(rest, &[], &mut paths);
        rest = &rest[used..];
    }
    paths
}

/// Reads one use tree (`a::b::C`, `a::{b, c::D}`) at the start of `text`
/// under `prefix`, adds its paths, and says how many bytes it took.
fn use_tree(text: &str, prefix: &[String], paths: &mut Vec<Vec<String>>) -> usize {
    let mut segments = prefix.to_vec();
    let mut at = 0;
    loop {
        let rest = &text[at..];
        if let Some(group) = rest.strip_prefix('{') {
            at += 1;
            let mut inner = group;
            loop {
                let skipped = inner.len() - inner.trim_start().len();
                at += skipped;
                inner = &inner[skipped..];
                if inner.starts_with('}') {
                    return at + 1;
                }
                let used = use_tree(inner, &segments, paths);
                at += used;
                inner = &inner[used..];
                let skipped = inner.len() - inner.trim_start().len();
                at += skipped;
                inner = &inner[skipped..];
                if let Some(after) = inner.strip_prefix(',') {
                    at += 1;
                    inner = after;
                } else if !inner.starts_with('}') {
                    // Not a use tree after all: stop at what was read.
                    return at;
                }
            }
        }
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        segments.push(rest[..len].to_owned());
        at += len;
        match text[at..].strip_prefix("::") {
            Some(_) => at += 2,
            None => break,
        }
    }
    if segments.len() > prefix.len() {
        paths.push(segments);
    }
    at
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &Graph) -> Vec<BTreeSet<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(state: &mut State<'g>, node: &'g str) {
        let next = state.index.len();
        state.index.insert(node, next);
        state.low.insert(node, next);
        state.stack.push(node);
        state.on_stack.insert(node);
        for target in state.graph.get(node).into_iter().flatten() {
            let target = target.as_str();
            if !state.index.contains_key(target) {
                visit(state, target);
                let low = state.low[node].min(state.low[target]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(target) {
                let low = state.low[node].min(state.index[target]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = BTreeSet::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(member);
                component.insert(member.to_owned());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found
}

/// A cycle as a message: its modules and the imports inside it.
fn describe(graph: &Graph, cycle: &BTreeSet<String>) -> String {
    let edges: Vec<String> = cycle
        .iter()
        .flat_map(|from| {
            graph[from]
                .iter()
                .filter(|to| cycle.contains(*to))
                .map(move |to| format!("{from} -> {to}"))
        })
        .collect();
    edges.join(", ")
}

#[test]
fn every_crates_modules_import_one_way() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut problems = Vec::new();
    let mut read = 0;
    for entry in fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let graph = graph(&src);
        read += graph.len();
        let known: Vec<BTreeSet<String>> = KNOWN
            .iter()
            .filter(|(krate, _)| *krate == name)
            .map(|(_, modules)| modules.iter().map(|m| (*m).to_owned()).collect())
            .collect();
        let found = cycles(&graph);
        for cycle in &found {
            if !known.contains(cycle) {
                problems.push(format!("{name}: {}", describe(&graph, cycle)));
            }
        }
        for cycle in &known {
            if !found.contains(cycle) {
                problems.push(format!(
                    "{name}: {cycle:?} is no longer a cycle: take it off KNOWN"
                ));
            }
        }
    }
    assert!(
        read > 100,
        "only {read} modules found under {}",
        crates.display()
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_cycle_through_a_group_import_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    fs::create_dir_all(src.join("engine")).unwrap();
    fs::write(src.join("lib.rs"), "mod engine;\nmod sink;\nmod error;\n").unwrap();
    fs::write(
        src.join("engine/mod.rs"),
        "mod run;\nuse crate::{error::Error, sink::{self, Sink}};\n",
    )
    .unwrap();
    // A child reaching its parent is not an edge.
    fs::write(src.join("engine/run.rs"), "use crate::engine::Shared;\n").unwrap();
    fs::write(
        src.join("sink.rs"),
        "// crate::error in a comment is not an import\n\
         pub fn f() -> crate::engine::Shared { todo!() }\n\
         #[cfg(test)]\nmod tests {\n    use crate::error::Error;\n}\n",
    )
    .unwrap();
    fs::write(src.join("error.rs"), "pub struct Error;\n").unwrap();
    let graph = graph(src);
    assert_eq!(
        graph["engine"],
        BTreeSet::from(["error".to_owned(), "sink".to_owned()])
    );
    assert!(graph["engine::run"].is_empty(), "{graph:?}");
    assert_eq!(graph["sink"], BTreeSet::from(["engine".to_owned()]));
    assert_eq!(
        cycles(&graph),
        vec![BTreeSet::from(["engine".to_owned(), "sink".to_owned()])]
    );
}
