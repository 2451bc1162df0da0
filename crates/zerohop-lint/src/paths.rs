//! Following paths into objects without scanning large mappings again and
//! again.
//!
//! [`Node::find`] looks a key up by scanning the mapping. A rule that reports
//! a finding for each of the n keys of one mapping (a ConfigMap of n `yes`
//! values, a resource list of n entries) would then cost O(n²). The index
//! sorts the keys of a large mapping once per run, the first time a path
//! goes through it, and answers in O(log n) after that.

use std::collections::HashMap;

use zerohop_k8s::yaml::{Entry, Found, Node, PathStep};

/// Mappings with at most this many entries are scanned: sorting would cost
/// more than it saves.
const SCANNED_ENTRIES: usize = 16;

/// Sorted key orders of the large mappings paths went through.
#[derive(Debug, Default)]
pub(crate) struct PathIndex {
    /// By the mapping node's address (nodes do not move while rules run):
    /// the indices of its entries in key order, source order among equal
    /// keys.
    sorted: HashMap<*const Node, Vec<usize>>,
}

impl PathIndex {
    /// Follows `path` from `root` as far as it goes, as [`Node::find`] does.
    pub(crate) fn find<'n>(&mut self, root: &'n Node, path: &[PathStep<'_>]) -> Found<'n> {
        let mut found = Found {
            node: root,
            key_span: None,
            depth: 0,
        };
        for step in path {
            let next = match *step {
                PathStep::Key(key) => self
                    .entry(found.node, key)
                    .map(|entry| (&entry.value, Some(entry.key_span))),
                PathStep::Index(index) => found.node.items().get(index).map(|item| (item, None)),
            };
            let Some((node, key_span)) = next else {
                break;
            };
            found = Found {
                node,
                key_span,
                depth: found.depth + 1,
            };
        }
        found
    }

    /// The entry of `key` in `node` (the last one when the key is repeated,
    /// as the API server reads it).
    fn entry<'n>(&mut self, node: &'n Node, key: &str) -> Option<&'n Entry> {
        let entries = node.entries();
        if entries.len() <= SCANNED_ENTRIES {
            return entries.iter().rev().find(|entry| entry.key == key);
        }
        let order = self
            .sorted
            .entry(std::ptr::from_ref(node))
            .or_insert_with(|| {
                let mut order: Vec<usize> = (0..entries.len()).collect();
                // Stable: equal keys stay in source order, the last one last.
                order.sort_by(|&a, &b| entries[a].key.cmp(&entries[b].key));
                order
            });
        let end = order.partition_point(|&index| entries[index].key.as_str() <= key);
        let entry = &entries[*order.get(end.checked_sub(1)?)?];
        (entry.key == key).then_some(entry)
    }
}

/// The last value of each key of one mapping, as [`Node::get`] finds it,
/// for a rule that looks up one key per entry of another mapping (each
/// request's limit, say): a large mapping's keys are hashed once, a small
/// one is scanned.
#[derive(Debug)]
pub(crate) struct Keys<'n> {
    node: Option<&'n Node>,
    /// Filled only for a mapping of more than [`SCANNED_ENTRIES`] entries.
    /// Hashed with foldhash, faster than SipHash on short keys; its seed is
    /// random per process, so a file cannot be written to make keys
    /// collide.
    large: HashMap<&'n str, &'n Node, foldhash::fast::RandomState>,
}

impl<'n> Keys<'n> {
    /// The keys of `node` (none when it is absent or not a mapping).
    pub(crate) fn new(node: Option<&'n Node>) -> Keys<'n> {
        let entries = node.map(Node::entries).unwrap_or_default();
        let mut large = HashMap::default();
        if entries.len() > SCANNED_ENTRIES {
            large.reserve(entries.len());
            // A repeated key keeps its last value, as `Node::get` does.
            large.extend(
                entries
                    .iter()
                    .map(|entry| (entry.key.as_str(), &entry.value)),
            );
        }
        Keys { node, large }
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&'n Node> {
        if self.large.is_empty() {
            self.node.and_then(|node| node.get(key))
        } else {
            self.large.get(key).copied()
        }
    }
}

#[cfg(test)]
mod tests {
    use zerohop_k8s::yaml::{Limits, load_str};

    use super::*;

    #[test]
    fn finds_what_node_find_finds_in_large_and_small_mappings() {
        let mut text = String::from("small: {a: 1, b: 2}\nlarge:\n");
        for index in (0..100).rev() {
            text.push_str(&format!("  k{index}: {index}\n"));
        }
        text.push_str("  k7: again\n  list: [x, {y: z}]\n");
        let documents = load_str(&text, &Limits::default()).expect("valid");
        let root = &documents[0];
        let mut index = PathIndex::default();
        let paths: &[&[PathStep<'_>]] = &[
            &[PathStep::Key("small"), PathStep::Key("b")],
            &[PathStep::Key("large"), PathStep::Key("k42")],
            &[PathStep::Key("large"), PathStep::Key("k7")],
            &[PathStep::Key("large"), PathStep::Key("k100")],
            &[PathStep::Key("large"), PathStep::Key("")],
            &[
                PathStep::Key("large"),
                PathStep::Key("list"),
                PathStep::Index(1),
                PathStep::Key("y"),
            ],
            &[PathStep::Key("missing"), PathStep::Key("x")],
        ];
        for path in paths {
            // Twice: the second lookup goes through the built index.
            for _ in 0..2 {
                assert_eq!(
                    index.find(root, path),
                    root.find(path.iter().copied()),
                    "{path:?}"
                );
            }
        }
        let again = index.find(root, &[PathStep::Key("large"), PathStep::Key("k7")]);
        assert_eq!(again.node.as_str(), Some("again"));
    }
}
