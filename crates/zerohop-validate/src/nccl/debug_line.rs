//! Finding NCCL's debug messages in a line, wherever they start.
//!
//! NCCL writes `HOST:PID:TID [DEV] NCCL INFO message` (warnings carry the
//! source position before `NCCL WARN`, and may start with a timestamp) to
//! the same standard output as the test's table. Several processes write
//! at once, so a message can start in the middle of a table row (`… sum
//! -1mew0:64904:64904 [1] NCCL INFO AllReduce: …`) or of another message,
//! and the row goes on in a later line. [`split`] cuts a line into the text
//! before the first message and the messages, so that the row can be
//! stitched back together and every message read on its own.

use std::collections::HashSet;

/// The level of a debug message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `NCCL INFO`.
    Info,
    /// `NCCL WARN`.
    Warn,
}

/// One debug message found in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    /// INFO or WARN.
    pub level: Level,
    /// The host name NCCL printed.
    pub host: &'a str,
    /// The CUDA device of the thread that logged it.
    pub device: u32,
    /// The source position a warning names (`ib_plugin.c:1615`).
    pub source: Option<&'a str>,
    /// The message after `NCCL INFO ` or `NCCL WARN `.
    pub text: &'a str,
    /// Another message started before this one ended: its text is cut and
    /// its end is somewhere in a later line.
    pub cut: bool,
}

/// A line cut into what precedes the first debug message and the messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The text before the first message (the whole line when there is none).
    pub before: &'a str,
    /// The messages, in order.
    pub messages: Vec<Message<'a>>,
}

const MARKERS: [(&str, Level); 2] = [("NCCL INFO", Level::Info), ("NCCL WARN", Level::Warn)];

/// How far before a marker its header is looked for: a host name (at most
/// 64 bytes, `HOST_NAME_MAX`), two process IDs, the device and a source
/// position fit many times over. Bounding it keeps a line of a million
/// markers linear.
const HEADER_WINDOW: usize = 512;

/// Cuts `line` at every debug message header. `hosts` are host names seen
/// before: when a header is glued to the text before it (`-1mew0:…`), the
/// longest known host that ends the glued word is the host; without one,
/// the host starts at the word's first letter.
pub fn split<'a>(line: &'a str, hosts: &HashSet<String>) -> Split<'a> {
    let mut headers: Vec<(usize, usize, Message<'a>)> = Vec::new();
    for (marker, level) in MARKERS {
        let mut from = 0;
        while let Some(found) = line[from..].find(marker) {
            let at = from + found;
            from = at + marker.len();
            if let Some((start, message)) = header(line, at, marker.len(), level, hosts) {
                headers.push((start, at + marker.len(), message));
            }
        }
    }
    if headers.is_empty() {
        return Split {
            before: line,
            messages: Vec::new(),
        };
    }
    headers.sort_by_key(|(start, _, _)| *start);
    let before = &line[..headers[0].0];
    let count = headers.len();
    let mut messages = Vec::with_capacity(count);
    for index in 0..count {
        let end = headers.get(index + 1).map_or(line.len(), |next| next.0);
        let (_, text_start, mut message) = headers[index].clone();
        let text_start = text_start.min(end);
        message.text = line[text_start..end]
            .strip_prefix(' ')
            .unwrap_or(&line[text_start..end]);
        message.cut = index + 1 < count;
        messages.push(message);
    }
    Split { before, messages }
}

/// The header that ends with the marker at `at`: its start and the message
/// with an empty text. `None` when the marker is not preceded by
/// `HOST:PID:TID [DEV] ` (and, for warnings, an optional `FILE:LINE `).
fn header<'a>(
    line: &'a str,
    at: usize,
    marker_len: usize,
    level: Level,
    hosts: &HashSet<String>,
) -> Option<(usize, Message<'a>)> {
    // The marker must be a word of its own.
    let after = line.get(at + marker_len..)?;
    if !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    let mut window = at.saturating_sub(HEADER_WINDOW);
    while !line.is_char_boundary(window) {
        window -= 1;
    }
    let mut head = line[window..at].strip_suffix(' ')?;
    let mut source = None;
    if !head.ends_with(']') {
        let space = head.rfind(' ')?;
        let token = &head[space + 1..];
        if !token.contains(':') {
            return None;
        }
        source = Some(token);
        head = &head[..space];
    }
    let bracketed = head.strip_suffix(']')?;
    let open = bracketed.rfind('[')?;
    let device: u32 = bracketed[open + 1..].parse().ok()?;
    let ids = bracketed[..open].strip_suffix(' ')?;
    // ids ends with HOST:PID:TID
    let (rest, tid) = ids.rsplit_once(':')?;
    let (word, pid) = rest.rsplit_once(':')?;
    if !is_number(tid) || !is_number(pid) {
        return None;
    }
    // The word starts after the last character a host name cannot have
    // (which may be more than one byte long).
    let word_start = word
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let glued = &word[word_start..];
    let host_offset = host_start(glued, hosts);
    let host = &glued[host_offset..];
    if host.is_empty() {
        return None;
    }
    Some((
        window + word_start + host_offset,
        Message {
            level,
            host,
            device,
            source,
            text: "",
            cut: false,
        },
    ))
}

