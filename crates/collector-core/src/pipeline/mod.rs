//! The in-process pipeline: a decoded report batch goes through
//! rebuild ID-INT options -> verifier check -> freshness/replay -> hop-to-AS mapping ->
//! keys -> MAC chain and decryption -> replay record -> entry decoding -> metrics and event
//! detection. One [`Pipeline`] per worker; everything it shares is behind [`Shared`].
//!
//! Per report it does no locking, logging or I/O; allocation happens only when buffers grow
//! and on the reject path. Shared state is touched once per batch.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use drkey::epoch::GRACE_PERIOD;
use idint_report::v1;
use idint_wire::crypto::{Aes128Enc, cbc_mac};
use idint_wire::idint::crypto::{VerifyError, verify_stack_with};
use idint_wire::idint::verify::{
    DecodeError, DecodedEntry, ReplayError, check_instructions, decode_entry,
};
use idint_wire::idint::{AggregationFunction, IdInt, Verifier};
use idint_wire::{AddrType, HostAddr, IsdAsn};
use prost::Message;
use rustc_hash::FxHashMap;

use crate::counters::{
    Counters, MalformedReason, QUARANTINE_REPORT_BYTES, Quarantine, Quarantined, RejectReason,
};
use crate::keys::source_slot;
use crate::keys::{KeyError, KeyResolver};
use crate::metrics::{
    DetectionConfig, Measurement, MetricKey, MetricStore, NO_SLOT, Point, PointSink,
};
use crate::replay::{RecordError, ReplayFilter, Share, Source};
use crate::topology::{
    HopLayout, InternalLink, LayoutError, MAX_HOPS, Mapping, PathHop, PathInfo, PathOrigin,
    Topology, TopologyHandle, add_internal_link, add_path, add_router,
};
use crate::wire::{self, HostSpan, ReportSpan, Spans};

mod measure;
mod phases;
mod reject;
mod report;
mod waiting;

use measure::*;
use phases::*;
use reject::*;
use report::*;
use waiting::*;
pub use waiting::{MAX_KEY_WAIT_NS, MAX_WAITING_REPORTS};

/// Instruction codes the metrics model reads.
mod code {
    pub const INGRESS_TS: u8 = 0x82;
    pub const EGRESS_TS: u8 = 0x83;
    pub const QUEUE_LEN: u8 = 0x4f;
    pub const TX_UTIL: u8 = 0x4d;
    pub const ENERGY: u8 = 0x4a;
    pub const CO2: u8 = 0x4b;
}

/// State shared by every worker and the API.
#[derive(Clone)]
pub struct Shared {
    /// Topology.
    pub topology: Arc<TopologyHandle>,
    /// Latest metric values.
    pub metrics: Arc<MetricStore>,
    /// Counters.
    pub counters: Arc<Counters>,
    /// Rejected reports.
    pub quarantine: Arc<Quarantine>,
    /// Event detection.
    pub detection: Arc<DetectionConfig>,
    /// The time-series store, if any.
    pub sink: Option<Arc<dyn PointSink>>,
    /// How long a worker waits for a full time-series buffer before counting the points as
    /// refused, ms (meanwhile the ingest queues fill and push back).
    pub sink_wait_ms: u64,
    /// Paths learned from reports at most ([`MAX_LEARNED_PATHS`] unless set).
    pub max_learned_paths: usize,
}

impl Shared {
    /// Fresh state with a quarantine of `quarantine` reports.
    pub fn new(detection: DetectionConfig, quarantine: usize) -> Self {
        Shared {
            topology: Arc::new(TopologyHandle::new()),
            metrics: Arc::new(MetricStore::new()),
            counters: Arc::new(Counters::default()),
            quarantine: Arc::new(Quarantine::new(quarantine)),
            detection: Arc::new(detection),
            sink: None,
            sink_wait_ms: 60_000,
            max_learned_paths: MAX_LEARNED_PATHS,
        }
    }
}

/// A refused report: reason and details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    /// Why.
    pub reason: RejectReason,
    /// Details for operators.
    pub detail: String,
    /// Not a verdict yet: keys the report needs are being fetched (the report waits).
    waiting_for_keys: bool,
}

/// What a batch gave.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Reports accepted.
    pub accepted: usize,
    /// Reports rejected.
    pub rejected: usize,
    /// Reports parked until keys being fetched arrive (see [`Pipeline::retry_waiting`]).
    pub waiting: usize,
}

