//! The typed model of a host: everything the doctor's checks judge, read
//! once through a [`HostRoot`].
//!
//! Each fact is a [`Fact`]: `Ok(Some(value))` when read and understood,
//! `Ok(None)` when the host does not have it (the file is absent, which on
//! Linux usually means the feature is not there), and `Err(Gap)` when it is
//! there but could not be read or understood. Checks turn a gap into an
//! `unknown` finding that quotes the path and the reason.

pub mod gds;
pub mod kernel;
pub mod kernel_log;
pub mod memory;
pub mod modules;
pub mod mounts;
pub mod net;
pub mod numa;
pub mod nvidia;
pub mod nvme;
pub mod pci;
pub mod pod;
pub mod rdma;

use std::fmt;
use std::time::Duration;

use crate::root::{HostRoot, IoKind, ReadError};

pub use gds::{CufileJson, GdsFacts, LocalAddress, NetDev};
pub use kernel::{CpuVendor, IoUring, Isolation, KernelFacts, KernelRelease, Memlock};
pub use kernel_log::KernelLog;
pub use memory::{HugepagePool, MemoryFacts};
pub use modules::{Module, Modules};
pub use mounts::{CsiVolumeData, MountFacts, MountTable, NfsMount, Placement, PodVolume};
pub use net::{NetDevice, NetFacts};
pub use numa::NumaNode;
pub use nvidia::NvidiaFacts;
pub use nvme::{BlockDevice, DmDevice, NvmeController, NvmeFacts, NvmePath, NvmeSubsystem};
pub use pci::{PciDevice, PciFacts, PciLink, Sriov};
pub use pod::PodFacts;
pub use rdma::{PortCounters, RdmaDevice, RdmaFacts, RdmaPort};

/// A fact that is present, absent, or present but unusable.
pub type Fact<T> = Result<Option<T>, Gap>;

/// Why a fact could not be established: the path, what kind of failure
/// it was (for code that acts on it) and the reason (for people).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Gap {
    /// The host path that was read.
    pub path: String,
    /// What kind of failure it was; in JSON, `kind` beside the path (and
    /// `io`, the operating system's kind, for [`GapKind::Io`]).
    #[serde(flatten)]
    pub kind: GapKind,
    /// What went wrong, as a lowercase fragment.
    pub reason: String,
}

/// What kind of failure a [`Gap`] is. Code decides on this, never on the
/// wording of [`Gap::reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "io")]
pub enum GapKind {
    /// Nothing to read where something must be (no kernel log anywhere).
    Missing,
    /// The file is empty where a value is expected.
    Empty,
    /// It was read but not understood.
    Malformed,
    /// The file is larger than the read's cap, or the directory has more
    /// entries than a listing returns.
    TooLarge,
    /// The file holds bytes that are not text.
    NotText,
    /// The path names something other than a regular file (a FIFO, a
    /// device, a directory), which is not read.
    NotRegular,
    /// Symlinks on the way loop.
    SymlinkLoop,
    /// The read did not finish within its deadline.
    TimedOut,
    /// The read was not attempted: too many earlier reads are stuck.
    GaveUp,
    /// A snapshot does not hold the path.
    NotRecorded,
    /// A snapshot holds the path without its content.
    Withheld,
    /// The operating system refused the read, for the reason given.
    Io(IoKind),
}

impl GapKind {
    /// The kind of gap `err` leaves.
    pub fn of(err: &ReadError) -> GapKind {
        match err {
            ReadError::TooLarge { .. } | ReadError::TooManyEntries { .. } => GapKind::TooLarge,
            ReadError::NotText { .. } => GapKind::NotText,
            ReadError::NotAFile { .. } => GapKind::NotRegular,
            ReadError::Timeout { .. } => GapKind::TimedOut,
            ReadError::GaveUp { .. } => GapKind::GaveUp,
            ReadError::SymlinkLoop { .. } => GapKind::SymlinkLoop,
            ReadError::NotRecorded { .. } => GapKind::NotRecorded,
            ReadError::Withheld { .. } => GapKind::Withheld,
            ReadError::Io { kind, .. } => GapKind::Io(*kind),
        }
    }
}

