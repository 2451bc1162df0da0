//! The rules about single values: the grammar every string must follow
//! before it reaches a manifest, a script, a unit or a command, and the
//! range of every number. They are checked where each value is read
//! ([`Checker::grammar`](super::Checker::grammar)); the grammars are in
//! [`crate::grammar`] and `zerohop_known`.

use crate::rule::declare_intent_rule;

declare_intent_rule! {
    /// A name or namespace that is not a DNS-1123 label.
    ///
    /// ## What it checks
    /// `metadata.name`, every pool's `name`, `spec.workload.name` and the
    /// namespaces (`spec.operators.*Namespace`, `spec.workload.namespace`,
    /// `spec.agent.namespace`): at most 63 characters, lowercase letters,
    /// digits and `-`, starting and ending with a letter or digit, by the
    /// API server's own rule for namespaces (Kubernetes documentation,
    /// "Object Names and IDs", DNS label names).
    ///
    /// ## Why it matters
    /// Each becomes a namespace, part of object names the API server
    /// checks the same way, and, for a pool, a directory under `host/` of
    /// the output. A value it refuses would stop `kubectl apply` halfway
    /// through the set; a label has no `/` or `.`, so no pool name can
    /// reach outside the output directory.
    ///
    /// ## How to fix
    /// Write the name like `h100-roce`: lowercase, digits and dashes, at
    /// most 63 characters.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP010/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   workload:
    ///     namespace: AI_Training
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:19:16: namespace "AI_Training" must be a dns-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit [ZP010]
    ///   help: write it like "h100-roce", at most 63 characters
    /// ```
    pub(crate) static NAME_NOT_A_DNS_LABEL = {
        id: "ZP010",
        name: "name-not-a-dns-label",
        severity: Error,
    };
}

