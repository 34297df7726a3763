//! The collector against real PostgreSQL, VictoriaMetrics and InfluxDB started by
//! `scripts/services.sh` on loopback (own ports and state directory): every accepted report's
//! values reach the time-series store and come back through the history API, also when the
//! store or PostgreSQL is stopped and restarted during ingest; topology and quarantine persist
//! and are loaded back at the next start.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use test_kit::require::Need;

use collector::config::Config;
use collector::counters::RejectReason;
use collector::service::{Running, now_ns};
use collector_store::topology::TopologyDb;
use idint_report::{Message, v1};
use serde_json::Value;
use test_kit::chain::{self, Ask, Chain};
use test_kit::service as kit;
use test_kit::services::Services;

const TOKEN: &str = "storage-token";

fn config(dir: &std::path::Path, pg: &str, ts: &str, ts_url: &str) -> Config {
    kit::config(
        dir,
        TOKEN,
        true,
        &format!(
            r#"
[detection]
queue_len = 0.0

[storage]
postgres_url = "{pg}"
timeseries = "{ts}"
timeseries_url = "{ts_url}"
"#
        ),
    )
}

async fn http(addr: SocketAddr, method: &str, path: &str, auth: bool, body: &[u8]) -> (u16, Value) {
    let bearer = format!("Bearer {TOKEN}");
    let headers: &[(&str, &str)] = if auth {
        &[("Authorization", &bearer)]
    } else {
        &[]
    };
    let (status, body) = kit::http(addr, method, path, headers, body).await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

async fn settle(r: &Running, n: u64) {
    kit::settle(r, n, 1000).await;
}

/// Reports 2 ms apart (the time-series stores keep one value per series and millisecond).
fn spaced_batch(chain: &mut Chain, n: usize, seq: u64) -> v1::ReportBatch {
    let reports: Vec<_> = (0..n)
        .map(|_| {
            chain.now_ns += 2_000_000;
            chain.probe()
        })
        .collect();
    v1::ReportBatch {
        exporter: reports[0].exporter.clone(),
        sequence: seq,
        reports,
    }
}

/// Queue lengths of RC towards D (one distinct value per report) from the history API.
async fn queue_history(api: SocketAddr, from: u64, to: u64) -> Vec<(u64, f64)> {
    let (st, v) = http(
        api,
        "GET",
        &format!(
            "/api/v1/telemetry/history?scope=queue&measurement=queue_len&ia=1-ff00:0:c&node=4&ifid=5&from={from}&to={to}"
        ),
        false,
        b"",
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["source"], "time-series store");
    v["series"][0]["points"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| (p[0].as_u64().unwrap(), p[1].as_f64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

async fn round_trip(backend: &str, base_port: u16) {
    let svc_name = if backend == "victoria" {
        "victoria"
    } else {
        "influx"
    };
    let svc = Services::private(backend, base_port, &["postgres", svc_name]);
    let pg = svc.url("IDINT_PG_URL");
    let ts_url = svc.url(if backend == "victoria" {
        "IDINT_VM_URL"
    } else {
        "IDINT_INFLUX_URL"
    });
    let dir = svc.dir.join("collector");
    let cfg = config(&dir, pg, backend, ts_url);
    let r = kit::start_with_storage(cfg.clone()).await;
    let api = r.http_addr;
    for f in chain::topology_files() {
        assert_eq!(
            http(api, "POST", "/api/v1/admin/topology", true, f.as_bytes())
                .await
                .0,
            200
        );
    }
    let t0 = now_ns();
    let mut chain = Chain::new(t0, true, Ask::Latency);
    // Ingest with both stores up, then with the time-series store stopped, then PostgreSQL.
    let mut batches = Vec::new();
    for i in 0..3 {
        batches.push(spaced_batch(&mut chain, 10, i));
    }
    let mut n = 0;
    for (i, b) in batches.iter().enumerate() {
        if i == 1 {
            svc.run(&["stop", svc_name]);
        }
        if i == 2 {
            svc.run(&["start", svc_name]);
            svc.run(&["stop", "postgres"]);
        }
        let (st, _) = http(api, "POST", "/api/v1/reports", false, &b.encode_to_vec()).await;
        assert_eq!(st, 202);
        n += b.reports.len() as u64;
        settle(&r, n).await;
    }
    // A replay while PostgreSQL is down: quarantined and persisted later.
    let (st, _) = http(
        api,
        "POST",
        "/api/v1/reports",
        false,
        &batches[0].encode_to_vec(),
    )
    .await;
    assert_eq!(st, 202);
    settle(&r, n + 10).await;
    // A topology change while PostgreSQL is down.
    // (Its second router has no node id, as in a scionproto topology.json.)
    let extra = chain::topology_json(
        "1-ff00:0:e",
        false,
        &[
            ("re", Some(9), &[]),
            ("re2", None, &[(4, "1-ff00:0:f", None)]),
        ],
    );
    assert_eq!(
        http(
            api,
            "POST",
            "/api/v1/admin/topology",
            true,
            extra.as_bytes()
        )
        .await
        .0,
        200
    );
    svc.run(&["start", "postgres"]);
    // An AS without routers is persisted too.
    let (st, v) = http(
        api,
        "POST",
        "/api/v1/admin/topology",
        true,
        chain::topology_json("4-ff00:0:1", false, &[]).as_bytes(),
    )
    .await;
    assert_eq!((st, &v["changes"]), (200, &Value::from(1)), "{v}");
    // History queries are checked before the store is asked: too many steps, a step that
    // overflows, a filter the scope does not take.
    for (q, want) in [
        ("from=0&step_ms=1", "steps"),
        ("step_ms=18446744073709551615", "too large"),
        ("step_ms=0", "> 0"),
        ("ia=9-ff00:0:99", "does not apply to scope path"),
    ] {
        let (st, v) = http(
            api,
            "GET",
            &format!("/api/v1/telemetry/history?scope=path&measurement=latency_ns&{q}"),
            false,
            b"",
        )
        .await;
        assert_eq!(st, 400, "{q}: {v}");
        assert!(v["error"].as_str().unwrap().contains(want), "{q}: {v}");
    }
    let shared = r.shared.clone();
    assert_eq!(shared.counters.accepted.load(Relaxed), 30);
    assert_eq!(shared.counters.rejected(RejectReason::Replayed), 10);
    // Shutdown writes out both stores' buffers (retrying until they answer).
    r.shutdown().await;
    assert_eq!(shared.counters.points_refused.load(Relaxed), 0);

    // Every accepted report's queue value is in the time-series store.
    let r = kit::start_with_storage(cfg.clone()).await;
    let want: Vec<f64> = (0..30).map(|i| f64::from(4 * 7 + i as u32)).collect();
    let mut got = Vec::new();
    for _ in 0..100 {
        got = queue_history(r.http_addr, t0, chain.now_ns + 1_000_000_000).await;
        if got.len() >= 30 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let values: Vec<f64> = got.iter().map(|p| p.1).collect();
    assert_eq!(values, want, "queue lengths of all 30 accepted reports");
    // The restarted collector loaded the topology from PostgreSQL (path and extra AS).
    let (_, paths) = http(r.http_addr, "GET", "/api/v1/paths", false, b"").await;
    assert_eq!(paths["paths"].as_array().unwrap().len(), 1);
    assert_eq!(
        paths["paths"][0]["hops"],
        serde_json::to_value(chain::path_description().hops).unwrap()
    );
    // Learned from the reports (walked over the imported interfaces), and still so.
    assert_eq!(paths["paths"][0]["origin"], "learned");
    // An SLA check over a window reaching back before the restart sees the values written
    // then (from the time-series store), not an empty memory taken as compliance.
    let id = paths["paths"][0]["id"].as_str().unwrap().to_string();
    let (st, sla) = http(
        r.http_addr,
        "GET",
        &format!("/api/v1/sla?path={id}&objective=latency&max=0&window_s=3600"),
        false,
        b"",
    )
    .await;
    assert_eq!(st, 200, "{sla}");
    assert_eq!(sla["complete"], true, "{sla:#}");
    assert_eq!(sla["sources"][0], "time-series store", "{sla:#}");
    assert!(sla["samples"].as_u64().unwrap() > 0, "{sla:#}");
    assert_eq!(sla["compliant"], false, "{sla:#}");
    let (st, e) = http(r.http_addr, "GET", "/api/v1/ases/1-ff00:0:e", false, b"").await;
    assert_eq!(st, 200, "{e}");
    assert_eq!(e["routers"]["re"]["node_id"], 9);
    assert_eq!(e["routers"]["re2"]["node_id"], Value::Null, "{e}");
    assert_eq!(
        e["routers"]["re2"]["interfaces"],
        serde_json::json!([4]),
        "{e}"
    );
    assert_eq!(e["interfaces"]["4"]["router"], "re2", "{e}");
    let (st, e) = http(r.http_addr, "GET", "/api/v1/ases/4-ff00:0:1", false, b"").await;
    assert_eq!(st, 200, "{e}");
    r.shutdown().await;
    let db = TopologyDb::connect(pg, 100).await.unwrap();
    let q = db.quarantine(100).await.unwrap();
    assert_eq!(q.iter().filter(|x| x.reason == "replayed").count(), 10);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn victoria_metrics_and_postgres_lose_nothing_accepted_across_restarts() {
    test_kit::require!(Need::Root, Need::Postgres, Need::VictoriaMetrics);
    round_trip("victoria", 25_610).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn influxdb_and_postgres_lose_nothing_accepted_across_restarts() {
    test_kit::require!(Need::Root, Need::Postgres, Need::InfluxDb);
    round_trip("influx", 25_620).await;
}
