//! Counters of everything the collector takes in, accepts and refuses (exposed at `/metrics`),
//! and the bounded quarantine of rejected reports.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use serde::Serialize;

/// Why a report was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum RejectReason {
    /// The ID-INT option bytes are not a main option and stack.
    MalformedOptions,
    /// The report carries no path, or its path is inconsistent.
    BadPath,
    /// A host address in the report cannot be parsed.
    BadHost,
    /// The path's hops could not be mapped to ASes.
    UnknownPath,
    /// The report's verifier is not this collector.
    NotVerifier,
    /// No key for the source entry (no level-1 key of the source AS).
    NoSourceKey,
    /// No key for an AS on the path.
    NoHopKey,
    /// An entry names a hop field outside the path.
    HopOutsidePath,
    /// The stack has no source entry.
    NoSourceEntry,
    /// The stack structure is malformed.
    MalformedStack,
    /// The source entry's MAC is wrong.
    BadSourceMac,
    /// A hop entry's MAC is wrong.
    BadMac,
    /// The main option asks for an instruction this collector does not know.
    UnknownInstruction,
    /// An entry's contents cannot be decoded.
    MalformedEntry,
    /// The source timestamp is older than the replay window.
    Stale,
    /// The source timestamp is too far in the future.
    Future,
    /// The (timestamp, port) pair was seen before.
    Replayed,
    /// The replay memory is full.
    ReplayFull,
    /// The source holds its whole share of the replay memory.
    SourceQuota,
    /// The source belongs to another collector instance (its replay memory is there).
    OtherInstance,
    /// The source timestamp precedes this collector's replay memory (the report may have
    /// been accepted before a restart).
    PredatesReplayMemory,
}

impl RejectReason {
    /// Every reason, in counter order.
    pub const ALL: [RejectReason; 21] = [
        RejectReason::MalformedOptions,
        RejectReason::BadPath,
        RejectReason::BadHost,
        RejectReason::UnknownPath,
        RejectReason::NotVerifier,
        RejectReason::NoSourceKey,
        RejectReason::NoHopKey,
        RejectReason::HopOutsidePath,
        RejectReason::NoSourceEntry,
        RejectReason::MalformedStack,
        RejectReason::BadSourceMac,
        RejectReason::BadMac,
        RejectReason::UnknownInstruction,
        RejectReason::MalformedEntry,
        RejectReason::Stale,
        RejectReason::Future,
        RejectReason::Replayed,
        RejectReason::ReplayFull,
        RejectReason::SourceQuota,
        RejectReason::OtherInstance,
        RejectReason::PredatesReplayMemory,
    ];

    /// Name in snake case (as in JSON and `/metrics`).
    pub fn name(self) -> &'static str {
        match self {
            RejectReason::MalformedOptions => "malformed_options",
            RejectReason::BadPath => "bad_path",
            RejectReason::BadHost => "bad_host",
            RejectReason::UnknownPath => "unknown_path",
            RejectReason::NotVerifier => "not_verifier",
            RejectReason::NoSourceKey => "no_source_key",
            RejectReason::NoHopKey => "no_hop_key",
            RejectReason::HopOutsidePath => "hop_outside_path",
            RejectReason::NoSourceEntry => "no_source_entry",
            RejectReason::MalformedStack => "malformed_stack",
            RejectReason::BadSourceMac => "bad_source_mac",
            RejectReason::BadMac => "bad_mac",
            RejectReason::UnknownInstruction => "unknown_instruction",
            RejectReason::MalformedEntry => "malformed_entry",
            RejectReason::Stale => "stale",
            RejectReason::Future => "future",
            RejectReason::Replayed => "replayed",
            RejectReason::ReplayFull => "replay_full",
            RejectReason::SourceQuota => "source_quota",
            RejectReason::OtherInstance => "other_instance",
            RejectReason::PredatesReplayMemory => "predates_replay_memory",
        }
    }
}

/// Why a whole batch (datagram or request body) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MalformedReason {
    /// Not a protobuf `ReportBatch` (garbage or truncated).
    Protobuf,
    /// Not a JSON report batch.
    Json,
    /// Larger than allowed.
    TooLarge,
}

impl MalformedReason {
    /// Every reason, in counter order.
    pub const ALL: [MalformedReason; 3] = [
        MalformedReason::Protobuf,
        MalformedReason::Json,
        MalformedReason::TooLarge,
    ];

    /// Name in snake case.
    pub fn name(self) -> &'static str {
        match self {
            MalformedReason::Protobuf => "protobuf",
            MalformedReason::Json => "json",
            MalformedReason::TooLarge => "too_large",
        }
    }
}

/// Where input came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP datagrams.
    Udp,
    /// HTTP requests.
    Http,
}

