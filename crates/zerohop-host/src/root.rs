//! [`HostRoot`]: the one way zerohop reads a host.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::kmsg_device::{KMSG, KmsgRead};
use crate::memory::MemoryTree;
use crate::process::{Environment, Process};
use crate::reader::{self, Remote};
use crate::record::Recorder;
use crate::source::{Files, Source};
use crate::tree::{Tree, open_tree};
use crate::watchdog::{Lane, Watchdog};

pub use crate::read_error::{FileKind, IoKind, ReadError, RootError};
pub use crate::tree::{MAX_DIR_ENTRIES, Tail};

/// Where a kernel's boot is named: the same text for every process of one
/// boot, in a container as on its host (`random.c`'s `boot_id` sysctl).
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// The most bytes read from one file unless a caller asks for more. Sysfs
/// attributes are one page; the largest procfs files the doctor reads
/// (`/proc/cpuinfo`, `/proc/self/mountinfo`) stay well below this on
/// hosts with hundreds of CPUs and mounts.
pub const DEFAULT_READ_CAP: usize = 4 << 20;

// A recording keeps the kernel-log window as one file, and a file holds at
// most what one read returns (a snapshot's cap per file).
const _: () = assert!(crate::kmsg_device::MAX_BYTES <= DEFAULT_READ_CAP);

/// How long one read (an open and read, a listing, a link lookup) may take
/// before it is abandoned, on the live host and in a directory alike: a
/// host mounted at `/host` is a live host seen through a directory, and a
/// capture can sit on a network file system.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// A host's file system as zerohop sees it: read-only, bounded in size and
/// time, and with every path interpreted relative to the host's `/`.
///
/// Only regular files are read (see [`ReadError::NotAFile`]), and every
/// read has a deadline ([`READ_TIMEOUT`]): a read that does not answer is
/// abandoned and reported as [`ReadError::Timeout`]. Every root carries
/// the [`Process`] that reads it, which the facts that depend on the
/// reader (its memlock limits, its environment, the kernel-log device,
/// the probes) ask.
///
/// A root is meant for one pass. What it learns about a directory tree on
/// the way to each path (the directories resolved, what each component
/// is) is kept for its whole life and shared by its clones, so that a pass
/// does not resolve the same switch and bridge directories again for
/// every device; a host changes between passes, so a process that never
/// exits reads each pass through [`HostRoot::fresh`]. The paths whose
/// reads are still blocked are remembered across passes, and only while
/// they are blocked.
#[derive(Clone)]
pub struct HostRoot {
    tree: Arc<Source>,
    watchdog: Arc<Watchdog>,
    process: Arc<Process>,
    /// The lane this handle reads in, inside [`HostRoot::guarded`].
    lane: Option<Arc<Lane>>,
}

impl HostRoot {
    /// The live host this process runs on, read by this process as
    /// [`Process::current`] describes it.
    pub fn live() -> HostRoot {
        HostRoot::live_as(Process::current())
    }

    /// The live host, read by `process` (see [`Process::live`]).
    pub fn live_as(process: Process) -> HostRoot {
        let files = if reader::enabled() {
            Files::Elsewhere(Remote::live())
        } else {
            Files::Here(Tree::live())
        };
        HostRoot::new(Source::files(files), process)
    }

    fn new(tree: Source, process: Process) -> HostRoot {
        HostRoot {
            tree: Arc::new(tree),
            watchdog: Arc::new(Watchdog::new(READ_TIMEOUT)),
            process: Arc::new(process),
            lane: None,
        }
    }

