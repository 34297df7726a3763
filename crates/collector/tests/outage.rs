//! No accepted data is lost when the time-series store is down: VictoriaMetrics is stopped for
//! minutes while genuine reports keep arriving; the collector keeps accepting them (samples
//! spill from memory to its on-disk spool), `/metrics` tells buffered, spooled, durable and
//! dropped apart, and once the store is back every sample of every accepted report is in it.
//!
//! The outage lasts `IDINT_OUTAGE_SECS` seconds (default 120).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use collector::service::{Running, now_ns};
use idint_report::{Message, v1};
use test_kit::chain::{Ask, Chain};
use test_kit::require::Need;
use test_kit::service as kit;
use test_kit::services::Services;

const TOKEN: &str = "outage-token";
/// Default length of the outage, seconds.
const DEFAULT_OUTAGE_SECS: u64 = 120;
/// Reports per batch and batches per second sent throughout.
const PER_BATCH: usize = 20;
const BATCHES_PER_S: u64 = 10;
/// Samples the writer holds in memory: far fewer than the outage brings.
const MEMORY_SAMPLES: usize = 2000;

/// Reports at least 2 ms apart (the store keeps one value per series and millisecond), at
/// the wall clock's time or later.
fn batch(chain: &mut Chain, seq: u64) -> v1::ReportBatch {
    let reports: Vec<_> = (0..PER_BATCH)
        .map(|_| {
            chain.now_ns = (chain.now_ns + 2_000_000).max(now_ns());
            chain.probe()
        })
        .collect();
    v1::ReportBatch {
        exporter: reports[0].exporter.clone(),
        sequence: seq,
        reports,
    }
}

/// A `/metrics` value (without labels).
async fn metric(r: &Running, name: &str) -> u64 {
    let (st, body) = kit::http(r.http_addr, "GET", "/metrics", &[], b"").await;
    assert_eq!(st, 200);
    let text = String::from_utf8(body).unwrap();
    let prefix = format!("idint_collector_{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outage_of_minutes_under_load_loses_nothing_accepted() {
    test_kit::require!(Need::Root, Need::VictoriaMetrics);
    let outage = Duration::from_secs(
        std::env::var("IDINT_OUTAGE_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(DEFAULT_OUTAGE_SECS),
    );
    let s = Services::private("vm-outage-load", 26800, &["victoria"]);
    let vm_url = s.url("IDINT_VM_URL").to_string();
    let vm: SocketAddr = vm_url.trim_start_matches("http://").parse().unwrap();
    let dir = kit::tempdir("outage");
    let spool = dir.join("spool");
    let cfg = kit::config(
        &dir,
        TOKEN,
        true,
        &format!(
            r#"
[storage]
timeseries = "victoria"
timeseries_url = "{vm_url}"
buffer_samples = {MEMORY_SAMPLES}
spool_dir = "{}"
"#,
            spool.display()
        ),
    );
    let r = kit::start_with_storage(cfg).await;
    for f in test_kit::chain::topology_files() {
        let bearer = format!("Bearer {TOKEN}");
        let headers = [("Authorization", bearer.as_str())];
        let (st, _) = kit::http(
            r.http_addr,
            "POST",
            "/api/v1/admin/topology",
            &headers,
            f.as_bytes(),
        )
        .await;
        assert_eq!(st, 200);
    }
    let mut chain = Chain::new(now_ns(), false, Ask::Latency);
    let mut seq = 0;
    let mut send_for = async |chain: &mut Chain, d: Duration| {
        let until = Instant::now() + d;
        let mut tick = tokio::time::interval(Duration::from_millis(1000 / BATCHES_PER_S));
        while Instant::now() < until {
            tick.tick().await;
            seq += 1;
            let body = batch(chain, seq).encode_to_vec();
            let (st, _) = kit::http(r.http_addr, "POST", "/api/v1/reports", &[], &body).await;
            assert_eq!(st, 202, "batch {seq} refused");
        }
    };

    send_for(&mut chain, Duration::from_secs(3)).await;
    s.stop(&["victoria"]);
    let down = Instant::now();
    send_for(&mut chain, outage).await;
    // During the outage: accepted, spilled to disk, nothing dropped.
    assert!(metric(&r, "ts_spooled").await > 0);
    assert_eq!(metric(&r, "ts_dropped_total").await, 0);
    s.start(&["victoria"]);
    let outage_took = down.elapsed();
    send_for(&mut chain, Duration::from_secs(3)).await;

    let sent = seq * PER_BATCH as u64;
    kit::settle(&r, sent, 3000).await;
    let accepted = metric(&r, "accepted_total").await;
    let rejected = r
        .shared
        .counters
        .rejected
        .iter()
        .map(|c| c.load(std::sync::atomic::Ordering::Relaxed));
    assert_eq!(
        accepted,
        sent,
        "every genuine report accepted; rejected by reason: {:?}",
        rejected.collect::<Vec<_>>()
    );
    // Wait until the writer has written everything (memory and spool).
    let start = Instant::now();
    loop {
        let (buffered, spooled) = (
            metric(&r, "ts_buffered").await,
            metric(&r, "ts_spooled").await,
        );
        if buffered == 0 && spooled == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{buffered} {spooled} left"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let taken = metric(&r, "ts_accepted_total").await;
    let written = metric(&r, "ts_written_total").await;
    assert_eq!(written, taken, "durable = accepted");
    assert!(metric(&r, "ts_spilled_total").await > 0);
    assert_eq!(metric(&r, "ts_dropped_total").await, 0);
    assert_eq!(metric(&r, "ts_failed_total").await, 0);
    assert_eq!(metric(&r, "points_refused_total").await, 0);
    // Count them in the store itself.
    kit::await_points_in_victoria(vm, written, Duration::from_secs(60)).await;
    eprintln!(
        "outage {:?}: {sent} reports accepted, {written} samples written, {} via disk",
        outage_took,
        metric(&r, "ts_spilled_total").await
    );
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
