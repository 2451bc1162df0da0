//! Node configuration: OpenShift `MachineConfig`s and `KubeletConfig`, or
//! the same as host files under `host/` on Kubernetes.

use base64::Engine;
use serde_json::{Value, json};

use zerohop_known::operators::DOCA_DRIVER_READY_FILE;
use zerohop_known::roce::{LOSSLESS_DSCP, LOSSLESS_PRIORITY, traffic_class};
use zerohop_known::shell::{join, quote};
use zerohop_known::systemd::{escape_path, mount_unit_name};

use super::{ManifestFile, Step, plain, unit};
use crate::intent::{CpuVendor, HugepageSize, LinkType, Platform};
use crate::plan::{Plan, PoolPlan};

/// The label of a MachineConfig that names the role (the pool) it is for.
const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";
/// The prefix of the label by which KubeletConfigs select a pool; the
/// Machine Config Operator sets it on `master` and `worker` only
/// (openshift/machine-config-operator `docs/KubeletConfigDesign.md`), so a
/// custom pool carries it by our hand.
const POOL_LABEL_PREFIX: &str = "pools.operator.machineconfiguration.openshift.io/";
/// The role every custom pool keeps besides its own: it inherits the
/// MachineConfigs of the `worker` pool (`docs/custom-pools.md`).
const WORKER_ROLE: &str = "worker";
/// Where the RoCE QoS script is installed on the nodes.
const QOS_SCRIPT: &str = "/usr/local/sbin/zerohop-roce-qos.sh";
/// The oneshot service that runs [`QOS_SCRIPT`].
const QOS_SERVICE: &str = "zerohop-roce-qos.service";
/// The path unit that runs [`QOS_SERVICE`] again after each driver load.
const QOS_PATH: &str = "zerohop-roce-qos.path";
// The oneshot service that connects the NVMe-oF targets, and the path unit
// that runs it after each driver load (named once, for the doctor's advice).
use zerohop_known::storage::{
    NVMF_CONNECT_PATH as NVMF_PATH, NVMF_CONNECT_SERVICE as NVMF_SERVICE,
};
/// nvme-cli's own boot-time connection service, which connects before the
/// DOCA driver container and so loads the inbox `nvme_rdma` (nvme-cli
/// `nvmf-autoconnect/systemd/nvmf-autoconnect.service`).
pub(crate) const NVMF_AUTOCONNECT: &str = "nvmf-autoconnect.service";
/// Where nvme-cli is installed on RHCOS and Debian-like hosts.
const NVME_CLI: &str = "/usr/sbin/nvme";
/// The file `nvme connect-all` reads its targets from, without arguments
/// (nvme-cli `fabrics.c`, `PATH_NVMF_DISC`).
const NVME_DISCOVERY_CONF: &str = "/etc/nvme/discovery.conf";

/// The kernel arguments of a pool.
///
/// - IOMMU: `iommu=pt` puts devices the host uses in passthrough, so DMA
///   (and GPUDirect peer traffic) is not translated. Intel's IOMMU is off
///   unless `intel_iommu=on`; AMD's is on by default, and `amd_iommu=`
///   takes `fullflush`, `off`, `force_isolation`, `pgtbl_v1`, `pgtbl_v2`,
///   `irtcachedis`, `nohugepages`, `v2_pgsizes_only`, never `on`
///   (linux `Documentation/admin-guide/kernel-parameters.txt`, `amd_iommu=`).
/// - CPU isolation: `isolcpus=managed_irq,…` keeps managed interrupts off
///   the workload CPUs, without `domain`: the kubelet's shared pool is every
///   CPU outside `reservedSystemCPUs`, and CPUs removed from the scheduler
///   domains get no load balancing, so every process of a burstable pod
///   would stay on the CPU it started on (linux `kernel-parameters.txt`,
///   `isolcpus=`: "domain: Isolate from the general SMP balancing and
///   scheduling algorithms"). OpenShift's own Node Tuning Operator isolates
///   with `managed_irq` only (openshift/cluster-node-tuning-operator
///   `assets/performanceprofile/tuned/openshift-node-performance`,
///   `isolcpus=managed_irq,${isolated_cores}`).
fn kernel_arguments(pool: &PoolPlan) -> Vec<String> {
    let mut args = Vec::new();
    if pool.cpu_vendor == CpuVendor::Intel {
        args.push("intel_iommu=on".to_owned());
    }
    args.push("iommu=pt".to_owned());
    if let Some((size, count)) = pool.hugepages {
        let size = match size {
            HugepageSize::OneGi => "1G",
            HugepageSize::TwoMi => "2M",
        };
        args.extend([
            format!("default_hugepagesz={size}"),
            format!("hugepagesz={size}"),
            format!("hugepages={count}"),
        ]);
    }
    if let Some(cpus) = &pool.isolated_cpus {
        args.extend([
            format!("isolcpus=managed_irq,{cpus}"),
            format!("nohz_full={cpus}"),
            format!("rcu_nocbs={cpus}"),
        ]);
    }
    args
}

