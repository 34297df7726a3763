//! [`BufferedWriter`]: takes samples without waiting, writes them in batches with a bounded
//! delay, retries transient failures with exponential backoff, spills to a bounded on-disk
//! [`Spool`] when its memory buffer is full, and pushes back once both are full. Samples the
//! store refuses outright (4xx) are not retried: they are counted and the last few kept.
//! Every accepted sample is written, still pending (in memory or on disk), or counted as
//! failed: nothing is dropped unseen.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::drain::{Task, wait_drained};
use crate::spool::{Spool, SpoolConfig};
use crate::ts::{Line, Sample, StoreError, TimeSeriesStore};

/// Lines the store refused outright that a writer keeps for operators.
pub const REJECTED_LINES_KEPT: usize = 16;

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
    /// The on-disk buffer used when the memory buffer is full (none: refuse instead).
    pub spool: Option<SpoolConfig>,
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            capacity: 1_000_000,
            batch: 10_000,
            max_delay: Duration::from_millis(100),
            backoff_min: Duration::from_millis(50),
            backoff_max: Duration::from_secs(5),
            spool: None,
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
    /// Accepted samples not yet written, in memory (queued or in flight).
    pub pending: u64,
    /// Accepted samples not yet written, on disk.
    pub spooled: u64,
    /// Bytes on disk.
    pub spooled_bytes: u64,
    /// Samples taken to disk so far (the memory buffer was full).
    pub spilled: u64,
    /// Samples the store refused outright (not retried; the last few are kept).
    pub failed: u64,
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
    spilled: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// The batch being written (kept here so that closing can spill it).
    flight: Mutex<Vec<L>>,
    spool: Option<Mutex<Spool>>,
    /// The last lines the store refused outright, with its answer.
    rejected: Mutex<VecDeque<(String, String)>>,
}

impl<L> Inner<L> {
    fn pending(&self) -> u64 {
        let q = self.queue.lock().map(|q| q.len()).unwrap_or(0) as u64;
        q + self.in_flight.load(Relaxed)
    }

    /// (lines, bytes) on disk.
    fn spooled(&self) -> (u64, u64) {
        self.spool
            .as_ref()
            .and_then(|s| s.lock().ok().map(|s| (s.lines(), s.bytes())))
            .unwrap_or((0, 0))
    }
}

/// A line read back from the spool, already rendered.
#[derive(Debug, Clone)]
struct SpooledLine(String);

impl Line for SpooledLine {
    fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn write_line(&self, out: &mut String) {
        out.push_str(&self.0);
        out.push('\n');
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
    /// Starts the writer task on the current tokio runtime; an error if the configured spool
    /// cannot be opened.
    pub fn spawn<S: TimeSeriesStore>(store: S, cfg: WriterConfig) -> std::io::Result<Self> {
        let spool = cfg
            .spool
            .clone()
            .map(Spool::open)
            .transpose()?
            .map(Mutex::new);
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
            spilled: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            last_error: Mutex::new(None),
            flight: Mutex::new(Vec::new()),
            spool,
            rejected: Mutex::new(VecDeque::new()),
        });
        let task = tokio::spawn(run(store, inner.clone()));
        Ok(BufferedWriter {
            inner,
            task: Task::new(task),
        })
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
                drop(q);
                if self.spill(samples.iter().map(&to_line)) {
                    i.accepted.fetch_add(samples.len() as u64, Relaxed);
                    i.wake.notify_one();
                    return Ok(());
                }
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

