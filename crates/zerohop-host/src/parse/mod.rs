//! Parsers of `/proc` and `/sys` formats: pure functions of text that never
//! panic, whatever the input (each is property-tested).

pub mod cmdline;
pub mod cpuset;
pub mod meminfo;
pub mod modules;
pub mod selected;
