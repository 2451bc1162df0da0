//! The signature of what a target gave: the engine keeps an input whose
//! outcome has a signature not seen before, and names saved failures by it.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// The signature of an outcome: a hash of its summary.
pub fn signature(summary: impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    summary.hash(&mut hasher);
    hasher.finish()
}
