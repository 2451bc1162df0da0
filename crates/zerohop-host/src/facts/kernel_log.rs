//! The kernel log as a fact: the records of a recent window, where the
//! faults that leave no other trace show (a peer-memory client that
//! failed, a flapping link, a silent NFS server, an AER error).
//!
//! Where the records come from:
//! - the live host: `/dev/kmsg`, read without waiting
//!   ([`HostRoot::read_kmsg`]); the window ends now (`/proc/uptime`).
//! - `--root DIR`: the capture at `DIR`[`CAPTURE`] when present, in any
//!   format [`parse::kmsg`](crate::parse::kmsg) reads (`cat /dev/kmsg`,
//!   `dmesg` with any of its time formats, `journalctl -k`, a syslog
//!   file); the window ends at its last record. Without a capture, a
//!   `DIR` that shows the running kernel (its boot id is this process's:
//!   the host's `/` mounted at `/host`) is read live as above, since the
//!   kernel log is not namespaced. Any other `DIR` has no kernel log.
//!
//! - a snapshot recorded where `/dev/kmsg` was read: the window the
//!   recording read, kept at [`CAPTURE`] in the device's format and marked
//!   as read live ([`LiveLog`](crate::memory::LiveLog)), judged as on the
//!   host (the window ends at the recorded uptime, records are located
//!   by their sequence numbers). Unpacked and read with `--root`, it is an
//!   ordinary capture.
//!
//! No readable log is a [`Gap`], so that the checks say `unknown`, never
//! `pass`.

use std::time::Duration;

use zerohop_known::kernel_log::DEFAULT_WINDOW_SECS;

use crate::facts::{Gap, GapKind};
use crate::parse::kmsg::{self, Record, Stamp};
use crate::process::Environment;
use crate::root::{HostRoot, IoKind, ReadError};

pub use crate::kmsg_device::CAPTURE;

/// The most bytes read from the end of a capture: twice the largest ring
/// buffer distributions configure (`CONFIG_LOG_BUF_SHIFT=22`, 4 MiB).
pub const CAPTURE_CAP: usize = 8 << 20;

/// The window when none is given: 24 hours, the window of Azure's node
/// health checks for link flaps.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(DEFAULT_WINDOW_SECS);

/// The running kernel's time since boot, the end of a live window.
const UPTIME: &str = "/proc/uptime";

/// The boot's identity, which tells a root of the running kernel from
/// another's.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// The records of the kernel log inside a window.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KernelLog {
    /// Where the records were read: the device (`/dev/kmsg`,
    /// `/host/dev/kmsg`) or the capture's host path.
    pub source: String,
    /// Whether they come from the running kernel rather than a capture.
    pub live: bool,
    /// The records inside the window, oldest first.
    pub records: Vec<Record>,
    /// The window asked for.
    pub window: Duration,
    /// Where the window ends: now on the running kernel, the last record
    /// of a capture. `None` when no record carries a time: every record
    /// is then inside.
    pub end: Option<Stamp>,
    /// The bytes at the head of a capture that were not read.
    pub skipped_bytes: u64,
    /// What the window may lack, as lowercase fragments: records dropped
    /// past a cap, overwritten while read, a read cut short.
    pub notes: Vec<String>,
}

impl KernelLog {
    /// Reads the kernel log of `root`, the records of the last `window`.
    pub fn collect(root: &HostRoot, window: Duration) -> Result<KernelLog, Gap> {
        // A snapshot recorded where the device was read keeps that window
        // (and the uptime that ended it): judged as it was on the host.
        if root.process().is_live() || root.replays_kernel_log() {
            return live(root, window);
        }
        match root.read_tail(CAPTURE, CAPTURE_CAP) {
            Ok(Some(tail)) => Ok(capture(tail.bytes, tail.skipped, window)),
            Ok(None) => match root.shows_running_kernel() {
                Ok(true) => live(root, window),
                Ok(false) => Err(not_this_kernel(root)),
                Err(err) => Err(Gap::from(err)),
            },
            Err(err) => Err(Gap::from(err)),
        }
    }

    /// The window as a message says it: `in the last 24h`.
    pub fn span(&self) -> String {
        let window = duration_text(self.window);
        match (self.end, self.live) {
            (None, _) => "in the whole log (its lines carry no time)".to_owned(),
            (Some(_), true) => format!("in the last {window}"),
            (Some(end), false) => format!("in the last {window} of the capture (to {end})"),
        }
    }

