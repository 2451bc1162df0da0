//! nccl-tests output and `NCCL_DEBUG` logs, read in one pass: the test's
//! table and NCCL's debug messages share one standard output and cut into
//! each other.

pub mod collective;
pub mod debug_line;
pub mod log;
pub mod results;
pub mod version;

use std::collections::HashSet;

use crate::nccl::log::NcclLog;
use crate::nccl::results::{NcclTests, TestsParser};
use crate::notes::Notes;
use crate::text::lines;

/// Everything read from a capture of nccl-tests and/or NCCL's debug output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NcclOutput {
    /// What nccl-tests printed.
    pub tests: NcclTests,
    /// What NCCL's debug messages say.
    pub log: NcclLog,
    /// What could not be read.
    pub notes: Notes,
}

/// Reads a capture: every debug message, wherever it starts, goes to the
/// log; the text around them (rows split by messages are stitched back)
/// goes to the nccl-tests parser.
pub fn parse(text: &str) -> NcclOutput {
    let mut tests = TestsParser::default();
    let mut log = NcclLog::default();
    let mut notes = Notes::default();
    // Hosts of messages that start a line: they tell where a message glued
    // to a row (`…-1mew0:64904:…`) begins.
    let mut hosts: HashSet<String> = HashSet::new();
    let mut last = 0;
    for line in lines(text) {
        last = line.number;
        let split = debug_line::split(&line.text, &hosts);
        for message in &split.messages {
            log.feed(line.number, message);
        }
        if split.messages.is_empty() {
            tests.feed(line.number, split.before, true, &mut notes);
            log.plain(line.number, split.before);
            continue;
        }
        if split.before.is_empty() {
            let host = split.messages[0].host;
            if host.len() <= debug_line::MAX_HOST
                && hosts.len() < log::MAX_ITEMS
                && !hosts.contains(host)
            {
                hosts.insert(host.to_owned());
            }
        } else {
            tests.feed(line.number, split.before, false, &mut notes);
        }
    }
    NcclOutput {
        tests: tests.finish(last, &mut notes),
        log,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_table_cut_by_debug_messages_is_read_and_the_messages_too() {
        let output = parse(
            "\
mew0:1:1 [0] NCCL INFO NCCL version 2.27.7+cuda13.0
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     8388608       2097152     float     sum      -1mew0:1:1 [1] NCCL INFO AllReduce: opCount 0
mew0:1:1 [0] NCCL INFO AllReduce: 8388608 Bytes -> Algo RING
    83.33  100.66  100.66      0mew0:1:1 [1] NCCL INFO AllReduce: opCount 0
    80.98  103.59  103.59      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 178.078
",
        );
        assert!(output.notes.is_empty(), "{:?}", output.notes);
        let run = &output.tests.runs[0];
        assert_eq!(run.rows.len(), 1);
        assert_eq!(run.rows[0].line, 3);
        assert_eq!(run.rows[0].in_place.busbw, 103.59);
        assert_eq!(output.log.messages, 4);
        assert_eq!(output.log.version.unwrap().1.to_string(), "2.27.7");
    }

    proptest! {
        #[test]
        fn no_input_panics(text in "(\\PC{0,60}\n){0,12}") {
            let _ = parse(&text);
        }

        #[test]
        fn no_mix_of_the_grammar_panics(text in "((#|h:1:2 \\[0\\] NCCL (INFO|WARN) |[0-9 .e+\\-]|size|count|type|busbw|time|algbw|#wrong|N/A|Channel|via NET/IB/0/GDRDMA|Got completion status=|vendor err |Avg bus bandwidth|: ){0,30}\n){0,10}") {
            let _ = parse(&text);
        }
    }
}
