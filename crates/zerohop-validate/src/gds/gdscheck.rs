//! `gdscheck -p`: GPUDirect Storage's own view of the platform, in the
//! layouts of GDS 0.9 (beta) to 1.14.

use crate::notes::Notes;
use crate::text::{excerpt, lines};

/// What `gdscheck -p` printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GdsCheck {
    /// `GDS release version: 1.13.1.3`, with its line.
    pub release: Option<(u32, String)>,
    /// `nvidia_fs version:  2.20`.
    pub nvidia_fs: Option<String>,
    /// `libcufile version: 2.12`.
    pub libcufile: Option<String>,
    /// The storage back ends: `NVMe : Supported`, with their line.
    pub backends: Vec<Backend>,
    /// `--Mellanox PeerDirect : Enabled` (`--MOFED peer direct` in 0.9).
    pub peer_direct: Option<(u32, bool)>,
    /// The `properties.*`, `fs.*`, `profile.*` … settings: line, key, value.
    pub settings: Vec<(u32, String, String)>,
    /// The `GPU index N …` lines.
    pub gpus: Vec<GdsGpu>,
    /// `IOMMU: disabled|enabled`, with its line.
    pub iommu_enabled: Option<(u32, bool)>,
    /// `Platform verification succeeded|…`: line and whether it succeeded.
    pub verification: Option<(u32, bool)>,
    /// The lines libcufile prints after a failed verification (`Platform
    /// does not have any supported GPU!`, `cufile initialization failed`),
    /// with their line.
    pub platform_errors: Vec<(u32, String)>,
    /// What could not be read.
    pub notes: Notes,
}

/// A storage back end and whether GDS supports it here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// Its line.
    pub line: u32,
    /// `NVMe`, `NVMeOF`, `NFS`, `WekaFS` …
    pub name: String,
    /// `Supported`.
    pub supported: bool,
}

/// One `GPU index 0 NVIDIA L40S bar:1 bar size (MiB):65536 supports GDS` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GdsGpu {
    /// Its line.
    pub line: u32,
    /// The GPU index.
    pub index: u32,
    /// The GPU's name.
    pub name: String,
    /// BAR1 size, MiB.
    pub bar_mib: Option<u64>,
    /// `supports GDS` (not `does not support GDS`).
    pub supported: bool,
    /// `GPU 0 Quadro K1200 does not have supported architecture, has 5
    /// requires >= 6`: the compute capability major version it has and the
    /// one GDS requires.
    pub architecture: Option<(u32, u32)>,
}

/// The lines libcufile prints below a failed verification (GDS 0.9 to
/// 1.14), read as what they say rather than as unreadable lines.
const PLATFORM_ERRORS: [&str; 4] = [
    "Platform does not have any supported GPU",
    "platform is not supported by cufile",
    "cufile initialization failed",
    "GPUDirect Storage not supported on current platform",
];

/// The most entries of each list kept.
pub const MAX_ENTRIES: usize = 1024;

impl GdsCheck {
    /// The value of setting `key` (`properties.use_compat_mode`), with its line.
    pub fn setting(&self, key: &str) -> Option<(u32, &str)> {
        self.settings
            .iter()
            .find(|(_, k, _)| k == key)
            .map(|(line, _, value)| (*line, value.as_str()))
    }
}

