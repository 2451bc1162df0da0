//! Test support: the real captures under `../shared/corpus`, read in place
//! (never copied into the repository).
//!
//! When `../shared` is absent altogether, [`capture`] returns `None` and the
//! calling test says so and returns; CI always has it (`.ci/run` refuses to
//! run without it). When `../shared` is there, a missing capture fails the
//! test: a renamed file must not turn into a skipped test.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the support module, so `expect` would be unfulfilled in some"
)]

use std::fs;
use std::path::{Path, PathBuf};

use zerohop_core::{Finding, Status};
use zerohop_validate::judge::{self, Capture, Expectations};

/// `../shared/corpus`, or `None` (with a printed reason) when `../shared`
/// is absent.
pub fn corpus() -> Option<PathBuf> {
    let shared = std::env::var_os("ZEROHOP_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let dir = shared.join("corpus");
    if dir.is_dir() {
        Some(dir)
    } else {
        // Only a clone without any `../shared` (a user's) may skip.
        assert!(
            // In CI (`CI` set) the data must be there: only a user's clone skips.
            !shared.exists() && std::env::var_os("CI").is_none(),
            "{} is beside the repository but lacks this test data: CI must not pass without it",
            shared.display()
        );
        eprintln!(
            "skipped: {} is absent (the shared corpus sits beside the repository in CI)",
            dir.display()
        );
        None
    }
}

/// The text of `corpus/<relative>`, or `None` when `../shared` is absent.
/// Panics when the corpus is there but the capture is not.
pub fn capture(relative: &str) -> Option<String> {
    let path = corpus()?.join(relative);
    let bytes = fs::read(&path)
        .unwrap_or_else(|err| panic!("capture {} is missing: {err}", path.display()));
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Every capture file under `corpus/<relative>` (recursively, `SOURCES.md`
/// excepted), as paths relative to the corpus, in order.
pub fn captures_under(relative: &str) -> Option<Vec<String>> {
    let corpus = corpus()?;
    let mut out = Vec::new();
    walk(&corpus, &corpus.join(relative), &mut out);
    out.sort();
    Some(out)
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(base, &path, out);
        } else if path.file_name().is_some_and(|n| n != "SOURCES.md") {
            out.push(
                path.strip_prefix(base)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
}

/// Judges `text` as the capture `name` with `expectations`.
pub fn judge_with(name: &str, text: &str, expectations: &Expectations) -> Vec<Finding> {
    let (_, findings) =
        judge::judge(&Capture { name, text }, expectations).unwrap_or_else(|err| panic!("{err}"));
    assert_well_formed(&findings);
    findings
}

/// Judges `text` with the default expectations.
pub fn judge(name: &str, text: &str) -> Vec<Finding> {
    judge_with(name, text, &Expectations::default())
}

/// The findings of judgement `id`.
pub fn of<'a>(findings: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    findings.iter().filter(|f| f.id == id).collect()
}

/// The one finding of judgement `id`; panics when there is not exactly one.
pub fn one<'a>(findings: &'a [Finding], id: &str) -> &'a Finding {
    let found = of(findings, id);
    assert_eq!(found.len(), 1, "{id}: {found:#?}");
    found[0]
}

/// The line a finding is placed at.
pub fn line(finding: &Finding) -> u32 {
    finding
        .location
        .as_ref()
        .unwrap_or_else(|| panic!("{} has no location: {finding:#?}", finding.id))
        .line
}

/// The invariants of every finding: a message, a remediation on every
/// problem, evidence or a reason on every unknown, evidence that cites a
/// line of the capture it is placed in.
pub fn assert_well_formed(findings: &[Finding]) {
    for finding in findings {
        assert!(!finding.message.is_empty(), "{} has no message", finding.id);
        assert!(
            !finding.message.ends_with('.'),
            "{}: messages are fragments: {}",
            finding.id,
            finding.message
        );
        if finding.status.is_problem() {
            assert!(
                finding.remediation.is_some(),
                "{} is a problem without a remediation: {finding:#?}",
                finding.id
            );
        }
        if let Some(location) = &finding.location {
            assert!(
                finding
                    .evidence
                    .iter()
                    .any(|e| e.source == format!("{}:{}", location.file, location.line)),
                "{}: its location is not among its evidence",
                finding.id
            );
        }
        if finding.status == Status::Unknown {
            assert!(
                finding.remediation.is_some() || !finding.evidence.is_empty(),
                "{} is unknown without evidence or a way to find out",
                finding.id
            );
        }
    }
}
