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

/// Why an `MPIJob` was not created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCreated {
    /// The server serves no `kubeflow.org/v2beta1` `mpijobs`: the MPI
    /// Operator (its CRD) is not installed.
    NotServed,
    /// Any other refusal, a namespace that does not exist among them.
    Refused(ApiError),
}

/// Creates an `MPIJob`.
///
/// # Errors
/// [`NotCreated::NotServed`] when the resource is not served,
/// [`NotCreated::Refused`] with the server's answer otherwise.
pub async fn create_mpijob(
    client: &Client,
    namespace: &str,
    job: &Value,
) -> Result<(), NotCreated> {
    let typed: DynamicObject = serde_json::from_value(job.clone()).map_err(|err| {
        NotCreated::Refused(ApiError {
            code: None,
            message: format!("the rendered MPIJob is not an object: {err}"),
            retry_after: None,
        })
    })?;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &mpijob_resource());
    let created = within(async {
        match api.create(&PostParams::default(), &typed).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if not_served(&status) => Ok(false),
            Err(err) => Err(err),
        }
    })
    .await
    .map_err(NotCreated::Refused)?;
    if created {
        Ok(())
    } else {
        Err(NotCreated::NotServed)
    }
}

/// Whether a refusal says that the resource asked for is not served at
/// all, rather than that an object it names (the namespace) is missing.
///
/// Both are 404. kube-apiserver answers a path it serves nothing at with
/// the plain text `404 page not found`, which names no object (kube makes
/// a `Status` of it without details); a namespace that does not exist is a
/// `Status` whose details name it (`namespaces "ai" not found`, kind
/// `namespaces`): that is no missing MPI Operator.
fn not_served(status: &kube::core::Status) -> bool {
    status.code == 404
        && status
            .details
            .as_ref()
            .is_none_or(|details| details.kind.is_empty() && details.name.is_empty())
}

/// Follows the pods that match `selector` with a watch until one of them
/// satisfies `done`, and returns it; `seen` is told every version of every
/// pod on the way (what a timeout reports). `Ok(None)` when the watch
/// ends.
///
/// # Errors
/// The server's answer when it refuses to list or watch the pods (401,
/// 403): retrying cannot help, and waiting would only end in a timeout
/// that blames the pod.
pub async fn await_pod(
    client: &Client,
    namespace: &str,
    selector: &str,
    mut seen: impl FnMut(&Pod),
    done: impl Fn(&Pod) -> bool,
) -> Result<Option<Pod>, ApiError> {
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().labels(selector);
    let mut pods = std::pin::pin!(watcher(api, config).default_backoff().applied_objects());
    while let Some(event) = pods.next().await {
        match event {
            Ok(pod) => {
                seen(&pod);
                if done(&pod) {
                    return Ok(Some(pod));
                }
            }
            Err(err) => {
                if let Some(refused) = refusal(err) {
                    return Err(refused);
                }
                // Other errors of the watch are retried with back-off by
                // the stream.
            }
        }
    }
    Ok(None)
}

/// The server's answer when a watch error is a refusal of the caller (401
/// or 403), which no retry changes.
fn refusal(err: watcher::Error) -> Option<ApiError> {
    let status = match err {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status))
        | watcher::Error::WatchError(status) => status,
        _ => return None,
    };
    matches!(status.code, 401 | 403).then(|| ApiError::from(kube::Error::Api(status)))
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
/// scheduler's reason when it is not placed, that nothing placed it when
/// no scheduler said why, else its phase and node with the reason a
/// container waits (an image that cannot be pulled).
pub fn describe(pod: &Pod) -> String {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let status = pod.status.as_ref();
    let unscheduled = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| {
            c.iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        })
        .map(|c| {
            c.message
                .clone()
                .filter(|m| !m.is_empty())
                .or_else(|| c.reason.clone())
                .unwrap_or_default()
        });
    if let Some(message) = unscheduled {
        return format!("pod {name} not scheduled: {message}");
    }
    let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
        return format!(
            "pod {name} pending: not yet scheduled to a node, and no scheduler has said why"
        );
    };
    let state = format!("pod {name} {} on {node}", phase(pod).to_lowercase());
    match waiting(pod) {
        Some(why) => format!("{state}: {why}"),
        None => state,
    }
}

