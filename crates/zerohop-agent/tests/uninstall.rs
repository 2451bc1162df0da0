//! `zerohop agent --uninstall`, request by request against a `tower-test`
//! mock of the API server: Nodes listed a page at a time, our condition
//! deleted by a strategic merge patch from exactly the Nodes that have it,
//! the reports deleted in one call; a Node that refuses is reported and the
//! others go on; a missing CRD is not an error.

use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock::{self, Handle, SendResponse};
use zerohop_agent::uninstall::{self, Removed};
use zerohop_known::zerohop_api::CONDITION_TYPE;

type MockHandle = Handle<Request<Body>, Response<Body>>;

async fn next(handle: &mut MockHandle) -> (Request<Body>, SendResponse<Response<Body>>) {
    tokio::time::timeout(Duration::from_secs(60), handle.next_request())
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

fn node(name: &str, types: &[&str]) -> Value {
    let conditions: Vec<Value> = types
        .iter()
        .map(|t| json!({ "type": t, "status": "True" }))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name },
        "status": { "conditions": conditions },
    })
}

fn node_list(items: Vec<Value>, next_page: Option<&str>) -> Value {
    json!({
        "apiVersion": "v1", "kind": "NodeList",
        "metadata": { "continue": next_page.unwrap_or("") },
        "items": items,
    })
}

/// The API server's side: answers the Nodes' list with `pages` in turn,
/// each Node's status patch with its code in `patches`, and the reports'
/// delete with `reports`, which ends the exchange; returns every request
/// as (method, path and query, content type, body).
async fn serve(
    mut handle: MockHandle,
    pages: Vec<Value>,
    patches: &[(&str, u16)],
    reports: u16,
) -> Vec<(Method, String, Option<String>, Value)> {
    let mut seen = Vec::new();
    let mut pages = pages.into_iter();
    loop {
        let (request, send) = next(&mut handle).await;
        let (parts, body) = body_of(request).await;
        let path = parts.uri.path().to_owned();
        seen.push((
            parts.method.clone(),
            parts.uri.to_string(),
            parts
                .headers
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_owned()),
            body,
        ));
        if parts.method == Method::GET && path == "/api/v1/nodes" {
            let page = pages.next().expect("no more pages were announced");
            send.send_response(json_response(StatusCode::OK, &page));
        } else if parts.method == Method::PATCH {
            let name = path
                .strip_prefix("/api/v1/nodes/")
                .and_then(|rest| rest.strip_suffix("/status"))
                .unwrap_or_else(|| panic!("a patch of {path}"));
            let code = patches
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, code)| *code)
                .unwrap_or_else(|| panic!("{name} was not to be patched"));
            if code == 200 {
                send.send_response(json_response(StatusCode::OK, &node(name, &["Ready"])));
            } else {
                send.send_response(failure(code, "Forbidden"));
            }
        } else {
            assert_eq!(parts.method, Method::DELETE, "{path}");
            if reports == 200 {
                send.send_response(json_response(
                    StatusCode::OK,
                    &json!({ "apiVersion": "zerohop.dev/v1alpha1", "kind": "DataPathReportList", "metadata": {}, "items": [] }),
                ));
            } else {
                send.send_response(failure(reports, "NotFound"));
            }
            return seen;
        }
    }
}

#[tokio::test]
async fn the_condition_goes_from_every_node_that_has_it_and_the_reports_go() {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let pages = vec![
        node_list(
            vec![
                node("gpu-1", &["Ready", CONDITION_TYPE]),
                node("cpu-1", &["Ready"]),
            ],
            Some("page-2"),
        ),
        node_list(
            vec![node(
                "gpu-2",
                &[CONDITION_TYPE, "Ready", "NetworkUnavailable"],
            )],
            None,
        ),
    ];
    let server =
        tokio::spawn(
            async move { serve(handle, pages, &[("gpu-1", 200), ("gpu-2", 200)], 200).await },
        );
    let removed = uninstall::remove_all(&client).await.unwrap();
    let seen = server.await.unwrap();
    assert_eq!(
        removed,
        Removed {
            conditions: 2,
            reports_deleted: true,
            failures: vec![],
        }
    );

    let uris: Vec<&str> = seen.iter().map(|(_, uri, _, _)| uri.as_str()).collect();
    assert_eq!(uris[0], "/api/v1/nodes?&limit=500");
    assert!(
        uris[1].starts_with("/api/v1/nodes/gpu-1/status"),
        "{uris:?}"
    );
    assert_eq!(uris[2], "/api/v1/nodes?&limit=500&continue=page-2");
    assert!(
        uris[3].starts_with("/api/v1/nodes/gpu-2/status"),
        "{uris:?}"
    );
    for (method, _, content_type, body) in [&seen[1], &seen[3]] {
        assert_eq!(method, Method::PATCH);
        assert_eq!(
            content_type.as_deref(),
            Some("application/strategic-merge-patch+json")
        );
        // The one element, by its merge key: nothing else of the status.
        assert_eq!(
            body,
            &json!({ "status": { "conditions": [{ "type": CONDITION_TYPE, "$patch": "delete" }] } })
        );
    }
    let (method, uri, _, _) = &seen[4];
    assert_eq!(method, Method::DELETE);
    assert!(
        uri.starts_with("/apis/zerohop.dev/v1alpha1/datapathreports"),
        "{uri}"
    );
    assert_eq!(seen.len(), 5);
}

#[tokio::test]
async fn a_refusing_node_is_reported_and_a_missing_crd_is_no_error() {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let pages = vec![node_list(
        vec![
            node("gpu-1", &[CONDITION_TYPE]),
            node("gpu-2", &[CONDITION_TYPE]),
            node("gpu-3", &[CONDITION_TYPE]),
        ],
        None,
    )];
    let server = tokio::spawn(async move {
        serve(
            handle,
            pages,
            &[("gpu-1", 403), ("gpu-2", 404), ("gpu-3", 200)],
            404,
        )
        .await
    });
    let removed = uninstall::remove_all(&client).await.unwrap();
    server.await.unwrap();
    assert_eq!(removed.conditions, 1, "gpu-3; gpu-2 was deleted meanwhile");
    assert!(!removed.reports_deleted);
    assert_eq!(removed.failures.len(), 1);
    assert_eq!(removed.failures[0].0, "gpu-1");
    assert!(removed.failures[0].1.is_forbidden());
}