    /// Where `record` was read, for evidence: `/dev/kmsg seq 812`, or
    /// `/var/log/zerohop/kmsg:3`.
    pub fn locate(&self, record: &Record) -> String {
        match record.seq {
            Some(seq) if self.live => format!("{} seq {seq}", self.source),
            _ if self.skipped_bytes > 0 => format!(
                "{}, line {} of its last {} MiB",
                self.source,
                record.line,
                CAPTURE_CAP >> 20
            ),
            _ => format!("{}:{}", self.source, record.line),
        }
    }
}

/// Why a root without a capture has no log: it has no boot id to
/// compare, or another boot's.
/// Each says which, so that a report never claims a boot id it did not
/// read.
fn not_this_kernel(root: &HostRoot) -> Gap {
    // A snapshot answers as the root it recorded did, boot id included.
    match root.read_value(BOOT_ID) {
        Ok(Some(id)) if !id.is_empty() => Gap::new(
            CAPTURE,
            GapKind::Missing,
            "no kernel log: the root holds no capture there, and it is not the running kernel's (its boot id differs), so /dev/kmsg would describe another host",
        ),
        Ok(_) => Gap::new(
            CAPTURE,
            GapKind::Missing,
            "no kernel log: the root holds no capture there, and no boot id (/proc/sys/kernel/random/boot_id) that would show it is the running kernel's",
        ),
        Err(err) => Gap::new(
            CAPTURE,
            GapKind::of(&err),
            format!(
                "no kernel log: the root holds no capture there, and its boot id, which would show whether it is the running kernel's, is unreadable ({err})"
            ),
        ),
    }
}

/// The running kernel's log through `/dev/kmsg`. The window ends at the
/// uptime: the printk clock counts from boot as `/proc/uptime` does, but
/// not the time suspended, so on a host that was suspended the window
/// reaches that much less far back.
fn live(root: &HostRoot, window: Duration) -> Result<KernelLog, Gap> {
    // A directory without its `/proc` that shows this process's kernel
    // has this process's uptime; a snapshot's kernel is gone.
    let now = uptime(root).or_else(|| {
        (root.process().environment() == Environment::Directory)
            .then(|| uptime(&HostRoot::live()))?
    });
    let window_micros = u64::try_from(window.as_micros()).unwrap_or(u64::MAX);
    let since = now.map_or(0, |now| now.saturating_sub(window_micros));
    let read = match root.read_kmsg(since) {
        Ok(Some(read)) => read,
        Ok(None) => {
            return Err(Gap::new(
                "/dev/kmsg",
                GapKind::Missing,
                "no /dev/kmsg here (a container without the host's /dev): the kernel log cannot be read",
            ));
        }
        Err(err) => return Err(unreadable(err)),
    };
    let parsed = kmsg::parse(&read.text);
    let mut notes = Vec::new();
    notes.extend(read.cut);
    if read.overrun {
        notes.push("the ring buffer overwrote records while they were read".to_owned());
    }
    if parsed.dropped > 0 {
        notes.push(dropped_note(parsed.dropped));
    }
    // Records stamped after the uptime read (logged meanwhile, or a clock
    // running ahead) move the end with them.
    let last = parsed.records.iter().rev().find_map(|r| r.time);
    let end = match (now, last) {
        (Some(now), Some(Stamp::Boot(last))) => Some(Stamp::Boot(now.max(last))),
        (Some(now), _) => Some(Stamp::Boot(now)),
        (None, last) => last,
    };
    Ok(KernelLog {
        source: read.path,
        live: true,
        records: inside(parsed.records, window, end),
        window,
        end,
        skipped_bytes: 0,
        notes,
    })
}

/// A captured log: the window ends at its last record with a time.
fn capture(bytes: Vec<u8>, skipped: u64, window: Duration) -> KernelLog {
    let text = String::from_utf8_lossy(&bytes);
    // Reading from the middle of a file starts in the middle of a line.
    let text = match (skipped, text.split_once('\n')) {
        (0, _) | (_, None) => &text[..],
        (_, Some((_, rest))) => rest,
    };
    let parsed = kmsg::parse(text);
    let mut notes = Vec::new();
    if skipped > 0 {
        notes.push(format!(
            "only the last {} MiB of the capture were read ({skipped} bytes before them were not)",
            CAPTURE_CAP >> 20
        ));
    }
    if parsed.dropped > 0 {
        notes.push(dropped_note(parsed.dropped));
    }
    let end = parsed.records.iter().rev().find_map(|r| r.time);
    KernelLog {
        source: CAPTURE.to_owned(),
        live: false,
        records: inside(parsed.records, window, end),
        window,
        end,
        skipped_bytes: skipped,
        notes,
    }
}