/// Why the first container that waits does, init containers first (the
/// others wait for them): `container NAME waiting: REASON: MESSAGE`.
fn waiting(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    status
        .init_container_statuses
        .iter()
        .chain(status.container_statuses.iter())
        .flatten()
        .find_map(|container| {
            let waiting = container.state.as_ref()?.waiting.as_ref()?;
            let reason = waiting.reason.as_deref().unwrap_or("no reason given");
            Some(match waiting.message.as_deref().filter(|m| !m.is_empty()) {
                Some(message) => {
                    format!("container {} waiting: {reason}: {message}", container.name)
                }
                None => format!("container {} waiting: {reason}", container.name),
            })
        })
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

    #[test]
    fn only_a_404_that_names_no_object_is_a_resource_not_served() {
        // kube-apiserver v1.37.2 without the MPIJob CRD answers the plain
        // text `404 page not found`; kube makes this Status of it.
        let page = kube::core::Status::failure("404 page not found", "Failed to parse error data")
            .with_code(404);
        assert!(not_served(&page));
        // The same server, CRD installed, namespace missing: its body.
        let namespace: kube::core::Status = serde_json::from_str(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"nosuch\" not found","reason":"NotFound","details":{"name":"nosuch","kind":"namespaces"},"code":404}"#,
        )
        .unwrap();
        assert!(!not_served(&namespace));
        // A refusal is no missing resource, whatever it names.
        let forbidden =
            kube::core::Status::failure("mpijobs.kubeflow.org is forbidden", "Forbidden")
                .with_code(403);
        assert!(!not_served(&forbidden));
    }

    fn pending(spec: Value, status: Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"}, "spec": spec, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_pending_pod_is_described_by_what_it_waits_for() {
        let containers = serde_json::json!([{"name": "perftest"}]);
        // Nothing placed it and nothing said why: no scheduler runs, or
        // none has looked at it yet.
        assert_eq!(
            describe(&pending(
                serde_json::json!({"containers": containers}),
                serde_json::json!({"phase": "Pending"})
            )),
            "pod p pending: not yet scheduled to a node, and no scheduler has said why"
        );
        // A gated pod's condition has a reason and no message.
        assert_eq!(
            describe(&pending(
                serde_json::json!({"containers": containers}),
                serde_json::json!({"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"},
                ]})
            )),
            "pod p not scheduled: SchedulingGated"
        );
        // On a node: the first waiting container, init containers first
        // (the others wait for them, `PodInitializing`).
        let waiting = |name: &str, reason: &str, message: Option<&str>| {
            serde_json::json!({
                "name": name, "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": reason, "message": message}},
            })
        };
        let on_node = serde_json::json!({"nodeName": "gpu-b", "containers": containers});
        assert_eq!(
            describe(&pending(
                on_node.clone(),
                serde_json::json!({"phase": "Pending",
                    "initContainerStatuses": [waiting("zerohop-pod-check", "ErrImagePull", Some("403 Forbidden"))],
                    "containerStatuses": [waiting("perftest", "PodInitializing", None)],
                })
            )),
            "pod p pending on gpu-b: container zerohop-pod-check waiting: ErrImagePull: 403 Forbidden"
        );
        assert_eq!(
            describe(&pending(
                on_node.clone(),
                serde_json::json!({"phase": "Pending",
                    "containerStatuses": [waiting("perftest", "ContainerCreating", None)],
                })
            )),
            "pod p pending on gpu-b: container perftest waiting: ContainerCreating"
        );
        assert_eq!(
            describe(&pending(on_node, serde_json::json!({"phase": "Running"}))),
            "pod p running on gpu-b"
        );
    }
}