/// Every counter (monotonic, relaxed atomics).
#[derive(Default)]
pub struct Counters {
    /// Datagrams received.
    pub udp_datagrams: AtomicU64,
    /// Datagrams dropped because the ingest queue was full.
    pub udp_queue_full: AtomicU64,
    /// Errors receiving from the UDP socket.
    pub udp_recv_errors: AtomicU64,
    /// HTTP ingest requests accepted into the queue.
    pub http_batches: AtomicU64,
    /// HTTP ingest requests answered 503 because the queue was full.
    pub http_queue_full: AtomicU64,
    /// Batches decoded.
    pub batches: AtomicU64,
    /// Reports taken from batches and completely processed (counted after their verdicts,
    /// metrics and topology changes are visible).
    pub reports: AtomicU64,
    /// Reports accepted (verified, mapped, measured).
    pub accepted: AtomicU64,
    /// Rejected reports per [`RejectReason`].
    pub rejected: [AtomicU64; RejectReason::ALL.len()],
    /// Refused batches per [`MalformedReason`], UDP.
    pub malformed_udp: [AtomicU64; MalformedReason::ALL.len()],
    /// Refused batches per [`MalformedReason`], HTTP.
    pub malformed_http: [AtomicU64; MalformedReason::ALL.len()],
    /// Points handed to the time-series sink.
    pub points_written: AtomicU64,
    /// Points the sink refused (its buffer full), counted, never silent.
    pub points_refused: AtomicU64,
    /// Paths learned from reports.
    pub paths_learned: AtomicU64,
    /// Paths not learned because the collector knows its maximum of learned paths.
    pub paths_not_learned: AtomicU64,
    /// Reports accepted with some entries under the previous key epoch's keys (just after
    /// an epoch began: DRKey's grace period).
    pub grace_accepted: AtomicU64,
    /// Times a worker waited for a full time-series buffer (20 ms each).
    pub sink_waits: AtomicU64,
    /// Reports parked until keys being fetched arrive (a gauge).
    pub waiting_for_keys: AtomicU64,
    /// Key fetches from the remote provider (control service) started.
    pub key_fetches: AtomicU64,
    /// Key fetches that failed (no key, or the provider unreachable).
    pub key_fetch_failures: AtomicU64,
    /// Key fetches refused because the fetch queue was full.
    pub key_fetches_refused: AtomicU64,
    /// Key lookups answered from a remembered failed fetch.
    pub key_misses_remembered: AtomicU64,
}

impl Counters {
    /// Counts a rejection.
    pub fn reject(&self, r: RejectReason) {
        self.rejected[r as usize].fetch_add(1, Relaxed);
    }

    /// Rejections for a reason.
    pub fn rejected(&self, r: RejectReason) -> u64 {
        self.rejected[r as usize].load(Relaxed)
    }

    /// Counts a malformed batch.
    pub fn malformed(&self, t: Transport, r: MalformedReason) {
        let a = match t {
            Transport::Udp => &self.malformed_udp,
            Transport::Http => &self.malformed_http,
        };
        a[r as usize].fetch_add(1, Relaxed);
    }

    /// Malformed batches for a transport and reason.
    pub fn malformed_count(&self, t: Transport, r: MalformedReason) -> u64 {
        let a = match t {
            Transport::Udp => &self.malformed_udp,
            Transport::Http => &self.malformed_http,
        };
        a[r as usize].load(Relaxed)
    }

