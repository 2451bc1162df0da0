//! Release and image tags.

/// Checks an image tag (`v26.7.0`, `25.08-py3`): a word character, then at
/// most 127 word characters, dots and dashes (`[\w][\w.-]{0,127}`, the
/// distribution `reference` grammar).
pub(crate) fn image_tag(tag: &str) -> Result<(), String> {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let bytes = tag.as_bytes();
    let ok = bytes.first().is_some_and(word)
        && bytes.len() <= 128
        && bytes.iter().all(|b| word(b) || *b == b'.' || *b == b'-');
    if ok {
        Ok(())
    } else {
        Err("is not an image tag (letters, digits, '_', '.' and '-', at most 128)".to_owned())
    }
}

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

    #[test]
    fn image_tags() {
        assert_eq!(image_tag("v26.7.0"), Ok(()));
        assert_eq!(image_tag("25.08-py3"), Ok(()));
        for bad in ["", ".x", "-x", "v1 2", "v1;x", &"a".repeat(129)] {
            assert!(image_tag(bad).is_err(), "{bad:?}");
        }
    }
}
