//! The fuzz targets: each a function from bytes to a signature of what it
//! did, with its seeds and its dictionary.
//!
//! A target must never panic, hang or take over five seconds on any input;
//! the [`engine`](crate::engine) checks all three. The signature (a hash of
//! a short summary of the outcome: which error, how many nodes) steers the
//! engine: a mutant with a signature not seen before joins the pool of
//! inputs to mutate, a cheap stand-in for coverage feedback.

use std::sync::OnceLock;

use zerohop_core::Status;
use zerohop_host::parse::{
    cmdline, cpuset, jsonc, kmsg, meminfo, modules, mountinfo, mountstats, netaddr, nvidia, rdma,
    selected,
};
use zerohop_k8s::schema::CrdCatalog;
use zerohop_k8s::yaml::{self, Limits};
use zerohop_validate::judge::{Capture, Expectations, judge_as};
use zerohop_validate::kind::Kind;

use crate::seeds::{Sources, files_under, host_files, named};
use crate::signature::signature;
use crate::{agent_http, archive, tree};

/// One fuzz target.
pub struct Target {
    /// Its name on the command line.
    pub name: &'static str,
    /// What it exercises, for the documentation.
    pub covers: &'static str,
    /// The starting inputs.
    pub seeds: fn(&Sources) -> Vec<Vec<u8>>,
    /// Tokens of the format, inserted by the mutator.
    pub dictionary: &'static [&'static [u8]],
    /// Runs the code under test on one input; returns the outcome's signature.
    pub run: fn(&[u8]) -> u64,
}

