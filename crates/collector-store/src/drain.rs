//! What the two write-behind queues ([`crate::writer::BufferedWriter`] and
//! [`crate::topology::WriteBehind`]) share: waiting until a queue has drained, and owning the
//! task that drains it.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Wakes the writer task and waits (up to `timeout`) until `pending()` is 0; returns what is
/// still pending. The task signals `drained` after each batch and when it goes idle.
pub(crate) async fn wait_drained(
    wake: &Notify,
    drained: &Notify,
    pending: impl Fn() -> u64,
    timeout: Duration,
) -> u64 {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let signal = drained.notified();
        wake.notify_one();
        let p = pending();
        if p == 0 || tokio::time::Instant::now() >= deadline {
            return p;
        }
        // Re-check at least every 50 ms (a signal may come before we wait for it).
        let until = deadline.min(tokio::time::Instant::now() + Duration::from_millis(50));
        let _ = tokio::time::timeout_at(until, signal).await;
    }
}

/// A writer task: aborted when stopped or dropped.
pub(crate) struct Task(Mutex<Option<JoinHandle<()>>>);

impl Task {
    /// Owns `handle`.
    pub(crate) fn new(handle: JoinHandle<()>) -> Self {
        Task(Mutex::new(Some(handle)))
    }

    /// Stops the task and waits until it has ended.
    pub(crate) async fn stop(&self) {
        let handle = self.0.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = handle {
            t.abort();
            let _ = t.await;
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if let Ok(mut t) = self.0.lock()
            && let Some(t) = t.take()
        {
            t.abort();
        }
    }
}
