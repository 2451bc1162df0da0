//! Resource quantities as the API server stores them.
//!
//! The server parses a quantity of a built-in object (a container's
//! `resources`, an `emptyDir`'s `sizeLimit`) and writes back its canonical
//! form (`k8s.io/apimachinery` v0.37.2, the version
//! `tools/control-plane/go.mod` pins, `pkg/api/resource/quantity.go`,
//! `ParseQuantity` and `CanonicalizeBytes`): `16384Mi` is stored as `16Gi`,
//! `1000` as `1k`. A manifest that spells a quantity otherwise is changed by
//! the server, so that `kubectl diff` and every GitOps tool comparing the
//! rendered file with the live object show a difference forever. The
//! renderer writes each quantity in the form the server keeps.

/// The binary suffixes, by their power of 1024.
const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// The largest value a binary quantity holds: the server caps larger ones
/// (`maxAllowed`, 2^63 - 1).
const MAX_ALLOWED: u128 = i64::MAX as u128;

/// How the quantity was written, which decides how it is written back
/// (`resource.Format`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `Ki` … `Ei`.
    BinarySi,
    /// `n`, `u`, `m`, no suffix, `k` … `E`.
    DecimalSi,
    /// `e3`, `E-2`.
    DecimalExponent,
}

/// The canonical form of `text`, a Kubernetes quantity in the grammar the
/// intent accepts (`zerohop_known::quantity::check`). A text outside that
/// grammar, a decimal value above 2^63 - 1 or one with more significant
/// digits than 128-bit arithmetic holds (no size anybody writes) is given
/// back as written.
///
/// The canonical form is what the server writes for a value it
/// recomputes, and a canonical text parsed again gives itself: the server
/// keeps it. (The server also keeps some other spellings, such as `+2G`
/// or `5.`, that its parser takes for canonical; the renderer need not
/// know which.)
pub(crate) fn canonical(text: &str) -> String {
    parse(text)
        .map(|(negative, value, format)| write(negative, value, format))
        .unwrap_or_else(|| text.to_owned())
}

/// The canonical form of a size of `mib` mebibytes (hugepages, counted by
/// the renderer).
pub(crate) fn mebibytes(mib: u64) -> String {
    canonical(&format!("{mib}Mi"))
}

/// A non-negative value `unscaled × 10^-scale`.
#[derive(Clone, Copy)]
struct Decimal {
    unscaled: u128,
    scale: u32,
}

/// Parses `text` as `ParseQuantity` does: the sign, the value (rounded up
/// to a multiple of 10^-9, a binary one capped at 2^63 - 1) and the
/// format; `None` for a decimal value above 2^63 - 1.
fn parse(text: &str) -> Option<(bool, Decimal, Format)> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let unscaled: u128 = if digits.is_empty() {
        0
    } else {
        // Refused above 38 digits, where u128 ends.
        if digits.len() > 38 {
            return None;
        }
        digits.parse().ok()?
    };
    let mut scale = i64::try_from(fraction.len()).ok()?;
    let (format, unscaled) = match suffix {
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = BINARY.iter().position(|s| *s == suffix)?;
            let shifted = unscaled.checked_mul(1u128 << (10 * power))?;
            (Format::BinarySi, shifted)
        }
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => {
            scale -= decimal_exponent(suffix)?;
            (Format::DecimalSi, unscaled)
        }
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            // `ParseInt(…, 10, 32)`: an integer, a sign allowed.
            let exponent: i32 = exponent.parse().ok()?;
            scale -= i64::from(exponent);
            (Format::DecimalExponent, unscaled)
        }
    };
    let mut value = normalize(unscaled, scale)?;
    // Rounded up to nano, "if you want some resources, you should get
    // some resources".
    if value.scale > 9 {
        let divisor = 10u128.checked_pow(value.scale - 9);
        value = Decimal {
            unscaled: match divisor {
                Some(divisor) => value.unscaled.div_ceil(divisor),
                // More than 38 places beyond nano: a value below 10^-9.
                None => u128::from(value.unscaled > 0),
            },
            scale: 9,
        };
    }
    if exceeds_max(value) {
        if format != Format::BinarySi {
            // Decimal values are not capped (v1.37 caps binary ones only),
            // and above 10^18 the server's own suffixes run out: such a
            // size is nobody's, and is left as written.
            return None;
        }
        value = Decimal {
            unscaled: MAX_ALLOWED,
            scale: 0,
        };
    }
    // Below one a binary quantity is written in decimal.
    let format = if format == Format::BinarySi && value.unscaled > 0 && below_one(value) {
        Format::DecimalSi
    } else {
        format
    };
    Some((negative, value, format))
}

/// The power of ten of a decimal SI suffix.
fn decimal_exponent(suffix: &str) -> Option<i64> {
    Some(match suffix {
        "n" => -9,
        "u" => -6,
        "m" => -3,
        "" => 0,
        "k" => 3,
        "M" => 6,
        "G" => 9,
        "T" => 12,
        "P" => 15,
        "E" => 18,
        _ => return None,
    })
}

/// `unscaled × 10^-scale` with a non-negative scale: a negative scale is
/// multiplied out, capped where the product leaves u128 (far above the
/// maximum) and a scale beyond u32 refused.
fn normalize(unscaled: u128, scale: i64) -> Option<Decimal> {
    if scale >= 0 {
        return Some(Decimal {
            unscaled,
            scale: u32::try_from(scale).ok()?,
        });
    }
    let factor = u32::try_from(-scale)
        .ok()
        .and_then(|power| 10u128.checked_pow(power));
    let unscaled = match factor.and_then(|factor| unscaled.checked_mul(factor)) {
        Some(product) => product,
        None if unscaled == 0 => 0,
        None => u128::MAX,
    };
    Some(Decimal { unscaled, scale: 0 })
}

