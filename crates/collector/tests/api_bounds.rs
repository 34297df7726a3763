//! What one unauthenticated GET may cost the collector: list and history answers are pages
//! of a bounded size (with the total and where the next page starts), requests for more are
//! 400s with a clear message, and a time-series store that does not answer is given up on
//! (504) instead of holding the request for good.

use std::sync::Arc;
use std::time::Duration;

use collector::config::Config;
use collector::service::{Running, Stores};
use collector_core::metrics::{
    DetectionConfig, HistoryFuture, HistoryQuery, HistorySeries, HistoryStore, Measurement,
    MetricKey, Point,
};
use collector_core::topology::add_router;
use idint_wire::IsdAsn;
use serde_json::Value;
use test_kit::service::{self as kit, http, tempdir};

/// Metric keys put into the store: more than the largest page.
const KEYS: u32 = 12_000;
/// Values written per key (each one beyond the detection threshold, so each is kept).
const VALUES_PER_KEY: u64 = 3;
/// Routers put into the topology: more than a default page.
const ROUTERS: u32 = 1_500;
/// The default page size of the API.
const DEFAULT_PAGE: usize = 1_000;
/// The largest page size of the API.
const MAX_PAGE: usize = 10_000;
/// Points a misbehaving store answers with for one series.
const HUGE_SERIES_POINTS: u64 = 2_000_000;
/// How long the test waits for an answer from the API (longer than its store timeout).
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

fn config(dir: &std::path::Path) -> Config {
    kit::config(dir, "test-token-123", true, "")
}

async fn start(tag: &str, stores: Stores) -> Running {
    kit::start(config(&tempdir(tag)), stores).await
}

async fn get(r: &Running, path: &str) -> (u16, Value) {
    let (st, b) = tokio::time::timeout(ANSWER_WITHIN, http(r.http_addr, "GET", path, &[], b""))
        .await
        .unwrap_or_else(|_| panic!("GET {path} got no answer within {ANSWER_WITHIN:?}"));
    (st, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

/// [`KEYS`] router latency keys with [`VALUES_PER_KEY`] written values each.
fn fill_metrics(r: &Running) {
    let ia: IsdAsn = "1-ff00:0:a".parse().unwrap();
    let cfg = DetectionConfig::default();
    let mut out = Vec::new();
    for v in 0..VALUES_PER_KEY {
        let obs: Vec<Point> = (0..KEYS)
            .map(|n| Point {
                key: MetricKey::router(ia, n, Measurement::LatencyNs),
                // Far apart: event detection writes (and memory keeps) every one.
                value: 1e9 * (v + 1) as f64,
                time_ns: 1_000 + v,
            })
            .collect();
        r.shared.metrics.apply(&cfg, &obs, &mut out);
    }
}

fn len(v: &Value, list: &str) -> usize {
    v[list].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn current_values_come_a_bounded_page_at_a_time() {
    let r = start("bounds-telemetry", Stores::default()).await;
    fill_metrics(&r);
    let (st, v) = get(&r, "/api/v1/telemetry").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        len(&v, "telemetry"),
        DEFAULT_PAGE,
        "an unfiltered request copies every key"
    );
    assert_eq!(
        (v["total"].as_u64(), v["next_offset"].as_u64()),
        (Some(KEYS.into()), Some(1000))
    );

    let (st, v) = get(&r, "/api/v1/telemetry?limit=5&offset=11998").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(len(&v, "telemetry"), 2);
    assert!(v.get("next_offset").is_none(), "the last page: {v}");
    assert_eq!(v["telemetry"][1]["tags"]["node"], "11999");

    let (st, v) = get(&r, &format!("/api/v1/telemetry?limit={}", MAX_PAGE + 1)).await;
    assert_eq!(st, 400, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("limit 10001 is out of range"),
        "{v}"
    );
    let (st, v) = get(&r, "/api/v1/telemetry?limit=0").await;
    assert_eq!(st, 400, "{v}");
}

#[tokio::test]
async fn lists_of_the_topology_come_a_bounded_page_at_a_time() {
    let r = start("bounds-routers", Stores::default()).await;
    let ia: IsdAsn = "1-ff00:0:b".parse().unwrap();
    r.shared.topology.update(|t, ch| {
        for n in 0..ROUTERS {
            add_router(t, ch, ia, n);
        }
    });
    let (st, v) = get(&r, "/api/v1/routers").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        len(&v, "routers"),
        DEFAULT_PAGE,
        "every router in one answer"
    );
    assert_eq!(v["total"].as_u64(), Some(ROUTERS.into()));
    let (st, v) = get(&r, "/api/v1/routers?offset=1000").await;
    assert_eq!((st, len(&v, "routers")), (200, 500), "{v}");
    assert!(v.get("next_offset").is_none(), "{v}");
    for list in [
        "/api/v1/ases",
        "/api/v1/links",
        "/api/v1/paths",
        "/api/v1/paths/unknown",
    ] {
        let (st, v) = get(&r, &format!("{list}?limit=100000")).await;
        assert_eq!(st, 400, "{list}: {v}");
        let (st, v) = get(&r, &format!("{list}?limit=1")).await;
        assert_eq!(st, 200, "{list}: {v}");
        assert!(v["total"].is_u64(), "{list}: {v}");
    }
}

#[tokio::test]
async fn history_answers_are_bounded_in_series_and_points() {
    let r = start("bounds-history", Stores::default()).await;
    fill_metrics(&r);
    let (st, v) = get(&r, "/api/v1/telemetry/history?from=0&to=2000").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        len(&v, "series"),
        DEFAULT_PAGE,
        "every key's history in one answer"
    );
    assert_eq!(v["total"].as_u64(), Some(KEYS.into()));
    assert_eq!(v["series"][0]["points"].as_array().map(Vec::len), Some(3));

    // 10000 series of up to 10000 steps: refused before anything is copied.
    let (st, v) = get(
        &r,
        "/api/v1/telemetry/history?from=0&to=9999000000&step_ms=1&limit=10000",
    )
    .await;
    assert_eq!(st, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("points"), "{v}");
    // Raw values of the largest page: up to all memory keeps of 10000 keys.
    let (st, v) = get(&r, "/api/v1/telemetry/history?limit=10000").await;
    assert_eq!(st, 400, "{v}");
}

