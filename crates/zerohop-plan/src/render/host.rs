//! Node configuration: OpenShift `MachineConfig`s and `KubeletConfig`, or
//! the same as host files under `host/` on Kubernetes.

use base64::Engine;
use serde_json::{Value, json};

use zerohop_known::shell::quote;
use zerohop_known::systemd::{escape_path, mount_unit_name};

use super::{ManifestFile, Step, plain, unit};
use crate::intent::{CpuVendor, HugepageSize, LinkType, Platform};
use crate::plan::{Plan, PoolPlan};

/// The MachineConfigPool role the rendered MachineConfigs target.
const ROLE: &str = "worker";
/// ToS for RoCE traffic: DSCP 26 with ECN capable transport.
const ROCE_TOS: u32 = 106;
/// The priority (and DSCP 26 maps to it) that gets PFC.
const ROCE_PRIORITY: u32 = 3;
/// Where the RoCE QoS script is installed on the nodes.
const QOS_SCRIPT: &str = "/usr/local/sbin/zerohop-roce-qos.sh";

fn kernel_arguments(pool: &PoolPlan) -> Vec<String> {
    let mut args = vec![
        match pool.cpu_vendor {
            CpuVendor::Intel => "intel_iommu=on",
            CpuVendor::Amd => "amd_iommu=on",
        }
        .to_owned(),
        "iommu=pt".to_owned(),
    ];
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
            format!("isolcpus=managed_irq,domain,{cpus}"),
            format!("nohz_full={cpus}"),
            format!("rcu_nocbs={cpus}"),
        ]);
    }
    args
}

fn kubelet_settings(pool: &PoolPlan) -> Value {
    json!({
        "cpuManagerPolicy": "static",
        "cpuManagerReconcilePeriod": "5s",
        "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod",
        "reservedSystemCPUs": pool.reserved_cpus,
    })
}

fn machine_config(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": ROLE}},
        "spec": spec,
    })
}

/// Kernel arguments and kubelet settings: first, because they reboot nodes.
pub(crate) fn node_steps(plan: &Plan) -> Vec<Step> {
    if plan.platform != Platform::Openshift {
        return Vec::new();
    }
    let mut configs = Vec::new();
    let mut kubelets = Vec::new();
    for pool in &plan.pools {
        configs.push(machine_config(
            &format!("50-{}-{}-kernel-args", plan.name, pool.name),
            json!({"config": {"ignition": {"version": "3.2.0"}}, "kernelArguments": kernel_arguments(pool)}),
        ));
        kubelets.push(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "KubeletConfig",
            "metadata": {"name": format!("{}-{}-topology", plan.name, pool.name)},
            "spec": {
                "machineConfigPoolSelector": {"matchLabels": {format!("pools.operator.machineconfiguration.openshift.io/{ROLE}"): ""}},
                "kubeletConfig": kubelet_settings(pool),
            },
        }));
    }
    vec![
        Step {
            path: "10-machineconfig-kernel-args.yaml".to_owned(),
            objects: configs,
            title: "Kernel arguments: IOMMU passthrough, 1 GiB huge pages, CPU isolation (reboots the pool)".to_owned(),
            checks: vec![
                format!("oc get mcp {ROLE}   # UPDATED=True, UPDATING=False"),
                "oc debug node/<node> -- chroot /host cat /proc/cmdline".to_owned(),
            ],
        },
        Step {
            path: "11-kubeletconfig-topology.yaml".to_owned(),
            objects: kubelets,
            title: "Kubelet: Topology Manager single-numa-node, CPU Manager static".to_owned(),
            checks: vec![format!("oc get kubeletconfig; oc get mcp {ROLE}   # UPDATED=True")],
        },
    ]
}

fn data_url(contents: &str) -> String {
    format!(
        "data:text/plain;charset=utf-8;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(contents)
    )
}

/// The `.mount` and `.automount` units of the NFS-over-RDMA mount: their
/// names and contents. Every value goes through [`unit::value`].
fn mount_unit(plan: &Plan) -> Option<(String, String, String, String)> {
    let nfs = plan.nfs.as_ref()?;
    let source = unit::value(&format!("{}:{}", nfs.server, nfs.export));
    let point = unit::value(&nfs.mount_point);
    let options = unit::value(&format!(
        "vers=4.2,proto=rdma,port=20049,nconnect={},rsize=1048576,wsize=1048576,hard,_netdev",
        nfs.nconnect
    ));
    let mount = format!(
        "[Unit]\nDescription=NFS over RDMA: {source}\nWants=network-online.target\nAfter=network-online.target\n\n[Mount]\nWhat={source}\nWhere={point}\nType=nfs\nOptions={options}\nTimeoutSec=60\n",
    );
    // The automount waits for first access, by which time the DOCA driver
    // container has loaded rpcrdma; a boot-time mount would race it.
    let automount = format!(
        "[Unit]\nDescription=Automount of {point} over NFS/RDMA\n\n[Automount]\nWhere={point}\nTimeoutIdleSec=0\n\n[Install]\nWantedBy=remote-fs.target\n",
    );
    let name = mount_unit_name(&nfs.mount_point);
    let auto_name = format!("{}.automount", escape_path(&nfs.mount_point));
    Some((name, mount, auto_name, automount))
}

const SYSCTL: &str = "# Multi-rail RDMA: answer ARP only on the interface that owns the address,\n# so each rail's traffic stays on its own NIC.\nnet.ipv4.conf.all.arp_ignore = 1\nnet.ipv4.conf.all.arp_announce = 2\nnet.ipv4.conf.all.rp_filter = 2\n";

