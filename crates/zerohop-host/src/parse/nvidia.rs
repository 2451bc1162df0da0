//! `/proc/driver/nvidia/version`, `/proc/driver/nvidia/gpus/<bdf>/information`
//! and kernel release numbers.

use std::collections::BTreeMap;

/// The flavour of the NVIDIA kernel module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ModuleFlavour {
    /// The open, MIT/GPL module (`nvidia-open`).
    Open,
    /// The proprietary, NVIDIA-licensed module.
    Proprietary,
}

/// What `/proc/driver/nvidia/version` says about the loaded kernel module.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DriverVersion {
    /// The `NVRM version:` line as written.
    pub line: String,
    /// The driver version (`550.90.07`), when the line has one.
    pub version: Option<String>,
    /// The flavour the line names, `None` when it names no kernel module.
    pub flavour: Option<ModuleFlavour>,
}

/// Parses the version file; `None` when it has no `NVRM version:` line.
///
/// The driver prints the line from `nv_procfs_read_version`
/// (NVIDIA/open-gpu-kernel-modules `kernel-open/nvidia/nv-procfs.c`): the
/// open module's reads `NVIDIA UNIX Open Kernel Module for x86_64 <version>`,
/// the proprietary one's `NVIDIA UNIX x86_64 Kernel Module <version>`. So a
/// line that names a `Kernel Module` and a version, without `Open`, is the
/// proprietary module; a line that names neither is left undecided.
pub fn parse_version(text: &str) -> Option<DriverVersion> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("NVRM version:"))?
        .trim();
    let version = line
        .split_whitespace()
        .find(|word| is_version(word))
        .map(str::to_owned);
    let lower = line.to_ascii_lowercase();
    let flavour = if lower.contains("open kernel module") {
        Some(ModuleFlavour::Open)
    } else if lower.contains("kernel module") && version.is_some() {
        Some(ModuleFlavour::Proprietary)
    } else {
        None
    };
    Some(DriverVersion {
        line: line.chars().take(200).collect(),
        version,
        flavour,
    })
}

/// `535.104.05`, `550.90`: two or three dot-separated numbers.
fn is_version(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Parses `Key:   value` lines (the GPU `information` file); lines
/// without a colon are skipped, the first of a repeated key wins.
pub fn parse_information(text: &str) -> BTreeMap<String, String> {
    let mut fields = BTreeMap::new();
    for line in text.lines() {
        if let Some((key, value)) = line.split_once(':') {
            let key = key.trim();
            if !key.is_empty() {
                fields
                    .entry(key.to_owned())
                    .or_insert_with(|| value.trim().to_owned());
            }
        }
    }
    fields
}

/// The major and minor numbers of a kernel release (`5.15.0-91-generic`
/// gives `(5, 15)`).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-', '+', '_']);
    let major = parts.next()?.parse().ok()?;
    let minor_text = parts.next()?;
    let digits: String = minor_text
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, digits.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn proprietary_and_open() {
        let prop = parse_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.60.13  Wed Nov 30 06:39:21 UTC 2022\nGCC version:  gcc 12\n").unwrap();
        assert_eq!(prop.version.as_deref(), Some("525.60.13"));
        assert_eq!(prop.flavour, Some(ModuleFlavour::Proprietary));
        let open = parse_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri May 31 09:44:54 UTC 2024").unwrap();
        assert_eq!(open.flavour, Some(ModuleFlavour::Open));
        // Neither wording, or no version: undecided.
        let odd = parse_version("NVRM version: something else 550.90.07").unwrap();
        assert_eq!(odd.flavour, None);
        let no_version = parse_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module").unwrap();
        assert_eq!(no_version.flavour, None);
        assert_eq!(open.version.as_deref(), Some("550.90.07"));
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn information_fields() {
        let info = parse_information(
            "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   123\nBus Location: \t 0000:1b:00.0\nnonsense\n",
        );
        assert_eq!(
            info.get("Model").map(String::as_str),
            Some("NVIDIA H100 80GB HBM3")
        );
        assert_eq!(
            info.get("Bus Location").map(String::as_str),
            Some("0000:1b:00.0")
        );
        assert_eq!(info.len(), 3);
    }

    #[test]
    fn kernel_versions() {
        assert_eq!(kernel_version("5.15.0-91-generic"), Some((5, 15)));
        assert_eq!(kernel_version("6.8.0"), Some((6, 8)));
        assert_eq!(kernel_version("4.18.0-513.el8.x86_64"), Some((4, 18)));
        assert_eq!(kernel_version("6.12rc1"), Some((6, 12)));
        assert_eq!(kernel_version("linux"), None);
    }

    proptest! {
        #[test]
        fn never_panic(text in "(?s).{0,200}") {
            let _ = parse_version(&text);
            let _ = parse_information(&text);
            let _ = kernel_version(&text);
        }
    }
}
