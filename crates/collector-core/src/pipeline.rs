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
use crate::replay::{RecordError, ReplayFilter, Source};
use crate::topology::{
    HopLayout, InternalLink, LayoutError, MAX_HOPS, Mapping, PathHop, PathInfo, PathOrigin,
    Topology, TopologyHandle, add_internal_link, add_path, add_router,
};
use crate::wire::{self, HostSpan, ReportSpan, Spans};

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

impl Reject {
    /// Whether the report waits for keys being fetched rather than being rejected (it is
    /// rejected with `reason` if they never come).
    pub fn is_waiting_for_keys(&self) -> bool {
        self.waiting_for_keys
    }
}

fn reject(reason: RejectReason, detail: impl Into<String>) -> Reject {
    Reject {
        reason,
        detail: detail.into(),
        waiting_for_keys: false,
    }
}

/// A report that must wait for keys being fetched, rejected with `reason` if they never come.
fn wait_for_keys(reason: RejectReason, detail: String) -> Reject {
    Reject {
        waiting_for_keys: true,
        ..reject(reason, detail)
    }
}

/// Reports a pipeline parks while keys are fetched; beyond that they are rejected at once.
pub const MAX_WAITING_REPORTS: usize = 4096;
/// How long a report waits for keys at most (longer than a control-service timeout).
pub const MAX_KEY_WAIT_NS: u64 = 10_000_000_000;
/// How often parked reports are tried again.
const KEY_RETRY_INTERVAL_NS: u64 = 20_000_000;

/// A parked report: an owned copy, the exporter of its batch, and when it first arrived.
struct WaitingReport {
    report: v1::Report,
    exporter: Option<(u64, u32)>,
    since_ns: u64,
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
            memory_since_ns: 0,
        }
    }
}

/// The previous entry while measuring.
#[derive(Clone, Copy)]
struct PrevEntry {
    /// AS hop.
    k: usize,
    node: Option<u32>,
    /// Egress interface (non-zero).
    eif: Option<u16>,
    /// Egress timestamp.
    eg: Option<u64>,
    /// Written or closed by the router that sent the packet out of its AS (E).
    left_as: bool,
}

/// Where the values the metrics model reads are in an entry's slots, and how each slot was
/// aggregated.
#[derive(Clone, Copy)]
struct SlotMap {
    ingress: Option<usize>,
    egress: Option<usize>,
    queue: Option<usize>,
    util: Option<usize>,
    energy: Option<usize>,
    co2: Option<usize>,
    functions: [AggregationFunction; 4],
}

impl SlotMap {
    /// The slots of a main option's instructions and aggregation functions.
    #[inline]
    fn of(
        instructions: &[idint_wire::idint::Instruction; 4],
        functions: [AggregationFunction; 4],
    ) -> Self {
        let slot_of = |c: u8| instructions.iter().position(|i| i.0 == c);
        SlotMap {
            ingress: slot_of(code::INGRESS_TS),
            egress: slot_of(code::EGRESS_TS),
            queue: slot_of(code::QUEUE_LEN),
            util: slot_of(code::TX_UTIL),
            energy: slot_of(code::ENERGY),
            co2: slot_of(code::CO2),
            functions,
        }
    }

    /// Of an aggregated entry (A: several routers of an AS), a slot aggregated with "last"
    /// holds the value of the router that wrote last: with E set, the one that sent the
    /// packet out of the AS.
    #[inline]
    fn last(&self, s: Option<usize>) -> bool {
        s.is_some_and(|s| self.functions[s] == AggregationFunction::Last)
    }

    /// Whether slot `s` was aggregated with "sum".
    #[inline]
    fn summed(&self, s: Option<usize>) -> bool {
        s.is_some_and(|s| self.functions[s] == AggregationFunction::Sum)
    }
}

/// The value of slot `s` of an entry, if the entry has it.
#[inline]
fn slot_value(md: &idint_wire::idint::Metadata, s: Option<usize>) -> Option<u64> {
    s.and_then(|s| md.slots[s]).map(|v| v.value)
}

