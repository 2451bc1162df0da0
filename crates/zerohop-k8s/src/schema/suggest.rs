//! "Did you mean" suggestions by edit distance.

/// The candidate closest to `word`, when it is close enough to be a likely
/// misspelling: the same word in another case, an edit distance of at most
/// a third of the word's length (at least 1, at most 3), or one word being
/// a prefix of the other (`metaPluginsConfig` for `metaPlugins`). The
/// smallest edit distance wins; ties go to the first candidate.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    let lower = word.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == word {
            continue;
        }
        let distance = if candidate.to_lowercase() == lower {
            0
        } else {
            strsim::damerau_levenshtein(word, candidate)
        };
        let prefix = {
            let other = candidate.to_lowercase();
            let (short, long) = if other.len() < lower.len() {
                (&other, &lower)
            } else {
                (&lower, &other)
            };
            short.len() >= 4 && long.starts_with(short.as_str())
        };
        if (distance <= limit || prefix) && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_close_spellings_only() {
        assert_eq!(closest("pfName", ["pfNames", "vendor"]), Some("pfNames"));
        assert_eq!(
            closest("resourcename", ["resourceName"]),
            Some("resourceName")
        );
        assert_eq!(closest("isrdma", ["isRdma", "mtu"]), Some("isRdma"));
        assert_eq!(closest("foo", ["vendor", "deviceID"]), None);
        assert_eq!(
            closest("metaPluginsConfig", ["metaPlugins", "vlan"]),
            Some("metaPlugins")
        );
        assert_eq!(closest("nic", ["nicSelector"]), None);
        assert_eq!(closest("", ["a"]), Some("a"));
        assert_eq!(closest("x", std::iter::empty()), None);
    }
}
