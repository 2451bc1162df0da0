//! The exact requests the agent makes, one scenario at a time, against a
//! `tower-test` mock of the API server: method, path and query, field
//! manager, content type and body; and how it backs off when the server
//! refuses or fails.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use tower_test::mock::{self, Handle};
use zerohop_agent::event_sink;
use zerohop_agent::events::{Decision, EventType};
use zerohop_agent::metrics::Live;
use zerohop_agent::publisher::{self, Settings};
use zerohop_agent::report_object;
use zerohop_agent::snapshot::Snapshot;
use zerohop_core::{Finding, Remediation, Report, Severity, Status};

type MockHandle = Handle<Request<Body>, Response<Body>>;

fn mock_client() -> (Client, MockHandle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), handle)
}

/// The next request, within ten minutes of the test's clock (virtual in
/// the tests that pause time, so back-off delays pass at once).
async fn next(
    handle: &mut MockHandle,
) -> (
    Request<Body>,
    tower_test::mock::SendResponse<Response<Body>>,
) {
    tokio::time::timeout(Duration::from_secs(600), handle.next_request())
        .await
        .expect("a request comes")
        .expect("the client is alive")
}

async fn body_of(request: Request<Body>) -> (http::request::Parts, Value) {
    let (parts, body) = request.into_parts();
    let bytes = body.collect_bytes().await.unwrap();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    (parts, value)
}

fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

fn failure(code: u16, reason: &str) -> Response<Body> {
    json_response(
        StatusCode::from_u16(code).unwrap(),
        &json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": format!("{reason} by the test"), "reason": reason, "code": code }),
    )
}

fn node(conditions: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": "n1", "uid": "0b6f-uid" },
        "status": { "conditions": conditions },
    })
}

fn failing_report() -> Report {
    Report::new(
        "doctor",
        "/host",
        vec![Finding {
            id: "RDMA004".into(),
            name: "rdma-port-down".into(),
            group: "rdma".into(),
            status: Status::Fail,
            severity: Severity::Error,
            subject: "mlx5_0/1".into(),
            message: "port 1 is DOWN".into(),
            evidence: vec![],
            remediation: Some(Remediation::new("bring the link up")),
            blocked_by: None,
            location: None,
            object: None,
        }],
    )
}

fn snapshot(sequence: u64) -> Arc<Snapshot> {
    Arc::new(Snapshot::completed(
        "n1",
        sequence,
        k8s_openapi::jiff::Timestamp::now(),
        Duration::from_millis(200),
        failing_report(),
        Default::default(),
    ))
}

fn settings(condition: bool, report_object: bool) -> Settings {
    Settings {
        node: "n1".into(),
        interval: Duration::from_secs(300),
        condition,
        report_object,
    }
}

