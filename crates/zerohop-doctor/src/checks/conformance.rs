//! Conformance: the node against the expected values of the cluster intent
//! (`zerohop doctor --intent`) or a profile. Each check judges only what
//! the profile expects and is `not-applicable` without it; every finding
//! says what was expected, what was seen, and where the expectation was
//! written.

use std::fmt::Display;

use zerohop_core::Remediation;
use zerohop_host::facts::nvme::SUBSYSTEMS;
use zerohop_host::parse::cmdline::hugepage_requests;
use zerohop_host::parse::rdma::LinkLayer;
use zerohop_host::{Fact, Facts};
use zerohop_known::cpuset::{CpuSet, Isolcpus};
use zerohop_known::pci;

use crate::checks::{bytes, need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::profile::{NfsExpectation, NicExpectation, NvmeTargetExpectation, cite};

const CMDLINE: &str = "/proc/cmdline";
const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// What one comparison found: the differences and what could not be read.
#[derive(Default)]
struct Comparison {
    /// `mtu: expected 9000, seen 1500`.
    drift: Vec<String>,
    /// `mtu: cannot tell (…)`.
    unknown: Vec<String>,
    /// `mtu 9000`.
    agreed: Vec<String>,
    /// (source, value) pairs read.
    evidence: Vec<(String, String)>,
}

impl Comparison {
    /// Compares one value: `seen` is the host's, or why it is unknown.
    fn value<T: PartialEq + Display>(
        &mut self,
        what: &str,
        expected: &T,
        seen: Result<T, String>,
        source: String,
    ) {
        match seen {
            Ok(seen) => {
                self.evidence.push((source, seen.to_string()));
                if &seen == expected {
                    self.agreed.push(format!("{what} {seen}"));
                } else {
                    self.drift
                        .push(format!("{what}: expected {expected}, seen {seen}"));
                }
            }
            Err(why) => self.unknown.push(format!("{what}: cannot tell ({why})")),
        }
    }

    /// The outcome: `fail` on any drift, else `unknown` on any gap, else
    /// `pass`; `what` names the subject in the message.
    fn outcome(self, what: &str, from: Option<&String>) -> Outcome {
        let place = cite(from);
        let mut outcome = if !self.drift.is_empty() {
            Outcome::fail(format!(
                "{what} differs from the intent{place}: {}",
                self.drift.join("; ")
            ))
        } else if !self.unknown.is_empty() {
            Outcome::unknown(format!("{what}{place}: {}", self.unknown.join("; ")))
        } else {
            Outcome::pass(format!("{what} as expected: {}", self.agreed.join(", ")))
        };
        for (source, value) in self.evidence {
            outcome = outcome.evidence(source, value);
        }
        outcome
    }
}

/// The value of a fact for a comparison: why it is unknown otherwise.
fn known<T: Clone>(fact: &Fact<T>, path: &str) -> Result<T, String> {
    match fact {
        Ok(Some(value)) => Ok(value.clone()),
        Ok(None) => Err(format!("{path} is absent")),
        Err(gap) => Err(gap.reason.clone()),
    }
}

declare_check! {
    /// The node has the GPUs its pool declares.
    ///
    /// ## What it checks
    /// Counts the NVIDIA GPU functions under `/sys/bus/pci/devices`
    /// (vendor `10de`, display class, not VFs) and compares the count with
    /// the pool's `gpus` (`zerohop doctor --intent`, or `gpus` in a
    /// profile). Without an expectation it does not apply.
    ///
    /// ## Why it matters
    /// The plan sizes VFs (`one-per-gpu`), the example workload and the
    /// fabric tests to the pool's GPU count: a node with a GPU missing
    /// (fallen off the bus, held by VFIO, not powered) takes pods it
    /// cannot run, and NCCL jobs that span it hang or slow down.
    ///
    /// ## How to fix
    /// Find the missing GPU: `lspci -d 10de:` and the kernel log
    /// (`dmesg | grep -i -e nvrm -e xid -e 'pcie bus error'`); reseat or
    /// replace it, or correct the pool's `gpus` if the node is of another
    /// kind (and give it labels that select the right pool).
    ///
    /// ## Evidence
    /// The functions of `/sys/bus/pci/devices` with vendor `10de` and a
    /// display class that are not VFs. Fewer than expected beside display
    /// functions without a vendor id (a capture without their `vendor`
    /// file) is `unknown`: they may be the GPUs.
    ///
    /// ## Source
    /// linux v6.12 `include/linux/pci_ids.h` (`PCI_VENDOR_ID_NVIDIA` 0x10de,
    /// `PCI_CLASS_DISPLAY_VGA` 0x0300, `PCI_CLASS_DISPLAY_3D` 0x0302) and
    /// `drivers/pci/pci-sysfs.c` (`vendor`, `class`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_pool.rs::hgx_gpus_and_rails_against_the_intent
    /// Real capture: crates/zerohop-doctor/tests/corpus_topology.rs::display_functions_without_a_vendor_make_the_gpus_unknown
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/CONF001/fail-gpu-missing/`:
    ///
    /// ```text
    /// conformance
    ///   fail           CONF001  gpu-count-differs  expected 2 nvidia gpus (cluster.yaml:15), seen 1
    ///                  /sys/bus/pci/devices = 0000:1b:00.0
    ///
    /// what to fix first
    ///   1. CONF001 gpu-count-differs: expected 2 nvidia gpus (cluster.yaml:15), seen 1
    ///      fix: find the missing or extra gpus, or correct the pool's gpu count
    ///        lspci -d 10de:
    ///        dmesg | grep -i -e nvrm -e xid
    /// ```
    pub static GPU_COUNT = {
        id: "CONF001",
        name: "gpu-count-differs",
        group: Conformance,
        severity: Error,
        requires: [],
        run: gpu_count,
    };
}

fn gpu_count(ctx: &Context<'_>) -> Vec<Outcome> {
    let Some(expected) = &ctx.profile.gpus else {
        return vec![Outcome::not_applicable(
            "no gpu count expected (neither the intent nor a profile names one)",
        )];
    };
    need!(require(&ctx.facts.pci.devices, || Outcome::unknown(
        "/sys/bus/pci/devices is absent: cannot count the gpus"
    )));
    let gpus: Vec<&str> = ctx
        .facts
        .pci
        .nvidia_gpus()
        .map(|d| d.address.as_str())
        .collect();
    let seen = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
    let shown = if gpus.is_empty() {
        "<no nvidia gpu>".to_owned()
    } else {
        gpus.join(" ")
    };
    // A display function whose vendor was not read may be one of the
    // missing GPUs: then the count is unknown, not short.
    let unidentified: Vec<&str> = ctx
        .facts
        .pci
        .list()
        .iter()
        .filter(|d| {
            d.vendor.is_none()
                && !d.is_vf()
                && matches!(
                    d.class,
                    Some(pci::class::DISPLAY_3D | pci::class::DISPLAY_VGA)
                )
        })
        .map(|d| d.address.as_str())
        .collect();
    let outcome = if seen == expected.count {
        Outcome::pass(format!("{seen} nvidia gpus, as expected"))
    } else if seen < expected.count && !unidentified.is_empty() {
        Outcome::unknown(format!(
            "expected {} nvidia gpus{}, seen {seen}, and {} display function(s) without a vendor id that may be gpus: {}",
            expected.count,
            cite(expected.from.as_ref()),
            unidentified.len(),
            unidentified.join(" ")
        ))
    } else {
        Outcome::fail(format!(
            "expected {} nvidia gpus{}, seen {seen}",
            expected.count,
            cite(expected.from.as_ref())
        ))
        .fix(
            Remediation::new("find the missing or extra gpus, or correct the pool's gpu count")
                .command("lspci -d 10de:")
                .command("dmesg | grep -i -e nvrm -e xid"),
        )
    };
    vec![outcome.evidence(PCI_DEVICES, shown)]
}

declare_check! {
    /// Each NIC port of the pool is present, with its VFs, MTU and link type.
    ///
    /// ## What it checks
    /// For each expected NIC port (the pool's `nics`, by PF netdev name
    /// and RDMA device name): the netdev under `/sys/class/net` and the
    /// RDMA device under `/sys/class/infiniband` exist and belong to the
    /// same PCI function; `sriov_numvfs` of that function equals the VFs
    /// the plan creates (`one-per-gpu` resolved as `zerohop plan` does);
    /// the netdev's `mtu` equals the rail's MTU; port 1's `link_layer`
    /// is the rail's link type (`ETH` is `Ethernet`, `IB` `InfiniBand`);
    /// and its `rate` reaches an expected rate when one is given. One
    /// finding per port; without expected ports it does not apply.
    ///
    /// ## Why it matters
    /// The SR-IOV node policies, the device plugin's resources, the rail
    /// networks and the NCCL settings the plan renders all name these
    /// ports: a renamed netdev, a PF with fewer VFs than the policy, an MTU
    /// that differs from the rail's or a port in the wrong link mode leaves
    /// pods pending, without RDMA, or fragmenting at the rail's MTU.
    ///
    /// ## How to fix
    /// For a missing port, check the netdev names (`ip -br link`,
    /// `rdma link`) against the intent: predictable names follow the slot,
    /// so a NIC moved to another slot changes them. Set the VFs with the
    /// SR-IOV Network Operator's policy (or `echo N >
    /// /sys/class/net/<pf>/device/sriov_numvfs`), the MTU on the rail
    /// network and the PF (`ip link set <pf> mtu N`), and the link type in
    /// the NIC's firmware (`mlxconfig -d <dev> set LINK_TYPE_P1=2` for
    /// Ethernet, `1` for InfiniBand, then a reset).
    ///
    /// ## Evidence
    /// `/sys/class/net/<pf>` (`mtu`, `device`), `/sys/class/infiniband/<dev>`
    /// (`ports/1/link_layer`, `rate`, `device/net`) and `sriov_numvfs` of the
    /// PCI function. Without `/sys/class/net` in a capture a netdev name is
    /// `unknown`, never missing: every kernel lists its interfaces there;
    /// likewise an RDMA device name without `/sys/class/infiniband` in a
    /// capture (on the live host, no directory means no RDMA device).
    ///
    /// ## Source
    /// linux v6.12 `net/core/net-sysfs.c` (`netdev_kobject_init`, `mtu`),
    /// `drivers/infiniband/core/sysfs.c` (`link_layer`, `rate`),
    /// `drivers/pci/iov.c` (`sriov_numvfs`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_pool.rs::hgx_gpus_and_rails_against_the_intent
    /// Real capture: crates/zerohop-doctor/tests/corpus_gaps.rs::gb10_capture_without_class_net_or_kernel_mm_is_unknown
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/CONF002/fail-link-type/`:
    ///
    /// ```text
    /// conformance
    ///   fail           CONF002  nic-differs  ens1f0np0 (mlx5_0): nic ens1f0np0 (mlx5_0) differs from the intent (cluster.yaml:20): link: expected Ethernet, seen InfiniBand
    ///                  /sys/bus/pci/devices/0000:1c:00.0/sriov_numvfs = 4
    ///                  /sys/class/net/ens1f0np0/mtu = 9000
    ///                  /sys/class/infiniband/mlx5_0/ports/1/link_layer = InfiniBand
    ///
    /// what to fix first
    ///   1. CONF002 nic-differs (ens1f0np0 (mlx5_0)): nic ens1f0np0 (mlx5_0) differs from the intent (cluster.yaml:20): link: expected Ethernet, seen InfiniBand
    ///      fix: set the port as the intent says: vfs by the sr-iov policy, mtu on the pf and the rail network, link type in the nic firmware
    ///        ip -d link show
    /// ```
    pub static NIC_CONFORMANCE = {
        id: "CONF002",
        name: "nic-differs",
        group: Conformance,
        severity: Error,
        requires: [],
        run: nics,
    };
}

fn nics(ctx: &Context<'_>) -> Vec<Outcome> {
    if ctx.profile.nics.is_empty() {
        return vec![Outcome::not_applicable(
            "no nic ports expected (neither the intent nor a profile names any)",
        )];
    }
    ctx.profile
        .nics
        .iter()
        .map(|nic| nic_outcome(ctx.facts, nic).subject(nic.name()))
        .collect()
}

fn nic_outcome(facts: &Facts, nic: &NicExpectation) -> Outcome {
    let place = cite(nic.from.as_ref());
    let netdev_of = |name: &str| facts.net.get(name);
    let rdma_named = |name: &str| facts.rdma.list().iter().find(|d| d.name == name);
    let rdma_of_netdev = |name: &str| {
        facts
            .rdma
            .list()
            .iter()
            .find(|d| d.netdevs.iter().any(|n| n == name))
    };
    let netdev = nic.pf.as_deref().and_then(netdev_of);
    let rdma = match (&nic.rdma_device, &nic.pf) {
        (Some(dev), _) => rdma_named(dev),
        (None, Some(pf)) => rdma_of_netdev(pf),
        (None, None) => None,
    };
    let netdev = netdev.or_else(|| {
        nic.pf
            .is_none()
            .then(|| rdma.and_then(|d| d.netdevs.first()))
            .flatten()
            .and_then(|name| netdev_of(name))
    });
    // Every kernel lists its interfaces (`lo` at least) in /sys/class/net
    // (net/core/net-sysfs.c, netdev_kobject_init): without the directory
    // the capture did not hold it, and a missing name means nothing.
    if let (Some(pf), None, Ok(None) | Err(_)) = (&nic.pf, netdev, &facts.net.devices) {
        let why = match &facts.net.devices {
            Err(gap) => gap.reason.clone(),
            _ => "the directory is absent".to_owned(),
        };
        return Outcome::unknown(format!(
            "nic {}{place}: cannot tell whether netdev {pf} exists: /sys/class/net: {why}",
            nic.name()
        ))
        .evidence("/sys/class/net", "<missing>");
    }
    // /sys/class/infiniband is there on the live host once ib_core has a
    // device; a capture may just not hold it, and a missing name there
    // means nothing either (a read error never does).
    let rdma_unknown = match &facts.rdma.devices {
        Err(gap) => Some(gap.reason.clone()),
        Ok(None) if !facts.live => Some("not in the capture".to_owned()),
        _ => None,
    };
    if let (Some(dev), None, Some(why)) = (&nic.rdma_device, rdma, rdma_unknown) {
        return Outcome::unknown(format!(
            "nic {}{place}: cannot tell whether rdma device {dev} exists: /sys/class/infiniband: {why}",
            nic.name()
        ))
        .evidence("/sys/class/infiniband", "<missing>");
    }
    let mut missing = Vec::new();
    if let Some(pf) = &nic.pf
        && netdev.is_none()
    {
        missing.push(format!("no netdev {pf} in /sys/class/net"));
    }
    if let Some(dev) = &nic.rdma_device
        && rdma.is_none()
    {
        missing.push(format!("no rdma device {dev} in /sys/class/infiniband"));
    }
    if !missing.is_empty() {
        // A listing of what the host has makes a renamed port obvious.
        let devices: Vec<&str> = facts.rdma.list().iter().map(|d| d.name.as_str()).collect();
        return Outcome::fail(format!(
            "expected nic {}{place}: {}",
            nic.name(),
            missing.join(", ")
        ))
        .evidence(
            "/sys/class/infiniband",
            if devices.is_empty() {
                "<no rdma device>".to_owned()
            } else {
                devices.join(" ")
            },
        )
        .fix(
            Remediation::new("compare the host's port names with the intent's nics")
                .command("ip -br link")
                .command("rdma link"),
        );
    }
    if let (Some(netdev), Some(rdma)) = (netdev, rdma)
        && !rdma.netdevs.iter().any(|n| n == &netdev.name)
    {
        return Outcome::fail(format!(
            "expected nic {}{place}: {} is not a netdev of {} (its netdevs: {})",
            nic.name(),
            netdev.name,
            rdma.name,
            if rdma.netdevs.is_empty() {
                "none".to_owned()
            } else {
                rdma.netdevs.join(" ")
            }
        ))
        .evidence(
            format!("{}/device/net", rdma.sysfs()),
            rdma.netdevs.join(" "),
        );
    }
    let mut comparison = Comparison::default();
    let pci = netdev
        .and_then(|n| n.pci.clone())
        .or_else(|| rdma.and_then(|d| d.pci.clone()));
    if let Some(vfs) = nic.vfs {
        let seen = match pci.as_deref().and_then(|a| facts.pci.get(a)) {
            Some(device) => match &device.sriov {
                Ok(Some(sriov)) => Ok(sriov.num_vfs),
                Ok(None) if vfs == 0 => Ok(0),
                Ok(None) => Err(format!("{} has no sriov_numvfs", device.address)),
                Err(gap) => Err(gap.reason.clone()),
            },
            None => Err("its pci function is unknown".to_owned()),
        };
        let source = pci.as_deref().map_or_else(
            || "sriov_numvfs".to_owned(),
            |a| format!("{PCI_DEVICES}/{a}/sriov_numvfs"),
        );
        comparison.value("vfs", &vfs, seen, source);
    }
    if let Some(mtu) = nic.mtu {
        match netdev {
            Some(netdev) => comparison.value(
                "mtu",
                &mtu,
                known(&netdev.mtu, &format!("{}/mtu", netdev.sysfs())),
                format!("{}/mtu", netdev.sysfs()),
            ),
            None => comparison
                .unknown
                .push("mtu: cannot tell (no netdev)".to_owned()),
        }
    }
    let port = rdma.and_then(|d| d.port_list().first().map(|p| (d, p)));
    if let Some(link) = nic.link_type {
        match port {
            Some((device, port)) => {
                let path = format!("{}/link_layer", device.port_dir(port.number));
                let seen = known(&port.link_layer, &path).map(|layer| match layer {
                    LinkLayer::Ethernet => "Ethernet".to_owned(),
                    LinkLayer::InfiniBand => "InfiniBand".to_owned(),
                    LinkLayer::Other(text) => text,
                });
                comparison.value("link", &link.sysfs_name().to_owned(), seen, path);
            }
            None => comparison
                .unknown
                .push("link: cannot tell (no rdma port)".to_owned()),
        }
    }
    if let Some(rate) = nic.rate_gbps {
        match port {
            Some((device, port)) => {
                let path = format!("{}/rate", device.port_dir(port.number));
                match known(&port.rate, &path) {
                    Ok(seen) => {
                        comparison.evidence.push((path, seen.text.clone()));
                        if seen.gbps + f64::EPSILON < f64::from(rate) {
                            comparison
                                .drift
                                .push(format!("rate: expected {rate} Gb/s, seen {}", seen.text));
                        } else {
                            comparison.agreed.push(format!("rate {}", seen.text));
                        }
                    }
                    Err(why) => comparison
                        .unknown
                        .push(format!("rate: cannot tell ({why})")),
                }
            }
            None => comparison
                .unknown
                .push("rate: cannot tell (no rdma port)".to_owned()),
        }
    }
    if comparison.agreed.is_empty() && comparison.drift.is_empty() && comparison.unknown.is_empty()
    {
        comparison.agreed.push("present".to_owned());
    }
    let outcome = comparison.outcome(&format!("nic {}", nic.name()), nic.from.as_ref());
    if outcome.status.is_problem() {
        outcome.fix(
            Remediation::new(
                "set the port as the intent says: vfs by the sr-iov policy, mtu on the pf and the rail network, link type in the nic firmware",
            )
            .command("ip -d link show"),
        )
    } else {
        outcome
    }
}

declare_check! {
    /// The hugepage pool is the size the pool declares, on every NUMA node.
    ///
    /// ## What it checks
    /// With an expected pool (the pool's `hugepages`: size and pages per
    /// node of the cluster, which `zerohop plan` renders as
    /// `hugepagesz=<size> hugepages=<count>` on the kernel command line):
    /// the command line requests that count for that size; the pool's
    /// `nr_hugepages` under `/sys/kernel/mm/hugepages` holds at least that
    /// many; and each NUMA node with memory holds at least its share,
    /// `count / nodes` rounded down. The kernel hands a boot-time
    /// reservation out round-robin over the nodes with memory (linux
    /// `mm/hugetlb.c`, `__alloc_bootmem_huge_page` and
    /// `alloc_pool_huge_folio`, `for_each_node_mask_to_alloc` over
    /// `N_MEMORY`), so a node below its share ran short at boot.
    ///
    /// ## Why it matters
    /// The kubelet advertises the pool per node and the Topology Manager
    /// (`single-numa-node`, as the plan configures it) places a pod's
    /// hugepages on the NUMA node of its GPU and NIC: a node that came up
    /// short leaves pods pending or on the wrong socket.
    ///
    /// ## How to fix
    /// Put the request on the kernel command line as the plan renders it
    /// (`host/<pool>/etc/default/grub.d/90-zerohop.cfg`, or the pool's
    /// kernel-arguments `MachineConfig`) and reboot; a node that stays
    /// short lacks free memory at boot (`dmesg | grep -i huge`).
    ///
    /// ## Evidence
    /// `/proc/cmdline` (the request, in its order), `/sys/kernel/mm/hugepages`
    /// (the pool) and `/sys/devices/system/node/node*/hugepages` (each node's
    /// share). A directory absent from a capture is `unknown`; what the command
    /// line shows still decides.
    ///
    /// ## Source
    /// linux v6.12 `mm/hugetlb.c` (`hugepagesz_setup`, `hugepages_setup`,
    /// `hugetlb_sysfs_init`, `hugetlb_register_node`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_kernel.rs::csit_hugepage_parameters_are_quoted_in_their_order
    /// Real capture: crates/zerohop-doctor/tests/corpus_gaps.rs::csit_cmdline_without_hugepage_directories_is_unknown
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/CONF003/fail-node-short/`:
    ///
    /// ```text
    /// conformance
    ///   fail           CONF003  hugepages-differ  hugepages differ from the intent (cluster.yaml:16): node 1 holds 0 pages, below its share of 32
    ///                  /proc/cmdline = default_hugepagesz=1G hugepagesz=1G hugepages=64
    ///                  /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages = 64
    ///                  /sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages = 64
    ///                  /sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages = 0
    ///
    /// what to fix first
    ///   1. CONF003 hugepages-differ: hugepages differ from the intent (cluster.yaml:16): node 1 holds 0 pages, below its share of 32
    ///      fix: request the pool at boot as the plan renders it, then reboot
    ///        # kernel command line: default_hugepagesz=1G hugepagesz=1G hugepages=64
    ///        dmesg | grep -i huge
    /// ```
    pub static HUGEPAGES_CONFORMANCE = {
        id: "CONF003",
        name: "hugepages-differ",
        group: Conformance,
        severity: Error,
        requires: [],
        run: hugepages,
    };
}

fn hugepages(ctx: &Context<'_>) -> Vec<Outcome> {
    let Some(expected) = &ctx.profile.hugepages else {
        return vec![Outcome::not_applicable(
            "no hugepage pool expected (neither the intent nor a profile names one)",
        )];
    };
    let facts = ctx.facts;
    let size = bytes(expected.size_kib.saturating_mul(1024));
    let place = cite(expected.from.as_ref());
    let mut drift = Vec::new();
    let mut outcome_evidence: Vec<(String, String)> = Vec::new();
    match &facts.kernel.cmdline {
        Ok(Some(cmdline)) => {
            let requested = hugepage_requests(cmdline)
                .into_iter()
                .find(|r| r.size_kib == expected.size_kib)
                .map(|r| r.pages);
            outcome_evidence.push((
                CMDLINE.to_owned(),
                cmdline.show_in_order(&["default_hugepagesz", "hugepagesz", "hugepages"]),
            ));
            if requested != Some(expected.pages) {
                drift.push(format!(
                    "the command line requests {} pages of {size}, expected {}",
                    requested.unwrap_or(0),
                    expected.pages
                ));
            }
        }
        Ok(None) => {}
        Err(gap) => return vec![Outcome::gap(gap)],
    }
    let pool_path = format!(
        "/sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages",
        expected.size_kib
    );
    let mut unknown: Vec<String> = Vec::new();
    match facts.memory.pool(expected.size_kib).map(|p| &p.total) {
        // Without the directory the capture did not hold it: every kernel
        // with hugetlbfs creates it at boot (mm/hugetlb.c, hugetlb_sysfs_init).
        _ if matches!(facts.memory.hugepages, Ok(None)) => unknown
            .push("/sys/kernel/mm/hugepages is absent: the pool's size is unknown".to_owned()),
        Some(Ok(Some(total))) => {
            outcome_evidence.push((pool_path, total.to_string()));
            if *total < expected.pages {
                drift.push(format!(
                    "{total} pages of {size} reserved, expected {}",
                    expected.pages
                ));
            }
        }
        Some(Err(gap)) => return vec![Outcome::gap(gap)],
        Some(Ok(None)) | None => {
            drift.push(format!(
                "no {size} hugepage pool in /sys/kernel/mm/hugepages"
            ));
        }
    }
    // The nodes the kernel spreads the reservation over: those with memory
    // where /sys says so, else every node it lists.
    let nodes: Vec<_> = facts
        .numa_nodes()
        .iter()
        .filter(|n| facts.memory.node_total_kib(n.id) != Some(0))
        .collect();
    if let Ok(count) = u64::try_from(nodes.len())
        && count > 0
    {
        let share = expected.pages / count;
        for node in nodes {
            let path = format!(
                "/sys/devices/system/node/node{}/hugepages/hugepages-{}kB/nr_hugepages",
                node.id, expected.size_kib
            );
            match node.pool(expected.size_kib).map(|p| &p.total) {
                Some(Ok(Some(got))) => {
                    outcome_evidence.push((path, got.to_string()));
                    if *got < share {
                        drift.push(format!(
                            "node {} holds {got} pages, below its share of {share}",
                            node.id
                        ));
                    }
                }
                Some(Err(gap)) => return vec![Outcome::gap(gap)],
                _ if share > 0 && matches!(node.hugepages, Ok(None)) => unknown.push(format!(
                    "/sys/devices/system/node/node{}/hugepages is absent: its share is unknown",
                    node.id
                )),
                Some(Ok(None)) | None if share > 0 => {
                    drift.push(format!(
                        "node {} has no {size} pages, below its share of {share}",
                        node.id
                    ));
                }
                Some(Ok(None)) | None => {}
            }
        }
    }
    let mut outcome = if drift.is_empty() && !unknown.is_empty() {
        Outcome::unknown(format!(
            "hugepages of the intent{place}: cannot tell: {}",
            unknown.join("; ")
        ))
    } else if drift.is_empty() {
        Outcome::pass(format!(
            "{} hugepages of {size} reserved and spread over the numa nodes",
            expected.pages
        ))
    } else {
        let arg = if expected.size_kib == 1 << 20 {
            "1G"
        } else {
            "2M"
        };
        Outcome::fail(format!(
            "hugepages differ from the intent{place}: {}",
            drift.join("; ")
        ))
        .fix(
            Remediation::new("request the pool at boot as the plan renders it, then reboot")
                .command(format!(
                    "# kernel command line: default_hugepagesz={arg} hugepagesz={arg} hugepages={}",
                    expected.pages
                ))
                .command("dmesg | grep -i huge"),
        )
    };
    for (source, value) in outcome_evidence {
        outcome = outcome.evidence(source, value);
    }
    vec![outcome]
}

declare_check! {
    /// The kernel command line isolates the CPUs the pool declares.
    ///
    /// ## What it checks
    /// With expected isolated CPUs (the pool's `isolatedCpus`): each of
    /// `isolcpus=`, `nohz_full=` and `rcu_nocbs=` on `/proc/cmdline` names
    /// exactly that set, and `isolcpus=` carries `managed_irq`, as
    /// `zerohop plan` renders them (`isolcpus=managed_irq,<cpus>`). With
    /// expected reserved CPUs (`reservedCpus`, the kubelet's
    /// `reservedSystemCPUs`): they are online
    /// (`/sys/devices/system/cpu/online`) and none of them is isolated.
    /// Whether the kernel applied the lists is KRN003's question.
    ///
    /// ## Why it matters
    /// The kubelet's CPU Manager hands the CPUs outside the reserved set to
    /// pods; the isolation keeps timer ticks, RCU callbacks and managed
    /// interrupts off the cores those pods poll on. A node with other lists
    /// than its pool runs the data path's threads beside kernel noise, or
    /// reserves for the system CPUs that the kernel isolates.
    ///
    /// ## How to fix
    /// Put the pool's lists on the kernel command line as the plan renders
    /// them (`host/<pool>/etc/default/grub.d/90-zerohop.cfg`, or the
    /// pool's kernel-arguments `MachineConfig`) and reboot; keep the
    /// reserved CPUs out of them.
    ///
    /// ## Evidence
    /// `/proc/cmdline` (`isolcpus=`, `nohz_full=`, `rcu_nocbs=`) and
    /// `/sys/devices/system/cpu/online` for the reserved CPUs. Without the
    /// command line it is `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `kernel/sched/isolation.c` (`housekeeping_isolcpus_setup`:
    /// the `managed_irq` flag) and `Documentation/admin-guide/kernel-parameters.txt`.
    /// Real capture: crates/zerohop-doctor/tests/corpus_kernel.rs::csit_grace_isolation_against_the_intent
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/CONF004/fail-lists-differ/`:
    ///
    /// ```text
    /// conformance
    ///   fail           CONF004  cpu-isolation-differs  cpu isolation differs from the intent: isolcpus= lacks managed_irq (cluster.yaml:18): managed interrupts stay on the isolated cpus; isolcpus: expected 4-55,60-111 (cluster.yaml:18), seen 4-55
    ///                  /proc/cmdline = isolcpus=4-55 nohz_full=4-55,60-111 rcu_nocbs=4-55,60-111
    ///                  /sys/devices/system/cpu/online = 0-111
    ///
    /// what to fix first
    ///   1. CONF004 cpu-isolation-differs: cpu isolation differs from the intent: isolcpus= lacks managed_irq (cluster.yaml:18): managed interrupts stay on the isolated cpus; isolcpus: expected 4-55,60-111 (cluster.yaml:18), seen 4-55
    ///      fix: put the pool's isolation lists on the kernel command line as the plan renders them, then reboot
    ///        # kernel command line: isolcpus=managed_irq,4-55,60-111 nohz_full=4-55,60-111 rcu_nocbs=4-55,60-111
    /// ```
    pub static CPU_ISOLATION_CONFORMANCE = {
        id: "CONF004",
        name: "cpu-isolation-differs",
        group: Conformance,
        severity: Error,
        requires: [],
        run: cpu_isolation,
    };
}

/// The `isolcpus=` flag the plan renders (see `KRN003`'s documentation for
/// why `managed_irq` and not `domain`).
const MANAGED_IRQ: &str = "managed_irq";

fn cpu_isolation(ctx: &Context<'_>) -> Vec<Outcome> {
    let Some(expected) = ctx
        .profile
        .cpus
        .as_ref()
        .filter(|c| c.isolated.is_some() || c.reserved.is_some())
    else {
        return vec![Outcome::not_applicable(
            "no cpu isolation expected (neither the intent nor a profile names one)",
        )];
    };
    let cmdline = need!(require(&ctx.facts.kernel.cmdline, || Outcome::unknown(
        "/proc/cmdline is absent"
    )));
    let parse = |text: &str, what: &str| {
        CpuSet::parse(text).map_err(|err| {
            Box::new(Outcome::unknown(format!(
                "cannot read the expected {what} cpus `{text}`: {err}"
            )))
        })
    };
    let mut drift = Vec::new();
    let mut shown = Vec::new();
    // The isolated set on the command line (isolcpus, else nohz_full), to
    // hold the reserved CPUs against.
    let mut isolated_now = CpuSet::default();
    for key in ["isolcpus", "nohz_full", "rcu_nocbs"] {
        let Some(value) = cmdline.value(key) else {
            continue;
        };
        shown.push(format!("{key}={value}"));
        let cpus = if key == "isolcpus" {
            Isolcpus::parse(value).map(|i| i.cpus)
        } else {
            CpuSet::parse(value)
        };
        if let Ok(cpus) = cpus {
            isolated_now.0.extend(cpus.0);
        }
    }
    if let Some(text) = &expected.isolated {
        let wanted = need!(parse(text, "isolated"));
        let place = cite(expected.isolated_from.as_ref());
        for key in ["isolcpus", "nohz_full", "rcu_nocbs"] {
            let Some(value) = cmdline.value(key) else {
                drift.push(format!("{key}= absent, expected {wanted}{place}"));
                continue;
            };
            let seen = if key == "isolcpus" {
                match Isolcpus::parse(value) {
                    Ok(iso) => {
                        if !iso.flags.iter().any(|f| f == MANAGED_IRQ) {
                            drift.push(format!(
                                "isolcpus= lacks {MANAGED_IRQ}{place}: managed interrupts stay on the isolated cpus"
                            ));
                        }
                        Ok(iso.cpus)
                    }
                    Err(err) => Err(err),
                }
            } else {
                CpuSet::parse(value)
            };
            match seen {
                Ok(seen) if seen == wanted => {}
                Ok(seen) => drift.push(format!("{key}: expected {wanted}{place}, seen {seen}")),
                Err(err) => drift.push(format!("{key}: `{value}` is not a cpu list ({err})")),
            }
        }
    }
    let mut outcome_evidence = vec![(
        CMDLINE.to_owned(),
        if shown.is_empty() {
            "<no isolation parameters>".to_owned()
        } else {
            shown.join(" ")
        },
    )];
    if let Some(text) = &expected.reserved {
        let reserved = need!(parse(text, "reserved"));
        let place = cite(expected.reserved_from.as_ref());
        let overlap = CpuSet(reserved.0.intersection(&isolated_now.0).copied().collect());
        if !overlap.is_empty() {
            drift.push(format!(
                "reserved cpus {reserved}{place} include isolated cpus {overlap}"
            ));
        }
        if let Ok(Some(online)) = &ctx.facts.kernel.isolation.online {
            outcome_evidence.push((
                "/sys/devices/system/cpu/online".to_owned(),
                online.to_string(),
            ));
            let offline = reserved.minus(online);
            if !offline.is_empty() {
                drift.push(format!(
                    "reserved cpus {reserved}{place} include cpus that are not online: {offline}"
                ));
            }
        }
    }
    let mut outcome = if drift.is_empty() {
        Outcome::pass("cpu isolation and reservation as the intent says")
    } else {
        let mut fix = Remediation::new(
            "put the pool's isolation lists on the kernel command line as the plan renders them, then reboot",
        );
        if let Some(text) = &expected.isolated {
            fix = fix.command(format!(
                "# kernel command line: isolcpus={MANAGED_IRQ},{text} nohz_full={text} rcu_nocbs={text}"
            ));
        }
        Outcome::fail(format!(
            "cpu isolation differs from the intent: {}",
            drift.join("; ")
        ))
        .fix(fix)
    };
    for (source, value) in outcome_evidence {
        outcome = outcome.evidence(source, value);
    }
    vec![outcome]
}

declare_check! {
    /// Each NFS mount the intent declares is mounted with the plan's options.
    ///
    /// ## What it checks
    /// For each expected NFS mount (the intent's `storage.nfsRdma`): the
    /// mount table (`/proc/self/mountinfo`) has an `nfs` or `nfs4` mount
    /// at the mount point, from `server:/export`, whose options include
    /// every option the plan's mount unit passes to the kernel
    /// (`vers=4.2`, `proto=rdma`, `port=20049`, `nconnect=<n>`,
    /// `rsize`/`wsize` of 1 MiB, `hard`; `_netdev` is for `mount(8)` and
    /// never reaches the table). One finding per mount.
    ///
    /// ## Why it matters
    /// A mount over TCP, with one connection instead of `nconnect`, with
    /// smaller transfers or `soft` works, and reads training data at a
    /// fraction of the rate the storage network was sized for, or returns
    /// errors to the job on a server hiccup.
    ///
    /// ## How to fix
    /// Mount with the unit the plan renders
    /// (`host/<pool>/etc/systemd/system/<mount>.mount` or the pool's
    /// storage `MachineConfig`): unmount the wrong mount and start the
    /// unit again. A value the server lowers (`rsize`, `wsize`) is the
    /// server's limit: raise it there.
    ///
    /// ## Evidence
    /// The NFS entries of `/proc/self/mountinfo` (else `/proc/mounts`) at the
    /// expected mount point, and their options. No mount table is `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `fs/nfs/super.c` (`nfs_show_mount_options`) and
    /// `fs/proc_namespace.c` (`show_mountinfo`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::node_exporter_nfs_mount_against_the_intent
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/CONF005/fail-no-nconnect/`:
    ///
    /// ```text
    /// conformance
    ///   fail           CONF005  nfs-mount-differs  /mnt/ai-data: nfs mount /mnt/ai-data differs from the intent (cluster.yaml:37): nconnect: expected 16, absent
    ///                  /proc/self/mountinfo = 40 21 0:50 / /mnt/ai-data rw,relatime shared:40 - nfs4 10.10.0.10:/export/ai-data rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.10.0.21,local_lock=none,addr=10.10.0.10
    ///
    /// what to fix first
    ///   1. CONF005 nfs-mount-differs (/mnt/ai-data): nfs mount /mnt/ai-data differs from the intent (cluster.yaml:37): nconnect: expected 16, absent
    ///      fix: remount with the unit the plan renders
    ///        umount /mnt/ai-data && systemctl start 'mnt-ai\x2ddata.mount'
    /// ```
    pub static NFS_MOUNT_CONFORMANCE = {
        id: "CONF005",
        name: "nfs-mount-differs",
        group: Conformance,
        severity: Error,
        requires: [],
        run: nfs_mounts,
    };
}

fn nfs_mounts(ctx: &Context<'_>) -> Vec<Outcome> {
    if ctx.profile.nfs_mounts.is_empty() {
        return vec![Outcome::not_applicable(
            "no nfs mount expected (neither the intent nor a profile names one)",
        )];
    }
    let table = need!(require(&ctx.facts.mounts.table, || Outcome::unknown(
        "the mount table is absent"
    )));
    ctx.profile
        .nfs_mounts
        .iter()
        .map(|nfs| nfs_outcome(table, nfs).subject(nfs.mount_point.clone()))
        .collect()
}

fn nfs_outcome(table: &zerohop_host::facts::mounts::MountTable, nfs: &NfsExpectation) -> Outcome {
    let place = cite(nfs.from.as_ref());
    let wanted = zerohop_host::facts::mounts::normalize(&nfs.mount_point);
    // The last mount at the point is the one in effect.
    let Some(entry) = table.entries.iter().rev().find(|e| e.mount_point == wanted) else {
        return Outcome::fail(format!(
            "expected an nfs mount at {}{place}: nothing is mounted there",
            nfs.mount_point
        ))
        .evidence(table.source, format!("<no mount at {}>", nfs.mount_point))
        .fix(
            Remediation::new("start the mount unit the plan renders")
                .command("systemctl list-units --type=mount --type=path"),
        );
    };
    let mut drift = Vec::new();
    if !entry.fstype.starts_with("nfs") {
        drift.push(format!("type: expected nfs, seen {}", entry.fstype));
    }
    if let Some(source) = &nfs.source
        && &entry.source != source
    {
        drift.push(format!("source: expected {source}, seen {}", entry.source));
    }
    for option in &nfs.options {
        match option.split_once('=') {
            Some((key, value)) => match entry.options.get(key) {
                Some(seen) if seen == value => {}
                Some(seen) => drift.push(format!("{key}: expected {value}, seen {seen}")),
                None => drift.push(format!("{key}: expected {value}, absent")),
            },
            None if entry.options.has(option) => {}
            None => drift.push(format!("{option}: expected, absent")),
        }
    }
    let outcome = if drift.is_empty() {
        Outcome::pass(format!(
            "{} mounted from {} with the intent's options",
            nfs.mount_point, entry.source
        ))
    } else {
        Outcome::fail(format!(
            "nfs mount {} differs from the intent{place}: {}",
            nfs.mount_point,
            drift.join("; ")
        ))
        .fix(
            Remediation::new("remount with the unit the plan renders").command(format!(
                "umount {} && systemctl start {}",
                zerohop_known::shell::quote(&nfs.mount_point),
                zerohop_known::shell::quote(&zerohop_known::systemd::mount_unit_name(&wanted))
            )),
        )
    };
    outcome.evidence(table.source, entry.line.clone())
}

declare_check! {
    /// Each NVMe-oF target the intent declares has a live controller.
    ///
    /// ## What it checks
    /// For each expected target (the intent's `storage.nvmeOf.targets`,
    /// reached over RDMA): a fabric controller under
    /// `/sys/class/nvme-subsystem` whose `address` has `traddr=<address>`,
    /// on the expected `transport`, in state `live`. One finding per
    /// target.
    ///
    /// ## Why it matters
    /// The plan connects the targets once the NIC driver is ready
    /// (`/etc/nvme/discovery.conf`, `zerohop-nvmf-connect.service`, started
    /// by `zerohop-nvmf-connect.path`); a target the node is not connected
    /// to, or connected over TCP where RDMA was planned, leaves its
    /// namespaces missing or slow.
    ///
    /// ## How to fix
    /// Check the discovery configuration and the units
    /// (`systemctl status zerohop-nvmf-connect.path
    /// zerohop-nvmf-connect.service`), then connect by hand:
    /// `nvme connect-all --transport=rdma --traddr=<address>`.
    ///
    /// ## Evidence
    /// `address`, `transport` and `state` of the controllers of
    /// `/sys/class/nvme-subsystem`. Without the class directory in a capture
    /// it is `unknown`; on the live host no directory means no controller.
    ///
    /// ## Source
    /// linux v6.12 `drivers/nvme/host/fabrics.c` (`nvmf_get_address`:
    /// `traddr=…,trsvcid=…`) and `drivers/nvme/host/core.c` (`state`,
    /// `transport`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::procfs_nvme_targets_against_the_intent
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/CONF006/fail-tcp-instead-of-rdma/`:
    ///
    /// ```text
    /// conformance
    ///   fail           CONF006  nvme-target-differs  10.0.10.1: nvme-of target 10.0.10.1 (nvme1) differs from the intent (storage.yaml:12): transport: expected rdma, seen tcp
    ///                  /sys/class/nvme-subsystem/nvme-subsys0/nvme1/transport = tcp
    ///                  /sys/class/nvme-subsystem/nvme-subsys0/nvme1/state = live
    ///
    /// what to fix first
    ///   1. CONF006 nvme-target-differs (10.0.10.1): nvme-of target 10.0.10.1 (nvme1) differs from the intent (storage.yaml:12): transport: expected rdma, seen tcp
    /// ```
    pub static NVME_TARGET_CONFORMANCE = {
        id: "CONF006",
        name: "nvme-target-differs",
        group: Conformance,
        severity: Error,
        requires: [],
        run: nvme_targets,
    };
}

fn nvme_targets(ctx: &Context<'_>) -> Vec<Outcome> {
    if ctx.profile.nvme_targets.is_empty() {
        return vec![Outcome::not_applicable(
            "no nvme-of target expected (neither the intent nor a profile names one)",
        )];
    }
    match &ctx.facts.nvme.subsystems {
        Err(gap) => return vec![Outcome::gap(gap)],
        // On the live host no class directory means no NVMe-oF controller,
        // which the targets then fail; a capture may just lack it.
        Ok(None) if !ctx.facts.live => {
            return vec![
                Outcome::unknown(format!(
                    "cannot tell: {SUBSYSTEMS} is not in the capture (not captured, or no nvme subsystem)"
                ))
                .evidence(SUBSYSTEMS, "<missing>"),
            ];
        }
        Ok(_) => {}
    }
    ctx.profile
        .nvme_targets
        .iter()
        .map(|target| nvme_outcome(ctx.facts, target).subject(target.address.clone()))
        .collect()
}

/// `traddr` of a controller's `address` (`traddr=10.0.0.1,trsvcid=4420`).
fn traddr(address: &str) -> Option<&str> {
    address
        .split(',')
        .find_map(|part| part.trim().strip_prefix("traddr="))
}

fn nvme_outcome(facts: &Facts, target: &NvmeTargetExpectation) -> Outcome {
    let place = cite(target.from.as_ref());
    let controllers: Vec<_> = facts
        .nvme
        .list()
        .iter()
        .flat_map(|s| &s.controllers)
        .filter(|c| c.is_fabric() && c.address.as_deref().and_then(traddr) == Some(&target.address))
        .collect();
    let Some(best) = controllers
        .iter()
        .find(|c| c.is_live() && (target.transport.is_none() || c.transport == target.transport))
        .or_else(|| controllers.first())
    else {
        return Outcome::fail(format!(
            "expected a controller to nvme-of target {}{place}: none",
            target.address
        ))
        .fix(
            Remediation::new("connect the target as the plan's discovery configuration says")
                .command(format!(
                    "systemctl status {} {}",
                    zerohop_known::storage::NVMF_CONNECT_PATH,
                    zerohop_known::storage::NVMF_CONNECT_SERVICE
                ))
                .command(format!(
                    "nvme connect-all --transport={} --traddr={}",
                    zerohop_known::shell::quote(target.transport.as_deref().unwrap_or("rdma")),
                    zerohop_known::shell::quote(&target.address)
                )),
        );
    };
    let mut comparison = Comparison::default();
    if let Some(transport) = &target.transport {
        comparison.value(
            "transport",
            transport,
            best.transport
                .clone()
                .ok_or_else(|| "unreadable".to_owned()),
            format!("{}/transport", best.dir),
        );
    }
    comparison.value(
        "state",
        &"live".to_owned(),
        best.state.clone().ok_or_else(|| "unreadable".to_owned()),
        format!("{}/state", best.dir),
    );
    comparison.outcome(
        &format!("nvme-of target {} ({})", target.address, best.name),
        target.from.as_ref(),
    )
}
