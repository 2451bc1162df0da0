//! The human report of the linter, in the style of rustc's diagnostics: the
//! rule and message, the file position, the source line with a caret under
//! the span, and the fix.
//!
//! ```text
//! error[ZL020]: `useOpenKernelModules` is deprecated and no longer honored
//!   --> cluster-policy.yaml:12:5
//!    |
//! 12 |     useOpenKernelModules: true
//!    |     ^^^^^^^^^^^^^^^^^^^^
//!    = object: ClusterPolicy/cluster-policy
//!    = help: replace it with `kernelModuleType: open`
//! ```

use std::collections::HashMap;
use std::io::{self, Write};

use crate::finding::{Finding, Status};
use crate::render::printable::{needs_escape, printable};
use crate::render::style;
use crate::report::Report;

/// Widest source excerpt shown, in terminal cells: a longer line is shown
/// as a window around the caret, with `…` where it was cut.
pub const MAX_EXCERPT_WIDTH: usize = 160;

/// Cells of the line kept before the caret when a long line is cut.
const CONTEXT_BEFORE: usize = 60;

/// Most findings on one source line shown with the line; the others on it
/// are shown without it, so that a long line with many findings is not
/// printed again and again.
pub const MAX_EXCERPTS_PER_LINE: usize = 3;

/// The source text of the inputs a report is about, by the name findings
/// use for them, for the excerpts under each finding.
#[derive(Debug, Default)]
pub struct Texts<'t> {
    files: HashMap<&'t str, Text<'t>>,
}

#[derive(Debug)]
enum Text<'t> {
    /// A whole input, with where the last line asked for starts and ends:
    /// findings come in line order, so each input is scanned once.
    Whole {
        text: &'t str,
        line: u32,
        start: usize,
        end: usize,
    },
    /// One line of an input, all that is kept of it.
    Line { number: u32, text: &'t str },
}

impl<'t> Texts<'t> {
    /// Adds the whole text of `file`.
    pub fn add(&mut self, file: &'t str, text: &'t str) {
        self.files.insert(
            file,
            Text::Whole {
                text,
                line: 1,
                start: 0,
                end: line_end(text, 0),
            },
        );
    }

    /// Adds line `number` (1-based) of `file`, when only that line is kept.
    pub fn add_line(&mut self, file: &'t str, number: u32, text: &'t str) {
        self.files.insert(file, Text::Line { number, text });
    }

    /// Line `number` (1-based) of `file` without its line break, when known.
    pub fn line(&mut self, file: &str, number: u32) -> Option<&'t str> {
        match self.files.get_mut(file)? {
            Text::Line { number: kept, text } => (*kept == number).then_some(*text),
            Text::Whole {
                text,
                line,
                start,
                end,
            } => {
                if number == 0 {
                    return None;
                }
                if number < *line {
                    (*line, *start, *end) = (1, 0, line_end(text, 0));
                }
                while *line < number {
                    if *end >= text.len() {
                        return None;
                    }
                    *start = *end + 1;
                    *end = line_end(text, *start);
                    *line += 1;
                }
                let found = text.get(*start..*end)?;
                Some(found.strip_suffix('\r').unwrap_or(found))
            }
        }
    }
}

/// Where the line starting at `start` ends: its `\n`, or the end of `text`.
fn line_end(text: &str, start: usize) -> usize {
    text.get(start..)
        .and_then(|rest| rest.find('\n'))
        .map_or(text.len(), |offset| start + offset)
}

/// Writes every problem (and `info`) finding of `report` as a rustc-style
/// diagnostic, then a summary line. Everything taken from the inputs is
/// written with terminal control characters escaped, whatever the output.
pub fn write(report: &Report, texts: &mut Texts<'_>, out: &mut dyn Write) -> io::Result<()> {
    let shown: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.status,
                Status::Fail | Status::Warn | Status::Info | Status::Unknown
            )
        })
        .collect();
    let mut per_line: HashMap<(&str, u32), (usize, usize)> = HashMap::new();
    for finding in &shown {
        if let Some(location) = &finding.location {
            per_line
                .entry((location.file.as_str(), location.line))
                .or_default()
                .0 += 1;
        }
    }
    for finding in &shown {
        // How many findings of this line were shown before, and how many
        // the line has.
        let (before, total) = match &finding.location {
            Some(location) => {
                let counts = per_line
                    .entry((location.file.as_str(), location.line))
                    .or_default();
                counts.1 += 1;
                (counts.1 - 1, counts.0)
            }
            None => (0, 1),
        };
        let excerpt = if before < MAX_EXCERPTS_PER_LINE {
            Excerpt::Shown {
                more_on_line: if before + 1 == MAX_EXCERPTS_PER_LINE {
                    total - before - 1
                } else {
                    0
                },
            }
        } else {
            Excerpt::Omitted
        };
        write_one(finding, texts, excerpt, out)?;
        writeln!(out)?;
    }
    write_summary(report, out)
}