/// Every target, in the order they are run.
pub static TARGETS: &[Target] = &[
    Target {
        name: "yaml",
        covers: "the YAML loader with spans (zerohop_k8s::yaml::load_bytes, objects, to_json)",
        seeds: yaml_seeds,
        dictionary: YAML_TOKENS,
        run: run_yaml,
    },
    Target {
        name: "yaml_subset",
        covers: "the YAML loader's scanner of the common subset against its general parser: any difference in documents, spans or errors is a failure",
        seeds: yaml_seeds,
        dictionary: YAML_TOKENS,
        run: run_yaml_subset,
    },
    Target {
        name: "schema",
        covers: "the CRD structural-schema validator against the operators' real CRDs (CrdCatalog::validate)",
        seeds: sample_seeds,
        dictionary: YAML_TOKENS,
        run: run_schema,
    },
    Target {
        name: "lint",
        covers: "the whole linter on one input: loader, validator and every rule",
        seeds: sample_seeds,
        dictionary: YAML_TOKENS,
        run: run_lint,
    },
    Target {
        name: "intent",
        covers: "the intent parser, its validation and every renderer (zerohop_plan::load, render)",
        seeds: intent_seeds,
        dictionary: INTENT_TOKENS,
        run: run_intent,
    },
    Target {
        name: "cufile",
        covers: "cufile.json: the doctor's comment stripper and JSON reader, and lint's cufile rules",
        seeds: cufile_seeds,
        dictionary: JSON_TOKENS,
        run: run_cufile,
    },
    Target {
        name: "cmdline",
        covers: "/proc/cmdline: tokens, quotes, hugepage requests, sizes",
        seeds: cmdline_seeds,
        dictionary: CMDLINE_TOKENS,
        run: run_cmdline,
    },
    Target {
        name: "cpuset",
        covers: "CPU lists with ranges and strides, isolcpus= flags",
        seeds: cpuset_seeds,
        dictionary: CPUSET_TOKENS,
        run: run_cpuset,
    },
    Target {
        name: "meminfo",
        covers: "/proc/meminfo and per-node meminfo",
        seeds: meminfo_seeds,
        dictionary: &[b"HugePages_Total:", b" kB", b"Node 0 ", b"Hugepagesize:"],
        run: run_meminfo,
    },
    Target {
        name: "modules",
        covers: "/proc/modules",
        seeds: modules_seeds,
        dictionary: &[
            b" Live 0x0000000000000000",
            b" (OE)",
            b" - ",
            b",",
            b"[permanent]",
        ],
        run: run_modules,
    },
    Target {
        name: "kmsg",
        covers: "kernel log text (/dev/kmsg records, dmesg and syslog lines) and the kernel-log signatures",
        seeds: kmsg_seeds,
        dictionary: &[
            b"6,3973,227996636,-;",
            b"\n SUBSYSTEM=pci\n",
            b"kern  :err   : ",
            b"<3>",
            b"[  227.996636] ",
            b"[Mon Feb 10 16:28:06 2025] ",
            b"2025-02-10T16:28:06,502716+00:00 ",
            b"Aug 17 06:18:01 host systemd-networkd[5398]: ",
            b"nvidia-peermem nv_get_p2p_free_callback:127 ERROR ",
            b"mlx5_core 0000:3b:00.0 eth2: Link down",
            b"nfs: server filer not responding, still trying",
            b"PCIe Bus Error: severity=Uncorrected (Fatal), ",
            b"nvidia-fs:",
        ],
        run: run_kmsg,
    },
    Target {
        name: "mountinfo",
        covers: "/proc/self/mountinfo, /proc/mounts, /etc/fstab and mount options",
        seeds: mountinfo_seeds,
        dictionary: MOUNT_TOKENS,
        run: run_mountinfo,
    },
    Target {
        name: "mountstats",
        covers: "/proc/self/mountstats (NFS transports and options)",
        seeds: mountstats_seeds,
        dictionary: &[
            b"device ",
            b" mounted on ",
            b" with fstype nfs4",
            b"\txprt:\trdma ",
            b"opts:\t",
            b"proto=rdma",
        ],
        run: run_mountstats,
    },
    Target {
        name: "netaddr",
        covers: "/proc/net/fib_trie, /proc/net/route, /proc/net/if_inet6",
        seeds: netaddr_seeds,
        dictionary: &[
            b"/32 host LOCAL",
            b"|-- ",
            b"+-- ",
            b"\t00000000\t",
            b"fe80",
        ],
        run: run_netaddr,
    },
    Target {
        name: "nvidia",
        covers: "the NVIDIA driver version line, GPU information files, kernel releases",
        seeds: nvidia_seeds,
        dictionary: &[
            b"NVRM version:",
            b"Open Kernel Module",
            b"Kernel Module  ",
            b"Bus Location:",
            b"6.8.0-",
        ],
        run: run_nvidia,
    },
    Target {
        name: "rdma",
        covers: "RDMA port attributes: state, phys_state, rate, link layer, GIDs, GID types",
        seeds: rdma_seeds,
        dictionary: &[
            b"4: ACTIVE",
            b"5: LinkUp",
            b"400 Gb/sec (4X NDR)",
            b"RoCE v2",
            b"Ethernet",
            b"fe80:0000:",
            b"0000:ffff:",
        ],
        run: run_rdma,
    },
    Target {
        name: "selected",
        covers: "bracketed sysfs choices (transparent_hugepage/enabled, iopolicy)",
        seeds: selected_seeds,
        dictionary: &[b"[", b"]", b" "],
        run: run_selected,
    },
    Target {
        name: "validate",
        covers: "every capture parser of validate (nccl-tests, NCCL_DEBUG, perftest, nvidia-smi topo, gdscheck, gdsio, nvidia-fs stats, show_gids, mounts), kind detection and every judgement",
        seeds: validate_seeds,
        dictionary: VALIDATE_TOKENS,
        run: run_validate,
    },
    Target {
        name: "snapshot",
        covers: "opening a snapshot archive (zerohop_snapshot::open): the tar reader, the manifest and its caps, every member check, the tree built from it; the mutated tar stream is compressed for each run",
        seeds: archive::snapshot_seeds,
        dictionary: archive::SNAPSHOT_TOKENS,
        run: archive::run_snapshot,
    },
    Target {
        name: "diff",
        covers: "`diff` of two recorded hosts whose files, listings and links hold the input's two halves: the doctor on each, facts, file diffs and both renderings",
        seeds: archive::diff_seeds,
        dictionary: archive::DIFF_TOKENS,
        run: archive::run_diff,
    },
    Target {
        name: "doctor",
        covers: "the whole doctor (facts collection through HostRoot, every check, topology) over mutated host trees",
        seeds: tree::seeds,
        dictionary: tree::TOKENS,
        run: tree::run,
    },
    Target {
        name: "http",
        covers: "the agent's HTTP serving path (zerohop_agent::http::serve_connection: hyper's HTTP/1 parser with the agent's limits, and every endpoint) on one connection that sends the input",
        seeds: agent_http::seeds,
        dictionary: agent_http::TOKENS,
        run: agent_http::run,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

const VALIDATE_TOKENS: &[&[u8]] = &[
    b"#  out-of-place                       in-place\n",
    b"   8589934592    2147483648     float     sum      -1   ",
    b"# Avg bus bandwidth    : ",
    b"NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE",
    b"NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n",
    b"NCCL INFO GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n",
    b"NCCL WARN NET/IB : Got completion from peer with error 12, opcode 0, len 0, vendor err 129",
    b" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n",
    b" Link type       : Ethernet\n",
    b" GID index       : 3\n",
    b"Couldn't allocate MR\n",
    b"\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\n",
    b"NIC Legend:\n\n  NIC0: mlx5_0\n",
    b" PIX ",
    b" SYS ",
    b"\x1b[4m",
    b" --rdma devices       : ",
    b"IoType: READ XferType: GPUD Threads: 8 DataSetSize: ",
    b"GDS Version: ",
    b"[1,0]<stdout>:",
];

const YAML_TOKENS: &[&[u8]] = &[
    b"apiVersion: ",
    b"kind: ",
    b"metadata:\n  name: x\n",
    b"spec:\n",
    b"- ",
    b": ",
    b"---\n",
    b"...\n",
    b"&a ",
    b"*a",
    b"<<: *a",
    b"!!str ",
    b"!!binary ",
    b"? ",
    b"|\n",
    b">-\n",
    b"'",
    b"\"",
    b"\\x1b",
    b"{",
    b"}",
    b"[",
    b"]",
    b"#",
    b"%YAML 1.2\n",
    b"0x",
    b"0o17",
    b"1_000",
    b"~",
    b"yes",
    b"0000:3b:00.1",
    b"\xc2\x85",
    b"\xef\xbb\xbf",
];

const JSON_TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"//",
    b"/*",
    b"*/",
    b"\\u0000",
    b"\\\"",
    b"null",
    b"true",
    b"1e400",
    b"\"properties\": {",
    b"\"rdma_dev_addr_list\": [",
    b"\"logging\": {",
];

const INTENT_TOKENS: &[&[u8]] = &[
    b"apiVersion: zerohop.dev/v1alpha1\n",
    b"kind: DataPathPlan\n",
    b"pf: ",
    b"rdmaDevice: ",
    b"pci: ",
    b"nics:\n",
    b"- ",
    b"pools:\n",
    b"mountPoint: ",
    b"server: ",
    b"platform: openshift\n",
    b"$(touch /tmp/p)",
    b"`id`",
    b";",
    b"\\n",
    b"..",
    b"/",
    b"%",
    b"'",
    b"\"",
];

const CMDLINE_TOKENS: &[&[u8]] = &[
    b"hugepagesz=1G",
    b"hugepages=",
    b"default_hugepagesz=",
    b"isolcpus=",
    b"iommu=pt",
    b"intel_iommu=on",
    b"\"",
    b"=",
    b"0:16,1:16",
    b" ",
];

const CPUSET_TOKENS: &[&[u8]] = &[
    b"-",
    b",",
    b":",
    b"/",
    b"managed_irq",
    b"domain",
    b"nohz",
    b"4294967295",
];

const MOUNT_TOKENS: &[&[u8]] = &[
    b"\\040",
    b"\\011",
    b"\\134",
    b" - nfs4 ",
    b" shared:1",
    b"proto=rdma",
    b"port=20049",
    b"nconnect=16",
    b"rsize=1048576",
    b"vers=4.2",
    b"x-systemd.",
    b"0 0",
];

fn yaml_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    let manifest =
        |path: &str| path.ends_with(".yaml") || path.ends_with(".yml") || path.ends_with(".json");
    let mut seeds = files_under(&sources.repo_dir("examples"), manifest);
    seeds.extend(files_under(
        &sources.repo_dir("crates/zerohop-lint/tests/fixtures"),
        manifest,
    ));
    if let Some(reference) = sources.shared_dir("reference") {
        seeds.extend(files_under(&reference, manifest));
    }
    seeds
}

