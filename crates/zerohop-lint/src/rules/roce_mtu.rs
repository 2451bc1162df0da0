//! The MTU of RoCE networks, held to the one floor the doctor holds the
//! nodes to ([`zerohop_known::roce::MIN_MTU`]).

use std::collections::HashSet;

use serde_json::Value as Json;
use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};
use zerohop_known::operators::{NETWORK_ATTACHMENT_GROUP, SRIOV_GROUP};
use zerohop_known::roce::MIN_MTU;

use super::resources::advertised;
use crate::model::{Object, Workspace};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};

/// Whether a SriovNetworkNodePolicy makes RoCE VFs: RDMA on a port whose
/// `linkType` is not InfiniBand (the operator's default is Ethernet).
fn is_roce_policy(policy: &Object<'_>) -> bool {
    let spec = |key: &'static str| policy.get(&[PathStep::Key("spec"), PathStep::Key(key)]);
    let infiniband = spec("linkType")
        .and_then(Node::as_str)
        .is_some_and(|link| link.eq_ignore_ascii_case("ib"));
    !infiniband && spec("isRdma").and_then(Node::as_bool) == Some(true)
}

/// The CNI plugin configurations of a network: a NAD's `spec.config` (the
/// plugin, or each of its `plugins`), or an SR-IOV network's
/// `spec.metaPlugins`, plugins joined by commas.
fn plugins(object: &Object<'_>) -> Option<(&'static str, Vec<Json>)> {
    let (field, text) = match (object.group(), object.kind) {
        (NETWORK_ATTACHMENT_GROUP, "NetworkAttachmentDefinition") => (
            "config",
            object.str_at(&[PathStep::Key("spec"), PathStep::Key("config")])?,
        ),
        (SRIOV_GROUP, "SriovNetwork") => (
            "metaPlugins",
            object.str_at(&[PathStep::Key("spec"), PathStep::Key("metaPlugins")])?,
        ),
        _ => return None,
    };
    let json: Json = if field == "metaPlugins" {
        serde_json::from_str(&format!("[{text}]")).ok()?
    } else {
        serde_json::from_str(text).ok()?
    };
    let list = match json {
        Json::Array(items) => items,
        Json::Object(_) => match json.get("plugins").and_then(Json::as_array) {
            Some(items) => items.clone(),
            None => vec![json],
        },
        _ => return None,
    };
    Some((field, list))
}

/// The smallest `mtu` a list of plugins sets.
fn smallest_mtu(plugins: &[Json]) -> Option<u64> {
    plugins
        .iter()
        .filter_map(|plugin| plugin.get("mtu").and_then(Json::as_u64))
        .min()
}

/// Whether the network hands out RoCE devices: its resource is one a RoCE
/// policy of the set advertises (an SR-IOV network's `resourceName`, a
/// NAD's `k8s.v1.cni.cncf.io/resourceName`), or its plugins include the
/// `rdma` CNI over a non-InfiniBand device.
fn is_roce_network(roce: &HashSet<&str>, object: &Object<'_>, plugins: &[Json]) -> bool {
    let resource = match object.group() {
        SRIOV_GROUP => object.str_at(&[PathStep::Key("spec"), PathStep::Key("resourceName")]),
        _ => object
            .str_at(&[
                PathStep::Key("metadata"),
                PathStep::Key("annotations"),
                PathStep::Key("k8s.v1.cni.cncf.io/resourceName"),
            ])
            .map(|full| full.rsplit_once('/').map_or(full, |(_, name)| name)),
    };
    let by_resource = resource.is_some_and(|name| roce.contains(name));
    let rdma_cni = plugins
        .iter()
        .any(|plugin| plugin.get("type").and_then(Json::as_str) == Some("rdma"));
    let infiniband = plugins
        .iter()
        .any(|plugin| plugin.get("type").and_then(Json::as_str) == Some("ib-sriov"));
    by_resource || (rdma_cni && !infiniband)
}

