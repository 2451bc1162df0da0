//! `--intent FILE` and `--plan DIR` of `zerohop validate`: the fabric the
//! cluster intent plans for a node pool (its rails, GPUs per node, link
//! type and link rate), so that captures are judged against the expectations the plan
//! rendered. The intent is read and checked by the planner's own loader.

use std::collections::BTreeMap;
use std::path::Path;

use zerohop_plan::intent::LinkType;
use zerohop_validate::judge::{LinkLayer, PlannedFabric};

use super::intent::choose_pool;
use crate::error::CliError;

/// The fabric of `pool` (or of the intent's only pool) in the intent file
/// at `path`.
pub(crate) fn from_intent(path: &Path, pool: Option<&str>) -> Result<PlannedFabric, CliError> {
    let file = path.display().to_string();
    let refused = |reason: String| CliError::usage(format!("--intent {reason}"));
    let text = zerohop_plan::read_intent(path).map_err(|err| refused(err.to_string()))?;
    let plan = zerohop_plan::load(&file, &text, None).map_err(|err| refused(err.to_string()))?;
    if pool.is_none() && plan.pools.len() > 1 {
        let names: Vec<&str> = plan.pools.iter().map(|p| p.name.as_str()).collect();
        return Err(CliError::usage(format!(
            "--intent {file}: the intent has several pools ({}); choose one with --pool",
            names.join(", ")
        )));
    }
    // No host to match node selectors against: the pool is named or the only one.
    let chosen = choose_pool(&plan, pool, &BTreeMap::new())?;
    let fabric = plan.pool_fabric(chosen);
    Ok(PlannedFabric {
        source: format!("intent {file}, pool {}", chosen.name),
        rails: u32::try_from(fabric.rails.len()).unwrap_or(u32::MAX),
        gpus_per_node: Some(chosen.gpus).filter(|gpus| *gpus > 0),
        link_layer: fabric.link_type.map(layer),
        link_rate_gbps: fabric.link_rate_gbps,
    })
}

/// The link layer NCCL names for the intent's link type.
fn layer(link: LinkType) -> LinkLayer {
    match link {
        LinkType::Ib => LinkLayer::InfiniBand,
        LinkType::Eth => LinkLayer::Ethernet,
    }
}

/// The fabric the plan under `dir` (what `zerohop plan -o DIR` wrote)
/// rendered its tests for ([`of_workloads`]).
#[cfg(feature = "cluster")]
pub(crate) fn from_plan(dir: &Path, pool: Option<&str>) -> Result<PlannedFabric, CliError> {
    let workloads = zerohop_validate::run::workloads::load(dir, pool).map_err(|err| {
        CliError::usage(format!(
            "--plan {}",
            zerohop_core::render::printable::printable(&err)
        ))
    })?;
    of_workloads(&workloads, dir).ok_or_else(|| {
        CliError::usage(format!(
            "--plan {}: the plan renders no rail to test",
            dir.display()
        ))
    })
}

/// The fabric a plan's tests (read from `dir`) were rendered for: the
/// rails and GPUs its nccl-tests job requests, the link type and rate its
/// annotations carry from the intent. `None` without a job or a rail.
#[cfg(feature = "cluster")]
pub(crate) fn of_workloads(
    workloads: &zerohop_validate::run::workloads::Workloads,
    dir: &Path,
) -> Option<PlannedFabric> {
    let mut fabric = workloads.planned_fabric(dir)?;
    let (link_type, link_rate_gbps) = workloads.planned_link();
    fabric.link_layer = link_type.map(layer);
    fabric.link_rate_gbps = link_rate_gbps;
    Some(fabric)
}
