//! A snapshot in memory, and recording one from a host.

use std::time::{SystemTime, UNIX_EPOCH};

use zerohop_core::Report;
use zerohop_core::report::rfc3339;
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

/// Where the kernel gives the host's name.
const HOSTNAME: &str = "/proc/sys/kernel/hostname";

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
        // The host's name is recorded too, though no check reads it: the
        // commands that read the snapshot title their drawing and page with
        // it as they do on the live host (`--redact` replaces it there as in
        // every other file).
        let _ = recording_root.read_value(HOSTNAME);
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
                hostname: value(HOSTNAME),
                kernel_release: value("/proc/sys/kernel/osrelease"),
                root: root.display(),
                live: root.process().is_live(),
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
