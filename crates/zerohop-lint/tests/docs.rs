//! `docs/lint.md` is generated from the registry. This test fails when it is
//! stale; `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-lint --test docs`
//! rewrites it.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

const INTRODUCTION: &str = r#"# zerohop lint

`zerohop lint` finds the mistakes in Kubernetes manifests for the storage →
RDMA NIC → GPU data path before the cluster does: in one object (a
deprecated field, a VF device ID given as a PF ID) and across objects (a pod
whose network or resource nothing in the input provides).

```text
zerohop lint PATH… [--crds DIR] [--format human|json|sarif] [--severity-override ID=LEVEL]…
```

- `PATH`: files, directories (searched recursively for `*.yaml`, `*.yml`,
  `*.json`, in name order, symlinked directories not followed) or `-` for
  standard input. Multi-document YAML, `kind: List` (and `*List` kinds with
  `items`) and the output of `helm template` / `kustomize build` are read as
  streams of objects. A file named `cufile.json` is read as a cuFile
  configuration (`//` comments allowed).
- `--crds DIR`: validate custom resources against the CRDs in `DIR`
  (unknown and misspelled fields, required fields, types, enums, bounds).
- `--format`: `human` (rustc-style diagnostics with the source line and a
  caret under the span), `json` (the report shared with `zerohop doctor`),
  `sarif` (SARIF 2.1.0 for code scanning).
- `--severity-override ID=LEVEL`: run a rule at `info`, `warning` or
  `error` instead of its default; repeatable.

Exit codes: `0` no finding failed; `1` at least one finding failed (an
`error`-severity rule found its problem); `2` an input could not be read or
parsed (the other inputs are still linted and reported), or the command line
was wrong; `3` internal error.

Manifests are read as Kubernetes reads them (YAML 1.1, as Go's
`sigs.k8s.io/yaml`): `0644` is the octal number 420, unquoted `yes`/`on` are
booleans. Inputs are bounded: at most 32 MiB each, nesting at most 128
levels, aliases expanding to at most 100,000 nodes.

Cross-object rules look only at the objects given in one run: lint a whole
deployment (all its files or directories) at once. Rules that resolve names
(networks, resources, machine-config pools) stay silent when the input has
nothing to resolve against.

`zerohop checks` lists the rules and `zerohop explain ZL020` prints one.

# Rules
"#;

fn generate() -> String {
    let mut out = String::from(INTRODUCTION);
    out.push_str("\n| ID | name | severity | summary |\n|---|---|---|---|\n");
    for rule in zerohop_lint::rules() {
        let _ = writeln!(
            out,
            "| [{id}](#{lower}) | `{}` | {} | {} |",
            rule.name,
            rule.severity,
            rule.summary(),
            id = rule.id,
            lower = rule.id.to_lowercase()
        );
    }
    for rule in zerohop_lint::rules() {
        let _ = writeln!(
            out,
            "\n## {}\n\n`{}`, default severity **{}**.\n",
            rule.id, rule.name, rule.severity
        );
        for line in rule.docs.trim_end().lines() {
            // Rule headings sit one level below the rule's own heading.
            if line.starts_with("## ") {
                let _ = writeln!(out, "#{line}");
            } else {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    out
}

#[test]
fn lint_docs_are_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/lint.md");
    let expected = generate();
    if std::env::var_os("ZEROHOP_UPDATE_DOCS").is_some() {
        fs::write(&path, &expected).expect("write docs/lint.md");
        return;
    }
    let current = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == expected,
        "docs/lint.md is stale; run `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-lint --test docs`"
    );
}
