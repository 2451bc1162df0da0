//! The output of nccl-tests (`all_reduce_perf` and its siblings): the
//! preamble, the device list, the result table and its summary, and the
//! failure lines, in every layout the tool has printed.
//!
//! Layouts read (`src/util.cu` and `src/common.h` of nccl-tests):
//! * the current table, `size count type redop root time algbw busbw
//!   #wrong time algbw busbw #wrong`, also with per-iteration columns
//!   (`i_min i_max i_p99 i_cv%`) and a trailing timestamp;
//! * the legacy table without `root` and with an `error` column instead of
//!   `#wrong` (and an empty `redop` cell for all-to-all);
//! * several tests in one log (`# Collective test starting: …`), a
//!   reduced `maxBytes`, times in scientific notation;
//! * rows split by debug messages of other processes, stitched back.

use crate::nccl::collective::Collective;
use crate::nccl::version::NcclVersion;
use crate::notes::Notes;
use crate::text::{excerpt, is_digits};

/// The most rows kept per test; sizes double from one row to the next, so
/// real tables have a few dozen.
pub const MAX_ROWS: usize = 4096;

/// The most tests kept per capture.
pub const MAX_RUNS: usize = 256;

/// The most failure lines kept.
pub const MAX_FAILURES: usize = 256;

/// Everything nccl-tests printed in one capture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NcclTests {
    /// The tests, in order.
    pub runs: Vec<TestRun>,
    /// Lines saying a test failed: an NCCL or CUDA error, a timeout.
    pub failures: Vec<TestFailure>,
    /// Per-rank counts of wrong elements (`rank=3 #wrong=12`).
    pub wrong_ranks: Vec<WrongRank>,
}

/// One test: preamble, table and summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestRun {
    /// The first line of the test.
    pub line: u32,
    /// The collective, when the output names it (`# Collective test
    /// starting: all_reduce_perf`, nccl-tests 2.17 and later).
    pub collective: Option<(u32, Collective)>,
    /// nccl-tests' version (`# nccl-tests version 2.17.6 …`).
    pub tests_version: Option<String>,
    /// The NCCL library it ran with (`nccl-library=22807`).
    pub library: Option<NcclVersion>,
    /// The `# nThread …` line.
    pub params: Option<Params>,
    /// The `#  Rank …` lines.
    pub devices: Vec<RankDevice>,
    /// `# Reducing maxBytes to N due to memory limitation`: line and bytes.
    pub reduced_max_bytes: Option<(u32, u64)>,
    /// The line of the column header (`#  size  count  type …`).
    pub header_line: Option<u32>,
    /// The table uses the legacy `error` column instead of `#wrong`.
    pub legacy_layout: bool,
    /// The rows, in order.
    pub rows: Vec<Row>,
    /// `# Out of bounds values : N OK|FAILED`.
    pub out_of_bounds: Option<OutOfBounds>,
    /// `# Avg bus bandwidth : X [OK|FAILED]`.
    pub avg_busbw: Option<AvgBusbw>,
}

impl TestRun {
    /// Whether the table got as far as its summary.
    pub fn complete(&self) -> bool {
        self.avg_busbw.is_some()
    }

    /// The hosts of the device list, in order of first appearance.
    pub fn hosts(&self) -> Vec<&str> {
        let mut hosts: Vec<&str> = Vec::new();
        for device in &self.devices {
            if !hosts.contains(&device.host.as_str()) {
                hosts.push(&device.host);
            }
        }
        hosts
    }

    /// The row with the largest size (the last one, normally).
    pub fn largest(&self) -> Option<&Row> {
        self.rows.iter().max_by_key(|row| row.size)
    }

    fn is_empty(&self) -> bool {
        self.collective.is_none()
            && self.tests_version.is_none()
            && self.params.is_none()
            && self.devices.is_empty()
            && self.header_line.is_none()
            && self.avg_busbw.is_none()
    }
}

