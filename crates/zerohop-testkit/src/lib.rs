//! Test doubles shared by zerohop's test suites. Only ever a
//! development dependency: the released binary holds none of this (a test
//! on the dependency graph, `crates/zerohop/tests/architecture.rs`, keeps
//! it so).

pub mod fake_api_server;