fn label(status: Status) -> &'static str {
    match status {
        Status::Fail => "error",
        Status::Warn => "warning",
        Status::Info => "info",
        other => other.as_str(),
    }
}

/// Whether a finding is shown with its source line.
#[derive(Debug, Clone, Copy)]
enum Excerpt {
    /// With the line, and a note when the line has this many more findings
    /// shown without it.
    Shown { more_on_line: usize },
    /// Without the line: it was shown often enough above.
    Omitted,
}

/// Writes one finding as a diagnostic, with its source line when `texts`
/// has it.
pub fn write_finding(
    finding: &Finding,
    texts: &mut Texts<'_>,
    out: &mut dyn Write,
) -> io::Result<()> {
    write_one(finding, texts, Excerpt::Shown { more_on_line: 0 }, out)
}

fn write_one(
    finding: &Finding,
    texts: &mut Texts<'_>,
    excerpt: Excerpt,
    out: &mut dyn Write,
) -> io::Result<()> {
    let status = style::status(finding.status);
    let bold = style::HEADING;
    writeln!(
        out,
        "{status}{}[{}]{status:#}{bold}: {}{bold:#}",
        label(finding.status),
        printable(&finding.id),
        printable(&finding.message)
    )?;
    let number = finding
        .location
        .as_ref()
        .map_or(String::new(), |l| l.line.to_string());
    let gutter = " ".repeat(number.len());
    let dim = style::DIM;
    if let Some(location) = &finding.location {
        writeln!(
            out,
            "{gutter}{dim}-->{dim:#} {}:{}:{}",
            printable(&location.file),
            location.line,
            location.column
        )?;
        let line = match excerpt {
            Excerpt::Shown { .. } => texts.line(&location.file, location.line),
            Excerpt::Omitted => None,
        };
        if let Some(line) = line {
            let start = usize::try_from(location.column)
                .unwrap_or(1)
                .saturating_sub(1);
            let end = match (location.end_line, location.end_column) {
                (Some(end_line), Some(end_column)) if end_line == location.line => {
                    Some(usize::try_from(end_column).unwrap_or(1).saturating_sub(1))
                }
                _ => None,
            };
            let shown = window(line, start, end);
            writeln!(out, "{gutter} {dim}|{dim:#}")?;
            writeln!(out, "{dim}{number} |{dim:#} {}", shown.text)?;
            writeln!(
                out,
                "{gutter} {dim}|{dim:#} {}{status}{}{status:#}",
                " ".repeat(shown.caret),
                "^".repeat(shown.width)
            )?;
        }
        if let Excerpt::Shown { more_on_line } = excerpt
            && more_on_line > 0
        {
            writeln!(
                out,
                "{gutter} {dim}={dim:#} note: {more_on_line} more findings on line {} are shown below without it",
                location.line
            )?;
        }
    }
    if let Some(object) = &finding.object {
        let namespace = object
            .namespace
            .as_deref()
            .map_or(String::new(), |ns| format!("{ns}/"));
        writeln!(
            out,
            "{gutter} {dim}={dim:#} object: {}",
            printable(&format!("{}/{namespace}{}", object.kind, object.name))
        )?;
    }
    if let Some(fix) = &finding.remediation {
        writeln!(
            out,
            "{gutter} {dim}={dim:#} help: {}",
            printable(&fix.summary)
        )?;
        for command in &fix.commands {
            for line in command.lines() {
                writeln!(out, "{gutter}         {}", printable(line))?;
            }
        }
        for doc in &fix.docs {
            writeln!(out, "{gutter} {dim}={dim:#} see: {}", printable(doc))?;
        }
    }
    Ok(())
}

