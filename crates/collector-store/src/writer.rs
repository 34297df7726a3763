//! [`BufferedWriter`]: takes samples without waiting, writes them in batches with a bounded
//! delay, retries transient failures with exponential backoff, and pushes back once its
//! bounded buffer is full. Every accepted sample is either written or still counted as
//! pending: nothing is dropped unseen.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::drain::{Task, wait_drained};
use crate::ts::{Line, Sample, StoreError, TimeSeriesStore};

/// Limits of a [`BufferedWriter`].
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Samples held at most (queued plus in flight); beyond this, writes are refused.
    pub capacity: usize,
    /// Samples per request at most.
    pub batch: usize,
    /// Longest a sample waits for its batch to fill.
    pub max_delay: Duration,
    /// First retry delay; doubles per failure up to `backoff_max`.
    pub backoff_min: Duration,
    /// Longest retry delay.
    pub backoff_max: Duration,
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            capacity: 1_000_000,
            batch: 10_000,
            max_delay: Duration::from_millis(100),
            backoff_min: Duration::from_millis(50),
            backoff_max: Duration::from_secs(5),
        }
    }
}

/// Why samples were not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The buffer is full (the store is down or slower than the input): try again later.
    #[error("time-series buffer full ({pending} samples pending, capacity {capacity})")]
    Full {
        /// Samples held.
        pending: usize,
        /// The capacity.
        capacity: usize,
    },
    /// A sample the store can never take (bad name, non-finite value).
    #[error("invalid sample: {0}")]
    Invalid(String),
    /// The writer was closed.
    #[error("time-series writer closed")]
    Closed,
}

/// Counters of a [`BufferedWriter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Samples accepted.
    pub accepted: u64,
    /// Samples written to the store.
    pub written: u64,
    /// Samples refused because the buffer was full.
    pub refused_full: u64,
    /// Samples refused as invalid.
    pub refused_invalid: u64,
    /// Failed write attempts that were retried.
    pub retries: u64,
    /// Requests that succeeded.
    pub requests: u64,
    /// Accepted samples not yet written (queued or in flight).
    pub pending: u64,
}

struct Inner<L> {
    cfg: WriterConfig,
    queue: Mutex<VecDeque<L>>,
    in_flight: AtomicU64,
    wake: Notify,
    drained: Notify,
    closed: AtomicBool,
    accepted: AtomicU64,
    written: AtomicU64,
    refused_full: AtomicU64,
    refused_invalid: AtomicU64,
    retries: AtomicU64,
    requests: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl<L> Inner<L> {
    fn pending(&self) -> u64 {
        let q = self.queue.lock().map(|q| q.len()).unwrap_or(0) as u64;
        q + self.in_flight.load(Relaxed)
    }
}

/// A batching, retrying writer in front of a [`TimeSeriesStore`] (runs a tokio task), for
/// [`Sample`]s or any other [`Line`] type.
pub struct BufferedWriter<L: Line = Sample> {
    inner: Arc<Inner<L>>,
    task: Task,
}

impl<L: Line> std::fmt::Debug for BufferedWriter<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferedWriter")
            .field("stats", &self.stats())
            .finish()
    }
}

impl<L: Line> BufferedWriter<L> {
    /// Starts the writer task on the current tokio runtime.
    pub fn spawn<S: TimeSeriesStore>(store: S, cfg: WriterConfig) -> Self {
        let inner = Arc::new(Inner {
            queue: Mutex::new(VecDeque::with_capacity(cfg.batch.min(cfg.capacity))),
            cfg,
            in_flight: AtomicU64::new(0),
            wake: Notify::new(),
            drained: Notify::new(),
            closed: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            written: AtomicU64::new(0),
            refused_full: AtomicU64::new(0),
            refused_invalid: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            last_error: Mutex::new(None),
        });
        let task = tokio::spawn(run(store, inner.clone()));
        BufferedWriter {
            inner,
            task: Task::new(task),
        }
    }

    /// Takes `samples` if they all fit in the buffer (all or none); never waits.
    pub fn try_write(&self, samples: &[L]) -> Result<(), Refused> {
        self.take(samples, L::clone)
    }

    /// [`Self::try_write`] for items that convert into `L` by copy, such as a caller's
    /// foreign point type wrapped in a newtype that implements [`Line`] (no allocation).
    pub fn try_write_as<T: Copy + Into<L>>(&self, items: &[T]) -> Result<(), Refused> {
        self.take(items, |t| (*t).into())
    }