/// The records inside the window ending at `end`; all of them without an end.
fn inside(records: Vec<Record>, window: Duration, end: Option<Stamp>) -> Vec<Record> {
    let Some(end) = end else {
        return records;
    };
    records
        .into_iter()
        .filter(|record| record.time.is_some_and(|time| time.within(window, end)))
        .collect()
}

fn dropped_note(dropped: usize) -> String {
    format!(
        "only the newest {} records were kept ({dropped} older ones were not)",
        kmsg::MAX_RECORDS
    )
}

/// Microseconds since boot, from `/proc/uptime`; `None` when unreadable.
fn uptime(root: &HostRoot) -> Option<u64> {
    let text = root.read_value(UPTIME).ok()??;
    let seconds: f64 = text.split_whitespace().next()?.parse().ok()?;
    let uptime = Duration::try_from_secs_f64(seconds).ok()?;
    u64::try_from(uptime.as_micros()).ok()
}

/// A read error of the log device, with what it takes to read it.
fn unreadable(err: ReadError) -> Gap {
    let mut gap = Gap::from(err);
    if gap.kind == GapKind::Io(IoKind::PermissionDenied) {
        gap.reason.push_str(
            ": reading the kernel log takes root or CAP_SYSLOG (with kernel.dmesg_restrict=1), and in a container the device (privileged, or the host's /dev mounted)",
        );
    }
    gap
}

