//! The tokio service: UDP and HTTP ingest into bounded queues, pipeline worker threads (one
//! per configured worker; reports go to the worker of their source), the REST API, and graceful shutdown that processes every queued batch and flushes the
//! stores before returning.
//!
//! Backpressure: when the queue is full, HTTP ingest answers 503 with a JSON message and UDP
//! datagrams are dropped and counted (`idint_collector_udp_queue_full_total`); a batch taken
//! into the queue is always processed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use drkey::provider::{Level1Provider, LocalProvider};
use idint_wire::{HostAddr, IsdAsn};
use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::{mpsc, watch};
use tracing::{error, info, warn};

use crate::config::Config;
use collector_core::counters::{Counters, Transport};
use collector_core::keys::{CollectorProvider, ImportedKeys, KeyResolver};
use collector_core::pipeline::{Format, Pipeline, ReplayConfig, Shared, decode_batch};
use collector_core::remote_keys::{RemoteKeys, RemoteKeysConfig};
use collector_core::replay::Share;
use collector_core::topology::PathDescription;

pub use crate::state::{AppState, DispatchError, Dispatcher, Job, Stores, now_ns};

/// A running collector.
pub struct Running {
    /// HTTP address bound.
    pub http_addr: SocketAddr,
    /// UDP address bound, if UDP ingest is on.
    pub udp_addr: Option<SocketAddr>,
    /// Pipeline state (for tests and embedding).
    pub shared: Shared,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    queue: Arc<Dispatcher>,
    workers: Vec<std::thread::JoinHandle<()>>,
}

/// Why the service could not start.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

fn err(e: impl std::fmt::Display) -> StartError {
    StartError(e.to_string())
}

/// How long one key fetch from the control service may take.
const CONTROL_SERVICE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);
/// How long an idle worker with reports waiting for keys sleeps between retries.
const WAITING_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// The verifier identity and keys: (ISD-AS, host, provider, imported key store).
pub type KeyMaterial = (IsdAsn, HostAddr, Arc<dyn Level1Provider>, Arc<ImportedKeys>);

/// Builds the key provider and the imported key store from the configuration.
pub fn key_material(cfg: &Config, counters: Arc<Counters>) -> Result<KeyMaterial, StartError> {
    let ia: IsdAsn = cfg
        .collector
        .isd_as
        .parse()
        .map_err(|_| err("collector.isd_as"))?;
    let host = HostAddr::from(cfg.collector.host);
    let local = match &cfg.collector.master_key {
        Some(p) => {
            Some(LocalProvider::from_key_file(ia, p, cfg.collector.epoch_secs).map_err(err)?)
        }
        None => None,
    };
    let imported = Arc::new(ImportedKeys::for_verifier(ia));
    if let Some(p) = &cfg.collector.level1_keys {
        let text = std::fs::read_to_string(p).map_err(|e| err(format!("{}: {e}", p.display())))?;
        imported.import_json(&text).map_err(err)?;
    }
    let extra: Option<Arc<dyn Level1Provider>> = match &cfg.collector.control_service {
        Some(url) => {
            // The fetcher thread blocks on this runtime; pipeline workers never wait for it.
            let handle = tokio::runtime::Handle::try_current()
                .map_err(|_| err("control service client needs a tokio runtime"))?;
            let client = drkey_grpc::ControlServiceProvider::with_handle(
                url,
                CONTROL_SERVICE_TIMEOUT,
                handle,
            )
            .map_err(|e| err(format!("control service {url}: {e}")))?;
            let limits = RemoteKeysConfig {
                fetches_per_s: cfg.collector.control_service_fetches_per_s,
                miss_ttl_s: cfg.collector.control_service_miss_ttl_s,
                ..RemoteKeysConfig::default()
            };
            let remote = RemoteKeys::spawn(Arc::new(client), limits, counters).map_err(err)?;
            Some(Arc::new(remote))
        }
        None => None,
    };
    let provider: Arc<dyn Level1Provider> =
        Arc::new(CollectorProvider::new(ia, local, imported.clone(), extra));
    Ok((ia, host, provider, imported))
}

