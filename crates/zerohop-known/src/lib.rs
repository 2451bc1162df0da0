//! What zerohop knows about the world, each fact written exactly once.
//!
//! This crate is a leaf: no I/O and no dependency on the rest of the
//! workspace. The host layer, the doctor, the linter, the planner and the
//! bench engine all take their names, grammars and escaping rules from here,
//! so that two commands never judge the same thing by two different copies.
//! Every table and grammar names the document or source file it follows.

pub mod cpuset;
pub mod cufile;
pub mod gpu_fabric;
pub mod image;
pub mod jsonc;
pub mod kernel_log;
pub mod memlock;
pub mod names;
pub mod nccl;
pub mod nic;
pub mod operators;
pub mod pci;
pub mod quantity;
pub mod rdma_counters;
pub mod resource_name;
pub mod roce;
pub mod shell;
pub mod storage;
pub mod suggest;
pub mod systemd;
pub mod topology;
pub mod xid;
pub mod zerohop_api;