fn exceeds_max(value: Decimal) -> bool {
    match 10u128.checked_pow(value.scale) {
        Some(one) => value.unscaled / one > MAX_ALLOWED,
        None => false,
    }
}

fn below_one(value: Decimal) -> bool {
    10u128
        .checked_pow(value.scale)
        .is_none_or(|one| value.unscaled < one)
}

/// `CanonicalizeBytes`: zero is `0`; a binary quantity of a whole number
/// of at least 1024 in the largest binary unit that divides it; anything
/// else as an integer times a power of ten that is a multiple of three,
/// with its SI suffix or its exponent.
fn write(negative: bool, value: Decimal, format: Format) -> String {
    if value.unscaled == 0 {
        return "0".to_owned();
    }
    let sign = if negative { "-" } else { "" };
    // `AsScale(0)`: whether the value is a whole number, and which.
    let whole = 10u128
        .checked_pow(value.scale)
        .filter(|one| value.unscaled.is_multiple_of(*one))
        .map(|one| value.unscaled / one);
    let format = match (format, whole) {
        (Format::BinarySi, Some(bytes)) if bytes >= 1024 => {
            let (mut amount, mut power) = (bytes, 0);
            while amount.is_multiple_of(1024) && power < BINARY.len() - 1 {
                amount /= 1024;
                power += 1;
            }
            return format!("{sign}{amount}{}", BINARY[power]);
        }
        (Format::BinarySi, _) => Format::DecimalSi,
        (format, _) => format,
    };
    let (mut amount, mut exponent) = (value.unscaled, -i64::from(value.scale));
    while amount.is_multiple_of(10) {
        amount /= 10;
        exponent += 1;
    }
    while exponent.rem_euclid(3) != 0 {
        amount *= 10;
        exponent -= 1;
    }
    let suffix = match format {
        Format::DecimalSi => match exponent {
            -9 => "n".to_owned(),
            -6 => "u".to_owned(),
            -3 => "m".to_owned(),
            0 => String::new(),
            3 => "k".to_owned(),
            6 => "M".to_owned(),
            9 => "G".to_owned(),
            12 => "T".to_owned(),
            15 => "P".to_owned(),
            18 => "E".to_owned(),
            // Out of reach: values are at least 10^-9 and at most 2^63 - 1.
            _ => format!("e{exponent}"),
        },
        _ if exponent == 0 => String::new(),
        _ => format!("e{exponent}"),
    };
    format!("{sign}{amount}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_written_as_the_api_server_stores_them() {
        // Each pair is a spelling and the form kube-apiserver v1.37 wrote
        // back for it as an `emptyDir.sizeLimit` in a server-side dry run,
        // but where it kept a spelling it takes for canonical (`+2G`,
        // `5.`, `1E6`, `6.4e10`): there the canonical form, which it keeps
        // too (`server_dry_run.rs` checks the renderer against the server).
        let cases = [
            ("0", "0"),
            ("0Mi", "0"),
            ("16384Mi", "16Gi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("1023", "1023"),
            ("1Ki", "1Ki"),
            ("1000", "1k"),
            ("1000Mi", "1000Mi"),
            ("1.5G", "1500M"),
            ("64000M", "64G"),
            ("100m", "100m"),
            ("0.1", "100m"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("1.5e3", "1500"),
            ("10e-1", "1"),
            ("0.0000000001", "1n"),
            ("1n", "1n"),
            ("1u", "1u"),
            ("1.5Mi", "1536Ki"),
            ("0.3Ki", "307200m"),
            ("-1Gi", "-1Gi"),
            ("+2G", "2G"),
            ("9000000Ei", "9223372036854775807"),
            ("1e-20", "1e-9"),
            ("6.4e10", "64e9"),
            ("0.5Ti", "512Gi"),
            ("1.25Ti", "1280Gi"),
            (".5", "500m"),
            ("5.", "5"),
        ];
        for (text, want) in cases {
            assert_eq!(canonical(text), want, "{text}");
        }
    }

    #[test]
    fn hugepages_are_counted_in_the_largest_binary_unit() {
        // 16 pages of 1 GiB, 512 and 3 pages of 2 MiB.
        assert_eq!(mebibytes(16 * 1024), "16Gi");
        assert_eq!(mebibytes(512 * 2), "1Gi");
        assert_eq!(mebibytes(3 * 2), "6Mi");
    }

    #[test]
    fn text_outside_the_grammar_or_the_range_is_left_as_written() {
        // Nothing to canonicalize: the intent's grammar refuses the first
        // ones before rendering, the last ones are beyond any size, and
        // the function must not invent a value for either.
        for text in [
            "",
            "Gi",
            "1.5.5",
            "1Gb",
            "1e",
            "e3",
            "1e3.5",
            // Decimal values above 2^63 - 1, which the server does not cap.
            "9223372036854775808",
            "100E",
            "1e30",
        ] {
            assert_eq!(canonical(text), text);
        }
    }

    proptest::proptest! {
        /// Whatever the text, no panic, and the canonical form of a
        /// canonical form is itself (the server keeps what it wrote).
        #[test]
        fn any_text_is_canonicalized_without_panic_and_once_for_all(
            text in "[-+]?[0-9.]{0,40}([eE][-+]?[0-9]{0,4}|[numkMGTPE]|[KMGTPE]i)?|\\PC{0,40}"
        ) {
            let once = canonical(&text);
            proptest::prop_assert_eq!(canonical(&once), once);
        }
    }
}
