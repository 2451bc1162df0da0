//! Metadata of a doctor check, a lint rule, an intent rule or a validate
//! judgement, the source of `zerohop checks` and `zerohop explain`.

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::finding::Severity;

/// The headings every check's and rule's documentation must have, in order,
/// whatever its kind: the last shows the rule at work on one of its
/// fixtures (each kind's tests compare it with the fixture's output).
pub const REQUIRED_HEADINGS: [&str; 4] = [
    "## What it checks",
    "## Why it matters",
    "## How to fix",
    "## Example",
];

/// What is known about a check or lint rule without running it.
///
/// Declared once next to the code that implements it; its `docs` come from
/// the declaration's doc comment. Serialised (`zerohop checks --json`) with
/// its one-line `summary` and its `docs` as Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleInfo {
    /// Stable ID, never reused: a group prefix and three digits (`KRN001`,
    /// `RDMA004`), `ZL` and three digits for lint rules, `ZP` for intent
    /// rules, `VAL` for judgements.
    pub id: &'static str,
    /// Kebab-case name that names the problem (`iommu-disabled`).
    pub name: &'static str,
    /// The group (layer) in kebab-case (`kernel`, `pcie`, `lint`).
    pub group: &'static str,
    /// Severity of the problem when found, unless overridden.
    pub severity: Severity,
    /// Markdown documentation with the [`REQUIRED_HEADINGS`]: the doc
    /// comment of the declaration without the space after each `///`
    /// ([`declare_rule!`](crate::declare_rule) removes it).
    pub docs: &'static str,
    /// Source location of the declaration, `file#Lline`.
    pub location: &'static str,
}

impl RuleInfo {
    /// The first line of the documentation before any heading: a one-line summary.
    pub fn summary(&self) -> &'static str {
        self.docs
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with('#'))
            .unwrap_or("")
    }

    /// The required headings that the documentation lacks or has out of order.
    pub fn missing_headings(&self) -> Vec<&'static str> {
        let mut rest = self.docs;
        let mut missing = Vec::new();
        for heading in REQUIRED_HEADINGS {
            match rest.lines().position(|line| line.trim() == heading) {
                Some(index) => {
                    let skip: usize = rest.lines().take(index + 1).map(|l| l.len() + 1).sum();
                    rest = rest.get(skip.min(rest.len())..).unwrap_or("");
                }
                None => missing.push(heading),
            }
        }
        missing
    }

    /// What is wrong with the documentation's form, one line per problem:
    /// a required heading missing or out of order, a summary that is not a
    /// sentence, the doc-comment indent kept, a location without a line.
    /// The same for every kind of rule, so that each kind's test asks this.
    pub fn documentation_problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = self
            .missing_headings()
            .into_iter()
            .map(|heading| format!("{}: lacks {heading} (or has it out of order)", self.id))
            .collect();
        let summary = self.summary();
        if summary.is_empty() || !summary.ends_with('.') {
            problems.push(format!(
                "{}: summary {summary:?} is not a sentence",
                self.id
            ));
        }
        if self.docs.starts_with(' ') {
            problems.push(format!("{}: docs keep the doc-comment indent", self.id));
        }
        if !self.location.contains("#L") {
            problems.push(format!(
                "{}: location {} names no line",
                self.id, self.location
            ));
        }
        problems
    }

    /// What is wrong with a registry of rules as a whole, one line per
    /// problem: an ID listed twice or not a prefix of `prefixes` and three
    /// digits, a name listed twice or not kebab-case. Every kind's registry
    /// test asks this; the order each kind keeps is its own test.
    pub fn registry_problems(rules: &[&RuleInfo], prefixes: &[&str]) -> Vec<String> {
        let mut problems = Vec::new();
        let mut ids = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for rule in rules {
            if !ids.insert(rule.id) {
                problems.push(format!("{}: listed twice", rule.id));
            }
            if !names.insert(rule.name) {
                problems.push(format!(
                    "{}: name {} is another rule's too",
                    rule.id, rule.name
                ));
            }
            if !RuleInfo::is_well_formed_id(rule.id, prefixes) {
                problems.push(format!(
                    "{}: not one of {prefixes:?} and three digits",
                    rule.id
                ));
            }
            if !RuleInfo::is_kebab_case(rule.name) {
                problems.push(format!(
                    "{}: name {:?} is not kebab-case",
                    rule.id, rule.name
                ));
            }
        }
        problems
    }

    /// The documentation for a page where the rule has a heading of its own
    /// at `level - 1`: its `##` headings become headings of `level`, every
    /// line ends with a newline.
    pub fn docs_at_level(&self, level: usize) -> String {
        let mut out = String::with_capacity(self.docs.len() + 64);
        for line in self.docs.trim_end().lines() {
            match line.strip_prefix("## ") {
                Some(heading) => {
                    out.push_str(&"#".repeat(level));
                    out.push(' ');
                    out.push_str(heading);
                }
                None => out.push_str(line),
            }
            out.push('\n');
        }
        out
    }

    /// The `text` blocks under the documentation's `## Example`, in order:
    /// what a fixture gives (and, for a judgement, its capture first), which
    /// each kind's test compares with the fixture's real output.
    pub fn example_blocks(&self) -> Vec<&'static str> {
        let Some(at) = self.docs.find("## Example") else {
            return Vec::new();
        };
        self.docs[at..]
            .split("```text\n")
            .skip(1)
            .filter_map(|block| block.split("\n```").next())
            .collect()
    }

    /// Whether `id` has a known group prefix followed by exactly three digits.
    pub fn is_well_formed_id(id: &str, prefixes: &[&str]) -> bool {
        prefixes.iter().any(|prefix| {
            id.strip_prefix(prefix).is_some_and(|digits| {
                digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit())
            })
        })
    }

    /// Whether `message` is written as every finding's and diagnostic's
    /// message must be: a fragment that starts lowercase (or with a name
    /// such as `ClusterPolicy` or `ConnectX-7`, a word with an uppercase
    /// letter after its first) and does not end with a period. What to do
    /// goes in a separate field, so the message stays one clause.
    pub fn is_message_fragment(message: &str) -> bool {
        let first_word = message.split_whitespace().next().unwrap_or("");
        let mut chars = first_word.chars();
        let starts = match chars.next() {
            Some(c) if c.is_uppercase() => chars.any(char::is_uppercase),
            Some(_) => true,
            None => false,
        };
        starts && !message.ends_with('.')
    }

    /// Whether `name` is lowercase kebab-case.
    pub fn is_kebab_case(name: &str) -> bool {
        !name.is_empty()
            && !name.starts_with('-')
            && !name.ends_with('-')
            && !name.contains("--")
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    }
}

