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
    // NCCL's rails are the workload's: not a storage rail only the hosts use.
    let mut rails: Vec<u32> = chosen
        .nics
        .iter()
        .map(|nic| nic.rail)
        .filter(|rail| plan.workload.rails.contains(rail))
        .collect();
    rails.sort_unstable();
    rails.dedup();
    let layers: Vec<LinkLayer> = rails
        .iter()
        .filter_map(|rail| plan.rails.get(rail))
        .map(|rail| match rail.link_type {
            LinkType::Ib => LinkLayer::InfiniBand,
            LinkType::Eth => LinkLayer::Ethernet,
        })
        .collect();
    let link_layer = match layers.first() {
        Some(first) if layers.iter().all(|l| l == first) => Some(*first),
        _ => None,
    };
    // The rate of a rail: every workload NIC of the pool must give one;
    // NICs of different rates count at their mean, as rails × rate is
    // what the node carries.
    let rates: Option<Vec<u32>> = chosen
        .nics
        .iter()
        .filter(|nic| rails.contains(&nic.rail))
        .map(|nic| nic.link_rate_gbps)
        .collect();
    let link_rate_gbps = rates.filter(|r| !r.is_empty()).map(|rates| {
        let sum: u64 = rates.iter().map(|r| u64::from(*r)).sum();
        u32::try_from(sum / rates.len() as u64).unwrap_or(u32::MAX)
    });
    Ok(PlannedFabric {
        source: format!("intent {file}, pool {}", chosen.name),
        rails: u32::try_from(rails.len()).unwrap_or(u32::MAX),
        gpus_per_node: Some(chosen.gpus).filter(|gpus| *gpus > 0),
        link_layer,
        link_rate_gbps,
    })
}

/// The fabric the plan under `dir` (what `zerohop plan -o DIR` wrote)
/// rendered its tests for.
#[cfg(feature = "cluster")]
pub(crate) fn from_plan(dir: &Path, pool: Option<&str>) -> Result<PlannedFabric, CliError> {
    let workloads = zerohop_validate::run::workloads::load(dir, pool).map_err(|err| {
        CliError::usage(format!(
            "--plan {}",
            zerohop_core::render::printable::printable(&err)
        ))
    })?;
    workloads.planned_fabric(dir).ok_or_else(|| {
        CliError::usage(format!(
            "--plan {}: the plan renders no rail to test",
            dir.display()
        ))
    })
}
