//! Release tags.

/// Checks `ofedDriver.version` by the Network Operator webhook's pattern
/// (`nicpolicy_webhook.go`):
/// `^(sha256:[a-fA-F0-9]{64}|doca\d+\.\d+(\.\d+)?-\d+\.\d+-\d+\.\d+\.\d+\.\d+-\d+(-[\w\.\-]+)*|\d+\.\d+-\d+(\.\d+)*(-\d+)?(-[\w\.\-]+)*)$`.
pub(crate) fn doca_driver_tag(version: &str) -> Result<(), String> {
    let ok = if let Some(hex) = version.strip_prefix("sha256:") {
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
    } else if let Some(rest) = version.strip_prefix("doca") {
        doca_form(rest)
    } else {
        ofed_form(version)
    };
    if ok {
        Ok(())
    } else {
        Err("is rejected by the network operator webhook".to_owned())
    }
}

/// A cursor over the ASCII grammar of a driver tag.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    /// `\d+`.
    fn digits(&mut self) -> bool {
        let n = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
        self.0 = &self.0[n..];
        n > 0
    }

    fn literal(&mut self, byte: u8) -> bool {
        match self.0.split_first() {
            Some((first, rest)) if *first == byte => {
                self.0 = rest;
                true
            }
            _ => false,
        }
    }

    /// `\d+` preceded by `byte`, consumed only when both are there.
    fn separated_digits(&mut self, byte: u8) -> bool {
        let saved = self.0;
        if self.literal(byte) && self.digits() {
            true
        } else {
            self.0 = saved;
            false
        }
    }

    /// `(-[\w\.\-]+)*` up to the end: nothing, or a dash followed by at
    /// least one word character, dot or dash.
    fn suffix_to_end(&self) -> bool {
        match self.0.split_first() {
            None => true,
            Some((b'-', rest)) => {
                !rest.is_empty()
                    && rest
                        .iter()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            }
            Some(_) => false,
        }
    }
}

/// `\d+\.\d+(\.\d+)?-\d+\.\d+-\d+\.\d+\.\d+\.\d+-\d+(-[\w\.\-]+)*` after `doca`.
fn doca_form(rest: &str) -> bool {
    let mut c = Cursor(rest.as_bytes());
    c.digits()
        && c.separated_digits(b'.')
        && {
            c.separated_digits(b'.');
            true
        }
        && c.separated_digits(b'-')
        && c.separated_digits(b'.')
        && c.separated_digits(b'-')
        && c.separated_digits(b'.')
        && c.separated_digits(b'.')
        && c.separated_digits(b'.')
        && c.separated_digits(b'-')
        && c.suffix_to_end()
}

/// `\d+\.\d+-\d+(\.\d+)*(-\d+)?(-[\w\.\-]+)*`; the optional `-\d+` is a case
/// of the suffix that follows it.
fn ofed_form(version: &str) -> bool {
    let mut c = Cursor(version.as_bytes());
    if !(c.digits() && c.separated_digits(b'.') && c.separated_digits(b'-')) {
        return false;
    }
    while c.separated_digits(b'.') {}
    c.suffix_to_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_tags_follow_the_webhook() {
        for good in [
            "doca3.5.0-26.07-0.7.0.0-0",
            "doca3.1-25.07-0.9.7.0-0-ubuntu24.04-amd64",
            "24.10-0.7.0.0-0",
            "5.4-1.0.3.0",
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(doca_driver_tag(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "doca3.3.1-26.01-1.0.0.0.500-0",
            "doca3.5.0-26.07-0.7.0.0-0-",
            "1$(reboot)",
            "24.10",
            "sha256:abc",
            "doca3.5.0-26.07-0.7.0.0-0 x",
        ] {
            assert!(doca_driver_tag(bad).is_err(), "{bad:?}");
        }
    }
}