    /// Prometheus text exposition of every counter.
    pub fn prometheus(&self, out: &mut String) {
        let mut c = |name: &str, help: &str, v: &AtomicU64| {
            let _ = writeln!(
                out,
                "# HELP idint_collector_{name} {help}\n# TYPE idint_collector_{name} counter\nidint_collector_{name} {}",
                v.load(Relaxed)
            );
        };
        c(
            "udp_datagrams_total",
            "UDP datagrams received",
            &self.udp_datagrams,
        );
        c(
            "udp_queue_full_total",
            "UDP datagrams dropped: ingest queue full",
            &self.udp_queue_full,
        );
        c(
            "udp_receive_errors_total",
            "Errors receiving from the UDP socket",
            &self.udp_recv_errors,
        );
        c(
            "http_batches_total",
            "HTTP batches queued",
            &self.http_batches,
        );
        c(
            "http_queue_full_total",
            "HTTP batches refused with 503: ingest queue full",
            &self.http_queue_full,
        );
        c("batches_total", "Batches decoded", &self.batches);
        c("reports_total", "Reports taken from batches", &self.reports);
        c("accepted_total", "Reports accepted", &self.accepted);
        c(
            "points_written_total",
            "Points handed to the time-series store",
            &self.points_written,
        );
        c(
            "points_refused_total",
            "Points the time-series store refused (buffer full)",
            &self.points_refused,
        );
        c(
            "paths_learned_total",
            "Paths learned from reports",
            &self.paths_learned,
        );
        c(
            "paths_not_learned_total",
            "Verified paths not learned: the cap of learned paths is reached",
            &self.paths_not_learned,
        );
        c(
            "grace_accepted_total",
            "Reports accepted with entries under the previous key epoch (grace period)",
            &self.grace_accepted,
        );
        c(
            "sink_waits_total",
            "Times a pipeline worker waited for a full time-series buffer (20 ms each)",
            &self.sink_waits,
        );
        c(
            "key_fetches_total",
            "Key fetches from the control service started",
            &self.key_fetches,
        );
        c(
            "key_fetch_failures_total",
            "Key fetches from the control service that failed",
            &self.key_fetch_failures,
        );
        c(
            "key_fetches_refused_total",
            "Key fetches refused: fetch queue full",
            &self.key_fetches_refused,
        );
        c(
            "key_misses_remembered_total",
            "Key lookups answered from a remembered failed fetch",
            &self.key_misses_remembered,
        );
        let _ = writeln!(
            out,
            "# HELP idint_collector_reports_waiting_for_keys Reports parked until keys being fetched arrive\n# TYPE idint_collector_reports_waiting_for_keys gauge\nidint_collector_reports_waiting_for_keys {}",
            self.waiting_for_keys.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP idint_collector_rejected_total Reports rejected, by reason\n# TYPE idint_collector_rejected_total counter"
        );
        for r in RejectReason::ALL {
            let _ = writeln!(
                out,
                "idint_collector_rejected_total{{reason=\"{}\"}} {}",
                r.name(),
                self.rejected(r)
            );
        }
        let _ = writeln!(
            out,
            "# HELP idint_collector_malformed_total Batches refused, by transport and reason\n# TYPE idint_collector_malformed_total counter"
        );
        for (t, tn) in [(Transport::Udp, "udp"), (Transport::Http, "http")] {
            for r in MalformedReason::ALL {
                let _ = writeln!(
                    out,
                    "idint_collector_malformed_total{{transport=\"{tn}\",reason=\"{}\"}} {}",
                    r.name(),
                    self.malformed_count(t, r)
                );
            }
        }
    }
}

/// A rejected report kept for operators.
#[derive(Debug, Clone, Serialize)]
pub struct Quarantined {
    /// When it was rejected, Unix ns.
    pub time_ns: u64,
    /// Why.
    pub reason: RejectReason,
    /// Details.
    pub detail: String,
    /// Exporter ISD-AS (text).
    pub exporter_ia: String,
    /// Exporter router id.
    pub exporter_router: u32,
    /// Source ISD-AS (text).
    pub src_ia: String,
    /// Destination ISD-AS (text).
    pub dst_ia: String,
    /// The report, protobuf-encoded, hex: its first [`QUARANTINE_REPORT_BYTES`] bytes.
    pub report_hex: String,
    /// The report's encoded length, bytes (more than `report_hex` holds if it was cut).
    pub report_len: usize,
}

/// Bytes of a rejected report the quarantine keeps (a report is at most a batch, and an
/// outsider decides what it holds: the reason and a prefix are what operators need).
pub const QUARANTINE_REPORT_BYTES: usize = 1024;

/// The bounded quarantine: the newest `capacity` rejected reports.
pub struct Quarantine {
    /// Shared so that a listing copies pointers, not reports, under the lock.
    items: Mutex<VecDeque<Arc<Quarantined>>>,
    capacity: usize,
    evicted: AtomicU64,
}

impl Quarantine {
    /// Keeps at most `capacity` reports.
    pub fn new(capacity: usize) -> Self {
        Quarantine {
            items: Mutex::new(VecDeque::new()),
            capacity,
            evicted: AtomicU64::new(0),
        }
    }

    /// Adds a report (evicting the oldest when full).
    pub fn push(&self, q: Quarantined) {
        if self.capacity == 0 {
            self.evicted.fetch_add(1, Relaxed);
            return;
        }
        if let Ok(mut items) = self.items.lock() {
            if items.len() >= self.capacity {
                items.pop_front();
                self.evicted.fetch_add(1, Relaxed);
            }
            items.push_back(Arc::new(q));
        }
    }

    /// The newest `limit` entries (newest first), optionally of one reason; the lock is held
    /// while pointers to them are copied, the reports themselves are shared.
    pub fn list(&self, reason: Option<RejectReason>, limit: usize) -> Vec<Arc<Quarantined>> {
        self.items
            .lock()
            .map(|i| {
                i.iter()
                    .rev()
                    .filter(|q| reason.is_none_or(|r| q.reason == r))
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Entries pushed out by newer ones.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_is_exposed() {
        let c = Counters::default();
        c.sink_waits.fetch_add(3, Relaxed);
        let mut out = String::new();
        c.prometheus(&mut out);
        assert!(
            out.lines()
                .any(|l| l == "idint_collector_sink_waits_total 3"),
            "{out}"
        );
    }
}
