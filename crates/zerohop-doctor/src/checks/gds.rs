//! GPUDirect Storage: `cufile.json`, `nvidia-fs`, the file systems of the
//! data paths, and the `O_DIRECT` probe.

use std::net::IpAddr;

use serde_json::Value;
use zerohop_core::Remediation;
use zerohop_host::facts::CufileJson;
use zerohop_host::facts::gds::{CUFILE_DEFAULT, NVIDIA_FS_PROC};
use zerohop_host::probe::{DirectIo, ProbeState};
use zerohop_known::cufile as cufile_schema;

use crate::checks::{need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{join, quote};

/// Whether GPUDirect Storage is wanted: the profile says so, or `nvidia_fs` is loaded.
fn gds_wanted(ctx: &Context<'_>) -> bool {
    ctx.profile.gds.unwrap_or_else(|| nvidia_fs_loaded(ctx))
}

fn nvidia_fs_loaded(ctx: &Context<'_>) -> bool {
    matches!(&ctx.facts.modules, Ok(Some(modules)) if modules.present("nvidia_fs"))
}

/// The parsed `cufile.json`, or the outcome that ends a check.
fn cufile<'a>(ctx: &'a Context<'_>) -> Result<(&'a CufileJson, &'a Value), Box<Outcome>> {
    let gds = &ctx.facts.gds;
    let file = require(&gds.cufile, || {
        Outcome::not_applicable(format!("no {}", gds.cufile_path))
    })?;
    match &file.parsed {
        Ok(value) => Ok((file, value)),
        Err(err) => Err(Box::new(
            Outcome::unknown(format!("{} does not parse: {err}", file.path))
                .evidence(file.path.clone(), "<invalid json>"),
        )),
    }
}

fn source_note(file: &CufileJson) -> String {
    if file.from_env {
        format!("{} (from CUFILE_ENV_PATH_JSON)", file.path)
    } else {
        file.path.clone()
    }
}

declare_check! {
    /// `cufile.json` parses as libcufile reads it.
    ///
    /// ## What it checks
    /// The file named by `CUFILE_ENV_PATH_JSON` (live host only), else
    /// `/etc/cufile.json`: read (at most 1 MiB), `//` and `/* */`
    /// comments removed outside strings, then parsed as JSON with an
    /// object at the top.
    ///
    /// ## Why it matters
    /// libcufile reads this file at `cuFileDriverOpen`. A syntax error (a
    /// trailing comma after editing, a block pasted without its brace)
    /// makes it ignore the file or refuse to start, so the settings you
    /// made, such as `rdma_dev_addr_list`, are not in effect.
    ///
    /// ## How to fix
    /// Fix the syntax at the line and column shown, or start again from
    /// the copy shipped with CUDA: `cp /usr/local/cuda/gds/cufile.json /etc/cufile.json`.
    ///
    /// ## Evidence
    /// `/etc/cufile.json` (or `CUFILE_ENV_PATH_JSON`): read and parsed as
    /// cuFile does (JSON with comments). Unreadable is `unknown`; absent, GDS is
    /// not configured.
    ///
    /// ## Source
    /// NVIDIA GPUDirect Storage Installation and Troubleshooting Guide and cuFile API Reference (GDS 1.14), the `cufile.json` settings as `gdscheck -p` prints them.
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::puget_cufile_json_is_valid_and_not_forced_to_compat
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GDS001/fail-trailing-comma/`:
    ///
    /// ```text
    /// gds
    ///   fail           GDS001  cufile-json-invalid  /etc/cufile.json does not parse at line 4 column 3: trailing comma
    ///                  /etc/cufile.json = <invalid json>
    ///
    /// what to fix first
    ///   1. GDS001 cufile-json-invalid: /etc/cufile.json does not parse at line 4 column 3: trailing comma
    ///      fix: fix the json at line 4, or start from the copy shipped with cuda
    ///        cp /usr/local/cuda/gds/cufile.json /etc/cufile.json
    /// ```
    pub static CUFILE_INVALID = {
        id: "GDS001",
        name: "cufile-json-invalid",
        group: Gds,
        severity: Error,
        requires: [],
        run: cufile_invalid,
    };
}

fn cufile_invalid(ctx: &Context<'_>) -> Vec<Outcome> {
    let gds = &ctx.facts.gds;
    let outcome = match &gds.cufile {
        Err(gap) => Outcome::gap(gap),
        Ok(None) if gds_wanted(ctx) => Outcome::info(format!(
            "no {}: libcufile uses its built-in defaults",
            gds.cufile_path
        ))
        .evidence(gds.cufile_path.clone(), "<missing>"),
        Ok(None) => Outcome::not_applicable(format!(
            "no {} and gpudirect storage not wanted",
            gds.cufile_path
        )),
        Ok(Some(file)) => match &file.parsed {
            Err(err) => Outcome::fail(format!(
                "{} does not parse at line {} column {}: {}",
                file.path, err.line, err.column, err.message
            ))
            .evidence(source_note(file), "<invalid json>")
            .fix(
                Remediation::new(format!(
                    "fix the json at line {}, or start from the copy shipped with cuda",
                    err.line
                ))
                .command(format!(
                    "cp /usr/local/cuda/gds/cufile.json {CUFILE_DEFAULT}"
                )),
            ),
            Ok(Value::Object(map)) => {
                Outcome::pass(format!("{} parses ({} sections)", file.path, map.len())).evidence(
                    source_note(file),
                    map.keys().cloned().collect::<Vec<_>>().join(", "),
                )
            }
            Ok(_) => Outcome::fail(format!("{} is json but not an object", file.path))
                .evidence(source_note(file), "<not an object>")
                .fix(
                    Remediation::new("start from the copy shipped with cuda").command(format!(
                        "cp /usr/local/cuda/gds/cufile.json {CUFILE_DEFAULT}"
                    )),
                ),
        },
    };
    vec![outcome]
}

