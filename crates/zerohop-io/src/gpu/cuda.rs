//! The handful of CUDA driver API calls the `gpu` sink needs, resolved from
//! `libcuda.so.1` with `dlopen` at run time.
//!
//! Host buffers are our own anonymous memory pinned with `cuMemHostRegister`
//! after allocation (memory from `cuMemHostAlloc` is file-backed and cannot
//! be an io_uring fixed buffer). Each worker gets a [`CopyLane`]: two streams
//! with a device buffer each, and one event per host slot, so a slot is only
//! read into again once its copy finished, and reads overlap copies. An
//! io_uring worker copies the slots of its whole arena through an
//! [`ArenaLane`]; a pread thread its own slots through a [`Staging`].
#![expect(
    unsafe_code,
    reason = "calls into the CUDA driver library loaded at run time"
)]

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Arc;

use libloading::Library;

use super::Unavailable;
use crate::buffers::Arena;

type CuResult = c_int;
/// `CUcontext`.
type Context = *mut c_void;
/// `CUstream`.
type Stream = *mut c_void;
/// `CUevent`.
type Event = *mut c_void;
/// `CUdeviceptr`.
pub type DevicePtr = u64;

const CUDA_SUCCESS: CuResult = 0;
const CUDA_ERROR_NOT_READY: CuResult = 600;
const CU_MEMHOSTREGISTER_PORTABLE: c_uint = 1;
const CU_STREAM_NON_BLOCKING: c_uint = 1;
const CU_EVENT_DISABLE_TIMING: c_uint = 2;

/// A CUDA call that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {message} (CUresult {code})")]
pub struct CudaError {
    /// The driver function.
    pub call: &'static str,
    /// The driver's code.
    pub code: i32,
    /// The driver's description.
    pub message: String,
}

/// Resolved driver entry points. The library stays loaded while this lives.
#[derive(Debug)]
pub struct CudaApi {
    library_name: String,
    cu_init: unsafe extern "C" fn(c_uint) -> CuResult,
    cu_driver_get_version: unsafe extern "C" fn(*mut c_int) -> CuResult,
    cu_device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    cu_device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    cu_device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> CuResult,
    cu_device_get_pci_bus_id: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> CuResult,
    cu_primary_ctx_retain: unsafe extern "C" fn(*mut Context, c_int) -> CuResult,
    cu_primary_ctx_release: unsafe extern "C" fn(c_int) -> CuResult,
    cu_ctx_set_current: unsafe extern "C" fn(Context) -> CuResult,
    cu_mem_alloc: unsafe extern "C" fn(*mut DevicePtr, usize) -> CuResult,
    cu_mem_free: unsafe extern "C" fn(DevicePtr) -> CuResult,
    cu_mem_host_register: unsafe extern "C" fn(*mut c_void, usize, c_uint) -> CuResult,
    cu_mem_host_unregister: unsafe extern "C" fn(*mut c_void) -> CuResult,
    cu_stream_create: unsafe extern "C" fn(*mut Stream, c_uint) -> CuResult,
    cu_stream_destroy: unsafe extern "C" fn(Stream) -> CuResult,
    cu_stream_synchronize: unsafe extern "C" fn(Stream) -> CuResult,
    cu_event_create: unsafe extern "C" fn(*mut Event, c_uint) -> CuResult,
    cu_event_destroy: unsafe extern "C" fn(Event) -> CuResult,
    cu_event_record: unsafe extern "C" fn(Event, Stream) -> CuResult,
    cu_event_query: unsafe extern "C" fn(Event) -> CuResult,
    cu_event_synchronize: unsafe extern "C" fn(Event) -> CuResult,
    cu_memcpy_htod_async: unsafe extern "C" fn(DevicePtr, *const c_void, usize, Stream) -> CuResult,
    cu_memcpy_dtoh: unsafe extern "C" fn(*mut c_void, DevicePtr, usize) -> CuResult,
    cu_get_error_string: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
    // Declared last so that it is dropped after nothing can call into it.
    _library: Library,
}

