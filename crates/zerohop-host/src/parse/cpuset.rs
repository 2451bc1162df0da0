//! CPU lists and `isolcpus=`: the grammar of [`zerohop_known::cpuset`],
//! which the linter shares.

pub use zerohop_known::cpuset::{CpuSet, CpuSetError, Isolcpus, MAX_CPU};
