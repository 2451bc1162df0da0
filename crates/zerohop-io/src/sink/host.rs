//! The `host` sink: the data stays in host memory, so a block is done with
//! as soon as it was read (and verified).

use zerohop_host::HostRoot;

use super::{BufferSink, HeldBuffers, QueueLane, ReaderLane, Route, SinkSpec};
use crate::buffers::Arena;
use crate::config::ReadConfig;
use crate::env::Environment;
use crate::gpu::{LibraryStatus, Unavailable};
use crate::worker::RunError;

/// What the engine knows of this sink before opening it.
pub(super) static SPEC: SinkSpec = SinkSpec {
    slots_per_reader: 1,
    route: Route::Buffers(open),
};

fn open(
    _cfg: &ReadConfig,
    _root: &HostRoot,
    env: &mut Environment,
) -> Result<Box<dyn BufferSink>, Unavailable> {
    let why = "the sink is host memory";
    env.gpu.cuda = LibraryStatus::not_probed(why);
    env.gpu.cufile = LibraryStatus::not_probed(why);
    Ok(Box::new(HostSink))
}

/// Host memory.
struct HostSink;

impl BufferSink for HostSink {
    fn hold(&self, arena: Arena) -> Result<Box<dyn HeldBuffers + '_>, RunError> {
        Ok(Box::new(arena))
    }

    fn queue_lane<'a>(
        &'a self,
        _arena: &'a Arena,
        _slots: usize,
        _slot_bytes: usize,
    ) -> Result<Box<dyn QueueLane + 'a>, RunError> {
        Ok(Box::new(Done))
    }

    fn reader_lane<'a>(
        &'a self,
        slots: Vec<&'a mut [u8]>,
    ) -> Result<Box<dyn ReaderLane + 'a>, RunError> {
        Ok(Box::new(Slots(slots)))
    }
}

impl HeldBuffers for Arena {
    fn arena(&self) -> &Arena {
        self
    }

    fn arena_mut(&mut self) -> &mut Arena {
        self
    }
}

/// A queue lane that is done with every slot at once.
struct Done;

impl QueueLane for Done {
    fn deliver(&mut self, _slot: usize, _len: usize) -> Result<bool, RunError> {
        Ok(true)
    }

    fn is_done(&self, _slot: usize) -> Result<bool, RunError> {
        Ok(true)
    }

    fn wait(&self, _slot: usize) -> Result<(), RunError> {
        Ok(())
    }
}

/// A pread thread's slots, free again as soon as they were read into.
struct Slots<'a>(Vec<&'a mut [u8]>);

impl ReaderLane for Slots<'_> {
    fn slots(&self) -> usize {
        self.0.len()
    }

    fn slot(&mut self, k: usize) -> Result<&mut [u8], RunError> {
        Ok(&mut *self.0[k])
    }

    fn deliver(&mut self, _k: usize, _len: usize) -> Result<(), RunError> {
        Ok(())
    }
}
