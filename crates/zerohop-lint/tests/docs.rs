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
zerohop lint PATH… [--crds DIR] [--scope auto|all|file] [--format human|json|sarif] [--severity-override ID=LEVEL]… [--follow-symlinks]
```

- `PATH`: files, directories (searched recursively for `*.yaml`, `*.yml`,
  `*.json`, in name order, and for the host files of a Kubernetes set:
  systemd units `*.mount`, `*.automount`, `*.path`, `*.service` and
  `nvme/discovery.conf`, as `zerohop plan` writes them under `host/<pool>/`)
  or `-` for standard input. Multi-document YAML,
  `kind: List` (and `*List` kinds with `items`) and the output of `helm
  template` / `kustomize build` are read as streams of objects. A cuFile
  configuration is found by its content, not its name: a file named
  `cufile.json`, any other `*.json` file (up to 1 MiB) and any ConfigMap
  `data` value that holds one (see [ZL081](#zl081); `//` comments allowed).
- `--scope`: which inputs are one cluster (see [What one cluster
  is](#what-one-cluster-is)); `auto` by default.
- `--crds DIR`: validate custom resources against the CRDs in `DIR` (its
  own `*.yaml`, `*.yml`, `*.json` files, the output of `kubectl get crd -o
  yaml`, a `kind: List`, included): unknown and misspelled fields, required
  fields, types, enums, bounds. How many CRDs were loaded is said on
  standard error; a directory without any CRD is an error (exit 2), never a
  run that validates against nothing.
- `--format`: `human` (rustc-style diagnostics with the source line and a
  caret under the span), `json` (the report shared with `zerohop doctor`),
  `sarif` (SARIF 2.1.0 for code scanning; columns count Unicode code points,
  `columnKind: unicodeCodePoints`).
- `--severity-override ID=LEVEL`: run a rule at `info`, `warning` or
  `error` instead of its default; repeatable.
- `--follow-symlinks`: read a symlink named as a `PATH` even when its target
  leaves the directory it sits in (by default it is skipped, see below).

Exit codes: `0` no finding failed; `1` at least one finding failed (an
`error`-severity rule found its problem); `2` an input could not be read or
parsed (the other inputs are still linted and reported), a path does not
exist, a directory holds no manifest, the inputs are over the run's memory
budget, the report could not be written (a full disk), or the command line
was wrong; `3` internal error.

Manifests are read as Kubernetes reads them (YAML 1.1, as Go's
`sigs.k8s.io/yaml`): `0644` is the octal number 420, unquoted `yes`/`on` are
booleans. Inputs are bounded: at most 32 MiB each, nesting at most 128
levels, aliases expanding to at most 100,000 nodes.

## What one cluster is

Cross-object rules (a pod's network and resources, two ClusterPolicies, a
policy's VFs and the network that uses them) judge objects that are applied
to the same cluster. `--scope` says which inputs those are:

- `auto` (the default): a directory holding a `kustomization.yaml` (or
  `kustomization.yml`, `Kustomization`) is one cluster, with everything
  under it, as `kubectl apply -k` applies it; the topmost such directory
  below a linted one wins, so overlays and their bases stay together. Every
  other file under a directory named on the command line belongs to that
  directory's cluster, as `kubectl apply -R -f DIR` applies it: a guide's
  numbered manifests are one set. The files named on the command line (and
  standard input) are one cluster. So `zerohop lint deploy/` checks a
  deployment as one, the output of `zerohop plan` included, and `zerohop
  lint deploy/*.yaml` checks the listed files together.
- `all`: every input of the run is one cluster (a deployment split over
  directories).
- `file`: every file is a cluster of its own (a folder of unrelated
  examples or alternatives).

Objects of one cluster that cannot meet raise no cross-object alarm: two
documents with the same group, kind, namespace and name are one object (the
later replaces the earlier); rules that resolve names (networks, resources,
machine-config pools) stay silent when a cluster has nothing to resolve
against, and a pod in a namespace the input gives no network, naming a
network the input defines nowhere, is left alone; rules about operator
namespaces compare objects of the same operator only (two SR-IOV operator
namespaces are two operators).

## Hostile input

`zerohop lint` is meant to run on manifests nobody has reviewed yet, such as
a pull request in CI. Whatever the input, it guarantees:

- **Read-only.** It writes nothing but its report, to standard output.
- **No hang on special files.** Only regular files are read. A FIFO, socket
  or device is refused (ZL001, exit 2, the other inputs still linted): its
  type is checked before it is opened, the file is opened non-blocking and
  checked again once open. Standard input (`-`) is read as given, up to the
  size limit; pipe a command's output there.
- **Nothing read from outside the linted tree.** In a directory, a symlink
  is followed only when its target lies inside that directory; one that
  leads outside (to `/proc/self/environ`, `/etc/shadow`, another checkout)
  or nowhere is not read and is reported as skipped (ZL007, information).
  Symlinked directories are not followed. A symlink named on the command
  line is followed when its target lies inside the directory the link sits
  in, and otherwise skipped the same way unless `--follow-symlinks`: a shell
  glob in CI (`lint dir/*.yaml`) names every link committed there. `--crds DIR` reads
  its directory the same way and stops with exit 2 at a file it cannot read;
  its errors never quote the file.
- **Bounded time.** Every rule is O(n log n) or better in the size of one
  object; `BENCHMARKS.md` measures the worst shapes at the size limit. An
  input at the 32 MiB limit lints in under 2 s of CPU when it is written in
  the subset of YAML that manifests use (block collections, one-line
  scalars, flow collections on one line, anchors), which the loader reads
  with its own scanner; one construct outside it (a block scalar, a scalar
  over several lines, a local tag) sends the whole input to the general
  YAML parser, about three seconds at the limit.
- **Bounded memory.** Each input is read up to 32 MiB and one byte. An input
  that fails to load keeps only the line of its error. A run holds at most
  1 GiB of inputs and their parse trees (estimated as they load); past that
  it stops with exit 2 and asks for fewer or smaller files at a time.
- **Bounded output.** A text taken from the input (a name, a value, a path)
  is clipped to 1,000 characters in a finding, keeping its start and end. A
  rule lists at most 1,000 findings per file, then one finding that counts
  the rest. In the human report a source line is cut to 160 columns around
  the caret and shown under at most three findings; the others on that line
  are listed without it.
- **No terminal escapes.** Control characters and bidirectional overrides
  from the input are written as escapes (`\x1b`, `\u{202e}`) in the human
  report, on a terminal or not; JSON and SARIF escape them as JSON does.

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
        // Rule headings sit one level below the rule's own heading.
        out.push_str(&rule.docs_at_level(3));
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
