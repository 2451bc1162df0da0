//! `gdsio` (GPUDirect Storage's I/O benchmark) and `gdsio_verify`: result
//! lines, the commands before them in a shell transcript, the verdict of a
//! verification, and the usage text.

use crate::notes::Notes;
use crate::text::{excerpt, lines};

/// The most results kept.
pub const MAX_RESULTS: usize = 4096;

/// What a gdsio capture holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GdsioOutput {
    /// The result lines, in order.
    pub results: Vec<GdsioResult>,
    /// `Data Verification Success|Failed`: line and whether it succeeded.
    pub verification: Option<(u32, bool)>,
    /// `gdsio version :1.12`: the capture is the usage text, with that version.
    pub usage: Option<(u32, String)>,
    /// What could not be read.
    pub notes: Notes,
}

/// One `IoType: READ XferType: GPUD Threads: 1 … Throughput: 1.56 GiB/sec …` line.
#[derive(Debug, Clone, PartialEq)]
pub struct GdsioResult {
    /// Its line.
    pub line: u32,
    /// `READ`, `WRITE`, `RANDREAD`, `RANDWRITE`.
    pub io_type: String,
    /// `GPUD` (GPUDirect), `CPUONLY`, `CPU_GPU` …
    pub xfer_type: String,
    /// `Threads`.
    pub threads: Option<u32>,
    /// `IOSize`, KiB.
    pub io_size_kib: Option<u64>,
    /// `Throughput`, GiB/s.
    pub throughput_gib_s: f64,
    /// `Avg_Latency`, µs.
    pub latency_us: Option<f64>,
    /// The command that produced it, when the capture is a transcript.
    pub command: Option<String>,
}

/// Reads a gdsio capture.
pub fn parse(text: &str) -> GdsioOutput {
    let mut out = GdsioOutput::default();
    let mut command: Option<String> = None;
    for line in lines(text) {
        let number = line.number;
        let trimmed = line.text.trim();
        if trimmed.contains("IoType:") {
            match result(number, trimmed) {
                Some(mut result) => {
                    result.command = command.take();
                    if out.results.len() < MAX_RESULTS {
                        out.results.push(result);
                    }
                }
                None => out
                    .notes
                    .push(number, format!("unreadable result `{}`", excerpt(trimmed))),
            }
        } else if let Some(rest) = trimmed.strip_prefix("Data Verification ") {
            out.verification = Some((number, rest.trim().starts_with("Success")));
        } else if let Some(rest) = trimmed.strip_prefix("gdsio version") {
            out.usage = Some((
                number,
                rest.trim_start_matches([' ', ':']).trim().to_owned(),
            ));
        } else if let Some(at) = trimmed.find("gdsio ").filter(|_| trimmed.contains(" -")) {
            // A shell prompt and the command: keep the command.
            command = Some(excerpt(&trimmed[at..]));
        }
    }
    out
}

/// One result line, read by its keys.
fn result(number: u32, text: &str) -> Option<GdsioResult> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1).copied())
    };
    let number_before_paren = |value: &str| value.split('(').next().and_then(|v| v.parse().ok());
    let throughput: f64 = after("Throughput:")?.parse().ok()?;
    if !throughput.is_finite() || throughput < 0.0 {
        return None;
    }
    Some(GdsioResult {
        line: number,
        io_type: after("IoType:")?.to_owned(),
        xfer_type: after("XferType:")?.to_owned(),
        threads: after("Threads:").and_then(|v| v.parse().ok()),
        io_size_kib: after("IOSize:").and_then(number_before_paren),
        throughput_gib_s: throughput,
        latency_us: after("Avg_Latency:")
            .and_then(|v| v.trim_end_matches(',').parse().ok())
            .filter(|v: &f64| v.is_finite()),
        command: None,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn results_and_their_commands_are_read() {
        let out = parse(
            "host:~$ sudo /usr/local/cuda/gds/tools/gdsio -f /mnt/a -x 0 -d 0 -s 50G -I 1 -i 1G
IoType: WRITE XferType: GPUD Threads: 1 DataSetSize: 52428800/52428800(KiB) IOSize: 1048576(KiB) Throughput: 22.016713 GiB/sec, Avg_Latency: 44284.240000 usecs ops: 50 total_time 2.271002 secs
IoType: READ XferType: CPUONLY Threads: 32 DataSetSize: 1/2(KiB) IOSize: 4(KiB) Throughput: 0.5 GiB/sec, Avg_Latency: 214.4 usecs ops: 1 total_time 1 secs
",
        );
        assert!(out.notes.is_empty());
        let first = &out.results[0];
        assert_eq!(first.io_type, "WRITE");
        assert_eq!(first.xfer_type, "GPUD");
        assert_eq!(first.io_size_kib, Some(1_048_576));
        assert_eq!(first.throughput_gib_s, 22.016713);
        assert_eq!(first.latency_us, Some(44284.24));
        assert!(
            first
                .command
                .as_deref()
                .unwrap()
                .starts_with("gdsio -f /mnt/a")
        );
        assert_eq!(out.results[1].threads, Some(32));
        assert_eq!(out.results[1].command, None);
    }

    #[test]
    fn verification_usage_and_broken_lines() {
        let out = parse(
            "   Data Verification Success\ngdsio version :1.12\nIoType: READ Throughput: x\n",
        );
        assert_eq!(out.verification, Some((1, true)));
        assert_eq!(out.usage, Some((2, "1.12".to_owned())));
        assert_eq!(out.notes.total(), 1);
    }

    proptest! {
        #[test]
        fn no_input_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&text);
        }

        #[test]
        fn no_mix_of_the_grammar_panics(text in "((IoType: |XferType: |Throughput: |Avg_Latency: |IOSize: |Threads: |gdsio |-x |[0-9. ()]|GiB/sec,|Data Verification ){0,14}\n){0,10}") {
            let _ = parse(&text);
        }
    }
}
