//! The rules, one module per area. Each rule is one `declare_rule!` and the
//! function that applies it.

pub(crate) mod gpu_operator;
pub(crate) mod input;
pub(crate) mod machine_config;
pub(crate) mod network_operator;
pub(crate) mod schema;
pub(crate) mod sriov;
pub(crate) mod storage;
pub(crate) mod topology;
pub(crate) mod workloads;

mod container_env;
mod facts;
pub(crate) mod images;
pub(crate) mod nccl;
pub(crate) mod networks;
pub(crate) mod resources;
