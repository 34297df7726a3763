//! What the service's parts share: the ingest queues ([`Dispatcher`]), the storage handed to
//! the service ([`Stores`]) and the state of the API handlers ([`AppState`]). The API and the
//! storage depend on this module, the service wires everything together on top.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

use collector_core::keys::ImportedKeys;
use collector_core::metrics::{HistoryStore, PointSink};
use collector_core::pipeline::Shared;
use collector_core::topology::{TopologyChange, TopologySink};
use idint_report::v1;
use idint_wire::IsdAsn;
use tokio::sync::mpsc;

/// One unit of work for the pipeline worker.
pub enum Job {
    /// A datagram, decoded by the worker, and the reports it holds (taken from the report
    /// budget until processed).
    Raw(Vec<u8>, usize),
    /// A batch decoded by the HTTP handler.
    Decoded(v1::ReportBatch),
    /// Everything before this was accepted: finish.
    Stop,
}

/// The ingest queues of the pipeline workers. With several workers every report goes to the
/// worker of its source (source AS and host), so replay suppression sees all of a source's
/// reports; a batch is queued whole or not at all. Decoded reports waiting in the queues are
/// bounded by a report budget as well as by the queues' batch slots.
pub struct Dispatcher {
    shards: Vec<mpsc::Sender<Job>>,
    /// Decoded reports queued and not yet processed.
    queued: Arc<AtomicUsize>,
    /// Most decoded reports queued at once.
    max_queued: usize,
}

/// Every queue that would take the batch is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchError {
    /// A queue is full.
    Full,
    /// The workers are gone (shutdown).
    Closed,
}

