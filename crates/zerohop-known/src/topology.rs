//! The kubelet's Topology Manager: its policies and scopes, the NUMA layout
//! of a node as the kubelet's hint providers see it, and whether a pod can
//! ever be admitted on that layout.
//!
//! The admission follows the kubelet (kubernetes/kubernetes
//! `pkg/kubelet/cm/topologymanager/policy.go`, `policy_restricted.go`,
//! `policy_single_numa_node.go`; the device manager's
//! `pkg/kubelet/cm/devicemanager/topology_hints.go` and the CPU manager's
//! `pkg/kubelet/cm/cpumanager/policy_static.go`, `generateCPUTopologyHints`):
//!
//! - every hint provider gives one hint per NUMA mask that can hold the
//!   request; a hint is *preferred* when its mask has as few NUMA nodes as
//!   the smallest mask that could hold the request on an empty node;
//! - a resource without NUMA information (a device plugin that reports
//!   none, an SR-IOV pool with `excludeTopology`) gives no hint: it accepts
//!   any placement;
//! - the merged hint of one hint per provider is preferred only when every
//!   hint is preferred *and* all their masks are equal ("Only mark preferred
//!   if all affinities are equal", `mergePermutation`);
//! - `restricted` admits a pod only with a preferred merged hint;
//!   `single-numa-node` keeps only single-node hints first, then does the
//!   same; `best-effort` and `none` admit every pod.
//!
//! So a pod is admitted under `restricted` exactly when one NUMA mask is a
//! preferred hint of every provider at once, and under `single-numa-node`
//! when one NUMA node is. The CPU manager gives hints only under its
//! `static` policy and only to a Guaranteed container with integer CPUs
//! (Kubernetes documentation, "Control CPU Management Policies on the
//! Node"); the memory manager (not configured here) none.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The kubelet configuration key of the Topology Manager policy.
pub const POLICY_KEY: &str = "topologyManagerPolicy";
/// The kubelet configuration key of the Topology Manager scope.
pub const SCOPE_KEY: &str = "topologyManagerScope";
/// The kubelet configuration key of the Topology Manager policy options.
pub const POLICY_OPTIONS_KEY: &str = "topologyManagerPolicyOptions";
/// The kubelet configuration key of the CPU manager policy.
pub const CPU_MANAGER_POLICY_KEY: &str = "cpuManagerPolicy";
/// The CPU manager policy that pins Guaranteed containers' integer CPUs.
pub const STATIC_CPU_MANAGER: &str = "static";

/// The most NUMA nodes the Topology Manager accepts without the
/// `max-allowable-numa-nodes` policy option: on a machine with more, the
/// kubelet refuses to start (Kubernetes documentation, "Control Topology
/// Management Policies on a node", `max-allowable-numa-nodes`).
pub const DEFAULT_MAX_NUMA_NODES: usize = 8;
/// The policy option that raises [`DEFAULT_MAX_NUMA_NODES`].
pub const MAX_ALLOWABLE_NUMA_NODES: &str = "max-allowable-numa-nodes";
/// The most NUMA nodes a layout here may have: the admission tries every
/// mask of them, as the kubelet does.
pub const MAX_LAYOUT_NUMA_NODES: usize = 16;

/// The pod annotation that carries the NUMA layout of the nodes a pod is
/// meant for ([`Layout`] as JSON): `zerohop plan` writes it, and `zerohop
/// lint` checks the pod against the Topology Manager policy with it.
pub const LAYOUT_ANNOTATION: &str = "zerohop.dev/numa-layout";

/// The extended resource of a whole NVIDIA GPU (the GPU device plugin,
/// which reports each GPU's NUMA node).
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// A Topology Manager policy (`topologyManagerPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Policy {
    /// `none`: no alignment (the kubelet's default).
    None,
    /// `best-effort`: aligns when it can, admits every pod.
    BestEffort,
    /// `restricted`: admits a pod only when its resources prefer one NUMA mask.
    Restricted,
    /// `single-numa-node`: admits a pod only when one NUMA node holds it all.
    SingleNumaNode,
}

impl Policy {
    /// The value in the kubelet configuration.
    pub const fn as_str(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::BestEffort => "best-effort",
            Policy::Restricted => "restricted",
            Policy::SingleNumaNode => "single-numa-node",
        }
    }

    /// Reads a kubelet configuration value; `None` for an unknown one.
    pub fn parse(text: &str) -> Option<Policy> {
        [
            Policy::None,
            Policy::BestEffort,
            Policy::Restricted,
            Policy::SingleNumaNode,
        ]
        .into_iter()
        .find(|p| p.as_str() == text)
    }
}

/// A Topology Manager scope (`topologyManagerScope`): whether hints are
/// merged per container (the default) or for the whole pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `container` (the kubelet's default).
    Container,
    /// `pod`.
    Pod,
}

