//! The engine behind `zerohop bench`: reads files or block devices through
//! io_uring (fixed buffers, registered files, optional SQPOLL/IOPOLL) or a
//! pread thread pool, into aligned or hugepage buffers, hands each block to
//! a sink (host memory, a GPU through the CUDA driver API, or cuFile, which
//! reads into GPU memory itself; both loaded at run time), and measures
//! throughput, latency percentiles and CPU cost like fio.
//!
//! Every capability is probed at run time; a missing one becomes a fallback
//! or a `skipped` result with its reason, never a panic. The host's `/proc`
//! and `/sys` are read through a [`zerohop_host::HostRoot`].

pub mod buffers;
pub mod compare;
pub mod config;
pub mod engine;
pub mod env;
pub mod gpu;
pub mod pattern;
pub mod plan;
pub mod prepare;
pub mod report;
pub mod segments;
mod sink;
pub mod stats;
pub mod sys;
pub mod target;
pub mod units;
mod worker;

pub use config::{
    AccessPattern, Amount, CachePolicy, EngineKind, NumaPolicy, ReadConfig, SinkKind,
};
pub use engine::{Control, RunError, run_read, run_read_in};
pub use report::{RunReport, RunStatus};
pub use target::InputError;