impl Gap {
    /// A gap for a value at `path` that could not be understood.
    pub fn malformed(path: &str, reason: impl fmt::Display) -> Gap {
        Gap::new(path, GapKind::Malformed, reason)
    }

    /// A gap for an empty file at `path` where a value is expected.
    pub fn empty(path: &str) -> Gap {
        Gap::new(path, GapKind::Empty, "file is empty")
    }

    /// A gap of `kind` at `path`, for `reason`.
    pub fn new(path: &str, kind: GapKind, reason: impl fmt::Display) -> Gap {
        Gap {
            path: path.to_owned(),
            kind,
            reason: reason.to_string(),
        }
    }
}

impl From<ReadError> for Gap {
    fn from(err: ReadError) -> Gap {
        Gap {
            path: err.path().to_owned(),
            kind: GapKind::of(&err),
            reason: err.to_string(),
        }
    }
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

/// Everything known about one host. It serialises to JSON as the fields
/// below; a [`Fact`] as `{"Ok": value}` (`null` when absent) or
/// `{"Err": gap}`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Facts {
    /// The root the facts were read from, for display.
    pub root: String,
    /// Whether the facts describe the machine zerohop runs on.
    pub live: bool,
    /// Boot parameters, CPU vendor, CPU isolation, io_uring, memlock.
    pub kernel: KernelFacts,
    /// Meminfo, hugepage pools, transparent hugepages.
    pub memory: MemoryFacts,
    /// NUMA nodes with their CPUs and hugepage pools.
    pub numa: Fact<Vec<NumaNode>>,
    /// PCI functions and IOMMU groups.
    pub pci: PciFacts,
    /// Kernel modules, loaded and built in.
    pub modules: Fact<Modules>,
    /// Mount table, NFS transports (mountstats) and `/etc/fstab`.
    pub mounts: MountFacts,
    /// NVMe subsystems, controllers, ANA paths, device-mapper devices.
    pub nvme: NvmeFacts,
    /// `cufile.json`, `nvidia-fs`, local addresses for GPUDirect Storage.
    pub gds: GdsFacts,
    /// Live probe results; filled only by [`crate::probe::run`] on request,
    /// so that collecting facts stays read-only.
    pub probes: crate::probe::ProbeState,
    /// The NVIDIA driver's procfs files and the kernel release.
    pub nvidia: NvidiaFacts,
    /// RDMA devices, ports, GIDs, ABI files and device nodes.
    pub rdma: RdmaFacts,
    /// Network interfaces.
    pub net: NetFacts,
    /// The kernel log's records of the window (see [`kernel_log`]).
    pub kernel_log: Result<KernelLog, Gap>,
    /// What the reading process sees of its own container (see [`pod`]).
    pub pod: PodFacts,
}

/// Choices that change what is collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectOptions {
    /// How far back the kernel log is read ([`kernel_log::DEFAULT_WINDOW`]
    /// unless set).
    pub log_window: Duration,
}

impl Default for CollectOptions {
    fn default() -> CollectOptions {
        CollectOptions {
            log_window: kernel_log::DEFAULT_WINDOW,
        }
    }
}

impl Facts {
    /// Reads every fact from `root`. Never fails: what cannot be read
    /// becomes a [`Gap`] in the fact that needed it, a read that does not
    /// answer within the root's deadline included.
    pub fn collect(root: &HostRoot) -> Facts {
        Facts::collect_with(root, CollectOptions::default())
    }

    /// [`Facts::collect`] with the choices of `options`.
    pub fn collect_with(root: &HostRoot, options: CollectOptions) -> Facts {
        // One guarded run for the whole collection: its reads need no
        // hand-over each, and a stuck one costs a deadline and a rerun.
        root.guarded(move |root| Facts::gather(root, options))
    }

