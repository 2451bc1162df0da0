//! `/proc/meminfo` and the per-node `meminfo` files.

use std::collections::BTreeMap;

/// Fields of a meminfo file. Values in kB are kept in KiB; counts (such as
/// `HugePages_Total`) are kept as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Meminfo(pub BTreeMap<String, u64>);

impl Meminfo {
    /// Parses `Key:   value [kB]` lines; lines that do not fit are skipped.
    /// Per-node files prefix each line with `Node N `, which is dropped.
    pub fn parse(text: &str) -> Meminfo {
        let mut fields = BTreeMap::new();
        for line in text.lines() {
            let line = strip_node_prefix(line);
            let Some((key, rest)) = line.split_once(':') else {
                continue;
            };
            let Some(number) = rest.split_whitespace().next() else {
                continue;
            };
            if let Ok(value) = number.parse::<u64>() {
                fields.insert(key.trim().to_owned(), value);
            }
        }
        Meminfo(fields)
    }

    /// A field's value.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.get(key).copied()
    }
}

fn strip_node_prefix(line: &str) -> &str {
    let Some(rest) = line.strip_prefix("Node ") else {
        return line;
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.trim_start()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn fields_and_node_prefix() {
        let m = Meminfo::parse(
            "MemTotal:       16 kB\nHugePages_Total:    4\nHugepagesize:    2048 kB\nbogus\n",
        );
        assert_eq!(m.get("MemTotal"), Some(16));
        assert_eq!(m.get("HugePages_Total"), Some(4));
        assert_eq!(m.get("Hugepagesize"), Some(2048));
        let n = Meminfo::parse("Node 1 HugePages_Free:     3\n");
        assert_eq!(n.get("HugePages_Free"), Some(3));
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,300}") {
            let _ = Meminfo::parse(&text);
        }
    }
}