/// Wire format of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Protobuf `idint.report.v1.ReportBatch`.
    Protobuf,
    /// JSON (see [`crate::json`]).
    Json,
}

/// Decodes a batch; the reason when it is not one.
pub fn decode_batch(
    bytes: &[u8],
    format: Format,
) -> Result<v1::ReportBatch, (MalformedReason, String)> {
    match format {
        Format::Protobuf => v1::ReportBatch::decode(bytes)
            .map_err(|e| (MalformedReason::Protobuf, format!("not a ReportBatch: {e}"))),
        Format::Json => crate::json::decode(bytes).map_err(|e| (MalformedReason::Json, e)),
    }
}

/// Replay window and capacity.
#[derive(Debug, Clone, Copy)]
pub struct ReplayConfig {
    /// Oldest accepted source timestamp, ns before now.
    pub window_ns: u64,
    /// Furthest accepted source timestamp, ns after now.
    pub skew_ns: u64,
    /// Pairs remembered at most.
    pub capacity: usize,
    /// Pairs one source may hold at most (a share of `capacity`).
    pub per_source: usize,
    /// Which sources this collector instance owns (see [`Share`]); others are refused.
    pub share: Share,
    /// Source time (Unix ns) before which reports are refused as possibly accepted by an
    /// earlier process (the replay memory starts empty): the service's start. 0: none.
    pub memory_since_ns: u64,
}

/// Pairs a pipeline's replay memory holds by default.
pub const DEFAULT_REPLAY_CAPACITY: usize = 4 << 20;
/// By default one source may hold 1/this of the replay memory.
pub const DEFAULT_SOURCE_SHARE: usize = 8;

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            window_ns: 60_000_000_000,
            skew_ns: 1_000_000_000,
            capacity: DEFAULT_REPLAY_CAPACITY,
            per_source: DEFAULT_REPLAY_CAPACITY / DEFAULT_SOURCE_SHARE,
            share: Share::ALONE,
            memory_since_ns: 0,
        }
    }
}

/// Things learned from verified reports, applied to the topology once per batch.
#[derive(Debug, Clone, PartialEq)]
enum Learned {
    Router(IsdAsn, u32),
    Internal(InternalLink),
    Path(PathInfo),
}

/// One worker's pipeline.
pub struct Pipeline {
    shared: Shared,
    keys: KeyResolver,
    replay: ReplayFilter,
    /// How far a report's receive time may lie before and after the collector's clock (the
    /// replay window and skew).
    receive_bounds: (u64, u64),
    /// The sources this instance owns.
    share: Share,
    topo: Arc<Topology>,
    topo_gen: u64,
    hbh: Vec<u8>,
    entries: Vec<DecodedEntry>,
    obs: Vec<Point>,
    /// Metric-store slot hint per observation (parallel to `obs`).
    hints: Vec<u32>,
    /// Per accepted report of the batch: (path id, its range of `obs`).
    report_obs: Vec<(u64, u32, u32)>,
    /// Per path: the metric-store slots its last report's observations landed in, by position.
    path_slots: FxHashMap<u64, Vec<u32>>,
    out: Vec<Point>,
    learned: Vec<Learned>,
    spans: Spans,
    /// Reports waiting for keys being fetched, oldest first.
    waiting: std::collections::VecDeque<WaitingReport>,
    /// When parked reports are tried next.
    next_retry_ns: u64,
}

/// Paths whose metric slots a pipeline remembers; beyond that the memory starts afresh.
const PATH_SLOT_MEMOS: usize = 16_384;