/// The running state of [`Pipeline::measure`]'s walk over one report's entries.
struct Walk {
    path: u64,
    time_ns: u64,
    /// Of the current AS hop: its first ingress timestamp (with the hop).
    hop_first_in: Option<(usize, u64)>,
    /// Of the current AS hop: its last egress timestamp.
    hop_last_eg: Option<u64>,
    /// Previous entry.
    prev: Option<PrevEntry>,
    max_u: Option<u64>,
    max_q: Option<u64>,
    sum_e: Option<u64>,
    sum_c: Option<u64>,
    /// Whether the sums hold every router's share (see [`Walk::add_path_shares`]).
    whole_e: bool,
    whole_c: bool,
    /// The last ingress timestamp seen.
    last_in: Option<u64>,
}

impl Walk {
    /// Before the first entry of a report on `path`, its values stamped `time_ns`.
    #[inline]
    fn new(path: u64, time_ns: u64) -> Self {
        Walk {
            path,
            time_ns,
            hop_first_in: None,
            hop_last_eg: None,
            prev: None,
            max_u: None,
            max_q: None,
            sum_e: None,
            sum_c: None,
            whole_e: true,
            whole_c: true,
            last_in: None,
        }
    }

    #[inline]
    fn push(&self, obs: &mut Vec<Point>, key: MetricKey, value: f64) {
        obs.push(Point {
            key,
            value,
            time_ns: self.time_ns,
        })
    }

    /// Phase "AS hop": entering AS hop `k` closes the previous one (its hop latency, and the
    /// latency of the link between them); another router of the same AS is an internal link.
    #[inline]
    fn step_as_hop(
        &mut self,
        obs: &mut Vec<Point>,
        topo: &Topology,
        learned: &mut Vec<Learned>,
        (e, k, ases, ing, node): (&DecodedEntry, usize, &[IsdAsn], Option<u64>, Option<u32>),
    ) {
        let prev = self.prev;
        if prev.is_some_and(|p| p.k != k) {
            self.close_as_hop(obs);
            // Inter-AS link latency: the previous AS's egress router to this AS's ingress
            // router, only across one link (the next AS hop) between the two routers on
            // its ends (E, then I): across an AS that wrote nothing, or from a router
            // that handed the packet on inside its AS, the span holds more than the link.
            if let Some(p) = prev
                && let (Some(pif), Some(peg)) = (p.eif, p.eg)
                && p.left_as
                && e.ingress
                && k == p.k + 1
                && let Some(i) = ing
            {
                self.push(
                    obs,
                    MetricKey::link(ases[p.k], pif, Measurement::LatencyNs),
                    diff48(i, peg) as f64,
                );
            }
        } else if let Some(pn) = prev.and_then(|p| p.node)
            && let Some(n) = node
            && pn != n
        {
            let il = InternalLink {
                ia: ases[k],
                from_node: pn,
                to_node: n,
            };
            if !topo.internal_links.contains(&il) {
                learned.push(Learned::Internal(il));
            }
        }
    }

    /// The AS hop's latency (first ingress to last egress), if it has both; starts the next.
    #[inline]
    fn close_as_hop(&mut self, obs: &mut Vec<Point>) {
        if let (Some((pk, fi)), Some(le)) = (self.hop_first_in, self.hop_last_eg) {
            self.push(
                obs,
                MetricKey::hop(self.path, pk, Measurement::LatencyNs),
                diff48(le, fi) as f64,
            );
        }
        self.hop_first_in = None;
        self.hop_last_eg = None;
    }

    /// Phase "timestamps": the AS hop's first ingress and last egress, the path's last ingress.
    #[inline]
    fn note_timestamps(&mut self, k: usize, ing: Option<u64>, eg: Option<u64>) {
        if let Some(i) = ing {
            if self.hop_first_in.is_none() {
                self.hop_first_in = Some((k, i));
            }
            self.last_in = Some(i);
        }
        if eg.is_some() {
            self.hop_last_eg = eg;
        }
    }

