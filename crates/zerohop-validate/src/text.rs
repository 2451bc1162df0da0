//! Lines as the tools meant them: numbered from 1 as an editor shows them,
//! with what terminals, launchers and log collectors add taken off.
//!
//! A capture of a test is rarely the tool's own bytes. `nvidia-smi` wraps
//! its header in ANSI underline escapes; Open MPI's `--tag-output` puts
//! `[1,0]<stdout>:` before every chunk a rank writes, which lands in the
//! middle of a line when the rank writes a line in pieces; Slurm's
//! `srun --label` prefixes `0: `; `kubectl logs --prefix` prefixes
//! `[pod/NAME/CONTAINER] ` and `--timestamps` an RFC 3339 time. Parsers see
//! the text without any of these, and report line numbers of the file.

use std::borrow::Cow;

/// One line of a capture, cleaned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// 1-based line number in the capture.
    pub number: u32,
    /// The text without its line ending, terminal escapes and launcher tags.
    pub text: Cow<'a, str>,
}

/// The lines of `input`, numbered from 1 and [`clean`]ed.
pub fn lines(input: &str) -> impl Iterator<Item = Line<'_>> {
    input.lines().zip(1u32..).map(|(raw, number)| Line {
        number,
        text: clean(raw),
    })
}

/// `raw` as the tool printed it: what a carriage return overwrote, ANSI
/// escape sequences, Open MPI output tags (anywhere in the line), and a
/// leading `kubectl logs --prefix` tag, RFC 3339 timestamp or Slurm rank
/// label are removed.
pub fn clean(raw: &str) -> Cow<'_, str> {
    let mut text: Cow<'_, str> = Cow::Borrowed(raw.trim_end_matches('\r'));
    // A carriage return moves the cursor back: only what follows the last
    // one is what a terminal shows.
    if let Some(at) = text.rfind('\r') {
        text = match text {
            Cow::Borrowed(s) => Cow::Borrowed(&s[at + 1..]),
            Cow::Owned(s) => Cow::Owned(s[at + 1..].to_owned()),
        };
    }
    if text.contains('\u{1b}') {
        text = Cow::Owned(strip_escapes(&text));
    }
    if text.contains("]<std") {
        text = Cow::Owned(strip_mpi_tags(&text));
    }
    let start = prefix_len(&text);
    if start == 0 {
        return text;
    }
    match text {
        Cow::Borrowed(s) => Cow::Borrowed(&s[start..]),
        Cow::Owned(s) => Cow::Owned(s[start..].to_owned()),
    }
}

/// Removes ANSI escape sequences: CSI (`ESC [` … final byte), OSC
/// (`ESC ]` … BEL or `ESC \`) and two-byte escapes.
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameter and intermediate bytes, then one final byte.
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Removes every Open MPI output tag, `[JOB,RANK]<stdout>:` (also
/// `<stderr>:` and `<stddiag>:`), wherever it sits in the line.
fn strip_mpi_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open..];
        match mpi_tag_len(after) {
            Some(len) => {
                out.push_str(&rest[..open]);
                rest = &after[len..];
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The length of the Open MPI tag at the start of `text`, if one is there.
/// Only the tag's own bytes are looked at (`[`, two numbers of at most ten
/// digits, `]`), so a line of many `[` costs no more than its length.
fn mpi_tag_len(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let digits = |from: usize| {
        bytes.get(from..).map_or(0, |rest| {
            rest.iter()
                .take(11)
                .take_while(|b| b.is_ascii_digit())
                .count()
        })
    };
    let job = digits(1);
    if job == 0 || job > 10 || bytes.get(1 + job) != Some(&b',') {
        return None;
    }
    let rank = digits(2 + job);
    let close = 2 + job + rank;
    if rank == 0 || rank > 10 || bytes.get(close) != Some(&b']') {
        return None;
    }
    let after = &text[close + 1..];
    ["<stdout>:", "<stderr>:", "<stddiag>:"]
        .iter()
        .find(|tag| after.starts_with(*tag))
        .map(|tag| close + 1 + tag.len())
}

/// How many leading bytes are collector prefixes: a `kubectl logs
/// --prefix` tag, an RFC 3339 timestamp with its space, a Slurm label.
fn prefix_len(text: &str) -> usize {
    let mut start = 0;
    if text.starts_with("[pod/")
        && let Some(end) = text.find("] ")
    {
        start = end + 2;
    }
    start += timestamp_len(&text[start..]);
    start + slurm_label_len(&text[start..])
}

/// The length of a leading RFC 3339 timestamp and the space after it
/// (`2025-01-31T12:00:00.123456789Z `), or 0.
fn timestamp_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    if bytes.len() <= shape.len()
        || !shape.iter().zip(bytes).all(|(want, got)| match want {
            b'd' => got.is_ascii_digit(),
            other => other == got,
        })
    {
        return 0;
    }
    let mut at = shape.len();
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
    }
    match bytes.get(at) {
        Some(b'Z') => at += 1,
        Some(b'+' | b'-') if bytes.len() >= at + 6 => at += 6,
        _ => {}
    }
    if bytes.get(at) == Some(&b' ') {
        at + 1
    } else {
        0
    }
}