/// Resolves `name` from `library` as a function pointer of type `T`.
fn symbol<T: Copy>(library: &Library, library_name: &str, name: &str) -> Result<T, Unavailable> {
    // SAFETY: every `T` used below is the exact C prototype of the driver API
    // function `name` (CUDA 11+ ABI, `_v2` names where the driver has them).
    unsafe { library.get::<T>(name.as_bytes()) }
        .map(|sym| *sym)
        .map_err(|err| Unavailable(format!("{library_name} has no {name}: {err}")))
}

impl CudaApi {
    /// Loads the driver library the usual way (`libcuda.so.1`).
    pub fn load() -> Result<CudaApi, Unavailable> {
        CudaApi::load_from("libcuda.so.1")
    }

    /// Loads the driver API from the library `name`.
    pub fn load_from(name: &str) -> Result<CudaApi, Unavailable> {
        // SAFETY: loading the NVIDIA driver library runs its initialisers,
        // which have no preconditions on the loading process.
        let library = unsafe { Library::new(name) }.map_err(|err| {
            Unavailable(format!(
                "CUDA driver library not found ({name}: {err}); install the NVIDIA driver"
            ))
        })?;
        let l = &library;
        Ok(CudaApi {
            cu_init: symbol(l, name, "cuInit")?,
            cu_driver_get_version: symbol(l, name, "cuDriverGetVersion")?,
            cu_device_get_count: symbol(l, name, "cuDeviceGetCount")?,
            cu_device_get: symbol(l, name, "cuDeviceGet")?,
            cu_device_get_name: symbol(l, name, "cuDeviceGetName")?,
            cu_device_get_pci_bus_id: symbol(l, name, "cuDeviceGetPCIBusId")?,
            cu_primary_ctx_retain: symbol(l, name, "cuDevicePrimaryCtxRetain")?,
            cu_primary_ctx_release: symbol(l, name, "cuDevicePrimaryCtxRelease_v2")?,
            cu_ctx_set_current: symbol(l, name, "cuCtxSetCurrent")?,
            cu_mem_alloc: symbol(l, name, "cuMemAlloc_v2")?,
            cu_mem_free: symbol(l, name, "cuMemFree_v2")?,
            cu_mem_host_register: symbol(l, name, "cuMemHostRegister_v2")?,
            cu_mem_host_unregister: symbol(l, name, "cuMemHostUnregister")?,
            cu_stream_create: symbol(l, name, "cuStreamCreate")?,
            cu_stream_destroy: symbol(l, name, "cuStreamDestroy_v2")?,
            cu_stream_synchronize: symbol(l, name, "cuStreamSynchronize")?,
            cu_event_create: symbol(l, name, "cuEventCreate")?,
            cu_event_destroy: symbol(l, name, "cuEventDestroy_v2")?,
            cu_event_record: symbol(l, name, "cuEventRecord")?,
            cu_event_query: symbol(l, name, "cuEventQuery")?,
            cu_event_synchronize: symbol(l, name, "cuEventSynchronize")?,
            cu_memcpy_htod_async: symbol(l, name, "cuMemcpyHtoDAsync_v2")?,
            cu_memcpy_dtoh: symbol(l, name, "cuMemcpyDtoH_v2")?,
            cu_get_error_string: symbol(l, name, "cuGetErrorString")?,
            library_name: name.to_owned(),
            _library: library,
        })
    }

    fn check(&self, call: &'static str, code: CuResult) -> Result<(), CudaError> {
        if code == CUDA_SUCCESS {
            return Ok(());
        }
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorString writes a pointer to a static string or
        // leaves it null for an unknown code.
        let rc = unsafe { (self.cu_get_error_string)(code, &mut text) };
        let message = if rc == CUDA_SUCCESS && !text.is_null() {
            // SAFETY: the driver returned a NUL-terminated static string.
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        } else {
            "unknown error".to_owned()
        };
        Err(CudaError {
            call,
            code,
            message,
        })
    }
}