/// The kubelet settings of a pool: the static CPU manager, so that
/// Guaranteed pods get whole CPUs and the Topology Manager their NUMA
/// hint, and the Topology Manager with the policy chosen from the pool's
/// layout (`validate::topology`) and the `pod` scope. More than 8 NUMA
/// nodes need `max-allowable-numa-nodes`, or the kubelet does not start
/// (Kubernetes documentation, "Control Topology Management Policies on a
/// node"). No `full-pcpus-only`: it rejects a pod whose CPUs are not whole
/// cores (`SMTAlignmentError`), and the pod's size is not held to that.
fn kubelet_settings(pool: &PoolPlan) -> Value {
    use zerohop_known::topology::{
        CPU_MANAGER_POLICY_KEY, DEFAULT_MAX_NUMA_NODES, MAX_ALLOWABLE_NUMA_NODES, POLICY_KEY,
        POLICY_OPTIONS_KEY, SCOPE_KEY, STATIC_CPU_MANAGER, Scope,
    };
    let mut settings = json!({
        CPU_MANAGER_POLICY_KEY: STATIC_CPU_MANAGER,
        "cpuManagerReconcilePeriod": "5s",
        POLICY_KEY: pool.topology_policy.as_str(),
        SCOPE_KEY: Scope::Pod.as_str(),
        "reservedSystemCPUs": pool.reserved_cpus,
    });
    if pool.numa.len() > DEFAULT_MAX_NUMA_NODES {
        settings[POLICY_OPTIONS_KEY] =
            json!({MAX_ALLOWABLE_NUMA_NODES: pool.numa.len().to_string()});
    }
    settings
}

/// A MachineConfig for the nodes of `pool`: its role is the pool's name.
fn machine_config(pool: &PoolPlan, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {ROLE_LABEL: pool.name}},
        "spec": spec,
    })
}

/// The MachineConfigPool of a node pool: the nodes its `nodeSelector`
/// selects leave the `worker` pool for it (a node in `worker` and one
/// custom pool belongs to the custom one, `docs/custom-pools.md`), and it
/// renders the `worker` MachineConfigs and those of its own role, so that
/// the tuning lands on these nodes and no other worker.
fn machine_config_pool(pool: &PoolPlan) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": {
            "name": pool.name,
            "labels": {format!("{POOL_LABEL_PREFIX}{}", pool.name): ""},
        },
        "spec": {
            "machineConfigSelector": {"matchExpressions": [
                {"key": ROLE_LABEL, "operator": "In", "values": [WORKER_ROLE, pool.name]},
            ]},
            "nodeSelector": {"matchLabels": pool.node_selector},
        },
    })
}

/// `oc get mcp` for every pool of the plan.
fn pools_updated(plan: &Plan) -> String {
    let names: Vec<&str> = plan.pools.iter().map(|p| p.name.as_str()).collect();
    format!(
        "oc get mcp {}   # UPDATED=True, UPDATING=False",
        names.join(" ")
    )
}

