//! Where the data goes once it is read: nowhere further than host memory,
//! a GPU through pinned host buffers and asynchronous copies, or a GPU
//! through cuFile, which reads the files itself.
//!
//! A sink is one file of this module: a [`SinkSpec`] (what the engine must
//! know before the sink is opened) whose `open` probes what the sink needs,
//! records it in the run's [`Environment`] and returns the sink, or the
//! reason it cannot run here (the run is then `skipped`). A sink fed by the
//! engines implements [`BufferSink`]; the io_uring and pread backends read
//! into its buffers and hand it each block. A sink that reads the files
//! itself implements [`DirectSink`] and runs the workers.

mod cufile;
mod gpu;
mod host;

use zerohop_host::HostRoot;

use crate::buffers::Arena;
use crate::config::{ReadConfig, SinkKind};
use crate::env::Environment;
use crate::gpu::Unavailable;
use crate::plan::Extent;
use crate::target::Target;
use crate::worker::{RunError, Shared, WorkerOutcome};

/// What the engine knows of a sink before opening it.
pub(crate) struct SinkSpec {
    /// Host buffer slots each pread thread reads into: two for a sink that
    /// still reads one slot (a copy in flight) while the next block is read
    /// into the other.
    pub(crate) slots_per_reader: u64,
    /// How the data reaches the sink, and how to open it.
    pub(crate) route: Route,
}

/// Opens a sink: probes what it needs and records it in the environment,
/// or says why it cannot run here.
pub(crate) type Open<S> =
    fn(&ReadConfig, &HostRoot, &mut Environment) -> Result<Box<S>, Unavailable>;

/// How a run opens its sink, which also says who reads the files.
pub(crate) enum Route {
    /// The engines read into host buffers and hand each block to the sink.
    Buffers(Open<dyn BufferSink>),
    /// The sink reads the files itself; the name is the backend's in the
    /// report.
    Direct(&'static str, Open<dyn DirectSink>),
}

/// The spec of the sink `kind` names.
pub(crate) fn spec(kind: SinkKind) -> &'static SinkSpec {
    match kind {
        SinkKind::Host => &host::SPEC,
        SinkKind::Gpu => &gpu::SPEC,
        SinkKind::Cufile => &cufile::SPEC,
    }
}

/// A sink the engines read for: it takes each worker's buffers and each
/// block read into them.
pub(crate) trait BufferSink: Sync {
    /// Takes a worker's freshly allocated arena and makes it ready for the
    /// sink (the GPU sink pins it for DMA).
    fn hold(&self, arena: Arena) -> Result<Box<dyn HeldBuffers + '_>, RunError>;

    /// The lane of an io_uring worker over the `slots` slots of `arena`,
    /// `slot_bytes` each. Made on the worker's thread, before the run starts.
    fn queue_lane<'a>(
        &'a self,
        arena: &'a Arena,
        slots: usize,
        slot_bytes: usize,
    ) -> Result<Box<dyn QueueLane + 'a>, RunError>;

    /// The lane of one pread thread over its slots
    /// ([`SinkSpec::slots_per_reader`] of them). Made on that thread.
    fn reader_lane<'a>(
        &'a self,
        slots: Vec<&'a mut [u8]>,
    ) -> Result<Box<dyn ReaderLane + 'a>, RunError>;
}

/// A worker's buffers as its sink holds them: as allocated, or pinned.
pub(crate) trait HeldBuffers {
    /// The arena.
    fn arena(&self) -> &Arena;
    /// The arena, writable.
    fn arena_mut(&mut self) -> &mut Arena;
}

/// Hands the slots of an io_uring worker to the sink, which may go on
/// reading a slot after the hand-over (an asynchronous copy): the worker
/// reads into a slot again only once the lane says the sink is done with it.
pub(crate) trait QueueLane {
    /// Hands the first `len` bytes of slot `slot` to the sink: `true` when
    /// the sink is done with the slot at once, `false` when it is still
    /// reading it until [`QueueLane::is_done`] says so.
    fn deliver(&mut self, slot: usize, len: usize) -> Result<bool, RunError>;
    /// Whether the sink is done with what it was last handed in `slot`.
    fn is_done(&self, slot: usize) -> Result<bool, RunError>;
    /// Waits until the sink is done with `slot`.
    fn wait(&self, slot: usize) -> Result<(), RunError>;
}

/// The slots of one pread thread, read into in turn.
pub(crate) trait ReaderLane {
    /// How many slots the lane has.
    fn slots(&self) -> usize;
    /// Slot `k`, once the sink is done with what it held.
    fn slot(&mut self, k: usize) -> Result<&mut [u8], RunError>;
    /// Hands the first `len` bytes of slot `k` to the sink.
    fn deliver(&mut self, k: usize, len: usize) -> Result<(), RunError>;
}

/// A sink that reads the files itself.
pub(crate) trait DirectSink: Sync {
    /// Makes the run's targets known to the sink; the reason when it cannot
    /// read them.
    fn attach<'a>(
        &'a self,
        targets: &'a [Target],
    ) -> Result<Box<dyn DirectReader + 'a>, Unavailable>;
}

/// The workers of a [`DirectSink`], once its targets are attached.
pub(crate) trait DirectReader: Sync {
    /// Runs worker `index` over `extents`, as the engines' backends do.
    fn worker(
        &self,
        shared: &Shared<'_>,
        index: usize,
        extents: Vec<Extent>,
    ) -> Result<WorkerOutcome, RunError>;
}
