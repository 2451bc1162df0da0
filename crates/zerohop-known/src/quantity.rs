//! Kubernetes resource quantities (`512Gi`, `1.5G`, `100m`), by the pattern
//! the API server and the operators' CRDs use (`k8s.io/apimachinery`
//! `pkg/api/resource/quantity.go`):
//! `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`.

/// Checks a quantity. A negative quantity is refused as well: no size
/// zerohop writes or reads can be below zero.
///
/// # Errors
/// What is wrong with it, as a lowercase fragment.
pub fn check(text: &str) -> Result<(), String> {
    match parts(text) {
        Some(_) => Ok(()),
        None => Err("is not a quantity such as 512Gi".to_owned()),
    }
}

/// The value of a quantity in base units (`1Gi` → 1073741824, `500m` →
/// 0.5, `1e3` → 1000); `None` when `text` is not one.
pub fn value(text: &str) -> Option<f64> {
    let (number, suffix) = parts(text)?;
    let number: f64 = number.parse().ok()?;
    let factor = match suffix {
        Suffix::Binary(power) => 1024f64.powi(power),
        Suffix::Decimal(power) => 10f64.powi(power),
        Suffix::Exponent(exponent) => 10f64.powf(exponent.parse().ok()?),
    };
    Some(number * factor)
}

/// What follows the number.
enum Suffix<'a> {
    /// `Ki` … `Ei`: 1024 to this power.
    Binary(i32),
    /// `n` … `E`, or none: 10 to this power.
    Decimal(i32),
    /// `e3`, `E-2`: the exponent's text.
    Exponent(&'a str),
}

/// The number (without a leading `+`) and the suffix of a quantity.
fn parts(text: &str) -> Option<(&str, Suffix<'_>)> {
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    let rest = decimal(unsigned)?;
    let number = &unsigned[..unsigned.len() - rest.len()];
    let suffix = match rest {
        "Ki" => Suffix::Binary(1),
        "Mi" => Suffix::Binary(2),
        "Gi" => Suffix::Binary(3),
        "Ti" => Suffix::Binary(4),
        "Pi" => Suffix::Binary(5),
        "Ei" => Suffix::Binary(6),
        "n" => Suffix::Decimal(-9),
        "u" => Suffix::Decimal(-6),
        "m" => Suffix::Decimal(-3),
        "" => Suffix::Decimal(0),
        "k" => Suffix::Decimal(3),
        "M" => Suffix::Decimal(6),
        "G" => Suffix::Decimal(9),
        "T" => Suffix::Decimal(12),
        "P" => Suffix::Decimal(15),
        "E" => Suffix::Decimal(18),
        exponent if exponent.starts_with(['e', 'E']) => {
            let digits = &exponent[1..];
            let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
            if decimal(unsigned) != Some("") {
                return None;
            }
            Suffix::Exponent(digits)
        }
        _ => return None,
    };
    Some((number, suffix))
}

/// Consumes `[0-9]+(\.[0-9]*)?|\.[0-9]+` at the start of `text` and returns
/// the rest, or `None` when `text` does not start with a decimal number.
fn decimal(text: &str) -> Option<&str> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let whole = digits(text);
    let rest = &text[whole..];
    match rest.strip_prefix('.') {
        Some(fraction) => {
            let places = digits(fraction);
            (whole > 0 || places > 0).then(|| &fraction[places..])
        }
        None => (whole > 0).then_some(rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_follow_the_api_pattern() {
        for good in [
            "512Gi", "64Gi", "1", "1.5G", ".5Ki", "100m", "1e3", "+2Mi", "5.",
        ] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
        for bad in [
            "", "Gi", "-1Gi", "1GB", "1 Gi", "1Gi\n", "1e", "1..2", "1$(x)",
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn values_in_base_units() {
        assert_eq!(value("1Gi"), Some(1_073_741_824.0));
        assert_eq!(value("500m"), Some(0.5));
        assert_eq!(value("1e3"), Some(1000.0));
        assert_eq!(value("1.5G"), Some(1.5e9));
        assert_eq!(value("+2"), Some(2.0));
        assert_eq!(value("1GB"), None);
    }
}
