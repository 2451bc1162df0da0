//! `zerohop doctor --intent`: the cluster intent (`kind: DataPathPlan`) as
//! the doctor's expectations of one node, and the choice of the node's pool.
//!
//! A host has no Kubernetes labels of its own, so the pool is chosen with
//! the labels the host's facts imply the way Node Feature Discovery would
//! publish them, the `kubernetes.io/hostname` label the kubelet sets, and
//! the labels the user (or the agent, which knows its node) gives with
//! `--node-label`. See `docs/conformance.md`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use zerohop_doctor::Profile;
use zerohop_doctor::profile::{
    CpuExpectation, GpuExpectation, HugepagesExpectation, LinkType, NfsExpectation, NicExpectation,
    NvmeTargetExpectation,
};
use zerohop_host::{Facts, HostRoot};
use zerohop_known::operators::{nfd_pci_class_vendor_label, nfd_pci_vendor_label};
use zerohop_plan::intent::{self, DataPathPlan, HugepageSize, RdmaMode};
use zerohop_plan::{Plan, PoolPlan};

use crate::error::CliError;

/// The label the kubelet sets to the node's name: the host name, in lower
/// case (kubernetes `pkg/util/node`, `GetHostname`;
/// `kubernetes.io/docs/reference/labels-annotations-taints`,
/// `kubernetes.io/hostname`).
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Where the kernel keeps the host name.
pub(crate) const HOSTNAME_FILE: &str = "/proc/sys/kernel/hostname";

/// The intent arguments of `zerohop doctor`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct IntentArgs {
    /// Check the host against a cluster intent (`kind: DataPathPlan`, the
    /// file `zerohop plan` reads): its pool's GPUs, NIC ports, hugepages,
    /// CPU isolation, mounts and targets. `--expect-*` flags override it.
    #[arg(long, value_name = "FILE")]
    pub(crate) intent: Option<PathBuf>,
    /// The intent's node pool this host belongs to [default: the pool
    /// whose nodeSelector matches the host's labels, or the only pool].
    #[arg(long, value_name = "NAME", requires = "intent")]
    pub(crate) pool: Option<String>,
    /// A Kubernetes label of this node, `KEY=VALUE`; repeatable. Added to
    /// the labels derived from the host to choose the pool.
    #[arg(long = "node-label", value_name = "KEY=VALUE", requires = "intent", value_parser = parse_label)]
    pub(crate) node_labels: Vec<(String, String)>,
}

/// `key=value` (the value may be empty).
fn parse_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

/// The expectations the intent gives for this host, with the pool chosen;
/// `None` without `--intent`.
pub(crate) fn profile(
    args: &IntentArgs,
    root: &HostRoot,
    facts: &Facts,
) -> Result<Option<(Profile, String)>, CliError> {
    let Some(path) = &args.intent else {
        return Ok(None);
    };
    let file = path.display().to_string();
    let refused = |reason: String| CliError::usage(format!("--intent {reason}"));
    let text = zerohop_plan::read_intent(path).map_err(|err| refused(err.to_string()))?;
    let (intent, plan) = zerohop_plan::load_with_intent(&file, &text, None)
        .map_err(|err| refused(err.to_string()))?;
    let mut labels = host_labels(root, facts);
    labels.extend(args.node_labels.iter().cloned());
    let pool = choose_pool(&plan, args.pool.as_deref(), &labels)?;
    let spans = intent
        .spec
        .node_pools
        .iter()
        .find(|p| p.name.value == pool.name);
    let profile = translate(&file, &plan, pool, spans, &intent);
    Ok(Some((profile, pool.name.clone())))
}

/// The labels a Kubernetes node on this host would carry that the host
/// itself can tell: for each PCI function Node Feature Discovery's
/// `pci-<class>_<vendor>.present` and `pci-<vendor>.present` (NFD
/// publishes either, by its `deviceLabelFields`, for the classes it is told
/// to; every class is derived here, a superset of any configuration), and
/// `kubernetes.io/hostname`.
pub(crate) fn host_labels(root: &HostRoot, facts: &Facts) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    for device in facts.pci.list() {
        let Some(vendor) = device.vendor else {
            continue;
        };
        let vendor = format!("{vendor:04x}");
        labels.insert(nfd_pci_vendor_label(&vendor), "true".to_owned());
        if let Some(class) = device.class {
            labels.insert(
                nfd_pci_class_vendor_label(&format!("{class:04x}"), &vendor),
                "true".to_owned(),
            );
        }
    }
    if let Ok(Some(name)) = root.read_value(HOSTNAME_FILE)
        && !name.is_empty()
    {
        labels.insert(HOSTNAME_LABEL.to_owned(), name.to_ascii_lowercase());
    }
    labels
}