/// The command that pauses (`true`) or resumes (`false`) every pool of the
/// plan. The Machine Config Operator renders each MachineConfig and
/// KubeletConfig into a new configuration and rolls it out, a reboot of
/// every node, one node at a time; a paused pool gets the configurations
/// but reboots no node until it is resumed, and then once for all of them
/// (openshift/api@c6b22439 `machineconfiguration/v1/types.go`,
/// `MachineConfigPoolSpec.Paused`: "whether or not changes to this machine
/// config pool should be stopped. This includes generating new
/// desiredMachineConfig and update of machines"). Set by command, not in the pool's manifest, so that
/// applying the set again never pauses a pool for good.
fn pause_pools(plan: &Plan, paused: bool) -> String {
    let names: Vec<String> = plan
        .pools
        .iter()
        .map(|p| format!("mcp/{}", p.name))
        .collect();
    let patch = format!("{{\"spec\":{{\"paused\":{paused}}}}}");
    format!(
        "oc patch {} --type merge -p {}",
        join(names.iter().map(String::as_str)),
        quote(&patch)
    )
}

/// One MachineConfigPool per node pool, then kernel arguments and kubelet
/// settings targeting it: first, because they reboot nodes.
pub(crate) fn node_steps(plan: &Plan) -> Vec<Step> {
    if plan.platform != Platform::Openshift {
        return Vec::new();
    }
    let mut pools = Vec::new();
    let mut configs = Vec::new();
    let mut kubelets = Vec::new();
    for pool in &plan.pools {
        pools.push(machine_config_pool(pool));
        configs.push(machine_config(
            pool,
            &format!("50-{}-{}-kernel-args", plan.name, pool.name),
            json!({"config": {"ignition": {"version": "3.2.0"}}, "kernelArguments": kernel_arguments(pool)}),
        ));
        kubelets.push(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "KubeletConfig",
            "metadata": {"name": format!("{}-{}-topology", plan.name, pool.name)},
            "spec": {
                "machineConfigPoolSelector": {"matchLabels": {format!("{POOL_LABEL_PREFIX}{}", pool.name): ""}},
                "kubeletConfig": kubelet_settings(pool),
            },
        }));
    }
    let mut machine_counts: Vec<String> = plan
        .pools
        .iter()
        .map(|pool| {
            format!(
                "oc get mcp {}   # MACHINECOUNT = the nodes of the pool",
                pool.name
            )
        })
        .collect();
    machine_counts.push(format!(
        "{}   # the next three steps reboot each node once, when step {} resumes the pools",
        pause_pools(plan, true),
        STORAGE_FILE
    ));
    vec![
        Step {
            path: "05-machineconfigpools.yaml".to_owned(),
            objects: pools,
            title: "Machine config pools: one per node pool, so that its tuning reaches its nodes only; paused until the last MachineConfig is in".to_owned(),
            checks: machine_counts,
        },
        Step {
            path: "10-machineconfig-kernel-args.yaml".to_owned(),
            objects: configs,
            title: "Kernel arguments: IOMMU passthrough, 1 GiB huge pages, CPU isolation".to_owned(),
            checks: vec!["oc get machineconfig -l machineconfiguration.openshift.io/role   # listed; the pools are paused".to_owned()],
        },
        Step {
            path: "11-kubeletconfig-topology.yaml".to_owned(),
            objects: kubelets,
            title: "Kubelet: Topology Manager chosen from the NUMA layout, pod scope; CPU Manager static".to_owned(),
            checks: vec!["oc get kubeletconfig   # Success in the status".to_owned()],
        },
    ]
}

fn data_url(contents: &str) -> String {
    format!(
        "data:text/plain;charset=utf-8;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(contents)
    )
}