/// The RoCE QoS script, run as root at boot: one `configure PF DEVICE`
/// line per Ethernet rail PF, each name shell-quoted, and a function that
/// only ever uses them as quoted parameters.
fn qos_script(plan: &Plan) -> Option<String> {
    let mut pfs: Vec<(&str, &str)> = plan
        .pools
        .iter()
        .flat_map(|p| &p.nics)
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
    pfc[ROCE_PRIORITY as usize] = "1";
    Some(format!(
        "#!/bin/sh\n# RoCE v2 QoS: DSCP trust, PFC on priority {prio}, DCQCN, ToS {tos} for RDMA-CM.\nset -eu\n\n# configure PF RDMA_DEVICE\nconfigure() {{\n  pf=$1 dev=$2\n  if [ ! -d \"/sys/class/net/$pf\" ]; then echo \"skip $pf: absent\"; return 0; fi\n  if command -v mlnx_qos >/dev/null; then\n    mlnx_qos -i \"$pf\" --trust dscp --pfc {pfc}\n  else\n    echo \"mlnx_qos not found: set trust dscp and pfc {pfc} on $pf by other means\"\n  fi\n  echo 1 > \"/sys/class/net/$pf/ecn/roce_np/enable/{prio}\"\n  echo 1 > \"/sys/class/net/$pf/ecn/roce_rp/enable/{prio}\"\n  if [ -d \"/sys/class/infiniband/$dev/tc/1\" ]; then echo {tos} > \"/sys/class/infiniband/$dev/tc/1/traffic_class\"; fi\n  if command -v cma_roce_tos >/dev/null; then cma_roce_tos -d \"$dev\" -t {tos}; fi\n}}\n\n{calls}",
        prio = ROCE_PRIORITY,
        tos = ROCE_TOS,
        pfc = pfc.join(","),
    ))
}

/// The oneshot service that runs [`QOS_SCRIPT`] at boot.
fn qos_service() -> String {
    format!(
        "[Unit]\nDescription=RoCE QoS and DCQCN for the RDMA rails\nAfter=network-online.target\nWants=network-online.target\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart={}\n\n[Install]\nWantedBy=multi-user.target\n",
        unit::command_line(&[QOS_SCRIPT])
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

/// Storage and fabric host configuration, after the NIC driver is up.
pub(crate) fn storage_steps(plan: &Plan) -> Vec<Step> {
    if plan.platform != Platform::Openshift {
        return Vec::new();
    }
    let mut files = vec![
        json!({"path": "/etc/sysctl.d/90-zerohop-rdma.conf", "mode": 420, "overwrite": true, "contents": {"source": data_url(SYSCTL)}}),
    ];
    let mut units = Vec::new();
    if let Some(script) = qos_script(plan) {
        files.push(json!({"path": QOS_SCRIPT, "mode": 493, "overwrite": true, "contents": {"source": data_url(&script)}}));
        units.push(
            json!({"name": "zerohop-roce-qos.service", "enabled": true, "contents": qos_service()}),
        );
    }
    if let Some(discovery) = nvme_discovery(plan) {
        files.push(json!({"path": "/etc/nvme/discovery.conf", "mode": 420, "overwrite": true, "contents": {"source": data_url(&discovery)}}));
        units.push(json!({"name": "nvmf-autoconnect.service", "enabled": true}));
    }
    if let Some((name, mount, auto_name, automount)) = mount_unit(plan) {
        units.push(json!({"name": name, "contents": mount}));
        units.push(json!({"name": auto_name, "enabled": true, "contents": automount}));
    }
    let config = machine_config(
        &format!("60-{}-storage-fabric", plan.name),
        json!({"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": files}, "systemd": {"units": units}}}),
    );
    let mut checks = vec![format!("oc get mcp {ROLE}   # UPDATED=True")];
    if let Some(nfs) = &plan.nfs {
        let point = quote(&nfs.mount_point);
        let on_node = format!("ls {point} >/dev/null; nfsstat -m | grep -A1 {point}");
        checks.push(format!(
            "oc debug node/<node> -- chroot /host sh -c {}   # proto=rdma,port=20049",
            quote(&on_node)
        ));
    }
    vec![Step {
        path: "60-machineconfig-storage-fabric.yaml".to_owned(),
        objects: vec![config],
        title: "Storage and fabric: NFS over RDMA automount, RoCE QoS/DCQCN, sysctls".to_owned(),
        checks,
    }]
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
            "# /etc/default/grub.d/90-zerohop.cfg, then: update-grub (or grub2-mkconfig) and reboot\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX \"{}\n",
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
        if let Some(script) = qos_script(plan) {
            files.push(plain(&format!("{dir}{QOS_SCRIPT}"), script));
            files.push(plain(
                &format!("{dir}/etc/systemd/system/zerohop-roce-qos.service"),
                qos_service(),
            ));
        }
        if let Some(discovery) = nvme_discovery(plan) {
            files.push(plain(&format!("{dir}/etc/nvme/discovery.conf"), discovery));
        }
        if let Some((name, mount, auto_name, automount)) = mount_unit(plan) {
            files.push(plain(&format!("{dir}/etc/systemd/system/{name}"), mount));
            files.push(plain(
                &format!("{dir}/etc/systemd/system/{auto_name}"),
                automount,
            ));
        }
    }
    files
}
