//! GPUDirect Storage outputs: `gdscheck -p`, `gdsio` and the nvidia-fs
//! driver's statistics.

pub mod gdscheck;
pub mod gdsio;
pub mod nvfs_stats;