/// A report as the pipeline reads it, borrowed either from a decoded [`v1::Report`] or from
/// the protobuf bytes of a batch (see [`crate::wire`]), so that the hot path needs no owned
/// copy of a report.
#[derive(Debug, Clone)]
pub struct ReportRef<'a> {
    origin: Origin<'a>,
    exporter: Option<(u64, u32)>,
    receive_time_ns: u64,
    src_isd_as: u64,
    src_host: Option<(u32, &'a [u8])>,
    dst_isd_as: u64,
    dst_host: Option<(u32, &'a [u8])>,
    path: PathRef<'a>,
    main_option: &'a [u8],
    stack: &'a [u8],
}

/// A report's path: as decoded, or laid out already by the wire decoder.
#[derive(Debug, Clone, Copy)]
enum PathRef<'a> {
    Decoded(Option<&'a v1::Path>),
    Laid(&'a Result<HopLayout, LayoutError>),
}

/// Where a [`ReportRef`] comes from (to quarantine the report as it was sent).
#[derive(Debug, Clone, Copy)]
enum Origin<'a> {
    Decoded(&'a v1::Report),
    /// The bytes of the `Report` message.
    Encoded(&'a [u8]),
}

impl Pipeline {
    /// A worker pipeline with its own key caches and replay memory.
    ///
    /// Replay suppression is per pipeline: run one pipeline per collector, or shard reports
    /// to pipelines by source so that a source's reports always meet the same one.
    pub fn new(shared: Shared, keys: KeyResolver, replay: ReplayConfig) -> Self {
        let topo = shared.topology.snapshot();
        let topo_gen = shared.topology.generation();
        Pipeline {
            shared,
            keys,
            replay: ReplayFilter::new(replay.window_ns, replay.skew_ns, replay.capacity)
                .with_source_quota(replay.per_source)
                .remembers_since(replay.memory_since_ns),
            receive_bounds: (replay.window_ns, replay.skew_ns),
            share: replay.share,
            topo,
            topo_gen,
            hbh: Vec::with_capacity(1024),
            entries: Vec::with_capacity(32),
            obs: Vec::with_capacity(4096),
            hints: Vec::with_capacity(4096),
            report_obs: Vec::with_capacity(256),
            path_slots: FxHashMap::default(),
            out: Vec::with_capacity(4096),
            learned: Vec::new(),
            spans: Spans::default(),
            waiting: std::collections::VecDeque::new(),
            next_retry_ns: 0,
        }
    }

    /// The shared state.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Forgets every remembered (timestamp, port) pair (benchmarks replay the same reports).
    pub fn clear_replay(&mut self) {
        self.replay.clear();
    }

    /// Processes a decoded batch at `now_ns`: counts, quarantines rejects, updates metrics and
    /// hands changed values to the sink.
    pub fn process_batch(&mut self, batch: &v1::ReportBatch, now_ns: u64) -> BatchOutcome {
        let batch_exporter = batch.exporter.as_ref().map(|e| (e.isd_as, e.router_id));
        self.run_batch(
            batch
                .reports
                .iter()
                .map(|r| (ReportRef::decoded(r).or_exporter(batch_exporter), now_ns)),
            now_ns,
        )
    }

    /// Decodes a protobuf `ReportBatch` and processes it as [`Self::process_batch`] does,
    /// reading the reports in place (no per-report allocation); the reason if the bytes are
    /// not a batch (then nothing is counted but by the caller, as with [`decode_batch`]).
    pub fn process_encoded(
        &mut self,
        bytes: &[u8],
        now_ns: u64,
    ) -> Result<BatchOutcome, (MalformedReason, String)> {
        let mut spans = std::mem::take(&mut self.spans);
        let out = if wire::parse_batch(bytes, &mut spans) {
            let reports = spans.reports.iter();
            Ok(self.run_batch(
                reports.map(|s| {
                    let r = ReportRef::encoded(bytes, &spans, s).or_exporter(spans.exporter);
                    (r, now_ns)
                }),
                now_ns,
            ))
        } else {
            // Whatever the borrowed decoder leaves to prost (errors included).
            decode_batch(bytes, Format::Protobuf).map(|b| self.process_batch(&b, now_ns))
        };
        self.spans = spans;
        out
    }

    fn run_batch<'a>(
        &mut self,
        reports: impl Iterator<Item = (ReportRef<'a>, u64)>,
        now_ns: u64,
    ) -> BatchOutcome {
        let gen_now = self.shared.topology.generation();
        if gen_now != self.topo_gen {
            self.topo = self.shared.topology.snapshot();
            self.topo_gen = gen_now;
            self.keys.clear();
        }
        self.keys.refresh();
        let c = &self.shared.counters;
        c.batches.fetch_add(1, Relaxed);
        let mut outcome = BatchOutcome::default();
        self.obs.clear();
        self.hints.clear();
        self.report_obs.clear();
        let mut n = 0u64;
        for (r, since_ns) in reports {
            match self.process_report(&r, now_ns) {
                Ok(()) => outcome.accepted += 1,
                Err(rej) if rej.waiting_for_keys && self.park(&r, since_ns, now_ns) => {
                    outcome.waiting += 1;
                    // Counted in `reports` once it has its verdict.
                    continue;
                }
                Err(rej) => {
                    outcome.rejected += 1;
                    self.quarantine(&r, rej, now_ns);
                }
            }
            n += 1;
        }
        let c = &self.shared.counters;
        self.out.clear();
        let missed = self.shared.metrics.apply_hinted(
            &self.shared.detection,
            &self.obs,
            &mut self.hints,
            &mut self.out,
        );
        if missed {
            // Remember where each path's observations landed (only after a batch with a
            // wrong hint: otherwise the memory is right already).
            if self.path_slots.len() > PATH_SLOT_MEMOS {
                self.path_slots.clear();
            }
            for &(path, from, to) in &self.report_obs {
                let memo = self.path_slots.entry(path).or_default();
                memo.clear();
                memo.extend_from_slice(&self.hints[from as usize..to as usize]);
            }
        }
        if !self.out.is_empty()
            && let Some(sink) = &self.shared.sink
        {
            // A full store buffer holds the worker (pushback through the ingest queues), up
            // to the configured wait; then the points are counted as refused.
            let mut waited = 0;
            loop {
                match sink.write(&self.out) {
                    Ok(()) => {
                        c.points_written.fetch_add(self.out.len() as u64, Relaxed);
                        break;
                    }
                    Err(_) if waited < self.shared.sink_wait_ms => {
                        c.sink_waits.fetch_add(1, Relaxed);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        waited += 20;
                    }
                    Err(_) => {
                        c.points_refused.fetch_add(self.out.len() as u64, Relaxed);
                        break;
                    }
                }
            }
        }
        if !self.learned.is_empty() {
            self.apply_learned();
        }
        // Counted last: once `reports` (or `accepted`) covers a report, its verdict, metrics
        // and topology changes are visible (readers such as tests and the load script wait
        // on them).
        let c = &self.shared.counters;
        c.accepted.fetch_add(outcome.accepted as u64, Relaxed);
        c.reports.fetch_add(n, Relaxed);
        outcome
    }

    fn quarantine(&self, r: &ReportRef<'_>, rej: Reject, now_ns: u64) {
        self.shared.counters.reject(rej.reason);
        let (eia, erid) = r
            .exporter
            .map(|(ia, id)| (IsdAsn::from_u64(ia).to_string(), id))
            .unwrap_or_default();
        let encoded = r.encode();
        let q = Quarantined {
            time_ns: now_ns,
            reason: rej.reason,
            detail: rej.detail,
            exporter_ia: eia,
            exporter_router: erid,
            src_ia: IsdAsn::from_u64(r.src_isd_as).to_string(),
            dst_ia: IsdAsn::from_u64(r.dst_isd_as).to_string(),
            report_hex: hex::encode(&encoded[..encoded.len().min(QUARANTINE_REPORT_BYTES)]),
            report_len: encoded.len(),
        };
        self.shared.topology.quarantined(&q);
        self.shared.quarantine.push(q);
    }

    fn apply_learned(&mut self) {
        let learned = std::mem::take(&mut self.learned);
        let counters = self.shared.counters.clone();
        let max_learned = self.shared.max_learned_paths;
        self.shared.topology.update(|t, ch| {
            let mut learned_paths = t
                .paths
                .values()
                .filter(|p| p.origin == PathOrigin::Learned)
                .count();
            for l in learned {
                match l {
                    Learned::Router(ia, node) => add_router(t, ch, ia, node),
                    Learned::Internal(il) => add_internal_link(t, ch, il),
                    Learned::Path(p) if t.paths.contains_key(&p.id) => {}
                    Learned::Path(_) if learned_paths >= max_learned => {
                        counters.paths_not_learned.fetch_add(1, Relaxed);
                    }
                    Learned::Path(p) => {
                        counters.paths_learned.fetch_add(1, Relaxed);
                        learned_paths += 1;
                        add_path(t, ch, p);
                    }
                }
            }
        });
        self.topo = self.shared.topology.snapshot();
        self.topo_gen = self.shared.topology.generation();
    }

    fn learn(&mut self, l: Learned) {
        if !self.learned.contains(&l) {
            self.learned.push(l);
        }
    }

    /// Verifies, maps and measures one report.
    pub fn process_report(&mut self, r: &ReportRef<'_>, now_ns: u64) -> Result<(), Reject> {
        let bad_path = |e: &LayoutError| reject(RejectReason::BadPath, format!("{e:?}"));
        let owned;
        let layout = match r.path {
            PathRef::Laid(l) => l.as_ref().map_err(bad_path)?,
            PathRef::Decoded(p) => {
                owned = HopLayout::of(p).map_err(|e| bad_path(&e))?;
                &owned
            }
        };
        let (src, dst) = (
            IsdAsn::from_u64(r.src_isd_as),
            IsdAsn::from_u64(r.dst_isd_as),
        );
        let src_host = host_of(r.src_host)?;
        if !self.share.owns(src, &src_host) {
            let owner = Share::owner(self.share.instances, src, &src_host);
            return Err(reject(
                RejectReason::OtherInstance,
                format!("source {src} {src_host} belongs to collector instance {owner}"),
            ));
        }

        let mut idint = rebuild_options(&mut self.hbh, r.main_option, r.stack)?;
        let (ts48, port, verifier) = {
            let main = idint.main();
            (main.source_timestamp(), main.source_port(), main.verifier())
        };
        check_verifier(&self.keys, verifier, (src, src_host), (dst, r.dst_host))?;

        // Freshness and replay before the (costly) MACs; recorded only after they verify.
        let source = source_slot(src, &src_host);
        let who = Source::new(src, &src_host);
        let full_ts = check_fresh(&self.replay, who, ts48, port, now_ns)?;

        // Keys, by the sink's receive time (the routers' processing time, give or take).
        let time = report_time(self.receive_bounds, r.receive_time_ns, now_ns);
        let time_s = time / 1_000_000_000;

        let (path_id, ases, walked) = match map_hops(&self.topo, src, dst, layout)? {
            Mapped::Path { id, ases, walked } => (id, ases, walked),
            Mapped::Unknown { id } => {
                // Recorded only as a verified fact: a genuine source sent it.
                let source_key = self
                    .keys
                    .source_key(source, src, src_host, time_s)
                    .map_err(|e| {
                        let detail = format!("{src} {src_host}: {e:?}");
                        key_reject(RejectReason::NoSourceKey, e, detail)
                    })?;
                verify_source_entry(&mut idint, source_key)?;
                self.replay
                    .record(who, full_ts, port, now_ns)
                    .map_err(record_reject)?;
                self.shared.topology.record_unknown(src, dst, id, layout);
                return Err(reject(
                    RejectReason::UnknownPath,
                    format!("path {id:016x} from {src} to {dst} maps to no known ASes"),
                ));
            }
        };
        let (source_key, hop_keys) = resolve_keys(
            &mut self.keys,
            (source, src, src_host),
            (path_id, &ases),
            time_s,
        )?;
        let instructions = idint.main().instructions();
        let functions = idint.main().aggregation_functions();
        let (verified, mut decode_error) = verify_and_decode(
            &mut idint,
            (source_key, hop_keys),
            layout,
            &instructions,
            &mut self.entries,
        );
        match verified {
            Ok(_) => check_instructions(&idint.main()).map_err(decode_reject)?,
            // Just after a key epoch began, entries written just before it carry MACs under
            // the previous epoch's keys (DRKey's grace period): those entries are tried with
            // them.
            Err(VerifyError::BadMac { index }) => {
                decode_error = self.verify_in_grace(
                    (r.main_option, r.stack),
                    (source, src, src_host),
                    (path_id, &ases, layout),
                    time_s,
                    index,
                )?;
            }
            Err(e) => return Err(verify_reject(e)),
        }
        self.replay
            .record(who, full_ts, port, now_ns)
            .map_err(record_reject)?;
        if let Some(err) = decode_error {
            return Err(decode_reject(err));
        }
        self.measure(
            path_id,
            &ases,
            layout,
            ts48,
            (instructions, functions),
            time,
        );
        // A walked path becomes known only once every one of its ASes vouched for it.
        if walked && every_as_hop_verified(&self.entries, layout) {
            self.learn_walked_path(path_id, (src, dst), &ases, layout);
        }
        Ok(())
    }
}

/// Paths the collector learns from reports at most (imported ones do not count).
pub const MAX_LEARNED_PATHS: usize = 16_384;

/// A report's path mapped to ASes, or not.
enum Mapped {
    /// A known or walked path: its id, the AS per AS hop, and whether it was walked.
    Path {
        id: u64,
        ases: Arc<[IsdAsn]>,
        walked: bool,
    },
    /// A path that maps to no known ASes (its id: the interface fingerprint).
    Unknown { id: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_of_48_bit_timestamps_wrap() {
        assert_eq!(diff48(10, 4), 6);
        assert_eq!(diff48(4, 10), -6);
        assert_eq!(diff48(3, WRAP48 - 2), 5);
    }
}
