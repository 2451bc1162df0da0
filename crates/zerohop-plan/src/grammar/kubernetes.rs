//! Kubernetes names, labels, quantities and image references.

use serde_json::json;
use zerohop_k8s::schema::validate_object_meta;

/// Checks a DNS-1123 label (namespaces, and the names the planner joins
/// into object names and directory names), by the API server's rule as
/// `zerohop_k8s` applies it to `metadata.namespace`.
pub(crate) fn dns_label(name: &str) -> Result<(), String> {
    meta_problem(
        &json!({ "namespace": name }),
        &format!("namespace {name:?} "),
    )
}

/// Checks a DNS-1123 subdomain (a resource prefix such as `nvidia.com`),
/// by the rule the API server applies to `metadata.name`.
pub(crate) fn dns_subdomain(name: &str) -> Result<(), String> {
    meta_problem(&json!({ "name": name }), &format!("name {name:?} "))
}

/// Checks a label key and value (a node selector entry). The message
/// names the key or the value itself.
pub(crate) fn label(key: &str, value: &str) -> Result<(), String> {
    let violations = validate_object_meta(&json!({ "labels": { key: value } }), &[]);
    match violations.into_iter().next() {
        Some(violation) => Err(violation.message),
        None => Ok(()),
    }
}

/// The first problem `zerohop_k8s` finds in a one-field `metadata`, without
/// the field's own name and value that start its message, so that the
/// caller can say which intent field it is.
fn meta_problem(meta: &serde_json::Value, lead: &str) -> Result<(), String> {
    match validate_object_meta(meta, &[]).into_iter().next() {
        Some(violation) => Err(violation
            .message
            .strip_prefix(lead)
            .map_or_else(|| violation.message.clone(), str::to_owned)),
        None => Ok(()),
    }
}

/// Checks a device plugin resource name: one every device plugin and
/// webhook accepts (letters, digits and `_`, starting and ending with a
/// letter or digit, at most 63 characters; the survey's table of the
/// SR-IOV operator, Network Operator and device plugin rules).
pub(crate) fn resource_name(name: &str) -> Result<(), String> {
    let bytes = name.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err("is rejected by some device plugin or webhook".to_owned())
    }
}

/// Checks a resource quantity (`512Gi`, `1.5G`, `100m`) by the pattern the
/// API server and the operators' CRDs use:
/// `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`.
/// A negative quantity is refused as well: no size here can be below zero.
pub(crate) fn quantity(text: &str) -> Result<(), String> {
    let wrong = || Err("is not a quantity such as 512Gi".to_owned());
    let rest = text.strip_prefix('+').unwrap_or(text);
    let Some(rest) = decimal(rest) else {
        return wrong();
    };
    let suffix_ok = match rest {
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "n" | "u" | "m" | "k" | "M" | "G" | "T"
        | "P" | "E" => true,
        exponent if exponent.starts_with(['e', 'E']) => {
            let exponent = &exponent[1..];
            let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            decimal(exponent) == Some("")
        }
        _ => false,
    };
    if suffix_ok { Ok(()) } else { wrong() }
}

/// Consumes `[0-9]+(\.[0-9]*)?|\.[0-9]+` at the start of `text` and returns
/// the rest, or `None` when `text` does not start with a decimal number.
fn decimal(text: &str) -> Option<&str> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let whole = digits(text);
    let rest = &text[whole..];
    match rest.strip_prefix('.') {
        Some(fraction) => {
            let places = digits(fraction);
            (whole > 0 || places > 0).then(|| &fraction[places..])
        }
        None => (whole > 0).then_some(rest),
    }
}

/// Checks a container image reference by the grammar of the distribution
/// project's `reference` package (what the container runtimes and the
/// Network Operator webhook parse): `[domain[:port]/]path[:tag][@digest]`,
/// path components of lowercase letters and digits joined by `.`, `_`,
/// `__` or dashes, a tag of at most 128 word characters, dots and dashes,
/// a digest `algorithm:hex` of at least 32 hex digits; at most 255
/// characters of name.
pub(crate) fn image_reference(reference: &str) -> Result<(), String> {
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
        && super::image_tag(tag).is_err()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_names_come_from_the_api_server_rules() {
        assert_eq!(dns_label("ai-training"), Ok(()));
        let problem = dns_label("AI").expect_err("uppercase");
        assert!(problem.starts_with("must be a dns-1123 label"), "{problem}");
        assert!(dns_label("../x").is_err());
        assert_eq!(dns_subdomain("nvidia.com"), Ok(()));
        assert!(dns_subdomain("nvidia..com").is_err());
        assert_eq!(label("nvidia.com/gpu.present", "true"), Ok(()));
        assert_eq!(label("node-role.kubernetes.io/worker", ""), Ok(()));
        assert!(label("a b", "x").expect_err("key").starts_with("label key"));
        assert!(
            label("x", "$(reboot)")
                .expect_err("value")
                .starts_with("label value")
        );
    }

    #[test]
    fn resource_names_satisfy_every_plugin() {
        assert_eq!(resource_name("rdma_rail0"), Ok(()));
        assert!(resource_name("rdma-rail0").is_err());
        assert!(resource_name("_x").is_err());
    }

    #[test]
    fn quantities_follow_the_api_pattern() {
        for good in [
            "512Gi", "64Gi", "1", "1.5G", ".5Ki", "100m", "1e3", "+2Mi", "5.",
        ] {
            assert_eq!(quantity(good), Ok(()), "{good}");
        }
        for bad in [
            "", "Gi", "-1Gi", "1GB", "1 Gi", "1Gi\n", "1e", "1..2", "1$(x)",
        ] {
            assert!(quantity(bad).is_err(), "{bad:?}");
        }
    }

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
            assert_eq!(image_reference(good), Ok(()), "{good}");
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
            assert!(image_reference(bad).is_err(), "{bad:?}");
        }
    }
}