    /// Checks and queues `samples` as `L`s (all or none).
    fn take<T>(&self, samples: &[T], to_line: impl Fn(&T) -> L) -> Result<(), Refused> {
        let i = &self.inner;
        if i.closed.load(Relaxed) {
            return Err(Refused::Closed);
        }
        if let Some(e) = samples.iter().find_map(|s| to_line(s).check().err()) {
            i.refused_invalid.fetch_add(samples.len() as u64, Relaxed);
            // The check's own words (`Rejected` would otherwise read as the store's answer).
            let msg = match e {
                StoreError::Rejected(m) => m,
                e => e.to_string(),
            };
            return Err(Refused::Invalid(msg));
        }
        {
            let Ok(mut q) = i.queue.lock() else {
                return Err(Refused::Closed);
            };
            let held = q.len() + i.in_flight.load(Relaxed) as usize;
            if held + samples.len() > i.cfg.capacity {
                i.refused_full.fetch_add(samples.len() as u64, Relaxed);
                return Err(Refused::Full {
                    pending: held,
                    capacity: i.cfg.capacity,
                });
            }
            q.extend(samples.iter().map(&to_line));
        }
        i.accepted.fetch_add(samples.len() as u64, Relaxed);
        i.wake.notify_one();
        Ok(())
    }

    /// Takes `samples`, waiting (up to `timeout`) while the buffer is full.
    pub async fn write(&self, samples: &[L], timeout: Duration) -> Result<(), Refused> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let drained = self.inner.drained.notified();
            match self.try_write(samples) {
                Err(Refused::Full { .. }) if tokio::time::Instant::now() < deadline => {
                    let _ = tokio::time::timeout_at(deadline, drained).await;
                }
                r => return r,
            }
        }
    }

    /// Counters now.
    pub fn stats(&self) -> WriterStats {
        let i = &self.inner;
        WriterStats {
            accepted: i.accepted.load(Relaxed),
            written: i.written.load(Relaxed),
            refused_full: i.refused_full.load(Relaxed),
            refused_invalid: i.refused_invalid.load(Relaxed),
            retries: i.retries.load(Relaxed),
            requests: i.requests.load(Relaxed),
            pending: i.pending(),
        }
    }

    /// The last write error, if the latest attempt failed.
    pub fn last_error(&self) -> Option<String> {
        self.inner.last_error.lock().ok().and_then(|e| e.clone())
    }

    /// Waits (up to `timeout`) until everything accepted so far is written; returns the
    /// samples still pending (0 on success).
    pub async fn flush(&self, timeout: Duration) -> u64 {
        let i = &self.inner;
        wait_drained(&i.wake, &i.drained, || i.pending(), timeout).await
    }

    /// Refuses new samples, writes what is pending (up to `timeout`) and stops the task;
    /// returns the samples that could not be written (also logged).
    pub async fn close(&self, timeout: Duration) -> u64 {
        self.inner.closed.store(true, Relaxed);
        let left = self.flush(timeout).await;
        self.task.stop().await;
        if left > 0 {
            tracing::error!(
                pending = left,
                "time-series writer closed with samples not written"
            );
        }
        left
    }
}

async fn run<S: TimeSeriesStore, L: Line>(store: S, i: Arc<Inner<L>>) {
    let mut batch: Vec<L> = Vec::with_capacity(i.cfg.batch);
    loop {
        // Wait for samples; then give the batch up to max_delay to fill.
        let queued = i.queue.lock().map(|q| q.len()).unwrap_or(0);
        if queued == 0 {
            i.drained.notify_waiters();
            i.wake.notified().await;
            continue;
        }
        if queued < i.cfg.batch && !i.closed.load(Relaxed) {
            let _ = tokio::time::timeout(i.cfg.max_delay, async {
                loop {
                    i.wake.notified().await;
                    if i.queue.lock().map(|q| q.len()).unwrap_or(0) >= i.cfg.batch
                        || i.closed.load(Relaxed)
                    {
                        break;
                    }
                }
            })
            .await;
        }
        batch.clear();
        if let Ok(mut q) = i.queue.lock() {
            let n = q.len().min(i.cfg.batch);
            batch.extend(q.drain(..n));
            i.in_flight.store(n as u64, Relaxed);
        }
        let mut delay = i.cfg.backoff_min;
        loop {
            match store.write(&batch).await {
                Ok(()) => {
                    i.written.fetch_add(batch.len() as u64, Relaxed);
                    i.requests.fetch_add(1, Relaxed);
                    i.in_flight.store(0, Relaxed);
                    if let Ok(mut e) = i.last_error.lock() {
                        *e = None;
                    }
                    break;
                }
                Err(e) => {
                    // Samples were validated on the way in, so even a refusal is most likely
                    // the store's state (e.g. still starting): keep them and retry.
                    i.retries.fetch_add(1, Relaxed);
                    log_failure(&i, &e);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(i.cfg.backoff_max);
                }
            }
        }
        i.drained.notify_waiters();
    }
}

fn log_failure<L>(i: &Inner<L>, e: &StoreError) {
    let msg = e.to_string();
    if let Ok(mut last) = i.last_error.lock() {
        if last.as_deref() != Some(msg.as_str()) {
            tracing::warn!(error = %msg, "time-series write failed; retrying");
        }
        *last = Some(msg);
    }
}
