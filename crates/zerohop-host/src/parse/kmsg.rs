//! Kernel log text: `/dev/kmsg` records, `dmesg` output and syslog lines,
//! one format detected per line, so that a capture mixing them still reads.
//!
//! The formats, each as its source writes it:
//! - `/dev/kmsg` (`Documentation/ABI/testing/dev-kmsg`): `prio,seq,usec,
//!   flags[,…];message`, `prio` holding the facility times 8 plus the level,
//!   `usec` the microseconds since boot. Lines starting with a space that
//!   follow a record are its dictionary (`SUBSYSTEM=pci`) and are skipped.
//! - `dmesg` (util-linux): an optional `--decode` prefix `kern  :err   : `
//!   or `--raw` prefix `<3>`, then `[  123.456789] ` (the default),
//!   `[Mon Feb 10 16:28:06 2025] ` (`--ctime`), or
//!   `2025-02-10T16:28:06,502716+00:00 ` (`--time-format=iso`, whose
//!   fraction follows a comma), then the message.
//! - syslog: `Aug 17 06:18:01 host tag[pid]: message` (RFC 3164, as
//!   rsyslog and `journalctl` write by default) or an RFC 3339 time with a
//!   dot before the fraction (`2025-02-10T16:28:06.502716+00:00 host tag:
//!   message`). A `kernel:` message that repeats the kernel's own
//!   `[  123.456789]` loses it: the syslog time is the record's.
//! - `journalctl -k`: syslog lines by default (also `-o short-iso` and
//!   `short-precise`), or `[  123.456789] host kernel: message` with `-o
//!   short-monotonic`.
//! - anything else: a message without a time, taken to be as old as the
//!   line before it.
//!
//! The parser never panics and keeps at most [`MAX_RECORDS`] records (the
//! newest) and [`MAX_LINE`] bytes of each line.

use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::time::Duration;

/// The most records kept from one text: the newest, which are the ones a
/// window keeps. A 4 MiB ring buffer holds about 40,000 records.
pub const MAX_RECORDS: usize = 1 << 16;

/// The most bytes kept of one line; the kernel's own records are at most
/// 1 KiB (`PRINTKRB_RECORD_MAX`), longer lines are cut.
pub const MAX_LINE: usize = 4096;

const MICROS: i64 = 1_000_000;
const DAY: i64 = 86_400 * MICROS;
/// A leap year: a year-less date is placed in a year long enough for 29 February.
const YEAR: i64 = 366 * DAY;

/// When a record was logged, on the clock its format uses. Stamps on
/// different clocks cannot be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Stamp {
    /// Microseconds since boot (`/dev/kmsg`, `dmesg`'s `[  12.345678]`).
    Boot(u64),
    /// Microseconds since 1970-01-01T00:00:00 on the log's own wall clock:
    /// UTC when the line gave its offset, the writer's local time otherwise.
    Wall(i64),
    /// Microseconds since the start of a year the line did not write
    /// (RFC 3164 syslog), a later year added when the dates wrap around.
    Yearless(i64),
}

impl Stamp {
    /// How many microseconds `self` is after `earlier`; `None` on different clocks.
    pub fn micros_after(self, earlier: Stamp) -> Option<i64> {
        let difference = match (self, earlier) {
            (Stamp::Boot(a), Stamp::Boot(b)) => i128::from(a) - i128::from(b),
            (Stamp::Wall(a), Stamp::Wall(b)) | (Stamp::Yearless(a), Stamp::Yearless(b)) => {
                i128::from(a) - i128::from(b)
            }
            _ => return None,
        };
        Some(i64::try_from(difference).unwrap_or(if difference < 0 { i64::MIN } else { i64::MAX }))
    }

    /// Whether `self` lies within `window` before `end` (or after it).
    pub fn within(self, window: Duration, end: Stamp) -> bool {
        let window = i64::try_from(window.as_micros()).unwrap_or(i64::MAX);
        end.micros_after(self).is_some_and(|age| age <= window)
    }
}

