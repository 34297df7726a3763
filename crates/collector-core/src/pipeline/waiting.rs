//! Reports parked while the keys they need are fetched, tried again while the worker idles.

use super::*;

/// Reports a pipeline parks while keys are fetched; beyond that they are rejected at once.
pub const MAX_WAITING_REPORTS: usize = 4096;

/// How long a report waits for keys at most (longer than a control-service timeout).
pub const MAX_KEY_WAIT_NS: u64 = 10_000_000_000;

/// How often parked reports are tried again.
const KEY_RETRY_INTERVAL_NS: u64 = 20_000_000;

/// A parked report: an owned copy, the exporter of its batch, and when it first arrived.
pub(super) struct WaitingReport {
    report: v1::Report,
    exporter: Option<(u64, u32)>,
    since_ns: u64,
}

impl Pipeline {
    /// Whether reports are parked waiting for keys.
    pub fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Tries the reports parked for keys again (at most every 20 ms; call it while idle):
    /// those whose keys arrived are processed, those whose fetch failed or that waited
    /// [`MAX_KEY_WAIT_NS`] are rejected, the others keep waiting.
    pub fn retry_waiting(&mut self, now_ns: u64) -> BatchOutcome {
        if self.waiting.is_empty() || now_ns < self.next_retry_ns {
            return BatchOutcome::default();
        }
        self.next_retry_ns = now_ns.saturating_add(KEY_RETRY_INTERVAL_NS);
        self.run_waiting(now_ns, false)
    }

    /// Gives every parked report its verdict now (at shutdown): processed if its keys
    /// arrived, else rejected for want of them.
    pub fn finish_waiting(&mut self, now_ns: u64) -> BatchOutcome {
        if self.waiting.is_empty() {
            return BatchOutcome::default();
        }
        self.run_waiting(now_ns, true)
    }

    pub(super) fn run_waiting(&mut self, now_ns: u64, last_chance: bool) -> BatchOutcome {
        let parked: Vec<WaitingReport> = self.waiting.drain(..).collect();
        self.shared
            .counters
            .waiting_for_keys
            .fetch_sub(parked.len() as u64, Relaxed);
        let since = if last_chance { 0 } else { u64::MAX };
        self.run_batch(
            parked.iter().map(|w| {
                let r = ReportRef::decoded(&w.report).or_exporter(w.exporter);
                (r, w.since_ns.min(since))
            }),
            now_ns,
        )
    }

    /// Parks a report whose keys are being fetched; false if it may not wait (the queue is
    /// full or it waited long enough).
    pub(super) fn park(&mut self, r: &ReportRef<'_>, since_ns: u64, now_ns: u64) -> bool {
        if self.waiting.len() >= MAX_WAITING_REPORTS
            || now_ns.saturating_sub(since_ns) >= MAX_KEY_WAIT_NS
        {
            return false;
        }
        let report = match r.origin {
            Origin::Decoded(d) => d.clone(),
            Origin::Encoded(b) => match v1::Report::decode(b) {
                Ok(d) => d,
                Err(_) => return false,
            },
        };
        self.waiting.push_back(WaitingReport {
            report,
            exporter: r.exporter,
            since_ns,
        });
        self.shared.counters.waiting_for_keys.fetch_add(1, Relaxed);
        true
    }
}