/// A store that never answers.
struct Silent;

impl HistoryStore for Silent {
    fn query(&self, _: HistoryQuery) -> HistoryFuture<'_> {
        Box::pin(std::future::pending())
    }
}

/// A store that answers every query with one series of [`HUGE_SERIES_POINTS`] points.
struct Flood;

impl HistoryStore for Flood {
    fn query(&self, _: HistoryQuery) -> HistoryFuture<'_> {
        Box::pin(async {
            Ok(vec![HistorySeries {
                tags: Default::default(),
                points: (0..HUGE_SERIES_POINTS).map(|t| (t, 1.0)).collect(),
            }])
        })
    }
}

#[tokio::test]
async fn a_store_that_does_not_answer_is_given_up_on_with_a_504() {
    let stores = Stores {
        history: Some(Arc::new(Silent)),
        ..Stores::default()
    };
    let r = start("bounds-silent", stores).await;
    let (st, v) = get(
        &r,
        "/api/v1/telemetry/history?scope=path&measurement=latency_ns",
    )
    .await;
    assert_eq!(st, 504, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("no answer within"),
        "{v}"
    );
}

#[tokio::test]
async fn a_store_answer_beyond_the_point_bound_is_refused_with_the_remedy() {
    let stores = Stores {
        history: Some(Arc::new(Flood)),
        ..Stores::default()
    };
    let r = start("bounds-flood", stores).await;
    let (st, v) = get(
        &r,
        "/api/v1/telemetry/history?scope=path&measurement=latency_ns&limit=1",
    )
    .await;
    assert_eq!(
        st,
        400,
        "{} points answered",
        v["series"][0]["points"].as_array().map_or(0, Vec::len)
    );
    assert!(v["error"].as_str().unwrap().contains("use step_ms"), "{v}");
}