/// The `# nThread 1 nGpus 8 minBytes … validation: 1 …` line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    /// Its line.
    pub line: u32,
    /// GPUs per process (`-g`).
    pub gpus_per_process: Option<u32>,
    /// Smallest size asked for.
    pub min_bytes: Option<u64>,
    /// Largest size asked for.
    pub max_bytes: Option<u64>,
    /// Timed iterations per size.
    pub iters: Option<u64>,
    /// Whether results were checked (`-c`); `None` when not printed.
    pub validation: Option<bool>,
}

/// One `#  Rank  3 Group  0 Pid 4242 on node-1 device  3 [0x45] NAME` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankDevice {
    /// Its line.
    pub line: u32,
    /// The rank.
    pub rank: u32,
    /// The host it ran on.
    pub host: String,
    /// The CUDA device index on that host.
    pub device: u32,
    /// The GPU's name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
}

/// One row of the result table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The line the row starts on.
    pub line: u32,
    /// Message size in bytes.
    pub size: u64,
    /// Element count.
    pub count: u64,
    /// Data type (`float`).
    pub dtype: String,
    /// Reduction (`sum`, `none`), absent in layouts and collectives without one.
    pub redop: Option<String>,
    /// Root rank, absent in the legacy layout.
    pub root: Option<i64>,
    /// The out-of-place measurement (absent in trace-replay rows).
    pub out_of_place: Option<Measure>,
    /// The in-place measurement.
    pub in_place: Measure,
}

impl Row {
    /// The better bus bandwidth of the two measurements, GB/s.
    pub fn busbw(&self) -> f64 {
        self.out_of_place
            .as_ref()
            .map_or(self.in_place.busbw, |m| m.busbw.max(self.in_place.busbw))
    }

    /// Wrong elements over both measurements; `None` when not checked.
    pub fn wrong(&self) -> Option<u64> {
        let both = [
            self.out_of_place.as_ref().and_then(|m| m.wrong),
            self.in_place.wrong,
        ];
        if both.iter().all(Option::is_none) {
            None
        } else {
            Some(both.iter().flatten().sum())
        }
    }
}

/// One measurement of a row: time, bandwidths, wrong elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// Average time per operation, µs.
    pub time_us: f64,
    /// Algorithm bandwidth, GB/s (10⁹ bytes per second).
    pub algbw: f64,
    /// Bus bandwidth, GB/s.
    pub busbw: f64,
    /// Wrong elements; `None` when validation was off (`N/A`).
    pub wrong: Option<u64>,
}

/// `# Out of bounds values : N OK|FAILED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfBounds {
    /// Its line.
    pub line: u32,
    /// How many values were out of bounds.
    pub count: u64,
}

/// `# Avg bus bandwidth : X [OK|FAILED]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AvgBusbw {
    /// Its line.
    pub line: u32,
    /// The average bus bandwidth, GB/s.
    pub value: f64,
    /// The verdict against `NCCL_TESTS_MIN_BW`, when one was set.
    pub passed: Option<bool>,
}

/// What kind of failure a failure line reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// `Test NCCL failure`: an NCCL call returned an error.
    Nccl,
    /// `Test CUDA failure`: a CUDA call returned an error.
    Cuda,
    /// `Test timeout (Ns)`: an operation ran longer than `-T`.
    Timeout,
}

/// One failure line, `HOST: Test NCCL failure FILE:LINE 'MESSAGE'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFailure {
    /// Its line.
    pub line: u32,
    /// The host that printed it.
    pub host: String,
    /// NCCL, CUDA or timeout.
    pub kind: FailureKind,
    /// The error text between the quotes (the timeout for a timeout).
    pub message: String,
    /// The ` .. HOST pid N: Test failure FILE:LINE` lines that followed.
    pub trace_lines: u32,
}

/// `rank=3 #wrong=12`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongRank {
    /// Its line.
    pub line: u32,
    /// The rank.
    pub rank: u32,
    /// Its wrong elements.
    pub wrong: u64,
}

