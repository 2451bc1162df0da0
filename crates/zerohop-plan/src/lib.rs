//! `zerohop plan`: one short intent file (`DataPathPlan`) to the full,
//! current, schema-valid Kubernetes or OpenShift manifest set, in deploy
//! order.
//!
//! The pipeline is pure: [`load`] parses and validates the intent (every
//! error with its line and column and the intent rule it breaks, listed in
//! [`RULES`]), [`render`] turns it into an ordered
//! [`ManifestSet`], and [`write_set`] writes that set to a directory
//! atomically.

mod diagnostic;
mod grammar;
mod input;
pub mod intent;
mod output;
mod parse;
mod plan;
mod render;
mod rule;
mod validate;

pub use diagnostic::{Diagnostic, PlanError};
pub use input::{InputError, read_intent};
pub use intent::{DataPathPlan, Monitor, Platform};
pub use output::{Foreign, WriteError, write_set};
pub use parse::MAX_INTENT_BYTES;
pub use plan::{
    AgentPlan, LocalNvmePlan, NfsMount, NfsPlan, NicPlan, Plan, PoolPlan, RailPlan, ValidationPlan,
    WorkloadPlan,
};
pub use render::{ManifestFile, ManifestSet, agent, render, validate as validation};
pub use rule::Rule;
pub use validate::{RULES, rules};

/// Parses and validates an intent file. `file` names it in diagnostics;
/// `platform` overrides `spec.platform`.
pub fn load(file: &str, text: &str, platform: Option<Platform>) -> Result<Plan, PlanError> {
    let intent = parse::parse(text).map_err(|d| PlanError::new(file, vec![d]))?;
    validate::validate(intent, platform).map_err(|d| PlanError::new(file, d))
}

/// Parses and validates an intent file as [`load`] does, and gives the
/// parsed intent beside the plan: its spans say on which line each value was
/// written, for messages that cite the intent (`zerohop doctor --intent`).
pub fn load_with_intent(
    file: &str,
    text: &str,
    platform: Option<Platform>,
) -> Result<(DataPathPlan, Plan), PlanError> {
    let plan = load(file, text, platform)?;
    let intent = parse::parse(text).map_err(|d| PlanError::new(file, vec![d]))?;
    Ok((intent, plan))
}

/// The JSON Schema of the intent format, pretty-printed with a final newline.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(DataPathPlan);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
