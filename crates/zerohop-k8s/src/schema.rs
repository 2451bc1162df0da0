//! Validation of Kubernetes objects against CRD `openAPIV3Schema`s.