/// Starts the collector: listeners bound, worker running, topology files imported.
pub async fn start(cfg: Config, stores: Stores) -> Result<Running, StartError> {
    let mut shared = Shared::new(cfg.detection.clone(), cfg.api.quarantine);
    let (ia, host, provider, imported) = key_material(&cfg, shared.counters.clone())?;
    shared.sink = stores.points.clone();
    if stores.wait_ms > 0 {
        shared.sink_wait_ms = stores.wait_ms;
    }
    shared.topology.restore(stores.restore.iter());
    if let Some(t) = &stores.topology {
        shared.topology.set_sink(t.clone());
    }
    for f in &cfg.topology.files {
        let text = std::fs::read_to_string(f).map_err(|e| err(format!("{}: {e}", f.display())))?;
        shared
            .topology
            .import_topology_json(&text)
            .map_err(|e| err(format!("{}: {e}", f.display())))?;
    }
    for f in &cfg.topology.paths {
        let text = std::fs::read_to_string(f).map_err(|e| err(format!("{}: {e}", f.display())))?;
        let ds: Vec<PathDescription> = crate::api::parse_path_descriptions(text.as_bytes())
            .map_err(|e| err(format!("{}: {e}", f.display())))?;
        shared
            .topology
            .import_paths(&ds)
            .map_err(|e| err(format!("{}: {e}", f.display())))?;
    }

    let n = cfg.ingest.workers;
    let ready = Arc::new(AtomicUsize::new(0));
    let started_ns = now_ns();
    let replay = ReplayConfig {
        window_ns: cfg.replay.window_s.saturating_mul(1_000_000_000),
        skew_ns: cfg.replay.skew_ms.saturating_mul(1_000_000),
        capacity: cfg.replay.capacity,
        per_source: cfg.replay.source_quota(),
        share: Share {
            index: cfg.cluster.index,
            instances: cfg.cluster.instances,
        },
        // The replay memory starts empty now: a report stamped earlier may have been accepted
        // by the process before a restart.
        memory_since_ns: started_ns,
    };
    let mut shards = Vec::with_capacity(n);
    let mut workers = Vec::with_capacity(n);
    let queued = Arc::new(AtomicUsize::new(0));
    for i in 0..n {
        let (tx, rx) = mpsc::channel::<Job>(cfg.ingest.queue_batches.div_ceil(n));
        shards.push(tx);
        let keys = KeyResolver::new(ia, host, provider.clone()).watch(imported.clone());
        let pipeline = Pipeline::new(shared.clone(), keys, replay);
        let ready = ready.clone();
        let chunk = cfg.ingest.worker_chunk;
        let queued = queued.clone();
        workers.push(
            std::thread::Builder::new()
                .name(format!("collector-pipeline-{i}"))
                .spawn(move || worker(pipeline, rx, chunk, ready, queued))
                .map_err(err)?,
        );
    }
    let tx = Arc::new(Dispatcher::with_budget(
        shards,
        queued,
        cfg.ingest.queue_reports,
    ));
    // Ready once the workers run.
    for _ in 0..200 {
        if ready.load(Relaxed) == n {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let (stop, stop_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    if let Some(db) = stores.topology_db.clone() {
        let follow = crate::storage::follow_topology(db, shared.topology.clone(), stop_rx.clone());
        tasks.push(tokio::spawn(follow));
    }
    let udp_addr = match cfg.ingest.udp_listen {
        Some(a) => {
            let sock = udp_socket(a, cfg.ingest.udp_recv_buffer)
                .map_err(|e| err(format!("UDP {a}: {e}")))?;
            let addr = sock.local_addr().map_err(err)?;
            tasks.push(tokio::spawn(udp_loop(
                sock,
                tx.clone(),
                shared.clone(),
                (cfg.ingest.max_batch_bytes, cfg.ingest.max_batch_reports),
                stop_rx.clone(),
            )));
            info!(%addr, "UDP ingest listening");
            Some(addr)
        }
        None => None,
    };
    let listener = TcpListener::bind(cfg.api.listen)
        .await
        .map_err(|e| err(format!("HTTP {}: {e}", cfg.api.listen)))?;
    let http_addr = listener.local_addr().map_err(err)?;
    let state = AppState {
        shared: shared.clone(),
        imported,
        queue: tx.clone(),
        max_batch_bytes: cfg.ingest.max_batch_bytes,
        max_batch_reports: cfg.ingest.max_batch_reports,
        admin_token: cfg.api.admin_token.as_deref().map(Arc::from),
        ready,
        workers: n,
        local_ia: ia,
        history: stores.history.clone(),
        started_ns,
    };
    let app = crate::api::router(state);
    let mut srx = stop_rx.clone();
    tasks.push(tokio::spawn(async move {
        let shutdown = async move {
            let _ = srx.wait_for(|s| *s).await;
        };
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            error!(error = %e, "HTTP server failed");
        }
    }));
    info!(%http_addr, ia = %ia, "collector started");
    Ok(Running {
        http_addr,
        udp_addr,
        shared,
        stop,
        tasks,
        queue: tx,
        workers,
    })
}

impl Running {
    /// Stops ingest, processes every queued batch, flushes the stores, and returns.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        // Every batch accepted so far is ahead of these markers.
        self.queue.stop_all().await;
        for w in self.workers.drain(..) {
            let _ = tokio::task::spawn_blocking(move || w.join()).await;
        }
        if let Some(s) = &self.shared.sink {
            let s = s.clone();
            let _ = tokio::task::spawn_blocking(move || s.flush()).await;
        }
        if let Some(t) = self.shared.topology.sink() {
            let _ = tokio::task::spawn_blocking(move || t.flush()).await;
        }
        // What this process accepted and wrote, for whoever checks that a restart lost nothing.
        let c = &self.shared.counters;
        info!(
            accepted = c.accepted.load(std::sync::atomic::Ordering::Relaxed),
            points_written = c.points_written.load(std::sync::atomic::Ordering::Relaxed),
            "collector stopped"
        );
    }
}

/// A non-blocking UDP socket with the receive buffer asked for (as far as the kernel allows).
fn udp_socket(a: SocketAddr, recv_buffer: usize) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(a), Type::DGRAM, Some(Protocol::UDP))?;
    if let Err(e) = s.set_recv_buffer_size(recv_buffer) {
        warn!(error = %e, "UDP receive buffer size");
    }
    s.set_nonblocking(true)?;
    s.bind(&a.into())?;
    info!(
        asked = recv_buffer,
        got = s.recv_buffer_size().unwrap_or(0),
        "UDP receive buffer"
    );
    UdpSocket::from_std(s.into())
}

