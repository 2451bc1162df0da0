//! The one device node zerohop opens: `/dev/kmsg`, the running kernel's log.
//!
//! Everywhere else a device node is refused before it is opened, because
//! opening one runs its driver. `/dev/kmsg` is the exception, kept narrow:
//! only a character device whose number is the kernel log's (1:11, `mem`
//! minor 11 in `Documentation/admin-guide/devices.txt`) is opened, checked
//! again once open, and only when the root shows the kernel this process
//! runs on ([`HostRoot::shows_running_kernel`]), so that the log read is the
//! log of the host being judged.
//!
//! The device is opened non-blocking and read one record per `read(2)`
//! until `EAGAIN` (`devkmsg_read()` in `kernel/printk/printk.c`): the read
//! never waits for new records. Records older than the window are skipped
//! as they come, at most [`MAX_BYTES`] of the newest are kept, and the read
//! stops after its time budget, well inside the root's read deadline.
//!
//! [`HostRoot::shows_running_kernel`]: crate::HostRoot::shows_running_kernel

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::read_error::{FileKind, IoKind, ReadError};

/// The kernel log device's path on a host.
pub(crate) const KMSG: &str = "/dev/kmsg";

/// Where a capture of the kernel log is read under `--root DIR`, and where
/// a recording keeps what the device gave, in the device's format.
pub const CAPTURE: &str = "/var/log/zerohop/kmsg";

/// The most bytes of records kept from one read of the device; the oldest
/// records of the window are dropped past it.
pub(crate) const MAX_BYTES: usize = 4 << 20;

/// One record is at most `CONSOLE_EXT_LOG_MAX` (8 KiB) with its dictionary;
/// a smaller buffer makes the read fail with `EINVAL`.
const RECORD_BUFFER: usize = 16 << 10;

/// What a read of `/dev/kmsg` brought.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmsgRead {
    /// The device node read (`/dev/kmsg`, or `/host/dev/kmsg` for a host
    /// mounted at `/host`).
    pub path: String,
    /// The records of the window, in `/dev/kmsg` format, oldest first.
    pub text: String,
    /// Records were overwritten in the ring buffer while it was read.
    pub overrun: bool,
    /// Why the read stopped before the newest record, or left records of
    /// the window out.
    pub cut: Option<String>,
}

/// Reads the records logged at `since_usec` (microseconds since boot) or
/// later from this process's `/dev/kmsg`, then from the one under `host`,
/// the directory that stands for the host's `/` when the reader is beside
/// one (a host mounted at `/host`, whose `/dev` holds the device when the
/// container's does not). `Ok(None)` when neither exists.
pub(crate) fn read(
    host: Option<&Path>,
    since_usec: u64,
    budget: Duration,
) -> Result<Option<KmsgRead>, ReadError> {
    let mut candidates = vec![PathBuf::from(KMSG)];
    if let Some(host) = host {
        candidates.push(host.join(KMSG.trim_start_matches('/')));
    }
    let mut failure = None;
    for path in candidates {
        match read_device(&path, since_usec, budget) {
            Ok(Some(read)) => return Ok(Some(read)),
            Ok(None) => {}
            Err(err) => failure = Some(err),
        }
    }
    failure.map_or(Ok(None), Err)
}

fn read_device(
    path: &Path,
    since_usec: u64,
    budget: Duration,
) -> Result<Option<KmsgRead>, ReadError> {
    let shown = path.display().to_string();
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(ReadError::io(&shown, &err)),
    };
    if !meta.file_type().is_char_device() || meta.rdev() != kernel_log_device() {
        return Err(match FileKind::from_mode(meta.mode()) {
            Some(kind) if kind != FileKind::CharDevice => ReadError::NotAFile { path: shown, kind },
            _ => not_the_log(&shown),
        });
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|err| ReadError::io(&shown, &err))?;
    // What was opened, not what was looked at: a node swapped in between
    // is not read.
    let stat = rustix::fs::fstat(&file).map_err(|err| ReadError::io(&shown, &err.into()))?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFCHR || stat.st_rdev != kernel_log_device() {
        return Err(not_the_log(&shown));
    }
    read_records(file, &shown, since_usec, budget).map(Some)
}

fn kernel_log_device() -> u64 {
    rustix::fs::makedev(1, 11)
}