    /// A host tree under `dir`: a fixture, an unpacked snapshot, or a host
    /// mounted at `/host`, read by a process beside it
    /// ([`Environment::Directory`]). A `dir` that is `/` itself is the live
    /// host, as [`HostRoot::live`]. Any directory is accepted;
    /// [`HostRoot::at_host`] also checks that it holds a host.
    pub fn at(dir: impl AsRef<Path>) -> Result<HostRoot, RootError> {
        let dir = dir.as_ref().to_path_buf();
        // The directory itself can sit on a hung mount.
        let watchdog = Arc::new(Watchdog::new(READ_TIMEOUT));
        let files = if reader::enabled() {
            Files::Elsewhere(Remote::open(&dir, &watchdog)?)
        } else {
            let shown = dir.display().to_string();
            let target = dir.clone();
            let opened = watchdog.run(move |lane| lane.read(&shown, || Ok(open_tree(&target))));
            match opened {
                Ok(tree) => Files::Here(tree?),
                Err(err) => {
                    return Err(RootError::Unreadable {
                        dir,
                        reason: err.to_string(),
                    });
                }
            }
        };
        let process = if files.is_live() {
            Process::current()
        } else {
            Process::directory()
        };
        Ok(HostRoot::new(Source::files(files), process))
    }

    /// A host root given by a user: like [`HostRoot::at`], and refuses a
    /// directory that cannot be read, one that holds neither `proc/` nor
    /// `sys/` (an empty directory, a typo), and a `proc` or `sysfs` mount
    /// itself (`--root /proc`), so that a wrong path is an error rather
    /// than a report of checks that all do not apply.
    pub fn at_host(dir: impl AsRef<Path>) -> Result<HostRoot, RootError> {
        let root = HostRoot::at(&dir)?;
        if root.process.is_live() {
            return Ok(root);
        }
        let dir = dir.as_ref().to_path_buf();
        let unreadable = |err: ReadError| RootError::Unreadable {
            dir: dir.clone(),
            // The root itself is `dir`, not a path to show again.
            reason: match err {
                ReadError::Io { path, message, .. } if path == "/" => message,
                other => other.to_string(),
            },
        };
        if let Some(why) = root
            .op("/", |tree, watchdog, _| tree.pseudo_file_system(watchdog))
            .map_err(unreadable)?
        {
            return Err(RootError::NotAHost {
                dir: dir.clone(),
                why,
            });
        }
        root.list("/").map_err(unreadable)?;
        let mut found = false;
        for top in ["/proc", "/sys"] {
            found |= root.list(top).map_err(unreadable)?.is_some();
        }
        if !found {
            return Err(RootError::NotAHost {
                dir,
                why: "it holds neither proc/ nor sys/",
            });
        }
        Ok(root)
    }

    /// A host tree held in memory, such as an opened snapshot, shown as
    /// `shown` (the archive's path), read as a snapshot
    /// ([`Environment::Snapshot`]).
    pub fn in_memory(tree: MemoryTree, shown: impl Into<String>) -> HostRoot {
        let process = Process::snapshot(tree.process_view());
        HostRoot::new(
            Source::Memory {
                tree,
                shown: shown.into(),
            },
            process,
        )
    }

    /// The same root for a new pass: the same tree read by the same
    /// process with the same deadline, with nothing learnt about the tree
    /// kept, so that what changed since (a link retargeted, a device
    /// added or removed) is seen. Paths whose reads are still blocked stay
    /// refused, so that each pass does not block another thread on them;
    /// those whose reads have returned are read again. Costs no I/O. A root
    /// in memory, which does not change, and a recording root, which is
    /// one pass already, are shared as they are.
    #[must_use]
    pub fn fresh(&self) -> HostRoot {
        reader::reap_returned();
        self.watchdog.forget_returned();
        let tree = match &*self.tree {
            Source::Tree {
                files,
                recorder: None,
            } => Arc::new(Source::files(files.fresh())),
            _ => Arc::clone(&self.tree),
        };
        HostRoot {
            tree,
            watchdog: Arc::clone(&self.watchdog),
            process: Arc::clone(&self.process),
            lane: None,
        }
    }

