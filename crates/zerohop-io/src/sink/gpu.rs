//! The `gpu` sink: host buffers pinned with `cuMemHostRegister`, and each
//! block copied to GPU memory with `cuMemcpyHtoDAsync` while the next reads
//! proceed; a slot is read into again only once its copy finished.

use std::sync::Arc;

use zerohop_host::HostRoot;

use super::{BufferSink, HeldBuffers, QueueLane, ReaderLane, Route, SinkSpec};
use crate::buffers::Arena;
use crate::config::ReadConfig;
use crate::env::Environment;
use crate::gpu::cuda::{ArenaLane, CudaApi, CudaDevice, CudaError, PinnedArena, Staging};
use crate::gpu::{LibraryStatus, Unavailable};
use crate::worker::RunError;

/// What the engine knows of this sink before opening it.
pub(super) static SPEC: SinkSpec = SinkSpec {
    // One slot is copied while the other is read into.
    slots_per_reader: 2,
    route: Route::Buffers(open),
};

fn open(
    cfg: &ReadConfig,
    _root: &HostRoot,
    env: &mut Environment,
) -> Result<Box<dyn BufferSink>, Unavailable> {
    let device = open_device(cfg, env)?;
    env.gpu.cufile = LibraryStatus::not_probed("the sink copies through host memory");
    Ok(Box::new(GpuSink(device)))
}

/// Loads the CUDA driver and opens GPU `cfg.gpu`, recording either in the
/// environment.
pub(super) fn open_device(
    cfg: &ReadConfig,
    env: &mut Environment,
) -> Result<CudaDevice, Unavailable> {
    let device = CudaApi::load()
        .and_then(|api| CudaDevice::open(Arc::new(api), cfg.gpu))
        .inspect_err(|why| {
            env.gpu.cuda = LibraryStatus::unavailable(why);
            env.gpu.cufile =
                LibraryStatus::not_probed("CUDA found no GPU, so cuFile was not opened");
        })?;
    env.gpu.cuda = LibraryStatus {
        status: "usable",
        library: Some(device.library_name().to_owned()),
        version: Some(device.driver_version.clone()),
        device: Some(format!("{} ({})", device.name, device.pci_bus_id)),
        reason: None,
    };
    Ok(device)
}

/// A CUDA failure during the run: the machine's, not the input's.
fn setup(err: CudaError) -> RunError {
    RunError::Setup(err.to_string())
}

/// One GPU, copied to through pinned host memory.
struct GpuSink(CudaDevice);

impl BufferSink for GpuSink {
    fn hold(&self, arena: Arena) -> Result<Box<dyn HeldBuffers + '_>, RunError> {
        match self.0.pin_arena(arena) {
            Ok(pinned) => Ok(Box::new(pinned)),
            Err(err) => Err(RunError::Setup(format!(
                "cannot pin the host buffers for the GPU: {err}"
            ))),
        }
    }

    fn queue_lane<'a>(
        &'a self,
        arena: &'a Arena,
        slots: usize,
        slot_bytes: usize,
    ) -> Result<Box<dyn QueueLane + 'a>, RunError> {
        let lane = self.0.arena_lane(arena, slots, slot_bytes).map_err(setup)?;
        Ok(Box::new(lane))
    }

    fn reader_lane<'a>(
        &'a self,
        slots: Vec<&'a mut [u8]>,
    ) -> Result<Box<dyn ReaderLane + 'a>, RunError> {
        // Made on the pread thread, which makes the context current there.
        let staging = Staging::new(&self.0, slots).map_err(setup)?;
        Ok(Box::new(staging))
    }
}

impl HeldBuffers for PinnedArena<'_> {
    fn arena(&self) -> &Arena {
        PinnedArena::arena(self)
    }

    fn arena_mut(&mut self) -> &mut Arena {
        PinnedArena::arena_mut(self)
    }
}

impl QueueLane for ArenaLane<'_> {
    fn deliver(&mut self, slot: usize, len: usize) -> Result<bool, RunError> {
        self.copy(slot, len).map_err(setup)?;
        Ok(false)
    }

    fn is_done(&self, slot: usize) -> Result<bool, RunError> {
        ArenaLane::is_done(self, slot).map_err(setup)
    }

    fn wait(&self, slot: usize) -> Result<(), RunError> {
        ArenaLane::wait(self, slot).map_err(setup)
    }
}

impl ReaderLane for Staging<'_> {
    fn slots(&self) -> usize {
        Staging::slots(self)
    }

    fn slot(&mut self, k: usize) -> Result<&mut [u8], RunError> {
        Staging::slot(self, k).map_err(setup)
    }

    fn deliver(&mut self, k: usize, len: usize) -> Result<(), RunError> {
        self.start_copy(k, len).map_err(setup)
    }
}