/// The units of the NFS-over-RDMA mount: the `.mount` unit and the
/// `.path` unit of the same name that starts it once the DOCA driver is
/// ready; their names and contents. Every value goes through
/// [`unit::value`].
///
/// The mount must wait for the containerised DOCA driver: mounted earlier,
/// it loads the inbox `rpcrdma`, which holds `ib_core` and `mlx5_ib`, and
/// the driver container cannot replace the modules (it exits with "Storage
/// modules are loaded for current driver, terminating prior driver reload
/// failure due to UNLOAD_STORAGE_MODULES not set" unless told to unload
/// them, and cannot unload a module a mount uses; Mellanox/doca-driver-build
/// `entrypoint.sh`). Neither a boot-time mount nor an automount (the first
/// access may come first) waits; `After=openibd.service` means nothing with
/// the containerised driver, which has no such unit on the host. The
/// driver's ready file does: a path unit whose `PathExists=` names it
/// starts the mount when the file appears. It names the mount in `Unit=`:
/// without it a path unit starts the *service* of its own name
/// (systemd.path(5), `Unit=`: "If not specified, this value defaults to a
/// service that has the same name as the path unit, except for the
/// suffix"; systemd `src/core/path.c`, `path_add_trigger_dependencies`,
/// `unit_load_related_unit(u, ".service", …)`), here
/// `mnt-ai\x2ddata.service`, which does not exist.
fn mount_units(plan: &Plan) -> Option<(String, String, String, String)> {
    let nfs = plan.nfs.as_ref()?;
    let mount_point = nfs.host_mount_point()?;
    let source = unit::value(&format!("{}:{}", nfs.server, nfs.export));
    let point = unit::value(mount_point);
    let options = unit::value(&nfs.mount_options());
    let mount = format!(
        "[Unit]\nDescription=NFS over RDMA: {source}\nWants=network-online.target\nAfter=network-online.target\n\n[Mount]\nWhat={source}\nWhere={point}\nType=nfs\nOptions={options}\nTimeoutSec=60\n",
    );
    let name = mount_unit_name(mount_point);
    let path = format!(
        "[Unit]\nDescription=Mount {point} over NFS/RDMA once the DOCA driver is ready\n\n[Path]\nPathExists={}\nUnit={}\n\n[Install]\nWantedBy=multi-user.target\n",
        unit::value(DOCA_DRIVER_READY_FILE),
        unit::value(&name),
    );
    let path_name = format!("{}.path", escape_path(mount_point));
    Some((name, mount, path_name, path))
}

/// The units an administrator enables on a Kubernetes node: those an
/// OpenShift MachineConfig marks `enabled`.
pub(crate) fn enabled_units(plan: &Plan) -> Vec<String> {
    let mut units = Vec::new();
    if plan
        .pools
        .iter()
        .any(|pool| qos_script(plan, pool).is_some())
    {
        units.extend([QOS_SERVICE.to_owned(), QOS_PATH.to_owned()]);
    }
    if nvme_discovery(plan).is_some() {
        units.push(NVMF_PATH.to_owned());
    }
    if let Some((_, _, path_name, _)) = mount_units(plan) {
        units.push(path_name);
    }
    units
}

const SYSCTL: &str = "# Multi-rail RDMA: answer ARP only on the interface that owns the address,\n# so each rail's traffic stays on its own NIC.\nnet.ipv4.conf.all.arp_ignore = 1\nnet.ipv4.conf.all.arp_announce = 2\nnet.ipv4.conf.all.rp_filter = 2\n";