async fn udp_loop(
    sock: UdpSocket,
    tx: Arc<Dispatcher>,
    shared: Shared,
    (max, max_reports): (usize, usize),
    mut stop: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 65_536];
    let c = shared.counters.clone();
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            r = sock.recv_from(&mut buf) => {
                let n = match r {
                    Ok((n, _)) => n,
                    Err(e) => {
                        let total = c.udp_recv_errors.fetch_add(1, Relaxed) + 1;
                        if total.is_power_of_two() {
                            warn!(error = %e, total, "UDP receive (logged at 1, 2, 4, 8, ... errors)");
                        }
                        continue;
                    }
                };
                c.udp_datagrams.fetch_add(1, Relaxed);
                let reports = if n > max {
                    usize::MAX
                } else {
                    collector_core::wire::count_reports(&buf[..n])
                };
                if reports > max_reports {
                    c.malformed(Transport::Udp, collector_core::counters::MalformedReason::TooLarge);
                    continue;
                }
                let queued = if tx.single() {
                    tx.try_raw(buf[..n].to_vec(), reports)
                } else {
                    match decode_batch(&buf[..n], Format::Protobuf) {
                        Ok(b) => tx.try_batch(b),
                        Err((reason, _)) => {
                            c.malformed(Transport::Udp, reason);
                            continue;
                        }
                    }
                };
                if queued.is_err() {
                    c.udp_queue_full.fetch_add(1, Relaxed);
                }
            }
        }
    }
}

fn worker(
    mut p: Pipeline,
    mut rx: mpsc::Receiver<Job>,
    chunk: usize,
    ready: Arc<AtomicUsize>,
    queued: Arc<AtomicUsize>,
) {
    let _running = RunningWorker::new(ready);
    let mut jobs = Vec::with_capacity(chunk);
    'outer: loop {
        jobs.clear();
        if p.has_waiting() {
            // Reports wait for keys being fetched: poll, trying them again while idle.
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(mpsc::error::TryRecvError::Empty) => {
                    p.retry_waiting(now_ns());
                    std::thread::sleep(WAITING_POLL);
                    continue;
                }
                Err(mpsc::error::TryRecvError::Disconnected) => break,
            }
        } else {
            match rx.blocking_recv() {
                Some(j) => jobs.push(j),
                None => break,
            }
        }
        while jobs.len() < chunk {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let now = now_ns();
        for job in jobs.drain(..) {
            match job {
                Job::Raw(bytes, reports) => {
                    if let Err((reason, _)) = p.process_encoded(&bytes, now) {
                        p.shared().counters.malformed(Transport::Udp, reason);
                    }
                    queued.fetch_sub(reports, Relaxed);
                }
                Job::Decoded(b) => {
                    p.process_batch(&b, now);
                    queued.fetch_sub(b.reports.len(), Relaxed);
                }
                Job::Stop => break 'outer,
            }
        }
        p.retry_waiting(now_ns());
    }
    // Every accepted report gets its verdict before the worker ends.
    p.finish_waiting(now_ns());
}

