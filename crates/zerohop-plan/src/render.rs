//! Pure functions from a [`Plan`] to the ordered manifest set.

pub mod agent;
mod gpu;
mod host;
mod install;
mod network;
mod quantity;
mod readme;
pub(crate) mod storage;
mod unit;
pub mod validate;
mod workload;

use serde_json::Value;

use crate::plan::Plan;

/// One file of the rendered set.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFile {
    /// Path relative to the output directory (`20-nic-cluster-policy.yaml`).
    pub path: String,
    /// The file's bytes.
    pub contents: String,
    /// The Kubernetes objects in the file, in order (empty for host files).
    pub objects: Vec<Value>,
}

/// The rendered set, in deploy order.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestSet {
    /// Numbered manifests, then `kustomization.yaml`, `README.md`, the
    /// Helm values under `helm/` (Kubernetes) and auxiliary files, each
    /// path once.
    pub files: Vec<ManifestFile>,
}

/// The shell word by which a README check names the one node it looks at:
/// the README asks for `NODE` to be set first, and a check pasted without
/// it stops with this message instead of running on a wrong name.
pub(crate) const NODE: &str = "\"${NODE:?set NODE to the name of one gpu node}\"";

/// A deploy step: a numbered manifest file and the check to run after it.
pub(crate) struct Step {
    /// File name.
    pub(crate) path: String,
    /// Objects in it.
    pub(crate) objects: Vec<Value>,
    /// What the step does.
    pub(crate) title: String,
    /// Shell commands that show the step has converged.
    pub(crate) checks: Vec<String>,
}

/// Renders the full set for a validated plan.
pub fn render(plan: &Plan) -> ManifestSet {
    let openshift = plan.platform == crate::intent::Platform::Openshift;
    let mut steps = Vec::new();
    steps.push(workload::namespace_step(plan));
    if openshift {
        steps.extend(install::olm_steps(plan));
    }
    steps.extend(host::node_steps(plan));
    steps.extend(host::storage_steps(plan));
    steps.push(network::nic_cluster_policy_step(plan));
    steps.extend(network::rdma_steps(plan));
    steps.extend(storage::steps(plan));
    steps.push(if openshift {
        gpu::cluster_policy_step(plan)
    } else {
        install::gpu_operator_step(plan)
    });
    steps.extend(agent::step(plan));
    steps.extend(workload::workload_steps(plan));

    let mut files: Vec<ManifestFile> = steps
        .iter()
        .filter(|step| !install::is_helm_values(&step.path))
        .map(|step| ManifestFile {
            path: step.path.clone(),
            contents: to_yaml(&step.objects),
            objects: step.objects.clone(),
        })
        .collect();
    files.push(plain(
        "kustomization.yaml",
        to_yaml(&[kustomization(&steps)]),
    ));
    files.push(plain("README.md", readme::readme(plan, &steps)));
    if !openshift {
        files.extend(install::values_files(plan));
    }
    files.extend(storage::values_files(plan));
    files.extend(host::aux_files(plan));
    files.extend(validate::files(plan));
    ManifestSet { files }
}

fn kustomization(steps: &[Step]) -> Value {
    // Helm values are installed with `helm`, not applied.
    let resources: Vec<&str> = steps
        .iter()
        .map(|s| s.path.as_str())
        .filter(|path| !install::is_helm_values(path))
        .collect();
    serde_json::json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    })
}

pub(crate) fn plain(path: &str, contents: String) -> ManifestFile {
    ManifestFile {
        path: path.to_owned(),
        contents,
        objects: Vec::new(),
    }
}

/// Serializes objects as a multi-document YAML stream.
pub(crate) fn to_yaml(objects: &[Value]) -> String {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        // Serializing a serde_json::Value cannot fail: keys are strings.
        let text = serde_saphyr::to_string(object).unwrap_or_default();
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}
