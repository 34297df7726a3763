//! Keys fetched from the control service never hold a pipeline worker: a control service that
//! never answers costs one fetch (then remembered), and the reports that needed its key get
//! their verdict as soon as that fetch ends, not one fetch timeout each.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use collector::counters::RejectReason;
use collector::service::{Stores, now_ns};
use idint_report::Message;
use test_kit::chain::{self, Ask, Chain, ases};
use test_kit::service::{self as kit, http, tempdir};

const TOKEN: &str = "test-token-key-fetch";
/// Reports that need the key of AS B, which only the (silent) control service could give.
const REPORTS: u64 = 20;
/// Reports per batch.
const PER_BATCH: usize = 4;

/// A TCP server that accepts connections and never answers: a control service that hangs.
async fn silent_control_service() -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            count.fetch_add(1, Relaxed);
            held.push(sock);
        }
    });
    (addr, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_service_that_never_answers_does_not_hold_the_pipeline() {
    let dir = tempdir("key-fetch");
    let mut cfg = kit::config(&dir, TOKEN, true, "");
    // Every key but B's imported (this epoch's and the next one's: the test may run across
    // an epoch start): B's must come from the control service.
    let keys: Vec<_> = chain::level1_imports_now_and_next(now_ns() / 1_000_000_000)
        .into_iter()
        .filter(|k| k.src_ia != ases()[1].to_string())
        .collect();
    std::fs::write(
        dir.join("level1.json"),
        serde_json::to_string(&keys).unwrap(),
    )
    .unwrap();
    let (cs, connections) = silent_control_service().await;
    cfg.collector.control_service = Some(format!("http://{cs}"));
    let r = kit::start(cfg, Stores::default()).await;
    let auth = format!("Bearer {TOKEN}");
    for f in chain::topology_files() {
        let headers = [("Authorization", auth.as_str())];
        let (st, _) = http(
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
    let started = Instant::now();
    for i in 0..REPORTS / PER_BATCH as u64 {
        let body = chain.batch(PER_BATCH, i).encode_to_vec();
        let (st, _) = http(r.http_addr, "POST", "/api/v1/reports", &[], &body).await;
        assert_eq!(st, 202);
    }
    // Each report waiting out its own fetch would take REPORTS x the 3 s client timeout.
    kit::settle(&r, REPORTS, 800).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "verdicts took {took:?}");
    let c = &r.shared.counters;
    assert_eq!(c.rejected(RejectReason::NoHopKey), REPORTS);
    assert_eq!(c.key_fetches.load(Relaxed), 1, "one fetch for B's key");
    assert_eq!(c.key_fetch_failures.load(Relaxed), 1);
    assert!(
        connections.load(Relaxed) <= 1,
        "{connections:?} connections"
    );

    // Later reports needing B's key are refused from the remembered failure, at once.
    let body = chain.batch(PER_BATCH, 99).encode_to_vec();
    let (st, _) = http(r.http_addr, "POST", "/api/v1/reports", &[], &body).await;
    assert_eq!(st, 202);
    kit::settle(&r, REPORTS + PER_BATCH as u64, 100).await;
    assert_eq!(c.key_fetches.load(Relaxed), 1);
    assert!(c.key_misses_remembered.load(Relaxed) >= 1);
    let (st, metrics) = http(r.http_addr, "GET", "/metrics", &[], b"").await;
    assert_eq!(st, 200);
    let metrics = String::from_utf8(metrics).unwrap();
    assert!(
        metrics.contains("idint_collector_key_fetch_failures_total 1"),
        "{metrics}"
    );
    assert!(metrics.contains("idint_collector_reports_waiting_for_keys 0"));
    r.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
