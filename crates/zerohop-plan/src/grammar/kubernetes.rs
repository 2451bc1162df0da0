//! Kubernetes names and labels.

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

/// Checks a CSI driver name, as the API server checks a `CSIDriver`'s:
/// at most 63 characters, a DNS-1123 subdomain once lowercased
/// (kubernetes v1.34 `pkg/apis/storage/validation/validation.go`,
/// `ValidateCSIDriverName`).
pub(crate) fn csi_driver_name(name: &str) -> Result<(), String> {
    if name.len() > 63 {
        return Err("is longer than 63 characters".to_owned());
    }
    dns_subdomain(&name.to_ascii_lowercase())
        .map_err(|problem| format!("is no csi driver name: {problem}"))
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
        assert_eq!(csi_driver_name("Local.CSI.example.com"), Ok(()));
        assert!(csi_driver_name("a/b").is_err());
        assert!(csi_driver_name(&"a".repeat(64)).is_err());
        assert_eq!(label("nvidia.com/gpu.present", "true"), Ok(()));
        assert_eq!(label("node-role.kubernetes.io/worker", ""), Ok(()));
        assert!(label("a b", "x").expect_err("key").starts_with("label key"));
        assert!(
            label("x", "$(reboot)")
                .expect_err("value")
                .starts_with("label value")
        );
    }
}
