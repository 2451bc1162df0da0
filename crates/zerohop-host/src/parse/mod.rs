//! Parsers of `/proc` and `/sys` formats: pure functions of text that never
//! panic, whatever the input (each is property-tested).

pub mod cmdline;
pub mod cpuset;
pub mod jsonc;
pub mod kmsg;
pub mod meminfo;
pub mod modules;
pub mod mountinfo;
pub mod mountstats;
pub mod netaddr;
pub mod nvidia;
pub mod rdma;
pub mod selected;
