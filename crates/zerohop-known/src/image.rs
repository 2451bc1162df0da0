//! Container image references, by the grammar of the distribution
//! project's `reference` package (`reference/regexp.go`), which the
//! container runtimes, the registries and the operators' webhooks parse.
//!
//! Each check returns what is wrong as a lowercase fragment that follows the
//! value in a diagnostic.

/// Checks a container image reference by the grammar of the distribution
/// project's `reference` package (what the container runtimes and the
/// Network Operator webhook parse): `[domain[:port]/]path[:tag][@digest]`,
/// path components of lowercase letters and digits joined by `.`, `_`,
/// `__` or dashes, a tag of at most 128 word characters, dots and dashes,
/// a digest `algorithm:hex` of at least 32 hex digits; at most 255
/// characters of name.
pub fn reference(reference: &str) -> Result<(), String> {
    let wrong = |what: &str| Err(format!("is not an image reference: {what}"));
    let (name_tag, digest) = match reference.split_once('@') {
        Some((name_tag, digest)) => (name_tag, Some(digest)),
        None => (reference, None),
    };
    if let Some(digest) = digest
        && !digest_ok(digest)
    {
        return wrong("the digest is not algorithm:hex (sha256:…)");
    }
    let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_tag[last_slash..].rfind(':') {
        Some(colon) => (
            &name_tag[..last_slash + colon],
            Some(&name_tag[last_slash + colon + 1..]),
        ),
        None => (name_tag, None),
    };
    if let Some(tag) = tag
        && self::tag(tag).is_err()
    {
        return wrong("the tag has characters other than letters, digits, '_', '.' and '-'");
    }
    if name.is_empty() {
        return wrong("no repository name");
    }
    if name.len() > 255 {
        return wrong("the repository name is longer than 255 characters");
    }
    let mut components: Vec<&str> = name.split('/').collect();
    let first = components[0];
    if components.len() > 1
        && (first.contains(['.', ':'])
            || first == "localhost"
            || first.bytes().any(|b| b.is_ascii_uppercase()))
    {
        if !registry_ok(first) {
            return wrong("the registry is not host[:port]");
        }
        components.remove(0);
    }
    if components.iter().all(|c| path_component_ok(c)) {
        Ok(())
    } else {
        wrong(
            "repository path components are lowercase letters and digits, joined by '.', '_', '__' or '-'",
        )
    }
}

/// `alpha-numeric [separator alpha-numeric]*` with `[a-z0-9]+` and the
/// separators `_`, `.`, `__` and one or more `-`.
fn path_component_ok(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !bytes.first().is_some_and(alnum) || !bytes.last().is_some_and(alnum) {
        return false;
    }
    let mut index = 0;
    while index < bytes.len() {
        if alnum(&bytes[index]) {
            index += 1;
            continue;
        }
        let start = index;
        while index < bytes.len() && !alnum(&bytes[index]) {
            index += 1;
        }
        let separator = &component[start..index];
        let ok = matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// `host[:port]`: DNS components of letters, digits and inner dashes, an
/// IPv4 address, or a bracketed IPv6 address.
fn registry_ok(registry: &str) -> bool {
    let (host, port) = if let Some(rest) = registry.strip_prefix('[') {
        let Some((address, after)) = rest.split_once(']') else {
            return false;
        };
        if address.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after.strip_prefix(':') {
            Some(port) => ("", Some(port)),
            None if after.is_empty() => ("", None),
            None => return false,
        }
    } else {
        match registry.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (registry, None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = registry.starts_with('[')
        || (!host.is_empty()
            && host.split('.').all(|part| {
                let bytes = part.as_bytes();
                !bytes.is_empty()
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
                    && bytes[0] != b'-'
                    && bytes[bytes.len() - 1] != b'-'
            }));
    port_ok && host_ok
}

/// `algorithm:hex`: algorithm components `[A-Za-z][A-Za-z0-9]*` joined by
/// `+`, `.`, `_` or `-`, and at least 32 hex digits.
fn digest_ok(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['+', '.', '_', '-']).all(|part| {
        part.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
            && part.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    algorithm_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Checks an image tag (`v26.7.0`, `25.08-py3`): a word character, then at
/// most 127 word characters, dots and dashes (`[\w][\w.-]{0,127}`, the
/// distribution `reference` grammar).
pub fn tag(tag: &str) -> Result<(), String> {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let bytes = tag.as_bytes();
    let ok = bytes.first().is_some_and(word)
        && bytes.len() <= 128
        && bytes.iter().all(|b| word(b) || *b == b'.' || *b == b'-');
    if ok {
        Ok(())
    } else {
        Err("is not an image tag (letters, digits, '_', '.' and '-', at most 128)".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_follow_the_distribution_grammar() {
        for good in [
            "nvcr.io/nvidia/pytorch:25.08-py3",
            "ubuntu",
            "library/ubuntu:24.04",
            "localhost:5000/train/job__x:v1",
            "[fd00::1]:5000/x/y",
            "registry.example.com/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "quay.io/a---b/c.d_e",
        ] {
            assert_eq!(reference(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "Ubuntu",
            "nvcr.io/nvidia/pytorch:25.08 py3",
            "x:$(reboot)",
            "a/b@sha256:abc",
            "-x",
            "a//b",
            "nvcr.io:port/x",
            "x\ny",
            "a/b:",
        ] {
            assert!(reference(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn image_tags() {
        assert_eq!(tag("v26.7.0"), Ok(()));
        assert_eq!(tag("25.08-py3"), Ok(()));
        for bad in ["", ".x", "-x", "v1 2", "v1;x", &"a".repeat(129)] {
            assert!(tag(bad).is_err(), "{bad:?}");
        }
    }
}
