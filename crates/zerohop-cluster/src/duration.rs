//! Durations as people write them on a command line: `90s`, `5m`, `1h30m`,
//! `250ms`.

use std::fmt::Write as _;
use std::time::Duration;

/// Why a duration could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing was given.
    #[error("empty duration: write it as 30s, 5m or 1h30m")]
    Empty,
    /// A number without a unit, or an unknown unit.
    #[error("`{0}` is not a duration: write it as 30s, 5m or 1h30m (units ms, s, m, h)")]
    Malformed(String),
    /// Larger than any schedule needs.
    #[error("`{0}` is longer than a week")]
    TooLong(String),
}

/// The longest duration accepted: no schedule of the agent needs more, and
/// a bound keeps every later multiplication far from overflow.
const MAX: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parses a sequence of `<integer><unit>` terms, units `ms`, `s`, `m` and
/// `h`: `5m`, `1h30m`, `1500ms`.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    let malformed = || DurationError::Malformed(text.to_owned());
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(malformed)?;
        if digits == 0 {
            return Err(malformed());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| malformed())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(1),
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(malformed()),
        };
        rest = &rest[unit_len..];
        let term = u32::try_from(number)
            .ok()
            .and_then(|n| unit.checked_mul(n))
            .ok_or_else(|| DurationError::TooLong(text.to_owned()))?;
        total = total
            .checked_add(term)
            .filter(|t| *t <= MAX)
            .ok_or_else(|| DurationError::TooLong(text.to_owned()))?;
    }
    Ok(total)
}

/// Formats a duration the way [`parse`] reads it, largest units first:
/// `5m`, `1h30m`, `1500ms` is shown as `1s500ms`.
pub fn format(duration: Duration) -> String {
    if duration.is_zero() {
        return "0s".to_owned();
    }
    let mut out = String::new();
    let mut millis = duration.as_millis();
    for (unit, name) in [(3_600_000, "h"), (60_000, "m"), (1000, "s"), (1, "ms")] {
        if millis >= unit {
            let _ = write!(out, "{}{name}", millis / unit);
            millis %= unit;
        }
    }
    if out.is_empty() {
        // Below one millisecond: shown as the smallest unit it is not.
        out.push_str("0ms");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_single_and_combined_terms() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse(" 2m10s "), Ok(Duration::from_secs(130)));
    }

    #[test]
    fn refuses_what_is_not_a_duration() {
        for text in ["5", "m", "5x", "1.5m", "-5m", "5 m", "s5", "5mm"] {
            assert!(
                matches!(parse(text), Err(DurationError::Malformed(_))),
                "{text}"
            );
        }
        assert_eq!(parse(""), Err(DurationError::Empty));
        assert!(matches!(parse("200h"), Err(DurationError::TooLong(_))));
        assert!(matches!(
            parse("99999999999999999999s"),
            Err(DurationError::Malformed(_) | DurationError::TooLong(_))
        ));
    }

    #[test]
    fn formats_round_trip() {
        for text in ["5m", "1h30m", "1s500ms", "45s", "3h"] {
            assert_eq!(format(parse(text).unwrap()), text);
        }
        assert_eq!(format(Duration::ZERO), "0s");
        assert_eq!(format(Duration::from_micros(10)), "0ms");
    }
}
