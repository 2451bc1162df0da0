//! `/proc/driver/nvidia-fs/stats`: the GPUDirect Storage kernel driver's
//! counters (nvidia-fs `nvfs-stat.c`).

use crate::notes::Notes;
use crate::text::{excerpt, lines};

/// The most counters kept.
pub const MAX_COUNTERS: usize = 4096;

/// What the stats file says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NvfsStats {
    /// `GDS Version: 1.14.0.31`.
    pub gds_version: Option<String>,
    /// `NVFS Driver(version: 2.25.7)`.
    pub driver_version: Option<String>,
    /// `Mellanox PeerDirect Supported: True`, with its line.
    pub peer_direct: Option<(u32, bool)>,
    /// `IO stats: Enabled|Disabled`, with its line.
    pub io_stats: Option<(u32, bool)>,
    /// `Section : name=value …` counters, in order.
    pub counters: Vec<Counter>,
    /// What could not be read.
    pub notes: Notes,
}

/// One `name=value` of a section line (`Reads : err=0 io_state_err=0`), or
/// of a GPU line (`GPU 0000:01:00.0 uuid:… : Registered_MiB=0 …`, whose
/// section is `GPU 0000:01:00.0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    /// Its line.
    pub line: u32,
    /// The section (`Reads`, `Bar1-map`, `GPU 0000:01:00.0`).
    pub section: String,
    /// The counter (`err`).
    pub name: String,
    /// Its value as printed.
    pub value: String,
}

impl Counter {
    /// Whether this counts errors (`err`, `io_state_err`, the `Error`
    /// section's counters, `pg-cache-fail`).
    pub fn is_error(&self) -> bool {
        self.section == "Error" || self.name.contains("err") || self.name.contains("fail")
    }

    /// The value as a number, when it is one.
    pub fn number(&self) -> Option<u64> {
        self.value.parse().ok()
    }
}

/// Reads the stats file.
pub fn parse(text: &str) -> NvfsStats {
    let mut out = NvfsStats::default();
    for line in lines(text) {
        let number = line.number;
        let trimmed = line.text.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("GDS Version:") {
            out.gds_version = Some(rest.trim().to_owned());
        } else if let Some(rest) = trimmed.strip_prefix("NVFS Driver(version:") {
            out.driver_version = Some(rest.trim_end_matches(')').trim().to_owned());
        } else if let Some(rest) = trimmed.strip_prefix("Mellanox PeerDirect Supported:") {
            out.peer_direct = Some((number, rest.trim().eq_ignore_ascii_case("true")));
        } else if let Some(rest) = trimmed.strip_prefix("IO stats:") {
            let value = rest.split(',').next().unwrap_or("").trim();
            out.io_stats = Some((number, value.eq_ignore_ascii_case("enabled")));
        } else if trimmed.starts_with("NVFS statistics")
            || trimmed.starts_with("Logging level")
            || trimmed.starts_with("Active ")
        {
            // Read by people.
        } else if let Some(previous) = continuation(trimmed, &out.counters) {
            // Documentation and narrow terminals wrap the long lines:
            // `name=value` pairs alone go on with the section above.
            for pair in trimmed.split_whitespace() {
                if let Some((name, value)) = pair.split_once('=')
                    && out.counters.len() < MAX_COUNTERS
                {
                    out.counters.push(Counter {
                        line: number,
                        section: previous.clone(),
                        name: name.to_owned(),
                        value: value.to_owned(),
                    });
                }
            }
        } else if let Some((section, values)) = section_line(trimmed) {
            let mut read = false;
            for pair in values.split_whitespace() {
                if let Some((name, value)) = pair.split_once('=')
                    && out.counters.len() < MAX_COUNTERS
                {
                    read = true;
                    out.counters.push(Counter {
                        line: number,
                        section: section.clone(),
                        name: name.to_owned(),
                        value: value.to_owned(),
                    });
                }
            }
            if !read {
                out.notes.push(
                    number,
                    format!("unreadable counters `{}`", excerpt(trimmed)),
                );
            }
        } else {
            out.notes
                .push(number, format!("unreadable line `{}`", excerpt(trimmed)));
        }
    }
    out
}

/// The section a line of `name=value` pairs alone continues, if the line
/// is one and a section came before.
fn continuation(text: &str, counters: &[Counter]) -> Option<String> {
    let pairs = text
        .split_whitespace()
        .all(|word| word.contains('=') && !word.contains(':'));
    if !pairs {
        return None;
    }
    counters.last().map(|c| c.section.clone())
}

/// `Reads : err=0` → (`Reads`, `err=0`); `GPU 0000:01:00.0  uuid:… :
/// Registered_MiB=0` → (`GPU 0000:01:00.0`, `Registered_MiB=0`).
fn section_line(text: &str) -> Option<(String, &str)> {
    let (head, values) = text.rsplit_once(" : ").or_else(|| text.split_once(':'))?;
    let head = head.trim();
    let section = match head.strip_prefix("GPU ") {
        Some(rest) => format!("GPU {}", rest.split_whitespace().next()?),
        None => head.to_owned(),
    };
    (!section.is_empty()).then_some((section, values.trim()))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const STATS: &str = "GDS Version: 1.14.0.31
NVFS statistics(ver: 4.0)
NVFS Driver(version: 2.25.7)
Mellanox PeerDirect Supported: True
IO stats: Disabled, peer IO stats: Disabled
Logging level: info

Active Shadow-Buffer (MiB): 0
Reads                : err=0 io_state_err=2
Mmap                 : n=1 ok=1 err=0 munmap=2
Writes               : n=0 ok=0 err=0 writeMiB=0 io_state_err=0
        pg-cache=0 pg-cache-fail=3 pg-cache-eio=0
GPU 0000:01:00.0  uuid:fb1e6550-2a78 : Registered_MiB=0 Cache_MiB=0
        max_pinned_MiB=1 cross_root_port(%)=0
";

    #[test]
    fn versions_switches_and_counters_are_read() {
        let stats = parse(STATS);
        assert!(stats.notes.is_empty(), "{:?}", stats.notes);
        assert_eq!(stats.gds_version.as_deref(), Some("1.14.0.31"));
        assert_eq!(stats.driver_version.as_deref(), Some("2.25.7"));
        assert_eq!(stats.peer_direct, Some((4, true)));
        assert_eq!(stats.io_stats, Some((5, false)));
        let errors: Vec<&Counter> = stats
            .counters
            .iter()
            .filter(|c| c.is_error() && c.number() != Some(0))
            .collect();
        // `io_state_err=2` of Reads, and `pg-cache-fail=3` on the line that
        // continues Writes.
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].name, "io_state_err");
        assert_eq!(
            (
                errors[1].section.as_str(),
                errors[1].name.as_str(),
                errors[1].line
            ),
            ("Writes", "pg-cache-fail", 12)
        );
        let gpu: Vec<&Counter> = stats
            .counters
            .iter()
            .filter(|c| c.section == "GPU 0000:01:00.0")
            .collect();
        assert_eq!(gpu.len(), 4);
        assert_eq!((gpu[2].name.as_str(), gpu[2].line), ("max_pinned_MiB", 14));
    }

    proptest! {
        #[test]
        fn no_input_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&text);
        }

        #[test]
        fn no_mix_of_the_grammar_panics(text in "((GPU |Reads|Error| : |:|=|err|[0-9a-f. ]|IO stats:|uuid:){0,16}\n){0,10}") {
            let _ = parse(&text);
        }
    }
}
