//! Many path lookups into one document, each in time independent of how
//! many keys its mappings have.

use std::cell::RefCell;
use std::collections::HashMap;

use super::path::follow;
use super::{Entry, Found, Node, PathStep};

/// Mappings with at most this many entries are searched directly: below it
/// a scan is as fast as a hash lookup and needs no memory.
const SCANNED_ENTRIES: usize = 16;

/// Finds paths in one document, the way [`Node::find`] does, for callers
/// that look up many paths (one per schema violation, say). [`Node::find`]
/// scans a mapping's entries, so looking up one key per entry of a mapping
/// with 500,000 keys would take 500,000² steps; a `Finder` indexes the keys
/// of each large mapping the first time a path goes through it, so the same
/// lookups take linear time in all.
#[derive(Debug)]
pub struct Finder<'a> {
    root: &'a Node,
    /// Per large mapping reached (by address), each key's last entry index.
    indexes: RefCell<HashMap<*const Node, HashMap<&'a str, usize>>>,
}

impl<'a> Finder<'a> {
    /// A finder over the document (or object) `root`.
    pub fn new(root: &'a Node) -> Finder<'a> {
        Finder {
            root,
            indexes: RefCell::new(HashMap::new()),
        }
    }

    /// Follows `path` from the root as far as it goes, with the same result
    /// as [`Node::find`].
    pub fn find<'p>(&self, path: impl IntoIterator<Item = PathStep<'p>>) -> Found<'a> {
        follow(self.root, path, |node, key| self.entry(node, key))
    }

    /// The last entry named `key` in `node`'s entries.
    fn entry(&self, node: &'a Node, key: &str) -> Option<&'a Entry> {
        let entries = node.entries();
        if entries.len() <= SCANNED_ENTRIES {
            return node.entry(key);
        }
        let mut indexes = self.indexes.borrow_mut();
        let index = indexes.entry(std::ptr::from_ref(node)).or_insert_with(|| {
            let mut index = HashMap::with_capacity(entries.len());
            for (position, entry) in entries.iter().enumerate() {
                // A repeated key keeps its last position, as `Node::get` does.
                index.insert(entry.key.as_str(), position);
            }
            index
        });
        index.get(key).and_then(|&position| entries.get(position))
    }
}
