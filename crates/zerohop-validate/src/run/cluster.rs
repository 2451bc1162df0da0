//! The Kubernetes calls of a run: create, follow by watch, read logs,
//! delete by label. Every call goes through the agent's client, with its
//! deadline and response cap.

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, LogParams, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client};
use serde_json::Value;
use zerohop_cluster::api::{ApiError, within};

/// The most bytes of a container's log read: an `NCCL_DEBUG=INFO` log of a
/// large job runs to tens of MiB.
pub const MAX_LOG_BYTES: i64 = 32 << 20;

/// The Kubeflow `MPIJob` resource (`kubeflow.org/v2beta1`).
pub fn mpijob_resource() -> ApiResource {
    ApiResource {
        group: "kubeflow.org".to_owned(),
        version: "v2beta1".to_owned(),
        api_version: "kubeflow.org/v2beta1".to_owned(),
        kind: "MPIJob".to_owned(),
        plural: "mpijobs".to_owned(),
    }
}

/// Creates a pod.
pub async fn create_pod(client: &Client, namespace: &str, pod: &Value) -> Result<Pod, ApiError> {
    let typed: Pod = serde_json::from_value(pod.clone()).map_err(|err| ApiError {
        code: None,
        message: format!("the rendered pod is not a pod: {err}"),
        retry_after: None,
    })?;
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    within(api.create(&PostParams::default(), &typed)).await
}

/// Creates an `MPIJob`.
pub async fn create_mpijob(client: &Client, namespace: &str, job: &Value) -> Result<(), ApiError> {
    let typed: DynamicObject = serde_json::from_value(job.clone()).map_err(|err| ApiError {
        code: None,
        message: format!("the rendered MPIJob is not an object: {err}"),
        retry_after: None,
    })?;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &mpijob_resource());
    within(api.create(&PostParams::default(), &typed))
        .await
        .map(drop)
}

/// Follows the pods that match `selector` with a watch until one of them
/// satisfies `done`, and returns it; `seen` is told every version of every
/// pod on the way (what a timeout reports). `None` when the watch ends.
pub async fn await_pod(
    client: &Client,
    namespace: &str,
    selector: &str,
    mut seen: impl FnMut(&Pod),
    done: impl Fn(&Pod) -> bool,
) -> Option<Pod> {
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().labels(selector);
    let mut pods = std::pin::pin!(watcher(api, config).default_backoff().applied_objects());
    while let Some(event) = pods.next().await {
        // Errors of the watch are retried with back-off by the stream.
        let Ok(pod) = event else { continue };
        seen(&pod);
        if done(&pod) {
            return Some(pod);
        }
    }
    None
}

/// The phase of a pod: `Pending`, `Running`, `Succeeded`, `Failed`.
pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// Whether the pod's container has finished, one way or the other.
pub fn finished(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// What a pod that has not finished is doing, for a timeout's message: the
/// scheduler's reason when it is not placed, its phase and node otherwise.
pub fn describe(pod: &Pod) -> String {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let status = pod.status.as_ref();
    let unscheduled = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| {
            c.iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        })
        .map(|c| c.message.clone().unwrap_or_default());
    if let Some(message) = unscheduled {
        return format!("pod {name} not scheduled: {message}");
    }
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("no node yet");
    format!("pod {name} {} on {node}", phase(pod).to_lowercase())
}

/// Why a finished pod's container ended, e.g. `exit code 1 (Error)`.
pub fn termination(pod: &Pod) -> String {
    let terminated = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    match terminated {
        Some(t) => format!(
            "exit code {} ({})",
            t.exit_code,
            t.reason.as_deref().unwrap_or("no reason given")
        ),
        None => format!("phase {}", phase(pod)),
    }
}

/// The log of a pod's first container, at most [`MAX_LOG_BYTES`].
pub async fn log(client: &Client, namespace: &str, name: &str) -> Result<String, ApiError> {
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    let params = LogParams {
        limit_bytes: Some(MAX_LOG_BYTES),
        ..LogParams::default()
    };
    within(api.logs(name, &params)).await
}

/// The log of `container` of pod `name`, at most [`MAX_LOG_BYTES`].
pub async fn container_log(
    client: &Client,
    namespace: &str,
    name: &str,
    container: &str,
) -> Result<String, ApiError> {
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    let params = LogParams {
        container: Some(container.to_owned()),
        limit_bytes: Some(MAX_LOG_BYTES),
        ..LogParams::default()
    };
    within(api.logs(name, &params)).await
}

/// Whether init container `name` of the pod ended with a non-zero exit
/// code.
pub fn init_failed(pod: &Pod, name: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_ref())
        .and_then(|statuses| statuses.iter().find(|c| c.name == name))
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .is_some_and(|t| t.exit_code != 0)
}

/// Deletes the pods that match `selector`, at once (no grace period: the
/// tests hold GPUs and RDMA devices others wait for).
pub async fn delete_pods(client: &Client, namespace: &str, selector: &str) -> Result<(), ApiError> {
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    within(api.delete_collection(&now(), &ListParams::default().labels(selector)))
        .await
        .map(drop)
}

/// Deletes the `MPIJob`s that match `selector` (their pods go with them);
/// nothing to do when the CRD is not installed.
pub async fn delete_mpijobs(
    client: &Client,
    namespace: &str,
    selector: &str,
) -> Result<(), ApiError> {
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &mpijob_resource());
    match within(api.delete_collection(&now(), &ListParams::default().labels(selector))).await {
        Err(err) if err.is_not_found() => Ok(()),
        other => other.map(drop),
    }
}

fn now() -> DeleteParams {
    DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::background()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(init: Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "perftest-server-rail0"},
            "status": {"phase": "Failed", "initContainerStatuses": [init]},
        }))
        .unwrap()
    }

    #[test]
    fn only_a_non_zero_exit_of_the_named_init_container_is_a_failure() {
        let status = |code: i32| {
            serde_json::json!({
                "name": "zerohop-pod-check", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": code, "reason": "Error"}},
            })
        };
        assert!(init_failed(&pod(status(1)), "zerohop-pod-check"));
        assert!(!init_failed(&pod(status(0)), "zerohop-pod-check"));
        assert!(!init_failed(&pod(status(1)), "other"));
        let running = serde_json::json!({
            "name": "zerohop-pod-check", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"running": {}},
        });
        assert!(!init_failed(&pod(running), "zerohop-pod-check"));
    }
}