    /// The same directory (or live) root, reading afresh and recording
    /// what its reads find, with the handle to what was recorded. `None`
    /// for a root in memory, which holds nothing the recording would not.
    pub fn recorded(&self) -> Option<(HostRoot, Recording)> {
        let Source::Tree { files, .. } = &*self.tree else {
            return None;
        };
        let recorder = Recorder::new(files.base().to_path_buf(), self.process.is_live());
        let source = Arc::new(Source::Tree {
            files: files.fresh(),
            recorder: Some(Box::new(recorder)),
        });
        let root = HostRoot {
            tree: Arc::clone(&source),
            watchdog: Arc::new(Watchdog::new(self.read_timeout())),
            process: Arc::clone(&self.process),
            lane: None,
        };
        Some((root, Recording { source }))
    }

    /// The same root with another deadline for each read.
    #[must_use]
    pub fn with_read_timeout(self, timeout: Duration) -> HostRoot {
        HostRoot {
            watchdog: Arc::new(Watchdog::new(timeout)),
            ..self
        }
    }

    /// The deadline of each read.
    pub fn read_timeout(&self) -> Duration {
        self.watchdog.timeout()
    }

    /// The process that reads this root.
    pub fn process(&self) -> &Process {
        &self.process
    }

    /// The directory (or snapshot) this root stands for, for display.
    pub fn display(&self) -> String {
        self.tree.display()
    }

