//! What a lint rule is, and how one is declared: one declaration per rule,
//! its doc comment its documentation. The rules and their list
//! ([`RULES`](crate::rules::RULES)) are in [`crate::rules`].

use zerohop_core::RuleInfo;

use crate::model::Workspace;
use crate::sink::Sink;

/// A lint rule: what it is, and the function that applies it to every
/// object of a run.
#[derive(Debug)]
pub struct Rule {
    /// ID, name, default severity and documentation.
    pub info: RuleInfo,
    /// Applies the rule; reports through the sink.
    pub(crate) check: fn(&Workspace<'_>, &mut Sink<'_>),
}

/// Declares a lint rule through [`zerohop_core::declare_rule!`], with the
/// named fields the doctor's checks have: the doc comment is the
/// documentation, the group is `lint`.
///
/// ```ignore
/// declare_lint! {
///     /// One-line summary.
///     ///
///     /// ## What it checks
///     /// ...
///     pub(crate) static DUPLICATE_KEY = {
///         id: "ZL002",
///         name: "duplicate-key",
///         severity: Error,
///         check: duplicate_key,
///     };
/// }
/// ```
macro_rules! declare_lint {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident = {
            id: $id:literal,
            name: $name:literal,
            severity: $severity:ident,
            check: $check:path $(,)?
        };
    ) => {
        zerohop_core::declare_rule! {
            $(#[doc = $doc])*
            $vis static $ident: $crate::registry::Rule = {
                id: $id,
                name: $name,
                group: "lint",
                severity: $severity,
                check: $check,
            };
        }
    };
}
pub(crate) use declare_lint;
