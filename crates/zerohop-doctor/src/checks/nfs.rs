//! NFS over RDMA: transport, port, nconnect, transfer sizes, client module,
//! hard mounts.

use zerohop_core::Remediation;
use zerohop_host::facts::mounts::{FSTAB, MOUNTINFO, MOUNTSTATS, normalize};
use zerohop_host::facts::{NfsMount, Placement};

use crate::checks::{bytes, need, require};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{fstab_field, join, quote};

/// The port NFS over RDMA listens on, and the transfer size below which
/// it leaves throughput unused: the facts `plan` and `lint` hold too.
use zerohop_known::storage::{MAX_NCONNECT, MIN_TRANSFER_SIZE as MIN_IO_SIZE, NFS_RDMA_PORT};

/// Why an NFS mount is (or is not) a data mount: the one scope every NFS
/// check judges by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// It holds a path given with `--mount`.
    Declared,
    /// Nothing is declared, and it runs over RDMA or `/etc/fstab` asks for
    /// RDMA: only the data path does that.
    Rdma,
    /// A pod's persistent volume, mounted by the kubelet through CSI: what
    /// pods really read, judged like a declared data mount.
    Pod,
    /// Nothing is declared, and the profile expects every NFS mount over RDMA.
    Expected,
    /// Nothing is declared and nothing marks it as the data path (a home
    /// or tools directory over TCP): NFS001 lists it, the other checks
    /// leave it alone.
    NotData,
}

/// An NFS mount and its scope.
struct DataMount {
    mount: NfsMount,
    scope: Scope,
}

impl DataMount {
    fn is_data(&self) -> bool {
        self.scope != Scope::NotData
    }
}

/// Whether the mount runs over RDMA, by its options or its transports.
fn uses_rdma(mount: &NfsMount) -> bool {
    mount.is_rdma()
        || mount
            .stats
            .as_ref()
            .is_some_and(|s| s.transports_of("rdma") > 0)
}

/// The NFS mounts with their scope. With `--mount`, the NFS mounts that
/// hold a declared path (a declared path that is not mounted is NFS007's);
/// without, every NFS mount, as data mount when it uses or asks for RDMA
/// (or the profile expects RDMA of every one).
fn data_mounts(ctx: &Context<'_>) -> Result<Vec<DataMount>, Box<Outcome>> {
    let facts = &ctx.facts.mounts;
    if let Err(gap) = &facts.table {
        return Err(Box::new(Outcome::gap(gap)));
    }
    let nfs = facts.nfs_mounts();
    if ctx.profile.mounts.is_empty() {
        return Ok(nfs
            .into_iter()
            .map(|mount| {
                let scope = if mount.pod_volume.is_some() {
                    Scope::Pod
                } else if uses_rdma(&mount) || mount.fstab_wants_rdma() {
                    Scope::Rdma
                } else if ctx.profile.nfs_rdma == Some(true) {
                    Scope::Expected
                } else {
                    Scope::NotData
                };
                DataMount { mount, scope }
            })
            .collect());
    }
    let mut chosen: Vec<DataMount> = Vec::new();
    for path in &ctx.profile.mounts {
        let holder = match facts.place(path) {
            Some(placement) if placement.is_mounted() => {
                placement.entry().map(|entry| normalize(&entry.mount_point))
            }
            // Not mounted: NFS007 says so; no NFS mount holds it.
            Some(_) => None,
            // Without a mount table (a capture of mountstats alone), the
            // NFS mount with the longest matching mount point holds it.
            None => nfs
                .iter()
                .map(|m| normalize(&m.mount_point))
                .filter(|mp| under(path, mp))
                .max_by_key(String::len),
        };
        let Some(holder) = holder else { continue };
        // The last NFS mount on that point is the one in effect.
        if let Some(mount) = nfs
            .iter()
            .rev()
            .find(|m| normalize(&m.mount_point) == holder)
            && !chosen.iter().any(|c| c.mount == *mount)
        {
            chosen.push(DataMount {
                mount: mount.clone(),
                scope: Scope::Declared,
            });
        }
    }
    // Pods' volumes are data mounts whatever was declared: the kubelet
    // mounts them where it likes.
    for mount in nfs.into_iter().filter(|m| m.pod_volume.is_some()) {
        if !chosen.iter().any(|c| c.mount == mount) {
            chosen.push(DataMount {
                mount,
                scope: Scope::Pod,
            });
        }
    }
    Ok(chosen)
}

