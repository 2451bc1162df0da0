//! Validation of Kubernetes objects against CRD `openAPIV3Schema`s.
//!
//! The rules follow what the API server (and kubeconform) apply to a
//! structural schema: types, `properties`, `required`, `additionalProperties`,
//! `items`, `enum`, `pattern`, numeric and length bounds, `nullable`,
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string`,
//! `x-kubernetes-embedded-resource`, list types and the `allOf`/`anyOf`/
//! `oneOf`/`not` junctors. Unknown fields are violations (the API server
//! prunes them silently, or rejects them under strict field validation), each
//! with a "did you mean" suggestion when a declared field is close.
//!
//! The `status` of a version with the status subresource is checked for
//! unknown fields only: the server resets it on create and update through
//! the main resource before it validates the object, but refuses an unknown
//! field there under strict field validation. Of the string `format`s the
//! server checks, `date-time` and `date` are checked as it checks them.
//!
//! What is deliberately not checked: CEL rules (`x-kubernetes-validations`),
//! the other `format`s (lenient, as kubeconform; no reference CRD uses one),
//! and `pattern`s the `regex` crate cannot compile (ECMA-only syntax such as
//! look-around); the latter are listed by [`CrdCatalog::skipped`].

mod catalog;
mod object_meta;
mod validate;
mod violation;

pub use catalog::{CrdCatalog, SchemaError, SkippedConstraint, UnknownKind};
pub use object_meta::validate_object_meta;
pub use violation::{PathSegment, SchemaViolation, ViolationKind, display_path};

#[cfg(test)]
mod tests;