/// `key=value` of a selector, for messages.
fn shown_selector(pool: &PoolPlan) -> String {
    if pool.node_selector.is_empty() {
        return "{}".to_owned();
    }
    pool.node_selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether every `key: value` of the pool's `nodeSelector` is among the
/// labels (Kubernetes `nodeSelector` semantics: all must match).
fn selects(pool: &PoolPlan, labels: &BTreeMap<String, String>) -> bool {
    pool.node_selector
        .iter()
        .all(|(key, value)| labels.get(key) == Some(value))
}

/// The pool of this host: the one named; else the only pool of the intent;
/// else the one pool whose selector matches the labels. No match, or
/// several, is a usage error that lists the pools.
pub(crate) fn choose_pool<'a>(
    plan: &'a Plan,
    named: Option<&str>,
    labels: &BTreeMap<String, String>,
) -> Result<&'a PoolPlan, CliError> {
    let listing = || {
        plan.pools
            .iter()
            .map(|p| format!("  {} (nodeSelector {})", p.name, shown_selector(p)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if let Some(name) = named {
        return plan.pools.iter().find(|p| p.name == name).ok_or_else(|| {
            CliError::usage(format!(
                "--pool {name}: the intent has no such pool; its pools:\n{}",
                listing()
            ))
        });
    }
    if let [only] = plan.pools.as_slice() {
        return Ok(only);
    }
    let matching: Vec<&PoolPlan> = plan.pools.iter().filter(|p| selects(p, labels)).collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(CliError::usage(format!(
            "no pool of the intent selects this host; its pools:\n{}\nthe host's labels: {}\ngive --pool NAME, or the node's labels with --node-label KEY=VALUE",
            listing(),
            shown_labels(labels)
        ))),
        several => Err(CliError::usage(format!(
            "several pools of the intent select this host ({}); its pools:\n{}\ngive --pool NAME",
            several
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            listing()
        ))),
    }
}

fn shown_labels(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return "none".to_owned();
    }
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `file:line` of a value of the intent; `None` for a default (no place).
fn place<T>(file: &str, value: &intent::Spanned<T>) -> Option<String> {
    intent::line_of(value).map(|line| format!("{file}:{line}"))
}

/// The expectations of one pool's nodes: what the plan renders for them.
fn translate(
    file: &str,
    plan: &Plan,
    pool: &PoolPlan,
    spans: Option<&intent::NodePool>,
    intent: &DataPathPlan,
) -> Profile {
    let sriov = plan.rdma_mode == RdmaMode::Sriov;
    let nics = pool
        .nics
        .iter()
        .map(|nic| {
            let written = spans.and_then(|p| p.nics.iter().find(|n| n.pf.value == nic.pf));
            let rail = plan.rails.get(&nic.rail);
            NicExpectation {
                pf: Some(nic.pf.clone()),
                rdma_device: Some(nic.rdma_device.clone()),
                vfs: sriov.then_some(nic.num_vfs),
                mtu: rail.map(|r| r.mtu),
                link_type: rail.map(|r| match r.link_type {
                    intent::LinkType::Eth => LinkType::Ethernet,
                    intent::LinkType::Ib => LinkType::InfiniBand,
                }),
                rate_gbps: nic.link_rate_gbps,
                from: written.and_then(|n| place(file, &n.pf)),
            }
        })
        .collect();
    let hugepages = pool.hugepages.map(|(size, count)| HugepagesExpectation {
        size_kib: match size {
            HugepageSize::OneGi => 1 << 20,
            HugepageSize::TwoMi => 2 << 10,
        },
        pages: u64::from(count),
        from: spans
            .and_then(|p| p.hugepages.as_ref())
            .and_then(|h| place(file, &h.count)),
    });
    let cpus = CpuExpectation {
        isolated: pool.isolated_cpus.clone(),
        isolated_from: spans
            .and_then(|p| p.isolated_cpus.as_ref())
            .and_then(|c| place(file, c)),
        reserved: Some(pool.reserved_cpus.clone()),
        reserved_from: spans.and_then(|p| place(file, &p.reserved_cpus)),
    };
    let storage = &intent.spec.storage;
    // Through CSI the kubelet mounts the export per pod, where it likes:
    // the doctor finds those mounts itself and expects rdma of them.
    let nfs_mounts: Vec<NfsExpectation> = plan
        .nfs
        .iter()
        .filter_map(|nfs| {
            Some(NfsExpectation {
                mount_point: nfs.host_mount_point()?.to_owned(),
                source: Some(format!("{}:{}", nfs.server, nfs.export)),
                options: nfs.kernel_options(),
                from: storage
                    .nfs_rdma
                    .as_ref()
                    .and_then(|n| n.mount_point.as_ref())
                    .and_then(|point| place(file, point)),
            })
        })
        .collect();
    let targets_from = storage.nvme_of.as_ref().map(|n| &n.value.targets);
    let nvme_targets: Vec<NvmeTargetExpectation> = plan
        .nvme_targets
        .iter()
        .enumerate()
        .map(|(index, (address, _))| NvmeTargetExpectation {
            address: address.to_string(),
            transport: Some("rdma".to_owned()),
            from: targets_from
                .and_then(|t| t.get(index))
                .and_then(|t| place(file, &t.address)),
        })
        .collect();
    Profile {
        sriov: Some(sriov && pool.nics.iter().any(|n| n.num_vfs > 0)),
        rdma: Some(!pool.nics.is_empty()),
        gds: storage.gds.as_ref().map(|_| plan.gds),
        mounts: nfs_mounts.iter().map(|n| n.mount_point.clone()).collect(),
        nfs_rdma: plan.nfs.as_ref().map(|_| true),
        nvme_transport: (!nvme_targets.is_empty()).then(|| "rdma".to_owned()),
        gpus: Some(GpuExpectation {
            count: pool.gpus,
            from: spans.and_then(|p| place(file, &p.gpus)),
        }),
        nics,
        hugepages,
        cpus: Some(cpus),
        nfs_mounts,
        nvme_targets,
        ..Profile::default()
    }
}
