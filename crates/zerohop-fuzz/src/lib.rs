//! Fuzzing on stable Rust: a mutation loop over real inputs for every
//! parser of untrusted text in zerohop (the YAML loader, the CRD validator,
//! lint, the intent, `cufile.json`, every `/proc` and `/sys` parser) and
//! for the whole doctor over mutated host trees, for opening snapshot
//! archives, for `diff` and for the agent's HTTP serving path.
//!
//! `cargo test -p zerohop-fuzz` runs every target briefly;
//! `cargo run --release -p zerohop-fuzz -- --runs 1000000` is the long run
//! whose figures are recorded in `BENCHMARKS.md`. Each target starts from
//! real data (the captures in `../shared`, the repository's fixtures and
//! examples) and fails on a panic, on a run over five seconds, or on a hang.

pub mod agent_http;
pub mod archive;
pub mod engine;
pub mod mutate;
pub mod rng;
pub mod seeds;
pub mod signature;
pub mod targets;
pub mod tree;

pub use engine::{Config, Outcome};
pub use targets::{TARGETS, Target};