fn under(path: &str, mount_point: &str) -> bool {
    let path = normalize(path);
    mount_point == "/"
        || path == mount_point
        || path
            .strip_prefix(mount_point)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn none_message(ctx: &Context<'_>) -> Outcome {
    let facts = &ctx.facts.mounts;
    // The kernel always has a mount table (`/` at least): without one, and
    // without mountstats, the capture did not hold them.
    if matches!(facts.table, Ok(None)) && !matches!(facts.stats, Ok(Some(_))) {
        return Outcome::unknown(format!(
            "cannot tell whether any nfs is mounted: no mount table ({MOUNTINFO}, /proc/mounts) and no {MOUNTSTATS} in the capture"
        ))
        .evidence(MOUNTINFO, "<missing>");
    }
    if ctx.profile.mounts.is_empty() {
        Outcome::not_applicable("no nfs mounts")
    } else {
        Outcome::not_applicable(format!(
            "none of the data mounts ({}) is on nfs",
            ctx.profile.mounts.join(", ")
        ))
    }
}

/// The outcome when NFS mounts exist but none is a data mount.
fn no_data_message(others: usize) -> Outcome {
    Outcome::not_applicable(format!(
        "no nfs data mount: {others} nfs mount(s) neither use nor ask for rdma and none is declared with --mount (see NFS001)"
    ))
}

/// Adds the mount line as evidence, and for a pod's volume what the
/// kubelet's directory says of it.
fn mount_evidence(outcome: Outcome, mount: &NfsMount) -> Outcome {
    let outcome = outcome
        .evidence(mount.evidence.0, mount.evidence.1.clone())
        .subject(mount.mount_point.clone());
    match &mount.pod_volume {
        Some(volume) => outcome.evidence(
            volume
                .data
                .as_ref()
                .map_or_else(|| volume.mount_point.clone(), |d| d.path.clone()),
            volume.describe(),
        ),
        None => outcome,
    }
}

/// The fix of a pod's volume: the kubelet mounts it with the
/// `mountOptions` of its PersistentVolume (copied from the StorageClass
/// when provisioned), so they are what to change, to the data path's
/// (`zerohop_known::storage::data_path_options`, what `zerohop plan`
/// renders). `None` for a mount that is no pod volume.
fn pod_volume_fix(mount: &NfsMount) -> Option<Remediation> {
    let volume = mount.pod_volume.as_ref()?;
    let name = volume
        .data
        .as_ref()
        .and_then(|d| d.spec_volume.as_deref())
        .unwrap_or(&volume.volume);
    let list: Vec<String> = zerohop_known::storage::data_path_options(MAX_NCONNECT)
        .iter()
        .map(|o| format!("{o:?}"))
        .collect();
    let patch = format!("{{\"spec\":{{\"mountOptions\":[{}]}}}}", list.join(","));
    Some(
        Remediation::new(
            "give the pod's persistentvolume (and its storageclass) the data-path mount options, then restart the pod so that the kubelet mounts it again",
        )
        .command(join(["kubectl", "get", "pv", name, "-o", "jsonpath={.spec.mountOptions}"]))
        .command(join(["kubectl", "patch", "pv", name, "--type", "merge", "-p", &patch])),
    )
}

/// Which data mounts a check judges.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mounts {
    All,
    RdmaOnly,
}

/// One outcome per data mount of `which` from `judge`, each with the mount
/// line as evidence; one `not_applicable` when there is no such mount.
fn per_mount(
    ctx: &Context<'_>,
    which: Mounts,
    judge: impl Fn(&NfsMount) -> Outcome,
) -> Vec<Outcome> {
    let mounts = need!(data_mounts(ctx));
    let outcomes: Vec<Outcome> = mounts
        .iter()
        .filter(|m| m.is_data())
        .filter(|m| which == Mounts::All || m.mount.is_rdma())
        .map(|m| mount_evidence(judge(&m.mount), &m.mount))
        .collect();
    if !outcomes.is_empty() {
        return outcomes;
    }
    let others = mounts.iter().filter(|m| !m.is_data()).count();
    vec![match which {
        _ if others > 0 => no_data_message(others),
        Mounts::All => none_message(ctx),
        Mounts::RdmaOnly => Outcome::not_applicable("no nfs data mount over rdma"),
    }]
}