/// A pipeline worker counted as running (in the count `/ready` compares with the number of
/// workers) from its creation until it is dropped, also when the worker unwinds from a
/// panic: a dead worker makes the service not ready instead of silently dropping its queue.
struct RunningWorker(Arc<AtomicUsize>);

impl RunningWorker {
    fn new(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Relaxed);
        RunningWorker(count)
    }
}

impl Drop for RunningWorker {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_that_panics_is_no_longer_counted_as_running() {
        let running = Arc::new(AtomicUsize::new(0));
        let count = running.clone();
        let worker = std::thread::spawn(move || {
            let _running = RunningWorker::new(count);
            panic!("a pipeline bug");
        });
        assert!(worker.join().is_err());
        assert_eq!(running.load(Relaxed), 0);
        let _alive = RunningWorker::new(running.clone());
        assert_eq!(running.load(Relaxed), 1);
    }
    use crate::state::shard_of;
    use idint_report::v1;

    fn report(host: u8) -> v1::Report {
        v1::Report {
            src_isd_as: 0x0001_ff00_0000_0001,
            src_host: Some(v1::HostAddress {
                addr_type: 0,
                raw: vec![10, 0, 0, host],
            }),
            ..Default::default()
        }
    }

    #[test]
    fn queued_reports_are_bounded_and_released_when_refused() {
        let (t0, mut r0) = mpsc::channel(8);
        let d = Dispatcher::new(vec![t0], 10);
        let batch = |n: u8| v1::ReportBatch {
            reports: (0..n).map(report).collect(),
            ..Default::default()
        };
        d.try_batch(batch(6)).unwrap();
        assert_eq!(d.try_batch(batch(5)), Err(DispatchError::Full));
        assert_eq!(d.queued_reports(), 6, "a refused batch takes no budget");
        d.try_batch(batch(4)).unwrap();
        assert_eq!(d.try_batch(batch(1)), Err(DispatchError::Full));
        assert!(matches!(r0.try_recv(), Ok(Job::Decoded(b)) if b.reports.len() == 6));
    }

    #[test]
    fn batches_split_by_source_all_or_nothing() {
        let (t0, mut r0) = mpsc::channel(1);
        let (t1, mut r1) = mpsc::channel(1);
        let d = Dispatcher::new(vec![t0, t1], usize::MAX);
        let reports: Vec<_> = (0..32).map(report).collect();
        let want: Vec<usize> = reports.iter().map(|r| shard_of(r, 2)).collect();
        assert!(want.contains(&0) && want.contains(&1), "both shards used");
        let batch = v1::ReportBatch {
            reports: reports.clone(),
            ..Default::default()
        };
        d.try_batch(batch.clone()).unwrap();
        // Both queues are full now: the next batch is refused whole.
        assert_eq!(d.try_batch(batch.clone()), Err(DispatchError::Full));
        let mut got = [Vec::new(), Vec::new()];
        for (i, rx) in [&mut r0, &mut r1].into_iter().enumerate() {
            match rx.try_recv() {
                Ok(Job::Decoded(b)) => got[i] = b.reports,
                _ => panic!("shard {i} got nothing"),
            }
            assert!(rx.try_recv().is_err(), "shard {i}: one batch only");
        }
        for (r, s) in reports.iter().zip(&want) {
            assert!(got[*s].contains(r));
        }
        assert_eq!(got[0].len() + got[1].len(), 32);
        // The same source always lands on the same shard.
        assert_eq!(shard_of(&report(7), 2), shard_of(&report(7), 2));
    }

    #[test]
    fn batches_without_reports_reach_a_worker_with_several_workers() {
        let (t0, mut r0) = mpsc::channel(4);
        let (t1, mut r1) = mpsc::channel(4);
        let d = Dispatcher::new(vec![t0, t1], 100);
        d.try_batch(v1::ReportBatch::default()).unwrap();
        let got = [r0.try_recv(), r1.try_recv()];
        let n = got
            .iter()
            .filter(|j| matches!(j, Ok(Job::Decoded(b)) if b.reports.is_empty()))
            .count();
        assert_eq!(n, 1, "an empty batch is queued once");
        assert_eq!(d.queued_reports(), 0);
    }

