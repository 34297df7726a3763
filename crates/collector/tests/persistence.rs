//! What the collector promises to persist reaches PostgreSQL, and what it cannot persist it
//! refuses: a flood of rejected reports while PostgreSQL is down fills only the quarantine's
//! own (lossy) queue, topology imports keep their room, and an import that cannot be queued
//! fails with 503 instead of answering 200 and being lost.

use std::time::Duration;

use collector::service::Running;
use idint_report::{Message, v1};
use serde_json::Value;
use test_kit::chain::{self, Ask, Chain};
use test_kit::require::Need;
use test_kit::service as kit;
use test_kit::services::Services;

const TOKEN: &str = "persistence-token";
/// Topology changes the write-behind queue holds.
const TOPOLOGY_QUEUE: usize = 64;
/// Rejected reports sent while PostgreSQL is down (far more than the quarantine queue).
const REJECTED: usize = 300;

fn config(dir: &std::path::Path, pg: &str) -> collector::config::Config {
    kit::config(
        dir,
        TOKEN,
        true,
        &format!(
            r#"
[storage]
postgres_url = "{pg}"
topology_queue = {TOPOLOGY_QUEUE}
quarantine_queue = 16
"#
        ),
    )
}

async fn admin(r: &Running, path: &str, body: &str) -> (u16, Value) {
    let bearer = format!("Bearer {TOKEN}");
    let (st, b) = kit::http(
        r.http_addr,
        "POST",
        path,
        &[("Authorization", &bearer)],
        body.as_bytes(),
    )
    .await;
    (st, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

/// A path description of two made-up ASes of ISD 7, numbered `k`.
fn made_up_path(k: u32) -> String {
    format!(
        r#"{{"hops": [{{"ia": "7-ff00:0:{k:x}", "ingress": 0, "egress": 1}}, {{"ia": "7-ff00:1:{k:x}", "ingress": 2, "egress": 0}}]}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_keep_their_room_and_fail_when_they_cannot_be_persisted() {
    test_kit::require!(Need::Root, Need::Postgres);
    let s = Services::private("pg-persist", 26500, &["postgres"]);
    let pg = s.url("IDINT_PG_URL").to_string();
    let dir = kit::tempdir("persistence");
    // A private instance: the database starts empty.
    let r = kit::start_with_storage(config(&dir, &pg)).await;

    s.stop(&["postgres"]);
    // A flood of rejected reports (garbage stacks) while PostgreSQL is down.
    let mut chain = Chain::new(collector::service::now_ns(), false, Ask::Latency);
    let mut batch = chain.batch(1, 1);
    batch.reports[0].idint_stack = vec![0xee; 64];
    let flood = v1::ReportBatch {
        reports: vec![batch.reports[0].clone(); REJECTED],
        ..Default::default()
    };
    let (st, _) = kit::http(
        r.http_addr,
        "POST",
        "/api/v1/reports",
        &[],
        &flood.encode_to_vec(),
    )
    .await;
    assert_eq!(st, 202);
    kit::settle(&r, REJECTED as u64, 500).await;

    // The chain's topology still fits: accepted, and persisted once PostgreSQL is back.
    for f in chain::topology_files() {
        let (st, body) = admin(&r, "/api/v1/admin/topology", &f).await;
        assert_eq!(st, 200, "{body}");
    }
    // Imports that no longer fit are refused with 503 and change nothing.
    let (mut ok, mut refused) = (Vec::new(), Vec::new());
    for k in 0..(2 * TOPOLOGY_QUEUE as u32) {
        match admin(&r, "/api/v1/admin/paths", &made_up_path(k)).await {
            (200, _) => ok.push(k),
            (503, body) => {
                assert!(
                    body["error"].as_str().unwrap().contains("not persisted"),
                    "{body}"
                );
                refused.push(k);
            }
            (st, body) => panic!("{st} {body}"),
        }
    }
    assert!(
        !refused.is_empty() && !ok.is_empty(),
        "ok {ok:?} refused {refused:?}"
    );
    let (st, paths) = kit::http(r.http_addr, "GET", "/api/v1/paths", &[], b"").await;
    assert_eq!(st, 200);
    let paths: Value = serde_json::from_slice(&paths).unwrap();
    assert_eq!(
        paths["paths"].as_array().unwrap().len(),
        ok.len(),
        "{paths}"
    );

    s.start(&["postgres"]);
    r.shutdown().await;

    // A new collector on the same database knows exactly what was answered 200.
    let r = kit::start_with_storage(config(&dir, &pg)).await;
    let topo = r.shared.topology.snapshot();
    for ia in chain::ases() {
        assert!(topo.ases.contains_key(&ia), "{ia} lost");
    }
    assert_eq!(topo.paths.len(), ok.len());
    r.shutdown().await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    let _ = std::fs::remove_dir_all(&dir);
}