impl fmt::Display for Stamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Stamp::Boot(micros) => write!(
                f,
                "{}.{:06} s after boot",
                micros / 1_000_000,
                micros % 1_000_000
            ),
            Stamp::Wall(micros) => {
                let (days, rest) = (micros.div_euclid(DAY), micros.rem_euclid(DAY));
                let (year, month, day) = civil_from_days(days);
                let seconds = rest / MICROS;
                write!(
                    f,
                    "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
                    seconds / 3600,
                    seconds / 60 % 60,
                    seconds % 60
                )
            }
            Stamp::Yearless(micros) => {
                let in_year = micros.rem_euclid(YEAR);
                let day_of_year = in_year / DAY;
                let month = DAYS_BEFORE_MONTH
                    .iter()
                    .rposition(|&before| before <= day_of_year)
                    .unwrap_or(0);
                let seconds = in_year % DAY / MICROS;
                write!(
                    f,
                    "{} {:2} {:02}:{:02}:{:02}",
                    MONTHS[month],
                    day_of_year - DAYS_BEFORE_MONTH[month] + 1,
                    seconds / 3600,
                    seconds / 60 % 60,
                    seconds % 60
                )
            }
        }
    }
}

/// Which format a record's line was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Format {
    /// A `/dev/kmsg` record.
    Kmsg,
    /// A line of `dmesg` output.
    Dmesg,
    /// A syslog line.
    Syslog,
    /// A line in none of the formats above.
    Plain,
}

/// One record of a kernel log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Record {
    /// When it was logged; a line without a time takes the time of the
    /// line before it. `None` when no line before it had one either.
    pub time: Option<Stamp>,
    /// The syslog level (0 emergency … 3 error, 4 warning … 7 debug), when
    /// the format gives it (`/dev/kmsg`, `dmesg --decode`, `dmesg --raw`).
    pub level: Option<u8>,
    /// The `/dev/kmsg` sequence number.
    pub seq: Option<u64>,
    /// The syslog tag without its process id (`kernel`, `systemd-networkd`).
    pub origin: Option<String>,
    /// The 1-based line of the text the record was read from.
    pub line: usize,
    /// The format of that line.
    pub format: Format,
    /// The line as written (at most [`MAX_LINE`] bytes).
    text: String,
    /// Where the message is in `text`.
    message: Range<usize>,
}

impl Record {
    /// The message, without time, level or syslog header.
    pub fn message(&self) -> &str {
        self.text.get(self.message.clone()).unwrap_or("")
    }

    /// The record as a person reads it: the line as written, or for a
    /// `/dev/kmsg` record, as `dmesg` shows it (`[  227.996636] message`).
    pub fn shown(&self) -> String {
        match (self.format, self.time) {
            (Format::Kmsg, Some(Stamp::Boot(micros))) => format!(
                "[{:5}.{:06}] {}",
                micros / 1_000_000,
                micros % 1_000_000,
                self.message()
            ),
            _ => self.text.trim_end().to_owned(),
        }
    }
}

/// The records of a text, the newest [`MAX_RECORDS`] of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The records, oldest first.
    pub records: Vec<Record>,
    /// Older records left out past [`MAX_RECORDS`].
    pub dropped: usize,
}

/// Parses a kernel log in any of the formats of this module, line by line.
pub fn parse(text: &str) -> Parsed {
    let mut records = VecDeque::new();
    let mut dropped = 0;
    let mut previous: Option<Stamp> = None;
    let mut previous_format = Format::Plain;
    let mut yearless = Rollover::default();
    for (index, line) in text.lines().enumerate() {
        if previous_format == Format::Kmsg && line.starts_with(' ') {
            // A dictionary line of the record before it.
            continue;
        }
        let line = clip(line.trim_end_matches('\r'));
        let Some(mut parsed) = parse_line(line) else {
            continue;
        };
        parsed.time = match parsed.time {
            Some(Stamp::Yearless(micros)) => Some(Stamp::Yearless(yearless.place(micros))),
            Some(time) => Some(time),
            None => previous,
        };
        previous = parsed.time;
        previous_format = parsed.format;
        parsed.line = index + 1;
        if records.len() == MAX_RECORDS {
            records.pop_front();
            dropped += 1;
        }
        records.push_back(parsed);
    }
    Parsed {
        records: records.into(),
        dropped,
    }
}

/// Places year-less dates on a line that keeps going forward across New Year.
#[derive(Default)]
struct Rollover {
    last: Option<i64>,
    years: i64,
}

impl Rollover {
    fn place(&mut self, in_year: i64) -> i64 {
        // A date half a year before the last one is in the next year.
        if self.last.is_some_and(|last| in_year < last - YEAR / 2) {
            self.years += 1;
        }
        self.last = Some(in_year);
        in_year + self.years * YEAR
    }
}