pub(crate) fn shard_of(r: &v1::Report, n: usize) -> usize {
    let mut h = r.src_isd_as.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    if let Some(host) = &r.src_host {
        for b in &host.raw {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    ((h ^ (h >> 32)) % n as u64) as usize
}

impl Dispatcher {
    /// Whether datagrams are decoded by the workers (one worker) or before dispatch.
    pub fn single(&self) -> bool {
        self.shards.len() == 1
    }

    /// Free slots over all queues.
    pub fn free(&self) -> usize {
        self.shards.iter().map(|s| s.capacity()).sum()
    }

    /// Queues an undecoded datagram holding `reports` reports (one worker only); refused
    /// (`Full`) when the queue is full or the report budget would be exceeded.
    pub fn try_raw(&self, bytes: Vec<u8>, reports: usize) -> Result<(), DispatchError> {
        self.take_budget(reports)?;
        let r = self.shards[0]
            .try_send(Job::Raw(bytes, reports))
            .map_err(send_error);
        if r.is_err() {
            self.queued.fetch_sub(reports, Relaxed);
        }
        r
    }

    /// Takes `k` reports from the budget, or refuses (`Full`) taking nothing.
    fn take_budget(&self, k: usize) -> Result<(), DispatchError> {
        let before = self.queued.fetch_add(k, Relaxed);
        if before.saturating_add(k) > self.max_queued {
            self.queued.fetch_sub(k, Relaxed);
            return Err(DispatchError::Full);
        }
        Ok(())
    }

    /// A dispatcher over these queues holding at most `max_queued` decoded reports.
    pub fn new(shards: Vec<mpsc::Sender<Job>>, max_queued: usize) -> Self {
        Dispatcher {
            shards,
            queued: Arc::new(AtomicUsize::new(0)),
            max_queued,
        }
    }

    /// Queues [`Job::Stop`] on every queue, behind everything accepted so far (waits for a
    /// free slot).
    pub(crate) async fn stop_all(&self) {
        for s in &self.shards {
            let _ = s.send(Job::Stop).await;
        }
    }

    /// A dispatcher over these queues whose report budget `queued` is shared with the workers
    /// (they release what they processed).
    pub(crate) fn with_budget(
        shards: Vec<mpsc::Sender<Job>>,
        queued: Arc<AtomicUsize>,
        max_queued: usize,
    ) -> Self {
        Dispatcher {
            shards,
            queued,
            max_queued,
        }
    }

    /// Decoded reports queued and not yet processed.
    pub fn queued_reports(&self) -> usize {
        self.queued.load(Relaxed)
    }

    /// Queues a decoded batch, split by source over the workers; all or nothing. Refused
    /// (`Full`) when a queue is full or the report budget would be exceeded.
    pub fn try_batch(&self, batch: v1::ReportBatch) -> Result<(), DispatchError> {
        let k = batch.reports.len();
        self.take_budget(k)?;
        let r = self.send_batch(batch);
        if r.is_err() {
            self.queued.fetch_sub(k, Relaxed);
        }
        r
    }

    fn send_batch(&self, batch: v1::ReportBatch) -> Result<(), DispatchError> {
        let n = self.shards.len();
        // A batch without reports still goes to a worker, which counts it.
        if n == 1 || batch.reports.is_empty() {
            return self.shards[0]
                .try_send(Job::Decoded(batch))
                .map_err(send_error);
        }
        let mut parts: Vec<Vec<v1::Report>> = (0..n).map(|_| Vec::new()).collect();
        for r in batch.reports {
            parts[shard_of(&r, n)].push(r);
        }
        // Reserve every slot first: a refused batch leaves nothing behind.
        let mut permits = Vec::with_capacity(n);
        for (i, p) in parts.iter().enumerate() {
            if !p.is_empty() {
                permits.push((i, self.shards[i].try_reserve().map_err(send_error)?));
            }
        }
        for (i, permit) in permits {
            permit.send(Job::Decoded(v1::ReportBatch {
                exporter: batch.exporter.clone(),
                sequence: batch.sequence,
                reports: std::mem::take(&mut parts[i]),
            }));
        }
        Ok(())
    }
}

fn send_error<T>(e: mpsc::error::TrySendError<T>) -> DispatchError {
    match e {
        mpsc::error::TrySendError::Full(_) => DispatchError::Full,
        mpsc::error::TrySendError::Closed(_) => DispatchError::Closed,
    }
}

/// Unix time now, ns.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Storage behind the collector (the `collector-store` crate provides PostgreSQL and
/// time-series implementations).
#[derive(Clone, Default)]
pub struct Stores {
    /// Topology changes, written behind.
    pub topology: Option<Arc<dyn TopologySink>>,
    /// Time-series points.
    pub points: Option<Arc<dyn PointSink>>,
    /// History queries.
    pub history: Option<Arc<dyn HistoryStore>>,
    /// The stored topology, as changes (applied before the configured imports).
    pub restore: Vec<TopologyChange>,
    /// How long a worker waits for a full time-series buffer, ms (0: the default 60 s).
    pub wait_ms: u64,
    /// The topology database, to follow changes other instances make.
    pub topology_db: Option<collector_store::topology::TopologyDb>,
}

/// What the API handlers share.
#[derive(Clone)]
pub struct AppState {
    /// Pipeline state.
    pub shared: Shared,
    /// Imported level-1 keys (admin API adds to them).
    pub imported: Arc<ImportedKeys>,
    /// The ingest queues.
    pub queue: Arc<Dispatcher>,
    /// Largest accepted batch, bytes.
    pub max_batch_bytes: usize,
    /// Most reports in one batch.
    pub max_batch_reports: usize,
    /// Admin bearer token.
    pub admin_token: Option<Arc<str>>,
    /// Workers running; ready when all are.
    pub ready: Arc<AtomicUsize>,
    /// Workers started.
    pub workers: usize,
    /// The collector's ISD-AS.
    pub local_ia: IsdAsn,
    /// The time-series store for history queries, if any.
    pub history: Option<Arc<dyn HistoryStore>>,
    /// When this process started (Unix ns): the values kept in memory begin here.
    pub started_ns: u64,
}