/// Reads `gdscheck -p` output.
pub fn parse(text: &str) -> GdsCheck {
    let mut out = GdsCheck::default();
    for line in lines(text) {
        let number = line.number;
        let trimmed = line.text.trim();
        if trimmed.is_empty() || trimmed.starts_with("===") || trimmed.ends_with(':') {
            // Blank lines, rules and section titles (`GPU INFO:`).
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("GDS release version") {
            let version = rest.rsplit(':').next().unwrap_or("").trim().to_owned();
            out.release = Some((number, version));
            continue;
        }
        if trimmed.starts_with("nvidia_fs version:") {
            let words: Vec<&str> = trimmed.split_whitespace().collect();
            out.nvidia_fs = words.get(2).map(|v| (*v).to_owned());
            out.libcufile = words
                .iter()
                .position(|w| *w == "libcufile")
                .and_then(|i| words.get(i + 2))
                .map(|v| (*v).to_owned());
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("GPU index ") {
            match gpu(number, rest) {
                Some(gpu) if out.gpus.len() < MAX_ENTRIES => out.gpus.push(gpu),
                Some(_) => {}
                None => out.notes.push(
                    number,
                    format!("unreadable gpu line `{}`", excerpt(trimmed)),
                ),
            }
            continue;
        }
        if let Some(gpu) = unsupported_architecture(number, trimmed) {
            if out.gpus.len() < MAX_ENTRIES {
                out.gpus.push(gpu);
            }
            continue;
        }
        if PLATFORM_ERRORS.iter().any(|e| trimmed.starts_with(e)) {
            if out.platform_errors.len() < MAX_ENTRIES {
                out.platform_errors.push((number, trimmed.to_owned()));
            }
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("Platform verification ") {
            out.verification = Some((number, rest.trim().starts_with("succeeded")));
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            out.notes
                .push(number, format!("unreadable line `{}`", excerpt(trimmed)));
            continue;
        };
        let key = key.trim();
        let value = value.trim();
        if key == "IOMMU" {
            out.iommu_enabled = Some((number, !value.eq_ignore_ascii_case("disabled")));
        } else if key.eq_ignore_ascii_case("--Mellanox PeerDirect")
            || key.eq_ignore_ascii_case("--MOFED peer direct")
        {
            out.peer_direct = Some((number, value.eq_ignore_ascii_case("enabled")));
        } else if matches!(value, "Supported" | "Unsupported") && out.backends.len() < MAX_ENTRIES {
            out.backends.push(Backend {
                line: number,
                name: key.to_owned(),
                supported: value == "Supported",
            });
        } else if key.contains('.') && !key.contains(' ') && out.settings.len() < MAX_ENTRIES {
            out.settings
                .push((number, key.to_owned(), value.to_owned()));
        }
        // Other `key : value` lines (the RDMA library, the driver status,
        // the platform) are read by people, not judged.
    }
    if out.verification.is_none() {
        out.notes.push(
            0,
            "no `Platform verification` line: the output is cut or gdscheck stopped early",
        );
    }
    out
}

/// `0 NVIDIA L40S bar:1 bar size (MiB):65536 supports GDS, IOMMU State: Disabled`.
fn gpu(number: u32, rest: &str) -> Option<GdsGpu> {
    let (index, rest) = rest.split_once(' ')?;
    let (name, tail) = rest.split_once(" bar:")?;
    let bar_mib = tail
        .split_once("(MiB):")
        .and_then(|(_, size)| size.split_whitespace().next())
        .and_then(|size| size.parse().ok());
    let supported = tail.contains("supports GDS") && !tail.contains("not support");
    Some(GdsGpu {
        line: number,
        index: index.parse().ok()?,
        name: name.trim().to_owned(),
        bar_mib,
        supported,
        architecture: None,
    })
}

/// `GPU 0 Quadro K1200 does not have supported architecture, has 5 requires
/// >= 6`: libcufile's line for a GPU below compute capability 6 (GDS needs
/// 6.0 or later: the maintainers in NVIDIA/MagnumIO#5). Seen in the GDS
/// 0.9.1.5 output of developer-onizuka/gpudirect_storage `README.md`.
fn unsupported_architecture(number: u32, line: &str) -> Option<GdsGpu> {
    let rest = line.strip_prefix("GPU ")?;
    let (head, tail) = rest.split_once(" does not have supported architecture")?;
    let (index, name) = head.split_once(' ')?;
    let numbers: Vec<u32> = tail
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    Some(GdsGpu {
        line: number,
        index: index.parse().ok()?,
        name: name.trim().to_owned(),
        bar_mib: None,
        supported: false,
        architecture: match numbers.as_slice() {
            [has, requires] => Some((*has, *requires)),
            _ => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_current_layout_is_read() {
        let check = parse(
            " GDS release version: 1.13.1.3
 nvidia_fs version:  2.20 libcufile version: 2.12
 =====================
 DRIVER CONFIGURATION:
 =====================
 NVMe               : Supported
 NFS                : Unsupported
 --Mellanox PeerDirect : Disabled
 --rdma library        : Not Loaded (libcufile_rdma.so)
 properties.use_compat_mode : true
 fs.lustre.posix_gds_min_kb: 0
 GPU index 0 NVIDIA L40S bar:1 bar size (MiB):65536 supports GDS, IOMMU State: Disabled
 IOMMU: disabled
 Platform verification succeeded
",
        );
        assert!(check.notes.is_empty(), "{:?}", check.notes);
        assert_eq!(check.release.as_ref().unwrap().1, "1.13.1.3");
        assert_eq!(check.nvidia_fs.as_deref(), Some("2.20"));
        assert_eq!(check.libcufile.as_deref(), Some("2.12"));
        assert_eq!(check.backends.len(), 2);
        assert!(check.backends[0].supported);
        assert_eq!(check.peer_direct, Some((8, false)));
        assert_eq!(
            check.setting("properties.use_compat_mode"),
            Some((10, "true"))
        );
        assert_eq!(check.setting("fs.lustre.posix_gds_min_kb"), Some((11, "0")));
        let gpu = &check.gpus[0];
        assert_eq!(
            (gpu.index, gpu.name.as_str(), gpu.bar_mib, gpu.supported),
            (0, "NVIDIA L40S", Some(65536), true)
        );
        assert_eq!(check.iommu_enabled, Some((13, false)));
        assert_eq!(check.verification, Some((14, true)));
    }

    #[test]
    fn an_unsupported_architecture_is_a_gpu_without_gds() {
        let check = parse(
            "    GPU INFO:\n    GPU 0 Quadro K1200 does not have supported architecture, has 5 requires >= 6\n    Platform does not have any supported GPU!\n    Platform verification failed\n    cufile initialization failed\n",
        );
        assert!(check.notes.is_empty(), "{:?}", check.notes);
        let gpu = &check.gpus[0];
        assert_eq!(
            (
                gpu.line,
                gpu.index,
                gpu.name.as_str(),
                gpu.supported,
                gpu.architecture
            ),
            (2, 0, "Quadro K1200", false, Some((5, 6)))
        );
        assert_eq!(check.platform_errors.len(), 2);
        assert_eq!(check.verification, Some((4, false)));
    }

    #[test]
    fn a_cut_output_is_noted() {
        let check = parse(
            " GDS release version: 1.1.0.37\n GPU index 0 Tesla T4 bar:1 bar size (MiB):256 does not support GDS\n",
        );
        assert!(!check.gpus[0].supported);
        assert_eq!(check.notes.total(), 1);
    }

    proptest! {
        #[test]
        fn no_input_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&text);
        }

        #[test]
        fn no_mix_of_the_grammar_panics(text in "(( GPU index | bar:| bar size \\(MiB\\):|supports GDS|IOMMU|: |Supported|properties\\.x|Platform verification |[0-9 ]|nvidia_fs version:){0,12}\n){0,10}") {
            let _ = parse(&text);
        }
    }
}