    /// Runs `work` with every read of this root under the deadline, on a
    /// thread that is abandoned if one of those reads is stuck. Where the
    /// reads run in reader processes (see [`crate::reader`]), each has its
    /// own deadline and a stuck one holds no thread here: `work` then runs
    /// once, on this thread.
    ///
    /// Reads inside `work` run on its thread without a hand-over each;
    /// reads outside any `guarded` call are handed over one by one. `work`
    /// may run more than once: after a stuck read it runs again, that read
    /// then failing at once with [`ReadError::Timeout`], so it should do
    /// nothing but read and compute.
    pub fn guarded<R: Send + 'static>(
        &self,
        work: impl Fn(&HostRoot) -> R + Send + Sync + 'static,
    ) -> R {
        // Reads in reader processes each have their deadline there: no
        // thread of this process can be caught by one.
        if self.lane.is_some() || self.tree.reads_elsewhere() {
            return work(self);
        }
        let tree = Arc::clone(&self.tree);
        let watchdog = Arc::clone(&self.watchdog);
        let process = Arc::clone(&self.process);
        self.watchdog.run(move |lane| {
            work(&HostRoot {
                tree: Arc::clone(&tree),
                watchdog: Arc::clone(&watchdog),
                process: Arc::clone(&process),
                lane: Some(lane),
            })
        })
    }

    /// Runs one read of `path` under the deadline.
    fn op<R, F>(&self, path: &str, read: F) -> Result<R, ReadError>
    where
        R: Send + 'static,
        F: Fn(&Source, &Arc<Watchdog>, &str) -> Result<R, ReadError> + Send + Sync + Copy + 'static,
    {
        let result = match &self.lane {
            _ if self.tree.reads_elsewhere() => read(&self.tree, &self.watchdog, path),
            Some(lane) => lane.read(path, || read(&self.tree, &self.watchdog, path)),
            None => {
                let path = path.to_owned();
                return self.guarded(move |root| root.op(&path, read));
            }
        };
        // A read cut by the deadline never returned to the recorder.
        if let (Err(err), Some(recorder)) = (&result, self.tree.recorder())
            && err.is_timeout()
        {
            recorder.timed_out(err);
        }
        result
    }

    /// Reads a text file of at most [`DEFAULT_READ_CAP`] bytes. A missing
    /// file is `Ok(None)`.
    pub fn read(&self, path: &str) -> Result<Option<String>, ReadError> {
        self.read_with_cap(path, DEFAULT_READ_CAP)
    }

    /// Reads a text file of at most `cap` bytes. A missing file is `Ok(None)`.
    pub fn read_with_cap(&self, path: &str, cap: usize) -> Result<Option<String>, ReadError> {
        let bytes = self.op(path, move |tree, watchdog, path| {
            tree.read_bytes(watchdog, path, cap)
        })?;
        bytes
            .map(|bytes| {
                if bytes.contains(&0) {
                    return Err(ReadError::NotText {
                        path: path.to_owned(),
                    });
                }
                String::from_utf8(bytes).map_err(|_| ReadError::NotText {
                    path: path.to_owned(),
                })
            })
            .transpose()
    }

    /// Reads a file of at most `cap` bytes as they are, NUL bytes included:
    /// for the few files that hold NUL-separated strings
    /// (`/proc/<pid>/environ`). A missing file is `Ok(None)`.
    pub fn read_bytes(&self, path: &str, cap: usize) -> Result<Option<Vec<u8>>, ReadError> {
        self.op(path, move |tree, watchdog, path| {
            tree.read_bytes(watchdog, path, cap)
        })
    }

    /// Reads a one-value file (a sysfs attribute), trimmed.
    pub fn read_value(&self, path: &str) -> Result<Option<String>, ReadError> {
        Ok(self
            .read_with_cap(path, 64 << 10)?
            .map(|text| text.trim().to_owned()))
    }

    /// The names in a directory, sorted, at most [`MAX_DIR_ENTRIES`] (more
    /// is [`ReadError::TooManyEntries`]). A missing directory is `Ok(None)`.
    pub fn list(&self, path: &str) -> Result<Option<Vec<String>>, ReadError> {
        let mut names = self.op(path, Source::list)?;
        if let Some(names) = &mut names {
            names.sort_unstable();
        }
        Ok(names)
    }

    /// The target of a symlink, as written. `Ok(None)` when `path` is missing
    /// or not a symlink.
    pub fn read_link(&self, path: &str) -> Result<Option<String>, ReadError> {
        self.op(path, Source::read_link)
    }

    /// The last component of a symlink's target: the driver name of
    /// `.../driver`, the group number of `.../iommu_group`.
    pub fn link_name(&self, path: &str) -> Result<Option<String>, ReadError> {
        Ok(self.read_link(path)?.and_then(|target| {
            target
                .rsplit('/')
                .find(|part| !part.is_empty())
                .map(str::to_owned)
        }))
    }

    /// The path with every symlink resolved, as a host path: the PCI device
    /// directory `/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0` for
    /// `/sys/bus/pci/devices/0000:3b:00.0`. `Ok(None)` when it does not exist.
    pub fn canonical(&self, path: &str) -> Result<Option<String>, ReadError> {
        self.op(path, Source::canonical)
    }

    /// Whether anything exists at `path` (a dangling symlink counts as
    /// absent). An error says that it could not be told.
    pub fn exists(&self, path: &str) -> Result<bool, ReadError> {
        self.op(path, Source::exists)
    }

    /// The last `cap` bytes of a regular file (all of it when smaller), for
    /// logs that grow at their end. A missing file is `Ok(None)`.
    pub fn read_tail(&self, path: &str, cap: usize) -> Result<Option<Tail>, ReadError> {
        self.op(path, move |source, watchdog, path| {
            source.read_tail(watchdog, path, cap)
        })
    }

    /// Whether this root shows the kernel this process runs on: the live
    /// `/`, or a directory whose boot id is this process's, such as the
    /// host's `/` mounted at `/host` in a container. The kernel log is not
    /// namespaced, so the container's is then the host's. A snapshot never
    /// does: it answers with what its recording read.
    pub fn shows_running_kernel(&self) -> Result<bool, ReadError> {
        match self.process.environment() {
            Environment::Live => return Ok(true),
            Environment::Snapshot { .. } => return Ok(false),
            Environment::Directory => {}
        }
        self.op(BOOT_ID, |tree, watchdog, path| {
            let theirs = tree.read_bytes(watchdog, path, 4096)?;
            let ours = Tree::live().read_bytes(path, 4096)?;
            Ok(match (theirs, ours) {
                (Some(theirs), Some(ours)) => {
                    let theirs = theirs.trim_ascii();
                    !theirs.is_empty() && theirs == ours.trim_ascii()
                }
                _ => false,
            })
        })
    }

    /// Whether this root is a snapshot recorded where the kernel log was
    /// read from `/dev/kmsg`: [`HostRoot::read_kmsg`] then answers with
    /// the window the recording read, as the device did.
    pub fn replays_kernel_log(&self) -> bool {
        self.tree.replays_kmsg()
    }

    /// The running kernel's records logged at `since_usec` microseconds
    /// after boot or later, from `/dev/kmsg`: the one device node zerohop
    /// opens, read without waiting and within half the read deadline
    /// (see `kmsg_device`). `Ok(None)` when the root does not show the
    /// running kernel ([`HostRoot::shows_running_kernel`]) or no
    /// `/dev/kmsg` exists. A snapshot that keeps a window
    /// ([`HostRoot::replays_kernel_log`]) answers with that window.
    pub fn read_kmsg(&self, since_usec: u64) -> Result<Option<KmsgRead>, ReadError> {
        if !self.replays_kernel_log() && !self.shows_running_kernel()? {
            return Ok(None);
        }
        let budget = self.read_timeout() / 2;
        // Beside a directory, the host's own device node may be there too.
        let beside = self.process.environment() == Environment::Directory;
        self.op(KMSG, move |source, watchdog, _| {
            source.kmsg(watchdog, since_usec, budget, beside)
        })
    }
}