declare_check! {
    /// `cufile.json` holds only keys libcufile reads, with values of their type and range.
    ///
    /// ## What it checks
    /// Every key of `cufile.json` against the keys NVIDIA documents and
    /// ships (`logging`, `profile`, `execution`, `properties`, `fs`,
    /// `block`, `denylist`, `miscellaneous` and their members): unknown
    /// keys, keys under an old name (`blacklist` for `denylist`), values
    /// of another type (`"true"` for `true`, `2` for `logging.level`,
    /// which takes `"ERROR"` and its siblings), values outside a key's list
    /// (`logging.level`, `rdma_dynamic_routing_order`), integers outside
    /// their range (`profile.cufile_stats` 0 to 3, `logging.max_file_size_mb`
    /// -1 or more, every other size and count 0 or more), and slab lists
    /// whose sizes and counts do not pair up item by item warn. The
    /// contents of an unknown key are not searched. `zerohop lint` judges
    /// a `cufile.json` by the same schema (ZL081).
    ///
    /// ## Why it matters
    /// libcufile ignores keys it does not know, silently. A misspelt
    /// `rdma_dev_adr_list`, or a block such as `"nvfs": { "rdma": … }`
    /// copied from a guide, looks configured and does nothing; a value of
    /// the wrong type leaves the default in place.
    ///
    /// ## How to fix
    /// Move the setting to its documented key (for RDMA client addresses:
    /// `properties.rdma_dev_addr_list`, or `fs.<fs>.mount_table`) with a
    /// value of its type, or delete it.
    ///
    /// ## Evidence
    /// The keys and value types of `cufile.json` against the keys GDS 1.14
    /// documents (`zerohop-known`'s cuFile table).
    ///
    /// ## Source
    /// NVIDIA GPUDirect Storage Installation and Troubleshooting Guide and cuFile API Reference (GDS 1.14), the `cufile.json` settings as `gdscheck -p` prints them.
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::cufile_values_are_judged_by_type_and_range
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::gdscheck_reports_only_keys_the_doctor_knows
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GDS002/warn-misspelt-key/`:
    ///
    /// ```text
    /// gds
    ///   warn           GDS002  cufile-unknown-keys  1 key that libcufile ignores or misreads: `properties.rdma_dev_adr_list` is not a cufile key (did you mean `rdma_dev_addr_list`?)
    ///                  /etc/cufile.json = properties.rdma_dev_adr_list
    ///
    /// what to fix first
    ///   1. GDS002 cufile-unknown-keys: 1 key that libcufile ignores or misreads: `properties.rdma_dev_adr_list` is not a cufile key (did you mean `rdma_dev_addr_list`?)
    ///      fix: move each setting to its documented key with a value of its type, or delete it
    ///        diff <(grep -o '"[a-z_]*"' /usr/local/cuda/gds/cufile.json | sort -u) <(grep -o '"[a-z_]*"' /etc/cufile.json | sort -u)
    /// ```
    pub static CUFILE_UNKNOWN_KEYS = {
        id: "GDS002",
        name: "cufile-unknown-keys",
        group: Gds,
        severity: Warning,
        requires: [CUFILE_INVALID],
        run: cufile_unknown_keys,
    };
}