fn sample_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    let manifest = |path: &str| path.ends_with(".yaml") || path.ends_with(".yml");
    let mut seeds = files_under(
        &sources.repo_dir("crates/zerohop-lint/tests/fixtures"),
        manifest,
    );
    if let Some(samples) = sources.shared_dir("reference/samples") {
        seeds.extend(files_under(&samples, manifest));
    }
    seeds
}

fn intent_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    files_under(&sources.repo_dir("examples"), |path| {
        path.ends_with(".yaml")
    })
}

fn cufile_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(sources, &["cufile.json"], &[])
}

/// The real tool outputs of the corpus.
fn validate_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    sources
        .shared_dir("corpus/outputs")
        .map(|dir| files_under(&dir, |path| !named(path, "SOURCES.md")))
        .unwrap_or_default()
}

fn cmdline_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(sources, &["cmdline"], &["proc_cmdline_"])
}

fn cpuset_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    let mut seeds = host_files(
        sources,
        &["cpulist", "isolated", "nohz_full", "online", "possible"],
        &[],
    );
    seeds.extend(
        [
            "0-3,8-11",
            "0-127:2/4",
            "managed_irq,domain,2-31",
            "nohz,2-7",
            "",
            "1",
        ]
        .map(|s| s.as_bytes().to_vec()),
    );
    seeds
}