impl Scope {
    /// The value in the kubelet configuration.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Container => "container",
            Scope::Pod => "pod",
        }
    }

    /// Reads a kubelet configuration value; `None` for an unknown one.
    pub fn parse(text: &str) -> Option<Scope> {
        [Scope::Container, Scope::Pod]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// One NUMA node as the kubelet's hint providers see it on an empty node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NumaNode {
    /// Logical CPUs of the node.
    pub cpus: u32,
    /// Of them, the ones in `reservedSystemCPUs`: never given exclusively.
    #[serde(default)]
    pub reserved_cpus: u32,
    /// Devices whose device plugin reports this NUMA node, by extended
    /// resource name (`nvidia.com/gpu`, an SR-IOV pool).
    #[serde(default)]
    pub devices: BTreeMap<String, u32>,
}

/// The NUMA nodes of a node, in NUMA id order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Layout(pub Vec<NumaNode>);

impl Layout {
    /// Reads [`LAYOUT_ANNOTATION`]'s JSON; at most
    /// [`MAX_LAYOUT_NUMA_NODES`] nodes, at least one.
    pub fn parse(text: &str) -> Result<Layout, String> {
        let layout: Layout = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if layout.0.is_empty() || layout.0.len() > MAX_LAYOUT_NUMA_NODES {
            return Err(format!(
                "a layout has 1 to {MAX_LAYOUT_NUMA_NODES} numa nodes, not {}",
                layout.0.len()
            ));
        }
        Ok(layout)
    }

    /// The layout as the annotation's JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What one admission unit (a pod under the `pod` scope, a container under
/// `container`) asks of the hint providers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Demand {
    /// Device counts by extended resource.
    pub devices: BTreeMap<String, u64>,
    /// Exclusive CPUs: integer CPUs of a Guaranteed pod under the static
    /// CPU manager; `None` when the CPU manager gives no hint.
    pub cpus: Option<u64>,
}

/// Why a demand can never be admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection(pub String);

/// The NUMA masks a provider prefers for one request.
struct Hints {
    what: String,
    preferred: Vec<u32>,
}

fn bits(mask: u32) -> Vec<u32> {
    (0..32).filter(|b| mask & (1 << b) != 0).collect()
}

fn describe(mask: u32) -> String {
    let nodes: Vec<String> = bits(mask).iter().map(u32::to_string).collect();
    format!("{{{}}}", nodes.join(","))
}

/// The preferred hints of a request over `masks`: `capacity(mask)` is what
/// a mask holds on the empty node, `usable(mask)` what it can give.
fn hints(
    what: String,
    request: u64,
    masks: &[u32],
    capacity: impl Fn(u32) -> u64,
    usable: impl Fn(u32) -> u64,
) -> Result<Hints, Rejection> {
    let narrowest = masks
        .iter()
        .filter(|m| capacity(**m) >= request)
        .map(|m| m.count_ones())
        .min();
    let Some(narrowest) = narrowest else {
        return Err(Rejection(format!(
            "{what}: the node has {} in all",
            masks.iter().map(|m| capacity(*m)).max().unwrap_or(0)
        )));
    };
    let preferred = masks
        .iter()
        .copied()
        .filter(|m| m.count_ones() == narrowest && usable(*m) >= request)
        .collect();
    Ok(Hints { what, preferred })
}