#[tokio::test]
async fn the_agent_reads_its_node_then_applies_only_its_condition_and_announces_the_change() {
    let (client, mut handle) = mock_client();
    let (tx, rx) = watch::channel(Some(snapshot(1)));
    let live = Arc::new(Live::default());
    let task = tokio::spawn(publisher::run(
        client,
        settings(true, false),
        rx,
        Arc::clone(&live),
    ));

    let (request, reply) = next(&mut handle).await;
    assert_eq!(request.method(), "GET");
    assert_eq!(request.uri().to_string(), "/api/v1/nodes/n1");
    reply.send_response(json_response(
        StatusCode::OK,
        &node(json!([
            { "type": "Ready", "status": "True" },
            { "type": "zerohop.dev/DataPathReady", "status": "True", "reason": "DataPathReady",
              "message": "no check fails", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
              "lastTransitionTime": "2025-12-01T00:00:00Z" },
        ])),
    ));

    let (request, reply) = next(&mut handle).await;
    let (parts, body) = body_of(request).await;
    assert_eq!(parts.method, "PATCH");
    assert_eq!(
        parts.uri.to_string(),
        "/api/v1/nodes/n1/status?&force=true&fieldManager=zerohop-agent"
    );
    assert_eq!(
        parts.headers["content-type"],
        "application/apply-patch+yaml"
    );
    assert_eq!(body["apiVersion"], "v1");
    assert_eq!(body["kind"], "Node");
    assert_eq!(body["metadata"], json!({ "name": "n1" }));
    let conditions = body["status"]["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 1, "only our condition: {body}");
    assert_eq!(conditions[0]["type"], "zerohop.dev/DataPathReady");
    assert_eq!(conditions[0]["status"], "False");
    assert_eq!(conditions[0]["reason"], "RdmaPortDown");
    assert_eq!(
        conditions[0]["message"],
        "RDMA004 mlx5_0/1: bring the link up; 1 failing: RDMA004"
    );
    assert_ne!(conditions[0]["lastTransitionTime"], "2025-12-01T00:00:00Z");
    reply.send_response(json_response(StatusCode::OK, &node(json!([]))));

    // True → False: one warning event about the Node.
    let (request, reply) = next(&mut handle).await;
    let (parts, body) = body_of(request).await;
    assert_eq!(parts.method, "POST");
    assert_eq!(
        parts.uri.to_string(),
        "/apis/events.k8s.io/v1/namespaces/default/events?"
    );
    assert_eq!(body["reason"], "DataPathNotReady");
    assert_eq!(body["type"], "Warning");
    assert_eq!(body["action"], "Verify");
    assert_eq!(body["reportingController"], "zerohop.dev/agent");
    assert_eq!(
        body["regarding"],
        json!({ "apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "0b6f-uid" })
    );
    assert_eq!(
        body["note"],
        "RDMA004 mlx5_0/1: bring the link up; 1 failing: RDMA004"
    );
    reply.send_response(json_response(StatusCode::CREATED, &body));

    // The same result again: no request at all (the heartbeat is not due).
    tx.send_replace(Some(snapshot(2)));
    let quiet = tokio::time::timeout(Duration::from_millis(300), handle.next_request()).await;
    assert!(quiet.is_err(), "nothing to write");
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn a_forbidden_write_is_retried_with_growing_delays_and_never_ends_the_agent() {
    let (client, mut handle) = mock_client();
    let (_tx, rx) = watch::channel(Some(snapshot(1)));
    let live = Arc::new(Live::default());
    let task = tokio::spawn(publisher::run(
        client,
        settings(true, false),
        rx,
        Arc::clone(&live),
    ));
    let (_, reply) = next(&mut handle).await;
    reply.send_response(json_response(StatusCode::OK, &node(json!([]))));
    let mut times = Vec::new();
    for (attempt, answer) in [403, 403, 500, 503].into_iter().enumerate() {
        let (request, reply) = next(&mut handle).await;
        assert_eq!(request.method(), "PATCH");
        times.push(Instant::now());
        reply.send_response(failure(answer, "Forbidden"));
        if attempt == 0 {
            // The event of the pass goes out once, whatever the condition
            // write did; it is not retried with it.
            let (request, reply) = next(&mut handle).await;
            assert_eq!(request.method(), "POST");
            reply.send_response(json_response(StatusCode::CREATED, &json!({})));
        }
    }
    // After four failures, the fifth try succeeds and publishing goes on.
    let (request, reply) = next(&mut handle).await;
    assert_eq!(request.method(), "PATCH");
    times.push(Instant::now());
    reply.send_response(json_response(StatusCode::OK, &node(json!([]))));
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // Delays double from 1 s, each spread over its upper half.
    let bounds = [(500, 1000), (1000, 2000), (2000, 4000), (4000, 8000)];
    for (gap, (low, high)) in gaps.iter().zip(bounds) {
        assert!(
            *gap >= Duration::from_millis(low) && *gap <= Duration::from_millis(high),
            "{gaps:?}"
        );
    }
    assert!(!task.is_finished());
    task.abort();
}

#[tokio::test]
async fn an_event_that_exists_counts_a_repeat_instead_of_failing() {
    let (client, mut handle) = mock_client();
    let decision = Decision {
        type_: EventType::Warning,
        reason: "CheckFailing",
        note: "RDMA004 rdma-port-down fails on mlx5_0/1: bring the link up".into(),
    };
    let name = event_sink::event_name("n1", &decision);
    let publish = tokio::spawn(async move {
        event_sink::publish(&client, "n1", Some("0b6f-uid"), &decision).await
    });
    let (request, reply) = next(&mut handle).await;
    assert_eq!(request.method(), "POST");
    reply.send_response(failure(409, "AlreadyExists"));
    let (request, reply) = next(&mut handle).await;
    assert_eq!(request.method(), "GET");
    assert_eq!(
        request.uri().to_string(),
        format!("/apis/events.k8s.io/v1/namespaces/default/events/{name}")
    );
    reply.send_response(json_response(
        StatusCode::OK,
        &json!({ "apiVersion": "events.k8s.io/v1", "kind": "Event",
                 "metadata": { "name": name, "namespace": "default" },
                 "eventTime": "2026-01-01T00:00:00.000000Z",
                 "series": { "count": 4, "lastObservedTime": "2026-01-01T00:10:00.000000Z" } }),
    ));
    let (request, reply) = next(&mut handle).await;
    let (parts, body) = body_of(request).await;
    assert_eq!(parts.method, "PATCH");
    assert_eq!(
        parts.headers["content-type"],
        "application/merge-patch+json"
    );
    assert_eq!(body["series"]["count"], 5);
    assert!(body["series"]["lastObservedTime"].is_string());
    reply.send_response(json_response(StatusCode::OK, &body));
    publish.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_report_object_is_applied_server_side_and_a_missing_crd_says_so() {
    let (client, mut handle) = mock_client();
    let object = json!({
        "apiVersion": "zerohop.dev/v1alpha1", "kind": "DataPathReport",
        "metadata": { "name": "n1" }, "node": "n1",
    });
    let sent = object.clone();
    let apply = tokio::spawn(async move { report_object::apply(&client, &sent).await });
    let (request, reply) = next(&mut handle).await;
    let (parts, body) = body_of(request).await;
    assert_eq!(parts.method, "PATCH");
    assert_eq!(
        parts.uri.to_string(),
        "/apis/zerohop.dev/v1alpha1/datapathreports/n1?&force=true&fieldManager=zerohop-agent"
    );
    assert_eq!(
        parts.headers["content-type"],
        "application/apply-patch+yaml"
    );
    assert_eq!(body, object);
    reply.send_response(failure(404, "NotFound"));
    let err = apply.await.unwrap().unwrap_err();
    assert!(err.is_not_found(), "{err}");
}