    /// Writes `lines` to the spool (all or none); false if there is no spool or no room.
    fn spill(&self, lines: impl Iterator<Item = L>) -> bool {
        let Some(spool) = &self.inner.spool else {
            return false;
        };
        let mut text = String::new();
        let mut n = 0;
        for l in lines {
            l.write_line(&mut text);
            n += 1;
        }
        let Ok(mut spool) = spool.lock() else {
            return false;
        };
        match spool.append(&text, n) {
            Ok(true) => {
                self.inner.spilled.fetch_add(n, Relaxed);
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::error!(error = %e, "time-series spool write failed");
                false
            }
        }
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
            spooled: i.spooled().0,
            spooled_bytes: i.spooled().1,
            spilled: i.spilled.load(Relaxed),
            failed: i.failed.load(Relaxed),
        }
    }

    /// The last lines the store refused outright (newest last), each with its answer.
    pub fn rejected_lines(&self) -> Vec<(String, String)> {
        self.inner
            .rejected
            .lock()
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The last write error, if the latest attempt failed.
    pub fn last_error(&self) -> Option<String> {
        self.inner.last_error.lock().ok().and_then(|e| e.clone())
    }

    /// Waits (up to `timeout`) until everything accepted so far is written, from memory and
    /// from disk; returns the samples still pending (0 on success).
    pub async fn flush(&self, timeout: Duration) -> u64 {
        let i = &self.inner;
        wait_drained(&i.wake, &i.drained, || i.pending() + i.spooled().0, timeout).await
    }

    /// Refuses new samples, writes what is pending (up to `timeout`) and stops the task; what
    /// is still in memory then goes to the spool (the next process writes it). Returns the
    /// samples neither written nor spooled (also logged).
    pub async fn close(&self, timeout: Duration) -> u64 {
        let i = &self.inner;
        i.closed.store(true, Relaxed);
        wait_drained(&i.wake, &i.drained, || i.pending(), timeout).await;
        self.task.stop().await;
        let mut left: Vec<L> = i
            .flight
            .lock()
            .map(|mut f| f.split_off(0))
            .unwrap_or_default();
        if let Ok(mut q) = i.queue.lock() {
            left.extend(q.drain(..));
        }
        i.in_flight.store(0, Relaxed);
        if left.is_empty() || self.spill(left.iter().cloned()) {
            return 0;
        }
        tracing::error!(
            pending = left.len(),
            "time-series writer closed with samples neither written nor spooled"
        );
        left.len() as u64
    }
}

async fn run<S: TimeSeriesStore, L: Line>(store: S, i: Arc<Inner<L>>) {
    let mut batch: Vec<L> = Vec::with_capacity(i.cfg.batch);
    loop {
        let queued = i.queue.lock().map(|q| q.len()).unwrap_or(0);
        let spooled = i.spooled().0 > 0;
        if queued == 0 && !spooled {
            i.drained.notify_waiters();
            i.wake.notified().await;
            continue;
        }
        if queued > 0 {
            // Give the batch up to max_delay to fill.
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
            if let (Ok(mut q), Ok(mut f)) = (i.queue.lock(), i.flight.lock()) {
                let n = q.len().min(i.cfg.batch);
                f.clear();
                f.extend(q.drain(..n));
                i.in_flight.store(n as u64, Relaxed);
                batch.clear();
                batch.extend(f.iter().cloned());
            }
            write_all(&store, &i, &batch).await;
            if let Ok(mut f) = i.flight.lock() {
                f.clear();
            }
            i.in_flight.store(0, Relaxed);
            i.drained.notify_waiters();
        }
        if spooled {
            send_oldest_segment(&store, &i).await;
            i.drained.notify_waiters();
        }
    }
}

/// Writes the spool's oldest segment (in batches) and deletes it.
async fn send_oldest_segment<S: TimeSeriesStore, L: Line>(store: &S, i: &Inner<L>) {
    let Some(spool) = &i.spool else {
        return;
    };
    let oldest = match spool.lock() {
        Ok(mut s) => s.oldest(),
        Err(_) => return,
    };
    let (id, text) = match oldest {
        Ok(Some(segment)) => segment,
        Ok(None) => return,
        Err(e) => {
            tracing::error!(error = %e, "time-series spool read failed");
            tokio::time::sleep(i.cfg.backoff_max).await;
            return;
        }
    };
    let lines: Vec<SpooledLine> = text.lines().map(|l| SpooledLine(l.to_owned())).collect();
    for chunk in lines.chunks(i.cfg.batch.max(1)) {
        write_all(store, i, chunk).await;
    }
    let removed = match spool.lock() {
        Ok(mut s) => s.remove(id),
        Err(_) => return,
    };
    if let Err(e) = removed {
        tracing::error!(error = %e, "time-series spool segment not removed");
    }
}