    fn gather(root: &HostRoot, options: CollectOptions) -> Facts {
        Facts {
            root: root.display(),
            live: root.process().is_live(),
            kernel: KernelFacts::collect(root),
            memory: MemoryFacts::collect(root),
            numa: numa::collect(root),
            pci: PciFacts::collect(root),
            modules: Modules::collect(root),
            mounts: MountFacts::collect(root),
            nvme: NvmeFacts::collect(root),
            gds: GdsFacts::collect(root),
            probes: crate::probe::ProbeState::NotRequested,
            nvidia: NvidiaFacts::collect(root),
            rdma: RdmaFacts::collect(root),
            net: NetFacts::collect(root),
            kernel_log: KernelLog::collect(root, options.log_window),
            pod: PodFacts::collect(root),
        }
    }

    /// The NUMA nodes, or none when unknown.
    pub fn numa_nodes(&self) -> &[NumaNode] {
        match &self.numa {
            Ok(Some(nodes)) => nodes,
            _ => &[],
        }
    }
}

/// Reads a trimmed one-line value and parses it with `parse`, mapping a
/// parse failure to a [`Gap`] with `what` in its reason.
pub(crate) fn read_parsed<T, E: fmt::Display>(
    root: &HostRoot,
    path: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Fact<T> {
    match root.read_value(path)? {
        None => Ok(None),
        Some(text) if text.is_empty() => Err(Gap::empty(path)),
        Some(text) => parse(&text)
            .map(Some)
            .map_err(|err| Gap::malformed(path, format!("cannot parse `{}`: {err}", clip(&text)))),
    }
}

/// Maps `read` over `items` on up to four threads, keeping the order.
///
/// Collecting a device is a dozen small reads and hosts have thousands of
/// PCI functions, RDMA devices and netdevs: the reads are spread over the
/// cores. Each read still goes through the same bounded [`HostRoot`].
pub(crate) fn parallel_map<T: Sync, R: Send>(items: &[T], read: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4);
    if threads == 1 || items.len() < 64 {
        return items.iter().map(read).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let read = &read;
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(read).collect::<Vec<R>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Shortens a value for an error message.
pub(crate) fn clip(text: &str) -> String {
    const MAX: usize = 60;
    match text.char_indices().nth(MAX) {
        Some((index, _)) => format!("{}…", &text[..index]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn each_gap_has_the_kind_of_its_failure() {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("sys");
        fs::create_dir_all(&sys).unwrap();
        fs::write(sys.join("empty"), "").unwrap();
        fs::write(sys.join("word"), "fast\n").unwrap();
        fs::write(sys.join("binary"), [0u8, 1, 2]).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            sys.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let root = HostRoot::at(dir.path()).unwrap();
        let number = |path: &str| read_parsed(&root, path, str::parse::<u32>);
        let kind = |fact: Fact<u32>| fact.map(|_| ()).unwrap_err().kind;
        assert_eq!(number("/sys/absent"), Ok(None));
        assert_eq!(kind(number("/sys/empty")), GapKind::Empty);
        assert_eq!(kind(number("/sys/word")), GapKind::Malformed);
        assert_eq!(kind(number("/sys/binary")), GapKind::NotText);
        assert_eq!(kind(number("/sys/fifo")), GapKind::NotRegular);
        assert_eq!(kind(number("/sys")), GapKind::NotRegular);
    }

    #[test]
    fn a_gap_kind_serialises_with_the_io_kind_beside_it() {
        let denied = Gap::from(ReadError::Io {
            path: "/dev/kmsg".to_owned(),
            kind: IoKind::PermissionDenied,
            message: "permission denied".to_owned(),
        });
        let json = serde_json::to_value(&denied).unwrap();
        assert_eq!(json["kind"], "io");
        assert_eq!(json["io"], "permission-denied");
        assert_eq!(json["reason"], "cannot read /dev/kmsg: permission denied");
        let empty = serde_json::to_value(Gap::empty("/sys/x")).unwrap();
        assert_eq!(empty["kind"], "empty");
        assert_eq!(empty.get("io"), None);
    }
}