declare_intent_rule! {
    /// An image reference, release tag or DOCA driver version that the runtime or the operator's webhook refuses.
    ///
    /// ## What it checks
    /// `spec.workload.image`, `spec.agent.image` and the fabric tests'
    /// `spec.validation.perftestImage` and `ncclTestsImage` by the grammar
    /// of the distribution project's `reference` package
    /// (`reference/regexp.go`); `spec.operators.networkOperatorVersion`
    /// and `gpuOperatorVersion` as image tags; and
    /// `spec.operators.docaDriverVersion` by the pattern the Network
    /// Operator's webhook applies to `ofedDriver.version`
    /// (Mellanox/network-operator `api/v1alpha1/nicpolicy_webhook.go`).
    ///
    /// ## Why it matters
    /// A reference the runtime cannot parse leaves the pod in
    /// `InvalidImageName`; a DOCA driver version the webhook refuses makes
    /// the API server reject the whole NicClusterPolicy, and with it the
    /// NIC driver of every node. Each value is also written into the
    /// rendered README's commands, which only a well-formed one can reach.
    ///
    /// ## How to fix
    /// Give a full reference such as `nvcr.io/nvidia/pytorch:25.08-py3`, a
    /// release such as `v26.7.0`, and a DOCA driver tag as NVIDIA publishes
    /// it, such as `doca3.5.0-26.07-0.7.0.0-0`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP011/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   workload:
    ///     image: nvcr.io/NVIDIA/pytorch:25.08-py3
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:20:12: image "nvcr.io/NVIDIA/pytorch:25.08-py3" is not an image reference: repository path components are lowercase letters and digits, joined by '.', '_', '__' or '-' [ZP011]
    ///   help: give an image such as nvcr.io/nvidia/pytorch:25.08-py3
    /// ```
    pub(crate) static MALFORMED_IMAGE_REFERENCE = {
        id: "ZP011",
        name: "malformed-image-reference",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A NIC port, RDMA device or NCCL interface name the kernel could not have given.
    ///
    /// ## What it checks
    /// Every NIC's `pf` and `ncclSocketIfname`'s names as the kernel's
    /// `dev_valid_name()` checks a netdev name (`net/core/dev.c`: shorter
    /// than 16 bytes, not `.` or `..`, no `/`, `:` or white space), and
    /// every `rdmaDevice` as an RDMA device name (shorter than 64 bytes,
    /// no `/` or white space; `drivers/infiniband/core/device.c`). No
    /// control characters anywhere.
    ///
    /// ## Why it matters
    /// These names are written into the RoCE QoS script that runs as root
    /// at boot, into the SR-IOV policies' `pfNames` and the device
    /// plugins' selectors. A name the kernel cannot have given matches no
    /// port, so no VF is created; one with a `$(…)` or a space would be a
    /// command in the script.
    ///
    /// ## How to fix
    /// Give the names as `ip link` (`ens1f0np0`) and `rdma link` or
    /// `ibv_devices` (`mlx5_0`) show them on a node of the pool; for
    /// `ncclSocketIfname`, names or prefixes such as `eth0` or
    /// `^docker,lo`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP012/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: "0000:3b:00.0", rdmaDevice: mlx5_0, deviceId: "1021", rail: 0, subnet: 192.168.100.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:16: pf "0000:3b:00.0" contains `:`, which the kernel refuses [ZP012]
    ///   help: give the physical function's netdev name as `ip link` shows it, e.g. ens1f0np0
    /// ```
    pub(crate) static MALFORMED_INTERFACE_NAME = {
        id: "ZP012",
        name: "malformed-interface-name",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A rail's `resourceName` that some device plugin or webhook of the chain rejects.
    ///
    /// ## What it checks
    /// Every NIC's `resourceName`: letters, digits and `_` only, starting
    /// and ending with a letter or digit, the one form that every
    /// component accepts (the SR-IOV Network Operator's webhook,
    /// `pkg/webhook/validate.go`; the SR-IOV device plugin,
    /// `pkg/utils/utils.go`; the Network Operator's webhook,
    /// `api/v1alpha1/nicpolicy_webhook.go`; the RDMA shared device plugin,
    /// `pkg/resources/resources_manager.go`). Lint's ZL035 checks the
    /// same in hand-written manifests.
    ///
    /// ## Why it matters
    /// The components disagree: one admits a name with `-` or `.` and
    /// hands it to one that rejects it, and the device plugin then exits
    /// or advertises nothing, so the pods asking for the rail stay
    /// Pending.
    ///
    /// ## How to fix
    /// Use letters, digits and `_` (`rdma_rail0`), or leave `resourceName`
    /// out for `rdma_rail<N>`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP013/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", resourceName: rdma-rail-0, rail: 0, subnet: 192.168.100.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:79: resource name "rdma-rail-0" is rejected by some device plugin or webhook [ZP013]
    ///   help: use letters, digits and '_' only, starting and ending with a letter or digit (e.g. rdma_rail0)
    /// ```
    pub(crate) static MALFORMED_RESOURCE_NAME = {
        id: "ZP013",
        name: "malformed-resource-name",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A node selector or monitor label key or value that Kubernetes refuses.
    ///
    /// ## What it checks
    /// Every key and value of every pool's `nodeSelector` and of the
    /// agent's `monitorLabels`, by the API
    /// server's rules for labels (Kubernetes documentation, "Labels and
    /// Selectors", syntax and character set): a key is an optional DNS
    /// subdomain prefix and `/`, then a name of at most 63 letters, digits,
    /// `-`, `_` and `.`; a value is empty or such a name.
    ///
    /// ## Why it matters
    /// The selector is copied into every object that places work on the
    /// pool's nodes (SR-IOV policies, MachineConfigPools, the workload);
    /// the API server rejects each of them, and nothing of the pool is
    /// deployed. The agent's monitors carry `monitorLabels`: the API
    /// server rejects them, and nothing scrapes the agent.
    ///
    /// ## How to fix
    /// Write the label as `kubectl get node --show-labels` shows it, e.g.
    /// `feature.node.kubernetes.io/pci-10de.present: "true"`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP014/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nodeSelector:
    ///         example.com/gpu/present: "true"
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:11:9: label key "example.com/gpu/present" has a prefix that is not a dns-1123 subdomain [ZP014]
    ///   help: node labels are [prefix/]name: value, letters, digits, '-', '_' and '.'
    /// ```
    pub(crate) static MALFORMED_NODE_LABEL = {
        id: "ZP014",
        name: "malformed-node-label",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A CPU list that is not written the way the kernel writes one.
    ///
    /// ## What it checks
    /// Every pool's `reservedCpus` and `isolatedCpus`, and the `cpus` of
    /// each of its `numaNodes`: comma-separated CPU numbers and ascending
    /// ranges (`0-3,56-59`), as the kernel prints and parses CPU lists
    /// (`cpulist_parse()`, `lib/bitmap.c`).
    ///
    /// ## Why it matters
    /// The lists go on the kernel command line (`isolcpus=`, `nohz_full=`,
    /// `rcu_nocbs=`), into the kubelet's `reservedSystemCPUs` and into the
    /// pod's sizing; the kernel ignores a list it cannot parse and boots
    /// without the isolation, and the kubelet refuses to start with one.
    ///
    /// ## How to fix
    /// Copy the list from the node: `lscpu`, or
    /// `/sys/devices/system/node/node<N>/cpulist` for a NUMA node.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP015/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       reservedCpus: "0-3;56-59"
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:14:21: cpus "0-3;56-59" is not a cpu list [ZP015]
    ///   help: write it as in /sys: "0-3,64-67"
    /// ```
    pub(crate) static MALFORMED_CPU_LIST = {
        id: "ZP015",
        name: "malformed-cpu-list",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A subnet, server address or NVMe-oF target address that is not an address.
    ///
    /// ## What it checks
    /// Every NIC's `subnet` as a CIDR (`192.168.100.0/24`, `fd00::/64`),
    /// `spec.storage.nfsRdma.server` as an IP address or an RFC 1123 host
    /// name, and every `spec.storage.nvmeOf.targets[].address` as an IP
    /// address.
    ///
    /// ## Why it matters
    /// The subnet becomes the rail network's IPAM range, which whereabouts
    /// refuses unless it is a CIDR, so no pod gets an address. The server
    /// and target are written into the mount unit's `What=` and
    /// `/etc/nvme/discovery.conf`, whose lines `nvme-cli` splits into
    /// arguments; an NVMe-oF RDMA target is reached by IP address only.
    ///
    /// ## How to fix
    /// Write the subnet as `192.168.10.0/24`, and give the NFS server's and
    /// the NVMe-oF targets' IP addresses on the storage network.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP016/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", rail: 0, subnet: 192.168.100.0}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:82: subnet "192.168.100.0" is not a cidr [ZP016]
    ///   help: write the subnet as 192.168.10.0/24
    /// ```
    pub(crate) static MALFORMED_ADDRESS = {
        id: "ZP016",
        name: "malformed-address",
        severity: Error,
    };
}

declare_intent_rule! {
    /// An NFS export or mount point that is not a plain absolute path.
    ///
    /// ## What it checks
    /// `spec.storage.nfsRdma.export` and `mountPoint`: absolute, without
    /// `.` or `..` components, control characters or backslashes, shorter
    /// than `PATH_MAX`; and a mount point other than `/`.
    ///
    /// ## Why it matters
    /// The mount point names the systemd mount unit (`systemd-escape
    /// --path`) and is its `Where=`; the export is part of its `What=`.
    /// systemd refuses a mount unit whose `Where=` is not an absolute,
    /// normalized path (systemd.mount(5)), a newline would add a line to
    /// the unit, and a backslash at a line's end continues it. Mounting
    /// over `/` hides the node's root file system.
    ///
    /// ## How to fix
    /// Give the export as the server's `/etc/exports` has it
    /// (`/export/ai-data`) and a mount point such as `/mnt/ai-data`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP017/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   storage:
    ///     nfsRdma:
    ///       mountPoint: mnt/ai-data
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:21:19: mount point "mnt/ai-data" is not an absolute path [ZP017]
    ///   help: use an absolute path such as /mnt/ai-data
    /// ```
    pub(crate) static MALFORMED_PATH = {
        id: "ZP017",
        name: "malformed-path",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A memory size that is not a Kubernetes quantity.
    ///
    /// ## What it checks
    /// `spec.workload.memory` and `shmSize` by the quantity grammar of the
    /// API server (`k8s.io/apimachinery` `pkg/api/resource/quantity.go`):
    /// a number with an optional suffix such as `Gi`, `G` or `m`.
    ///
    /// ## Why it matters
    /// The memory becomes the pod's request and limit, and the shared
    /// memory size the `sizeLimit` of its `/dev/shm` volume; the API
    /// server rejects a pod with a value it cannot parse.
    ///
    /// ## How to fix
    /// Write a size such as `256Gi`.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP018/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   workload:
    ///     memory: 512GB
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:22:13: size "512GB" is not a quantity such as 512Gi [ZP018]
    ///   help: write a size such as 256Gi
    /// ```
    pub(crate) static MALFORMED_SIZE = {
        id: "ZP018",
        name: "malformed-size",
        severity: Error,
    };
}

declare_intent_rule! {
    /// A number outside the range its field allows.
    ///
    /// ## What it checks
    /// A pool's `gpus` (1 to 16 per node); a NIC's `mtu` (4200 to 9216 on
    /// Ethernet, which carries RoCE; 256 to 4092 on InfiniBand), `vlan`
    /// (1 to 4094) and `linkRateGbps` (1 to 1600);
    /// `nfsRdma.nconnect` (1 to 16); an NVMe-oF target's `port` (not 0);
    /// `validation.ncclNodes` (2 to 1024); and `workload.cpus` (not 0).
    ///
    /// ## Why it matters
    /// Each bound is the one the consumer holds: IEEE 802.1Q VLAN IDs are
    /// 1 to 4094; the Linux NFS client takes `nconnect` up to 16
    /// (`fs/nfs/fs_context.c`, `NFS_MAX_CONNECTIONS`); an Ethernet MTU
    /// below 1280 has no room for IPv6 (RFC 8200) and one above 9216 is
    /// more than jumbo frames carry; RoCE needs 4200
    /// (`zerohop_known::roce::MIN_MTU`) for a 4096-byte path MTU, which the
    /// doctor's QOS001 and the linter hold every RoCE port to (the kernel's
    /// `iboe_get_mtu` subtracts the RoCE v2 headers from the netdev MTU,
    /// `include/rdma/ib_addr.h`); IPoIB's MTU is the InfiniBand
    /// MTU (at most 4096) less its 4-byte header; nccl-tests measures the
    /// fabric between at least two nodes; Linux's RDMA core reports no port
    /// rate above 1600 Gb/s (`IB_RATE_1600_GBPS` of `enum ib_rate`,
    /// `zerohop_known::nic::MAX_LINK_RATE_GBPS`); and the static CPU manager pins
    /// only a pod with whole CPUs, at least one. Outside the bound the
    /// setting is refused, or silently clamped to something else than
    /// what was planned.
    ///
    /// ## How to fix
    /// Use a value in the range the diagnostic gives.
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-plan/tests/fixtures/ZP019/fail/intent.yaml`:
    ///
    /// ```yaml
    /// spec:
    ///   nodePools:
    ///     - name: h100
    ///       nics:
    ///         - {pf: ens1f0np0, rdmaDevice: mlx5_0, deviceId: "1021", mtu: 9600, rail: 0, subnet: 192.168.100.0/24}
    /// ```
    ///
    /// `zerohop plan` refuses it:
    ///
    /// ```text
    /// fail/intent.yaml:15:70: mtu 9600 is out of range [ZP019]
    ///   help: use 1280 to 9216 (9000 for roce)
    /// ```
    pub(crate) static VALUE_OUT_OF_RANGE = {
        id: "ZP019",
        name: "value-out-of-range",
        severity: Error,
    };
}
