//! cuFile (GPUDirect Storage), loaded from `libcufile.so.0` at run time and
//! opened only after CUDA found a GPU.
//!
//! `cuFileDriverOpen` has been seen spinning forever on a host without a GPU,
//! so it runs on a watchdog thread: when it does not return in time the mode
//! is skipped with that reason and the thread is left behind.
#![expect(unsafe_code, reason = "calls into libcufile loaded at run time")]

use std::ffi::{c_int, c_void};
use std::os::fd::RawFd;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use libloading::Library;

use super::Unavailable;
use super::cuda::{CudaDevice, DevicePtr};

/// Where libcufile writes its log unless `CUFILE_LOGFILE_PATH` names a file:
/// `zerohop-cufile.log` in the temporary directory (by itself, libcufile
/// writes `cufile.log` into the working directory).
///
/// This sets a variable of the process's environment, which no other thread
/// may read meanwhile (C code reads it without a lock): call it first thing
/// in a command that may open cuFile, before it starts any thread (the bench
/// engine's workers, CUDA's own threads, the host reader's watchdog, a
/// progress bar). The engine itself never changes the environment.
pub fn log_outside_working_dir() {
    if std::env::var_os("CUFILE_LOGFILE_PATH").is_none() {
        crate::sys::set_cufile_log(&std::env::temp_dir().join("zerohop-cufile.log"));
    }
}

/// `CUfileError_t`: the cuFile status and the CUDA status behind it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct FileError {
    err: c_int,
    cu_err: c_int,
}

const CU_FILE_SUCCESS: c_int = 0;
const CU_FILE_HANDLE_TYPE_OPAQUE_FD: c_int = 1;

/// `CUfileDescr_t`.
#[repr(C)]
struct Descr {
    kind: c_int,
    // A union of `int fd` and `void *handle`: pointer-sized and aligned.
    handle: usize,
    fs_ops: *const c_void,
}

type Handle = *mut c_void;

/// Resolved cuFile entry points.
#[derive(Debug)]
pub struct CufileApi {
    library_name: String,
    driver_open: unsafe extern "C" fn() -> FileError,
    driver_close: unsafe extern "C" fn() -> FileError,
    handle_register: unsafe extern "C" fn(*mut Handle, *mut Descr) -> FileError,
    handle_deregister: unsafe extern "C" fn(Handle),
    buf_register: unsafe extern "C" fn(*const c_void, usize, c_int) -> FileError,
    buf_deregister: unsafe extern "C" fn(*const c_void) -> FileError,
    read: unsafe extern "C" fn(Handle, *mut c_void, usize, i64, i64) -> isize,
    get_version: Option<unsafe extern "C" fn(*mut c_int) -> FileError>,
    // Last, so it is unloaded after nothing can call into it.
    _library: Library,
}

fn symbol<T: Copy>(
    library: &Library,
    library_name: &str,
    names: &[&str],
) -> Result<T, Unavailable> {
    for name in names {
        // SAFETY: `T` is the C prototype of `name` from cufile.h (GDS 1.x ABI).
        if let Ok(sym) = unsafe { library.get::<T>(name.as_bytes()) } {
            return Ok(*sym);
        }
    }
    Err(Unavailable(format!(
        "{library_name} has no {}",
        names.join(" or ")
    )))
}

impl CufileApi {
    /// Loads `libcufile.so.0` (what runtime-only installs and the PyPI wheel
    /// ship), else `libcufile.so`.
    pub fn load() -> Result<CufileApi, Unavailable> {
        CufileApi::load_from("libcufile.so.0")
            .or_else(|first| CufileApi::load_from("libcufile.so").map_err(|_| first))
    }

    /// Loads the cuFile API from the library `name`.
    pub fn load_from(name: &str) -> Result<CufileApi, Unavailable> {
        // SAFETY: loading libcufile runs its initialisers, which only set up
        // its own state; the driver is opened later, under a watchdog.
        let library = unsafe { Library::new(name) }
            .map_err(|err| Unavailable(format!("cuFile library not found ({name}: {err}); install the GPUDirect Storage package (libcufile)")))?;
        let l = &library;
        Ok(CufileApi {
            driver_open: symbol(l, name, &["cuFileDriverOpen"])?,
            driver_close: symbol(l, name, &["cuFileDriverClose_v2", "cuFileDriverClose"])?,
            handle_register: symbol(l, name, &["cuFileHandleRegister"])?,
            handle_deregister: symbol(l, name, &["cuFileHandleDeregister"])?,
            buf_register: symbol(l, name, &["cuFileBufRegister"])?,
            buf_deregister: symbol(l, name, &["cuFileBufDeregister"])?,
            read: symbol(l, name, &["cuFileRead"])?,
            get_version: symbol(l, name, &["cuFileGetVersion"]).ok(),
            library_name: name.to_owned(),
            _library: library,
        })
    }

    /// The version the library reports, e.g. `1.13`, when it can.
    pub fn version(&self) -> Option<String> {
        let get_version = self.get_version?;
        let mut version = 0;
        // SAFETY: writes one int.
        let rc = unsafe { get_version(&mut version) };
        (rc.err == CU_FILE_SUCCESS).then(|| format!("{}.{}", version / 1000, version % 1000 / 10))
    }

    /// The loaded library's file name.
    pub fn library_name(&self) -> &str {
        &self.library_name
    }
}

/// An opened cuFile driver; closed on drop.
#[derive(Debug)]
pub struct CufileDriver {
    api: Arc<CufileApi>,
}

/// How long `cuFileDriverOpen` may take before the mode is skipped.
pub const DRIVER_OPEN_TIMEOUT: Duration = Duration::from_secs(15);