/// The column positions of one half (out-of-place or in-place) of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Half {
    time: usize,
    algbw: usize,
    busbw: usize,
    wrong: usize,
}

/// The layout of the right-hand part of the table, from its header.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    /// Columns from the first `time` to the end (timestamp excluded).
    width: usize,
    halves: Vec<Half>,
}

/// Reads nccl-tests output line by line; see [`NcclTests`].
#[derive(Debug, Default)]
pub struct TestsParser {
    out: NcclTests,
    run: TestRun,
    layout: Option<Layout>,
    in_devices: bool,
    /// A row split by debug messages: its first line and its text so far.
    pending: Option<(u32, String)>,
}

impl TestsParser {
    /// Feeds one line (or, with `ended` false, the start of a line that a
    /// debug message interrupted).
    pub fn feed(&mut self, number: u32, text: &str, ended: bool, notes: &mut Notes) {
        if !ended {
            if self.layout.is_some() && row_like(text) && !text.trim().is_empty() {
                let pending = self.pending.get_or_insert_with(|| (number, String::new()));
                pending.1.push_str(text);
            }
            return;
        }
        match self.pending.take() {
            Some((start, mut joined)) => {
                joined.push_str(text);
                self.line(start, &joined, notes);
            }
            None => self.line(number, text, notes),
        }
    }

    /// The result; `notes` gets what the end of the input left unread.
    pub fn finish(mut self, last_line: u32, notes: &mut Notes) -> NcclTests {
        if let Some((start, text)) = self.pending.take() {
            self.line(start, &text, notes);
        }
        if self.layout.is_some() {
            notes.push(
                last_line,
                format!(
                    "the table that starts at line {} ends without its summary",
                    self.run.header_line.unwrap_or(last_line)
                ),
            );
        }
        self.close_run();
        self.out
    }