fn transports_summary(mount: &NfsMount) -> Option<String> {
    let stats = mount.stats.as_ref()?;
    if stats.transports.is_empty() {
        return None;
    }
    let mut protocols: Vec<(String, usize)> = Vec::new();
    for transport in &stats.transports {
        match protocols.iter_mut().find(|(p, _)| *p == transport.protocol) {
            Some((_, count)) => *count += 1,
            None => protocols.push((transport.protocol.clone(), 1)),
        }
    }
    Some(
        protocols
            .iter()
            .map(|(p, n)| format!("{n} xprt: {p}"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

fn remount(mount: &NfsMount, options: &str) -> Remediation {
    if let Some(fix) = pod_volume_fix(mount) {
        return fix;
    }
    let line = [
        mount.source.as_str(),
        &mount.mount_point,
        &mount.fstype,
        &format!("{options},_netdev"),
        "0",
        "0",
    ]
    .map(fstab_field)
    .join(" ");
    Remediation::new("remount over rdma with the data-path options")
        .command("modprobe rpcrdma")
        .command(remount_with(mount, options))
        .command(format!("# persist in /etc/fstab: {line}"))
}

/// `umount MP && mount -t FS -o OPTIONS SOURCE MP`, every word quoted.
fn remount_with(mount: &NfsMount, options: &str) -> String {
    let mount_point = quote(&mount.mount_point);
    format!(
        "umount {mount_point} && {}",
        join([
            "mount",
            "-t",
            &mount.fstype,
            "-o",
            options,
            &mount.source,
            &mount.mount_point
        ])
    )
}

/// The options a remount over RDMA gives: the data path's, with the most
/// transports.
fn rdma_options() -> String {
    zerohop_known::storage::rdma_mount_options(MAX_NCONNECT).join(",")
}

declare_check! {
    /// Every data mount is mounted: those declared, else those `/etc/fstab` asks for.
    ///
    /// ## What it checks
    /// Each path given with `--mount` (the profile's `mounts`), of any file
    /// system; without `--mount` (the agent's mode), the mount point of
    /// each NFS entry of `/etc/fstab` that asks for RDMA (`proto=rdma` or
    /// `rdma`; every NFS entry with `--expect-nfs-rdma true`), unless it is
    /// `noauto` without `x-systemd.automount`, since nothing mounts those at
    /// boot. Each is looked up in the mount table (`/proc/self/mountinfo`, else
    /// `/proc/mounts`): it passes when the path is a mount point or lies
    /// below one other than `/`. It fails when `/etc/fstab` mounts the path
    /// (or a directory above it) and that mount is not in the table, and
    /// when only the root file system holds the path: a data mount that is
    /// not mounted reads through to whatever is below it, and judging that
    /// (ext4 on the boot disk) would pass a data path that does not exist.
    /// Without a mount table it is `unknown`. The NFS, NVMe device-mapper
    /// and GPUDirect Storage checks of declared mounts are `blocked` while
    /// it fails.
    ///
    /// ## Why it matters
    /// A training job pointed at an unmounted data directory reads an empty
    /// directory, or fills the root disk with checkpoints. A mount that
    /// failed at boot (an NFS server that was down, `rpcrdma` not loaded
    /// for `proto=rdma`) leaves no error anywhere but the boot log.
    ///
    /// ## How to fix
    /// `mount <path>` when `/etc/fstab` has it (`journalctl -b` shows why it
    /// failed at boot; `modprobe rpcrdma` first for NFS over RDMA);
    /// otherwise mount the data file system there and add it to
    /// `/etc/fstab`. Declare `/` if the data is meant to live on the root
    /// file system.
    ///
    /// ## Evidence
    /// The paths of `--mount`, else the NFS-over-RDMA entries of `/etc/fstab`,
    /// against `/proc/self/mountinfo` (else `/proc/mounts`). No mount table is
    /// `unknown`; no `/etc/fstab` without `--mount` leaves nothing to judge.
    ///
    /// ## Source
    /// util-linux 2.39 `fstab(5)` and `mount(8)` (`noauto`), systemd 255
    /// `systemd.mount(5)` (`x-systemd.automount`, `_netdev`), linux v6.12
    /// `fs/proc_namespace.c` (`show_mountinfo`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::fstab_rdma_mount_missing_from_node_exporter_table_fails_without_mount
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::declared_data_mounts_must_be_mounted
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NFS007/fail-fstab-mount-missing/`:
    ///
    /// ```text
    /// nfs
    ///   fail           NFS007  data-mount-not-mounted  /mnt/data: /etc/fstab mounts nfs4 srv:/data at /mnt/data, but it is not mounted: the path reads ext4 /dev/vda1 at / instead
    ///                  /etc/fstab = srv:/data /mnt/data nfs4 proto=rdma,port=20049,nconnect=16,_netdev 0 0
    ///                  /proc/self/mountinfo = 21 0 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
    ///
    /// what to fix first
    ///   1. NFS007 data-mount-not-mounted (/mnt/data): /etc/fstab mounts nfs4 srv:/data at /mnt/data, but it is not mounted: the path reads ext4 /dev/vda1 at / instead
    ///      fix: mount /mnt/data as /etc/fstab says; the boot log tells why it failed
    ///        modprobe rpcrdma   # nfs over rdma needs it before mounting
    ///        mount /mnt/data
    ///        journalctl -b | grep -i -- /mnt/data
    /// ```
    pub static DATA_MOUNT_MISSING = {
        id: "NFS007",
        name: "data-mount-not-mounted",
        group: Nfs,
        severity: Error,
        requires: [],
        run: data_mount_missing,
    };
}

fn data_mount_missing(ctx: &Context<'_>) -> Vec<Outcome> {
    let facts = &ctx.facts.mounts;
    let paths: Vec<String> = if ctx.profile.mounts.is_empty() {
        match fstab_data_mounts(ctx) {
            Ok(paths) => paths,
            Err(outcome) => return vec![*outcome],
        }
    } else {
        ctx.profile.mounts.clone()
    };
    let source = match &facts.table {
        Err(gap) => return vec![Outcome::gap(gap)],
        Ok(None) => {
            return vec![Outcome::unknown(
                "no mount table (/proc/self/mountinfo and /proc/mounts absent): cannot tell whether the data mounts are mounted",
            )];
        }
        Ok(Some(table)) => table.source,
    };
    paths
        .iter()
        .map(|path| placement_outcome(ctx, source, path).subject(path.clone()))
        .collect()
}

/// Without `--mount`, the data mounts `/etc/fstab` asks for: its NFS
/// entries over RDMA (every NFS entry when the profile expects NFS over
/// RDMA), each by its mount point. `noauto` entries that systemd does not
/// automount are left out: nothing mounts them at boot.
fn fstab_data_mounts(ctx: &Context<'_>) -> Result<Vec<String>, Box<Outcome>> {
    let entries = match &ctx.facts.mounts.fstab {
        Err(gap) => return Err(Box::new(Outcome::gap(gap))),
        Ok(None) => {
            return Err(Box::new(
                Outcome::not_applicable(
                    "no data mounts declared (--mount PATH), and no /etc/fstab to ask for one",
                )
                .evidence(FSTAB, "<missing>"),
            ));
        }
        Ok(Some(entries)) => entries,
    };
    let all_nfs = ctx.profile.nfs_rdma == Some(true);
    let mut paths: Vec<String> = Vec::new();
    for entry in entries {
        let (nfs, rdma) = (entry.is_nfs(), entry.asks_for_rdma());
        let at_boot = !entry.options.has("noauto") || entry.options.has("x-systemd.automount");
        let point = normalize(&entry.mount_point);
        if nfs && (rdma || all_nfs) && at_boot && !paths.contains(&point) {
            paths.push(point);
        }
    }
    if paths.is_empty() {
        return Err(Box::new(Outcome::not_applicable(if all_nfs {
            "no data mounts declared (--mount PATH), and /etc/fstab mounts no nfs at boot"
        } else {
            "no data mounts declared (--mount PATH), and /etc/fstab mounts no nfs over rdma at boot"
        })));
    }
    Ok(paths)
}

/// Whether `path` is on a mount of its own, as a data mount must be.
fn placement_outcome(ctx: &Context<'_>, source: &'static str, path: &str) -> Outcome {
    let Some(placement) = ctx.facts.mounts.place(path) else {
        return Outcome::unknown("mount table unknown");
    };
    match placement {
        Placement::MountPoint(entry) => {
            Outcome::pass(format!("{} {} mounted here", entry.fstype, entry.source))
                .evidence(source, entry.line.clone())
        }
        Placement::Under(entry) => Outcome::pass(format!(
            "on {} {} mounted at {}",
            entry.fstype, entry.source, entry.mount_point
        ))
        .evidence(source, entry.line.clone()),
        Placement::FstabNotMounted { fstab, holder } => {
            let rdma = fstab.asks_for_rdma();
            let mut fix = Remediation::new(format!(
                "mount {} as /etc/fstab says; the boot log tells why it failed",
                fstab.mount_point
            ));
            if rdma {
                fix = fix.command("modprobe rpcrdma   # nfs over rdma needs it before mounting");
            }
            fix = fix
                .command(join(["mount", &fstab.mount_point]))
                .command(format!(
                    "journalctl -b | grep -i -- {}",
                    quote(&fstab.mount_point)
                ));
            Outcome::fail(format!(
                "/etc/fstab mounts {} {} at {}, but it is not mounted: the path reads {} {} at {} instead",
                fstab.fstype, fstab.source, fstab.mount_point, holder.fstype, holder.source, holder.mount_point
            ))
            .evidence(FSTAB, fstab.line.clone())
            .evidence(source, holder.line.clone())
            .fix(fix)
        }
        Placement::OnRoot(root) => Outcome::fail(format!(
            "not a mount point: the path reads the root file system ({} {}), not a data mount",
            root.fstype, root.source
        ))
        .evidence(source, root.line.clone())
        .evidence(FSTAB, format!("<no entry for {path}>"))
        .fix(
            Remediation::new(
                "mount the data file system at this path and add it to /etc/fstab, or declare / if the data is meant to live on the root file system",
            )
            .command(join(["findmnt", "--target", path])),
        ),
        Placement::Unmounted => Outcome::unknown(format!(
            "no mount in {source} holds the path, not even /: a partial mount table"
        )),
    }
}

declare_check! {
    /// NFS data mounts run over RDMA.
    ///
    /// ## What it checks
    /// Every `nfs` and `nfs4` mount in `/proc/self/mountinfo` (or
    /// `/proc/mounts`, or `/proc/self/mountstats` alone): the transport in
    /// its options (`proto=rdma` or `rdma`), the `xprt:` lines of its
    /// `/proc/self/mountstats` block (the transports the RPC client really
    /// uses), and its `/etc/fstab` entry.
    ///
    /// The data mounts, the one scope of every NFS check: with `--mount`,
    /// the NFS mounts that hold a declared path; without, the NFS mounts
    /// that use RDMA (options or transports) or that `/etc/fstab` asks to
    /// (and every NFS mount when `--expect-nfs-rdma true`). Either way the
    /// volumes the kubelet mounted for pods through CSI
    /// (`/var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount`)
    /// are data mounts, as declared ones: they are what pods read; the
    /// evidence names the PersistentVolume, the pod and the CSI driver from
    /// the kubelet's `vol_data.json` beside the mount, and the fix is to the
    /// PersistentVolume's `mountOptions`. It fails when a
    /// data mount is not on RDMA as declared or expected, and when RDMA was
    /// asked for (in fstab or the options) but the transports in effect are
    /// TCP: the silent fallback. Other NFS mounts (home directories over
    /// TCP) are listed as `info`, not data mounts, and the other NFS checks
    /// leave them alone.
    ///
    /// ## Why it matters
    /// Over TCP every byte crosses the host CPU and memory: one core per
    /// few GB/s, and the GPU waits. Over RDMA the server places data
    /// straight into the client's buffers (and, with GPUDirect Storage,
    /// into GPU memory). The mount succeeds either way, so nothing else
    /// tells you.
    ///
    /// ## How to fix
    /// Load the client module and remount:
    /// `modprobe rpcrdma; mount -t nfs -o proto=rdma,port=20049,nconnect=16,rsize=1048576,wsize=1048576,hard server:/export /mnt/data`,
    /// and put the same options in `/etc/fstab` (with `_netdev`). On
    /// Kubernetes, the Network Operator's `ENABLE_NFSRDMA` loads the module.
    ///
    /// ## Evidence
    /// The NFS lines of `/proc/self/mountinfo` (else `/proc/mounts`), their
    /// `/proc/self/mountstats` blocks (`xprt:` lines) and `/etc/fstab`. With
    /// neither a mount table nor mountstats in a capture it is `unknown`, never
    /// "no nfs mounts".
    ///
    /// ## Source
    /// linux v6.12 `fs/nfs/super.c` (`nfs_show_mount_options`: `proto=`;
    /// `nfs_show_stats`: the mountstats block), `net/sunrpc/xprtrdma/transport.c`
    /// (`xprt_rdma_print_stats`: `xprt: rdma`), nfs-utils 2.6 `nfs(5)` (`rdma`
    /// as `proto=rdma`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::node_exporter_nfs_over_tcp_fails_when_declared_data_mounts
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::nfs3_over_rdma_with_16_transports_passes
    /// Real capture: crates/zerohop-doctor/tests/corpus_gaps.rs::capture_without_mount_table_does_not_claim_no_nfs
    /// Real capture: crates/zerohop-doctor/tests/kubelet_csi_mounts.rs::a_csi_nfs_volume_over_tcp_fails_like_a_declared_data_mount
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NFS001/fail-fstab-asks-rdma/`:
    ///
    /// ```text
    /// nfs
    ///   fail           NFS001  nfs-not-rdma  /mnt/data: /etc/fstab asks for rdma but the mount is over tcp: silent fallback
    ///                  /proc/self/mountinfo = 40 21 0:50 / /mnt/data rw,relatime shared:40 - nfs4 srv:/data rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,nconnect=4,port=0,timeo=600,retrans=2,sec=sys,clientaddr=10.0.9.7,local_lock=none,addr=10.0.9.1
    ///                  /etc/fstab = srv:/data /mnt/data nfs4 proto=rdma,port=20049,nconnect=4,_netdev 0 0
    ///                  /proc/self/mountstats = 4 xprt: tcp
    ///
    /// what to fix first
    ///   1. NFS001 nfs-not-rdma (/mnt/data): /etc/fstab asks for rdma but the mount is over tcp: silent fallback
    ///      fix: remount over rdma with the data-path options
    ///        modprobe rpcrdma
    ///        umount /mnt/data && mount -t nfs4 -o proto=rdma,port=20049,nconnect=16,rsize=1048576,wsize=1048576,hard srv:/data /mnt/data
    ///        # persist in /etc/fstab: srv:/data /mnt/data nfs4 proto=rdma,port=20049,nconnect=16,rsize=1048576,wsize=1048576,hard,_netdev 0 0
    /// ```
    pub static NFS_NOT_RDMA = {
        id: "NFS001",
        name: "nfs-not-rdma",
        group: Nfs,
        severity: Error,
        requires: [DATA_MOUNT_MISSING],
        run: nfs_not_rdma,
    };
}

fn nfs_not_rdma(ctx: &Context<'_>) -> Vec<Outcome> {
    let mounts = need!(data_mounts(ctx));
    if mounts.is_empty() {
        return vec![none_message(ctx)];
    }
    mounts
        .iter()
        .map(|DataMount { mount, scope }| {
            let proto = mount.proto().unwrap_or("tcp").to_owned();
            let summary = transports_summary(mount);
            let xprt_rdma = mount.stats.as_ref().map(|s| s.transports_of("rdma"));
            let has_xprts = mount
                .stats
                .as_ref()
                .is_some_and(|s| !s.transports.is_empty());
            let wanted = ctx
                .profile
                .nfs_rdma
                .unwrap_or(matches!(scope, Scope::Declared | Scope::Pod) || mount.fstab_wants_rdma());
            let mut outcome = if mount.is_rdma() && has_xprts && xprt_rdma == Some(0) {
                Outcome::fail(format!(
                    "options ask for rdma but the transports in effect are {}: silent fallback",
                    summary.clone().unwrap_or_default()
                ))
                .fix(remount(mount, &rdma_options()))
            } else if mount.is_rdma() {
                Outcome::pass(match xprt_rdma {
                    Some(n) if n > 0 => format!("nfs over rdma with {n} rdma transports"),
                    _ => "nfs over rdma".to_owned(),
                })
            } else if ctx.profile.nfs_rdma == Some(false) {
                Outcome::pass(format!("nfs over {proto} as intended"))
            } else if mount.fstab_wants_rdma() {
                Outcome::fail(format!(
                    "/etc/fstab asks for rdma but the mount is over {proto}: silent fallback"
                ))
                .fix(remount(mount, &rdma_options()))
            } else if wanted {
                let what = if *scope == Scope::Pod { "pod volume" } else { "data mount" };
                Outcome::fail(format!(
                    "{what} over {proto}, not rdma: every byte crosses the host cpu"
                ))
                .fix(remount(mount, &rdma_options()))
            } else {
                Outcome::info(format!(
                    "nfs over {proto}, not a data mount: it neither uses nor asks for rdma; declare it with --mount if it carries training data"
                ))
            };
            outcome = mount_evidence(outcome, mount);
            if let Some(fstab) = &mount.fstab {
                outcome = outcome.evidence(FSTAB, fstab.line.clone());
            }
            if let Some(summary) = summary {
                outcome = outcome.evidence(MOUNTSTATS, summary);
            }
            outcome
        })
        .collect()
}

declare_check! {
    /// NFS over RDMA mounts use port 20049.
    ///
    /// ## What it checks
    /// The `port=` option of every NFS data mount (NFS001's scope) on RDMA, as the kernel
    /// shows it in `/proc/self/mountinfo`: 20049 passes, another port warns.
    ///
    /// ## Why it matters
    /// NFS servers listen for RDMA on 20049 (RFC 8267), not on 2049. A
    /// mount given `port=2049` with `proto=rdma` either fails to connect or
    /// reaches a server-side listener configured by hand, which is easy to
    /// lose on a server rebuild.
    ///
    /// ## How to fix
    /// Remount with `port=20049` (or leave `port=` out with `proto=rdma`),
    /// and on the server make sure `rdma=y` and `rdma-port=20049` are in
    /// the `[nfsd]` section of `/etc/nfs.conf`.
    ///
    /// ## Evidence
    /// `port=` of the data mount's options (mount table, else the
    /// mountstats `opts:` line).
    ///
    /// ## Source
    /// RFC 8267 §6.2 (port 20049 for NFS over RDMA); linux v6.12
    /// `Documentation/admin-guide/nfs/nfs-rdma.rst`.
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::nfs3_over_rdma_with_16_transports_passes
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NFS002/warn-port-2049/`:
    ///
    /// ```text
    /// nfs
    ///   warn           NFS002  nfs-rdma-port  /mnt/data: nfs over rdma on port 2049, not 20049
    ///                  /proc/self/mountinfo = 40 21 0:50 / /mnt/data rw,relatime shared:40 - nfs4 srv:/data rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,nconnect=4,port=2049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.9.7,local_lock=none,addr=10.0.9.1
    ///
    /// what to fix first
    ///   1. NFS002 nfs-rdma-port (/mnt/data): nfs over rdma on port 2049, not 20049
    ///      fix: remount over rdma with the data-path options
    ///        modprobe rpcrdma
    ///        umount /mnt/data && mount -t nfs4 -o proto=rdma,port=20049,nconnect=16,rsize=1048576,wsize=1048576,hard srv:/data /mnt/data
    ///        # persist in /etc/fstab: srv:/data /mnt/data nfs4 proto=rdma,port=20049,nconnect=16,rsize=1048576,wsize=1048576,hard,_netdev 0 0
    /// ```
    pub static NFS_RDMA_PORT_CHECK = {
        id: "NFS002",
        name: "nfs-rdma-port",
        group: Nfs,
        severity: Warning,
        requires: [NFS_NOT_RDMA],
        run: nfs_rdma_port,
    };
}

fn nfs_rdma_port(ctx: &Context<'_>) -> Vec<Outcome> {
    per_mount(ctx, Mounts::RdmaOnly, |mount| {
        match mount.options.get("port") {
            None => Outcome::info("port not shown in the options: the rdma default 20049 applies"),
            Some(port) if port.parse::<u16>().ok() == Some(NFS_RDMA_PORT) => {
                Outcome::pass("nfs over rdma on port 20049")
            }
            Some(port) => Outcome::warn(format!("nfs over rdma on port {port}, not 20049"))
                .fix(remount(mount, &rdma_options())),
        }
    })
}

declare_check! {
    /// NFS over RDMA mounts have as many RDMA transports as `nconnect` asks.
    ///
    /// ## What it checks
    /// For every NFS data mount (NFS001's scope) on RDMA, the `nconnect=` option (1 when
    /// absent) against the number of `xprt: rdma` lines in the mount's
    /// `/proc/self/mountstats` block, one per transport (queue pair). Fewer
    /// transports than asked warns; `nconnect` unset is reported as `info`.
    ///
    /// ## Why it matters
    /// One RDMA transport is one queue pair, served by one completion
    /// vector on one CPU: a single mount tops out well below a 200 or 400
    /// Gb/s port. `nconnect=8`–`16` spreads the load. Transports that did
    /// not connect (a port down on a multi-rail client) silently cut the
    /// mount's bandwidth.
    ///
    /// ## How to fix
    /// Mount with `nconnect=16` (the kernel's maximum), and check the
    /// RDMA ports the missing transports would use (`rdma link`).
    ///
    /// ## Evidence
    /// `nconnect=` of the options and the count of `xprt: rdma` lines of the
    /// mount's mountstats block; without the block, the options alone.
    ///
    /// ## Source
    /// linux v6.12 `fs/nfs/client.c` (`nfs_create_rpc_client`: `nconnect`
    /// transports) and `net/sunrpc/clnt.c` (`rpc_clnt_add_xprt`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::nfs3_over_rdma_with_16_transports_passes
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::node_exporter_nfs_over_tcp_fails_when_declared_data_mounts
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NFS003/warn-transports-missing/`:
    ///
    /// ```text
    /// nfs
    ///   warn           NFS003  nfs-nconnect-transports  /mnt/data: only 2 of nconnect=4 rdma transports are up
    ///                  /proc/self/mountstats = 2 xprt: rdma lines
    ///                  /proc/self/mountinfo = 40 21 0:50 / /mnt/data rw,relatime shared:40 - nfs4 srv:/data rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=rdma,nconnect=4,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.9.7,local_lock=none,addr=10.0.9.1
    ///
    /// what to fix first
    ///   1. NFS003 nfs-nconnect-transports (/mnt/data): only 2 of nconnect=4 rdma transports are up
    ///      fix: find the rdma ports the missing transports need, then remount
    ///        rdma link show
    ///        umount /mnt/data && mount /mnt/data
    /// ```
    pub static NFS_NCONNECT = {
        id: "NFS003",
        name: "nfs-nconnect-transports",
        group: Nfs,
        severity: Warning,
        requires: [NFS_NOT_RDMA],
        run: nfs_nconnect,
    };
}

fn nfs_nconnect(ctx: &Context<'_>) -> Vec<Outcome> {
    per_mount(ctx, Mounts::RdmaOnly, |mount| {
        let nconnect = mount.options.number("nconnect");
        let asked = nconnect.unwrap_or(1);
        match &mount.stats {
            None => Outcome::unknown(format!("no {MOUNTSTATS} block for this mount: transports unknown")),
            Some(stats) if !stats.known_version() => Outcome::unknown(format!(
                "mountstats statvers={} is not a format zerohop knows (1.0, 1.1): transports not counted",
                stats.statvers.as_deref().unwrap_or("<none>")
            ))
            .evidence(MOUNTSTATS, stats.line.clone()),
            Some(stats) => {
                let up = u64::try_from(stats.transports_of("rdma")).unwrap_or(u64::MAX);
                let counted = format!("{up} xprt: rdma lines");
                if up < asked {
                    Outcome::warn(format!("only {up} of nconnect={asked} rdma transports are up"))
                        .evidence(MOUNTSTATS, counted)
                        .fix(Remediation::new("find the rdma ports the missing transports need, then remount")
                            .command("rdma link show")
                            .command(format!("umount {mp} && mount {mp}", mp = quote(&mount.mount_point))))
                } else if nconnect.is_none() {
                    Outcome::info("one rdma transport (nconnect unset): nconnect=16 spreads the load over more queue pairs")
                        .evidence(MOUNTSTATS, counted)
                } else {
                    Outcome::pass(format!("{up} rdma transports for nconnect={asked}")).evidence(MOUNTSTATS, counted)
                }
            }
        }
    })
}

declare_check! {
    /// NFS data mounts transfer at least 1 MiB per read and write.
    ///
    /// ## What it checks
    /// `rsize=` and `wsize=` of every NFS data mount (NFS001's scope: not
    /// a home directory over TCP that nothing declares), as negotiated with
    /// the server and shown in `/proc/self/mountinfo`: both at least
    /// 1 MiB (1048576) passes.
    ///
    /// ## Why it matters
    /// Each NFS READ moves at most `rsize` bytes. With the 32–64 KiB some
    /// servers or old fstab lines give, a 1 MiB application read becomes
    /// 16–32 RPCs, and RPC overhead, not the wire, caps throughput.
    ///
    /// ## How to fix
    /// Remount with `rsize=1048576,wsize=1048576`; if the values stay
    /// lower, the server caps them (Linux `nfsd`: `max_block_size`).
    ///
    /// ## Evidence
    /// `rsize=` and `wsize=` of the options in effect (what the server
    /// negotiated, as the mount table shows it).
    ///
    /// ## Source
    /// linux v6.12 `fs/nfs/super.c` (`nfs_show_mount_options` prints the
    /// negotiated `rsize`/`wsize`) and `fs/nfs/client.c`
    /// (`nfs_server_set_fsinfo`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::node_exporter_nfs_over_tcp_fails_when_declared_data_mounts
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::nfs3_over_rdma_with_16_transports_passes
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NFS004/warn-32kib/`:
    ///
    /// ```text
    /// nfs
    ///   warn           NFS004  nfs-rsize-small  /mnt/data: rsize 32 KiB and wsize 32 KiB: below 1 MiB, rpc overhead caps throughput
    ///                  /proc/self/mountinfo = 40 21 0:50 / /mnt/data rw,relatime shared:40 - nfs4 srv:/data rw,vers=4.2,rsize=32768,wsize=32768,namlen=255,hard,proto=rdma,nconnect=4,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.9.7,local_lock=none,addr=10.0.9.1
    ///
    /// what to fix first
    ///   1. NFS004 nfs-rsize-small (/mnt/data): rsize 32 KiB and wsize 32 KiB: below 1 MiB, rpc overhead caps throughput
    ///      fix: remount with 1 MiB transfers
    ///        umount /mnt/data && mount -t nfs4 -o proto=rdma,port=20049,rsize=1048576,wsize=1048576 srv:/data /mnt/data
    /// ```
    pub static NFS_IO_SIZE = {
        id: "NFS004",
        name: "nfs-rsize-small",
        group: Nfs,
        severity: Warning,
        requires: [DATA_MOUNT_MISSING],
        run: nfs_io_size,
    };
}

fn nfs_io_size(ctx: &Context<'_>) -> Vec<Outcome> {
    per_mount(ctx, Mounts::All, |mount| {
        let (rsize, wsize) = (mount.options.number("rsize"), mount.options.number("wsize"));
        match (rsize, wsize) {
            (Some(r), Some(w)) if r >= MIN_IO_SIZE && w >= MIN_IO_SIZE => {
                Outcome::pass(format!("rsize {} and wsize {}", bytes(r), bytes(w)))
            }
            (Some(r), Some(w)) => Outcome::warn(format!(
                "rsize {} and wsize {}: below 1 MiB, rpc overhead caps throughput",
                bytes(r),
                bytes(w)
            ))
            .fix({
                let options = if mount.is_rdma() {
                    "proto=rdma,port=20049,rsize=1048576,wsize=1048576"
                } else {
                    "proto=tcp,rsize=1048576,wsize=1048576"
                };
                pod_volume_fix(mount).unwrap_or_else(|| {
                    Remediation::new("remount with 1 MiB transfers")
                        .command(remount_with(mount, options))
                })
            }),
            _ => Outcome::unknown("rsize or wsize not shown in the mount options"),
        }
    })
}

declare_check! {
    /// The NFS RDMA client module is loaded when RDMA mounts are wanted.
    ///
    /// ## What it checks
    /// When an NFS mount uses RDMA, `/etc/fstab` asks for one, or the
    /// profile wants NFS over RDMA: `rpcrdma` (older kernels: `xprtrdma`)
    /// in `/proc/modules` or `/sys/module`. The server-side `svcrdma` is
    /// shown when present.
    ///
    /// ## Why it matters
    /// Without `rpcrdma`, `mount -o proto=rdma` fails with "protocol not
    /// supported", and automounters or scripts that retry without the
    /// option end up on TCP.
    ///
    /// ## How to fix
    /// `modprobe rpcrdma`, and load it at boot:
    /// `echo rpcrdma > /etc/modules-load.d/rpcrdma.conf`. With MLNX_OFED or
    /// DOCA-OFED, the module comes from the OFED packages (`mlnx-nfsrdma`);
    /// on Kubernetes, set `ENABLE_NFSRDMA=true` in the Network Operator's
    /// driver.
    ///
    /// ## Evidence
    /// `/proc/modules` and `/sys/module` (`rpcrdma`, `xprtrdma`), when an NFS
    /// mount uses or `/etc/fstab` asks for RDMA. Without a module list it is
    /// `unknown`.
    ///
    /// ## Source
    /// linux v6.12 `net/sunrpc/xprtrdma/module.c` (the `rpcrdma` module,
    /// alias `xprtrdma`, registers the RDMA transport) and
    /// `Documentation/admin-guide/nfs/nfs-rdma.rst`.
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::nfs_over_rdma_client_has_rpcrdma
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::nfs3_over_rdma_with_16_transports_passes
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NFS005/fail-fstab-rdma-module-missing/`:
    ///
    /// ```text
    /// nfs
    ///   fail           NFS005  rpcrdma-missing  rpcrdma not loaded: nfs mounts over rdma fail or fall back to tcp
    ///                  /sys/module/rpcrdma = <missing>
    ///                  /etc/fstab = srv:/data /mnt/data nfs rdma,port=20049,_netdev 0 0
    ///
    /// what to fix first
    ///   1. NFS005 rpcrdma-missing: rpcrdma not loaded: nfs mounts over rdma fail or fall back to tcp
    ///      fix: load the nfs rdma client module now and at boot
    ///        modprobe rpcrdma
    ///        echo rpcrdma > /etc/modules-load.d/rpcrdma.conf
    /// ```
    pub static RPCRDMA_MISSING = {
        id: "NFS005",
        name: "rpcrdma-missing",
        group: Nfs,
        severity: Error,
        // rpcrdma needs ib_core and rdma_cm: a broken RDMA module chain is
        // the root cause, reported once.
        requires: [crate::checks::rdma::MODULE_CHAIN],
        run: rpcrdma_missing,
    };
}

fn rpcrdma_missing(ctx: &Context<'_>) -> Vec<Outcome> {
    let facts = &ctx.facts.mounts;
    let nfs = facts.nfs_mounts();
    let active = nfs.iter().find(|m| m.is_rdma());
    let fstab_wants = match &facts.fstab {
        Ok(Some(entries)) => entries.iter().find(|e| e.is_nfs() && e.asks_for_rdma()),
        _ => None,
    };
    let wanted = ctx.profile.nfs_rdma == Some(true) || active.is_some() || fstab_wants.is_some();
    if !wanted {
        return vec![Outcome::not_applicable(
            "no nfs mount uses or asks for rdma",
        )];
    }
    let modules = need!(require(&ctx.facts.modules, || Outcome::unknown(
        "/proc/modules and /sys/module are absent"
    )));
    let loaded = ["rpcrdma", "xprtrdma"]
        .into_iter()
        .find(|name| modules.present(name));
    let mut outcome = match (loaded, active) {
        (Some(name), _) => Outcome::pass(format!("{name} loaded"))
            .evidence(format!("/sys/module/{name}"), "present"),
        (None, Some(mount)) => Outcome::info(format!(
            "rpcrdma not listed although {} is mounted over rdma: the module list is partial",
            mount.mount_point
        ))
        .evidence("/sys/module/rpcrdma", "<missing>"),
        (None, None) => {
            Outcome::fail("rpcrdma not loaded: nfs mounts over rdma fail or fall back to tcp")
                .evidence("/sys/module/rpcrdma", "<missing>")
                .fix(
                    Remediation::new("load the nfs rdma client module now and at boot")
                        .command("modprobe rpcrdma")
                        .command("echo rpcrdma > /etc/modules-load.d/rpcrdma.conf"),
                )
        }
    };
    if modules.present("svcrdma") {
        outcome = outcome.evidence("/sys/module/svcrdma", "present (nfs server over rdma)");
    }
    if let Some(entry) = fstab_wants {
        outcome = outcome.evidence(FSTAB, entry.line.clone());
    }
    vec![outcome]
}

declare_check! {
    /// NFS data mounts are `hard` mounts.
    ///
    /// ## What it checks
    /// The `soft` and `softerr` options of every NFS data mount (NFS001's scope) in
    /// `/proc/self/mountinfo`; `hard` (the default) passes.
    ///
    /// ## Why it matters
    /// A soft mount returns EIO when the server is slow for `timeo` ×
    /// `retrans`. During a server failover or a congested fabric, training
    /// jobs then read errors (or, for writes, lose checkpoint data) instead
    /// of waiting.
    ///
    /// ## How to fix
    /// Remount with `hard` (the default when neither is given). Make jobs
    /// interruptible with `timeo=600,retrans=2` rather than `soft`.
    ///
    /// ## Evidence
    /// `soft`, `softerr` or `hard` in the data mount's options.
    ///
    /// ## Source
    /// nfs-utils 2.6 `nfs(5)` (`soft`: a major timeout returns an error to the
    /// application); linux v6.12 `fs/nfs/super.c` (`nfs_show_mount_options`
    /// prints `soft`/`softerr`/`hard`).
    /// Real capture: crates/zerohop-doctor/tests/corpus_storage.rs::nfs3_over_rdma_with_16_transports_passes
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/NFS006/warn-soft/`:
    ///
    /// ```text
    /// nfs
    ///   warn           NFS006  nfs-soft-mount  /mnt/data: soft mount: a slow server turns into i/o errors in training jobs
    ///                  /proc/self/mountinfo = 40 21 0:50 / /mnt/data rw,relatime shared:40 - nfs4 srv:/data rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,soft,proto=rdma,nconnect=4,port=20049,timeo=600,retrans=2,sec=sys,clientaddr=10.0.9.7,local_lock=none,addr=10.0.9.1
    ///
    /// what to fix first
    ///   1. NFS006 nfs-soft-mount (/mnt/data): soft mount: a slow server turns into i/o errors in training jobs
    ///      fix: remount hard
    ///        umount /mnt/data && mount -t nfs4 -o hard,timeo=600,retrans=2 srv:/data /mnt/data
    /// ```
    pub static NFS_SOFT = {
        id: "NFS006",
        name: "nfs-soft-mount",
        group: Nfs,
        severity: Warning,
        requires: [DATA_MOUNT_MISSING],
        run: nfs_soft,
    };
}

fn nfs_soft(ctx: &Context<'_>) -> Vec<Outcome> {
    per_mount(ctx, Mounts::All, |mount| {
        let soft = ["soft", "softerr"]
            .into_iter()
            .find(|flag| mount.options.has(flag));
        match soft {
            Some(flag) => Outcome::warn(format!(
                "{flag} mount: a slow server turns into i/o errors in training jobs"
            ))
            .fix(pod_volume_fix(mount).unwrap_or_else(|| {
                Remediation::new("remount hard")
                    .command(remount_with(mount, "hard,timeo=600,retrans=2"))
            })),
            None if mount.options.has("hard") => Outcome::pass("hard mount"),
            None => Outcome::pass("hard mount (the default)"),
        }
    })
}