/// A source line as shown, with where the caret goes, in cells.
#[derive(Debug, PartialEq, Eq)]
struct Window {
    text: String,
    caret: usize,
    width: usize,
}

/// How a character of a source line is shown: a tab as one space (columns
/// count characters), a control character escaped.
fn shown_char(c: char, out: &mut String) {
    if c == '\t' {
        out.push(' ');
    } else if needs_escape(c) {
        out.push_str(&printable(c.encode_utf8(&mut [0; 4])));
    } else {
        out.push(c);
    }
}

/// How many cells `c` takes once shown.
fn cells(c: char) -> usize {
    if c != '\t' && needs_escape(c) {
        printable(c.encode_utf8(&mut [0; 4])).chars().count()
    } else {
        1
    }
}

/// `line` as shown under a finding whose span covers the characters
/// `start..end` (`end` unknown when the span goes past the line: the caret
/// then runs to the end of the line's text). A line wider than
/// [`MAX_EXCERPT_WIDTH`] cells is cut to a window around the caret.
fn window(line: &str, start: usize, end: Option<usize>) -> Window {
    // Cells before the span, before its end, and in the line: counted only
    // as far as the window can reach, so that a caret near the start of a
    // line of megabytes does not cost a pass over all of it.
    let end = end
        .unwrap_or_else(|| line.trim_end().chars().count())
        .max(start + 1);
    let (mut span_start, mut span_end, mut total) = (None, None, 0);
    for (index, c) in line.chars().enumerate() {
        if index == start {
            span_start = Some(total);
        }
        if index == end {
            span_end = Some(total);
        }
        if span_start.is_some_and(|at| total > at + MAX_EXCERPT_WIDTH) && span_end.is_some() {
            // Enough to place the window; the line goes on past it.
            break;
        }
        total += cells(c);
    }
    let span_start = span_start.unwrap_or(total);
    let span_end = span_end.unwrap_or(total).max(span_start + 1);

    let (from, to) = if total <= MAX_EXCERPT_WIDTH {
        (0, total)
    } else {
        let from = span_start
            .saturating_sub(CONTEXT_BEFORE)
            .min(total - MAX_EXCERPT_WIDTH);
        (from, from + MAX_EXCERPT_WIDTH)
    };
    let mut text = String::new();
    let (mut shown_from, mut shown_to, mut at) = (None, 0, 0);
    for c in line.chars() {
        let width = cells(c);
        if at >= from && at + width <= to {
            shown_from.get_or_insert(at);
            shown_to = at + width;
            shown_char(c, &mut text);
        }
        at += width;
        if at >= to {
            break;
        }
    }
    let shown_from = shown_from.unwrap_or(from);
    let mut prefix = 0;
    if shown_from > 0 {
        text.insert(0, '…');
        prefix = 1;
    }
    if shown_to < total {
        text.push('…');
    }
    let caret_from = span_start.clamp(shown_from, shown_to.max(shown_from));
    let caret_to = span_end.min(shown_to.max(caret_from + 1));
    Window {
        text,
        caret: prefix + caret_from - shown_from,
        width: caret_to.saturating_sub(caret_from).max(1),
    }
}

