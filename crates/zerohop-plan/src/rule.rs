//! What an intent rule is, and how one is declared: one declaration per
//! rule, its doc comment its documentation, as the doctor declares its
//! checks and lint its rules. The rules and their list
//! ([`RULES`](crate::validate::RULES)) are in [`crate::validate`].

use zerohop_core::RuleInfo;

/// An intent rule: one kind of mistake that makes `zerohop plan` refuse
/// an intent file.
///
/// A rule has no function of its own, unlike a lint rule: the intent is
/// checked in one pass that also resolves the plan (a rail is checked
/// against the rails of every pool before it, the example pod against the
/// pool's NUMA layout), and every diagnostic of that pass names the rule
/// it reports.
#[derive(Debug)]
pub struct Rule {
    /// ID, name, severity and documentation.
    pub info: RuleInfo,
}

/// Declares an intent rule through [`zerohop_core::declare_rule!`], with
/// the named fields of the doctor's checks and lint's rules: the doc
/// comment is the documentation, the group is `plan`. Every rule is an
/// `Error`: the planner renders nothing for an intent with a mistake.
///
/// ```ignore
/// declare_intent_rule! {
///     /// One-line summary.
///     ///
///     /// ## What it checks
///     /// ...
///     pub(crate) static HOST_LOCAL_IPAM = {
///         id: "ZP036",
///         name: "host-local-ipam",
///         severity: Error,
///     };
/// }
/// ```
macro_rules! declare_intent_rule {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident = {
            id: $id:literal,
            name: $name:literal,
            severity: $severity:ident $(,)?
        };
    ) => {
        zerohop_core::declare_rule! {
            $(#[doc = $doc])*
            $vis static $ident: $crate::rule::Rule = {
                id: $id,
                name: $name,
                group: "plan",
                severity: $severity,
            };
        }
    };
}
pub(crate) use declare_intent_rule;