/// The RoCE QoS script of a pool, run as root: one `configure PF DEVICE`
/// line per Ethernet rail PF of the pool, each name shell-quoted, and a function that only ever
/// uses them as quoted parameters.
///
/// It runs at boot and again each time the DOCA driver container has
/// (re)loaded `mlx5_core`, which resets trust, PFC and ECN to their
/// defaults ([`qos_path`]). It needs no MOFED userspace: `mlnx_qos` when
/// installed, else iproute2's `dcb` (dcb-pfc(8) `prio-pfc`; dcb-app(8)
/// `dscp-prio`, and mlx5 switches the port to DSCP trust with its first
/// DSCP entry: linux `drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c`,
/// `mlx5e_dcbnl_ieee_setapp`). The DCQCN and RDMA-CM ToS files exist only
/// with MOFED-built modules, and are written only where present. A step
/// that fails is reported and the script goes on with the next one and the
/// next PF (no `set -e`), exiting non-zero at the end.
///
/// Pods set the same traffic class themselves (`NCCL_IB_TC`): the VFs they
/// use have RDMA devices of their own, which this script does not reach.
fn qos_script(plan: &Plan, pool: &PoolPlan) -> Option<String> {
    let mut pfs: Vec<(&str, &str)> = pool
        .nics
        .iter()
        .filter(|n| plan.rails[&n.rail].link_type == LinkType::Eth)
        .map(|n| (n.pf.as_str(), n.rdma_device.as_str()))
        .collect();
    pfs.sort_unstable();
    pfs.dedup();
    if pfs.is_empty() {
        return None;
    }
    let calls: String = pfs
        .iter()
        .map(|(pf, dev)| format!("configure {} {}\n", quote(pf), quote(dev)))
        .collect();
    let mut pfc = ["0"; 8];
    pfc[usize::from(LOSSLESS_PRIORITY)] = "1";
    Some(format!(
        r#"#!/bin/sh
# RoCE v2 QoS: DSCP trust, PFC on priority {prio}, DCQCN on it, ToS {tos} for RDMA-CM.
# Idempotent; run at boot and after every load of the NIC driver.
set -u
status=0

fail() {{ echo "$*" >&2; status=1; }}

# write VALUE FILE, when FILE exists (MOFED-built modules only)
write() {{
  if [ -e "$2" ]; then echo "$1" > "$2" || fail "cannot write $2"; fi
}}

# configure PF RDMA_DEVICE
configure() {{
  pf=$1 dev=$2
  if [ ! -d "/sys/class/net/$pf" ]; then echo "skip $pf: absent"; return 0; fi
  if command -v mlnx_qos >/dev/null 2>&1; then
    mlnx_qos -i "$pf" --trust dscp --pfc {pfc} >/dev/null || fail "$pf: mlnx_qos failed"
  elif command -v dcb >/dev/null 2>&1; then
    dcb app replace dev "$pf" dscp-prio {dscp}:{prio} || fail "$pf: dcb app failed"
    dcb pfc set dev "$pf" prio-pfc all:off {prio}:on || fail "$pf: dcb pfc failed"
  else
    fail "$pf: neither mlnx_qos nor dcb (iproute2) is installed: trust and pfc not set"
  fi
  write 1 "/sys/class/net/$pf/ecn/roce_np/enable/{prio}"
  write 1 "/sys/class/net/$pf/ecn/roce_rp/enable/{prio}"
  write {tos} "/sys/class/infiniband/$dev/tc/1/traffic_class"
  if command -v cma_roce_tos >/dev/null 2>&1; then
    cma_roce_tos -d "$dev" -t {tos} >/dev/null || fail "$dev: cma_roce_tos failed"
  fi
}}

{calls}exit $status
"#,
        prio = LOSSLESS_PRIORITY,
        dscp = LOSSLESS_DSCP,
        tos = traffic_class(LOSSLESS_DSCP),
        pfc = pfc.join(","),
    ))
}

/// The oneshot service that runs [`QOS_SCRIPT`], at boot and whenever
/// [`qos_path`] starts it. Not `RemainAfterExit`, so that it can run again.
fn qos_service() -> String {
    format!(
        "[Unit]\nDescription=RoCE QoS and DCQCN for the RDMA rails\nAfter=network-online.target\nWants=network-online.target\n\n[Service]\nType=oneshot\nExecStart={}\n\n[Install]\nWantedBy=multi-user.target\n",
        unit::command_line(&[QOS_SCRIPT])
    )
}

/// Runs [`QOS_SERVICE`] each time the DOCA driver's ready file is created
/// or removed: the driver container removes it before it reloads the
/// modules and creates it after (Mellanox/doca-driver-build
/// `entrypoint.sh`); `PathChanged=` fires on both (systemd.path(5)).
fn qos_path() -> String {
    format!(
        "[Unit]\nDescription=RoCE QoS again after each load of the NIC driver\n\n[Path]\nPathChanged={}\nUnit={QOS_SERVICE}\n\n[Install]\nWantedBy=multi-user.target\n",
        unit::value(DOCA_DRIVER_READY_FILE)
    )
}

