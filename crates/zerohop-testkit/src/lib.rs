//! What zerohop's test suites share. This crate is a development
//! dependency only: no product crate depends on it, so nothing in it ships
//! in the binary (a test on the dependency graph,
//! `crates/zerohop/tests/architecture.rs`, keeps it so).
//!
//! * [`shared_data`] finds the data written by others that the tests read
//!   in place from `../shared` (real captures, upstream CRDs), and unpacks
//!   captures into temporary roots.
//! * [`prerequisite`] holds the one rule for a test that cannot run here:
//!   in CI it fails, in a user's clone it says why it skipped.
//! * `control_plane` (feature `control-plane`) starts the real
//!   kube-apiserver and etcd, built from their pinned upstream modules, for
//!   everything zerohop does against a cluster.
//! * `fake_api_server` (feature `fake-api-server`) is an in-memory
//!   Kubernetes API server for what a real one cannot be made to do on
//!   demand: 429 and 503 with `Retry-After`, slow and half-written answers.

#[cfg(feature = "control-plane")]
pub mod control_plane;
#[cfg(feature = "fake-api-server")]
pub mod fake_api_server;
pub mod prerequisite;
pub mod shared_data;