fn c_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One GPU with its primary context retained.
#[derive(Debug)]
pub struct CudaDevice {
    api: Arc<CudaApi>,
    ordinal: c_int,
    context: Context,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// PCI address, e.g. `0000:17:00.0`.
    pub pci_bus_id: String,
    /// Driver API version, e.g. `12.8`.
    pub driver_version: String,
}

// SAFETY: a CUDA context may be made current on any thread; every use below
// does so first, and the driver API is thread-safe.
unsafe impl Send for CudaDevice {}
// SAFETY: as above; `&CudaDevice` only issues thread-safe driver calls.
unsafe impl Sync for CudaDevice {}

impl CudaDevice {
    /// Initialises the driver and retains the primary context of GPU
    /// `ordinal`. Fails with a reason when the driver finds no GPU.
    pub fn open(api: Arc<CudaApi>, ordinal: u32) -> Result<CudaDevice, Unavailable> {
        let fail = |e: CudaError| Unavailable(e.to_string());
        // SAFETY: cuInit takes only flags (0) and may be called repeatedly.
        api.check("cuInit", unsafe { (api.cu_init)(0) })
            .map_err(fail)?;
        let mut version = 0;
        // SAFETY: writes one int into `version`.
        api.check("cuDriverGetVersion", unsafe {
            (api.cu_driver_get_version)(&mut version)
        })
        .map_err(fail)?;
        let mut count = 0;
        // SAFETY: writes one int into `count`.
        api.check("cuDeviceGetCount", unsafe {
            (api.cu_device_get_count)(&mut count)
        })
        .map_err(fail)?;
        let ordinal = c_int::try_from(ordinal).unwrap_or(c_int::MAX);
        if count <= ordinal {
            return Err(Unavailable(format!(
                "CUDA driver {} found {count} GPU(s); GPU {ordinal} does not exist",
                version_string(version)
            )));
        }
        let mut device = 0;
        // SAFETY: writes one CUdevice into `device`; `ordinal` < count.
        api.check("cuDeviceGet", unsafe {
            (api.cu_device_get)(&mut device, ordinal)
        })
        .map_err(fail)?;
        let mut name = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
        api.check("cuDeviceGetName", unsafe {
            (api.cu_device_get_name)(name.as_mut_ptr(), 256, device)
        })
        .map_err(fail)?;
        let mut bus = [0 as c_char; 64];
        // SAFETY: as above, at most 64 bytes.
        let bus_rc = unsafe { (api.cu_device_get_pci_bus_id)(bus.as_mut_ptr(), 64, device) };
        let mut context = std::ptr::null_mut();
        // SAFETY: writes the primary context handle; released in `Drop`.
        api.check("cuDevicePrimaryCtxRetain", unsafe {
            (api.cu_primary_ctx_retain)(&mut context, device)
        })
        .map_err(fail)?;
        Ok(CudaDevice {
            ordinal: device,
            context,
            name: c_string(&name),
            pci_bus_id: if bus_rc == CUDA_SUCCESS {
                c_string(&bus)
            } else {
                String::new()
            },
            driver_version: version_string(version),
            api,
        })
    }

    /// The loaded library's file name.
    pub fn library_name(&self) -> &str {
        &self.api.library_name
    }

    /// Makes the context current on the calling thread.
    pub fn make_current(&self) -> Result<(), CudaError> {
        // SAFETY: `context` is a retained primary context, valid until Drop.
        self.api.check("cuCtxSetCurrent", unsafe {
            (self.api.cu_ctx_set_current)(self.context)
        })
    }

    /// A handle that makes this context current on another thread, for
    /// threads that must be `'static` (the cuFile watchdog).
    pub fn binder(&self) -> ContextBinder {
        ContextBinder {
            api: Arc::clone(&self.api),
            context: self.context as usize,
        }
    }

