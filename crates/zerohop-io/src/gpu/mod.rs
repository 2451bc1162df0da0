//! The GPU sinks: the CUDA driver API and cuFile, both loaded at run time so
//! that the binary has no link-time dependency on CUDA and runs (with the GPU
//! modes skipped) on machines without it.

pub mod cuda;
pub mod cufile;

use serde::Serialize;

/// Why a GPU mode cannot run here; shown as the reason of a `skipped` result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// What the run found out about CUDA and cuFile, for the environment report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GpuEnvironment {
    /// The CUDA driver library and device.
    pub cuda: LibraryStatus,
    /// The cuFile library and driver.
    pub cufile: LibraryStatus,
}

/// Whether a library was found and usable.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LibraryStatus {
    /// `usable`, `unavailable` or `not_probed`.
    pub status: &'static str,
    /// The file that was loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// Version reported by the library (driver version for CUDA).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The GPU used, for CUDA.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Why it is not usable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl LibraryStatus {
    /// Not looked at in this run.
    pub fn not_probed(why: &str) -> LibraryStatus {
        LibraryStatus {
            status: "not_probed",
            reason: Some(why.to_owned()),
            ..LibraryStatus::default()
        }
    }

    /// Looked at and not usable.
    pub fn unavailable(reason: &Unavailable) -> LibraryStatus {
        LibraryStatus {
            status: "unavailable",
            reason: Some(reason.0.clone()),
            ..LibraryStatus::default()
        }
    }
}