/// Connects the NVMe-oF targets of [`NVME_DISCOVERY_CONF`] once the DOCA
/// driver is ready, started by [`nvmf_path`]. Connected at boot (nvme-cli's
/// [`NVMF_AUTOCONNECT`]), `nvme_rdma` would load the inbox RDMA stack
/// before the driver container, which then refuses to start unless it may
/// unload the storage modules (Mellanox/doca-driver-build@445df1e8
/// `entrypoint.sh` lines 1963–1966, "Storage modules are loaded for current
/// driver, terminating prior driver reload failure due to
/// UNLOAD_STORAGE_MODULES not set"; `entrypoint/internal/entrypoint/entrypoint.go`).
/// The condition skips the run the file's removal triggers, when the driver
/// is about to unload.
fn nvmf_service() -> String {
    format!(
        "[Unit]\nDescription=Connect the NVMe-oF targets over RDMA once the DOCA driver is ready\nAfter=network-online.target\nWants=network-online.target\nConditionPathExists={}\n\n[Service]\nType=oneshot\nExecStart={}\n",
        unit::value(DOCA_DRIVER_READY_FILE),
        unit::command_line(&[NVME_CLI, "connect-all"]),
    )
}

/// Runs [`NVMF_SERVICE`] each time the DOCA driver's ready file is created
/// or removed, as [`qos_path`] does: a driver reload with
/// `UNLOAD_STORAGE_MODULES` drops the connections, which are made again.
fn nvmf_path() -> String {
    format!(
        "[Unit]\nDescription=NVMe-oF connections again after each load of the NIC driver\n\n[Path]\nPathChanged={}\nUnit={NVMF_SERVICE}\n\n[Install]\nWantedBy=multi-user.target\n",
        unit::value(DOCA_DRIVER_READY_FILE)
    )
}

fn nvme_discovery(plan: &Plan) -> Option<String> {
    (!plan.nvme_targets.is_empty()).then(|| {
        plan.nvme_targets
            .iter()
            .map(|(address, port)| {
                format!("--transport=rdma --traddr={address} --trsvcid={port}\n")
            })
            .collect()
    })
}

/// The file of the storage and fabric MachineConfigs.
const STORAGE_FILE: &str = "12-machineconfig-storage-fabric.yaml";

/// Storage and fabric host configuration: one MachineConfig per pool,
/// applied with the other node configuration, before the NIC driver, so
/// that the nodes reboot once for all of it. Nothing in it acts before the
/// driver is ready: the mount and the NVMe-oF connections are started by
/// path units on the driver's ready file, and the QoS service runs again
/// after every load of the driver.
pub(crate) fn storage_steps(plan: &Plan) -> Vec<Step> {
    if plan.platform != Platform::Openshift {
        return Vec::new();
    }
    let mut configs = Vec::new();
    let mut qos = false;
    for pool in &plan.pools {
        let mut files = vec![
            json!({"path": "/etc/sysctl.d/90-zerohop-rdma.conf", "mode": 420, "overwrite": true, "contents": {"source": data_url(SYSCTL)}}),
        ];
        let mut units = Vec::new();
        if let Some(script) = qos_script(plan, pool) {
            qos = true;
            files.push(json!({"path": QOS_SCRIPT, "mode": 493, "overwrite": true, "contents": {"source": data_url(&script)}}));
            units.push(json!({"name": QOS_SERVICE, "enabled": true, "contents": qos_service()}));
            units.push(json!({"name": QOS_PATH, "enabled": true, "contents": qos_path()}));
        }
        if let Some(discovery) = nvme_discovery(plan) {
            files.push(json!({"path": NVME_DISCOVERY_CONF, "mode": 420, "overwrite": true, "contents": {"source": data_url(&discovery)}}));
            units.push(json!({"name": NVMF_AUTOCONNECT, "enabled": false}));
            units.push(json!({"name": NVMF_SERVICE, "contents": nvmf_service()}));
            units.push(json!({"name": NVMF_PATH, "enabled": true, "contents": nvmf_path()}));
        }
        if let Some((name, mount, path_name, path)) = mount_units(plan) {
            units.push(json!({"name": name, "contents": mount}));
            units.push(json!({"name": path_name, "enabled": true, "contents": path}));
        }
        configs.push(machine_config(
            pool,
            &format!("60-{}-{}-storage-fabric", plan.name, pool.name),
            json!({"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": files}, "systemd": {"units": units}}}),
        ));
    }
    let mut checks = vec![
        format!(
            "{}   # one reboot of each node, for steps 10 to 12",
            pause_pools(plan, false)
        ),
        pools_updated(plan),
        format!(
            "oc debug node/{} -- chroot /host cat /proc/cmdline",
            super::NODE
        ),
    ];
    if let Some(mount_point) = plan.nfs.as_ref().and_then(|nfs| nfs.host_mount_point()) {
        let point = quote(mount_point);
        let on_node = format!("ls {point} >/dev/null; nfsstat -m | grep -A1 {point}");
        checks.push(format!(
            "oc debug node/{} -- chroot /host sh -c {}   # proto=rdma,port=20049",
            super::NODE,
            quote(&on_node)
        ));
    }
    vec![Step {
        path: STORAGE_FILE.to_owned(),
        objects: configs,
        title: storage_title(plan, qos),
        checks,
    }]
}