/// Whether the kubelet can ever admit `demand` on an empty node of
/// `layout` under `policy`: `Ok` with the NUMA nodes it aligns to (every
/// node for `none` and `best-effort` when nothing aligns), or the reason
/// it answers `TopologyAffinityError`.
pub fn admit(layout: &Layout, policy: Policy, demand: &Demand) -> Result<Vec<u32>, Rejection> {
    let nodes = layout.0.len().min(MAX_LAYOUT_NUMA_NODES);
    let masks: Vec<u32> = (1..(1u32 << nodes)).collect();
    let node = |index: u32| layout.0.get(index as usize);
    let mut providers = Vec::new();
    for (resource, &request) in &demand.devices {
        let reported = layout.0.iter().any(|n| n.devices.contains_key(resource));
        if request == 0 || !reported {
            continue;
        }
        let count = |mask: u32| -> u64 {
            bits(mask)
                .into_iter()
                .filter_map(node)
                .filter_map(|n| n.devices.get(resource))
                .map(|c| u64::from(*c))
                .sum()
        };
        providers.push(hints(
            format!("{request} {resource}"),
            request,
            &masks,
            count,
            count,
        )?);
    }
    if let Some(cpus) = demand.cpus.filter(|c| *c > 0) {
        let sum = |mask: u32, f: fn(&NumaNode) -> u32| -> u64 {
            bits(mask)
                .into_iter()
                .filter_map(node)
                .map(|n| u64::from(f(n)))
                .sum()
        };
        providers.push(hints(
            format!("{cpus} exclusive cpus"),
            cpus,
            &masks,
            |m| sum(m, |n| n.cpus),
            |m| sum(m, |n| n.cpus.saturating_sub(n.reserved_cpus)),
        )?);
    }
    let every_node = (1u32 << nodes) - 1;
    let candidates: Vec<u32> = match policy {
        Policy::None | Policy::BestEffort => return Ok(bits(every_node)),
        Policy::Restricted => masks.clone(),
        Policy::SingleNumaNode => masks
            .iter()
            .copied()
            .filter(|m| m.count_ones() == 1)
            .collect(),
    };
    let mut ordered = candidates;
    ordered.sort_by_key(|m| (m.count_ones(), *m));
    if let Some(mask) = ordered
        .into_iter()
        .find(|m| providers.iter().all(|p| p.preferred.contains(m)))
    {
        return Ok(bits(if providers.is_empty() {
            every_node
        } else {
            mask
        }));
    }
    let wants: Vec<String> = providers
        .iter()
        .map(|p| {
            let masks: Vec<String> = p.preferred.iter().map(|m| describe(*m)).collect();
            format!("{} on numa {}", p.what, masks.join(" or "))
        })
        .collect();
    let rule = match policy {
        Policy::SingleNumaNode => "no single numa node holds them all",
        _ => "no numa mask is the narrowest placement of every resource",
    };
    Err(Rejection(format!("{rule}: {}", wants.join("; "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An HGX H100 board on two sockets: 4 GPUs and 4 rail NICs per
    /// socket, 56 logical CPUs per socket, 4 of them reserved on each.
    fn hgx(rails_report_numa: bool) -> Layout {
        let node = |first_rail: u32| {
            let mut devices = BTreeMap::from([(GPU_RESOURCE.to_owned(), 4)]);
            if rails_report_numa {
                for rail in first_rail..first_rail + 4 {
                    devices.insert(format!("nvidia.com/rdma_rail{rail}"), 10);
                }
            }
            NumaNode {
                cpus: 56,
                reserved_cpus: 4,
                devices,
            }
        };
        Layout(vec![node(0), node(4)])
    }

    fn demand(gpus: u64, rails: u32, cpus: Option<u64>) -> Demand {
        let mut devices = BTreeMap::from([(GPU_RESOURCE.to_owned(), gpus)]);
        for rail in 0..rails {
            devices.insert(format!("nvidia.com/rdma_rail{rail}"), 1);
        }
        Demand { devices, cpus }
    }

    #[test]
    fn an_eight_gpu_pod_is_refused_by_single_numa_node_on_four_gpus_per_socket() {
        let refused = admit(&hgx(true), Policy::SingleNumaNode, &demand(8, 8, Some(96)));
        assert!(refused.is_err(), "{refused:?}");
    }

    #[test]
    fn rails_on_both_sockets_keep_restricted_from_preferring_one_mask() {
        // Rail 0 prefers {0}, rail 4 prefers {1}, the GPUs {0,1}: unequal.
        let refused = admit(&hgx(true), Policy::Restricted, &demand(8, 8, Some(96)));
        assert!(refused.is_err(), "{refused:?}");
    }

    #[test]
    fn restricted_admits_the_whole_board_when_rails_give_no_hint_and_cpus_span_both() {
        let layout = hgx(false);
        assert_eq!(
            admit(&layout, Policy::Restricted, &demand(8, 8, Some(96))),
            Ok(vec![0, 1])
        );
        // 40 cpus fit one socket: the cpu manager prefers {0} or {1}.
        assert!(admit(&layout, Policy::Restricted, &demand(8, 8, Some(40))).is_err());
        // Without exclusive cpus the cpu manager gives no hint.
        assert!(admit(&layout, Policy::Restricted, &demand(8, 8, None)).is_ok());
    }

    #[test]
    fn single_numa_node_admits_a_socket_sized_pod() {
        assert_eq!(
            admit(&hgx(true), Policy::SingleNumaNode, &demand(4, 4, Some(50))),
            Ok(vec![0])
        );
        // 53 cpus: more than a socket can give (56 less 4 reserved).
        assert!(admit(&hgx(true), Policy::SingleNumaNode, &demand(4, 4, Some(53))).is_err());
    }

    #[test]
    fn best_effort_admits_everything_and_the_layout_round_trips() {
        assert!(admit(&hgx(true), Policy::BestEffort, &demand(8, 8, Some(96))).is_ok());
        let layout = hgx(true);
        assert_eq!(Layout::parse(&layout.to_json()), Ok(layout));
        assert!(Layout::parse("[]").is_err());
        assert!(Layout::parse("{").is_err());
    }
}
