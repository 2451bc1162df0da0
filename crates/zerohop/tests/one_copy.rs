//! Every fact `zerohop-known` holds is written there only: no other crate's
//! code spells one of its distinctive strings as a literal of its own (a
//! device ID, a `cufile.json` key, an NCCL variable, an operator's
//! namespace or resource prefix, zerohop's own API names). Names that are
//! also ordinary keys elsewhere (an OLM package `nfd` is the Helm values key
//! `nfd` too) are left out: only a string that can mean nothing else is held. A copy
//! typed again is the start of two copies that disagree; use the constant.
//!
//! The facts come from `zerohop-known`'s own tables, so a fact added there
//! is held here too. Test code (after a file's `#[cfg(test)]`, or a
//! `tests.rs` module) may spell facts out: a test states what it expects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use zerohop_known::{cufile, nccl, nic, operators, zerohop_api};

/// The distinctive facts: strings whose appearance as a literal outside
/// `zerohop-known` can only be a copy of the fact.
fn facts() -> Vec<String> {
    let mut facts: Vec<String> = Vec::new();
    // `cufile.json` keys with their section (`properties.use_compat_mode`);
    // a section name alone (`logging`) is an ordinary word.
    facts.extend(
        cufile::KEYS
            .iter()
            .filter(|key| key.path.contains('.'))
            .map(|key| key.path.to_owned()),
    );
    facts.extend([nccl::IB_HCA, nccl::NET_GDR_LEVEL].map(str::to_owned));
    // NIC device IDs, bare and with `0x`.
    for model in nic::MODELS {
        for id in [model.pf_device_id, model.vf_device_id] {
            facts.push(id.to_owned());
            facts.push(format!("0x{id}"));
        }
    }
    facts.push(nic::MELLANOX_VENDOR_HEX.to_owned());
    facts.push(format!("0x{}", nic::MELLANOX_VENDOR_HEX));
    facts.extend(
        [
            operators::OPENSHIFT_SRIOV_NAMESPACE,
            operators::OPENSHIFT_SRIOV_RESOURCE_PREFIX,
            operators::NETWORK_OPERATOR_SRIOV_RESOURCE_PREFIX,
            operators::DOCA_DRIVER_READY_FILE,
            operators::NVIDIA_HELM_REPOSITORY,
            operators::OLM_CATALOG_NAMESPACE,
            operators::OPENSHIFT_NFD_NAMESPACE,
            operators::GDS_DRIVER_IMAGE.repository,
            operators::GPU_OPERATOR_GROUP,
            operators::NETWORK_OPERATOR_GROUP,
            operators::SRIOV_GROUP,
            operators::NETWORK_ATTACHMENT_GROUP,
            zerohop_api::API_VERSION,
            zerohop_api::PLURAL,
            zerohop_api::CONDITION_TYPE,
            zerohop_api::IMAGE_REPOSITORY,
        ]
        .map(str::to_owned),
    );
    facts.sort();
    facts.dedup();
    facts
}

/// The part of a source file that is not test code.
fn code_of(path: &Path) -> Option<String> {
    if path.file_name().is_some_and(|name| name == "tests.rs") {
        return None;
    }
    let text = std::fs::read_to_string(path).expect("a workspace source file is readable");
    let end = text.find("#[cfg(test)]").unwrap_or(text.len());
    Some(
        text[..end]
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_fact_of_the_knowledge_crate_is_typed_again_elsewhere() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let facts = facts();
    // The table is not empty: 12 NIC models alone give 24 IDs.
    assert!(facts.len() > 60, "{} facts", facts.len());
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).expect("crates/ is readable") {
        let krate = krate.expect("a directory entry").path();
        if krate
            .file_name()
            .is_some_and(|name| name != "zerohop-known")
        {
            sources(&krate.join("src"), &mut files);
        }
    }
    assert!(files.len() > 100, "{} source files", files.len());
    let mut copies: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for file in &files {
        let Some(code) = code_of(file) else { continue };
        for fact in &facts {
            let literal = format!("\"{fact}\"");
            // A byte string (`b"0x15b3"`) is raw input, such as a fuzzer's
            // dictionary, not a fact the code relies on.
            let typed = code
                .match_indices(&literal)
                .any(|(at, _)| !code[..at].ends_with('b'));
            if typed {
                let shown = file.strip_prefix(&crates).unwrap_or(file);
                copies
                    .entry(fact)
                    .or_default()
                    .push(shown.display().to_string());
            }
        }
    }
    assert!(
        copies.is_empty(),
        "facts of zerohop-known typed again (use its constant instead):\n{copies:#?}"
    );
}