/// Declares a rule of any kind (a doctor check, a lint rule, an intent
/// rule) the same way, in the style of clippy's `declare_clippy_lint!`: the
/// doc comment is the documentation, the named fields are the metadata,
/// and the remaining fields are those of the kind's own struct, which must
/// have an `info: RuleInfo` field. The kind is named by a plain path
/// (`Check`, `crate::registry::Check`), without generic arguments.
///
/// ```
/// use zerohop_core::{RuleInfo, declare_rule};
///
/// /// A rule of some kind.
/// pub struct Check {
///     /// Its metadata.
///     pub info: RuleInfo,
///     /// How it judges.
///     pub run: fn(u32) -> bool,
/// }
///
/// fn is_even(n: u32) -> bool {
///     n % 2 == 0
/// }
///
/// declare_rule! {
///     /// The number is even.
///     ///
///     /// ## What it checks
///     /// The number.
///     pub static EVEN: Check = {
///         id: "NUM001",
///         name: "number-odd",
///         group: "numbers",
///         severity: Warning,
///         run: is_even,
///     };
/// }
///
/// assert_eq!(EVEN.info.summary(), "The number is even.");
/// assert!(EVEN.info.docs.starts_with("The number is even.\n\n## What it checks\n"));
/// assert!((EVEN.run)(2));
/// ```
#[macro_export]
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident: $($kind:ident)::+ = {
            id: $id:literal,
            name: $name:literal,
            group: $group:expr,
            severity: $severity:ident,
            $($field:ident: $value:expr),* $(,)?
        };
    ) => {
        $(#[doc = $doc])*
        $vis static $ident: $($kind)::+ = $($kind)::+ {
            info: $crate::RuleInfo {
                id: $id,
                name: $name,
                group: $group,
                severity: $crate::Severity::$severity,
                docs: {
                    const RAW: &str = concat!($($doc, "\n"),*);
                    const LEN: usize = $crate::rule::unindented_len(RAW);
                    const BYTES: [u8; LEN] = $crate::rule::unindent::<LEN>(RAW);
                    match ::core::str::from_utf8(&BYTES) {
                        Ok(docs) => docs,
                        Err(_) => panic!("rule documentation is not UTF-8"),
                    }
                },
                location: concat!(file!(), "#L", line!()),
            },
            $($field: $value),*
        };
    };
}

/// Length of `raw` once [`unindent`] has removed the space that starts each
/// doc-comment line.
pub const fn unindented_len(raw: &str) -> usize {
    let bytes = raw.as_bytes();
    let mut len = 0;
    let mut index = 0;
    let mut line_start = true;
    while index < bytes.len() {
        if !(line_start && bytes[index] == b' ') {
            len += 1;
        }
        line_start = bytes[index] == b'\n';
        index += 1;
    }
    len
}

/// `raw` without the one space that starts each doc-comment line (`/// x`
/// gives ` x`), so that the documentation is Markdown whose headings read
/// `## What it checks`. Removing an ASCII space keeps the text UTF-8.
pub const fn unindent<const N: usize>(raw: &str) -> [u8; N] {
    let bytes = raw.as_bytes();
    let mut out = [0u8; N];
    let mut len = 0;
    let mut index = 0;
    let mut line_start = true;
    while index < bytes.len() {
        if !(line_start && bytes[index] == b' ') {
            out[len] = bytes[index];
            len += 1;
        }
        line_start = bytes[index] == b'\n';
        index += 1;
    }
    out
}

