//! `docs/plan-rules.md` is generated from the intent rules. This test fails
//! when it is stale; `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-plan
//! --test docs` rewrites it.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

const INTRODUCTION: &str = r#"# Intent rules

`zerohop plan` refuses an intent file that breaks any of these rules, and
writes nothing: each problem is printed with the file, line and column of the
value, the rule's ID last, and what to do on the next line.

```text
cluster.yaml:51:5: unknown field "gpusPerPd" [ZP001]
  help: did you mean "gpusPerPod"?
```

Every rule is an error. `zerohop checks` lists them with the doctor's checks
and the lint rules, and `zerohop explain ZP036` prints one. What the intent
file holds is described in [plan.md](plan.md#the-intent-file); the grammar of
each field in [plan.md](plan.md#validation).

# Rules
"#;

fn generate() -> String {
    let mut out = String::from(INTRODUCTION);
    out.push_str("\n| ID | name | summary |\n|---|---|---|\n");
    for rule in zerohop_plan::rules() {
        let _ = writeln!(
            out,
            "| [{id}](#{lower}) | `{}` | {} |",
            rule.name,
            rule.summary(),
            id = rule.id,
            lower = rule.id.to_lowercase()
        );
    }
    for rule in zerohop_plan::rules() {
        let _ = writeln!(out, "\n## {}\n\n`{}`\n", rule.id, rule.name);
        // Rule headings sit one level below the rule's own heading.
        out.push_str(&rule.docs_at_level(3));
    }
    out
}

#[test]
fn plan_rule_docs_are_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/plan-rules.md");
    let expected = generate();
    if std::env::var_os("ZEROHOP_UPDATE_DOCS").is_some() {
        fs::write(&path, &expected).expect("write docs/plan-rules.md");
        return;
    }
    let current = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == expected,
        "docs/plan-rules.md is stale; run `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-plan --test docs`"
    );
}