    fn line(&mut self, number: u32, text: &str, notes: &mut Notes) {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            self.comment(number, comment.trim(), notes);
            return;
        }
        self.in_devices = false;
        if self.failure(number, trimmed) {
            return;
        }
        if let Some(rest) = trimmed.strip_prefix("NCCL version ") {
            // NCCL_DEBUG=VERSION prints the library version alone.
            if let Some(version) = NcclVersion::parse(rest) {
                self.run.library.get_or_insert(version);
            }
            return;
        }
        if let Some(wrong) = wrong_rank(number, trimmed) {
            self.out.wrong_ranks.push(wrong);
            return;
        }
        if let Some(layout) = &self.layout {
            match parse_row(number, trimmed, layout) {
                Some(row) if self.run.rows.len() < MAX_ROWS => self.run.rows.push(row),
                Some(_) => {}
                None => notes.push(
                    number,
                    format!("unreadable table row `{}`", excerpt(trimmed)),
                ),
            }
        }
    }

    fn comment(&mut self, number: u32, comment: &str, notes: &mut Notes) {
        if let Some(rest) = comment.strip_prefix("nccl-tests version ") {
            self.start_run(number);
            self.run.tests_version = rest.split_whitespace().next().map(str::to_owned);
            self.run.library = rest
                .split_whitespace()
                .find_map(|t| t.strip_prefix("nccl-library="))
                .and_then(|code| code.parse().ok())
                .and_then(NcclVersion::from_code);
            return;
        }
        if let Some(rest) = comment.strip_prefix("Collective test starting:") {
            if self.run.collective.is_some() || self.run.header_line.is_some() {
                self.start_run(number);
            }
            if self.run.is_empty() {
                self.run.line = number;
            }
            if let Some(collective) = Collective::parse(rest) {
                self.run.collective = Some((number, collective));
            }
            return;
        }
        if comment.starts_with("nThread ") {
            if self.run.params.is_some() || self.run.header_line.is_some() {
                self.start_run(number);
            }
            if self.run.is_empty() {
                self.run.line = number;
            }
            self.run.params = Some(params(number, comment));
            return;
        }
        if comment == "Using devices" {
            self.in_devices = true;
            return;
        }
        if self.in_devices {
            if let Some(device) = rank_device(number, comment) {
                self.run.devices.push(device);
                return;
            }
            self.in_devices = false;
        }
        if let Some(rest) = comment.strip_prefix("Reducing maxBytes to ") {
            if let Some(bytes) = rest.split_whitespace().next().and_then(|b| b.parse().ok()) {
                self.run.reduced_max_bytes = Some((number, bytes));
            }
            return;
        }
        if let Some(layout) = header(comment) {
            if !self.run.rows.is_empty() || self.run.avg_busbw.is_some() {
                self.start_run(number);
            }
            if self.run.is_empty() {
                self.run.line = number;
            }
            self.run.header_line = Some(number);
            self.run.legacy_layout = comment.split_whitespace().any(|t| t == "error");
            self.layout = Some(layout);
            return;
        }
        if let Some((key, value)) = comment.split_once(':') {
            match key.trim() {
                "Out of bounds values" => {
                    if let Some(count) =
                        value.split_whitespace().next().and_then(|c| c.parse().ok())
                    {
                        self.run.out_of_bounds = Some(OutOfBounds {
                            line: number,
                            count,
                        });
                    }
                }
                "Avg bus bandwidth" => {
                    let mut words = value.split_whitespace();
                    match words.next().and_then(|v| v.parse().ok()) {
                        Some(value) => {
                            let passed = match words.next() {
                                Some("OK") => Some(true),
                                Some("FAILED") => Some(false),
                                _ => None,
                            };
                            self.run.avg_busbw = Some(AvgBusbw {
                                line: number,
                                value,
                                passed,
                            });
                        }
                        None => notes.push(number, "unreadable average bus bandwidth"),
                    }
                    self.layout = None;
                }
                _ => {}
            }
        }
    }

    /// Recognises failure lines; true when `text` was one.
    fn failure(&mut self, number: u32, text: &str) -> bool {
        if let Some(rest) = text.strip_prefix(".. ") {
            if rest.contains(": Test failure ") {
                if let Some(last) = self.out.failures.last_mut() {
                    last.trace_lines += 1;
                }
                return true;
            }
            return false;
        }
        let kinds = [
            (": Test NCCL failure ", FailureKind::Nccl),
            (": Test CUDA failure ", FailureKind::Cuda),
            (": Test timeout ", FailureKind::Timeout),
        ];
        for (marker, kind) in kinds {
            let Some(at) = text.find(marker) else {
                continue;
            };
            let host = text[..at].trim().to_owned();
            let rest = &text[at + marker.len()..];
            let message = match kind {
                FailureKind::Timeout => rest
                    .strip_prefix('(')
                    .and_then(|r| r.split_once(')'))
                    .map_or_else(|| rest.to_owned(), |(seconds, _)| seconds.to_owned()),
                _ => match (rest.find('\''), rest.rfind('\'')) {
                    (Some(open), Some(close)) if close > open => rest[open + 1..close]
                        .trim_end_matches([' ', '/'])
                        .to_owned(),
                    _ => rest.to_owned(),
                },
            };
            if self.out.failures.len() < MAX_FAILURES {
                self.out.failures.push(TestFailure {
                    line: number,
                    host,
                    kind,
                    message,
                    trace_lines: 0,
                });
            }
            // A failure ends the table it interrupted.
            self.layout = None;
            return true;
        }
        false
    }

    fn start_run(&mut self, number: u32) {
        self.close_run();
        self.layout = None;
        self.in_devices = false;
        self.run = TestRun {
            line: number,
            ..TestRun::default()
        };
    }

    fn close_run(&mut self) {
        let run = std::mem::take(&mut self.run);
        if !run.is_empty() && self.out.runs.len() < MAX_RUNS {
            self.out.runs.push(run);
        }
    }
}

/// Whether a piece of a row could be a piece of a table row: digits,
/// words, signs and blanks, nothing of a log line's punctuation.
fn row_like(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '\t' | '.' | '+' | '-' | '/'))
}

