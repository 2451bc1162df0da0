//! CPU lists such as `0-3,8,10-11` (`cpulist` format) and the `isolcpus=`
//! syntax with its flags (linux `Documentation/admin-guide/kernel-parameters.txt`,
//! `isolcpus=`: "[flag-list,]<cpu-list>", flags "(default: domain)").
//! The doctor reads them from `/proc/cmdline` and sysfs, the linter from
//! MachineConfigs and kubelet configurations.

use std::collections::BTreeSet;
use std::fmt;

/// CPU IDs above this are rejected: no machine has them, and accepting
/// `0-4294967295` would allocate without bound.
pub const MAX_CPU: u32 = 1 << 16;

/// A set of CPU IDs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuSet(pub BTreeSet<u32>);

/// Why a CPU list could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuSetError {
    /// A part is not a number or a range.
    Malformed(String),
    /// A CPU ID above [`MAX_CPU`].
    TooLarge(u64),
}

impl fmt::Display for CpuSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuSetError::Malformed(part) => write!(f, "`{part}` is not a cpu number or range"),
            CpuSetError::TooLarge(cpu) => write!(f, "cpu {cpu} is out of range"),
        }
    }
}

impl std::error::Error for CpuSetError {}

impl CpuSet {
    /// Parses `0-3,8,10-11`, `0-15:2/4` (stride groups) or an empty string.
    pub fn parse(text: &str) -> Result<CpuSet, CpuSetError> {
        let mut cpus = BTreeSet::new();
        for part in text
            .trim()
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let (range, stride) = match part.split_once(':') {
                Some((range, stride)) => (range, Some(stride)),
                None => (part, None),
            };
            let (first, last) = match range.split_once('-') {
                Some((a, b)) => (cpu(a, part)?, cpu(b, part)?),
                None => {
                    let one = cpu(range, part)?;
                    (one, one)
                }
            };
            if first > last {
                return Err(CpuSetError::Malformed(part.to_owned()));
            }
            let (used, group) = match stride {
                Some(stride) => {
                    let (used, group) = stride
                        .split_once('/')
                        .ok_or_else(|| CpuSetError::Malformed(part.to_owned()))?;
                    let used: u32 = used
                        .parse()
                        .map_err(|_| CpuSetError::Malformed(part.to_owned()))?;
                    let group: u32 = group
                        .parse()
                        .map_err(|_| CpuSetError::Malformed(part.to_owned()))?;
                    if group == 0 {
                        return Err(CpuSetError::Malformed(part.to_owned()));
                    }
                    (used, group)
                }
                None => (1, 1),
            };
            for id in first..=last {
                if (id - first) % group < used {
                    cpus.insert(id);
                }
            }
        }
        Ok(CpuSet(cpus))
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }

    /// The CPUs in `self` and not in `other`.
    pub fn minus(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }
}

impl fmt::Display for CpuSet {
    /// Formats as a compact `cpulist`: `0-3,8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut iter = self.0.iter().copied().peekable();
        let mut first = true;
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end += 1;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

fn cpu(text: &str, part: &str) -> Result<u32, CpuSetError> {
    let value: u64 = text
        .trim()
        .parse()
        .map_err(|_| CpuSetError::Malformed(part.to_owned()))?;
    if value > u64::from(MAX_CPU) {
        return Err(CpuSetError::TooLarge(value));
    }
    u32::try_from(value).map_err(|_| CpuSetError::TooLarge(value))
}

/// The value of `isolcpus=`: optional flags, then a CPU list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Isolcpus {
    /// Flags such as `domain`, `managed_irq`, `nohz`.
    pub flags: Vec<String>,
    /// The isolated CPUs.
    pub cpus: CpuSet,
}

impl Isolcpus {
    /// Parses `isolcpus=` values: `2-5`, `nohz,domain,managed_irq,2-5`.
    pub fn parse(text: &str) -> Result<Isolcpus, CpuSetError> {
        let mut flags = Vec::new();
        let mut rest = text;
        // Flags are words before the first part that starts with a digit.
        while let Some((head, tail)) = rest.split_once(',') {
            if head.starts_with(|c: char| c.is_ascii_digit()) {
                break;
            }
            flags.push(head.to_owned());
            rest = tail;
        }
        if !rest.starts_with(|c: char| c.is_ascii_digit()) && !rest.is_empty() {
            flags.push(rest.to_owned());
            rest = "";
        }
        Ok(Isolcpus {
            flags,
            cpus: CpuSet::parse(rest)?,
        })
    }

    /// Whether the scheduler domains are isolated (`domain`, or no flags).
    pub fn isolates_domains(&self) -> bool {
        self.flags.is_empty() || self.flags.iter().any(|f| f == "domain")
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn lists_ranges_and_strides() {
        assert_eq!(CpuSet::parse("0-3,8").unwrap().to_string(), "0-3,8");
        assert_eq!(CpuSet::parse("").unwrap(), CpuSet::default());
        assert_eq!(CpuSet::parse("0-7:2/4").unwrap().to_string(), "0-1,4-5");
        assert!(CpuSet::parse("3-1").is_err());
        assert!(CpuSet::parse("0-4294967295").is_err());
        assert!(CpuSet::parse("a").is_err());
    }

    #[test]
    fn isolcpus_flags() {
        let iso = Isolcpus::parse("nohz,domain,managed_irq,2-5").unwrap();
        assert_eq!(iso.flags, vec!["nohz", "domain", "managed_irq"]);
        assert_eq!(iso.cpus.to_string(), "2-5");
        assert!(Isolcpus::parse("1,3").unwrap().isolates_domains());
        assert!(!Isolcpus::parse("managed_irq,1").unwrap().isolates_domains());
    }

    proptest! {
        #[test]
        fn never_panics(text in "[0-9,:/a-z -]{0,60}") {
            let _ = CpuSet::parse(&text);
            let _ = Isolcpus::parse(&text);
        }

        #[test]
        fn display_round_trips(cpus in proptest::collection::btree_set(0u32..512, 0..40)) {
            let set = CpuSet(cpus);
            prop_assert_eq!(CpuSet::parse(&set.to_string()).unwrap(), set);
        }
    }
}