    /// Pins a whole buffer arena for DMA (`cuMemHostRegister`); it is
    /// unpinned when the returned guard is dropped.
    pub fn pin_arena(&self, arena: Arena) -> Result<PinnedArena<'_>, CudaError> {
        self.make_current()?;
        // SAFETY: the arena is mapped and stays so while the guard borrows it.
        let rc = unsafe {
            (self.api.cu_mem_host_register)(
                arena.as_ptr().cast(),
                arena.len(),
                CU_MEMHOSTREGISTER_PORTABLE,
            )
        };
        self.api.check("cuMemHostRegister", rc)?;
        Ok(PinnedArena {
            device: self,
            arena,
        })
    }

    /// Allocates `len` bytes of device memory.
    pub fn alloc(&self, len: usize) -> Result<DeviceBuffer<'_>, CudaError> {
        self.make_current()?;
        let mut ptr = 0;
        // SAFETY: writes one device pointer; freed in DeviceBuffer's Drop.
        self.api.check("cuMemAlloc", unsafe {
            (self.api.cu_mem_alloc)(&mut ptr, len.max(1))
        })?;
        Ok(DeviceBuffer {
            device: self,
            ptr,
            len,
        })
    }

    /// A copy lane over the slots of `arena`, `slot_bytes` each.
    pub fn arena_lane<'a>(
        &'a self,
        arena: &'a Arena,
        slots: usize,
        slot_bytes: usize,
    ) -> Result<ArenaLane<'a>, CudaError> {
        Ok(ArenaLane {
            arena,
            slot_bytes,
            lane: self.lane(slots, slot_bytes)?,
        })
    }

    /// A copy lane with `slots` host slots, copying at most `slot_bytes` each.
    pub fn lane(&self, slots: usize, slot_bytes: usize) -> Result<CopyLane<'_>, CudaError> {
        self.make_current()?;
        let api = &self.api;
        let mut lane = CopyLane {
            device: self,
            streams: Vec::new(),
            targets: Vec::new(),
            events: Vec::new(),
            next: 0,
        };
        for _ in 0..2 {
            let mut stream = std::ptr::null_mut();
            // SAFETY: writes one stream handle; destroyed in CopyLane's Drop.
            api.check("cuStreamCreate", unsafe {
                (api.cu_stream_create)(&mut stream, CU_STREAM_NON_BLOCKING)
            })?;
            lane.streams.push(stream);
            lane.targets.push(self.alloc(slot_bytes)?);
        }
        for _ in 0..slots {
            let mut event = std::ptr::null_mut();
            // SAFETY: writes one event handle; destroyed in CopyLane's Drop.
            api.check("cuEventCreate", unsafe {
                (api.cu_event_create)(&mut event, CU_EVENT_DISABLE_TIMING)
            })?;
            lane.events.push(event);
        }
        Ok(lane)
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // SAFETY: releases the reference taken in `open`.
        unsafe { (self.api.cu_primary_ctx_release)(self.ordinal) };
    }
}

fn version_string(version: c_int) -> String {
    format!("{}.{}", version / 1000, version % 1000 / 10)
}

/// Makes a device's primary context current on the calling thread.
#[derive(Debug)]
pub struct ContextBinder {
    api: Arc<CudaApi>,
    context: usize,
}

impl ContextBinder {
    /// Makes the context current; it stays valid while its device is open.
    pub fn bind(&self) -> Result<(), CudaError> {
        // SAFETY: the primary context is retained by the CudaDevice that made
        // this binder, which the caller keeps open while the thread runs.
        self.api.check("cuCtxSetCurrent", unsafe {
            (self.api.cu_ctx_set_current)(self.context as Context)
        })
    }
}

/// An arena pinned with `cuMemHostRegister`; unpinned on drop.
#[derive(Debug)]
pub struct PinnedArena<'a> {
    device: &'a CudaDevice,
    arena: Arena,
}

