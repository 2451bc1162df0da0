//! `zerohop fleet --format html` seen in headless Chromium: the real
//! binary against an in-memory API server, the page laid out at a desktop
//! width with nothing overflowing, every node, failing check and stale
//! agent on it, no request, and a hostile node name kept as text.

#![cfg(feature = "cluster")]

mod agent_support;
mod browser;

use std::fs;
use std::path::Path;
use std::time::Duration;

use agent_support::{fleet, node};
use serde_json::{Value, json};
use zerohop_testkit::fake_api_server::FakeApiServer;

const LIMIT: Duration = Duration::from_secs(20);

/// A heartbeat `seconds` ago, RFC 3339 in UTC.
fn ago(seconds: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t = now - seconds;
    let (days, rest) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    // Days since 1970-01-01 to a calendar date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

fn condition(status: &str, reason: &str, message: &str, age: i64) -> Value {
    json!({
        "type": "zerohop.dev/DataPathReady",
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": ago(age),
        "lastTransitionTime": ago(age + 3600),
    })
}

const HOSTILE: &str = "x<script>document.title='owned'</script>";

#[test]
fn fleet_page_shows_nodes_by_state_failing_checks_and_stale_agents() {
    let Some(browser) = browser::chromium() else {
        return;
    };
    let gpu = json!({ "nvidia.com/gpu.present": "true" });
    let api = FakeApiServer::start();
    api.put_node(node(
        "gpu-ready",
        gpu.clone(),
        json!([condition("True", "DataPathReady", "no check fails", 10)]),
    ));
    api.put_node(node(
        "gpu-broken",
        gpu.clone(),
        json!([condition(
            "False",
            "RdmaPortDown",
            "RDMA004 mlx5_0/1: bring the port up; 2 failing: GPU012, RDMA004",
            20
        )]),
    ));
    api.put_node(node(
        "gpu-stale",
        gpu.clone(),
        json!([condition("True", "DataPathReady", "no check fails", 7200)]),
    ));
    api.put_node(node(
        HOSTILE,
        gpu,
        json!([condition(
            "False",
            "IommuDisabled",
            "KRN001: enable the iommu; 1 failing: KRN001",
            30
        )]),
    ));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = api.write_kubeconfig(dir.path());
    let (code, html, err) = fleet(
        &[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--format",
            "html",
        ],
        LIMIT,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        !html.contains("<script>document"),
        "the node name is escaped"
    );
    let pictures = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pictures");
    fs::create_dir_all(&pictures).unwrap();
    let page = pictures.join("fleet.html");
    fs::write(&page, &html).unwrap();
    let look = browser::look(&browser, &page);
    browser::screenshot(&browser, &page, &pictures.join("fleet.png"), 900);
    let r = &look.result;
    assert!(
        r["scroll_width"].as_u64() <= Some(u64::from(browser::WIDTH)),
        "{r}"
    );
    for key in ["outside", "clipped"] {
        assert!(look.list(key).is_empty(), "{key}: {:#?}", look.list(key));
    }
    assert_eq!(r["scripts"], 0);
    assert!(look.requests().is_empty(), "{:?}", look.requests());
    let text = r["text"].as_str().unwrap();
    for expected in [
        "gpu-ready",
        "gpu-broken",
        "gpu-stale",
        HOSTILE,
        "GPU012",
        "RDMA004",
        "KRN001",
    ] {
        assert!(text.contains(expected), "{expected} is not on the page");
    }
    let stale = text.split("Stale agents").nth(1).unwrap();
    assert!(stale.contains("gpu-stale") && !stale.contains("gpu-broken"));
}

#[test]
fn an_html_page_does_not_follow_watch() {
    let (code, _, err) = fleet(&["--watch", "--format", "html"], LIMIT);
    assert_eq!(code, Some(2));
    assert!(err.contains("cannot follow --watch"), "{err}");
}
