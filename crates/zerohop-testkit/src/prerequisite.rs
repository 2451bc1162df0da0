//! The one rule for a test whose prerequisite is missing (the `../shared`
//! data, io_uring, `O_DIRECT`, a program): in CI, where `.ci/run` provides
//! every prerequisite, the test fails, so a CI machine that lacks one never
//! passes by testing less; in a user's clone it says what it skipped and
//! why, and returns.

use std::fmt::Display;

/// Whether the tests run in CI: the `CI` variable that CI services set
/// (GitHub Actions, GitLab, Buildkite and others set `CI=true`), unless it
/// is empty, `0` or `false`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| is_set(&value))
}

fn is_set(value: &str) -> bool {
    !matches!(value.trim(), "" | "0" | "false" | "FALSE" | "False")
}

/// Says that the calling test skips for lack of `what`; panics instead in
/// CI. The caller returns after it.
pub fn missing(what: impl Display) {
    assert!(
        !in_ci(),
        "{what}: CI must provide this prerequisite, a test may not pass without it"
    );
    eprintln!("skipped: {what}");
}

#[cfg(test)]
mod tests {
    use super::is_set;

    #[test]
    fn ci_is_on_unless_empty_zero_or_false() {
        for on in ["true", "1", "yes", "True"] {
            assert!(is_set(on), "{on}");
        }
        for off in ["", "0", "false", "FALSE", " false "] {
            assert!(!is_set(off), "{off:?}");
        }
    }
}
