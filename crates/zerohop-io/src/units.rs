//! Parsing of byte sizes (`1M`, `4KiB`, `512`) and durations (`10`, `10s`,
//! `500ms`, `2m`) as written on the command line.
//!
//! Sizes use binary multiples, as fio does: `1M` and `1MiB` are both 1048576
//! bytes.

use std::time::Duration;

/// Why a size or duration could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The text is empty.
    #[error("empty value")]
    Empty,
    /// The number part is missing or not a number.
    #[error("`{0}` is not a number followed by an optional unit")]
    NotANumber(String),
    /// The unit is not one we know.
    #[error("unknown unit `{unit}` in `{text}` (use {expected})")]
    UnknownUnit {
        /// The whole text.
        text: String,
        /// The unit part.
        unit: String,
        /// The units that are accepted.
        expected: &'static str,
    },
    /// The value does not fit in 64 bits.
    #[error("`{0}` is too large")]
    Overflow(String),
}

/// Splits `text` into its leading decimal digits and the rest.
fn split_number(text: &str) -> Result<(u64, &str), UnitError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(UnitError::Empty);
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(UnitError::NotANumber(text.to_owned()));
    }
    let (number, unit) = text.split_at(digits);
    let value = number
        .parse::<u64>()
        .map_err(|_| UnitError::Overflow(text.to_owned()))?;
    Ok((value, unit.trim()))
}

/// Parses a byte size such as `4096`, `4K`, `4KiB`, `1M`, `2G` or `1T`.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (value, unit) = split_number(text)?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(UnitError::UnknownUnit {
                text: text.trim().to_owned(),
                unit: unit.to_owned(),
                expected: "B, K, M, G or T; binary multiples",
            });
        }
    };
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| UnitError::Overflow(text.trim().to_owned()))
}

/// Parses a duration such as `10` (seconds), `10s`, `500ms`, `2m` or `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (value, unit) = split_number(text)?;
    let millis_per_unit: u64 = match unit.to_ascii_lowercase().as_str() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        _ => {
            return Err(UnitError::UnknownUnit {
                text: text.trim().to_owned(),
                unit: unit.to_owned(),
                expected: "ms, s, m or h",
            });
        }
    };
    value
        .checked_mul(millis_per_unit)
        .map(Duration::from_millis)
        .ok_or_else(|| UnitError::Overflow(text.trim().to_owned()))
}

/// Formats a byte count with a binary unit, e.g. `1.50 GiB`.
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_use_binary_multiples() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size(" 2 GiB "), Ok(2 << 30));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
    }

    #[test]
    fn bad_sizes_are_rejected_with_a_reason() {
        assert_eq!(parse_size(""), Err(UnitError::Empty));
        assert!(matches!(parse_size("M"), Err(UnitError::NotANumber(_))));
        assert!(matches!(
            parse_size("1X"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_size("99999999999T"),
            Err(UnitError::Overflow(_))
        ));
        assert!(matches!(parse_size("-1"), Err(UnitError::NotANumber(_))));
    }

    #[test]
    fn durations_default_to_seconds() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("3 weeks").is_err());
    }

    #[test]
    fn bytes_are_formatted_with_binary_units() {
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(1536.0 * 1024.0 * 1024.0), "1.50 GiB");
    }

    proptest! {
        #[test]
        fn size_parser_never_panics(text in ".{0,24}") {
            let _ = parse_size(&text);
            let _ = parse_duration(&text);
        }

        #[test]
        fn plain_numbers_round_trip(value in 0u64..u64::MAX) {
            prop_assert_eq!(parse_size(&value.to_string()), Ok(value));
        }

        #[test]
        fn suffixes_multiply(value in 0u64..1_000_000, unit in prop::sample::select(vec![("K", 10u32), ("m", 20), ("GiB", 30)])) {
            prop_assert_eq!(parse_size(&format!("{value}{}", unit.0)), Ok(value << unit.1));
        }
    }
}
