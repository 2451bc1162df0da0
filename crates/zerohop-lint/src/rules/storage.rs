//! Storage: StorageClass and PersistentVolume mount options, `cufile.json`.

use zerohop_core::Remediation;
use zerohop_k8s::yaml::{Node, PathStep};

use crate::model::Workspace;
use crate::registry::declare_rule;
use crate::sink::Sink;

declare_rule! {
    /// An XFS volume mounted with `nobarrier`, which Linux 4.19 removed.
    ///
    /// ## What it checks
    /// StorageClasses (`parameters.fsType`, `csi.storage.k8s.io/fstype`) and
    /// PersistentVolumes (`spec.csi.fsType`) of type `xfs` whose
    /// `mountOptions` contain `nobarrier` or `barrier`.
    ///
    /// ## Why it matters
    /// XFS dropped the barrier options in Linux 4.19: the mount fails with
    /// "unknown parameter" and every pod using the volume stays in
    /// ContainerCreating.
    ///
    /// ## How to fix
    /// Remove the option; write barriers are cheap on devices with a
    /// non-volatile or no write cache.
    pub(crate) static XFS_NOBARRIER = "ZL080", "xfs-nobarrier", Error, xfs_nobarrier;
}

fn xfs_nobarrier(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for object in &workspace.objects {
        let (fs_type, options_path): (Option<&str>, &[PathStep<'_>]) =
            match (object.group(), object.kind) {
                ("storage.k8s.io", "StorageClass") => {
                    let parameters = object.get(&[PathStep::Key("parameters")]);
                    let fs_type = ["fsType", "csi.storage.k8s.io/fstype", "fstype"]
                        .iter()
                        .find_map(|key| parameters.and_then(|p| p.get(key)).and_then(Node::as_str));
                    (fs_type, &[PathStep::Key("mountOptions")])
                }
                ("", "PersistentVolume") => (
                    object.str_at(&[
                        PathStep::Key("spec"),
                        PathStep::Key("csi"),
                        PathStep::Key("fsType"),
                    ]),
                    &[PathStep::Key("spec"), PathStep::Key("mountOptions")],
                ),
                _ => continue,
            };
        if !fs_type.is_some_and(|t| t.eq_ignore_ascii_case("xfs")) {
            continue;
        }
        let Some(options) = object.get(options_path) else {
            continue;
        };
        for (index, option) in options.items().iter().enumerate() {
            let Some(text) = option.as_str() else {
                continue;
            };
            let bad = text
                .split(',')
                .map(str::trim)
                .find(|o| matches!(*o, "nobarrier" | "barrier" | "barrier=0" | "barrier=1"));
            if let Some(bad) = bad {
                let mut path = options_path.to_vec();
                path.push(PathStep::Index(index));
                sink.report(
                    object,
                    &path,
                    format!("xfs rejects `{bad}` since linux 4.19; the mount fails"),
                    Remediation::new(format!("remove `{bad}` from mountOptions")),
                );
            }
        }
    }
}

/// The keys of `cufile.json` sections whose full key set is known (GPUDirect
/// Storage default `/etc/cufile.json` and configuration guide). Sections
/// not listed here (`fs.*`, `block`) are not checked below their name.
const CUFILE_SECTIONS: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "logging",
            "profile",
            "execution",
            "properties",
            "fs",
            "denylist",
            "blacklist",
            "miscellaneous",
            "block",
        ],
    ),
    ("logging", &["dir", "level", "type"]),
    ("profile", &["nvtx", "cufile_stats", "io_batchsize"]),
    (
        "execution",
        &[
            "max_io_queue_depth",
            "max_io_threads",
            "parallel_io",
            "min_io_threshold_size_kb",
            "max_request_parallelism",
        ],
    ),
    (
        "properties",
        &[
            "max_direct_io_size_kb",
            "max_device_cache_size_kb",
            "per_buffer_cache_size_kb",
            "max_device_pinned_mem_size_kb",
            "use_poll_mode",
            "poll_mode_max_size_kb",
            "allow_compat_mode",
            "force_compat_mode",
            "gds_rdma_write_support",
            "io_batchsize",
            "io_priority",
            "rdma_dev_addr_list",
            "rdma_load_balancing_policy",
            "rdma_dynamic_routing",
            "rdma_dynamic_routing_order",
            "rdma_peer_affinity_policy",
            "rdma_access_mask",
            "rdma_dc_key",
            "rdma_peer_type",
            "posix_pool_slab_size_kb",
            "posix_pool_slab_count",
            "use_pci_p2pdma",
            "prefer_iouring",
            "skip_topology_detection",
            "use_poll_mode_max_size_kb",
        ],
    ),
    ("denylist", &["drivers", "devices", "mounts", "filesystems"]),
    (
        "blacklist",
        &["drivers", "devices", "mounts", "filesystems"],
    ),
    ("miscellaneous", &["api_check_aggressive"]),
];

declare_rule! {
    /// A `cufile.json` key that cuFile does not know.
    ///
    /// ## What it checks
    /// When a file named `cufile.json` is linted: the keys at the top level
    /// and in `logging`, `profile`, `execution`, `properties`, `denylist`
    /// and `miscellaneous`, against the keys of GPUDirect Storage's
    /// configuration. `//` comments are allowed, as cuFile allows them.
    ///
    /// ## Why it matters
    /// cuFile ignores keys it does not know: a misspelled
    /// `allow_compat_mode` or `rdma_dev_addr_list` leaves the default in
    /// place, so GDS silently runs in compatibility mode or without its RDMA
    /// addresses.
    ///
    /// ## How to fix
    /// Use the key cuFile documents (the finding suggests the closest), or
    /// remove it.
    pub(crate) static UNKNOWN_CUFILE_KEY = "ZL081", "unknown-cufile-key", Warning, unknown_cufile_key;
}

fn unknown_cufile_key(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for (file, root) in &workspace.cufiles {
        for (section, known) in CUFILE_SECTIONS {
            let node = if section.is_empty() {
                Some(*root)
            } else {
                root.get(section)
            };
            for entry in node.map(Node::entries).unwrap_or_default() {
                if known.contains(&entry.key.as_str()) {
                    continue;
                }
                let suggestion = zerohop_k8s::schema::closest(&entry.key, known.iter().copied());
                let subject = if section.is_empty() {
                    entry.key.clone()
                } else {
                    format!("{section}.{}", entry.key)
                };
                let place = if section.is_empty() {
                    "at the top level".to_owned()
                } else {
                    format!("in `{section}`")
                };
                sink.report_in_file(
                    file,
                    None,
                    entry.key_span,
                    subject,
                    format!("cufile does not know the key `{}` {place}", entry.key),
                    match suggestion {
                        Some(name) => Remediation::new(format!("rename it to `{name}`")),
                        None => Remediation::new("remove the key; cufile ignores it"),
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_unique() {
        let mut names: Vec<&str> = CUFILE_SECTIONS.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CUFILE_SECTIONS.len());
    }
}
