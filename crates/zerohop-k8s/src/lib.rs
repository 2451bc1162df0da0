//! Kubernetes manifests for zerohop: YAML loading that keeps file, line and
//! column for every node, and validation of objects against the operators'
//! real CRD schemas (`openAPIV3Schema`), strict on unknown fields.

pub mod schema;
pub mod yaml;
