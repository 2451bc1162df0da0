//! Decisions taken before the workers start: where the buffers go, whether
//! the page cache is dropped, whether io_uring may register the buffers.

use super::fallback;
use super::uring;
use crate::config::{CachePolicy, NumaPolicy, ReadConfig};
use crate::env::Environment;
use crate::report::Fallback;
use crate::sys;
use crate::target::Target;

/// The NUMA node to place the buffers on, if any.
pub(super) fn numa_node(
    cfg: &ReadConfig,
    env: &Environment,
    targets: &[Target],
    fallbacks: &mut Vec<Fallback>,
) -> Option<u32> {
    match cfg.numa {
        NumaPolicy::Off => None,
        NumaPolicy::Node(node) if env.numa_nodes.is_empty() || env.numa_nodes.contains(&node) => {
            Some(node)
        }
        NumaPolicy::Node(node) => {
            fallbacks.push(fallback(
                "numa_placement",
                format!(
                    "node {node} is not online (online: {})",
                    env.numa_nodes
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            None
        }
        NumaPolicy::Device => {
            let node = targets[0].device.numa_node;
            if node.is_none() {
                fallbacks.push(fallback(
                    "numa_placement",
                    "the device reports no NUMA node (numa_node is -1 or absent in sysfs)",
                ));
            }
            node
        }
    }
}

/// Drops the targets' clean cached pages before a buffered run that asked
/// for a cold cache.
pub(super) fn drop_caches(cfg: &ReadConfig, targets: &[Target], fallbacks: &mut Vec<Fallback>) {
    if cfg.direct || cfg.cache != CachePolicy::Drop {
        return;
    }
    for t in targets {
        if let Err(err) = sys::drop_cached_pages(&t.file) {
            fallbacks.push(fallback(
                "drop_cache",
                format!(
                    "{}: posix_fadvise(DONTNEED) failed: {err}",
                    t.path.display()
                ),
            ));
        }
    }
}

/// Whether the io_uring workers register their buffers: fixed buffers are
/// charged to `RLIMIT_MEMLOCK` for all workers together.
pub(super) fn fixed_buffers(
    cfg: &ReadConfig,
    uring: bool,
    env: &Environment,
    fallbacks: &mut Vec<Fallback>,
) -> bool {
    if !(cfg.fixed_buffers && uring) {
        return false;
    }
    let needed = cfg.block_size * u64::from(cfg.queue_depth) * u64::from(cfg.workers);
    match uring::fixed_buffer_budget(needed, env.memlock) {
        Ok(()) => true,
        Err(reason) => {
            fallbacks.push(fallback("fixed_buffers", reason));
            false
        }
    }
}