/// What a recording root found: a handle that outlives the root's clones.
pub struct Recording {
    source: Arc<Source>,
}

impl Recording {
    /// What the root's reads found, as a tree that answers the same reads
    /// the same way; taken out, so that the recording starts afresh.
    pub fn take(&self) -> MemoryTree {
        self.source
            .recorder()
            .map(Recorder::take)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc")).unwrap();
        fs::write(dir.path().join("proc/cmdline"), "ro quiet\n").unwrap();
        fs::write(dir.path().join("proc/binary"), [0u8, 159, 146, 150]).unwrap();
        fs::write(dir.path().join("proc/big"), vec![b'a'; 100]).unwrap();
        symlink("/proc/cmdline", dir.path().join("link")).unwrap();
        symlink("/nowhere", dir.path().join("dangling")).unwrap();
        dir
    }

    #[test]
    fn reads_are_bounded_and_missing_is_none() {
        let dir = tree();
        let root = HostRoot::at(dir.path()).unwrap();
        assert_eq!(root.process().environment(), Environment::Directory);
        assert_eq!(
            root.read("/proc/cmdline").unwrap().as_deref(),
            Some("ro quiet\n")
        );
        assert_eq!(root.read("/proc/absent").unwrap(), None);
        assert_eq!(root.read("/dangling").unwrap(), None);
        assert_eq!(root.read("/link").unwrap().as_deref(), Some("ro quiet\n"));
        assert!(matches!(
            root.read("/proc/binary"),
            Err(ReadError::NotText { .. })
        ));
        assert!(matches!(
            root.read_with_cap("/proc/big", 10),
            Err(ReadError::TooLarge { cap: 10, .. })
        ));
        assert!(matches!(
            root.read("/proc"),
            Err(ReadError::NotAFile {
                kind: FileKind::Directory,
                ..
            })
        ));
        assert_eq!(root.link_name("/link").unwrap().as_deref(), Some("cmdline"));
        assert_eq!(
            root.list("/proc").unwrap().unwrap(),
            vec!["big", "binary", "cmdline"]
        );
        assert!(root.exists("/link").unwrap());
        assert!(!root.exists("/dangling").unwrap());
    }

    #[test]
    fn reads_inside_a_guarded_run_see_the_same_tree() {
        let dir = tree();
        let root = HostRoot::at(dir.path()).unwrap();
        let read = root.guarded(|root| {
            (
                root.read("/proc/cmdline").unwrap(),
                root.list("/proc").unwrap().map(|names| names.len()),
            )
        });
        assert_eq!(read, (Some("ro quiet\n".to_owned()), Some(3)));
    }

