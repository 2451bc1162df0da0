//! The few libc calls the engine makes outside buffers and io_uring:
//! CPU accounting and page-cache advice.
#![expect(unsafe_code, reason = "getrusage, posix_fadvise and setenv")]

use std::io;
use std::os::fd::AsRawFd;
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

/// Points libcufile's log at `path` instead of the working directory.
///
/// Called on the main thread before any worker or watchdog thread exists,
/// and before libcufile is opened, so nothing reads the environment
/// concurrently.
pub fn set_cufile_log(path: &std::path::Path) {
    // SAFETY: see above: no other thread of this process is running code
    // that reads the environment at this point.
    unsafe { std::env::set_var("CUFILE_LOGFILE_PATH", path) };
}

#[cfg(test)]
mod tests {
    use super::*;

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
