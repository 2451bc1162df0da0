//! YAML loading that keeps a source span on every node.