fn cufile_unknown_keys(ctx: &Context<'_>) -> Vec<Outcome> {
    let (file, value) = need!(cufile(ctx));
    let findings = cufile_schema::judge(value);
    let outcome = if findings.is_empty() {
        Outcome::pass("every key is a cufile key with a value of its type")
    } else {
        let problems: Vec<String> = findings
            .iter()
            .map(cufile_schema::Finding::message)
            .collect();
        Outcome::warn(format!("{} that libcufile ignores or misreads: {}", plural(findings.len(), "key"), problems.join("; ")))
            .fix(Remediation::new("move each setting to its documented key with a value of its type, or delete it")
                .command(format!("diff <(grep -o '\"[a-z_]*\"' /usr/local/cuda/gds/cufile.json | sort -u) <(grep -o '\"[a-z_]*\"' {} | sort -u)", quote(&file.path))))
    };
    vec![outcome.evidence(
        source_note(file),
        if findings.is_empty() {
            "all keys known".to_owned()
        } else {
            findings
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        },
    )]
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

declare_check! {
    /// cuFile is not forced into compat mode.
    ///
    /// ## What it checks
    /// `properties.force_compat_mode` in `cufile.json`: `true` fails;
    /// `false` or absent passes. `properties.allow_compat_mode` is shown.
    ///
    /// ## Why it matters
    /// With `force_compat_mode`, every cuFile read and write goes through
    /// POSIX I/O and a bounce buffer in host memory: the application runs,
    /// benchmarks show "GDS", and no byte goes direct to the GPU.
    ///
    /// ## How to fix
    /// Set `"force_compat_mode": false` in the `properties` section (and
    /// unset `CUFILE_FORCE_COMPAT_MODE` in the workload's environment).
    ///
    /// ## Evidence
    /// `properties.force_compat_mode` (and `allow_compat_mode`) of
    /// `cufile.json`.
    ///
    /// ## Source
    /// NVIDIA GPUDirect Storage Installation and Troubleshooting Guide and cuFile API Reference (GDS 1.14), the `cufile.json` settings as `gdscheck -p` prints them.
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::puget_cufile_json_is_valid_and_not_forced_to_compat
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GDS003/fail-forced/`:
    ///
    /// ```text
    /// gds
    ///   fail           GDS003  cufile-force-compat  force_compat_mode is true: every cufile i/o goes through host memory
    ///                  /etc/cufile.json: properties.force_compat_mode = true
    ///                  /etc/cufile.json: properties.allow_compat_mode = true
    ///
    /// what to fix first
    ///   1. GDS003 cufile-force-compat: force_compat_mode is true: every cufile i/o goes through host memory
    ///      fix: turn forced compat mode off
    ///        sed -i 's/"force_compat_mode"[[:space:]]*:[[:space:]]*true/"force_compat_mode": false/' /etc/cufile.json
    /// ```
    pub static FORCE_COMPAT = {
        id: "GDS003",
        name: "cufile-force-compat",
        group: Gds,
        severity: Error,
        requires: [CUFILE_INVALID],
        run: force_compat,
    };
}

fn force_compat(ctx: &Context<'_>) -> Vec<Outcome> {
    let (file, value) = need!(cufile(ctx));
    let properties = &value["properties"];
    let force = &properties["force_compat_mode"];
    let outcome = match force {
        Value::Bool(true) => Outcome::fail("force_compat_mode is true: every cufile i/o goes through host memory")
            .fix(Remediation::new("turn forced compat mode off")
                .command(format!("sed -i 's/\"force_compat_mode\"[[:space:]]*:[[:space:]]*true/\"force_compat_mode\": false/' {}", quote(&file.path)))),
        Value::Null | Value::Bool(false) => Outcome::pass("compat mode not forced"),
        other => Outcome::fail(format!("force_compat_mode is {other}, not a boolean"))
            .fix(Remediation::new("write a boolean").command(format!("# in {}: \"force_compat_mode\": false", quote(&file.path)))),
    };
    let mut outcome = outcome.evidence(
        format!("{}: properties.force_compat_mode", source_note(file)),
        if force.is_null() {
            "<unset>".to_owned()
        } else {
            force.to_string()
        },
    );
    if let Some(allow) = properties.get("allow_compat_mode") {
        outcome = outcome.evidence(
            format!("{}: properties.allow_compat_mode", file.path),
            allow.to_string(),
        );
    }
    vec![outcome]
}

/// Every `rdma_dev_addr_list` entry with the key it is under.
fn rdma_addresses(value: &Value) -> Vec<(String, &Value)> {
    let mut lists: Vec<(String, &Value)> = Vec::new();
    const KEY: &str = cufile_schema::RDMA_DEV_ADDR_LIST;
    if let Some(list) = value.get("properties").and_then(|p| p.get(KEY)) {
        lists.push((format!("properties.{KEY}"), list));
    }
    if let Some(Value::Object(filesystems)) = value.get("fs") {
        for (fs, section) in filesystems {
            if let Some(list) = section.get(KEY) {
                lists.push((format!("fs.{fs}.{KEY}"), list));
            }
            if let Some(Value::Object(table)) = section.get("mount_table") {
                for (mount, entry) in table {
                    if let Some(list) = entry.get(KEY) {
                        lists.push((format!("fs.{fs}.mount_table.{mount}.{KEY}"), list));
                    }
                }
            }
        }
    }
    lists
        .into_iter()
        .flat_map(|(key, list)| match list {
            Value::Array(items) => items.iter().map(|item| (key.clone(), item)).collect(),
            // A single address where a list belongs is still an address to check.
            other => vec![(key, other)],
        })
        .collect()
}

declare_check! {
    /// `rdma_dev_addr_list` names local addresses of RDMA interfaces.
    ///
    /// ## What it checks
    /// Every entry of `properties.rdma_dev_addr_list` and of
    /// `fs.<fs>.rdma_dev_addr_list` / `fs.<fs>.mount_table.*.rdma_dev_addr_list`
    /// in `cufile.json`: an IP address that is local (`/proc/net/fib_trie`
    /// with `/proc/net/route` for IPv4, `/proc/net/if_inet6` for IPv6), on
    /// an interface whose device has an RDMA device
    /// (`/sys/class/net/<if>/device/infiniband`).
    ///
    /// ## Why it matters
    /// cuFile registers GPU memory on the RDMA devices behind these
    /// addresses for NFS over RDMA, Lustre, GPFS, BeeGFS and object
    /// storage. An address that is not local (copied from another node) or
    /// sits on a plain Ethernet port leaves cuFile without an RDMA device,
    /// and I/O falls back to compat mode.
    ///
    /// ## How to fix
    /// List this node's RDMA interface addresses (`ibdev2netdev`,
    /// `ip -br addr show dev <if>`) and put those in the list; on a fleet,
    /// template the file per node or set `CUFILE_ENV_PATH_JSON`.
    ///
    /// ## Evidence
    /// `properties.rdma_dev_addr_list` of `cufile.json` against the
    /// addresses of the host's interfaces (`/proc/net/fib_trie`,
    /// `/proc/net/if_inet6`). No list is nothing to judge.
    ///
    /// ## Source
    /// NVIDIA GPUDirect Storage Installation and Troubleshooting Guide and cuFile API Reference (GDS 1.14), the `cufile.json` settings as `gdscheck -p` prints them.
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::puget_cufile_json_is_valid_and_not_forced_to_compat
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GDS004/fail-address-of-another-node/`:
    ///
    /// ```text
    /// gds
    ///   fail           GDS004  cufile-rdma-addr-not-local  10.0.9.8: 10.0.9.8 is not an address of this node
    ///                  /proc/net/fib_trie = 2 local addresses
    ///                  /etc/cufile.json: properties.rdma_dev_addr_list = 10.0.9.8
    ///
    /// what to fix first
    ///   1. GDS004 cufile-rdma-addr-not-local (10.0.9.8): 10.0.9.8 is not an address of this node
    ///      fix: list this node's rdma interface addresses in cufile.json
    ///        ibdev2netdev   # or: rdma link show
    ///        ip -br addr show
    /// ```
    pub static RDMA_ADDRESSES = {
        id: "GDS004",
        name: "cufile-rdma-addr-not-local",
        group: Gds,
        severity: Error,
        requires: [CUFILE_INVALID],
        run: rdma_addr_not_local,
    };
}

fn rdma_addr_not_local(ctx: &Context<'_>) -> Vec<Outcome> {
    let (file, value) = need!(cufile(ctx));
    let entries = rdma_addresses(value);
    if entries.is_empty() {
        return vec![Outcome::not_applicable("no rdma_dev_addr_list entries")];
    }
    let gds = &ctx.facts.gds;
    let fix = || {
        Remediation::new("list this node's rdma interface addresses in cufile.json")
            .command("ibdev2netdev   # or: rdma link show")
            .command("ip -br addr show")
    };
    entries
        .into_iter()
        .map(|(key, item)| {
            let shown = item.as_str().map_or_else(|| item.to_string(), str::to_owned);
            let evidence = (format!("{}: {key}", file.path), shown.clone());
            let outcome = match (item.as_str().and_then(|s| s.trim().parse::<IpAddr>().ok()), &gds.addresses) {
                (None, _) => Outcome::fail(format!("`{shown}` is not an ip address")).fix(fix()),
                (Some(_), Err(gap)) => Outcome::gap(gap),
                (Some(_), Ok(None)) => Outcome::unknown("local addresses unreadable (/proc/net/fib_trie and /proc/net/if_inet6 absent)"),
                (Some(addr), Ok(Some(local))) => match local.iter().find(|l| l.addr == addr) {
                    None => Outcome::fail(format!("{addr} is not an address of this node")).evidence("/proc/net/fib_trie", format!("{} local addresses", local.len())).fix(fix()),
                    Some(l) => match l.iface.as_deref() {
                        None => Outcome::unknown(format!("{addr} is local but its interface is unknown (no connected route in /proc/net/route)")),
                        Some(iface) => match gds.netdev(iface) {
                            Some(dev) if dev.rdma => Outcome::pass(format!("{addr} on rdma interface {iface}"))
                                .evidence(format!("/sys/class/net/{iface}/device/infiniband"), "present"),
                            Some(_) => Outcome::fail(format!("{addr} is on {iface}, which has no rdma device"))
                                .evidence(format!("/sys/class/net/{iface}/device/infiniband"), "<missing>")
                                .fix(fix()),
                            None => Outcome::unknown(format!("{addr} is on {iface}, which /sys/class/net does not list")),
                        },
                    },
                },
            };
            outcome.evidence(evidence.0, evidence.1).subject(shown)
        })
        .collect()
}

declare_check! {
    /// Each data mount's file system and device support GPUDirect Storage.
    ///
    /// ## What it checks
    /// For every data mount given with `--mount` (once NFS007 found it
    /// mounted), and every volume the kubelet mounted for a pod (CSI
    /// volumes under `/var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~csi/`,
    /// local volumes under `kubernetes.io~local-volume/`) whose file system
    /// holds data (ext4, XFS, NFS, Lustre, GPFS, WekaFS, BeeGFS, btrfs; not
    /// a tmpfs of secrets): its file system in `/proc/self/mountinfo` (else
    /// `/proc/mounts`) against the support matrix of `nvidia-fs` (NVIDIA
    /// gds-nvidia-fs README, GDS release notes), and for local file
    /// systems the device under them:
    ///
    /// - ext4 (in `data=ordered` mode, the default) and XFS pass only on an
    ///   NVMe namespace reached over PCIe or NVMe-oF over RDMA. The mount's
    ///   `major:minor` (or source) is followed through `/sys/block` (and
    ///   `/dev/mapper` names) to its disk; an `nvme*` disk's transport is its
    ///   controller's (`/sys/class/nvme-subsystem/*/nvme<C>/transport`, via
    ///   the `/sys/block/<disk>` link or the subsystem that lists the
    ///   namespace). NVMe/TCP and FC, device-mapper (see NVME006), virtio,
    ///   SCSI/SATA and other disks do not pass; md RAID over NVMe is
    ///   `unknown` (it depends on the level). A device that cannot be
    ///   followed is `unknown`, unless `/sys/block` shows the host has no
    ///   NVMe disk at all.
    /// - Lustre, GPFS (IBM Storage Scale) and WekaFS pass with their
    ///   GDS-enabled clients; BeeGFS warns (partial support); NFS passes
    ///   only over RDMA.
    /// - Anything else (overlay, tmpfs, btrfs, ZFS…) is not in the matrix.
    ///
    /// What does not pass fails when GDS is expected (`--expect-gds true`)
    /// and is `info` otherwise.
    ///
    /// ## Why it matters
    /// On other file systems and devices cuFile still works, in compat
    /// mode: reads go through the page cache and a host bounce buffer, at a
    /// fraction of the bandwidth, with no error to say so. `nvidia-fs`
    /// does direct I/O only where an NVMe controller (local) or an RDMA NIC
    /// (remote) can DMA into GPU memory.
    ///
    /// ## How to fix
    /// Put the data on a supported file system: ext4/XFS on a local NVMe
    /// namespace or NVMe-oF over RDMA, or a parallel file system with a
    /// GDS-enabled client; mount NFS with `proto=rdma`.
    ///
    /// ## Evidence
    /// The data mount's file system and source in the mount table, down to its
    /// block device in `/sys/block`.
    ///
    /// ## Source
    /// NVIDIA GPUDirect Storage Installation and Troubleshooting Guide and cuFile API Reference (GDS 1.14), the `cufile.json` settings as `gdscheck -p` prints them (supported file systems).
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::gds_filesystem_follows_the_mount_to_its_disk
    /// Real capture: crates/zerohop-doctor/tests/kubelet_csi_mounts.rs::a_csi_nfs_volume_over_rdma_passes_every_nfs_check_and_names_its_volume
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GDS005/fail-ext4-on-virtio/`:
    ///
    /// ```text
    /// gds
    ///   fail           GDS005  gds-filesystem-unsupported  /data: ext4 on vdb, a virtio disk, not an nvme namespace: nvidia-fs does direct i/o only on nvme and nvme-of over rdma
    ///                  /proc/self/mountinfo = 50 21 252:16 / /data rw,noatime - ext4 /dev/vdb rw
    ///                  /sys/block/vdb = ../devices/pci0000:00/0000:00:05.0/virtio2/block/vdb
    ///
    /// what to fix first
    ///   1. GDS005 gds-filesystem-unsupported (/data): ext4 on vdb, a virtio disk, not an nvme namespace: nvidia-fs does direct i/o only on nvme and nvme-of over rdma
    ///      fix: put gds data on ext4/xfs over nvme (local or nvme-of over rdma), a gds-enabled parallel file system, or nfs over rdma
    ///        gdscheck -p   # lists the backends this node supports
    /// ```
    pub static GDS_FILESYSTEM = {
        id: "GDS005",
        name: "gds-filesystem-unsupported",
        group: Gds,
        severity: Error,
        requires: [crate::checks::nfs::DATA_MOUNT_MISSING],
        run: gds_filesystem,
    };
}

/// The file systems of pods' volumes GDS005 judges: those that hold data,
/// whether GDS reads them directly or not; a CSI volume of another kind
/// (a tmpfs of secrets, a FUSE bucket) is no data mount for GPUDirect
/// Storage to reach.
const POD_DATA_FILE_SYSTEMS: [&str; 9] = [
    "ext4", "xfs", "nfs", "nfs4", "lustre", "gpfs", "wekafs", "beegfs", "btrfs",
];

/// NVMe transports whose controller can DMA into GPU memory: a local
/// controller, or an RDMA NIC for NVMe-oF.
const GDS_NVME_TRANSPORTS: [&str; 2] = ["pcie", "rdma"];

/// What the device under a local file system is, for GDS.
enum Device {
    /// An NVMe namespace on these transports (`pcie`, `rdma`, `tcp`…);
    /// empty when the transport could not be read.
    Nvme {
        name: String,
        transports: Vec<String>,
        evidence: (String, String),
    },
    /// Not NVMe: the disk, why, and the file that shows it.
    Other {
        name: String,
        what: String,
        evidence: Option<(String, String)>,
    },
    /// md RAID whose members are all NVMe.
    MdOverNvme { name: String, members: Vec<String> },
    /// Could not be followed.
    Unknown(String),
}

/// `nvme0n1` for `nvme0n1p2` or `nvme0n1`; `None` when the name is no
/// NVMe namespace.
fn nvme_namespace(name: &str) -> Option<String> {
    use zerohop_host::facts::nvme::path_namespace;
    if path_namespace(name).is_some() {
        return Some(name.to_owned());
    }
    let (disk, part) = name.rsplit_once('p')?;
    (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) && path_namespace(disk).is_some())
        .then(|| disk.to_owned())
}