fn clip(line: &str) -> &str {
    if line.len() <= MAX_LINE {
        return line;
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// One line; `None` for a blank one.
fn parse_line(line: &str) -> Option<Record> {
    if line.trim().is_empty() {
        return None;
    }
    let record = |format, time, level, seq, origin: Option<&str>, message: &str| Record {
        time,
        level,
        seq,
        origin: origin.map(str::to_owned),
        line: 0,
        format,
        text: line.to_owned(),
        message: offset(line, message),
    };
    if let Some((level, seq, usec, message)) = kmsg(line) {
        return Some(record(
            Format::Kmsg,
            Some(Stamp::Boot(usec)),
            Some(level),
            Some(seq),
            None,
            message,
        ));
    }
    // `dmesg --decode` or `--raw` prefixes give the level.
    let (level, rest) = match decoded(line).or_else(|| raw_level(line)) {
        Some((level, rest)) => (Some(level), rest),
        None => (None, line),
    };
    if let Some((usec, after)) = boot_stamp(rest) {
        // `journalctl -k -o short-monotonic` writes a syslog header after
        // the time; only its `kernel` tag is taken for one, since a
        // kernel message may start with two words like a header.
        let (origin, message) = match syslog_header(after) {
            (Some("kernel"), message) => (Some("kernel"), message),
            _ => (None, after),
        };
        return Some(record(
            Format::Dmesg,
            Some(Stamp::Boot(usec)),
            level,
            None,
            origin,
            message,
        ));
    }
    if let Some((wall, message)) = ctime_stamp(rest) {
        return Some(record(
            Format::Dmesg,
            Some(Stamp::Wall(wall)),
            level,
            None,
            None,
            message,
        ));
    }
    if let Some((wall, comma, after)) = iso_stamp(rest) {
        // `dmesg --time-format=iso` puts a comma before the fraction;
        // syslog's RFC 3339 a dot, and a header follows.
        if comma || level.is_some() {
            return Some(record(
                Format::Dmesg,
                Some(Stamp::Wall(wall)),
                level,
                None,
                None,
                after,
            ));
        }
        let (origin, message) = syslog_header(after);
        return Some(record(
            Format::Syslog,
            Some(Stamp::Wall(wall)),
            level,
            None,
            origin,
            message,
        ));
    }
    if let Some((in_year, after)) = rfc3164_stamp(rest) {
        let (origin, message) = syslog_header(after);
        return Some(record(
            Format::Syslog,
            Some(Stamp::Yearless(in_year)),
            level,
            None,
            origin,
            message,
        ));
    }
    let format = if level.is_some() {
        Format::Dmesg
    } else {
        Format::Plain
    };
    Some(record(format, None, level, None, None, rest.trim()))
}

/// Where `part`, a slice of `line`, lies in it.
fn offset(line: &str, part: &str) -> Range<usize> {
    let start = (part.as_ptr() as usize)
        .checked_sub(line.as_ptr() as usize)
        .filter(|start| start + part.len() <= line.len())
        .unwrap_or(line.len());
    start..start + part.len().min(line.len() - start)
}

/// A number of at most `max` ASCII digits.
fn digits(text: &str, max: usize) -> Option<u64> {
    if text.is_empty() || text.len() > max || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `prio,seq,usec,flags[,…];message`.
fn kmsg(line: &str) -> Option<(u8, u64, u64, &str)> {
    let (head, message) = line.split_once(';')?;
    let mut fields = head.split(',');
    let prio = digits(fields.next()?, 10)?;
    let seq = digits(fields.next()?, 20)?;
    let usec = digits(fields.next()?, 20)?;
    fields.next()?;
    Some(((prio & 7) as u8, seq, usec, message))
}

const LEVELS: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug",
];

const FACILITIES: [&str; 24] = [
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv",
    "ftp", "res0", "res1", "res2", "res3", "local0", "local1", "local2", "local3", "local4",
    "local5", "local6", "local7",
];

/// `dmesg --decode`'s `kern  :err   : `.
fn decoded(line: &str) -> Option<(u8, &str)> {
    let (facility, rest) = line.split_once(':')?;
    if !FACILITIES.contains(&facility.trim_end()) {
        return None;
    }
    let (level, rest) = rest.split_once(':')?;
    let level = LEVELS.iter().position(|l| *l == level.trim_end())?;
    Some((level as u8, rest.strip_prefix(' ').unwrap_or(rest)))
}

/// `dmesg --raw`'s `<3>`.
fn raw_level(line: &str) -> Option<(u8, &str)> {
    let (prio, rest) = line.strip_prefix('<')?.split_once('>')?;
    Some(((digits(prio, 10)? & 7) as u8, rest))
}

/// `[  123.456789] ` → microseconds since boot.
fn boot_stamp(text: &str) -> Option<(u64, &str)> {
    let (inside, rest) = text.strip_prefix('[')?.split_once(']')?;
    let (seconds, fraction) = inside.trim_start().split_once('.')?;
    let seconds = digits(seconds, 10)?;
    digits(fraction, 9)?;
    // The fraction's first six digits are microseconds.
    let micros = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(6)
        .fold(0u64, |acc, b| acc * 10 + u64::from(b - b'0'));
    Some((
        seconds * 1_000_000 + micros,
        rest.strip_prefix(' ').unwrap_or(rest),
    ))
}

/// `[Mon Feb 10 16:28:06 2025] ` → wall-clock microseconds.
fn ctime_stamp(text: &str) -> Option<(i64, &str)> {
    let (inside, rest) = text.strip_prefix('[')?.split_once(']')?;
    let mut words = inside.split_whitespace();
    let _weekday = words.next()?;
    let month = month(words.next()?)?;
    let day = digits(words.next()?, 2)?;
    let seconds = time_of_day(words.next()?)?;
    let year = digits(words.next()?, 4)?;
    if words.next().is_some() {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    Some((
        days * DAY + seconds.0 * MICROS + seconds.1,
        rest.strip_prefix(' ').unwrap_or(rest),
    ))
}

/// `2025-02-10T16:28:06,502716+00:00 ` → UTC microseconds, whether a
/// comma came before the fraction, and the rest.
fn iso_stamp(text: &str) -> Option<(i64, bool, &str)> {
    let (stamp, rest) = text.split_once(' ')?;
    let (date, time) = stamp.split_once('T')?;
    let mut parts = date.split('-');
    let year = digits(parts.next()?, 4)?;
    let month = digits(parts.next()?, 2)?;
    let day = digits(parts.next()?, 2)?;
    if parts.next().is_some() {
        return None;
    }
    let (seconds, _) = time_of_day(time.get(..8)?)?;
    let mut zone = time.get(8..)?;
    let mut micros = 0;
    let mut comma = false;
    if let Some(separator) = zone.chars().next().filter(|c| *c == '.' || *c == ',') {
        comma = separator == ',';
        let fraction_len = zone[1..].bytes().take_while(u8::is_ascii_digit).count();
        let fraction = &zone[1..1 + fraction_len];
        digits(fraction, 9)?;
        micros = fraction
            .bytes()
            .chain(std::iter::repeat(b'0'))
            .take(6)
            .fold(0i64, |acc, b| acc * 10 + i64::from(b - b'0'));
        zone = &zone[1 + fraction_len..];
    }
    let offset = match zone {
        "" | "Z" => 0,
        _ => {
            let sign = match zone.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hhmm = zone[1..].replace(':', "");
            if hhmm.len() != 4 || !hhmm.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let hours = digits(&hhmm[..2], 2)?;
            let minutes = digits(&hhmm[2..], 2)?;
            sign * i64::try_from(hours * 3600 + minutes * 60).ok()?
        }
    };
    let days = days_from_civil(year, month, day)?;
    Some((
        days * DAY + (seconds - offset) * MICROS + micros,
        comma,
        rest,
    ))
}

/// `Aug 17 06:18:01 ` (day possibly space-padded, seconds possibly with a
/// fraction) → microseconds since the start of a leap year.
fn rfc3164_stamp(text: &str) -> Option<(i64, &str)> {
    let month = month(text.get(..3)?)?;
    let rest = text.get(3..)?.strip_prefix(' ')?.trim_start_matches(' ');
    let (day, rest) = rest.split_once(' ')?;
    let day = digits(day, 2)?;
    let (clock, rest) = rest.split_once(' ')?;
    let (seconds, micros) = time_of_day(clock)?;
    if !(1..=29 + u64::from(month != 2) * 2).contains(&day) {
        return None;
    }
    let day_of_year =
        DAYS_BEFORE_MONTH[usize::try_from(month - 1).ok()?] + i64::try_from(day).ok()? - 1;
    Some((day_of_year * DAY + seconds * MICROS + micros, rest))
}

/// `host tag[pid]: message` → the tag without its pid, and the message. A
/// line whose second word is no tag is all message.
fn syslog_header(text: &str) -> (Option<&str>, &str) {
    let Some((host, after)) = text.split_once(' ') else {
        return (None, text);
    };
    let (tag, message) = match after.split_once(' ') {
        Some((tag, message)) => (tag, message),
        None => (after, ""),
    };
    let Some(tag) = tag.strip_suffix(':') else {
        return (None, text);
    };
    let name = match tag.split_once('[') {
        Some((name, pid))
            if pid
                .strip_suffix(']')
                .is_some_and(|p| digits(p, 10).is_some()) =>
        {
            name
        }
        Some(_) => return (None, text),
        None => tag,
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-/@".contains(&b))
    };
    if !valid(host) || !valid(name) {
        return (None, text);
    }
    let message = if name == "kernel" {
        boot_stamp(message).map_or(message, |(_, rest)| rest)
    } else {
        message
    };
    (Some(name), message)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days before each month's first in a leap year.
const DAYS_BEFORE_MONTH: [i64; 12] = [0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335];

fn month(name: &str) -> Option<u64> {
    MONTHS
        .iter()
        .position(|m| *m == name)
        .and_then(|index| u64::try_from(index + 1).ok())
}

/// `HH:MM:SS[.ffffff]` → (seconds of the day, microseconds).
fn time_of_day(text: &str) -> Option<(i64, i64)> {
    let (clock, fraction) = match text.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (text, None),
    };
    let mut parts = clock.split(':');
    let hours = digits(parts.next()?, 2)?;
    let minutes = digits(parts.next()?, 2)?;
    let seconds = digits(parts.next()?, 2)?;
    if parts.next().is_some() || hours > 23 || minutes > 59 || seconds > 60 {
        return None;
    }
    let micros = match fraction {
        Some(fraction) => {
            digits(fraction, 9)?;
            fraction
                .bytes()
                .chain(std::iter::repeat(b'0'))
                .take(6)
                .fold(0i64, |acc, b| acc * 10 + i64::from(b - b'0'))
        }
        None => 0,
    };
    let seconds = i64::try_from(hours * 3600 + minutes * 60 + seconds).ok()?;
    Some((seconds, micros))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`); `None` for a month or day out of range.
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<i64> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || year > 9999 {
        return None;
    }
    let (year, month, day) = (year as i64, month as i64, day as i64);
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

/// The date of a day since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn kmsg_records_with_their_dictionary() {
        let text = "3,812,98765432,-;mlx5_core 0000:3b:00.0: cmd failed\n \
                    SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n\
                    6,813,98765999,c;second\n";
        let parsed = parse(text);
        assert_eq!(parsed.records.len(), 2);
        let first = &parsed.records[0];
        assert_eq!(first.level, Some(3));
        assert_eq!(first.seq, Some(812));
        assert_eq!(first.time, Some(Stamp::Boot(98_765_432)));
        assert_eq!(first.message(), "mlx5_core 0000:3b:00.0: cmd failed");
        assert_eq!(
            first.shown(),
            "[   98.765432] mlx5_core 0000:3b:00.0: cmd failed"
        );
        assert_eq!(parsed.records[1].line, 4);
    }

    #[test]
    fn dmesg_prefixes_and_times() {
        let parsed = parse(
            "kern  :err   : [  12.5] one\n\
             <4>[    3.000001] two\n\
             [Mon Feb 10 16:28:06 2025] three\n\
             kern  :warn  : 2025-02-10T16:28:06,502716+01:00 four\n",
        );
        let r = &parsed.records;
        assert_eq!(
            (r[0].level, r[0].time),
            (Some(3), Some(Stamp::Boot(12_500_000)))
        );
        assert_eq!(r[0].message(), "one");
        assert_eq!(
            (r[1].level, r[1].time),
            (Some(4), Some(Stamp::Boot(3_000_001)))
        );
        // 2025-02-10 is day 20129 since the epoch.
        let feb10 = 20_129 * DAY;
        assert_eq!(
            r[2].time,
            Some(Stamp::Wall(feb10 + (16 * 3600 + 28 * 60 + 6) * MICROS))
        );
        assert_eq!(r[2].message(), "three");
        assert_eq!(
            r[3].time,
            Some(Stamp::Wall(
                feb10 + (15 * 3600 + 28 * 60 + 6) * MICROS + 502_716
            ))
        );
        assert_eq!((r[3].level, r[3].message()), (Some(4), "four"));
        assert_eq!(r[3].format, Format::Dmesg);
    }

    #[test]
    fn syslog_headers_and_kernel_stamps() {
        let parsed = parse(
            "Dec 31 23:59:59 node-1 kernel: [ 5.000000] mlx5_core 0000:3b:00.0 eth2: Link down\n\
             Jan  1 00:00:01 node-1 systemd-networkd[5398]: ib6: lost carrier\n\
             2025-02-10T16:28:06.5+00:00 node-1 kernel: nfs: server f OK\n\
             Jan  1 00:00:02 node-1 no tag here\n",
        );
        let r = &parsed.records;
        assert_eq!(r[0].origin.as_deref(), Some("kernel"));
        assert_eq!(r[0].message(), "mlx5_core 0000:3b:00.0 eth2: Link down");
        assert_eq!(r[1].origin.as_deref(), Some("systemd-networkd"));
        assert_eq!(r[1].message(), "ib6: lost carrier");
        // New Year: the second line is two seconds after the first.
        assert_eq!(
            r[1].time.unwrap().micros_after(r[0].time.unwrap()),
            Some(2 * MICROS)
        );
        assert_eq!(r[2].format, Format::Syslog);
        assert_eq!(r[2].message(), "nfs: server f OK");
        assert_eq!(r[3].origin, None);
        assert_eq!(r[3].message(), "node-1 no tag here");
        assert_eq!(r[1].time.unwrap().to_string(), "Jan  1 00:00:01");
    }

    #[test]
    fn journalctl_formats() {
        let parsed = parse(
            "[  123.456789] node-1 kernel: nfs: server f OK\n\
             [  124.000000] mlx5_core 0000:3b:00.0 eth2: Link up\n\
             2025-02-10T16:28:06+0000 node-1 kernel: nvidia-fs:x\n",
        );
        let r = &parsed.records;
        assert_eq!(r[0].time, Some(Stamp::Boot(123_456_789)));
        assert_eq!(
            (r[0].origin.as_deref(), r[0].message()),
            (Some("kernel"), "nfs: server f OK")
        );
        // Two words before a colon that are no `kernel` header stay message.
        assert_eq!(r[1].message(), "mlx5_core 0000:3b:00.0 eth2: Link up");
        assert_eq!(r[2].message(), "nvidia-fs:x");
        assert_eq!(r[2].time.unwrap().to_string(), "2025-02-10T16:28:06");
    }

    #[test]
    fn untimed_lines_inherit_the_time_before_them() {
        let parsed = parse("plain first\n[ 7.0] timed\nplain after\n\n");
        let r = &parsed.records;
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].time, r[0].format), (None, Format::Plain));
        assert_eq!(r[2].time, Some(Stamp::Boot(7_000_000)));
        assert_eq!(r[2].message(), "plain after");
    }

    #[test]
    fn windows_compare_only_the_same_clock() {
        let end = Stamp::Boot(100 * 1_000_000);
        assert!(Stamp::Boot(41 * 1_000_000).within(Duration::from_secs(60), end));
        assert!(!Stamp::Boot(39 * 1_000_000).within(Duration::from_secs(60), end));
        assert!(!Stamp::Wall(99).within(Duration::from_secs(60), end));
        assert_eq!(
            Stamp::Wall(20_129 * DAY + 3_723 * MICROS).to_string(),
            "2025-02-10T01:02:03"
        );
    }

    #[test]
    fn only_the_newest_records_are_kept() {
        let text = "x\n".repeat(MAX_RECORDS + 3);
        let parsed = parse(&text);
        assert_eq!(parsed.records.len(), MAX_RECORDS);
        assert_eq!(parsed.dropped, 3);
        assert_eq!(parsed.records[0].line, 4);
    }

    #[test]
    fn long_lines_are_cut_at_a_character() {
        let line = "é".repeat(MAX_LINE);
        let parsed = parse(&line);
        assert!(parsed.records[0].message().len() <= MAX_LINE);
    }

    #[test]
    fn dates_round_trip() {
        for days in [-1, 0, 59, 11_016, 20_129, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(
                days_from_civil(y as u64, m as u64, d as u64),
                Some(days),
                "{y}-{m}-{d}"
            );
        }
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,400}") {
            let parsed = parse(&text);
            for record in &parsed.records {
                let _ = record.shown();
                let _ = record.message();
                if let Some(time) = record.time {
                    let _ = time.to_string();
                }
            }
        }

        #[test]
        fn never_panics_on_near_formats(
            text in "([0-9<>\\[\\]:,;. TZ+-]{0,12}(kern|err|Aug|2025-02-10T|host|tag)?[ -~]{0,20}\n){0,8}"
        ) {
            let _ = parse(&text);
        }
    }
}