/// Writes `items`: transient failures are retried with backoff until the store takes them;
/// a batch the store refuses outright is halved until the lines it refuses are found, which
/// are counted as failed and kept, so that one bad line never blocks the others.
async fn write_all<S: TimeSeriesStore, L: Line, T: Line>(store: &S, i: &Inner<L>, items: &[T]) {
    // Ranges of `items` still to write, the next one last.
    let mut todo = Vec::with_capacity(1);
    todo.push(0..items.len());
    while let Some(range) = todo.pop() {
        let mut delay = i.cfg.backoff_min;
        loop {
            match store.write(&items[range.clone()]).await {
                Ok(()) => {
                    i.written.fetch_add(range.len() as u64, Relaxed);
                    i.requests.fetch_add(1, Relaxed);
                    if let Ok(mut e) = i.last_error.lock() {
                        *e = None;
                    }
                    break;
                }
                Err(e) if is_permanent(&e) => {
                    log_failure(i, &e);
                    if range.len() == 1 {
                        i.failed.fetch_add(1, Relaxed);
                        let mut line = String::new();
                        items[range.start].write_line(&mut line);
                        if let Ok(mut r) = i.rejected.lock() {
                            if r.len() >= REJECTED_LINES_KEPT {
                                r.pop_front();
                            }
                            r.push_back((line.trim_end().to_owned(), e.to_string()));
                        }
                    } else {
                        let mid = range.start + range.len() / 2;
                        todo.push(mid..range.end);
                        todo.push(range.start..mid);
                    }
                    break;
                }
                Err(e) => {
                    i.retries.fetch_add(1, Relaxed);
                    log_failure(i, &e);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(i.cfg.backoff_max);
                }
            }
        }
    }
}

/// Whether the store refused the request itself (4xx): retrying it cannot help.
fn is_permanent(e: &StoreError) -> bool {
    matches!(e, StoreError::Rejected(_) | StoreError::InvalidName(_))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ts::{RangeQuery, Series};
    use std::borrow::Cow;

    /// A store in this process that refuses (4xx) any request holding a line with `poison`
    /// in it, and keeps the lines it took.
    #[derive(Clone, Default)]
    struct Picky {
        taken: Arc<Mutex<Vec<String>>>,
        requests: Arc<AtomicU64>,
    }

    impl TimeSeriesStore for Picky {
        async fn write<L: Line>(&self, items: &[L]) -> Result<(), StoreError> {
            self.requests.fetch_add(1, Relaxed);
            let mut text = String::new();
            for i in items {
                i.write_line(&mut text);
            }
            if text.contains("poison") {
                return Err(StoreError::Rejected("400: unparsable line".into()));
            }
            self.taken
                .lock()
                .unwrap()
                .extend(text.lines().map(str::to_owned));
            Ok(())
        }

        async fn query_range(&self, _: &RangeQuery) -> Result<Vec<Series>, StoreError> {
            Ok(Vec::new())
        }

        async fn health(&self) -> Result<(), StoreError> {
            Ok(())
        }
    }

    fn sample(tag: &str, k: u64) -> Sample {
        Sample {
            measurement: Cow::Borrowed("m"),
            tags: vec![(Cow::Borrowed("t"), tag.to_owned())],
            field: Cow::Borrowed("v"),
            value: k as f64,
            time_ns: k,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_line_the_store_refuses_is_isolated_counted_and_never_blocks_the_others() {
        let store = Picky::default();
        let w = BufferedWriter::spawn(store.clone(), WriterConfig::default()).unwrap();
        let mut batch: Vec<Sample> = (0..100).map(|k| sample("ok", k)).collect();
        batch[37] = sample("poison", 37);
        w.try_write(&batch).unwrap();
        assert_eq!(w.flush(Duration::from_secs(5)).await, 0, "{:?}", w.stats());
        let st = w.stats();
        assert_eq!((st.written, st.failed, st.retries), (99, 1, 0), "{st:?}");
        // Found by halving: a handful of requests, not one per line and not forever.
        assert!(store.requests.load(Relaxed) <= 16, "{st:?}");
        let rejected = w.rejected_lines();
        assert_eq!(rejected.len(), 1);
        assert!(rejected[0].0.contains("t=poison"), "{rejected:?}");
        assert!(rejected[0].1.contains("400"), "{rejected:?}");
        // Later samples go through.
        w.try_write(&[sample("ok", 1000)]).unwrap();
        assert_eq!(w.flush(Duration::from_secs(5)).await, 0);
        assert_eq!(store.taken.lock().unwrap().len(), 100);
        assert_eq!(w.close(Duration::from_secs(1)).await, 0);
    }
}
