//! A snapshot in memory, and recording one from a host.

use std::time::{SystemTime, UNIX_EPOCH};

use zerohop_core::Report;
use zerohop_doctor::{Profile, Selection};
use zerohop_host::memory::MemoryTree;
use zerohop_host::{Facts, HostRoot};

/// What a snapshot says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// The zerohop that recorded it.
    pub zerohop_version: String,
    /// When, RFC 3339 in UTC.
    pub created_at: String,
    /// When, in seconds since the Unix epoch.
    pub created_unix: u64,
    /// The host's name, when readable.
    pub hostname: Option<String>,
    /// The kernel release, when readable.
    pub kernel_release: Option<String>,
    /// The root the doctor read.
    pub root: String,
    /// Whether that was the live host.
    pub live: bool,
}

/// A recorded host: what the doctor read, its report, and what it is.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// What it is.
    pub meta: Meta,
    /// The doctor's report at recording time, as JSON.
    pub report: Vec<u8>,
    /// What the doctor's pass read.
    pub tree: MemoryTree,
}

/// Why a host could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The root is a snapshot already.
    #[error("{0} is a snapshot already: there is nothing more to record from it")]
    AlreadyASnapshot(String),
}

impl Snapshot {
    /// Records one full doctor pass over `root` at `now`: every path it
    /// reads, the report it gives, the host name and kernel release.
    pub fn capture(root: &HostRoot, now: SystemTime) -> Result<Snapshot, CaptureError> {
        let (recording_root, recording) = root
            .recorded()
            .ok_or_else(|| CaptureError::AlreadyASnapshot(root.display()))?;
        let facts = Facts::collect(&recording_root);
        let report = zerohop_doctor::run(&facts, &Profile::default(), &Selection::all());
        let tree = recording.take();
        // Read apart from the recording: they describe the snapshot, they
        // are not what the doctor read.
        let value = |path: &str| {
            root.read_value(path)
                .ok()
                .flatten()
                .filter(|v| !v.is_empty())
        };
        let created_unix = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        Ok(Snapshot {
            meta: Meta {
                zerohop_version: env!("CARGO_PKG_VERSION").to_owned(),
                created_at: rfc3339(created_unix),
                created_unix,
                hostname: value("/proc/sys/kernel/hostname"),
                kernel_release: value("/proc/sys/kernel/osrelease"),
                root: root.display(),
                live: root.is_live(),
            },
            report: report_json(&report),
            tree,
        })
    }

    /// A root that reads this snapshot, shown as `shown`.
    pub fn root(&self, shown: impl Into<String>) -> HostRoot {
        HostRoot::in_memory(self.tree.clone(), shown)
    }

    /// The report recorded with the snapshot.
    pub fn recorded_report(&self) -> Result<Report, serde_json::Error> {
        serde_json::from_slice(&self.report)
    }
}

/// `report` as `report.json` holds it.
pub(crate) fn report_json(report: &Report) -> Vec<u8> {
    let mut json = serde_json::to_vec_pretty(report).unwrap_or_default();
    json.push(b'\n');
    json
}

/// `seconds` since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // `date -u -d @951782400` = 2000-02-29 00:00:00 (a leap day).
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        // `date -u -d @1767225599` = 2025-12-31 23:59:59.
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
    }
}
