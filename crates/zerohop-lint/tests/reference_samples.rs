//! Acceptance: lint the upstream sample CRs of `../shared/reference/samples`
//! against the upstream CRDs of `../shared/reference/crds`, read in place.
//!
//! Each file is linted on its own (the samples are alternatives, not one
//! cluster), and each `network-operator-docs/<scenario>/` directory is also
//! linted as one set, since its numbered files are one deployment. The
//! samples that `samples/SOURCES.md` §D records as failing their schema
//! must be flagged; every other sample must produce no error-level finding,
//! except the documented [`EXCEPTIONS`].

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use zerohop_core::{Finding, Status};
use zerohop_k8s::schema::CrdCatalog;
use zerohop_lint::{Batch, Input, MAX_HELD_BYTES, NotRead, Options, Scope, lint, lint_batch};

/// §D of samples/SOURCES.md: the file (relative to samples/) and the rule
/// that must flag it.
const MUST_FLAG: &[(&str, &str)] = &[
    (
        "sriov-network-operator/from-docs/README__block01_L163-175.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/basic-examples__block01_L42-57.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/basic-examples__block03_L114-129.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/basic-examples__block05_L183-199.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/advanced-features__block10_L234-247.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/advanced-features__block13_L361-373.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/rdma-configuration__block02_L88-104.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/advanced-features__block12_L323-351.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/rdma-configuration__block03_L112-129.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/sriov-network-api__block02_L58-87.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/sriov-network-api__block03_L97-114.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/advanced-features__block11_L302-313.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/advanced-features__block14_L445-456.yaml",
        "ZL010",
    ),
    (
        "sriov-network-operator/from-docs/quickstart__block01_L154-171.yaml",
        "ZL005",
    ),
    (
        "network-operator/sriov-network/infiniband/sriov-network-node-policy.yaml",
        "ZL011",
    ),
    ("gpu-operator/nvidia_v1alpha1_gpucluster.yaml", "ZL010"),
    ("sriov-network-operator/sriovoperatorconfig.yaml", "ZL012"),
    (
        "network-operator/bundled-sriov-chart.supported-nic-ids.configmap.yaml",
        "ZL001",
    ),
    (
        "machine-config-operator/from-docs/MachineConfig__block04_L147-156.yaml",
        "ZL001",
    ),
    // Not in §D, which records schema failures: the guide's RoCE policy
    // (`isRdma`, Ethernet by default) sets `mtu: 1500`, which the doctor's
    // QOS001 fails on the nodes.
    (
        "network-operator-docs/sriov-network-rdma/30-sriovnetworknodepolicy.yaml",
        "ZL056",
    ),
];

/// Correct upstream samples that still get an error-level finding, and why
/// (none at present; an entry names the file, the rule and the reason).
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            files(&path, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(path);
        }
    }
}

fn input(samples: &Path, path: &Path) -> Input {
    Input {
        name: path
            .strip_prefix(samples)
            .unwrap()
            .to_string_lossy()
            .into_owned(),
        content: fs::read(path).map_err(NotRead::failed),
    }
}

fn errors(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f.status == Status::Fail)
        .map(|f| {
            let line = f.location.as_ref().map_or(0, |l| l.line);
            format!(
                "{}:{line} {} {}",
                f.location.as_ref().map_or("", |l| l.file.as_str()),
                f.id,
                f.message
            )
        })
        .collect()
}

#[test]
fn upstream_samples_against_upstream_crds() {
    let (Some(reference), Some(_)) = (
        zerohop_testkit::shared_data::reference(),
        zerohop_testkit::shared_data::shared_dir("reference/samples"),
    ) else {
        return;
    };
    let samples = reference.join("samples");
    let options = Options {
        catalog: Some(CrdCatalog::load_dir(&reference.join("crds")).expect("reference crds load")),
        ..Options::default()
    };
    let mut paths = Vec::new();
    files(&samples, &mut paths);
    assert!(
        paths.len() > 50,
        "expected the reference samples, found {}",
        paths.len()
    );

    let mut by_file: BTreeMap<String, Vec<Finding>> = BTreeMap::new();
    for path in &paths {
        let input = input(&samples, path);
        let outcome = lint(std::slice::from_ref(&input), &options);
        by_file.insert(input.name.clone(), outcome.findings);
    }

    let mut problems = Vec::new();
    for (file, rule) in MUST_FLAG {
        match by_file.get(*file) {
            None => problems.push(format!("{file}: sample missing")),
            Some(findings) if !findings.iter().any(|f| f.id == *rule) => {
                problems.push(format!(
                    "{file}: not flagged by {rule}: {:?}",
                    errors(findings)
                ));
            }
            Some(_) => {}
        }
    }
    for (file, findings) in &by_file {
        if MUST_FLAG.iter().any(|(flagged, _)| flagged == file) {
            continue;
        }
        let unexpected: Vec<String> = errors(findings)
            .into_iter()
            .filter(|error| {
                !EXCEPTIONS
                    .iter()
                    .any(|(f, id, _)| f == file && error.contains(&format!(" {id} ")))
            })
            .collect();
        if !unexpected.is_empty() {
            problems.push(format!("{file}: unexpected errors {unexpected:?}"));
        }
    }

    // The samples directory is a folder of alternatives (three ClusterPolicies,
    // a standalone device plugin beside the operator's policies), not one
    // deployment, which a plain directory is by default: linted with
    // `--scope file`, it fails exactly where its files fail one by one, no
    // example blamed for another's objects.
    let mut batch = Batch::new(options.limits, MAX_HELD_BYTES).with_scope(Scope::File);
    batch.add_path(&samples).expect("samples directory");
    let prefix = format!("{}/", samples.display());
    let mut whole: Vec<String> = errors(&lint_batch(&batch, &options).findings)
        .into_iter()
        .map(|error| error.replacen(&prefix, "", 1))
        .collect();
    let mut one_by_one: Vec<String> = by_file.values().flat_map(|f| errors(f)).collect();
    whole.sort();
    one_by_one.sort();
    if whole != one_by_one {
        problems.push(format!(
            "the samples directory as a whole: {whole:#?}\nfile by file: {one_by_one:#?}"
        ));
    }

    // Each network-operator-docs scenario is one deployment: the
    // cross-object rules (networks, resources, IPC_LOCK) must pass on it,
    // but for what its files are known to be flagged for.
    let scenarios = samples.join("network-operator-docs");
    for entry in fs::read_dir(&scenarios).into_iter().flatten().flatten() {
        let mut set = Vec::new();
        files(&entry.path(), &mut set);
        let inputs: Vec<Input> = set.iter().map(|p| input(&samples, p)).collect();
        let outcome = lint(&inputs, &options);
        let failed: Vec<String> = errors(&outcome.findings)
            .into_iter()
            .filter(|error| {
                !MUST_FLAG.iter().any(|(file, id)| {
                    error.starts_with(&format!("{file}:")) && error.contains(&format!(" {id} "))
                })
            })
            .collect();
        if !failed.is_empty() {
            problems.push(format!("scenario {}: {failed:?}", entry.path().display()));
        }
        assert_eq!(outcome.invalid_inputs, 0);
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