impl PinnedArena<'_> {
    /// The pinned arena.
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    /// The pinned arena, writable.
    pub fn arena_mut(&mut self) -> &mut Arena {
        &mut self.arena
    }
}

impl Drop for PinnedArena<'_> {
    fn drop(&mut self) {
        // SAFETY: the arena was registered in `pin_arena` and is still mapped.
        unsafe { (self.device.api.cu_mem_host_unregister)(self.arena.as_ptr().cast()) };
    }
}

/// The slots of an arena, `slot_bytes` each, copied to the GPU by index.
///
/// The lane borrows the arena for its whole life, so the arena stays mapped
/// and no safe code writes it; whoever reads into a slot through the
/// arena's raw pointer (the io_uring engine) does so only once
/// [`ArenaLane::is_done`] or [`ArenaLane::wait`] said its copy finished.
#[derive(Debug)]
pub struct ArenaLane<'a> {
    arena: &'a Arena,
    slot_bytes: usize,
    lane: CopyLane<'a>,
}

impl ArenaLane<'_> {
    /// Starts copying the first `len` bytes of slot `slot` to the GPU.
    ///
    /// # Panics
    /// If the slot lies outside the arena (a bug in the caller).
    pub fn copy(&mut self, slot: usize, len: usize) -> Result<(), CudaError> {
        let data = self
            .arena
            .slice(slot * self.slot_bytes, len.min(self.slot_bytes));
        // SAFETY: `data` lies in the arena, which `self` borrows for its
        // whole life (so it stays mapped and no safe code writes it); the
        // slot is read into again only once its copy finished (see the
        // type's docs). An arena pinned by `pin_arena` is copied by DMA.
        unsafe { self.lane.copy(slot, data.as_ptr(), data.len()) }
    }

    /// Whether the last copy out of `slot` finished.
    pub fn is_done(&self, slot: usize) -> Result<bool, CudaError> {
        self.lane.is_done(slot)
    }

    /// Waits for the last copy out of `slot`.
    pub fn wait(&self, slot: usize) -> Result<(), CudaError> {
        self.lane.wait(slot)
    }
}

/// Pinned host slots owned by one reader thread, each copied to the GPU
/// asynchronously while the next is being read into.
#[derive(Debug)]
pub struct Staging<'a> {
    slots: Vec<&'a mut [u8]>,
    lane: CopyLane<'a>,
}

impl<'a> Staging<'a> {
    /// Slots (inside a [`PinnedArena`]) and a lane for them, made current
    /// on the calling thread.
    pub fn new(device: &'a CudaDevice, slots: Vec<&'a mut [u8]>) -> Result<Staging<'a>, CudaError> {
        let slot_bytes = slots.iter().map(|s| s.len()).max().unwrap_or(0);
        let lane = device.lane(slots.len(), slot_bytes)?;
        Ok(Staging { slots, lane })
    }

    /// How many slots there are.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Slot `k`, once its previous copy finished.
    pub fn slot(&mut self, k: usize) -> Result<&mut [u8], CudaError> {
        self.lane.wait(k)?;
        Ok(&mut *self.slots[k])
    }

    /// Starts copying the first `len` bytes of slot `k` to the GPU.
    pub fn start_copy(&mut self, k: usize, len: usize) -> Result<(), CudaError> {
        let len = len.min(self.slots[k].len());
        // SAFETY: the slot is pinned (inside a PinnedArena) and borrowed by
        // `self` for its whole life; it is only written again through
        // `slot`, which waits for this copy first, and Drop drains the lane.
        unsafe { self.lane.copy(k, self.slots[k].as_ptr(), len) }
    }
}

/// Device memory; freed on drop.
#[derive(Debug)]
pub struct DeviceBuffer<'a> {
    device: &'a CudaDevice,
    ptr: DevicePtr,
    len: usize,
}

