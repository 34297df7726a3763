//! Two collector instances on one PostgreSQL and one VictoriaMetrics: a topology imported
//! through one reaches the other without a restart (LISTEN/NOTIFY); each instance owns half
//! the sources, so a report accepted by one and replayed to the other is refused there; both
//! answer the API the same and every accepted report is counted once.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use collector::counters::RejectReason;
use collector::replay::Share;
use collector::service::{Running, now_ns};
use idint_report::{Message, v1};
use idint_wire::HostAddr;
use serde_json::Value;
use test_kit::chain::{self, Ask, Chain};
use test_kit::require::Need;
use test_kit::service as kit;
use test_kit::services::Services;

const TOKEN: &str = "cluster-token";
const INSTANCES: u32 = 2;
/// Reports each source sends.
const REPORTS: usize = 40;
/// Private PostgreSQL and VictoriaMetrics ports of this test (and the next two).
const BASE_PORT: u16 = 28420;

fn config(dir: &std::path::Path, pg: &str, vm: &str, index: u32) -> collector::config::Config {
    kit::config(
        dir,
        TOKEN,
        true,
        &format!(
            r#"
[storage]
postgres_url = "{pg}"
timeseries = "victoria"
timeseries_url = "{vm}"

[cluster]
instances = {INSTANCES}
index = {index}
"#
        ),
    )
}

/// A host of AS A owned by instance `index`.
fn source_of(index: u32) -> Ipv4Addr {
    (1..=250)
        .map(|last| Ipv4Addr::new(10, 0, 0, last))
        .find(|h| Share::owner(INSTANCES, chain::ases()[0], &HostAddr::V4(*h)) == index)
        .expect("some host")
}

async fn get(r: &Running, path: &str) -> Value {
    let (st, body) = kit::http(r.http_addr, "GET", path, &[], b"").await;
    assert_eq!(st, 200, "{path}");
    serde_json::from_slice(&body).unwrap()
}

/// `v` without the latest values (`telemetry`) anywhere in it: each instance's own.
fn without_values(mut v: Value) -> Value {
    match &mut v {
        Value::Object(m) => {
            m.remove("telemetry");
            for x in m.values_mut() {
                *x = without_values(x.take());
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                *x = without_values(x.take());
            }
        }
        _ => {}
    }
    v
}

async fn post(r: &Running, batch: &v1::ReportBatch) {
    let (st, _) = kit::http(
        r.http_addr,
        "POST",
        "/api/v1/reports",
        &[],
        &batch.encode_to_vec(),
    )
    .await;
    assert_eq!(st, 202);
}