fn meminfo_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(sources, &["meminfo"], &["meminfo"])
}

fn modules_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(sources, &["modules"], &[])
}

fn kmsg_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(sources, &["kmsg"], &["dmesg_", "kmsg_", "syslog_"])
}

fn mountinfo_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(sources, &["mountinfo", "mounts", "fstab"], &["mountinfo"])
}

fn mountstats_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(sources, &["mountstats"], &["mountstats"])
}

fn netaddr_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(sources, &["fib_trie", "route", "if_inet6"], &[])
}

fn nvidia_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(
        sources,
        &["version", "information", "osrelease"],
        &["nvidia_version"],
    )
}

fn rdma_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    let mut seeds = host_files(sources, &["state", "phys_state", "rate", "link_layer"], &[]);
    seeds.extend(files_under(
        &sources.repo_dir("crates/zerohop-doctor/tests/fixtures"),
        |path| path.contains("/gids/") || path.contains("/gid_attrs/types/"),
    ));
    if let Some(dir) = sources.shared_dir("corpus/sys_class_infiniband_h100_gpud") {
        seeds.extend(files_under(&dir, |path| {
            ["state", "phys_state", "rate", "link_layer"]
                .iter()
                .any(|n| named(path, n))
                || path.contains("/gids/0")
                || path.contains("/types/0")
        }));
    }
    seeds
}

fn selected_seeds(sources: &Sources) -> Vec<Vec<u8>> {
    host_files(
        sources,
        &["enabled", "defrag", "iopolicy", "scheduler"],
        &[],
    )
}

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

fn run_yaml(bytes: &[u8]) -> u64 {
    match yaml::load_bytes(bytes, &Limits::default()) {
        Ok(documents) => {
            let objects = yaml::objects(&documents).len();
            let json: usize = documents
                .iter()
                .map(|d| d.to_json().to_string().len())
                .sum();
            signature(("ok", documents.len(), objects, json.min(64)))
        }
        Err(err) => signature((
            "err",
            err.kind.to_string().split(':').next().map(str::to_owned),
        )),
    }
}

fn run_yaml_subset(bytes: &[u8]) -> u64 {
    let text = text(bytes);
    if let Some(difference) = yaml::subset_disagreement(&text, &Limits::default()) {
        panic!("the subset scanner and the general parser disagree:\n{difference}");
    }
    run_yaml(text.as_bytes())
}

