//! The few libc calls the engine makes outside buffers and io_uring:
//! CPU accounting, page-cache advice, descriptor flags, free space and
//! renames that must not replace.
#![expect(
    unsafe_code,
    reason = "getrusage, posix_fadvise, fcntl, statvfs, renameat2 and setenv"
)]

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

/// User and system CPU time consumed so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    /// Time spent in user mode.
    pub user: Duration,
    /// Time spent in the kernel.
    pub system: Duration,
}

impl CpuTimes {
    /// The time spent between `earlier` and `self`.
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    /// Adds another measurement.
    pub fn plus(self, other: CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user + other.user,
            system: self.system + other.system,
        }
    }
}

/// Whose CPU time to read.
#[derive(Debug, Clone, Copy)]
pub enum Who {
    /// The whole process, including io_uring's kernel worker threads.
    Process,
    /// The calling thread only.
    Thread,
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::new(
        tv.tv_sec.max(0) as u64,
        (tv.tv_usec.clamp(0, 999_999) * 1000) as u32,
    )
}

/// Reads `getrusage` for the process or the calling thread.
pub fn cpu_times(who: Who) -> CpuTimes {
    let flag = match who {
        Who::Process => libc::RUSAGE_SELF,
        Who::Thread => libc::RUSAGE_THREAD,
    };
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`; getrusage only writes it.
    let rc = unsafe { libc::getrusage(flag, &mut usage) };
    if rc != 0 {
        // getrusage fails only for an invalid `who`, which cannot happen here.
        return CpuTimes::default();
    }
    CpuTimes {
        user: timeval(usage.ru_utime),
        system: timeval(usage.ru_stime),
    }
}

/// Asks the kernel to drop the clean cached pages of `file`, so that a
/// buffered run starts cold. Needs no privilege; dirty pages stay.
pub fn drop_cached_pages(file: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: posix_fadvise only takes a descriptor we own and plain integers.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Clears `O_NONBLOCK` on `file`.
///
/// Targets are opened non-blocking so that a FIFO or a device swapped in
/// after the `stat` cannot hold the open; once `fstat` has shown a regular
/// file or a block device, the reads must see exactly the descriptor fio
/// would (io_uring treats a non-blocking descriptor differently).
pub fn set_blocking(file: &impl AsRawFd) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor we own reads its status flags only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL on a descriptor we own changes its status flags only.
    let rc = unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// Bytes an unprivileged user may still write on the filesystem holding
/// `dir` (`statvfs`: available blocks × fragment size).
pub fn available_bytes(dir: &Path) -> io::Result<u64> {
    let path = c_path(dir)?;
    // SAFETY: an all-zero `statvfs` is a valid value of this plain C struct.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `stat` is valid and writable;
    // statvfs only writes `stat`.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // The field types are platform aliases (`fsblkcnt_t`, `c_ulong`).
    Ok((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

/// Renames `from` to `to` unless `to` exists (`RENAME_NOREPLACE`): the
/// error is then `AlreadyExists`. Filesystems without the flag answer
/// `EINVAL`, which the caller handles.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    const RENAME_NOREPLACE: libc::c_uint = 1;
    let (from, to) = (c_path(from)?, c_path(to)?);
    // SAFETY: both paths are NUL-terminated strings that outlive the call;
    // renameat2 only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Points libcufile's log at `path` instead of the working directory.
///
/// Only [`crate::gpu::cufile::log_outside_working_dir`] calls it, whose
/// callers do so before the process starts any thread.
pub(crate) fn set_cufile_log(path: &Path) {
    // SAFETY: called before any other thread of this process exists (see
    // `log_outside_working_dir`), so nothing reads the environment
    // concurrently.
    unsafe { std::env::set_var("CUFILE_LOGFILE_PATH", path) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_is_reported_for_a_real_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert!(available_bytes(dir.path()).unwrap() > 0);
        let missing = available_bytes(&dir.path().join("missing")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_noreplace_rename_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "new").unwrap();
        std::fs::write(&b, "old").unwrap();
        match rename_noreplace(&a, &b) {
            Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {
                eprintln!("this filesystem has no RENAME_NOREPLACE");
                return;
            }
            other => assert_eq!(other.unwrap_err().kind(), io::ErrorKind::AlreadyExists),
        }
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "old");
        std::fs::remove_file(&b).unwrap();
        rename_noreplace(&a, &b).unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new");
    }

    #[test]
    fn a_descriptor_is_made_blocking() {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .unwrap();
        set_blocking(&file).unwrap();
        // SAFETY: F_GETFL on a descriptor this test owns.
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0);
    }

    #[test]
    fn thread_cpu_time_grows_with_work() {
        let before = cpu_times(Who::Thread);
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let spent = cpu_times(Who::Thread).since(before);
        assert!(
            spent.user + spent.system > Duration::ZERO,
            "no cpu time after 30 ms of work ({x})"
        );
    }
}