    /// Phase "router": a router's own measurements (latency, energy, CO2), not from an
    /// aggregated entry, whose values span several routers (its node id is the last one's).
    #[inline]
    fn router_values(
        &self,
        obs: &mut Vec<Point>,
        slots: &SlotMap,
        e: &DecodedEntry,
        ia: IsdAsn,
        (ing, eg): (Option<u64>, Option<u64>),
    ) {
        let Some(n) = e.metadata.node_id.filter(|_| !e.aggregated) else {
            return;
        };
        if let (Some(i), Some(o)) = (ing, eg) {
            self.push(
                obs,
                MetricKey::router(ia, n, Measurement::LatencyNs),
                diff48(o, i) as f64,
            );
        }
        if let Some(v) = slot_value(&e.metadata, slots.energy) {
            self.push(
                obs,
                MetricKey::router(ia, n, Measurement::EnergyNj),
                v as f64,
            );
        }
        if let Some(v) = slot_value(&e.metadata, slots.co2) {
            self.push(obs, MetricKey::router(ia, n, Measurement::Co2Pg), v as f64);
        }
    }

    /// Phase "link": an inter-AS link's queue and utilisation as the router sending on it
    /// measured them (E set; a router handing the packet to a sibling measured its way
    /// there); the path's maxima of both.
    #[inline]
    fn link_values(
        &mut self,
        obs: &mut Vec<Point>,
        slots: &SlotMap,
        e: &DecodedEntry,
        ia: IsdAsn,
        eif: Option<u16>,
    ) {
        let node = e.metadata.node_id;
        let sender = |s: Option<usize>| e.egress && (!e.aggregated || slots.last(s));
        if let Some(q) = slot_value(&e.metadata, slots.queue) {
            if let (Some(n), Some(f)) = (node, eif)
                && sender(slots.queue)
            {
                self.push(obs, MetricKey::queue(ia, n, f), q as f64);
            }
            self.max_q = Some(self.max_q.map_or(q, |m| m.max(q)));
        }
        if let Some(u) = slot_value(&e.metadata, slots.util) {
            if let Some(f) = eif
                && sender(slots.util)
            {
                self.push(
                    obs,
                    MetricKey::link(ia, f, Measurement::UtilisationKbps),
                    u as f64,
                );
            }
            self.max_u = Some(self.max_u.map_or(u, |m| m.max(u)));
        }
    }

    /// Phase "path shares": path totals add every router's share: an aggregated entry holds
    /// its routers' total only if it was aggregated with "sum".
    #[inline]
    fn add_path_shares(&mut self, slots: &SlotMap, e: &DecodedEntry) {
        if let Some(v) = slot_value(&e.metadata, slots.energy) {
            self.sum_e = Some(self.sum_e.unwrap_or(0) + v);
            self.whole_e &= !e.aggregated || slots.summed(slots.energy);
        }
        if let Some(v) = slot_value(&e.metadata, slots.co2) {
            self.sum_c = Some(self.sum_c.unwrap_or(0) + v);
            self.whole_c &= !e.aggregated || slots.summed(slots.co2);
        }
    }

