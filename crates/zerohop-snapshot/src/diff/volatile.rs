//! What changes on a healthy host from one minute to the next, and so is
//! left out of a diff unless `--all` asks for it: counters, free-memory
//! figures, uptimes, the kernel log, and the process that read `/proc/self`.

/// Directory names whose files are all counters.
const COUNTER_DIRS: &[&str] = &["counters", "hw_counters", "statistics"];

/// Files whose whole content is counters or free amounts.
const VOLATILE_FILES: &[&str] = &[
    "/proc/meminfo",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/stat",
    "/proc/vmstat",
    "/proc/interrupts",
    "/proc/softirqs",
    "/proc/self/mountstats",
    "/proc/self/status",
    "/proc/driver/nvidia-fs/stats",
    // The kernel log's window: new records every minute, and the findings
    // they lead to are compared already.
    zerohop_host::facts::kernel_log::CAPTURE,
];

/// Directories whose files are all counters: the parameters of the
/// free-page reporting behind virtio-balloon count pages as they are
/// reported.
const VOLATILE_DIRS: &[&str] = &["/proc/net/rpc/", "/sys/module/page_reporting/parameters/"];

/// File names that hold free or in-use amounts wherever they are.
const VOLATILE_NAMES: &[&str] = &[
    "free_hugepages",
    "surplus_hugepages",
    "resv_hugepages",
    "meminfo",
    "numastat",
    "vmstat",
    "refcnt",
];

/// Whether the file at host path `path` (with `/proc/<pid>` written as
/// `/proc/self`) holds volatile data.
pub fn is_volatile_path(path: &str) -> bool {
    if VOLATILE_FILES.contains(&path) || VOLATILE_DIRS.iter().any(|dir| path.starts_with(dir)) {
        return true;
    }
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or_default();
    VOLATILE_NAMES.contains(&name) || parts.any(|dir| COUNTER_DIRS.contains(&dir))
}

/// Whether a `/proc/meminfo` field is a capacity rather than a level: only
/// those are compared by default.
pub fn is_stable_meminfo_field(field: &str) -> bool {
    field.ends_with("Total") || field == "Hugepagesize" || field == "Hugetlb"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_levels_are_volatile_capacities_are_not() {
        for path in [
            "/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
            "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent",
            "/sys/class/net/eth0/statistics/rx_bytes",
            "/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages",
            "/proc/meminfo",
            "/proc/self/mountstats",
            "/proc/net/rpc/nfs",
            "/sys/module/page_reporting/parameters/walked",
            "/var/log/zerohop/kmsg",
        ] {
            assert!(is_volatile_path(path), "{path}");
        }
        for path in [
            "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
            "/sys/class/net/eth0/mtu",
            "/proc/cmdline",
            "/proc/self/mountinfo",
        ] {
            assert!(!is_volatile_path(path), "{path}");
        }
        assert!(is_stable_meminfo_field("MemTotal"));
        assert!(!is_stable_meminfo_field("MemFree"));
    }
}
