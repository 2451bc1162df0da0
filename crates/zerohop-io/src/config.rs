//! What a read run is asked to do.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::buffers::HugePages;

/// The I/O backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// One io_uring per worker with `qd` reads in flight.
    Uring,
    /// A pool of `qd` threads per worker, each issuing blocking `pread`s.
    Pread,
}

/// The order in which blocks are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessPattern {
    /// Consecutive blocks; workers sharing a file read disjoint ranges.
    Seq,
    /// Uniformly random whole blocks over the file.
    Rand,
}

/// Where the data goes after it reached host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "&'static str")]
pub enum SinkKind {
    /// Nowhere: host memory only.
    Host,
    /// Pinned host buffers, then asynchronous copies to GPU memory.
    Gpu,
    /// Straight into GPU memory through cuFile (GPUDirect Storage).
    Cufile,
}

impl SinkKind {
    /// Its name in the JSON document and the summary, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SinkKind::Host => "host",
            SinkKind::Gpu => "gpu",
            SinkKind::Cufile => "cufile",
        }
    }
}

impl From<SinkKind> for &'static str {
    fn from(kind: SinkKind) -> &'static str {
        kind.name()
    }
}

impl fmt::Display for SinkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    /// Each file once (split between the workers that share it).
    OnePass,
    /// This many bytes in total, split evenly between workers, wrapping
    /// around the files; rounded up to whole blocks.
    Bytes(u64),
    /// For this long after the ramp; `{"time_s": seconds}` in the JSON
    /// document.
    #[serde(rename = "time_s", serialize_with = "seconds")]
    Time(Duration),
}

/// A duration as a number of seconds, the unit of every `_s` field.
fn seconds<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64())
}

/// The page cache before a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CachePolicy {
    /// Drop the clean cached pages of every file first (no privilege needed).
    Drop,
    /// Leave the page cache as it is.
    Keep,
}

/// NUMA placement of the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NumaPolicy {
    /// No placement: the kernel's default policy.
    Off,
    /// The node the storage device is attached to, from sysfs.
    Device,
    /// A given node.
    Node(u32),
}

/// A complete description of a read run.
#[derive(Debug, Clone, Serialize)]
pub struct ReadConfig {
    /// Files or block devices to read.
    pub paths: Vec<PathBuf>,
    /// The I/O backend.
    pub engine: EngineKind,
    /// Open with `O_DIRECT`.
    pub direct: bool,
    /// Bytes per read.
    pub block_size: u64,
    /// Reads in flight per worker.
    pub queue_depth: u32,
    /// Worker threads (each with its own ring or thread pool).
    pub workers: u32,
    /// How much to read.
    pub amount: Amount,
    /// Time to run before measuring; `ramp_s`, in seconds, in the JSON
    /// document.
    #[serde(rename = "ramp_s", serialize_with = "seconds")]
    pub ramp: Duration,
    /// Sequential or random.
    pub pattern: AccessPattern,
    /// Where the data goes.
    pub sink: SinkKind,
    /// Check the pattern written by `prepare` in every block read.
    pub verify: bool,
    /// Page cache handling before the run.
    pub cache: CachePolicy,
    /// Hugetlb pages for the buffers.
    pub hugepages: HugePages,
    /// NUMA placement of the buffers.
    pub numa: NumaPolicy,
    /// Reads queued before io_uring submits them: 1 submits each read as
    /// soon as its buffer is free; `queue_depth` submits a whole refill at once.
    pub submit_batch: u32,
    /// Ask for a kernel submission thread (`IORING_SETUP_SQPOLL`).
    pub sqpoll: bool,
    /// Ask for polled completions (`IORING_SETUP_IOPOLL`, O_DIRECT only).
    pub iopoll: bool,
    /// Register the buffers with io_uring (`IORING_REGISTER_BUFFERS`).
    pub fixed_buffers: bool,
    /// Register the files with io_uring (`IORING_REGISTER_FILES`).
    pub registered_files: bool,
    /// The GPU to copy to, for the `gpu` and `cufile` sinks.
    pub gpu: u32,
    /// Seed of the random offsets.
    pub seed: u64,
}

impl ReadConfig {
    /// A configuration with the defaults of the command line for `paths`.
    pub fn new(paths: Vec<PathBuf>) -> ReadConfig {
        ReadConfig {
            paths,
            engine: EngineKind::Uring,
            direct: false,
            block_size: 1 << 20,
            queue_depth: 32,
            workers: 1,
            amount: Amount::OnePass,
            ramp: Duration::ZERO,
            pattern: AccessPattern::Seq,
            sink: SinkKind::Host,
            verify: false,
            cache: CachePolicy::Drop,
            hugepages: HugePages::Auto,
            numa: NumaPolicy::Off,
            submit_batch: 1,
            sqpoll: false,
            iopoll: false,
            fixed_buffers: true,
            registered_files: true,
            gpu: 0,
            seed: 0x5eed,
        }
    }
}