fn rejected(r: &Running, reason: RejectReason) -> u64 {
    r.shared.counters.rejected(reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_the_topology_split_the_sources_and_count_nothing_twice() {
    test_kit::require!(Need::Root, Need::Postgres, Need::VictoriaMetrics);
    let s = Services::private("cluster", BASE_PORT, &["postgres", "victoria"]);
    let (pg, vm) = (
        s.url("IDINT_PG_URL").to_string(),
        s.url("IDINT_VM_URL").to_string(),
    );
    let dirs = [kit::tempdir("cluster-0"), kit::tempdir("cluster-1")];
    let a = kit::start_with_storage(config(&dirs[0], &pg, &vm, 0)).await;
    let b = kit::start_with_storage(config(&dirs[1], &pg, &vm, 1)).await;

    // Imported through A only: B learns it without a restart.
    let bearer = format!("Bearer {TOKEN}");
    for f in chain::topology_files() {
        let headers = [("Authorization", bearer.as_str())];
        let (st, _) = kit::http(
            a.http_addr,
            "POST",
            "/api/v1/admin/topology",
            &headers,
            f.as_bytes(),
        )
        .await;
        assert_eq!(st, 200);
    }
    let path = serde_json::to_string(&chain::path_description()).unwrap();
    let headers = [("Authorization", bearer.as_str())];
    let (st, _) = kit::http(
        a.http_addr,
        "POST",
        "/api/v1/admin/paths",
        &headers,
        path.as_bytes(),
    )
    .await;
    assert_eq!(st, 200);
    let started = Instant::now();
    for what in ["/api/v1/ases", "/api/v1/paths", "/api/v1/links"] {
        while get(&b, what).await != get(&a, what).await {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "B never saw A's {what}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let synced = started.elapsed();
    assert!(
        !get(&b, "/api/v1/paths").await["paths"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Each source's reports go to its instance; A's are also replayed to B.
    let mut to_a = Chain::from_source(source_of(0), now_ns(), false, Ask::Latency, |_| {});
    // B's source runs 300 ms ahead: its samples never share a millisecond with A's.
    let mut to_b = Chain::from_source(
        source_of(1),
        now_ns() + 300_000_000,
        true,
        Ask::Latency,
        |_| {},
    );
    let batch_a = to_a.batch(REPORTS, 1);
    let batch_b = to_b.batch(REPORTS, 1);
    post(&a, &batch_a).await;
    post(&b, &batch_b).await;
    post(&b, &batch_a).await;
    kit::settle(&a, REPORTS as u64, 500).await;
    kit::settle(&b, 2 * REPORTS as u64, 500).await;
    let accepted = |r: &Running| {
        r.shared
            .counters
            .accepted
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(
        (accepted(&a), accepted(&b)),
        (REPORTS as u64, REPORTS as u64)
    );
    assert_eq!(rejected(&b, RejectReason::OtherInstance), REPORTS as u64);
    assert_eq!(rejected(&a, RejectReason::OtherInstance), 0);

    // Both answer the topology alike (the latest values beside it are each instance's own,
    // from the reports it accepted) and history alike (from the shared store).
    for what in ["/api/v1/paths", "/api/v1/links", "/api/v1/ases"] {
        assert_eq!(
            without_values(get(&a, what).await),
            without_values(get(&b, what).await),
            "{what}"
        );
    }
    // History: the store holds exactly the values the two instances wrote of the key, and
    // both answer them. Event detection writes a value when it moves by more than the
    // threshold (queue_len: 1) from the last written one; the chain's queue grows by 1 per
    // report, so each instance writes every second one: REPORTS / 2 each, REPORTS in all
    // (not 2 * REPORTS: no point is lost, they were never written).
    let [_, _, c, _] = chain::ases();
    let key = collector::metrics::MetricKey::queue(c, 4, 5);
    let written_of = |r: &Running| {
        r.shared
            .metrics
            .get(&key)
            .expect("the queue was measured")
            .history
            .into_iter()
            .map(|(t, v)| (t / 1_000_000 * 1_000_000, v))
            .collect::<Vec<_>>()
    };
    let (wa, wb) = (written_of(&a), written_of(&b));
    assert_eq!((wa.len(), wb.len()), (REPORTS / 2, REPORTS / 2));
    let mut expected: Vec<(u64, f64)> = wa.iter().chain(&wb).copied().collect();
    // The chain's reports are 1 us apart: many values share a millisecond, and the store
    // must keep them all (VictoriaMetrics without deduplication does).
    let millis: std::collections::BTreeSet<u64> = expected.iter().map(|p| p.0).collect();
    assert!(millis.len() < expected.len(), "{millis:?}");
    expected.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let (from, to) = (now_ns() - 60_000_000_000, now_ns() + 1_000_000_000);
    let history = format!(
        "/api/v1/telemetry/history?scope=queue&measurement=queue_len&ia=1-ff00:0:c&node=4&ifid=5&from={from}&to={to}"
    );
    let points_of = |h: &Value| -> Vec<(u64, f64)> {
        let mut p: Vec<(u64, f64)> = h["series"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|x| x["points"].as_array().cloned().unwrap_or_default())
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        p.sort_by(|x, y| x.partial_cmp(y).unwrap());
        p
    };
    let started = Instant::now();
    loop {
        let (ha, hb) = (get(&a, &history).await, get(&b, &history).await);
        let points = points_of(&ha);
        if ha == hb && points.len() >= expected.len() {
            assert_eq!(
                points, expected,
                "the store's points are the instances' written ones"
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{} points: {ha} / {hb}; written {} {}",
            points.len(),
            a.shared
                .counters
                .points_written
                .load(std::sync::atomic::Ordering::Relaxed),
            b.shared
                .counters
                .points_written
                .load(std::sync::atomic::Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    eprintln!("topology import reached the other instance in {synced:?}");

    // Every point each instance wrote is in the store once.
    let written = |r: &Running| {
        r.shared
            .counters
            .points_written
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let total = written(&a) + written(&b);
    assert!(total > 0);
    a.shutdown().await;
    b.shutdown().await;
    let vm_addr = vm.trim_start_matches("http://").parse().unwrap();
    kit::await_points_in_victoria(vm_addr, total, Duration::from_secs(30)).await;
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}
