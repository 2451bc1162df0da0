//! The RDMA devices the pod can open: listed in its
//! `/sys/class/infiniband`, with their verbs device node and an ACTIVE port.

use zerohop_core::Remediation;
use zerohop_host::facts::RdmaDevice;
use zerohop_host::facts::pod::VERBS_CLASS;
use zerohop_host::facts::rdma::{CLASS_DIR, DEV_DIR};

use crate::context::{Context, Outcome};
use crate::declare_check;

declare_check! {
    /// The pod has RDMA devices it can open, each with an ACTIVE port.
    ///
    /// ## What it checks
    /// Inside the pod: the devices of `/sys/class/infiniband` (in the RDMA
    /// subsystem's exclusive network-namespace mode only those bound to the
    /// pod's namespace, its VFs'), for each the verbs node that
    /// `/sys/class/infiniband_verbs/uverbs<N>/ibdev` names in
    /// `/dev/infiniband`, and the `state` and `link_layer` of its ports. A
    /// device without its node, or without an ACTIVE port, fails; no device
    /// at all fails unless the profile says RDMA is not wanted. A missing
    /// `/dev/infiniband/rdma_cm` warns: NCCL opens verbs directly, but UCX,
    /// `perftest -R` and NFS over RDMA connect through RDMA-CM.
    ///
    /// ## Why it matters
    /// "The pod schedules but has no RDMA inside" is the first failure of a
    /// GPUDirect deployment: a missing resource request, a device plugin
    /// that did not mount the node, a VF whose link is down. NCCL then
    /// prints `NET/Socket` and runs over TCP, hours later.
    ///
    /// ## How to fix
    /// Request the RDMA resource in the pod spec (`resources.limits` of the
    /// SR-IOV or RDMA shared device plugin's resource, with the secondary
    /// network annotation `k8s.v1.cni.cncf.io/networks`); a device listed
    /// without its node needs the device plugin to mount it (or a
    /// `privileged` container); a port that is not ACTIVE is fixed on the
    /// node (RDMA004).
    ///
    /// ## Evidence
    /// `/sys/class/infiniband` (its absence in a pod is no device),
    /// `/sys/class/infiniband_verbs/uverbs<N>/ibdev`, the listing of
    /// `/dev/infiniband`, `ports/<p>/state` and `link_layer`. Without a
    /// populated `/dev` (no `/dev/null`) the nodes are `unknown`.
    ///
    /// ## Source
    /// Linux v6.12 `drivers/infiniband/core/device.c` (`rdma_dev_access_netns`
    /// and `ib_device_check_mandatory`: in exclusive mode a device is
    /// visible only in the namespace it is bound to),
    /// `drivers/infiniband/core/uverbs_main.c` (`ibdev_show`, the
    /// `uverbs<N>` nodes) and `drivers/infiniband/core/sysfs.c`
    /// (`state_show`, `link_layer_show`); linux-rdma/rdma-core v50.0
    /// `libibverbs/init.c` (a device is usable only through its
    /// `/dev/infiniband/uverbs<N>`).
    ///
    /// Real capture: crates/zerohop-doctor/tests/pod_view.rs::an_h100_vf_as_a_pod_sees_it
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/POD001/fail-no-uverbs-node/`:
    ///
    /// ```text
    /// pod
    ///   fail           POD001  pod-rdma-devices  mlx5_3: listed but /dev/infiniband/uverbs3 is not in the pod: verbs cannot open it
    ///                  /sys/class/infiniband_verbs/uverbs3/ibdev = mlx5_3
    ///                  /dev/infiniband = rdma_cm
    ///
    /// what to fix first
    ///   1. POD001 pod-rdma-devices (mlx5_3): listed but /dev/infiniband/uverbs3 is not in the pod: verbs cannot open it
    ///      fix: let the device plugin mount the device's uverbs node: request its rdma resource, not only the network
    ///        ls -l /dev/infiniband /sys/class/infiniband_verbs/*/ibdev
    /// ```
    pub static RDMA_DEVICES = {
        id: "POD001",
        name: "pod-rdma-devices",
        group: Pod,
        severity: Error,
        requires: [],
        run: rdma_devices,
    };
}