/// The table layout a column header describes, or `None` when `comment`
/// is not a column header.
fn header(comment: &str) -> Option<Layout> {
    let names: Vec<&str> = comment.split_whitespace().collect();
    let has = |name: &str| names.contains(&name);
    if !(has("size") && has("count") && has("type") && has("busbw")) {
        return None;
    }
    let first = names.iter().position(|n| *n == "time" || *n == "cputime")?;
    let right: Vec<&str> = names[first..]
        .iter()
        .copied()
        .filter(|n| *n != "timestamp")
        .collect();
    let mut halves = Vec::new();
    let starts: Vec<usize> = right
        .iter()
        .enumerate()
        .filter(|(_, n)| **n == "time" || **n == "cputime")
        .map(|(i, _)| i)
        .collect();
    for (index, &start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(right.len());
        let find = |name: &[&str]| {
            right[start..end]
                .iter()
                .position(|n| name.contains(n))
                .map(|p| start + p)
        };
        halves.push(Half {
            time: start,
            algbw: find(&["algbw"])?,
            busbw: find(&["busbw"])?,
            wrong: find(&["#wrong", "error"])?,
        });
    }
    (!halves.is_empty()).then_some(Layout {
        width: right.len(),
        halves,
    })
}

/// One table row, or `None` when `text` does not fit the layout.
fn parse_row(number: u32, text: &str, layout: &Layout) -> Option<Row> {
    let mut tokens: Vec<&str> = text.split_whitespace().collect();
    // A trailing `YYYY-MM-DD HH:MM:SS` timestamp is not a measurement.
    while tokens
        .last()
        .is_some_and(|t| t.contains(':') || (t.len() == 10 && t.as_bytes().get(4) == Some(&b'-')))
    {
        tokens.pop();
    }
    let in_half = *layout.halves.last()?;
    if tokens.len() >= layout.width + 3 {
        let (left, right) = tokens.split_at(tokens.len() - layout.width);
        let out_of_place = match layout.halves.first() {
            Some(half) if layout.halves.len() > 1 => Some(measure(right, *half, 0)?),
            _ => None,
        };
        return row_from(number, left, out_of_place, measure(right, in_half, 0)?);
    }
    // A trace-replay row prints only the in-place half.
    let half_width = layout.width - in_half.time;
    if layout.halves.len() < 2 || tokens.len() < half_width + 3 {
        return None;
    }
    let (left, right) = tokens.split_at(tokens.len() - half_width);
    row_from(number, left, None, measure(right, in_half, in_half.time)?)
}

/// The measurement of `half` in the right-hand cells `right`, whose first
/// cell is column `offset` of the layout.
fn measure(right: &[&str], half: Half, offset: usize) -> Option<Measure> {
    let cell = |column: usize| right.get(column.checked_sub(offset)?).copied();
    Some(Measure {
        time_us: number_of(cell(half.time)?)?,
        algbw: number_of(cell(half.algbw)?)?,
        busbw: number_of(cell(half.busbw)?)?,
        wrong: match cell(half.wrong)? {
            "N/A" => None,
            count => Some(number_of(count)? as u64),
        },
    })
}

/// A row from its left-hand cells (size, count, type, redop, root) and its
/// measurements.
fn row_from(
    number: u32,
    left: &[&str],
    out_of_place: Option<Measure>,
    in_place: Measure,
) -> Option<Row> {
    if !(3..=5).contains(&left.len()) || !is_digits(left[0]) || !is_digits(left[1]) {
        return None;
    }
    let dtype = left[2];
    if !dtype.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let mut redop = None;
    let mut root = None;
    for cell in &left[3..] {
        match cell.parse::<i64>() {
            Ok(value) if root.is_none() => root = Some(value),
            Ok(_) => return None,
            Err(_) if redop.is_none() && cell.chars().all(|c| c.is_ascii_alphanumeric()) => {
                redop = Some((*cell).to_owned());
            }
            Err(_) => return None,
        }
    }
    Some(Row {
        line: number,
        size: left[0].parse().ok()?,
        count: left[1].parse().ok()?,
        dtype: dtype.to_owned(),
        redop,
        root,
        out_of_place,
        in_place,
    })
}