/// The transports of NVMe namespace `namespace`, reached through the disk
/// link's controller or subsystem, else the subsystem listing it.
fn nvme_transports(
    ctx: &Context<'_>,
    namespace: &str,
    parent: Option<&str>,
) -> (Vec<String>, (String, String)) {
    let nvme = &ctx.facts.nvme;
    let of_controllers = |subsystem: &zerohop_host::facts::NvmeSubsystem| {
        let mut names: Vec<String> = subsystem
            .controllers
            .iter()
            .filter_map(|c| c.transport.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    };
    if let Some(parent) = parent {
        if let Some((_, controller)) = nvme.controller(parent)
            && let Some(transport) = &controller.transport
        {
            return (
                vec![transport.clone()],
                (format!("{}/transport", controller.dir), transport.clone()),
            );
        }
        if let Some(subsystem) = nvme.list().iter().find(|s| s.name == parent) {
            let names = of_controllers(subsystem);
            return (
                names.clone(),
                (format!("{}/*/transport", subsystem.dir()), names.join(" ")),
            );
        }
    }
    if let Some(subsystem) = nvme.subsystem_of(namespace) {
        let names = of_controllers(subsystem);
        return (
            names.clone(),
            (format!("{}/*/transport", subsystem.dir()), names.join(" ")),
        );
    }
    let shown = match &nvme.subsystems {
        Ok(None) => "<missing>".to_owned(),
        Err(_) => "<unreadable>".to_owned(),
        Ok(Some(_)) => format!("<no subsystem lists {namespace}>"),
    };
    (Vec::new(), ("/sys/class/nvme-subsystem".to_owned(), shown))
}

/// Follows a mount to the device under it.
fn device_under(ctx: &Context<'_>, entry: &zerohop_host::parse::mountinfo::MountEntry) -> Device {
    let nvme = &ctx.facts.nvme;
    let found = nvme.block_of(entry.device_number.as_deref(), &entry.source);
    let Some((disk, partition)) = found else {
        // Without the block device: an NVMe name in the source still
        // says NVMe; a host whose /sys/block has no NVMe disk at all
        // cannot have one under this mount.
        if let Some(namespace) = entry.source.strip_prefix("/dev/").and_then(nvme_namespace) {
            let (transports, evidence) = nvme_transports(ctx, &namespace, None);
            return Device::Nvme {
                name: entry.source.trim_start_matches("/dev/").to_owned(),
                transports,
                evidence,
            };
        }
        let disks = nvme.block_list();
        let real: Vec<&str> = disks
            .iter()
            .filter(|d| d.bus() != Some("virtual"))
            .map(|d| d.name.as_str())
            .collect();
        if !disks.is_empty() && !disks.iter().any(|d| d.is_nvme()) {
            return Device::Other {
                name: entry.source.clone(),
                what: "and this host has no nvme disk".to_owned(),
                evidence: Some((
                    "/sys/block".to_owned(),
                    if real.is_empty() {
                        "only virtual devices".to_owned()
                    } else {
                        real.join(" ")
                    },
                )),
            };
        }
        return Device::Unknown(format!(
            "cannot follow {} ({}) to a block device in /sys/block",
            entry.source,
            entry.device_number.as_deref().unwrap_or("no major:minor")
        ));
    };
    let shown = partition.unwrap_or(&disk.name).to_owned();
    let link = disk
        .link
        .clone()
        .map(|link| (format!("/sys/block/{}", disk.name), link));
    if disk.is_nvme() {
        let (transports, evidence) = nvme_transports(ctx, &disk.name, disk.nvme_parent());
        return Device::Nvme {
            name: shown,
            transports,
            evidence,
        };
    }
    if disk.name.starts_with("dm-") {
        return Device::Other {
            name: shown,
            what: "device-mapper: cufile uses compat mode on it (NVME006)".to_owned(),
            evidence: link,
        };
    }
    if disk.name.starts_with("md") && !disk.slaves.is_empty() {
        let members: Vec<String> = disk.slaves.clone();
        if members.iter().all(|m| nvme_namespace(m).is_some()) {
            return Device::MdOverNvme {
                name: shown,
                members,
            };
        }
        return Device::Other {
            name: shown,
            what: format!("md raid over {}, not all nvme", members.join(", ")),
            evidence: Some((
                format!("/sys/block/{}/slaves", disk.name),
                members.join(" "),
            )),
        };
    }
    Device::Other {
        what: format!(
            "a {} disk, not an nvme namespace",
            disk.bus().unwrap_or("non-nvme")
        ),
        name: shown,
        evidence: link,
    }
}

fn gds_filesystem(ctx: &Context<'_>) -> Vec<Outcome> {
    if ctx.profile.gds == Some(false) {
        return vec![Outcome::not_applicable("gpudirect storage not wanted")];
    }
    let mounts = &ctx.facts.mounts;
    let pod_volumes: Vec<&zerohop_host::facts::PodVolume> = mounts
        .pod_volumes
        .iter()
        .filter(|volume| {
            mounts
                .mount_of(&volume.mount_point)
                .is_some_and(|entry| POD_DATA_FILE_SYSTEMS.contains(&entry.fstype.as_str()))
        })
        .collect();
    if ctx.profile.mounts.is_empty() && pod_volumes.is_empty() {
        return vec![Outcome::not_applicable(
            "no data mounts declared (--mount PATH), and no pod volume on a data file system",
        )];
    }
    let table = need!(require(&mounts.table, || Outcome::unknown(
        "no mount table (/proc/self/mountinfo and /proc/mounts absent)"
    )));
    let expected = ctx.profile.gds == Some(true);
    // Shown beside each verdict: which nvidia-fs serves the direct path
    // (whether it must be loaded is GPU004's question).
    let nvidia_fs_version = match &ctx.facts.gds.nvidia_fs_proc {
        Ok(Some(files)) => files
            .get("version")
            .and_then(|v| v.lines().next())
            .map(|v| v.trim().to_owned()),
        _ => None,
    };
    // A declared path that is also a pod's volume is judged once, as the
    // volume, whose evidence names its PersistentVolume and pod.
    let mut declared: Vec<&String> = ctx
        .profile
        .mounts
        .iter()
        .filter(|path| !pod_volumes.iter().any(|v| &v.mount_point == *path))
        .collect();
    declared.sort();
    declared.dedup();
    let paths = declared.into_iter().map(|path| (path.clone(), None)).chain(
        pod_volumes
            .iter()
            .map(|v| (v.mount_point.clone(), Some(*v))),
    );
    paths
        .map(|(path, pod_volume)| {
            let path = &path;
            let entry = match mounts.place(path) {
                Some(placement) if placement.is_mounted() => placement.entry(),
                _ => None,
            };
            let Some(entry) = entry else {
                return Outcome::unknown("not mounted (see NFS007): no file system to judge").subject(path.clone());
            };
            let fs = entry.fstype.as_str();
            let nfs_rdma = entry.options.has("rdma") || entry.options.get("proto") == Some("rdma");
            let unsupported = |message: String| {
                let outcome = if expected { Outcome::fail(message) } else { Outcome::info(message) };
                outcome.fix(Remediation::new("put gds data on ext4/xfs over nvme (local or nvme-of over rdma), a gds-enabled parallel file system, or nfs over rdma")
                    .command("gdscheck -p   # lists the backends this node supports"))
            };
            let mut extra: Option<(String, String)> = None;
            let outcome = match fs {
                "ext4" if matches!(entry.options.get("data"), Some("journal" | "writeback")) => unsupported(format!(
                    "ext4 with data={}: nvidia-fs needs ext4 in ordered mode",
                    entry.options.get("data").unwrap_or_default()
                )),
                "ext4" | "xfs" => match device_under(ctx, entry) {
                    Device::Nvme { name, transports, evidence } => {
                        extra = Some(evidence);
                        if transports.is_empty() {
                            Outcome::unknown(format!(
                                "{fs} on nvme namespace {name}, but its controller's transport was not read: pcie and rdma are supported, tcp and fc are not"
                            ))
                        } else if transports.iter().all(|t| GDS_NVME_TRANSPORTS.contains(&t.as_str())) {
                            Outcome::pass(format!("{fs} on nvme {name} over {}", transports.join(", ")))
                        } else {
                            unsupported(format!(
                                "{fs} on nvme {name} over {}: gds reaches nvme-of only over rdma",
                                transports.join(", ")
                            ))
                        }
                    }
                    Device::MdOverNvme { name, members } => Outcome::unknown(format!(
                        "{fs} on md raid {name} over nvme ({}): whether cufile reads it directly depends on the raid level; gdscheck -p shows it",
                        members.join(", ")
                    )),
                    Device::Other { name, what, evidence } => {
                        extra = evidence;
                        unsupported(format!(
                            "{fs} on {name}, {what}: nvidia-fs does direct i/o only on nvme and nvme-of over rdma"
                        ))
                    }
                    Device::Unknown(why) => Outcome::unknown(format!("{fs}: {why}")),
                },
                "lustre" | "gpfs" | "wekafs" => Outcome::pass(format!("{fs}: supported with its gds-enabled client")),
                "beegfs" => Outcome::warn("beegfs: partial gds support (gds-enabled client, reads first)")
                    .fix(Remediation::new("check the beegfs client's gds support").command("gdscheck -p | grep -i beegfs")),
                "nfs" | "nfs4" if nfs_rdma => Outcome::pass(format!("{fs} over rdma: supported")),
                "nfs" | "nfs4" => unsupported(format!("{fs} over {}: gds needs nfs over rdma", entry.options.get("proto").unwrap_or("tcp"))),
                other => unsupported(format!("{other} is not in the gds support matrix: cufile uses compat mode")),
            };
            let mut outcome = outcome.evidence(table.source, entry.line.clone()).subject(path.clone());
            if let Some((source, value)) = extra {
                outcome = outcome.evidence(source, value);
            }
            if let Some(volume) = pod_volume {
                let source = volume.data.as_ref().map_or_else(|| volume.mount_point.clone(), |d| d.path.clone());
                outcome = outcome.evidence(source, volume.describe());
            }
            match &nvidia_fs_version {
                Some(version) => outcome.evidence(format!("{NVIDIA_FS_PROC}/version"), version.clone()),
                None => outcome,
            }
        })
        .collect()
}

declare_check! {
    /// GPUDirect Storage, when expected, has an NVIDIA GPU to reach.
    ///
    /// ## What it checks
    /// Only when GPUDirect Storage is expected (`--expect-gds true`): an
    /// NVIDIA GPU on the PCI bus (vendor `10de`, display or 3D class, not a
    /// VF) or in `/proc/driver/nvidia/gpus`. A PCI bus without one, and no
    /// driver list, fails; PCI functions that could not be identified, or
    /// neither file present (a capture without them), are `unknown`.
    /// Without the expectation it does not apply (GPU004 reports
    /// `nvidia_fs` loaded without it).
    ///
    /// ## Why it matters
    /// GDS moves data between storage and GPU memory: on a host without a
    /// GPU the expectation cannot be met, and every other GDS check would
    /// judge a path that ends nowhere. Run against the wrong node (a
    /// storage or login node), the doctor must say so rather than exit 0.
    ///
    /// ## How to fix
    /// Run the doctor on the GPU node that is meant to read the data, or
    /// drop `--expect-gds` for this node. If the node has GPUs, check that
    /// they are on the bus (`lspci -d 10de:`) and that the driver is loaded
    /// (GPU001).
    ///
    /// ## Evidence
    /// `--expect-gds` (the profile's `gds`) against the NVIDIA GPUs of
    /// `/sys/bus/pci/devices` (vendor `10de`, display class) and
    /// `/proc/driver/nvidia/gpus`; an unreadable PCI listing is `unknown`.
    ///
    /// ## Source
    /// NVIDIA GPUDirect Storage Installation and Troubleshooting Guide and cuFile API Reference (GDS 1.14), the `cufile.json` settings as `gdscheck -p` prints them; linux v6.12 `include/linux/pci_ids.h` (`PCI_VENDOR_ID_NVIDIA`,
    /// `PCI_CLASS_DISPLAY_VGA`, `PCI_CLASS_DISPLAY_3D`).
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::gds_expected_without_a_gpu_fails
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GDS007/fail-no-gpu/`:
    ///
    /// ```text
    /// gds
    ///   fail           GDS007  gds-expected-without-gpu  gpudirect storage expected, but this host has no nvidia gpu: the expectation cannot be met
    ///                  /sys/bus/pci/devices = 1 function(s), no nvidia gpu
    ///                  /proc/driver/nvidia/gpus = <missing>
    ///
    /// what to fix first
    ///   1. GDS007 gds-expected-without-gpu: gpudirect storage expected, but this host has no nvidia gpu: the expectation cannot be met
    ///      fix: run the doctor on the gpu node that reads the data, or drop --expect-gds here
    ///        lspci -d 10de:   # nvidia functions on the bus
    /// ```
    pub static GDS_WITHOUT_GPU = {
        id: "GDS007",
        name: "gds-expected-without-gpu",
        group: Gds,
        severity: Error,
        requires: [],
        run: gds_without_gpu,
    };
}

fn gds_without_gpu(ctx: &Context<'_>) -> Vec<Outcome> {
    if ctx.profile.gds != Some(true) {
        return vec![Outcome::not_applicable(
            "gpudirect storage not expected (--expect-gds)",
        )];
    }
    let facts = ctx.facts;
    let on_bus: Vec<&str> = facts
        .pci
        .nvidia_gpus()
        .map(|d| d.address.as_str())
        .collect();
    let driver: Vec<&str> = match &facts.nvidia.gpus {
        Ok(Some(gpus)) => gpus.iter().map(|g| g.address.as_str()).collect(),
        _ => Vec::new(),
    };
    if let Some(first) = on_bus.first().or(driver.first()) {
        let count = on_bus.len().max(driver.len());
        return vec![
            Outcome::pass(format!(
                "gpudirect storage expected and {count} nvidia gpu(s) present"
            ))
            .evidence(format!("/sys/bus/pci/devices/{first}"), "nvidia gpu"),
        ];
    }
    if let Some(gap) = facts.pci.unidentified() {
        return vec![Outcome::gap(gap)];
    }
    let bus = match &facts.pci.devices {
        Ok(Some(devices)) => format!("{} function(s), no nvidia gpu", devices.len()),
        Err(gap) => return vec![Outcome::gap(gap)],
        // Neither the bus nor the driver's list was there to look at: a
        // capture without them says nothing about the GPUs.
        Ok(None) => {
            return vec![
                Outcome::unknown("gpudirect storage expected, but /sys/bus/pci/devices and /proc/driver/nvidia/gpus are absent: cannot tell whether this host has a gpu")
                    .evidence("/sys/bus/pci/devices", "<missing>")
                    .evidence("/proc/driver/nvidia/gpus", "<missing>"),
            ];
        }
    };
    vec![
        Outcome::fail("gpudirect storage expected, but this host has no nvidia gpu: the expectation cannot be met")
            .evidence("/sys/bus/pci/devices", bus)
            .evidence("/proc/driver/nvidia/gpus", "<missing>")
            .fix(
                Remediation::new("run the doctor on the gpu node that reads the data, or drop --expect-gds here")
                    .command("lspci -d 10de:   # nvidia functions on the bus"),
            ),
    ]
}

declare_check! {
    /// `O_DIRECT` reads work on the data path.
    ///
    /// ## What it checks
    /// Only with `--probe PATH` on the live host: opens PATH (or the first
    /// non-empty file in it) read-only with `O_DIRECT` and reads one 4 KiB
    /// block into an aligned buffer. `EINVAL` fails and names the file
    /// system; nothing is written.
    ///
    /// ## Why it matters
    /// GPUDirect Storage, io_uring readers and `zerohop bench` open data
    /// with `O_DIRECT` to bypass the page cache. File systems without
    /// direct I/O (overlayfs on older kernels, tmpfs before Linux 6.6, some
    /// FUSE file systems) refuse it with `EINVAL`, and readers either fail
    /// or silently fall back to buffered I/O.
    ///
    /// ## How to fix
    /// Point the workload at a file system that supports direct I/O (ext4,
    /// XFS, NFS, Lustre, GPFS…): in containers, mount the data as a volume
    /// rather than reading through the overlay root.
    ///
    /// ## Evidence
    /// A live `O_DIRECT` open and aligned read of a file under the target
    /// (`--probe`); on another root it does not run.
    ///
    /// ## Source
    /// linux v6.12 `fs/open.c` (`do_dentry_open`: `O_DIRECT` without
    /// `FMODE_CAN_ODIRECT` is `EINVAL`); NVIDIA GPUDirect Storage Installation and Troubleshooting Guide and cuFile API Reference (GDS 1.14), the `cufile.json` settings as `gdscheck -p` prints them.
    /// Real capture: crates/zerohop-doctor/tests/live_probes.rs::this_machine_is_judged_by_what_its_kernel_answered
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/GDS006/not-applicable-not-probed/`:
    ///
    /// ```text
    /// gds
    ///   not-applicable GDS006  odirect-read-failed  not probed: give --probe PATH to read a block with O_DIRECT
    /// ```
    pub static ODIRECT = {
        id: "GDS006",
        name: "odirect-read-failed",
        group: Gds,
        severity: Error,
        requires: [],
        run: odirect,
    };
}

fn odirect(ctx: &Context<'_>) -> Vec<Outcome> {
    let probes = match &ctx.facts.probes {
        ProbeState::NotRequested => {
            return vec![Outcome::not_applicable(
                "not probed: give --probe PATH to read a block with O_DIRECT",
            )];
        }
        ProbeState::NotLive => {
            return vec![Outcome::not_applicable(
                "probes run only on the live host, not on a captured root",
            )];
        }
        ProbeState::Done(probes) => probes,
    };
    let path = probes.canonical.as_deref().unwrap_or(&probes.target);
    let mount = ctx.facts.mounts.mount_of(path);
    let fs = mount.map_or_else(
        || "an unknown file system".to_owned(),
        |m| format!("{} at {}", m.fstype, m.mount_point),
    );
    let mut outcome = match &probes.direct {
        DirectIo::Read { file, bytes } => {
            Outcome::pass(format!("read {bytes} bytes with O_DIRECT on {fs}"))
                .evidence(format!("open(O_DIRECT) + read {file}"), "ok")
        }
        DirectIo::NoFile { dir } => Outcome::unknown(format!(
            "{dir} on {fs} holds no non-empty file to read: give a data file to --probe"
        ))
        .evidence(format!("readdir {dir}"), "no regular file"),
        DirectIo::OpenFailed { file, error } | DirectIo::ReadFailed { file, error }
            if error.is_einval() =>
        {
            Outcome::fail(format!(
                "{fs} refuses O_DIRECT (EINVAL): direct readers fail or fall back to the page cache"
            ))
            .evidence(format!("O_DIRECT on {file}"), "EINVAL")
            .fix(
                Remediation::new(
                    "read the data from a file system with direct i/o (ext4, xfs, nfs, lustre)",
                )
                .command(join(["findmnt", "-T", path])),
            )
        }
        DirectIo::OpenFailed { file, error } => {
            Outcome::unknown(format!("cannot open {file}: {}", error.name))
                .evidence(format!("open(O_DIRECT) {file}"), error.name.clone())
        }
        DirectIo::ReadFailed { file, error } => {
            Outcome::fail(format!("O_DIRECT read failed on {fs}: {}", error.name))
                .evidence(format!("read(O_DIRECT) {file}"), error.name.clone())
                .fix(
                    Remediation::new("check the device and file system for errors")
                        .command("dmesg | tail -50"),
                )
        }
        // A hung mount blocks a reader the same way: the probe cannot tell
        // whether direct i/o works, only that nothing answered.
        DirectIo::TimedOut { path, reason } => {
            Outcome::unknown(format!("O_DIRECT probe timed out on {fs}: {reason}"))
                .evidence(format!("open(O_DIRECT) {path}"), "<no answer>")
        }
    };
    if let Some(mount) = mount {
        outcome = outcome.evidence("/proc/self/mountinfo", mount.line.clone());
    }
    vec![outcome.subject(probes.target.clone())]
}
