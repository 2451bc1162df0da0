//! `zerohop agent --uninstall`: removes what the agents wrote into the
//! cluster, which deleting their DaemonSet leaves behind: the
//! `zerohop.dev/DataPathReady` condition in every Node's status, and the
//! `DataPathReport` objects.
//!
//! Run it after the DaemonSet is gone (an agent still running would write
//! its condition again at its next pass) and before the CRD is deleted (or
//! after: deleting the CRD deletes the reports with it, and a missing CRD
//! is not an error here).
//!
//! The condition is removed with a strategic merge patch of
//! `nodes/<name>/status` that deletes the one list element whose merge
//! key is our type (`NodeStatus.Conditions` is `patchStrategy:"merge"
//! patchMergeKey:"type"`, k8s.io/api/core/v1/types.go; the `$patch:
//! delete` directive of the strategic merge patch, Kubernetes
//! documentation, "Update API Objects in Place Using kubectl patch"):
//! the kubelet's conditions and other tools' are left as they are. Nodes
//! are listed a page at a time.

use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;
use zerohop_core::exit::ExitCode;
use zerohop_known::zerohop_api::{CONDITION_TYPE, KIND};

use zerohop_cluster::api::{self, ApiError, CALL_DEADLINE, report_resource, within};

/// Nodes per list call: a page of 500 Nodes stays far under the response
/// size cap ([`zerohop_cluster::api::MAX_RESPONSE_BYTES`]).
const PAGE: u32 = 500;

/// What the removal did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Removed {
    /// Nodes whose condition was removed.
    pub conditions: usize,
    /// Whether the report objects were deleted (`false`: their CRD is not
    /// installed, so there were none).
    pub reports_deleted: bool,
    /// Nodes whose condition could not be removed, with why.
    pub failures: Vec<(String, ApiError)>,
}

/// The patch that deletes our condition from a Node's status and touches
/// nothing else.
pub fn condition_removal() -> serde_json::Value {
    json!({ "status": { "conditions": [{ "type": CONDITION_TYPE, "$patch": "delete" }] } })
}

/// Removes the condition from every Node that has it, then deletes every
/// `DataPathReport`. A Node that cannot be patched (gone meanwhile, or
/// refused) is reported and the others go on; a failed list or delete
/// ends the removal with its error.
pub async fn remove_all(client: &Client) -> Result<Removed, ApiError> {
    let nodes = Api::<Node>::all(client.clone());
    let mut removed = Removed::default();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = within(nodes.list(&params)).await?;
        for node in &page.items {
            let has_ours = node
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == CONDITION_TYPE));
            let Some(name) = node.metadata.name.as_deref().filter(|_| has_ours) else {
                continue;
            };
            let patch = Patch::Strategic(condition_removal());
            match within(nodes.patch_status(name, &PatchParams::default(), &patch)).await {
                Ok(_) => removed.conditions += 1,
                // Deleted since it was listed: nothing left to remove.
                Err(err) if err.is_not_found() => {}
                Err(err) => removed.failures.push((name.to_owned(), err)),
            }
        }
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    let reports = Api::<DynamicObject>::all_with(client.clone(), &report_resource());
    removed.reports_deleted =
        match within(reports.delete_collection(&DeleteParams::default(), &ListParams::default()))
            .await
        {
            Ok(_) => true,
            Err(err) if err.is_not_found() => false,
            Err(err) => return Err(err),
        };
    Ok(removed)
}

/// Why the removal could not run or finish.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UninstallError(String);

/// Runs the removal against the cluster of `kubeconfig` (or the one
/// `kubectl` would use) and writes what it did to `out`: exit code 0 when
/// every condition was removed, 1 when some Node refused.
pub fn run(kubeconfig: Option<&Path>, out: &mut dyn Write) -> Result<i32, UninstallError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| UninstallError(format!("cannot start the runtime: {err}")))?;
    let result = runtime.block_on(async {
        let client = api::client(kubeconfig, CALL_DEADLINE, false)
            .await
            .map_err(|err| UninstallError(err.to_string()))?;
        remove_all(&client)
            .await
            .map_err(|err| UninstallError(format!("cannot remove what the agents wrote: {err}")))
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
    let removed = result?;
    match summarize(&removed, out) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {}
        Err(err) => return Err(UninstallError(format!("cannot write the output: {err}"))),
    }
    Ok(if removed.failures.is_empty() {
        ExitCode::OK
    } else {
        ExitCode::FAILED
    })
}

fn summarize(removed: &Removed, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "removed the {CONDITION_TYPE} condition from {} node(s)",
        removed.conditions
    )?;
    if removed.reports_deleted {
        writeln!(out, "deleted every {KIND}")?;
    } else {
        writeln!(out, "no {KIND} to delete: its CRD is not installed")?;
    }
    for (node, err) in &removed.failures {
        writeln!(out, "node {node}: the condition is still there: {err}")?;
    }
    Ok(())
}
