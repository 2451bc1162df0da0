//! `zerohop validate`: reads what the fabric tests printed and judges it.
//!
//! A node can pass every local check and the path can still be slow or
//! broken between nodes. The tests that show it (nccl-tests with
//! `NCCL_DEBUG=INFO`, perftest between two hosts) print walls of text; the
//! parsers here read them, and the judgements turn them into findings of
//! the doctor's report format, each citing the capture's line it rests on.
//!
//! * Parsers, one module per tool, each a function of text that never
//!   fails: it returns what it could read and [`notes::Notes`] of what it
//!   could not: [`nccl`], [`perftest`], [`smi_topo`], [`gds`], [`gids`],
//!   [`mounts`].
//! * [`kind::detect`] tells which tool wrote a capture, from its content.
//! * [`judge`] declares the judgements and has one entry point per kind
//!   of capture.
//! * [`compare`] sets zerohop's own GPU↔NIC topology against
//!   `nvidia-smi topo -m`.
//!
//! No I/O: the command line reads files, a cluster runner collects logs,
//! both hand text to [`judge::judge`].

pub mod compare;
pub mod gds;
pub mod gids;
pub mod judge;
pub mod kind;
pub mod mounts;
pub mod nccl;
pub mod notes;
pub mod perftest;
#[cfg(feature = "cluster")]
pub mod run;
pub mod smi_topo;
pub mod text;
pub mod verbs;