fn read_records(
    mut file: File,
    shown: &str,
    since_usec: u64,
    budget: Duration,
) -> Result<KmsgRead, ReadError> {
    let started = Instant::now();
    let mut buffer = vec![0u8; RECORD_BUFFER];
    let mut records: VecDeque<String> = VecDeque::new();
    let mut kept = 0usize;
    let mut overrun = false;
    let mut cut = None;
    loop {
        if started.elapsed() > budget {
            cut = Some(format!(
                "stopped after {:.1} s while the kernel kept logging: the newest records were not read",
                budget.as_secs_f64()
            ));
            break;
        }
        let length = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(length) => length,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            // The ring buffer overwrote records not yet read; the next read
            // goes on from the oldest one left.
            Err(err) if err.raw_os_error() == Some(libc::EPIPE) => {
                overrun = true;
                continue;
            }
            Err(err) if records.is_empty() => return Err(ReadError::io(shown, &err)),
            Err(err) => {
                cut = Some(format!("the read failed part way: {}", err.kind()));
                break;
            }
        };
        let mut record = String::from_utf8_lossy(&buffer[..length]).into_owned();
        if usec(&record).is_some_and(|usec| usec < since_usec) {
            continue;
        }
        // Counted with its line end, so that the text kept is at most
        // `MAX_BYTES`.
        if !record.ends_with('\n') {
            record.push('\n');
        }
        kept += record.len();
        records.push_back(record);
        while kept > MAX_BYTES {
            let Some(oldest) = records.pop_front() else {
                break;
            };
            kept -= oldest.len();
            cut = Some(format!(
                "only the newest {} MiB of the window's records were kept",
                MAX_BYTES >> 20
            ));
        }
    }
    let mut text = String::with_capacity(kept);
    for record in records {
        text.push_str(&record);
    }
    Ok(KmsgRead {
        path: shown.to_owned(),
        text,
        overrun,
        cut,
    })
}

/// The timestamp of a record's `prio,seq,usec,flags;` header.
fn usec(record: &str) -> Option<u64> {
    let head = record.split_once(';')?.0;
    head.split(',').nth(2)?.parse().ok()
}

fn not_the_log(shown: &str) -> ReadError {
    ReadError::Io {
        path: shown.to_owned(),
        kind: IoKind::Other,
        message: "not the kernel log device (character device 1:11), not opened".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_kernel_log_device_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("kmsg");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        // A FIFO would block its reader: refused before it is opened.
        assert!(matches!(
            read_device(&fifo, 0, Duration::from_secs(1)),
            Err(ReadError::NotAFile {
                kind: FileKind::Fifo,
                ..
            })
        ));
        fs::write(dir.path().join("file"), "6,1,2,-;x\n").unwrap();
        assert!(read_device(&dir.path().join("file"), 0, Duration::from_secs(1)).is_err());
        assert_eq!(
            read_device(&dir.path().join("absent"), 0, Duration::from_secs(1)),
            Ok(None)
        );
        // `/dev/null` is a character device, but not the log.
        if Path::new("/dev/null").exists() {
            let err = read_device(Path::new("/dev/null"), 0, Duration::from_secs(1)).unwrap_err();
            assert!(err.to_string().contains("not the kernel log"), "{err}");
        }
    }

    #[test]
    fn the_live_log_reads_without_blocking() {
        let readable = File::open(KMSG).is_ok();
        let started = Instant::now();
        let read = read_device(Path::new(KMSG), 0, Duration::from_secs(1));
        assert!(started.elapsed() < Duration::from_secs(2));
        if !readable {
            // No device (a container), or no permission: never records.
            assert!(!matches!(read, Ok(Some(_))), "{read:?}");
            return;
        }
        // Where this process may read the log (root, or CAP_SYSLOG when
        // `kernel.dmesg_restrict` is set), every line is a record.
        let read = read.expect("a readable device").expect("present");
        let parsed = crate::parse::kmsg::parse(&read.text);
        assert!(!parsed.records.is_empty());
        assert!(
            parsed
                .records
                .iter()
                .all(|r| r.format == crate::parse::kmsg::Format::Kmsg),
            "{}",
            read.text.lines().next().unwrap_or("")
        );
    }

    #[test]
    fn headers_give_the_time() {
        assert_eq!(usec("6,3973,227996636,-;x\n"), Some(227_996_636));
        assert_eq!(usec("garbage"), None);
    }
}