fn write_summary(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let counts = [
        (report.summary.fail, "error"),
        (report.summary.warn, "warning"),
        (report.summary.info, "info"),
    ];
    let parts: Vec<String> = counts
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, word)| {
            let plural = if *count == 1 || *word == "info" {
                ""
            } else {
                "s"
            };
            format!("{count} {word}{plural}")
        })
        .collect();
    let target = printable(&report.target);
    if parts.is_empty() {
        writeln!(out, "{target}: no problems found")
    } else {
        writeln!(out, "{target}: {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Location, ObjectRef, Remediation, Severity};

    fn finding() -> Finding {
        Finding {
            id: "ZL020".into(),
            name: "ignored-use-open-kernel-modules".into(),
            group: "lint".into(),
            status: Status::Fail,
            severity: Severity::Error,
            subject: "spec.driver.useOpenKernelModules".into(),
            message: "`useOpenKernelModules` is no longer honored".into(),
            evidence: vec![],
            remediation: Some(
                Remediation::new("use `kernelModuleType: open`").command("kernelModuleType: open"),
            ),
            blocked_by: None,
            location: Some(Location {
                file: "cp.yaml".into(),
                line: 3,
                column: 5,
                end_line: Some(3),
                end_column: Some(25),
            }),
            object: Some(ObjectRef {
                api_version: "nvidia.com/v1".into(),
                kind: "ClusterPolicy".into(),
                namespace: None,
                name: "cluster-policy".into(),
            }),
        }
    }

    #[test]
    fn caret_under_the_span() {
        let report = Report::new("lint", "cp.yaml", vec![finding()]);
        let text = "kind: ClusterPolicy\nspec:\n  driver:\n    useOpenKernelModules: true\n";
        // The finding's line 3 is `  driver:`; point at line 4 instead.
        let mut report = report;
        if let Some(location) = report.findings[0].location.as_mut() {
            location.line = 4;
            location.end_line = Some(4);
        }
        let mut texts = Texts::default();
        texts.add("cp.yaml", text);
        let mut out = Vec::new();
        write(&report, &mut texts, &mut out).unwrap();
        let plain = String::from_utf8(out).unwrap();
        let plain = anstream_strip(&plain);
        assert!(
            plain.contains("error[ZL020]: `useOpenKernelModules` is no longer honored"),
            "{plain}"
        );
        assert!(plain.contains(" --> cp.yaml:4:5"), "{plain}");
        assert!(
            plain.contains("4 |     useOpenKernelModules: true"),
            "{plain}"
        );
        assert!(plain.contains("  |     ^^^^^^^^^^^^^^^^^^^^\n"), "{plain}");
        assert!(
            plain.contains("= help: use `kernelModuleType: open`"),
            "{plain}"
        );
        assert!(plain.ends_with("cp.yaml: 1 error\n"), "{plain}");
    }

    #[test]
    fn missing_source_leaves_out_the_snippet() {
        let report = Report::new("lint", "x", vec![finding()]);
        let mut out = Vec::new();
        write(&report, &mut Texts::default(), &mut out).unwrap();
        let plain = anstream_strip(&String::from_utf8(out).unwrap());
        assert!(plain.contains("--> cp.yaml:3:5"));
        assert!(!plain.contains('^'));
    }

    fn at(line: u32, column: u32, end_column: u32) -> Finding {
        let mut finding = finding();
        finding.location = Some(Location {
            file: "x.yaml".into(),
            line,
            column,
            end_line: Some(line),
            end_column: Some(end_column),
        });
        finding
    }

    fn render(findings: Vec<Finding>, file: &str, text: &str) -> String {
        let report = Report::new("lint", "x.yaml", findings);
        let mut texts = Texts::default();
        texts.add(file, text);
        let mut out = Vec::new();
        write(&report, &mut texts, &mut out).unwrap();
        anstream_strip(&String::from_utf8(out).unwrap())
    }

    /// The source line and the caret line of the first excerpt: the text
    /// after `N | ` and the caret's offset and width in that text.
    fn excerpt(plain: &str) -> (String, usize, usize) {
        let lines: Vec<&str> = plain.lines().collect();
        let source = lines
            .iter()
            .position(|l| {
                l.split_once(" | ")
                    .is_some_and(|(n, _)| n.trim().parse::<u32>().is_ok())
            })
            .expect("an excerpt");
        let shown = lines[source].split_once(" | ").unwrap().1;
        let caret_line = lines[source + 1];
        let carets = caret_line.split_once(" | ").unwrap().1;
        let offset = carets.find('^').unwrap();
        let width = carets.matches('^').count();
        (shown.to_owned(), offset, width)
    }

    #[test]
    fn terminal_controls_from_the_input_are_escaped_everywhere() {
        let mut finding = at(1, 11, 14);
        finding.message = "value `\u{1b}]0;pwned\u{7}` is wrong".into();
        finding.location.as_mut().unwrap().file = "evil\u{1b}[2J.yaml".into();
        finding.object.as_mut().unwrap().name = "n\u{9b}31m".into();
        finding.remediation = Some(Remediation::new("set \u{1b}[8m").command("a: \u{7}"));
        let text = "k: \u{1b}]0;x: yes\n";
        let report = Report::new("lint", "dir\u{1b}]0;t\u{7}", vec![finding]);
        let mut texts = Texts::default();
        texts.add("evil\u{1b}[2J.yaml", text);
        let mut out = Vec::new();
        write(&report, &mut texts, &mut out).unwrap();
        let raw = String::from_utf8(out).unwrap();
        // Styles are ours (`ESC [ ... m`); nothing else may control the
        // terminal.
        let plain = anstream_strip(&raw);
        assert!(
            plain.lines().all(|line| !line.chars().any(needs_escape)),
            "{plain:?}"
        );
        assert!(
            plain.contains(r"value `\x1b]0;pwned\x07` is wrong"),
            "{plain}"
        );
        assert!(plain.contains(r"--> evil\x1b[2J.yaml:1:11"), "{plain}");
        assert!(
            plain.contains(r"object: ClusterPolicy/n\u{9b}31m"),
            "{plain}"
        );
        assert!(plain.contains(r"help: set \x1b[8m"), "{plain}");
        assert!(plain.contains(r"a: \x07"), "{plain}");
        assert!(plain.contains(r"dir\x1b]0;t\x07: 1 error"), "{plain}");
        // Column 11 is `yes`; the escaped ESC before it takes four cells.
        let (shown, offset, width) = excerpt(&plain);
        assert_eq!(shown, r"k: \x1b]0;x: yes");
        assert_eq!(&shown[offset..offset + width], "yes");
    }

    #[test]
    fn a_long_line_is_cut_around_the_caret() {
        let line = format!("{}TARGET{}", "a".repeat(100_000), "b".repeat(100_000));
        let column = 100_001;
        let plain = render(vec![at(1, column, column + 6)], "x.yaml", &line);
        let (shown, offset, width) = excerpt(&plain);
        assert!(
            shown.chars().count() <= MAX_EXCERPT_WIDTH + 2,
            "{}",
            shown.len()
        );
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert_eq!(
            shown.chars().skip(offset).take(width).collect::<String>(),
            "TARGET"
        );
        assert!(plain.len() < 1000, "{}", plain.len());

        // Near the start and at the very end, the window stays on the line.
        let plain = render(vec![at(1, 2, 3)], "x.yaml", &line);
        let (shown, offset, width) = excerpt(&plain);
        assert!(!shown.starts_with('…') && shown.ends_with('…'));
        assert_eq!((offset, width), (1, 1));
        let end = u32::try_from(line.len()).unwrap();
        let plain = render(vec![at(1, end, end + 1)], "x.yaml", &line);
        let (shown, offset, width) = excerpt(&plain);
        assert!(shown.starts_with('…') && !shown.ends_with('…'));
        assert_eq!((shown.chars().nth(offset), width), (Some('b'), 1));
    }

    #[test]
    fn a_line_with_many_findings_is_shown_a_few_times_only() {
        let line = format!("{{{}}}", "k: yes, ".repeat(2000));
        let findings: Vec<Finding> = (0..2000).map(|i| at(1, 2 + 8 * i, 3 + 8 * i)).collect();
        let plain = render(findings, "x.yaml", &line);
        assert_eq!(plain.matches("error[ZL020]").count(), 2000);
        assert_eq!(plain.matches("1 | {k: yes").count(), MAX_EXCERPTS_PER_LINE);
        assert_eq!(plain.matches(" | ").count(), 2 * MAX_EXCERPTS_PER_LINE);
        assert!(plain.contains("note: 1997 more findings on line 1 are shown below without it"));
        // Without the cut, 2,000 copies of a 16 KB line.
        assert!(plain.len() < 1_000_000, "{}", plain.len());
    }

    #[test]
    fn lines_are_found_in_any_order() {
        let mut texts = Texts::default();
        texts.add("a", "one\r\ntwo\n\nfour");
        texts.add_line("b", 7, "seven");
        assert_eq!(texts.line("a", 2), Some("two"));
        assert_eq!(texts.line("a", 4), Some("four"));
        assert_eq!(texts.line("a", 1), Some("one"));
        assert_eq!(texts.line("a", 3), Some(""));
        assert_eq!(texts.line("a", 5), None);
        assert_eq!(texts.line("a", 0), None);
        assert_eq!(texts.line("b", 7), Some("seven"));
        assert_eq!(texts.line("b", 6), None);
        assert_eq!(texts.line("c", 1), None);
    }

    /// Removes ANSI escape sequences (`ESC [ ... m`).
    fn anstream_strip(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for next in chars.by_ref() {
                    if next == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}