/// Where the host name starts in `glued`, a host name perhaps preceded by
/// the end of a table row.
fn host_start(glued: &str, hosts: &HashSet<String>) -> usize {
    // The longest known host that ends the word: try each suffix of at most
    // `MAX_HOST` bytes, longest first.
    let shortest_start = glued.len().saturating_sub(MAX_HOST);
    if let Some(start) = (shortest_start..glued.len())
        .filter(|i| glued.is_char_boundary(*i))
        .find(|i| hosts.contains(&glued[*i..]))
    {
        return start;
    }
    // Host names that start with a digit are rare; a glued row ends with
    // digits (`-1`, `0`), so the host is taken to start at the first letter.
    glued.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0)
}

/// The longest host name NCCL prints (`HOST_NAME_MAX`).
pub const MAX_HOST: usize = 64;

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> HashSet<String> {
        HashSet::new()
    }

    #[test]
    fn a_whole_info_line_is_one_message() {
        let split = split("mew0:64904:64921 [1] NCCL INFO Using network IB", &none());
        assert_eq!(split.before, "");
        assert_eq!(split.messages.len(), 1);
        let message = &split.messages[0];
        assert_eq!(message.host, "mew0");
        assert_eq!(message.device, 1);
        assert_eq!(message.level, Level::Info);
        assert_eq!(message.text, "Using network IB");
        assert!(!message.cut);
    }

    #[test]
    fn a_warning_carries_its_source_position() {
        let split = split(
            "hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion",
            &none(),
        );
        let message = &split.messages[0];
        assert_eq!(message.level, Level::Warn);
        assert_eq!(message.source, Some("ib_plugin.c:1615"));
        assert_eq!(message.host, "hostname-test");
        assert_eq!(message.text, "NET/IB : Got completion");
    }

    #[test]
    fn a_message_glued_to_a_table_row_leaves_the_row() {
        let line = "    8388608       2097152     float     sum      -1mew0:64904:64904 [1] NCCL INFO AllReduce: opCount 0";
        let split = split(line, &none());
        assert_eq!(
            split.before,
            "    8388608       2097152     float     sum      -1"
        );
        assert_eq!(split.messages[0].host, "mew0");
        // A known host that starts with a digit is still cut right.
        let hosts: HashSet<String> = ["3f4e5d".to_owned()].into();
        let split = split_owned(
            "  83.33  100.66  100.66      03f4e5d:1:2 [0] NCCL INFO x",
            &hosts,
        );
        assert_eq!(split.0, "  83.33  100.66  100.66      0");
    }

    fn split_owned(line: &str, hosts: &HashSet<String>) -> (String, usize) {
        let split = split(line, hosts);
        (split.before.to_owned(), split.messages.len())
    }

    #[test]
    fn a_message_cut_by_another_process_is_marked() {
        // Both processes run on hosts seen at the start of other lines: the
        // cut falls between `P2P/C` and the host, which no rule on letters
        // and digits could tell.
        let line = "x:1:2 [2] NCCL INFO Channel 00/0 : 2[2] -> 1[1] via P2P/Cx3006c0s1b1n0:1433821:1433921 [0] NCCL INFO NET/IB : No device found.";
        let hosts: HashSet<String> = ["x".to_owned(), "x3006c0s1b1n0".to_owned()].into();
        let split = split(line, &hosts);
        assert_eq!(split.messages.len(), 2);
        assert!(split.messages[0].cut);
        assert_eq!(
            split.messages[0].text,
            "Channel 00/0 : 2[2] -> 1[1] via P2P/C"
        );
        assert_eq!(split.messages[1].host, "x3006c0s1b1n0");
        assert_eq!(split.messages[1].text, "NET/IB : No device found.");
    }

    #[test]
    fn a_host_after_a_multibyte_character_is_cut_on_its_boundary() {
        let split = split("err=\u{fffd}h:1:2 [0] NCCL WARN x", &none());
        assert_eq!(split.before, "err=\u{fffd}");
        assert_eq!(split.messages[0].host, "h");
    }

    #[test]
    fn text_that_only_mentions_the_marker_is_not_a_message() {
        for line in [
            "grep 'NCCL INFO' log",
            "NCCL INFO at the start",
            "host:pid:tid [x] NCCL INFO bad ids",
            "h:1:2 [0] NCCL INFOS not a word",
        ] {
            let split = split(line, &none());
            assert!(split.messages.is_empty(), "{line}");
            assert_eq!(split.before, line);
        }
    }
}