/// The title of the storage and fabric step: what its MachineConfigs hold,
/// so that a plan mounting NFS through CSI, or with no RoCE pool, does not
/// announce a host mount or QoS it does not configure.
fn storage_title(plan: &Plan, qos: bool) -> String {
    let mut parts = Vec::new();
    if plan
        .nfs
        .as_ref()
        .is_some_and(|nfs| nfs.host_mount_point().is_some())
    {
        parts.push("NFS over RDMA mounted once the DOCA driver is ready");
    }
    if !plan.nvme_targets.is_empty() {
        parts.push("NVMe-oF connected once the DOCA driver is ready");
    }
    if qos {
        parts.push("RoCE QoS/DCQCN after every driver load");
    }
    parts.push("multi-rail ARP sysctls");
    format!("Storage and fabric: {}", parts.join(", "))
}

/// `cufile.json` (with GDS) and, on Kubernetes, the host files.
pub(crate) fn aux_files(plan: &Plan) -> Vec<ManifestFile> {
    let mut files = Vec::new();
    if plan.gds {
        files.push(plain("cufile.json", super::workload::cufile_json(plan)));
    }
    if plan.platform != Platform::Kubernetes {
        return files;
    }
    for pool in &plan.pools {
        let dir = format!("host/{}", pool.name);
        // grub-mkconfig sources this file with the shell: the arguments are
        // appended as one quoted word after the expansion of the old value.
        let grub = format!(
            "# Installed as /etc/default/grub.d/90-zerohop.cfg, then: update-grub (or grub2-mkconfig) and reboot\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX \"{}\n",
            quote(&kernel_arguments(pool).join(" "))
        );
        files.push(plain(
            &format!("{dir}/etc/default/grub.d/90-zerohop.cfg"),
            grub,
        ));
        let mut kubelet =
            json!({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"});
        if let (Some(target), Value::Object(settings)) =
            (kubelet.as_object_mut(), kubelet_settings(pool))
        {
            target.extend(settings);
        }
        files.push(plain(
            &format!("{dir}/etc/kubernetes/kubelet.conf.d/50-zerohop-topology.conf"),
            super::to_yaml(&[kubelet]),
        ));
        files.push(plain(
            &format!("{dir}/etc/sysctl.d/90-zerohop-rdma.conf"),
            SYSCTL.to_owned(),
        ));
        if let Some(script) = qos_script(plan, pool) {
            files.push(plain(&format!("{dir}{QOS_SCRIPT}"), script));
            files.push(plain(
                &format!("{dir}/etc/systemd/system/{QOS_SERVICE}"),
                qos_service(),
            ));
            files.push(plain(
                &format!("{dir}/etc/systemd/system/{QOS_PATH}"),
                qos_path(),
            ));
        }
        if let Some(discovery) = nvme_discovery(plan) {
            files.push(plain(&format!("{dir}{NVME_DISCOVERY_CONF}"), discovery));
            files.push(plain(
                &format!("{dir}/etc/systemd/system/{NVMF_SERVICE}"),
                nvmf_service(),
            ));
            files.push(plain(
                &format!("{dir}/etc/systemd/system/{NVMF_PATH}"),
                nvmf_path(),
            ));
        }
        if let Some((name, mount, path_name, path)) = mount_units(plan) {
            files.push(plain(&format!("{dir}/etc/systemd/system/{name}"), mount));
            files.push(plain(
                &format!("{dir}/etc/systemd/system/{path_name}"),
                path,
            ));
        }
    }
    files
}