    /// Phase "path": closes the last AS hop; the path's latency (source timestamp to the
    /// last ingress), maximum utilisation and queue, and total energy and CO2.
    #[inline]
    fn close(mut self, obs: &mut Vec<Point>, src_ts: u64) {
        self.close_as_hop(obs);
        if let Some(i) = self.last_in {
            self.push(
                obs,
                MetricKey::path(self.path, Measurement::LatencyNs),
                diff48(i, src_ts) as f64,
            );
        }
        for (m, v) in [
            (Measurement::UtilisationKbps, self.max_u),
            (Measurement::QueueLen, self.max_q),
            (Measurement::EnergyNj, self.sum_e.filter(|_| self.whole_e)),
            (Measurement::Co2Pg, self.sum_c.filter(|_| self.whole_c)),
        ] {
            if let Some(v) = v {
                self.push(obs, MetricKey::path(self.path, m), v as f64);
            }
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

const WRAP48: u64 = 1 << 48;

/// `a - b` of two 48-bit timestamps, signed (differences beyond ±2^47 wrap).
fn diff48(a: u64, b: u64) -> i64 {
    let d = a.wrapping_sub(b) % WRAP48;
    if d >= WRAP48 / 2 {
        d as i64 - WRAP48 as i64
    } else {
        d as i64
    }
}

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

impl<'a> ReportRef<'a> {
    /// The report with `batch`'s exporter (the batch's) when it names none itself.
    fn or_exporter(mut self, batch: Option<(u64, u32)>) -> Self {
        if self.exporter.is_none() {
            self.exporter = batch;
        }
        self
    }

    /// A decoded report.
    pub fn decoded(r: &'a v1::Report) -> Self {
        let host = |h: &'a Option<v1::HostAddress>| h.as_ref().map(|h| (h.addr_type, &h.raw[..]));
        ReportRef {
            origin: Origin::Decoded(r),
            exporter: r.exporter.as_ref().map(|e| (e.isd_as, e.router_id)),
            receive_time_ns: r.receive_time_ns,
            src_isd_as: r.src_isd_as,
            src_host: host(&r.src_host),
            dst_isd_as: r.dst_isd_as,
            dst_host: host(&r.dst_host),
            path: PathRef::Decoded(r.path.as_ref()),
            main_option: &r.idint_main_option,
            stack: &r.idint_stack,
        }
    }

    /// A report of the batch `bytes`, as [`crate::wire::parse_batch`] found it (into
    /// `spans`).
    pub fn encoded(bytes: &'a [u8], spans: &'a Spans, s: &'a ReportSpan) -> Self {
        let host = |h: &Option<HostSpan>| h.as_ref().map(|h| (h.addr_type, &bytes[h.raw.clone()]));
        ReportRef {
            origin: Origin::Encoded(&bytes[s.message.clone()]),
            exporter: s.exporter,
            receive_time_ns: s.receive_time_ns,
            src_isd_as: s.src_isd_as,
            src_host: host(&s.src_host),
            dst_isd_as: s.dst_isd_as,
            dst_host: host(&s.dst_host),
            path: PathRef::Laid(spans.layout(s)),
            main_option: &bytes[s.main_option.clone()],
            stack: &bytes[s.stack.clone()],
        }
    }

    /// The report re-encoded as prost encodes its decoded form (for the quarantine).
    fn encode(&self) -> Vec<u8> {
        match self.origin {
            Origin::Decoded(r) => r.encode_to_vec(),
            // The bytes were checked by the wire decoder, so prost decodes them.
            Origin::Encoded(b) => v1::Report::decode(b)
                .map(|r| r.encode_to_vec())
                .unwrap_or_else(|_| b.to_vec()),
        }
    }
}

fn host_of(h: Option<(u32, &[u8])>) -> Result<HostAddr, Reject> {
    let (addr_type, raw) =
        h.ok_or_else(|| reject(RejectReason::BadHost, "host address missing"))?;
    let t = u8::try_from(addr_type)
        .ok()
        .filter(|t| *t < 16)
        .ok_or_else(|| reject(RejectReason::BadHost, "address type out of range"))?;
    HostAddr::parse(AddrType::from_nibble(t), raw)
        .map_err(|e| reject(RejectReason::BadHost, format!("host address: {e}")))
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

    fn run_waiting(&mut self, now_ns: u64, last_chance: bool) -> BatchOutcome {
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
    fn park(&mut self, r: &ReportRef<'_>, since_ns: u64, now_ns: u64) -> bool {
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

    /// Phase "learn": a path walked over imported interfaces whose report verified becomes a
    /// learned path (applied to the topology with the batch).
    fn learn_walked_path(
        &mut self,
        path_id: u64,
        (src, dst): (IsdAsn, IsdAsn),
        ases: &[IsdAsn],
        layout: &HopLayout,
    ) {
        let hops = (0..layout.as_hops)
            .map(|k| PathHop {
                ia: ases[k],
                ingress: layout.ifs[k].0,
                egress: layout.ifs[k].1,
            })
            .collect();
        self.learn(Learned::Path(PathInfo {
            id: path_id,
            src,
            dst,
            hops,
            origin: PathOrigin::Learned,
        }));
    }

    /// Verifies the options again after entry `failed` had a bad MAC under the keys of
    /// `time_s`'s epoch, when `time_s` lies within [`GRACE_PERIOD`] of that epoch's start:
    /// each failing entry is tried with the previous epoch's key (an entry's MAC depends only
    /// on its own key and the on-wire MAC below it), until the stack verifies or an entry
    /// fails under both. On success the main option's instructions are checked and the first
    /// decoding error of the entries is returned.
    fn verify_in_grace(
        &mut self,
        (main_option, stack): (&[u8], &[u8]),
        (source, src, src_host): (u64, IsdAsn, HostAddr),
        (path_id, ases, layout): (u64, &[IsdAsn], &HopLayout),
        time_s: u64,
        failed: usize,
    ) -> Result<Option<DecodeError>, Reject> {
        let bad = |index| verify_reject(VerifyError::BadMac { index });
        let prev_s = time_s.saturating_sub(u64::from(GRACE_PERIOD));
        // Both epochs' keys, copied (the cache holds one epoch per source and path).
        let keys = |k: &mut KeyResolver, t: u64| -> Option<(Aes128Enc, Vec<Aes128Enc>)> {
            let s = k.source_key(source, src, src_host, t).ok()?.clone();
            let h = k.path_keys(path_id, ases, t).ok()?.to_vec();
            Some((s, h))
        };
        let (Some(now), Some(prev)) = (keys(&mut self.keys, time_s), keys(&mut self.keys, prev_s))
        else {
            return Err(bad(failed));
        };
        // Not within a grace period: the previous second's keys are the same.
        let fp = |k: &Aes128Enc| cbc_mac(k, &[0; 16]);
        let same =
            fp(&now.0) == fp(&prev.0) && now.1.iter().zip(&prev.1).all(|(a, b)| fp(a) == fp(b));
        if same {
            return Err(bad(failed));
        }
        let (hop_of, nhf) = (&layout.hop_of, layout.hop_fields);
        // Entry `i` takes the previous epoch's key if bit `i` is set (entries past 127 never).
        let mut previous = 1u128.checked_shl(failed as u32).unwrap_or(0);
        loop {
            // The options again, as received (a verification decrypts them in place).
            self.hbh.truncate(2);
            self.hbh.extend_from_slice(main_option);
            self.hbh.extend_from_slice(stack);
            let Ok(Some(mut idint)) = IdInt::locate(&mut self.hbh[..]) else {
                return Err(bad(failed));
            };
            let instructions = idint.main().instructions();
            let entries = &mut self.entries;
            entries.clear();
            let mut decode_error = None;
            let key_set = |i: usize| {
                if (previous >> i.min(127)) & 1 == 1 {
                    &prev
                } else {
                    &now
                }
            };
            let result = verify_stack_with(
                &mut idint,
                &key_set(0).0,
                |i, e| {
                    let j = usize::from(e.hop());
                    (j < nhf)
                        .then(|| key_set(i).1.get(usize::from(hop_of[j])))
                        .flatten()
                },
                |index, e| {
                    if decode_error.is_none() {
                        match decode_entry(index, e, &instructions) {
                            Ok(d) => entries.push(d),
                            Err(err) => decode_error = Some(err),
                        }
                    }
                },
            );
            match result {
                Ok(_) => {
                    check_instructions(&idint.main()).map_err(decode_reject)?;
                    self.shared.counters.grace_accepted.fetch_add(1, Relaxed);
                    return Ok(decode_error);
                }
                Err(VerifyError::BadMac { index })
                    if index < 128 && (previous >> index) & 1 == 0 =>
                {
                    previous |= 1 << index;
                }
                Err(e) => return Err(verify_reject(e)),
            }
        }
    }

    /// Turns the verified, decoded entries of one report on `path` into metric values
    /// (written to the observation buffer with their slot hints) and topology facts learned
    /// on the way: hop, link, router, queue and path values.
    fn measure(
        &mut self,
        path: u64,
        ases: &[IsdAsn],
        layout: &HopLayout,
        src_ts: u64,
        (instructions, functions): (
            [idint_wire::idint::Instruction; 4],
            [AggregationFunction; 4],
        ),
        time_ns: u64,
    ) {
        let slots = SlotMap::of(&instructions, functions);
        let mut walk = Walk::new(path, time_ns);
        let mut learned = Vec::new();
        let entries = std::mem::take(&mut self.entries);
        let first = self.obs.len();
        let obs = &mut self.obs;
        for e in entries.iter().filter(|e| !e.source) {
            let j = usize::from(e.hop);
            let k = usize::from(layout.hop_of[j]);
            let ia = ases[k];
            let md = &e.metadata;
            let (ing, eg) = (slot_value(md, slots.ingress), slot_value(md, slots.egress));
            let node = md.node_id;
            walk.step_as_hop(obs, &self.topo, &mut learned, (e, k, ases, ing, node));
            walk.note_timestamps(k, ing, eg);
            if let Some(n) = node
                && !self.topo.has_router(ia, n)
            {
                learned.push(Learned::Router(ia, n));
            }
            walk.router_values(obs, &slots, e, ia, (ing, eg));
            let eif = md.egress_if.filter(|&x| x != 0);
            walk.link_values(obs, &slots, e, ia, eif);
            walk.add_path_shares(&slots, e);
            walk.prev = Some(PrevEntry {
                k,
                node,
                eif,
                eg,
                left_as: e.egress,
            });
        }
        walk.close(obs, src_ts);
        self.entries = entries;
        self.record_report(path, first, learned);
    }

    /// Phase "record": the slot hints of the report's values (memoised per path), the
    /// report's range of the observation buffer, and what it taught about the topology.
    fn record_report(&mut self, path: u64, first: usize, learned: Vec<Learned>) {
        let end = self.obs.len();
        let memo = self.path_slots.get(&path).map_or(&[][..], Vec::as_slice);
        self.hints
            .extend((0..end - first).map(|i| memo.get(i).copied().unwrap_or(NO_SLOT)));
        self.report_obs.push((path, first as u32, end as u32));
        for l in learned {
            self.learn(l);
        }
    }
}

/// Phase "options": the report's main option and stack rebuilt into the reused buffer `hbh`
/// as one hop-by-hop extension (as `idint_report::idint_hbh`) and located as ID-INT.
#[inline]
fn rebuild_options<'b>(
    hbh: &'b mut Vec<u8>,
    m: &[u8],
    s: &[u8],
) -> Result<IdInt<&'b mut [u8]>, Reject> {
    let total = 2 + m.len() + s.len();
    if m.len() % 4 != 2 || !s.len().is_multiple_of(4) || total > idint_wire::ext::MAX_LEN {
        return Err(reject(
            RejectReason::MalformedOptions,
            "option lengths are not a main option and stack",
        ));
    }
    hbh.clear();
    hbh.push(0);
    hbh.push((total / 4 - 1) as u8);
    hbh.extend_from_slice(m);
    hbh.extend_from_slice(s);
    match IdInt::locate(&mut hbh[..]) {
        Ok(Some(v)) if v.main_offset() == 2 && v.stack_range().end == total => Ok(v),
        Ok(_) => Err(reject(
            RejectReason::MalformedOptions,
            "not an ID-INT main option and stack",
        )),
        Err(e) => Err(reject(
            RejectReason::MalformedOptions,
            format!("ID-INT options: {e}"),
        )),
    }
}

/// Phase "verifier": only reports this collector (the key resolver's AS and host) is the
/// verifier of are taken.
#[inline]
fn check_verifier(
    keys: &KeyResolver,
    verifier: Verifier,
    (src, src_host): (IsdAsn, HostAddr),
    (dst, dst_host): (IsdAsn, Option<(u32, &[u8])>),
) -> Result<(), Reject> {
    let (lia, lhost) = (keys.local_ia(), keys.host());
    let ours = match verifier {
        Verifier::ThirdParty { ia, host } => ia == lia && host == lhost,
        Verifier::Destination => dst == lia && host_of(dst_host)? == lhost,
        Verifier::Source => src == lia && src_host == lhost,
    };
    if !ours {
        return Err(reject(
            RejectReason::NotVerifier,
            format!("verifier is {verifier:?}, not {lia} {lhost}"),
        ));
    }
    Ok(())
}

/// Phase "freshness": the report's full source timestamp, if it is fresh, not a replay and
/// not older than the replay memory (nothing is recorded yet).
#[inline]
fn check_fresh(
    replay: &ReplayFilter,
    who: Source,
    ts48: u64,
    port: u16,
    now_ns: u64,
) -> Result<u64, Reject> {
    let full_ts = replay
        .check(who, ts48, port, now_ns)
        .map_err(replay_reject)?;
    if replay.predates_memory(full_ts) {
        return Err(reject(
            RejectReason::PredatesReplayMemory,
            format!(
                "source timestamp {full_ts} ns precedes this collector's replay memory \
                 (it may have been accepted before a restart)"
            ),
        ));
    }
    Ok(full_ts)
}

/// Paths the collector learns from reports at most (imported ones do not count).
pub const MAX_LEARNED_PATHS: usize = 16_384;

/// Whether every AS hop of `layout` has a verified router entry among `entries` (a source
/// entry alone proves nothing about the ASes a path crosses).
fn every_as_hop_verified(entries: &[DecodedEntry], layout: &HopLayout) -> bool {
    let mut seen = [false; MAX_HOPS];
    for e in entries.iter().filter(|e| !e.source) {
        if let Some(&k) = layout.hop_of.get(usize::from(e.hop))
            && usize::from(e.hop) < layout.hop_fields
        {
            seen[usize::from(k)] = true;
        }
    }
    seen[..layout.as_hops].iter().all(|&s| s)
}

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

/// Phase "mapping": the report's hops to ASes — the path id, the AS per AS hop and whether
/// the path was walked over imported interfaces, or unknown.
#[inline]
fn map_hops(
    topo: &Topology,
    src: IsdAsn,
    dst: IsdAsn,
    layout: &HopLayout,
) -> Result<Mapped, Reject> {
    let (id, ases, walked) = match topo.map(src, dst, layout) {
        Mapping::Known { id, ases } => (id, ases, false),
        Mapping::Walked { id, ases } => (id, ases, true),
        Mapping::Unknown { id } => return Ok(Mapped::Unknown { id }),
    };
    // One AS per AS hop, or the per-hop lookups below would read past the path.
    if ases.len() != layout.as_hops {
        return Err(reject(
            RejectReason::BadPath,
            format!(
                "path {id:016x} has {} AS hops, the report's path {}",
                ases.len(),
                layout.as_hops
            ),
        ));
    }
    Ok(Mapped::Path { id, ases, walked })
}

/// Verifies the source entry alone (the hop entries of a path that maps to no ASes cannot
/// be: their keys are unknown).
fn verify_source_entry(idint: &mut IdInt<&mut [u8]>, source_key: &Aes128Enc) -> Result<(), Reject> {
    match verify_stack_with(idint, source_key, |_, _| None, |_, _| {}) {
        Ok(_) | Err(VerifyError::MissingKey { index: 1.. }) => Ok(()),
        Err(e) => Err(verify_reject(e)),
    }
}

/// A key error as the report's verdict: waiting if the key is being fetched.
fn key_reject(reason: RejectReason, e: KeyError, detail: String) -> Reject {
    match e {
        KeyError::Pending(_) => wait_for_keys(reason, format!("{detail}: fetch did not complete")),
        _ => reject(reason, detail),
    }
}

/// Phase "keys": the source's key and the path's hop keys of the epoch holding `time_s`,
/// fetched into the resolver's caches if needed.
#[inline]
fn resolve_keys<'k>(
    keys: &'k mut KeyResolver,
    (source, src, src_host): (u64, IsdAsn, HostAddr),
    (path_id, ases): (u64, &[IsdAsn]),
    time_s: u64,
) -> Result<(&'k Aes128Enc, &'k [Aes128Enc]), Reject> {
    keys.source_key(source, src, src_host, time_s)
        .map_err(|e| {
            let detail = format!("{src} {src_host}: {e:?}");
            key_reject(RejectReason::NoSourceKey, e, detail)
        })?;
    keys.path_keys(path_id, ases, time_s).map_err(|e| {
        let detail = format!("{e:?}");
        key_reject(RejectReason::NoHopKey, e, detail)
    })?;
    keys.cached(source, path_id)
        .ok_or_else(|| reject(RejectReason::NoHopKey, "keys not cached"))
}

/// Phase "MACs": verifies (and decrypts) the stack with these keys; entries are decoded into
/// `entries` as they verify (one walk of the stack). The first decoding error is returned
/// beside the verification result: it is reported only after the MACs, the instructions and
/// the replay record.
#[inline]
fn verify_and_decode(
    idint: &mut IdInt<&mut [u8]>,
    (source_key, hop_keys): (&Aes128Enc, &[Aes128Enc]),
    layout: &HopLayout,
    instructions: &[idint_wire::idint::Instruction; 4],
    entries: &mut Vec<DecodedEntry>,
) -> (Result<usize, VerifyError>, Option<DecodeError>) {
    let (hop_of, nhf) = (&layout.hop_of, layout.hop_fields);
    entries.clear();
    let mut decode_error = None;
    let verified = verify_stack_with(
        idint,
        source_key,
        |_, e| {
            let j = usize::from(e.hop());
            (j < nhf)
                .then(|| hop_keys.get(usize::from(hop_of[j])))
                .flatten()
        },
        |index, e| {
            if decode_error.is_none() {
                match decode_entry(index, e, instructions) {
                    Ok(d) => entries.push(d),
                    Err(err) => decode_error = Some(err),
                }
            }
        },
    );
    (verified, decode_error)
}

/// The time of a report: the sink's receive time if it lies within the replay window of
/// the collector's clock (`now - window ..= now + skew`), else (absent, or off: it is not
/// covered by any MAC) the collector's own clock. A receive time far ahead would otherwise
/// pin the current values until then and pick another key epoch.
fn report_time((window, skew): (u64, u64), receive_ns: u64, now_ns: u64) -> u64 {
    let plausible = receive_ns != 0
        && receive_ns <= now_ns.saturating_add(skew)
        && receive_ns >= now_ns.saturating_sub(window);
    if plausible { receive_ns } else { now_ns }
}

fn record_reject(e: RecordError) -> Reject {
    match e {
        RecordError::Replay(e) => replay_reject(e),
        RecordError::SourceQuota => reject(
            RejectReason::SourceQuota,
            "the source holds its whole share of the replay memory",
        ),
    }
}

fn replay_reject(e: ReplayError) -> Reject {
    let reason = match e {
        ReplayError::Stale { .. } => RejectReason::Stale,
        ReplayError::Future { .. } => RejectReason::Future,
        ReplayError::Replayed => RejectReason::Replayed,
        ReplayError::Full => RejectReason::ReplayFull,
    };
    reject(reason, e.to_string())
}

fn verify_reject(e: VerifyError) -> Reject {
    let reason = match e {
        VerifyError::Malformed(_) => RejectReason::MalformedStack,
        VerifyError::NoSourceEntry => RejectReason::NoSourceEntry,
        VerifyError::MissingKey { .. } => RejectReason::HopOutsidePath,
        VerifyError::BadMac { index: 0 } => RejectReason::BadSourceMac,
        VerifyError::BadMac { .. } => RejectReason::BadMac,
    };
    reject(reason, e.to_string())
}

fn decode_reject(e: DecodeError) -> Reject {
    let reason = match e {
        DecodeError::UnknownInstruction { .. } => RejectReason::UnknownInstruction,
        _ => RejectReason::MalformedEntry,
    };
    reject(reason, e.to_string())
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
