//! Sysfs choice files that list the options and bracket the one in effect:
//! `always [madvise] never`.

/// The bracketed option, or the whole value when nothing is bracketed.
pub fn selected(text: &str) -> Option<&str> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match (text.find('['), text.find(']')) {
        (Some(open), Some(close)) if open < close => Some(&text[open + 1..close]),
        _ => Some(text),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn picks_the_bracketed_option() {
        assert_eq!(selected("always [madvise] never\n"), Some("madvise"));
        assert_eq!(selected("never"), Some("never"));
        assert_eq!(selected("  "), None);
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,80}") {
            let _ = selected(&text);
        }
    }
}
