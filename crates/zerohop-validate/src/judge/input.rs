//! Whether a capture could be read whole.

use zerohop_core::{Finding, Remediation, Status};

use crate::declare_judgement;
use crate::judge::{Capture, note_evidence};
use crate::kind::Kind;
use crate::notes::Notes;

declare_judgement! {
    /// The capture was read whole.
    ///
    /// ## What it checks
    /// Each parser reads what it can and notes what it cannot: a table that
    /// ends before its summary, a row with missing or garbled cells, a
    /// matrix cut at the terminal's width, a line it does not understand
    /// inside a table. This judgement says which tool's output the capture
    /// was read as, and lists the first of those notes with their lines.
    /// The rule is zerohop's own: each parser's notes
    /// (`crates/zerohop-validate/src/notes.rs`) list what it skipped.
    ///
    /// ## Why it matters
    /// The other judgements rest on what was read. A log cut in the middle
    /// of the table has no summary and no largest size; a matrix cut at 80
    /// columns has no NIC columns. A judgement on a partial capture can miss
    /// the problem the missing part shows.
    ///
    /// ## How to fix
    /// Capture the whole output, without a terminal in between:
    /// `all_reduce_perf … 2>&1 | tee nccl.log`, `kubectl logs POD >
    /// nccl.log`, `nvidia-smi topo -m > topo.txt` (a pipe is not cut at the
    /// terminal's width), `gdscheck -p > gdscheck.txt 2>&1`: the fix names
    /// the command of the tool that wrote the capture. When a test was
    /// killed, its log ends early: the `nccl-tests-aborted` judgement says
    /// so.
    ///
    /// ## Example
    ///
    /// The capture `cut.log`, one of the hand-written captures of
    /// `crates/zerohop-validate/tests/judgements.rs`:
    ///
    /// ```text
    /// #  size count type redop root time algbw busbw #wrong time algbw busbw #wrong
    ///   8  2  float  sum  -1  1.0  0.1  0.1  0  1.0  0.1  0.1  0
    /// ```
    ///
    /// `zerohop validate parse cut.log` says:
    ///
    /// ```text
    /// input
    ///   warn           VAL001  capture-partial  cut.log: read as nccl output; 1 part could not be read, the judgements rest on the rest
    ///                  cut.log:2 = the table that starts at line 1 ends without its summary
    ///
    /// what to fix first
    ///   1. VAL001 capture-partial (cut.log): read as nccl output; 1 part could not be read, the judgements rest on the rest
    ///      fix: capture nccl's whole output without a terminal in between (redirect or tee it to a file)
    ///        all_reduce_perf -b 8 -e 8G -f 2 -g 1 2>&1 | tee nccl.log
    /// ```
    pub static CAPTURE_PARTIAL = {
        id: "VAL001",
        name: "capture-partial",
        group: Input,
        severity: Warning,
    };
}

/// The finding about how `capture` was read.
pub(crate) fn partial(capture: &Capture<'_>, kind: Kind, notes: &Notes) -> Finding {
    if notes.is_empty() {
        return CAPTURE_PARTIAL
            .verdict(
                capture,
                Status::Pass,
                "",
                format!("read as {kind} output, every line understood"),
            )
            .done();
    }
    let count = notes.total();
    let verdict = CAPTURE_PARTIAL.verdict(
        capture,
        CAPTURE_PARTIAL.problem(),
        "",
        format!(
            "read as {kind} output; {count} part{} could not be read, the judgements rest on the rest",
            if count == 1 { "" } else { "s" }
        ),
    );
    note_evidence(verdict, capture, notes)
        .fix(Remediation::new(format!(
            "capture {kind}'s whole output without a terminal in between (redirect or tee it to a file)"
        ))
        .command(kind.capture_command()))
        .done()
}