/// A finite, non-negative number as nccl-tests prints it (`12.5`,
/// `1.6e+07`).
fn number_of(text: &str) -> Option<f64> {
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// The `# nThread …` line's values.
fn params(number: u32, comment: &str) -> Params {
    let words: Vec<&str> = comment.split_whitespace().collect();
    let after = |key: &str| -> Option<&str> {
        words
            .iter()
            .enumerate()
            .find(|(i, w)| {
                **w == key
                    && !(key == "iters:" && *i > 0 && matches!(words[i - 1], "warmup" | "agg"))
            })
            .and_then(|(i, _)| words.get(i + 1).copied())
    };
    Params {
        line: number,
        gpus_per_process: after("nGpus").and_then(|v| v.parse().ok()),
        min_bytes: after("minBytes").and_then(|v| v.parse().ok()),
        max_bytes: after("maxBytes").and_then(|v| v.parse().ok()),
        iters: after("iters:").and_then(|v| v.parse().ok()),
        validation: after("validation:").and_then(|v| match v {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        }),
    }
}

/// `Rank  0 Group  0 Pid  61631 on x3006c0s13b1n0 device  0 [0x07] NVIDIA A100-SXM4-40GB`
/// (also without `Group`).
fn rank_device(number: u32, comment: &str) -> Option<RankDevice> {
    let words: Vec<&str> = comment.split_whitespace().collect();
    if words.first() != Some(&"Rank") {
        return None;
    }
    let rank = words.get(1)?.parse().ok()?;
    let on = words.iter().position(|w| *w == "on")?;
    let host = (*words.get(on + 1)?).to_owned();
    let device_at = words.iter().position(|w| *w == "device")?;
    let device = words.get(device_at + 1)?.parse().ok()?;
    let name = words
        .get(device_at + 2..)
        .map(|rest| {
            rest.iter()
                .skip_while(|w| w.starts_with('['))
                .copied()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    Some(RankDevice {
        line: number,
        rank,
        host,
        device,
        name,
    })
}

/// `rank=3 #wrong=12`.
fn wrong_rank(number: u32, text: &str) -> Option<WrongRank> {
    let (rank, wrong) = text.split_once(' ')?;
    Some(WrongRank {
        line: number,
        rank: rank.strip_prefix("rank=")?.parse().ok()?,
        wrong: wrong.trim().strip_prefix("#wrong=")?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (NcclTests, Notes) {
        let mut parser = TestsParser::default();
        let mut notes = Notes::default();
        let mut last = 0;
        for (line, number) in text.lines().zip(1..) {
            parser.feed(number, line, true, &mut notes);
            last = number;
        }
        (parser.finish(last, &mut notes), notes)
    }

    const CURRENT: &str = "\
# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  14744 on node-a device  0 [0000:61:00] NVIDIA L40S
#  Rank  1 Group  0 Pid  13965 on node-b device  0 [0000:61:00] NVIDIA L40S
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1    13.24    0.00    0.00      0    12.25    0.00    0.00      0
          16             4     float     sum      -1    12.05    0.00    0.00      3  1.6e+07    0.00    0.00      0
# Out of bounds values : 3 FAILED
# Avg bus bandwidth    : 0.5 OK
#
# Collective test concluded: all_reduce_perf
";

    #[test]
    fn the_current_layout_is_read_whole() {
        let (tests, notes) = parse(CURRENT);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(tests.runs.len(), 1);
        let run = &tests.runs[0];
        assert_eq!(run.collective, Some((2, Collective::AllReduce)));
        assert_eq!(run.library, Some(NcclVersion::new(2, 28, 7)));
        assert_eq!(run.tests_version.as_deref(), Some("2.17.6"));
        let params = run.params.as_ref().unwrap();
        assert_eq!(params.iters, Some(20));
        assert_eq!(params.validation, Some(true));
        assert_eq!(run.hosts(), vec!["node-a", "node-b"]);
        assert_eq!(run.devices[1].name, "NVIDIA L40S");
        assert_eq!(run.rows.len(), 2);
        let row = &run.rows[1];
        assert_eq!(row.line, 11);
        assert_eq!(row.root, Some(-1));
        assert_eq!(row.redop.as_deref(), Some("sum"));
        assert_eq!(row.out_of_place.as_ref().unwrap().wrong, Some(3));
        assert_eq!(row.in_place.time_us, 1.6e7);
        assert_eq!(row.wrong(), Some(3));
        assert_eq!(run.out_of_bounds.unwrap().count, 3);
        assert_eq!(run.avg_busbw.unwrap().passed, Some(true));
        assert!(run.complete());
    }

    #[test]
    fn the_legacy_layout_with_an_empty_redop_is_read() {
        let (tests, notes) = parse(
            "\
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
          32             1   float            89.00    0.00    0.00    N/A    85.13    0.00    0.00    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 58.6481
",
        );
        assert!(notes.is_empty(), "{notes:?}");
        let run = &tests.runs[0];
        assert!(run.legacy_layout);
        assert_eq!(run.rows[0].redop, None);
        assert_eq!(run.rows[0].root, None);
        assert_eq!(run.rows[0].wrong(), None);
        assert_eq!(run.avg_busbw.unwrap().value, 58.6481);
    }

    #[test]
    fn a_row_split_by_debug_messages_is_stitched_back() {
        let mut parser = TestsParser::default();
        let mut notes = Notes::default();
        parser.feed(
            1,
            "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
            true,
            &mut notes,
        );
        parser.feed(
            2,
            "    8388608       2097152     float     sum      -1",
            false,
            &mut notes,
        );
        parser.feed(3, "    83.33  100.66  100.66      0", false, &mut notes);
        parser.feed(4, "    80.98  103.59  103.59      0", true, &mut notes);
        let tests = parser.finish(4, &mut notes);
        let row = &tests.runs[0].rows[0];
        assert_eq!(row.line, 2);
        assert_eq!(row.out_of_place.as_ref().unwrap().busbw, 100.66);
        assert_eq!(row.in_place.busbw, 103.59);
        // The table never got its summary.
        assert_eq!(notes.total(), 1);
    }

    #[test]
    fn failures_and_their_traces_are_collected() {
        let (tests, _) = parse(
            "\
cnode2-016: Test NCCL failure common.cu:1279 'remote process exited or there was a network error / '
 .. cnode2-016 pid 297579: Test failure common.cu:1100
node: Test timeout (300s) common.cu:523
node: Test CUDA failure common.cu:99 'out of memory'
rank=2 #wrong=12
",
        );
        assert_eq!(tests.failures.len(), 3);
        assert_eq!(
            tests.failures[0].message,
            "remote process exited or there was a network error"
        );
        assert_eq!(tests.failures[0].trace_lines, 1);
        assert_eq!(tests.failures[1].kind, FailureKind::Timeout);
        assert_eq!(tests.failures[1].message, "300s");
        assert_eq!(tests.failures[2].message, "out of memory");
        assert_eq!(tests.wrong_ranks[0].wrong, 12);
    }

    #[test]
    fn garbage_in_a_table_is_noted_and_the_rest_still_read() {
        let (tests, notes) = parse(
            "\
#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong
  8  2  float  sum  -1  1.0  0.1  0.1  0  1.0  0.1  0.1  0
  this is not a row
  16  4  float  sum  -1  1.0  x  0.1  0  1.0  0.1  0.1  0
  32  8  float  sum  -1  1.0  0.1  0.1  0  1.0  0.1  0.1  0
# Avg bus bandwidth    : 0.1
",
        );
        assert_eq!(tests.runs[0].rows.len(), 2);
        assert_eq!(notes.total(), 2);
        assert_eq!(notes.items()[0].line, 3);
    }
}