    #[test]
    fn a_fresh_root_sees_what_changed_since_the_last_pass() {
        let dir = tree();
        let sys = dir.path().join("sys");
        fs::create_dir_all(sys.join("devices/a")).unwrap();
        fs::create_dir_all(sys.join("devices/b")).unwrap();
        fs::write(sys.join("devices/b/only-in-b"), "1\n").unwrap();
        symlink("devices/a", sys.join("current")).unwrap();
        let first = HostRoot::at(dir.path()).unwrap();
        assert_eq!(
            first.canonical("/sys/current").unwrap().as_deref(),
            Some("/sys/devices/a")
        );
        assert!(!first.exists("/sys/current/only-in-b").unwrap());
        // Between two passes the link is retargeted, as a driver rebind
        // or a device replaced does in sysfs.
        fs::remove_file(sys.join("current")).unwrap();
        symlink("devices/b", sys.join("current")).unwrap();
        let second = first.fresh();
        assert_eq!(
            second.canonical("/sys/current").unwrap().as_deref(),
            Some("/sys/devices/b")
        );
        assert!(second.exists("/sys/current/only-in-b").unwrap());
        assert_eq!(second.process(), first.process());
        assert_eq!(second.read_timeout(), first.read_timeout());
        // The first pass's root keeps what it learnt: a root is one pass.
        assert_eq!(
            first.canonical("/sys/current").unwrap().as_deref(),
            Some("/sys/devices/a")
        );
    }

    #[test]
    fn each_root_says_how_its_reader_stands() {
        let dir = tree();
        let directory = HostRoot::at(dir.path()).unwrap();
        assert_eq!(directory.process().environment(), Environment::Directory);
        assert!(!directory.process().reads_own_limits());
        assert!(HostRoot::live().process().is_live());
        let mut recorded = crate::memory::MemoryTree::new();
        recorded.set_process_view(true);
        let snapshot = HostRoot::in_memory(recorded, "node.zhsnap");
        assert_eq!(
            snapshot.process().environment(),
            Environment::Snapshot {
                recorded_live: true
            }
        );
        assert!(snapshot.process().reads_own_limits());
        // A snapshot is never read as the running kernel, whatever boot
        // id it holds.
        assert_eq!(snapshot.shows_running_kernel(), Ok(false));
        assert_eq!(snapshot.fresh().process(), snapshot.process());
    }

    #[test]
    fn a_file_is_not_a_root() {
        let dir = tree();
        assert!(matches!(
            HostRoot::at(dir.path().join("proc/cmdline")),
            Err(RootError::NotADirectory(_))
        ));
        assert!(matches!(
            HostRoot::at(dir.path().join("nope")),
            Err(RootError::Missing(_))
        ));
        assert!(HostRoot::at("/").unwrap().process().is_live());
    }