fn rdma_devices(ctx: &Context<'_>) -> Vec<Outcome> {
    if ctx.profile.rdma == Some(false) {
        return vec![Outcome::not_applicable(
            "rdma not wanted (the profile says so)",
        )];
    }
    let rdma = &ctx.facts.rdma;
    let devices = match &rdma.devices {
        Err(gap) => return vec![Outcome::gap(gap)],
        Ok(None) => &[][..],
        Ok(Some(devices)) => devices.as_slice(),
    };
    if devices.is_empty() {
        return vec![
            Outcome::fail("the pod sees no rdma device: nccl falls back to sockets")
                .evidence(CLASS_DIR, "<empty>")
                .fix(
                    Remediation::new(
                        "request the rdma resource and its secondary network in the pod spec",
                    )
                    .command("kubectl get pod <pod> -o jsonpath='{.spec.containers[*].resources.limits}'")
                    .command("kubectl get pod <pod> -o jsonpath='{.metadata.annotations.k8s\\.v1\\.cni\\.cncf\\.io/networks}'"),
                ),
        ];
    }
    let mut outcomes: Vec<Outcome> = devices.iter().map(|d| device(ctx, d)).collect();
    if rdma.has_dev
        && let Ok(Some(nodes)) = &rdma.device_nodes
        && !nodes.iter().any(|n| n == "rdma_cm")
    {
        outcomes.push(
            Outcome::warn("no rdma_cm node: rdma-cm users (ucx, perftest -R, nfs over rdma) cannot connect; nccl does not need it")
                .subject(format!("{DEV_DIR}/rdma_cm"))
                .evidence(DEV_DIR, nodes.join(" "))
                .fix(Remediation::new("have the device plugin mount /dev/infiniband/rdma_cm (the rdma shared device plugin and the sr-iov device plugin's rdma mode do)")),
        );
    }
    outcomes
}

/// The verbs node of `device` in the pod, when the verbs class names one.
fn verbs_node<'a>(ctx: &Context<'a>, device: &RdmaDevice) -> Option<&'a str> {
    match &ctx.facts.pod.verbs {
        Ok(Some(nodes)) => nodes
            .iter()
            .find(|(_, ibdev)| **ibdev == device.name)
            .map(|(node, _)| node.as_str()),
        _ => None,
    }
}

fn device(ctx: &Context<'_>, device: &RdmaDevice) -> Outcome {
    let rdma = &ctx.facts.rdma;
    let name = device.name.as_str();
    let node = verbs_node(ctx, device);
    let nodes = match &rdma.device_nodes {
        Ok(Some(nodes)) => nodes.as_slice(),
        _ => &[],
    };
    let listing = if nodes.is_empty() {
        "<missing>".to_owned()
    } else {
        nodes.join(" ")
    };
    let ports = device.port_list();
    let active: Vec<String> = ports
        .iter()
        .filter(|p| p.is_active())
        .map(|p| {
            let layer = match &p.link_layer {
                Ok(Some(layer)) => layer.to_string(),
                _ => "unknown link layer".to_owned(),
            };
            format!("port {} active, {layer}", p.number)
        })
        .collect();
    let node_path = node.map(|n| format!("{DEV_DIR}/{n}"));
    if !rdma.has_dev {
        return Outcome::unknown(
            "the root has no populated /dev (no /dev/null): the device nodes cannot be checked",
        )
        .subject(name);
    }
    let opened = match node {
        Some(node) => nodes.iter().any(|n| n == node),
        None => false,
    };
    if !opened {
        let wanted = node_path
            .clone()
            .unwrap_or_else(|| format!("{DEV_DIR}/uverbs<N>"));
        return Outcome::fail(format!(
            "listed but {wanted} is not in the pod: verbs cannot open it"
        ))
        .subject(name)
        .evidence(
            format!("{VERBS_CLASS}/{}/ibdev", node.unwrap_or("uverbs<N>")),
            if node.is_some() { name } else { "<missing>" },
        )
        .evidence(DEV_DIR, listing)
        .fix(
            Remediation::new(
                "let the device plugin mount the device's uverbs node: request its rdma resource, not only the network",
            )
            .command("ls -l /dev/infiniband /sys/class/infiniband_verbs/*/ibdev"),
        );
    }
    let node_path = node_path.unwrap_or_default();
    if active.is_empty() {
        let states: Vec<String> = ports
            .iter()
            .map(|p| match &p.state {
                Ok(Some(state)) => format!("port {} {}", p.number, state.as_str()),
                _ => format!("port {} state unknown", p.number),
            })
            .collect();
        let shown = if states.is_empty() {
            "no port".to_owned()
        } else {
            states.join(", ")
        };
        return Outcome::fail(format!("no active port: {shown}"))
            .subject(name)
            .evidence(format!("{}/ports", device.sysfs()), shown)
            .fix(Remediation::new(
                "bring the link up on the node (RDMA004 of `zerohop doctor` there); a vf's link follows its pf's",
            ));
    }
    Outcome::pass(format!("{}, {node_path}", active.join("; ")))
        .subject(name)
        .evidence(DEV_DIR, listing)
}