/// Lint's options with the operators' CRDs from `../shared/reference/crds`,
/// loaded once (no catalog without them).
fn lint_options() -> &'static zerohop_lint::Options {
    static OPTIONS: OnceLock<zerohop_lint::Options> = OnceLock::new();
    OPTIONS.get_or_init(|| zerohop_lint::Options {
        catalog: Sources::of_this_checkout()
            .shared_dir("reference/crds")
            .and_then(|dir| CrdCatalog::load_dir(&dir).ok()),
        ..zerohop_lint::Options::default()
    })
}

fn run_schema(bytes: &[u8]) -> u64 {
    let Some(catalog) = lint_options().catalog.as_ref() else {
        return signature("no catalog");
    };
    let Ok(documents) = yaml::load_bytes(bytes, &Limits::default()) else {
        return signature("invalid");
    };
    let mut kinds = Vec::new();
    for object in yaml::objects(&documents) {
        match catalog.validate(&object.to_json()) {
            Ok(violations) => {
                kinds.extend(violations.iter().map(|v| format!("{:?}", v.kind).len()))
            }
            Err(_) => kinds.push(0),
        }
    }
    kinds.sort_unstable();
    kinds.dedup();
    signature(kinds)
}

fn run_lint(bytes: &[u8]) -> u64 {
    lint_as("input.yaml", bytes)
}

fn lint_as(name: &str, bytes: &[u8]) -> u64 {
    let input = zerohop_lint::Input {
        name: name.to_owned(),
        content: Ok(bytes.to_vec()),
    };
    let outcome = zerohop_lint::lint(std::slice::from_ref(&input), lint_options());
    let mut ids: Vec<&str> = outcome.findings.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    signature((ids, outcome.invalid_inputs))
}

fn run_intent(bytes: &[u8]) -> u64 {
    match zerohop_plan::load("intent.yaml", &text(bytes), None) {
        Ok(plan) => {
            let set = zerohop_plan::render(&plan);
            signature(("ok", set.files.len()))
        }
        // The message without positions: one outcome per kind of mistake.
        Err(err) => {
            let text = err.to_string();
            let kind: String = text
                .lines()
                .take(2)
                .flat_map(str::chars)
                .filter(|c| !c.is_ascii_digit())
                .collect();
            signature(("err", kind))
        }
    }
}

fn run_cufile(bytes: &[u8]) -> u64 {
    let parsed = jsonc::parse(&text(bytes)).map(|value| value.to_string().len().min(16));
    signature((parsed.is_ok(), lint_as("cufile.json", bytes)))
}

/// Every parser and its judgements on the same input (not only the kind
/// detected), with expectations set so that the bandwidth judgements run.
fn run_validate(bytes: &[u8]) -> u64 {
    let text = text(bytes);
    let capture = Capture {
        name: "capture.txt",
        text: &text,
    };
    let expectations = Expectations {
        link_rate_gbps: Some(400.0),
        rails: Some(8),
        gpus_per_node: Some(8),
        ..Expectations::default()
    };
    let detected = zerohop_validate::kind::detect(&text);
    let outcomes: Vec<Vec<(String, Status)>> = Kind::ALL
        .iter()
        .map(|kind| {
            let mut findings: Vec<(String, Status)> = judge_as(*kind, &capture, &expectations)
                .into_iter()
                .map(|finding| (finding.id, finding.status))
                .collect();
            findings.sort_unstable();
            findings.dedup();
            findings
        })
        .collect();
    signature((detected, outcomes))
}

fn run_cmdline(bytes: &[u8]) -> u64 {
    let parsed = cmdline::Cmdline::parse(&text(bytes));
    let requests = cmdline::hugepage_requests(&parsed);
    let sizes: Vec<Option<u64>> = parsed
        .values("hugepagesz")
        .map(cmdline::parse_size_kib)
        .collect();
    let shown = ["isolcpus", "iommu", "hugepages"].map(|key| parsed.show(key).map(|s| s.len()));
    signature((requests.len(), sizes, shown))
}