    #[test]
    fn a_host_root_holds_proc_or_sys() {
        let dir = tree();
        assert!(HostRoot::at_host(dir.path()).is_ok());
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            HostRoot::at_host(empty.path()),
            Err(RootError::NotAHost { .. })
        ));
        // `/proc` holds a `sys/` (the sysctl tree) but is no host root.
        if Path::new("/proc/self").exists() {
            let err = HostRoot::at_host("/proc").err().expect("refused");
            assert!(err.to_string().contains("proc file system"), "{err}");
        }
    }

    #[test]
    fn a_snapshot_replays_the_kernel_log_window_its_recording_read() {
        use crate::facts::kernel_log::{CAPTURE, KernelLog};
        use crate::memory::{Content, Node};

        let dir = tree();
        fs::write(dir.path().join("proc/uptime"), "7300.00 14000.00\n").unwrap();
        let (recording_root, recording) = HostRoot::at(dir.path()).unwrap().recorded().unwrap();
        // The log fact reads the uptime, then the device: the device's
        // answer is given here, as the recorder receives it.
        recording_root.read_value("/proc/uptime").unwrap();
        let read = KmsgRead {
            path: "/dev/kmsg".to_owned(),
            text: "6,1,1000000,-;old\n3,2,7000000000,-;inside\n6,3,7200000000,-;last\n".to_owned(),
            overrun: true,
            cut: None,
        };
        recording_root.tree.recorder().unwrap().kmsg(&read);
        let tree = recording.take();
        // Unpacked, the window is an ordinary capture.
        assert!(matches!(
            tree.node(CAPTURE),
            Some(Node::File(Content::Read(bytes))) if **bytes == *read.text.as_bytes()
        ));
        let snapshot = HostRoot::in_memory(tree, "node.zhsnap");
        assert!(snapshot.replays_kernel_log());
        assert_eq!(snapshot.read_kmsg(0), Ok(Some(read)));
        let log = KernelLog::collect(&snapshot, Duration::from_secs(3600)).unwrap();
        // Judged as read live: the window ends at the recorded uptime
        // (7300 s), so 7000 s and 7200 s lie inside the hour and 1 s does
        // not; records are located by their sequence numbers.
        assert!(log.live);
        assert_eq!(log.source, "/dev/kmsg");
        assert_eq!(
            log.end,
            Some(crate::parse::kmsg::Stamp::Boot(7_300_000_000))
        );
        let kept: Vec<&str> = log.records.iter().map(|r| r.message()).collect();
        assert_eq!(kept, ["inside", "last"]);
        assert_eq!(log.locate(&log.records[0]), "/dev/kmsg seq 2");
        assert_eq!(log.span(), "in the last 1h");
        assert!(log.notes.iter().any(|n| n.contains("overwrote")));
    }

    #[test]
    fn a_recording_of_the_live_host_keeps_the_window_it_read() {
        let (root, recording) = HostRoot::live().recorded().unwrap();
        let read = root.read_kmsg(0);
        let tree = recording.take();
        match read {
            Ok(Some(read)) => {
                let log = tree.kernel_log().expect("the window kept");
                assert_eq!(log.device, read.path);
                let replayed = HostRoot::in_memory(tree, "live.zhsnap").read_kmsg(0);
                assert_eq!(replayed, Ok(Some(read)));
            }
            // No device here, or no permission to read it: nothing to keep.
            _ => assert!(tree.kernel_log().is_none()),
        }
    }

    #[test]
    fn a_recording_keeps_what_each_read_saw_without_looking_again() {
        use crate::memory::{Content, Listing, Node};

        let dir = tree();
        let (root, recording) = HostRoot::at(dir.path()).unwrap().recorded().unwrap();
        // A file read directly, a file read through a link, a link looked
        // up, a dangling link looked up.
        assert!(root.read("/proc/cmdline").unwrap().is_some());
        assert!(root.read("/link").unwrap().is_some());
        assert_eq!(
            root.read_link("/link").unwrap().as_deref(),
            Some("/proc/cmdline")
        );
        assert_eq!(
            root.read_link("/dangling").unwrap().as_deref(),
            Some("/nowhere")
        );
        let tree = recording.take();
        assert!(matches!(
            tree.node("/proc/cmdline"),
            Some(Node::File(Content::Read(bytes))) if **bytes == *b"ro quiet\n"
        ));
        assert_eq!(tree.node("/proc"), Some(&Node::Dir(Listing::NotListed)));
        // Links are kept with their targets made relative, as `lstat` and
        // `readlink` would have found them.
        assert_eq!(
            tree.node("/link"),
            Some(&Node::Link("proc/cmdline".to_owned()))
        );
        assert_eq!(
            tree.node("/dangling"),
            Some(&Node::Link("nowhere".to_owned()))
        );
        let replay = HostRoot::in_memory(tree, "node.zhsnap");
        assert_eq!(replay.read("/link").unwrap().as_deref(), Some("ro quiet\n"));
        assert_eq!(
            replay.read_link("/dangling").unwrap().as_deref(),
            Some("nowhere")
        );
    }
}
