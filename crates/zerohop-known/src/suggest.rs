//! "Did you mean" suggestions by edit distance.

/// A prefix match between words longer than this is not measured by edit
/// distance, whose cost grows with the product of the two lengths: a key of
/// megabytes must not cost a matrix of terabytes.
const MEASURED_CHARS: usize = 64;

/// The candidate closest to `word`, when it is close enough to be a likely
/// misspelling: the same word in another case, an edit distance of at most
/// a third of the word's length (at least 1, at most 3), or one word being
/// a prefix of the other (`metaPluginsConfig` for `metaPlugins`). The
/// smallest edit distance wins; ties go to the first candidate.
///
/// A candidate whose length differs from the word's by more than the limit
/// is only considered as a prefix, and for a prefix of a word longer than 64
/// characters the difference in length stands in for the edit distance (it
/// is its lower bound). So the edit distance is only measured between words
/// of nearly the same length, at a cost bounded by the candidate's length:
/// a long `word` costs time linear in its length per candidate.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let length = word.chars().count();
    let limit = (length / 3).clamp(1, 3);
    let lower = word.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == word {
            continue;
        }
        let candidate_length = candidate.chars().count();
        let difference = length.abs_diff(candidate_length);
        let other = candidate.to_lowercase();
        let prefix = {
            let (short, long) = if other.len() < lower.len() {
                (&other, &lower)
            } else {
                (&lower, &other)
            };
            short.len() >= 4 && long.starts_with(short.as_str())
        };
        let distance = if other == lower {
            0
        } else if difference > limit && !prefix {
            // The distance is at least the difference: too far already.
            continue;
        } else if difference > limit && length.max(candidate_length) > MEASURED_CHARS {
            difference
        } else {
            strsim::damerau_levenshtein(word, candidate)
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

    #[test]
    fn long_words_are_judged_without_measuring_them() {
        let long = "resourceName".repeat(100_000);
        assert_eq!(
            closest(&long, ["resourceName", "numVfs"]),
            Some("resourceName")
        );
        let other = "x".repeat(1_000_000);
        assert_eq!(closest(&other, ["resourceName", "numVfs"]), None);
        assert_eq!(closest(&other, [other.as_str()]), None);
        let near = format!("{}y", "x".repeat(199));
        let far = "x".repeat(200);
        assert_eq!(closest(&near, [far.as_str()]), Some(far.as_str()));
    }
}
