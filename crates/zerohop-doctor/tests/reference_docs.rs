//! `docs/checks.md` is generated from the check declarations. This test
//! fails when it is stale; `ZEROHOP_UPDATE_DOCS=1 cargo test` rewrites it.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use zerohop_doctor::Group;
use zerohop_doctor::checks::CHECKS;

fn render() -> String {
    let mut out = String::new();
    out.push_str("<!-- Generated from the check declarations by `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-doctor --test reference_docs`. Do not edit. -->\n");
    out.push_str("# Doctor checks\n\n");
    out.push_str("Every check of `zerohop doctor`, in deploy order. `zerohop explain ID` prints one of them.\n\n");
    out.push_str("| ID | name | group | severity | summary |\n|---|---|---|---|---|\n");
    for check in CHECKS {
        let info = &check.info;
        let _ = writeln!(
            out,
            "| [{}](#{}) | `{}` | {} | {} | {} |",
            info.id,
            info.id.to_lowercase(),
            info.name,
            info.group,
            info.severity,
            info.summary()
        );
    }
    for group in Group::ALL {
        let checks: Vec<_> = CHECKS.iter().filter(|c| c.group == group).collect();
        if checks.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n## Group `{}` ({})", group.name(), group.prefix());
        if group == Group::Pod {
            out.push_str(concat!(
                "\nThese checks judge a workload pod from inside it, and run only there: ",
                "`zerohop doctor --pod`, or `zerohop doctor` in a Kubernetes pod (`KUBERNETES_SERVICE_HOST` set) ",
                "without `--only`; a node's run leaves them out. Each reads the pod's own view: ",
                "its `/sys/class/infiniband` and `/dev/infiniband`, its netdevs and addresses, ",
                "`/proc/self/limits`, `/proc/self/status` and `/proc/self/mountinfo`, ",
                "`/proc/driver/nvidia/gpus` and `/dev/nvidia*`, and the `NCCL_*` variables of `/proc/self/environ`. ",
                "In a training pod:\n\n",
                "```sh\nkubectl exec -n <namespace> <pod> -c <container> -- zerohop doctor\n```\n",
            ));
        }
        for check in checks {
            let info = &check.info;
            let _ = writeln!(out, "\n### {}\n", info.id);
            let _ = writeln!(out, "`{}` · severity `{}`", info.name, info.severity);
            if !check.requires.is_empty() {
                let requires: Vec<&str> = check.requires.iter().map(|r| r.info.id).collect();
                let _ = writeln!(out, " · requires {}", requires.join(", "));
            }
            out.push('\n');
            // Demote the documentation's headings below the check's own.
            out.push_str(&info.docs_at_level(4));
        }
    }
    out
}

#[test]
fn checks_reference_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/checks.md");
    let fresh = render();
    if std::env::var_os("ZEROHOP_UPDATE_DOCS").is_some() {
        fs::write(&path, fresh).unwrap();
        return;
    }
    let committed = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "docs/checks.md is stale: run `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-doctor --test reference_docs`"
    );
}