impl Serialize for RuleInfo {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut rule = serializer.serialize_struct("RuleInfo", 7)?;
        rule.serialize_field("id", self.id)?;
        rule.serialize_field("name", self.name)?;
        rule.serialize_field("group", self.group)?;
        rule.serialize_field("severity", &self.severity)?;
        rule.serialize_field("summary", self.summary())?;
        rule.serialize_field("docs", self.docs)?;
        rule.serialize_field("location", self.location)?;
        rule.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(docs: &'static str) -> RuleInfo {
        RuleInfo {
            id: "KRN001",
            name: "iommu-disabled",
            group: "kernel",
            severity: Severity::Error,
            docs,
            location: "x.rs#L1",
        }
    }

    #[test]
    fn headings_are_found_in_order() {
        let ok = info(
            "Checks it.\n## What it checks\na\n## Why it matters\nb\n## How to fix\nc\n## Example\nd\n",
        );
        assert!(ok.missing_headings().is_empty());
        assert_eq!(ok.summary(), "Checks it.");
        let swapped =
            info("## Why it matters\nb\n## What it checks\na\n## How to fix\nc\n## Example\nd\n");
        assert_eq!(swapped.missing_headings(), vec!["## Why it matters"]);
        let without_example =
            info("## What it checks\na\n## Why it matters\nb\n## How to fix\nc\n");
        assert_eq!(without_example.missing_headings(), vec!["## Example"]);
    }

    #[test]
    fn documentation_problems_and_example_blocks() {
        let ok = info(
            "Checks it.\n## What it checks\na\n## Why it matters\nb\n## How to fix\nc\n## Example\n```text\nthe capture\n```\nthen\n```text\nfail KRN001\n```\n",
        );
        assert!(
            ok.documentation_problems().is_empty(),
            "{:?}",
            ok.documentation_problems()
        );
        assert_eq!(ok.example_blocks(), ["the capture", "fail KRN001"]);
        let bad = info(" no sentence\n## What it checks\n");
        let problems = bad.documentation_problems();
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(bad.example_blocks().is_empty());
    }

    #[test]
    fn headings_move_to_the_level_asked() {
        let rule = info("Checks it.\n## What it checks\n### Not moved\n\n");
        assert_eq!(
            rule.docs_at_level(4),
            "Checks it.\n#### What it checks\n### Not moved\n"
        );
    }

    #[test]
    fn a_registry_lists_each_id_and_name_once_well_formed() {
        let a = info("A.");
        let mut b = info("B.");
        b.name = "Not Kebab";
        let mut c = info("C.");
        c.id = "KRN01";
        let problems = RuleInfo::registry_problems(&[&a, &b, &c], &["KRN"]);
        // KRN001 twice, iommu-disabled twice, KRN01 malformed, a name with spaces.
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(RuleInfo::registry_problems(&[&a], &["KRN"]).is_empty());
    }

    #[test]
    fn json_has_the_summary_beside_the_docs() {
        let rule = info("Checks it.\n\n## What it checks\na\n");
        let json = serde_json::to_value(rule).unwrap();
        assert_eq!(json["docs"], "Checks it.\n\n## What it checks\na\n");
        assert_eq!(json["summary"], "Checks it.");
    }

    #[test]
    fn only_the_space_after_the_slashes_is_removed() {
        const RAW: &str = " Summary.\n\n ## What it checks\n     indented code\n\n";
        const LEN: usize = unindented_len(RAW);
        let bytes = unindent::<LEN>(RAW);
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            "Summary.\n\n## What it checks\n    indented code\n\n"
        );
    }

    #[test]
    fn ids_and_names() {
        assert!(RuleInfo::is_well_formed_id("KRN001", &["KRN", "PCI"]));
        assert!(!RuleInfo::is_well_formed_id("KRN01", &["KRN"]));
        assert!(!RuleInfo::is_well_formed_id("XYZ001", &["KRN"]));
        assert!(RuleInfo::is_kebab_case("iommu-disabled"));
        assert!(!RuleInfo::is_kebab_case("Iommu_disabled"));
    }

    #[test]
    fn messages_are_lowercase_fragments() {
        assert!(RuleInfo::is_message_fragment("gpus is 0"));
        assert!(RuleInfo::is_message_fragment("ClusterPolicy has no driver"));
        assert!(RuleInfo::is_message_fragment(
            "ConnectX-6 Lx has no infiniband ports"
        ));
        assert!(RuleInfo::is_message_fragment("\"x\" is not a label"));
        assert!(!RuleInfo::is_message_fragment("The pool has no nics"));
        assert!(!RuleInfo::is_message_fragment("the pool has no nics."));
        assert!(!RuleInfo::is_message_fragment(""));
    }
}
