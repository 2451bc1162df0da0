//! `zerohop checks` and `zerohop explain`: the documentation of every
//! doctor check, lint rule, intent rule and validate judgement, generated
//! from their declarations.

use anyhow::Context as _;
use zerohop_core::{Document, RuleInfo};
use zerohop_doctor::checks::CHECKS;

use crate::error::CliError;
use crate::output::{self, Format};

/// Arguments of `zerohop checks`.
#[derive(Debug, clap::Args)]
pub(crate) struct ChecksArgs {
    /// Output format: a table, or a JSON document with every rule's metadata.
    #[arg(long, value_name = "FORMAT", default_value = "human", value_parser = output::formats(output::HUMAN_OR_JSON))]
    format: Format,
}

/// Arguments of `zerohop explain`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExplainArgs {
    /// A check or rule ID (`KRN001`, `ZL004`, `ZP036`) or name (`iommu-misconfigured`).
    id: String,
}

/// Every documented rule: the doctor's checks, the lint rules, the intent
/// rules of `zerohop plan`, then the judgements of `zerohop validate`.
fn catalog() -> impl Iterator<Item = &'static RuleInfo> {
    CHECKS
        .iter()
        .map(|check| &check.info)
        .chain(zerohop_lint::rules())
        .chain(zerohop_plan::rules())
        .chain(zerohop_validate::judge::rules())
}

/// Runs `zerohop checks`.
pub(crate) fn checks(args: ChecksArgs) -> Result<i32, CliError> {
    let rules: Vec<&RuleInfo> = catalog().collect();
    output::to_stdout(|out| {
        if args.format == Format::Json {
            #[derive(serde::Serialize)]
            struct Catalog<'a> {
                rules: &'a [&'a RuleInfo],
            }
            let catalog = Catalog { rules: &rules };
            serde_json::to_writer_pretty(&mut *out, &Document::new("checks", &catalog))?;
            return writeln!(out);
        }
        let id_width = rules.iter().map(|r| r.id.len()).max().unwrap_or(0);
        let name_width = rules.iter().map(|r| r.name.len()).max().unwrap_or(0);
        for rule in &rules {
            writeln!(
                out,
                "{:<id_width$}  {:<9}  {:<8}  {:<name_width$}  {}",
                rule.id,
                rule.group,
                rule.severity.as_str(),
                rule.name,
                rule.summary()
            )?;
        }
        Ok(())
    })
    .context("failed to write the list")?;
    Ok(0)
}

/// Runs `zerohop explain`.
pub(crate) fn explain(args: ExplainArgs) -> Result<i32, CliError> {
    let wanted = args.id.as_str();
    let rule = catalog()
        .find(|r| r.id.eq_ignore_ascii_case(wanted) || r.name == wanted)
        .ok_or_else(|| {
            CliError::usage(format!(
                "no check or rule `{wanted}`: `zerohop checks` lists them"
            ))
        })?;
    output::to_stdout(|out| {
        writeln!(out, "# {} {}\n", rule.id, rule.name)?;
        writeln!(
            out,
            "group: {}, default severity: {}\n",
            rule.group, rule.severity
        )?;
        write!(out, "{}", rule.docs)
    })
    .context("failed to write the explanation")?;
    Ok(0)
}