impl DeviceBuffer<'_> {
    /// The device address.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Copies the first `out.len()` bytes to host memory (for `--verify`).
    pub fn copy_to_host(&self, out: &mut [u8]) -> Result<(), CudaError> {
        let len = out.len().min(self.len);
        // SAFETY: `out` is writable for `len` bytes, the device buffer holds at least `len`.
        let rc =
            unsafe { (self.device.api.cu_memcpy_dtoh)(out.as_mut_ptr().cast(), self.ptr, len) };
        self.device.api.check("cuMemcpyDtoH", rc)
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: frees the allocation made in `alloc`; no copy targets it
        // any more (lanes synchronise before dropping their buffers).
        unsafe { (self.device.api.cu_mem_free)(self.ptr) };
    }
}

/// Double-buffered asynchronous host-to-device copies for one worker.
#[derive(Debug)]
pub struct CopyLane<'a> {
    device: &'a CudaDevice,
    streams: Vec<Stream>,
    targets: Vec<DeviceBuffer<'a>>,
    events: Vec<Event>,
    next: usize,
}

impl CopyLane<'_> {
    /// Starts copying `len` bytes of host slot `slot` at `src` to the GPU.
    /// The slot must not be written until [`CopyLane::is_done`] says so.
    ///
    /// # Safety
    /// `src..src+len` must be pinned memory that stays unchanged until the
    /// copy is done.
    pub unsafe fn copy(
        &mut self,
        slot: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), CudaError> {
        let api = &self.device.api;
        let lane = self.next;
        self.next = (self.next + 1) % self.streams.len();
        let len = len.min(self.targets[lane].len);
        // SAFETY: the caller keeps `src` valid; the target holds `len` bytes;
        // the stream belongs to this lane.
        let rc = unsafe {
            (api.cu_memcpy_htod_async)(self.targets[lane].ptr, src.cast(), len, self.streams[lane])
        };
        api.check("cuMemcpyHtoDAsync", rc)?;
        // SAFETY: event and stream are live handles of this lane.
        api.check("cuEventRecord", unsafe {
            (api.cu_event_record)(self.events[slot], self.streams[lane])
        })
    }

    /// Whether the last copy out of `slot` finished.
    pub fn is_done(&self, slot: usize) -> Result<bool, CudaError> {
        // SAFETY: queries a live event of this lane.
        match unsafe { (self.device.api.cu_event_query)(self.events[slot]) } {
            CUDA_ERROR_NOT_READY => Ok(false),
            rc => self.device.api.check("cuEventQuery", rc).map(|()| true),
        }
    }

    /// Waits for the last copy out of `slot`.
    pub fn wait(&self, slot: usize) -> Result<(), CudaError> {
        // SAFETY: waits on a live event of this lane.
        self.device.api.check("cuEventSynchronize", unsafe {
            (self.device.api.cu_event_synchronize)(self.events[slot])
        })
    }
}

impl Drop for CopyLane<'_> {
    fn drop(&mut self) {
        let api = &self.device.api;
        for &stream in &self.streams {
            // SAFETY: drains and destroys streams created in `lane`.
            unsafe {
                (api.cu_stream_synchronize)(stream);
                (api.cu_stream_destroy)(stream);
            }
        }
        for &event in &self.events {
            // SAFETY: destroys events created in `lane`; their streams are drained.
            unsafe { (api.cu_event_destroy)(event) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_library_is_a_reason_not_a_panic() {
        let err = CudaApi::load_from("libzerohop-absent-cuda.so.1").unwrap_err();
        assert!(err.0.contains("CUDA driver library not found"), "{err}");
        assert!(err.0.contains("libzerohop-absent-cuda.so.1"), "{err}");
    }

    #[test]
    fn a_library_without_the_driver_api_is_refused() {
        // libc is always there and has none of the driver's symbols.
        let err = CudaApi::load_from("libc.so.6").unwrap_err();
        assert!(err.0.contains("has no cuInit"), "{err}");
    }

    #[test]
    fn versions_print_like_nvidia_smi() {
        assert_eq!(version_string(12080), "12.8");
        assert_eq!(version_string(13000), "13.0");
    }
}