/// `24h`, `90m`, `45s`, `1500ms`, `10us`: the largest unit that writes
/// the window exactly.
pub fn duration_text(duration: Duration) -> String {
    const UNITS: [(u128, &str); 5] = [
        (3_600_000_000, "h"),
        (60_000_000, "m"),
        (1_000_000, "s"),
        (1_000, "ms"),
        (1, "us"),
    ];
    let micros = duration.as_micros();
    let (size, unit) = UNITS
        .into_iter()
        .find(|(size, _)| micros.is_multiple_of(*size) && micros >= *size)
        .unwrap_or((1_000_000, "s"));
    format!("{}{unit}", micros / size)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;

    fn root_with(capture: Option<&[u8]>) -> (tempfile::TempDir, HostRoot) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proc")).unwrap();
        if let Some(bytes) = capture {
            let path = dir.path().join(CAPTURE.trim_start_matches('/'));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, bytes).unwrap();
        }
        let root = HostRoot::at(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn a_capture_window_ends_at_its_last_record() {
        let text = b"6,1,1000000,-;old\n6,2,7000000000,-;inside\n6,3,7200000000,-;last\n";
        let (_dir, root) = root_with(Some(text));
        let log = KernelLog::collect(&root, Duration::from_secs(3600)).unwrap();
        // 7200 s is the end: 7000 s lies within an hour of it, 1 s does not.
        let kept: Vec<&str> = log.records.iter().map(Record::message).collect();
        assert_eq!(kept, ["inside", "last"]);
        assert_eq!(log.end, Some(Stamp::Boot(7_200_000_000)));
        assert!(!log.live);
        assert_eq!(log.locate(&log.records[0]), "/var/log/zerohop/kmsg:2");
        assert_eq!(
            log.span(),
            "in the last 1h of the capture (to 7200.000000 s after boot)"
        );
    }

    #[test]
    fn a_capture_without_times_is_read_whole() {
        let (_dir, root) = root_with(Some(b"first\nsecond\n"));
        let log = KernelLog::collect(&root, DEFAULT_WINDOW).unwrap();
        assert_eq!(log.records.len(), 2);
        assert_eq!(log.end, None);
        assert!(log.span().contains("whole log"));
    }

    #[test]
    fn a_root_without_a_capture_or_a_boot_id_says_so() {
        let (_dir, root) = root_with(None);
        let gap = KernelLog::collect(&root, DEFAULT_WINDOW).unwrap_err();
        assert_eq!(gap.path, CAPTURE);
        assert_eq!(gap.kind, GapKind::Missing);
        // No boot id was read: none is claimed to differ.
        assert!(gap.reason.contains("no boot id"), "{}", gap.reason);
        assert!(!gap.reason.contains("differs"), "{}", gap.reason);
    }

    #[test]
    fn another_boots_root_without_a_capture_has_no_log() {
        let (dir, root) = root_with(None);
        let path = dir.path().join("proc/sys/kernel/random");
        fs::create_dir_all(&path).unwrap();
        fs::write(
            path.join("boot_id"),
            "00000000-0000-0000-0000-000000000000\n",
        )
        .unwrap();
        let gap = KernelLog::collect(&root, DEFAULT_WINDOW).unwrap_err();
        assert_eq!(gap.kind, GapKind::Missing);
        assert!(gap.reason.contains("boot id differs"), "{}", gap.reason);
    }

    #[test]
    fn a_denied_device_says_what_reading_it_takes() {
        let denied = ReadError::Io {
            path: "/dev/kmsg".to_owned(),
            kind: IoKind::PermissionDenied,
            message: "permission denied".to_owned(),
        };
        let gap = unreadable(denied);
        assert_eq!(gap.kind, GapKind::Io(IoKind::PermissionDenied));
        assert!(gap.reason.contains("CAP_SYSLOG"), "{gap}");
        // The kind decides, not the wording of the message.
        let other = ReadError::Io {
            path: "/dev/kmsg".to_owned(),
            kind: IoKind::Other,
            message: "permission denied".to_owned(),
        };
        assert!(!unreadable(other).reason.contains("CAP_SYSLOG"));
    }

    #[test]
    fn a_root_with_this_boot_id_reads_the_running_kernel() {
        let Ok(boot_id) = fs::read_to_string("/proc/sys/kernel/random/boot_id") else {
            return;
        };
        let (dir, root) = root_with(None);
        let path = dir.path().join("proc/sys/kernel/random");
        fs::create_dir_all(&path).unwrap();
        fs::write(path.join("boot_id"), &boot_id).unwrap();
        assert!(root.shows_running_kernel().unwrap());
        // Read live: records, or a gap naming the device, never the capture.
        match KernelLog::collect(&root, DEFAULT_WINDOW) {
            Ok(log) => assert!(log.live && log.source.ends_with("/dev/kmsg")),
            Err(gap) => assert!(gap.path.ends_with("/dev/kmsg"), "{gap}"),
        }
    }

    #[test]
    fn a_huge_capture_is_read_from_its_end() {
        let mut text = Vec::new();
        let mut seq = 0u64;
        while text.len() < CAPTURE_CAP + (1 << 20) {
            seq += 1;
            text.extend_from_slice(format!("6,{seq},{seq}000000,-;record {seq}\n").as_bytes());
        }
        let (_dir, root) = root_with(Some(&text));
        let log = KernelLog::collect(&root, Duration::from_secs(60)).unwrap();
        assert!(log.skipped_bytes > 0);
        assert!(log.notes.iter().any(|n| n.contains("last 8 MiB")));
        let last = log.records.last().unwrap();
        assert_eq!(last.message(), format!("record {seq}"));
        // One record per second: a minute's window holds 61 of them.
        assert_eq!(log.records.len(), 61);
        assert!(log.locate(last).contains("of its last 8 MiB"));
    }

    #[test]
    fn a_fifo_at_the_capture_path_is_refused_without_waiting() {
        let (dir, root) = root_with(None);
        let path = dir.path().join(CAPTURE.trim_start_matches('/'));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let started = std::time::Instant::now();
        let gap = KernelLog::collect(&root, DEFAULT_WINDOW).unwrap_err();
        assert_eq!(gap.kind, GapKind::NotRegular, "{gap}");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(Path::new(&path).exists());
    }

    #[test]
    fn binary_garbage_is_read_as_text_without_panic() {
        let garbage: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let (_dir, root) = root_with(Some(&garbage));
        let log = KernelLog::collect(&root, DEFAULT_WINDOW).unwrap();
        assert!(!log.records.is_empty());
    }

    #[test]
    fn windows_are_written_shortly() {
        assert_eq!(duration_text(Duration::from_secs(86_400)), "24h");
        assert_eq!(duration_text(Duration::from_secs(90 * 60)), "90m");
        assert_eq!(duration_text(Duration::from_secs(45)), "45s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1500ms");
        assert_eq!(duration_text(Duration::from_micros(10)), "10us");
        assert_eq!(duration_text(Duration::ZERO), "0s");
    }
}