declare_lint! {
    /// A RoCE network or policy sets an MTU below 4200, so RDMA runs with a path MTU under 4096.
    ///
    /// ## What it checks
    /// `spec.mtu` of SriovNetworkNodePolicies that make RoCE VFs (`isRdma`,
    /// a `linkType` that is not `ib`), and the `mtu` that the CNI plugins of
    /// a RoCE network set (the `tuning` plugin of a SriovNetwork's
    /// `metaPlugins`, any plugin of a NetworkAttachmentDefinition's
    /// `config`), against `zerohop_known::roce::MIN_MTU` (4200), the floor
    /// the doctor's QOS001 holds the nodes' RoCE ports to. A network is RoCE
    /// when a RoCE policy of the set advertises its resource, or its
    /// plugins include the `rdma` CNI.
    ///
    /// ## Why it matters
    /// RoCE carries RDMA in packets of the netdev MTU less the RoCE v2
    /// headers, rounded down to an IB MTU (256 to 4096): the kernel takes
    /// `iboe_get_mtu(netdev->mtu)`, which subtracts 96 bytes of headers
    /// (linux `include/rdma/ib_addr.h` at
    /// bd0ab5efe8eccef387678a894804fad39fe5bc8c), so a 1500-byte netdev gives a 1024-byte
    /// path MTU, a quarter of what the NIC and the switches carry, and
    /// every large transfer takes four times the packets. 4200 leaves room
    /// for 4096 (4192 is the least); NVIDIA's RoCE guides use 9000. `mtu: 1500` is
    /// what an SR-IOV example copied from an Ethernet network sets.
    ///
    /// ## How to fix
    /// Set 9000 (at least 4200), the same on the policy, the network and
    /// the switch ports.
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL056/fail/`:
    ///
    /// ```text
    /// error[ZL056]: mtu 1500 on a roce policy, below 4200: rdma runs with a 1024-byte path mtu (the netdev mtu less the roce v2 headers, rounded down to an ib mtu)
    ///   --> fail/input.yaml:12:3
    ///    |
    /// 12 |   mtu: 1500
    ///    |   ^^^
    ///    = object: SriovNetworkNodePolicy/nvidia-network-operator/rail0
    ///    = help: set mtu 9000 (at least 4200), the same on the policy, the network and the switch ports
    ///            mtu: 9000
    /// ```
    pub(crate) static ROCE_MTU_BELOW_MINIMUM = {
        id: "ZL056",
        name: "roce-mtu-below-minimum",
        severity: Error,
        check: roce_mtu_below_minimum,
    };
}

/// The RoCE path MTU (the largest IB MTU, 256…4096) a netdev MTU carries,
/// as `iboe_get_mtu` computes it (linux `include/rdma/ib_addr.h` at
/// bd0ab5efe8eccef387678a894804fad39fe5bc8c): the netdev MTU less the GRH
/// (40), UDP (8), BTH (12), XRC (4) and AtomicETH (28) headers and the ICRC
/// (4), rounded down to an IB MTU; 0 below 256.
fn path_mtu(netdev_mtu: u64) -> u64 {
    let payload = netdev_mtu.saturating_sub(40 + 8 + 12 + 4 + 28 + 4);
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|&ib| payload >= ib)
        .unwrap_or(0)
}

/// Reports `mtu` at `path`; `fix` is the setting as the field writes it.
fn report(
    sink: &mut Sink<'_>,
    object: &Object<'_>,
    path: &[PathStep<'_>],
    what: &str,
    mtu: u64,
    fix: &str,
) {
    sink.report(
        object,
        path,
        format!(
            "mtu {mtu} on a roce {what}, below {MIN_MTU}: rdma runs with a {}-byte path mtu (the netdev mtu less the roce v2 headers, rounded down to an ib mtu)",
            path_mtu(mtu)
        ),
        Remediation::new(format!(
            "set mtu 9000 (at least {MIN_MTU}), the same on the policy, the network and the switch ports"
        ))
        .command(fix),
    );
}

fn roce_mtu_below_minimum(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    // The resources RoCE policies advertise.
    let roce: HashSet<&str> = advertised(workspace)
        .iter()
        .filter(|a| a.roce)
        .map(|a| a.name.as_str())
        .collect();
    for object in &workspace.objects {
        if object.is(SRIOV_GROUP, "SriovNetworkNodePolicy") {
            let path = [PathStep::Key("spec"), PathStep::Key("mtu")];
            let mtu = object
                .get(&path)
                .and_then(Node::as_i64)
                .and_then(|mtu| u64::try_from(mtu).ok());
            if let Some(mtu) = mtu.filter(|&mtu| mtu < u64::from(MIN_MTU))
                && is_roce_policy(object)
            {
                report(sink, object, &path, "policy", mtu, "mtu: 9000");
            }
            continue;
        }
        let Some((field, list)) = plugins(object) else {
            continue;
        };
        let Some(mtu) = smallest_mtu(&list).filter(|&mtu| mtu < u64::from(MIN_MTU)) else {
            continue;
        };
        if is_roce_network(&roce, object, &list) {
            let what = format!("network ({} `{}`)", short(object.kind), short(object.name));
            report(
                sink,
                object,
                &[PathStep::Key("spec"), PathStep::Key(field)],
                &what,
                mtu,
                "\"mtu\": 9000",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `iboe_get_mtu` (linux `include/rdma/ib_addr.h`): 1500 gives 1024,
    /// 4192 is the least that gives 4096, and the floor carries it.
    #[test]
    fn the_path_mtu_is_what_the_kernel_takes() {
        assert_eq!(path_mtu(1500), 1024);
        assert_eq!(path_mtu(4191), 2048);
        assert_eq!(path_mtu(4192), 4096);
        assert_eq!(path_mtu(u64::from(MIN_MTU)), 4096);
        assert_eq!(path_mtu(9000), 4096);
        assert_eq!(path_mtu(100), 0);
    }
}
