//! Following paths into objects without scanning large mappings again and
//! again.
//!
//! [`Node::find`] looks a key up by scanning the mapping. A rule that reports
//! a finding for each of the n keys of one mapping (a ConfigMap of n `yes`
//! values, a resource list of n entries) would then cost O(n²). The index
//! sorts the keys of a large mapping once per run, the first time a path
//! goes through it, and answers in O(log n) after that.

use std::collections::HashMap;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as Slot;
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

/// Keys per partition in [`first_of_each_key`]: a table of this many
/// fits in a core's cache.
const KEYS_PER_PARTITION: usize = 4096;

/// For each of `len` keys (`key(index)`), the index of the first key equal
/// to it (its own index when it is the first).
///
/// For the mappings of millions of keys an input at the size limit may
/// have. One table over all the keys costs a cache miss per key; their
/// hashes are first spread over partitions small enough for each one's
/// table to stay in cache (the radix partitioning of hash joins), and the
/// keys themselves are compared only at the end, in index order. Keys hash
/// with foldhash, faster than SipHash on short keys; its seed is random per
/// process (foldhash is "minimally DoS-resistant"), so a file cannot be
/// written to make its keys collide.
pub(crate) fn first_of_each_key<'k>(len: usize, key: impl Fn(usize) -> &'k str) -> Vec<usize> {
    let hasher = foldhash::fast::RandomState::default();
    let hashes: Vec<u64> = (0..len).map(|index| hasher.hash_one(key(index))).collect();
    // The partition is taken from the middle bits of the hash: the table
    // places a key by the low bits and tags it with the top ones.
    let partitions = (len / KEYS_PER_PARTITION).next_power_of_two().min(1 << 12);
    let partition_of = |hash: u64| (hash >> 32) as usize & (partitions - 1);
    // A counting sort of the hashes by partition, in index order within
    // each.
    let mut starts = vec![0; partitions + 1];
    for &hash in &hashes {
        starts[partition_of(hash) + 1] += 1;
    }
    for partition in 0..partitions {
        starts[partition + 1] += starts[partition];
    }
    let mut next = starts.clone();
    let mut by_partition = vec![(0, 0); len];
    for (index, &hash) in hashes.iter().enumerate() {
        let slot = &mut next[partition_of(hash)];
        by_partition[*slot] = (hash, index);
        *slot += 1;
    }
    // The first key of each hash.
    let mut first: Vec<usize> = (0..len).collect();
    let mut table: HashTable<(u64, usize)> = HashTable::new();
    for bounds in starts.windows(2) {
        table.clear();
        for &(hash, index) in &by_partition[bounds[0]..bounds[1]] {
            match table.entry(hash, |&(other, _)| other == hash, |&(other, _)| other) {
                Slot::Occupied(earlier) => first[index] = earlier.get().1,
                Slot::Vacant(slot) => {
                    slot.insert((hash, index));
                }
            }
        }
    }
    // The first of each key: two keys of one hash (which no file can be
    // written to produce) are told apart by a scan.
    for (index, first) in first.iter_mut().enumerate() {
        if *first != index && key(*first) != key(index) {
            *first = (0..index)
                .find(|&other| key(other) == key(index))
                .unwrap_or(index);
        }
    }
    first
}

/// For each entry of `probes`, the index of the entry of `entries` with the
/// same key (the last one when the key is repeated, as [`Node::get`] finds
/// it), in time linear in both.
pub(crate) fn last_with_same_key(entries: &[Entry], probes: &[Entry]) -> Vec<Option<usize>> {
    // `entries` last to first, then `probes`: a probe's first equal key, if
    // it lies among `entries`, is the last entry with that key.
    let reversed = entries.len();
    let key = |index: usize| match index.checked_sub(reversed) {
        None => entries[reversed - 1 - index].key.as_str(),
        Some(probe) => probes[probe].key.as_str(),
    };
    first_of_each_key(reversed + probes.len(), key)[reversed..]
        .iter()
        .map(|&first| (first < reversed).then(|| reversed - 1 - first))
        .collect()
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

    #[test]
    fn first_of_each_key_finds_what_a_scan_finds() {
        // Enough keys for several partitions, a third of them repeated.
        let keys: Vec<String> = (0..3 * KEYS_PER_PARTITION)
            .map(|index| format!("k{}", if index % 3 == 0 { index % 101 } else { index }))
            .collect();
        let scanned: Vec<usize> = (0..keys.len())
            .map(|index| {
                keys.iter()
                    .position(|key| *key == keys[index])
                    .unwrap_or(index)
            })
            .collect();
        assert_eq!(first_of_each_key(keys.len(), |index| &keys[index]), scanned);
        assert!(
            scanned
                .iter()
                .enumerate()
                .any(|(index, &first)| first != index)
        );
    }

    #[test]
    fn last_with_same_key_finds_what_node_get_finds() {
        let text = "limits: {a: 1, b: 2, a: 3, c: 4}\nrequests: {b: 5, a: 6, d: 7, a: 8}\n";
        let documents = load_str(text, &Limits::default()).expect("valid");
        let limits = documents[0].get("limits").expect("limits");
        let requests = documents[0].get("requests").expect("requests").entries();
        let found: Vec<Option<&Node>> = last_with_same_key(limits.entries(), requests)
            .into_iter()
            .map(|index| index.map(|index| &limits.entries()[index].value))
            .collect();
        let expected: Vec<Option<&Node>> = requests
            .iter()
            .map(|request| limits.get(&request.key))
            .collect();
        assert_eq!(found, expected);
        assert_eq!(found.iter().filter(|found| found.is_some()).count(), 3);
    }
}
