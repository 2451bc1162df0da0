//! What `zerohop plan` renders, `zerohop lint` must find nothing wrong with:
//! both examples, both platforms, against the operators' real CRDs.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn rendered_plans_lint_clean() {
    let crds = repo().join("../shared/reference/crds");
    if !crds.is_dir() {
        let shared = repo().join("../shared");
        assert!(
            !shared.exists(),
            "{} is beside the repository but lacks this test data: CI must not pass without it",
            shared.display()
        );
        eprintln!("skipped: {} is absent", crds.display());
        return;
    }
    for example in ["examples/cluster.yaml", "examples/infiniband.yaml"] {
        for platform in ["kubernetes", "openshift"] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("plan");
            let plan = Command::new(env!("CARGO_BIN_EXE_zerohop"))
                .arg("plan")
                .arg(repo().join(example))
                .args(["--platform", platform, "-o"])
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                plan.status.success(),
                "{example} {platform}: {}",
                String::from_utf8_lossy(&plan.stderr)
            );
            let lint = Command::new(env!("CARGO_BIN_EXE_zerohop"))
                .arg("lint")
                .arg(&out)
                .arg("--crds")
                .arg(&crds)
                .args(["--format", "json"])
                .output()
                .unwrap();
            let report: serde_json::Value = serde_json::from_slice(&lint.stdout).unwrap();
            let problems: Vec<&serde_json::Value> = report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| matches!(f["status"].as_str(), Some("fail" | "warn")))
                .collect();
            assert!(
                problems.is_empty(),
                "{example} on {platform}: lint found {problems:#?}"
            );
            assert_eq!(lint.status.code(), Some(0));
        }
    }
}