impl CufileDriver {
    /// Opens the driver on a watchdog thread with `device`'s context current.
    /// The caller must have found a GPU first (see the module docs).
    pub fn open(
        api: Arc<CufileApi>,
        device: &CudaDevice,
        timeout: Duration,
    ) -> Result<CufileDriver, Unavailable> {
        let (tx, rx) = mpsc::channel();
        let thread_api = Arc::clone(&api);
        // cuFile fails unless the opening thread has a CUDA context current
        // (the `cudaFree(0)` trick); bind the device's primary context there.
        let binder = device.binder();
        std::thread::Builder::new()
            .name("cufile-open".into())
            .spawn(move || {
                if let Err(err) = binder.bind() {
                    let _ = tx.send(Err(err.to_string()));
                    return;
                }
                // SAFETY: cuFileDriverOpen takes no arguments; a CUDA driver
                // with a GPU was found before this thread was started.
                let rc = unsafe { (thread_api.driver_open)() };
                let _ = tx.send(Ok(rc));
            })
            .map_err(|e| Unavailable(format!("cannot start the cuFile watchdog thread: {e}")))?;
        match rx.recv_timeout(timeout) {
            Ok(Ok(rc)) if rc.err == CU_FILE_SUCCESS => Ok(CufileDriver { api }),
            Ok(Ok(rc)) => Err(Unavailable(format!(
                "cuFileDriverOpen failed with cuFile error {} (CUDA {}); check `gdscheck -p`",
                rc.err, rc.cu_err
            ))),
            Ok(Err(reason)) => Err(Unavailable(format!(
                "cannot make the CUDA context current for cuFile: {reason}"
            ))),
            Err(_) => Err(Unavailable(format!(
                "cuFileDriverOpen did not return within {} s (known to spin on hosts where GDS is not set up); the thread is abandoned",
                timeout.as_secs()
            ))),
        }
    }

    /// Registers an open descriptor (normally `O_DIRECT`) with cuFile.
    pub fn register(&self, fd: RawFd) -> Result<FileHandle<'_>, Unavailable> {
        let mut descr = Descr {
            kind: CU_FILE_HANDLE_TYPE_OPAQUE_FD,
            handle: fd as u32 as usize,
            fs_ops: std::ptr::null(),
        };
        let mut handle = std::ptr::null_mut();
        // SAFETY: `descr` describes a descriptor that outlives the handle
        // (the run's targets are closed after the handles are dropped).
        let rc = unsafe { (self.api.handle_register)(&mut handle, &mut descr) };
        if rc.err != CU_FILE_SUCCESS {
            return Err(Unavailable(format!(
                "cuFileHandleRegister failed with cuFile error {} (CUDA {})",
                rc.err, rc.cu_err
            )));
        }
        Ok(FileHandle {
            driver: self,
            handle,
        })
    }

    /// Registers a device buffer for direct transfers; false when cuFile
    /// refused (reads then go through its internal bounce buffers).
    pub fn register_buffer(&self, ptr: DevicePtr, len: usize) -> bool {
        // SAFETY: `ptr` is a live device allocation of `len` bytes; it is
        // deregistered with `deregister_buffer` before being freed.
        let rc = unsafe { (self.api.buf_register)(ptr as *const c_void, len, 0) };
        rc.err == CU_FILE_SUCCESS
    }

    /// Undoes [`CufileDriver::register_buffer`].
    pub fn deregister_buffer(&self, ptr: DevicePtr) {
        // SAFETY: `ptr` was registered by `register_buffer`.
        unsafe { (self.api.buf_deregister)(ptr as *const c_void) };
    }
}

impl Drop for CufileDriver {
    fn drop(&mut self) {
        // SAFETY: closes the driver opened in `open`; handles borrow `self`,
        // so none is left.
        unsafe { (self.api.driver_close)() };
    }
}

/// A file registered with cuFile.
#[derive(Debug)]
pub struct FileHandle<'a> {
    driver: &'a CufileDriver,
    handle: Handle,
}

// SAFETY: cuFile handles may be used from any thread; cuFileRead is thread-safe.
unsafe impl Send for FileHandle<'_> {}
// SAFETY: as above.
unsafe impl Sync for FileHandle<'_> {}

impl FileHandle<'_> {
    /// Reads `len` bytes at `offset` into device memory at `dst`; returns
    /// the bytes read or the negative error cuFile reported.
    pub fn read(&self, dst: DevicePtr, len: usize, offset: u64) -> isize {
        // SAFETY: `dst` is a device allocation of at least `len` bytes owned
        // by the calling worker thread.
        unsafe { (self.driver.api.read)(self.handle, dst as *mut c_void, len, offset as i64, 0) }
    }
}

impl Drop for FileHandle<'_> {
    fn drop(&mut self) {
        // SAFETY: deregisters the handle made in `register`.
        unsafe { (self.driver.api.handle_deregister)(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_library_is_a_reason_not_a_panic() {
        let err = CufileApi::load_from("libzerohop-absent-cufile.so.0").unwrap_err();
        assert!(err.0.contains("cuFile library not found"), "{err}");
    }

    #[test]
    fn a_library_without_cufile_symbols_is_refused() {
        let err = CufileApi::load_from("libc.so.6").unwrap_err();
        assert!(err.0.contains("has no cuFileDriverOpen"), "{err}");
    }

    #[test]
    fn the_descriptor_matches_the_c_layout() {
        assert_eq!(std::mem::size_of::<Descr>(), 24);
        assert_eq!(std::mem::size_of::<FileError>(), 8);
    }
}
