//! How a check says that a fact could not be established: `unknown`,
//! with the kind of gap (absent, not captured, unreadable and why) as the
//! evidence's value, so that a report never shows one word for all three.

use zerohop_host::IoKind;
use zerohop_host::facts::{Gap, GapKind};

use crate::context::Outcome;

/// `unknown` because a fact could not be established, with the kind of
/// gap as the evidence's value: absent, not captured, or unreadable (and
/// why), never one word for all three.
pub(crate) fn unknown_from(gap: &Gap) -> Outcome {
    Outcome::unknown(format!("cannot tell: {}", gap.reason))
        .evidence(&gap.path, gap_value(gap.kind))
}

/// How evidence shows a gap of `kind`.
pub(crate) fn gap_value(kind: GapKind) -> String {
    match kind {
        GapKind::Missing => "<missing>".to_owned(),
        GapKind::NotRecorded => "<not captured>".to_owned(),
        GapKind::Withheld => "<captured without its content>".to_owned(),
        GapKind::Empty => "<empty>".to_owned(),
        GapKind::Malformed => "<not understood>".to_owned(),
        GapKind::TooLarge => "<too large to read>".to_owned(),
        GapKind::NotText => "<not text>".to_owned(),
        GapKind::NotRegular => "<not a regular file>".to_owned(),
        GapKind::SymlinkLoop => "<symlink loop>".to_owned(),
        GapKind::TimedOut => "<read timed out>".to_owned(),
        GapKind::GaveUp => "<not read: earlier reads are stuck>".to_owned(),
        GapKind::Io(io) => format!("<unreadable: {}>", io_text(io)),
    }
}

/// What the operating system said, in the words of its error.
fn io_text(kind: IoKind) -> &'static str {
    match kind {
        IoKind::PermissionDenied => "permission denied",
        IoKind::InvalidInput => "invalid argument",
        IoKind::Unsupported => "not supported",
        IoKind::Busy => "device busy",
        IoKind::TimedOut => "timed out",
        IoKind::Other => "i/o error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_gap_reads_differently() {
        let missing = unknown_from(&Gap::new("/x", GapKind::Missing, "absent"));
        assert_eq!(missing.evidence[0].value, "<missing>");
        assert_eq!(gap_value(GapKind::NotRecorded), "<not captured>");
        assert_eq!(
            gap_value(GapKind::Io(IoKind::PermissionDenied)),
            "<unreadable: permission denied>"
        );
        assert_ne!(gap_value(GapKind::Empty), gap_value(GapKind::Malformed));
    }
}