    #[test]
    fn raw_datagrams_take_from_the_report_budget() {
        let (t0, mut r0) = mpsc::channel(8);
        let d = Dispatcher::new(vec![t0], 10);
        d.try_raw(vec![1], 6).unwrap();
        assert_eq!(d.try_raw(vec![2], 5), Err(DispatchError::Full));
        assert_eq!(d.queued_reports(), 6, "a refused datagram takes no budget");
        d.try_raw(vec![3], 4).unwrap();
        assert!(matches!(r0.try_recv(), Ok(Job::Raw(b, 6)) if b == [1]));
    }

    fn counted(s: &Shared) -> u64 {
        use collector_core::counters::MalformedReason;
        let c = &s.counters;
        MalformedReason::ALL
            .iter()
            .map(|r| c.malformed_count(Transport::Udp, *r))
            .sum::<u64>()
            + c.udp_queue_full.load(Relaxed)
    }

    /// Runs `udp_loop` over `datagrams` and returns the jobs queued per shard.
    async fn udp_run(shards: usize, datagrams: &[Vec<u8>]) -> (Shared, usize) {
        let shared = Shared::new(collector_core::metrics::DetectionConfig::default(), 16);
        let mut rxs = Vec::new();
        let mut txs = Vec::new();
        for _ in 0..shards {
            let (t, r) = mpsc::channel(64);
            txs.push(t);
            rxs.push(r);
        }
        let d = Arc::new(Dispatcher::new(txs, 1000));
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(udp_loop(sock, d, shared.clone(), (1024, 4), stop_rx));
        let out = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        for b in datagrams {
            out.send_to(b, addr).await.unwrap();
        }
        for _ in 0..500 {
            if shared.counters.udp_datagrams.load(Relaxed) == datagrams.len() as u64 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let _ = stop.send(true);
        task.await.unwrap();
        let mut jobs = 0;
        for r in &mut rxs {
            while r.try_recv().is_ok() {
                jobs += 1;
            }
        }
        (shared, jobs)
    }

    #[tokio::test]
    async fn every_datagram_is_counted_once_whatever_the_worker_count() {
        use idint_report::Message;
        let batch = |reports: Vec<v1::Report>, exporter: bool| {
            v1::ReportBatch {
                exporter: exporter.then(|| v1::Exporter {
                    isd_as: 0x0001_ff00_0000_0001,
                    ..Default::default()
                }),
                sequence: 1,
                reports,
            }
            .encode_to_vec()
        };
        // One source: a batch is one job whatever the worker count.
        let good = batch(vec![report(1), report(1)], true);
        let datagrams = vec![
            Vec::new(),                                // empty: an empty batch
            vec![0xff; 40],                            // garbage
            good[..good.len() - 3].to_vec(),           // truncated
            vec![0; 2000],                             // oversized
            batch(vec![report(1); 5], false),          // too many reports
            batch(vec![v1::Report::default()], false), // one empty report
            batch(Vec::new(), true),                   // exporter only
            good,
        ];
        for shards in [1, 2, 3] {
            let (shared, jobs) = udp_run(shards, &datagrams).await;
            let c = &shared.counters;
            assert_eq!(c.udp_datagrams.load(Relaxed), 8, "{shards} shards");
            // A queued job is one batch for a worker (with one worker it is decoded there,
            // and counted as a batch or malformed).
            assert_eq!(
                jobs as u64 + counted(&shared),
                8,
                "{shards} shards: every datagram queued or counted once"
            );
        }
    }

    #[tokio::test]
    async fn udp_receive_errors_are_counted_and_exported() {
        let shared = Shared::new(collector_core::metrics::DetectionConfig::default(), 16);
        let (t0, _r0) = mpsc::channel(4);
        let d = Arc::new(Dispatcher::new(vec![t0], 100));
        // A connected socket whose peer is gone: the ICMP error surfaces on receive.
        let gone = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let gone_addr = gone.local_addr().unwrap();
        drop(gone);
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        sock.connect(gone_addr).await.unwrap();
        sock.send(b"x").await.unwrap();
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(udp_loop(sock, d, shared.clone(), (1024, 4), stop_rx));
        for _ in 0..500 {
            if shared.counters.udp_recv_errors.load(Relaxed) > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let _ = stop.send(true);
        task.await.unwrap();
        assert_eq!(shared.counters.udp_recv_errors.load(Relaxed), 1);
        assert_eq!(shared.counters.udp_datagrams.load(Relaxed), 0);
        let mut text = String::new();
        shared.counters.prometheus(&mut text);
        assert!(
            text.contains("idint_collector_udp_receive_errors_total 1"),
            "{text}"
        );
    }
}