fn run_cpuset(bytes: &[u8]) -> u64 {
    let text = text(bytes);
    let set = cpuset::CpuSet::parse(&text).map(|set| set.0.len().min(64));
    let isolated = cpuset::Isolcpus::parse(&text).map(|i| i.isolates_domains());
    signature((
        set.map_err(|e| e.to_string().len()),
        isolated.map_err(|e| e.to_string().len()),
    ))
}

fn run_meminfo(bytes: &[u8]) -> u64 {
    let info = meminfo::Meminfo::parse(&text(bytes));
    signature((info.0.len().min(64), info.get("HugePages_Total")))
}

fn run_modules(bytes: &[u8]) -> u64 {
    signature(modules::parse_proc_modules(&text(bytes)).len().min(64))
}

/// The parser and every signature on each record it reads.
fn run_kmsg(bytes: &[u8]) -> u64 {
    use zerohop_known::kernel_log as signatures;
    let parsed = kmsg::parse(&text(bytes));
    let mut seen = Vec::new();
    for record in &parsed.records {
        let message = record.message();
        let _ = record.shown();
        seen.push((
            format!("{:?}", record.format),
            record.level,
            record.time.map(|time| time.to_string().len()),
            signatures::peermem(message).is_some(),
            signatures::link_change(message).map(|change| change.up),
            signatures::nfs_server(message).map(|event| format!("{:?}", event.state)),
            signatures::nvidia_fs(message).is_some(),
            signatures::aer(message).map(|error| error.severity),
        ));
    }
    seen.sort_unstable_by_key(|entry| format!("{entry:?}"));
    seen.dedup();
    signature((parsed.dropped > 0, format!("{seen:?}")))
}

fn run_mountinfo(bytes: &[u8]) -> u64 {
    let text = text(bytes);
    let mounts = mountinfo::parse_mountinfo(&text);
    let fstab = mountinfo::parse_fstab(&text);
    let options = mountinfo::Options::parse(&text);
    let unescaped = mountinfo::unescape(&text);
    signature((
        mounts.len().min(64),
        fstab.len().min(64),
        options.0.len().min(64),
        unescaped.len() <= text.len(),
    ))
}

fn run_mountstats(bytes: &[u8]) -> u64 {
    let stats = mountstats::parse_mountstats(&text(bytes));
    let rdma: usize = stats.iter().map(|s| s.transports_of("rdma")).sum();
    signature((stats.len().min(64), rdma.min(64)))
}

fn run_netaddr(bytes: &[u8]) -> u64 {
    let text = text(bytes);
    let local = netaddr::local_ipv4(&text);
    let routes = netaddr::routes(&text);
    let interfaces = local
        .iter()
        .filter(|a| netaddr::iface_of(&routes, **a).is_some())
        .count();
    let inet6 = netaddr::if_inet6(&text);
    signature((
        local.len().min(64),
        routes.len().min(64),
        interfaces.min(64),
        inet6.len().min(64),
    ))
}

fn run_nvidia(bytes: &[u8]) -> u64 {
    let text = text(bytes);
    let version = nvidia::parse_version(&text).is_some();
    let information = nvidia::parse_information(&text).len().min(64);
    let kernel = nvidia::kernel_version(&text);
    signature((version, information, kernel))
}

fn run_rdma(bytes: &[u8]) -> u64 {
    let text = text(bytes);
    let gid = rdma::Gid::parse(&text).map(|gid| (gid.is_zero(), gid.is_link_local(), gid.ipv4()));
    signature((
        rdma::PortState::parse(&text).is_ok(),
        rdma::PhysState::parse(&text).is_ok(),
        rdma::Rate::parse(&text).is_ok(),
        format!("{:?}", rdma::LinkLayer::parse(&text)),
        gid.is_ok(),
        format!("{:?}", rdma::GidType::parse(&text)),
        format!("{:?}", rdma::parse_roce_mode(&text)),
        zerohop_host::probe::parse_seccomp(&text),
    ))
}

fn run_selected(bytes: &[u8]) -> u64 {
    signature(selected::selected(&text(bytes)).map(str::len))
}