/// The length of a leading Slurm `srun --label` tag (`  3: `), or 0.
fn slurm_label_len(text: &str) -> usize {
    let trimmed = text.trim_start_matches(' ');
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && trimmed[digits..].starts_with(": ") {
        text.len() - trimmed.len() + digits + 2
    } else {
        0
    }
}

/// Whether `text` is one or more ASCII digits.
pub fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The longest excerpt of a line evidence quotes, in characters.
pub const EXCERPT_CHARS: usize = 200;

/// `text` trimmed and cut to [`EXCERPT_CHARS`] characters (with `…`), for
/// evidence.
pub fn excerpt(text: &str) -> String {
    let trimmed = text.trim();
    match trimmed.char_indices().nth(EXCERPT_CHARS) {
        Some((at, _)) => format!("{}…", &trimmed[..at]),
        None => trimmed.to_owned(),
    }
}

/// A byte count the way people read message sizes: `8 B`, `32 MiB`,
/// `16 GiB`, or `1.5 KiB` when not a whole number of units.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    let mut whole = bytes;
    while unit + 1 < UNITS.len() && whole >= 1024 && whole.is_multiple_of(1024) {
        whole /= 1024;
        unit += 1;
    }
    if whole < 1024 || unit + 1 == UNITS.len() {
        return format!("{whole} {}", UNITS[unit]);
    }
    // Not a whole number of any larger unit: one decimal of the largest.
    let mut value = bytes as f64;
    let mut unit = 0;
    while unit + 1 < UNITS.len() && value >= 1024.0 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn ansi_underline_around_a_header_is_removed() {
        assert_eq!(
            clean("\t\u{1b}[4mGPU0\tGPU1\tCPU Affinity\u{1b}[0m"),
            "\tGPU0\tGPU1\tCPU Affinity"
        );
        assert_eq!(clean("a\u{1b}]0;title\u{7}b"), "ab");
    }

    #[test]
    fn open_mpi_tags_are_removed_wherever_they_are() {
        assert_eq!(
            clean("[1,0]<stdout>:     8   2  float  sum  -1[1,0]<stdout>:  85.70  0.00"),
            "     8   2  float  sum  -1  85.70  0.00"
        );
        // A bracket that is not a tag stays.
        assert_eq!(
            clean("[0] NCCL INFO x [1,a]<stdout>:"),
            "[0] NCCL INFO x [1,a]<stdout>:"
        );
    }

    #[test]
    fn collector_prefixes_at_the_start_are_removed() {
        assert_eq!(clean("  3: # nThread 1"), "# nThread 1");
        assert_eq!(
            clean("2025-01-31T12:00:00.123456789Z # Avg bus bandwidth : 1"),
            "# Avg bus bandwidth : 1"
        );
        assert_eq!(
            clean("[pod/job-launcher/mpi] 2025-01-31T12:00:00+01:00 x"),
            "x"
        );
        // Numbers that are table cells are not labels.
        assert_eq!(clean("     8388608    2097152"), "     8388608    2097152");
        assert_eq!(
            clean("10.0.0.1:/export on /mnt"),
            "10.0.0.1:/export on /mnt"
        );
    }

    #[test]
    fn a_carriage_return_keeps_what_the_terminal_shows() {
        assert_eq!(clean("progress 10%\rdone\r"), "done");
        let numbered: Vec<u32> = lines("a\r\nb\n\nc").map(|l| l.number).collect();
        assert_eq!(numbered, vec![1, 2, 3, 4]);
    }

    #[test]
    fn sizes_read_like_message_sizes() {
        assert_eq!(size_text(8), "8 B");
        assert_eq!(size_text(33_554_432), "32 MiB");
        assert_eq!(size_text(17_179_869_184), "16 GiB");
        assert_eq!(size_text(26_549_638_485), "24.7 GiB");
        assert_eq!(size_text(1536), "1.5 KiB");
    }

    #[test]
    fn excerpts_are_cut_on_a_character_boundary() {
        let long = "é".repeat(300);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    proptest! {
        #[test]
        fn cleaning_never_panics_and_never_grows(raw in "\\PC{0,80}|[\\[\\]\\x1b0-9,:<>a-z \\r\\t]{0,80}") {
            let cleaned = clean(&raw);
            prop_assert!(cleaned.len() <= raw.len());
            let _ = excerpt(&raw);
        }
    }
}
