//! The NVIDIA kernel driver: `/proc/driver/nvidia/version`, the GPUs it
//! drives (`/proc/driver/nvidia/gpus/*/information`), and the kernel
//! release that decides whether GPUDirect RDMA can use DMA-BUF.
//!
//! The modules themselves (`nvidia`, `nvidia_peermem`, their taint and
//! users) are in [`Modules`](crate::facts::Modules).

use std::collections::BTreeMap;

use crate::facts::{Fact, Gap, clip};
use crate::parse::nvidia::{DriverVersion, parse_information, parse_version};
use crate::root::HostRoot;

/// Where the driver lists its GPUs.
pub const GPUS_DIR: &str = "/proc/driver/nvidia/gpus";
/// The driver's version file.
pub const VERSION_FILE: &str = "/proc/driver/nvidia/version";
/// The running kernel's release.
pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// The most GPU directories read; real hosts have at most a few dozen.
const MAX_GPUS: usize = 256;

/// One GPU the NVIDIA driver drives.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DriverGpu {
    /// The directory name: the GPU's PCI address.
    pub address: String,
    /// The `information` file's fields (`Model`, `Bus Location`…);
    /// empty when the file is absent.
    pub information: BTreeMap<String, String>,
}

/// What the NVIDIA driver shows of itself.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NvidiaFacts {
    /// The version file; `Ok(None)` when the driver is not loaded.
    pub version: Fact<DriverVersion>,
    /// The GPUs in `/proc/driver/nvidia/gpus`; `Ok(None)` when the
    /// directory is absent.
    pub gpus: Fact<Vec<DriverGpu>>,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel_release: Fact<String>,
}

impl NvidiaFacts {
    /// Reads the driver's procfs files from `root`.
    pub fn collect(root: &HostRoot) -> NvidiaFacts {
        NvidiaFacts {
            version: version(root),
            gpus: gpus(root),
            kernel_release: root
                .read_value(OSRELEASE)
                .map_err(Gap::from)
                .map(|release| release.filter(|r| !r.is_empty())),
        }
    }
}

fn version(root: &HostRoot) -> Fact<DriverVersion> {
    let Some(text) = root.read(VERSION_FILE)? else {
        return Ok(None);
    };
    parse_version(&text).map(Some).ok_or_else(|| {
        let first = text.lines().next().unwrap_or("");
        Gap::malformed(
            VERSION_FILE,
            format!("no `NVRM version:` line (starts with `{}`)", clip(first)),
        )
    })
}

fn gpus(root: &HostRoot) -> Fact<Vec<DriverGpu>> {
    let Some(names) = root.list(GPUS_DIR)? else {
        return Ok(None);
    };
    let mut gpus = Vec::new();
    for address in names.into_iter().take(MAX_GPUS) {
        // An unreadable information file leaves the GPU listed: the
        // directory alone shows the driver owns it.
        let information = root
            .read(&format!("{GPUS_DIR}/{address}/information"))
            .ok()
            .flatten()
            .map(|text| parse_information(&text))
            .unwrap_or_default();
        gpus.push(DriverGpu {
            address,
            information,
        });
    }
    Ok(Some(gpus))
}
