//! The zerohop doctor: checks of every layer of the zero-copy data path,
//! judged from a host's [`Facts`](zerohop_host::Facts).
//!
//! A check is one [`declare_check!`] declaration whose doc comment is its
//! documentation; [`checks::CHECKS`] lists them in deploy order. Checks are
//! pure functions of the facts and the user's [`Profile`]; the [`runner`]
//! orders them by prerequisite, reports `blocked` for checks whose
//! prerequisite failed, and builds the [`Report`](zerohop_core::Report).
//! [`verdict`] judges a finished report as a node's readiness, the one
//! judgement behind the agent's condition and `doctor --format npd`.

pub mod checks;
pub mod context;
mod fix;
pub mod npd;
mod pool;
pub mod profile;
pub mod registry;
pub mod render;
pub mod runner;
pub mod topology;
pub mod verdict;

pub use context::{Context, Outcome};
pub use profile::Profile;
pub use registry::{Check, Group};
pub use runner::{Selection, run};
