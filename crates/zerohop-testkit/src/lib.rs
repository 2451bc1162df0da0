//! What zerohop's test suites share. This crate is a development
//! dependency only: no product crate depends on it, so nothing in it ships
//! in the binary.
//!
//! * [`shared_data`] finds the data written by others that the tests read
//!   in place from `../shared` (real captures, upstream CRDs), and unpacks
//!   captures into temporary roots.
//! * [`prerequisite`] holds the one rule for a test that cannot run here:
//!   in CI it fails, in a user's clone it says why it skipped.

pub mod prerequisite;
pub mod shared_data;
