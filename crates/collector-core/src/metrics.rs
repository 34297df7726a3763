//! Metrics and event detection in the INTCollector model: a metric key is (scope ids,
//! measurement); the latest value of every key lives in memory, and a value is written to the
//! time-series store only when the key is new, when it moved beyond the measurement's
//! threshold since the last written value, or when the periodic refresh is due.

use std::collections::VecDeque;
use std::sync::RwLock;

use idint_wire::IsdAsn;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// What a metric describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One AS hop of one path: ids (path id, AS hop index).
    Hop,
    /// A border router: ids (ISD-AS, node id).
    Router,
    /// An interface's link (egress side): ids (ISD-AS, interface id).
    Link,
    /// An egress queue of a router: ids (ISD-AS, node id, interface id).
    Queue,
    /// A path: ids (path id).
    Path,
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measurement {
    /// Latency in ns: per hop / router (egress − ingress timestamp), per link (next AS's
    /// ingress − this AS's egress), per path (last ingress − source timestamp).
    LatencyNs,
    /// Link utilisation in kbit/s (per path: the bottleneck, the maximum).
    UtilisationKbps,
    /// Instantaneous queue length in packets (per path: the maximum).
    QueueLen,
    /// Forwarding energy per packet in nJ (per path: the sum).
    EnergyNj,
    /// CO2 per packet in pg (per path: the sum).
    Co2Pg,
}

impl Measurement {
    /// Every measurement.
    pub const ALL: [Measurement; 5] = [
        Measurement::LatencyNs,
        Measurement::UtilisationKbps,
        Measurement::QueueLen,
        Measurement::EnergyNj,
        Measurement::Co2Pg,
    ];

    /// Name (as in JSON, the configuration and the time-series store).
    pub fn name(self) -> &'static str {
        match self {
            Measurement::LatencyNs => "latency_ns",
            Measurement::UtilisationKbps => "utilisation_kbps",
            Measurement::QueueLen => "queue_len",
            Measurement::EnergyNj => "energy_nj",
            Measurement::Co2Pg => "co2_pg",
        }
    }

    /// Parses a name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// A metric key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct MetricKey {
    /// Scope.
    pub scope: Scope,
    /// Ids (meaning per scope; unused ones 0).
    pub ids: [u64; 3],
    /// Measurement.
    pub measurement: Measurement,
}

/// Two words per key instead of six: the second and third id (a node id or hop index up to
/// 32 bits, an interface id of 16 bits), scope and measurement packed into one (keys that
/// differ only in bits packed away still hash apart often enough; equality decides).
impl std::hash::Hash for MetricKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let [a, b, c] = self.ids;
        h.write_u64(a);
        h.write_u64(
            b ^ (c << 32) ^ ((self.scope as u64) << 48) ^ ((self.measurement as u64) << 56),
        );
    }
}

impl MetricKey {
    /// Per-hop metric.
    pub fn hop(path: u64, hop: usize, m: Measurement) -> Self {
        Self::new(Scope::Hop, [path, hop as u64, 0], m)
    }
    /// Router metric.
    pub fn router(ia: IsdAsn, node: u32, m: Measurement) -> Self {
        Self::new(Scope::Router, [ia.to_u64(), u64::from(node), 0], m)
    }
    /// Link metric.
    pub fn link(ia: IsdAsn, ifid: u16, m: Measurement) -> Self {
        Self::new(Scope::Link, [ia.to_u64(), u64::from(ifid), 0], m)
    }
    /// Queue metric.
    pub fn queue(ia: IsdAsn, node: u32, ifid: u16) -> Self {
        Self::new(
            Scope::Queue,
            [ia.to_u64(), u64::from(node), u64::from(ifid)],
            Measurement::QueueLen,
        )
    }
    /// Path metric.
    pub fn path(id: u64, m: Measurement) -> Self {
        Self::new(Scope::Path, [id, 0, 0], m)
    }
    const fn new(scope: Scope, ids: [u64; 3], measurement: Measurement) -> Self {
        MetricKey {
            scope,
            ids,
            measurement,
        }
    }

    /// Tags naming the key (for JSON and the time-series store), e.g.
    /// `[("ia", "1-ff00:0:a"), ("node", "3")]`, sorted by tag name (as the line protocol
    /// wants them).
    pub fn tags(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::with_capacity(3);
        self.for_each_tag(|k, v| out.push((k, v.to_string())));
        out
    }

    /// Calls `f` with each tag of [`Self::tags`], in the same order, its value still to be
    /// formatted (so a writer can render it without an allocation).
    pub fn for_each_tag(&self, mut f: impl FnMut(&'static str, &dyn std::fmt::Display)) {
        let [a, b, c] = self.ids;
        let ia = IsdAsn::from_u64(a);
        match self.scope {
            Scope::Hop => {
                f("hop", &b);
                f("path", &format_args!("{a:016x}"));
            }
            Scope::Router => {
                f("ia", &ia);
                f("node", &b);
            }
            Scope::Link => {
                f("ia", &ia);
                f("ifid", &b);
            }
            Scope::Queue => {
                f("ia", &ia);
                f("ifid", &c);
                f("node", &b);
            }
            Scope::Path => f("path", &format_args!("{a:016x}")),
        }
    }
}

/// One value to write to the time-series store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The key.
    pub key: MetricKey,
    /// The value.
    pub value: f64,
    /// Measurement time (the report's receive time), Unix ns.
    pub time_ns: u64,
}

/// Why points could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkFull(pub String);

/// Where written points go (the time-series store, batched and retried there). Must not
/// block the pipeline: a sink that cannot take points says so and they are counted.
pub trait PointSink: Send + Sync {
    /// Takes a batch of points.
    fn write(&self, points: &[Point]) -> Result<(), SinkFull>;
    /// Writes out whatever is buffered (at shutdown); returns when done.
    fn flush(&self) {}
    /// Appends the sink's own state to a Prometheus text exposition.
    fn prometheus(&self, _out: &mut String) {}
}

/// A range query against the time-series store: one measurement of one scope, tags that
/// must match exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryQuery {
    /// Scope (the store's measurement).
    pub scope: Scope,
    /// Measurement (the store's field).
    pub measurement: Measurement,
    /// Tags that must match (as [`MetricKey::tags`] writes them).
    pub tags: Vec<(String, String)>,
    /// Start, Unix ns.
    pub from_ns: u64,
    /// End, Unix ns.
    pub to_ns: u64,
    /// Step, ns (0: raw values).
    pub step_ns: u64,
    /// `avg`, `min`, `max` or `last`.
    pub agg: String,
}

/// One series of a history answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistorySeries {
    /// Its tags.
    pub tags: std::collections::BTreeMap<String, String>,
    /// (Unix ns, value) in time order.
    pub points: Vec<(u64, f64)>,
}

/// The boxed answer of a [`HistoryStore`].
pub type HistoryFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<HistorySeries>, String>> + Send + 'a>,
>;

/// Where history queries go (the time-series store).
pub trait HistoryStore: Send + Sync {
    /// Series matching the query.
    fn query(&self, q: HistoryQuery) -> HistoryFuture<'_>;
}

/// Thresholds and refresh period of the event detection.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DetectionConfig {
    /// Absolute change of a latency that is an event, ns.
    pub latency_ns: f64,
    /// Absolute change of a utilisation, kbit/s.
    pub utilisation_kbps: f64,
    /// Absolute change of a queue length, packets.
    pub queue_len: f64,
    /// Absolute change of energy, nJ.
    pub energy_nj: f64,
    /// Absolute change of CO2, pg.
    pub co2_pg: f64,
    /// Every key is written at least this often while it gets values, ms.
    pub refresh_ms: u64,
    /// Written values kept in memory per key (recent history).
    pub history: usize,
}

impl Default for DetectionConfig {
    fn default() -> Self {
        DetectionConfig {
            latency_ns: 10_000.0,
            utilisation_kbps: 100.0,
            queue_len: 1.0,
            energy_nj: 0.0,
            co2_pg: 0.0,
            refresh_ms: 10_000,
            history: 256,
        }
    }
}

impl DetectionConfig {
    /// The threshold of a measurement.
    pub fn threshold(&self, m: Measurement) -> f64 {
        match m {
            Measurement::LatencyNs => self.latency_ns,
            Measurement::UtilisationKbps => self.utilisation_kbps,
            Measurement::QueueLen => self.queue_len,
            Measurement::EnergyNj => self.energy_nj,
            Measurement::Co2Pg => self.co2_pg,
        }
    }
}

/// The state of one key.
#[derive(Debug, Clone, Serialize)]
pub struct Latest {
    /// Latest value.
    pub value: f64,
    /// When it was measured, Unix ns.
    pub time_ns: u64,
    /// Values seen.
    pub samples: u64,
    /// Last value written.
    pub written_value: f64,
    /// When it was written (measurement time), Unix ns.
    pub written_ns: u64,
    /// Written values (time, value), oldest first, bounded.
    #[serde(skip)]
    pub history: VecDeque<(u64, f64)>,
    /// The largest value of each stretch between two written values (time, value), oldest
    /// first, bounded like `history`: event detection leaves values within the threshold
    /// unwritten, but an upper-bound objective (`/api/v1/sla`) must still see them.
    #[serde(skip)]
    pub peaks: VecDeque<(u64, f64)>,
    /// The largest value seen since the last written one, if any.
    #[serde(skip)]
    pub pending_peak: Option<(u64, f64)>,
    /// The latest measurement time of a value no longer kept (dropped from `history` or
    /// `peaks` by their bound, or never kept with `history` 0): what memory holds covers
    /// only the time after it.
    #[serde(skip)]
    pub forgotten_ns: Option<u64>,
}

impl Latest {
    /// Records that the value measured at `t` is no longer kept.
    fn forget(&mut self, t: u64) {
        self.forgotten_ns = Some(self.forgotten_ns.map_or(t, |f| f.max(t)));
    }

    /// Every value kept that lies at or after `from_ns`: written ones and the peaks between
    /// them, in time order.
    pub fn kept_since(&self, from_ns: u64) -> Vec<(u64, f64)> {
        let mut v: Vec<(u64, f64)> = self
            .history
            .iter()
            .chain(&self.peaks)
            .chain(&self.pending_peak)
            .filter(|(t, _)| *t >= from_ns)
            .copied()
            .collect();
        v.sort_by_key(|p| p.0);
        v
    }
}

/// A page of [`MetricStore::select_page`]: the projected items and how many keys matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Selected<T> {
    /// The page's items, in key order.
    pub items: Vec<T>,
    /// Keys matching the filter in all (the page may hold fewer).
    pub total: usize,
}

impl<T> Default for Selected<T> {
    fn default() -> Self {
        Selected {
            items: Vec::new(),
            total: 0,
        }
    }
}

/// The latest values of every key, shared by the pipeline (one write lock per batch) and the
/// API (read lock).
///
/// Keys are never removed, so each keeps the slot it got when first seen; pipelines remember
/// the slots of a path's metrics ([`Self::apply_hinted`]) and skip the hash lookup while the
/// hint is right.
#[derive(Default)]
pub struct MetricStore {
    table: RwLock<Table>,
}

#[derive(Default)]
struct Table {
    index: FxHashMap<MetricKey, u32>,
    keys: Vec<MetricKey>,
    latest: Vec<Latest>,
}

/// A slot hint that names no slot.
pub const NO_SLOT: u32 = u32::MAX;

impl MetricStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a batch of observations; appends the values to write to `out`.
    pub fn apply(&self, cfg: &DetectionConfig, obs: &[Point], out: &mut Vec<Point>) {
        self.apply_with(cfg, obs, None, out);
    }

    /// [`Self::apply`] with a slot hint per observation (`hints[i]` for `obs[i]`; [`NO_SLOT`]
    /// or any wrong slot is looked up as usual). Each hint is replaced by the key's actual
    /// slot. Returns whether any hint was wrong.
    pub fn apply_hinted(
        &self,
        cfg: &DetectionConfig,
        obs: &[Point],
        hints: &mut [u32],
        out: &mut Vec<Point>,
    ) -> bool {
        self.apply_with(cfg, obs, Some(hints), out)
    }

    fn apply_with(
        &self,
        cfg: &DetectionConfig,
        obs: &[Point],
        mut hints: Option<&mut [u32]>,
        out: &mut Vec<Point>,
    ) -> bool {
        let Ok(mut guard) = self.table.write() else {
            return true;
        };
        let t = &mut *guard;
        let refresh = cfg.refresh_ms.saturating_mul(1_000_000);
        let mut missed = false;
        for (i, p) in obs.iter().enumerate() {
            let hint = hints.as_deref().and_then(|h| h.get(i)).copied();
            let hinted = hint
                .map(|h| h as usize)
                .filter(|&h| t.keys.get(h) == Some(&p.key));
            let found = hinted.or_else(|| {
                missed = true;
                t.index.get(&p.key).map(|&s| s as usize)
            });
            let (slot, write) = match found {
                None => {
                    let slot = t.keys.len();
                    let mut history = VecDeque::with_capacity(cfg.history.min(16));
                    if cfg.history > 0 {
                        history.push_back((p.time_ns, p.value));
                    }
                    t.index.insert(p.key, slot as u32);
                    t.keys.push(p.key);
                    t.latest.push(Latest {
                        value: p.value,
                        time_ns: p.time_ns,
                        samples: 1,
                        written_value: p.value,
                        written_ns: p.time_ns,
                        history,
                        peaks: VecDeque::new(),
                        pending_peak: None,
                        forgotten_ns: (cfg.history == 0).then_some(p.time_ns),
                    });
                    (slot, true)
                }
                Some(slot) => {
                    let l = &mut t.latest[slot];
                    l.samples += 1;
                    if p.time_ns >= l.time_ns {
                        l.value = p.value;
                        l.time_ns = p.time_ns;
                    }
                    let changed =
                        (p.value - l.written_value).abs() > cfg.threshold(p.key.measurement);
                    let due = p.time_ns.saturating_sub(l.written_ns) >= refresh;
                    if changed || due {
                        l.written_value = p.value;
                        l.written_ns = p.time_ns;
                        if cfg.history > 0 {
                            if l.history.len() >= cfg.history
                                && let Some((t, _)) = l.history.pop_front()
                            {
                                l.forget(t);
                            }
                            l.history.push_back((p.time_ns, p.value));
                            if let Some(peak) = l.pending_peak.take() {
                                if l.peaks.len() >= cfg.history
                                    && let Some((t, _)) = l.peaks.pop_front()
                                {
                                    l.forget(t);
                                }
                                l.peaks.push_back(peak);
                            }
                        }
                    } else if cfg.history > 0 && l.pending_peak.is_none_or(|(_, v)| p.value > v) {
                        l.pending_peak = Some((p.time_ns, p.value));
                    }
                    if cfg.history == 0 {
                        l.forget(p.time_ns);
                    }
                    (slot, changed || due)
                }
            };
            if let Some(h) = hints.as_deref_mut().and_then(|h| h.get_mut(i)) {
                *h = slot as u32;
            }
            if write {
                out.push(*p);
            }
        }
        missed
    }

    /// The current state of a key.
    pub fn get(&self, key: &MetricKey) -> Option<Latest> {
        let t = self.table.read().ok()?;
        let &slot = t.index.get(key)?;
        t.latest.get(slot as usize).cloned()
    }

    /// `project` of the current state of a key, under the read lock (copying only what
    /// `project` takes, not the key's history as [`Self::get`] does).
    pub fn get_with<T>(&self, key: &MetricKey, project: impl FnOnce(&Latest) -> T) -> Option<T> {
        let t = self.table.read().ok()?;
        let &slot = t.index.get(key)?;
        t.latest.get(slot as usize).map(project)
    }

    /// Page `offset..offset + limit` of the keys matching `f` in key order, each projected by
    /// `project`, and how many keys match in all.
    ///
    /// Made for readers an outsider drives (the API): the read lock is held twice, briefly,
    /// first to find the matching keys (no state is copied), then to project only the page's
    /// keys, so that neither the lock nor the copying grows with the whole store and
    /// `project` can copy no more of a key's state (its history) than it needs.
    pub fn select_page<T>(
        &self,
        f: impl Fn(&MetricKey) -> bool,
        (offset, limit): (usize, usize),
        mut project: impl FnMut(&MetricKey, &Latest) -> T,
    ) -> Selected<T> {
        let mut slots: Vec<(MetricKey, u32)> = match self.table.read() {
            Ok(t) => (0u32..)
                .zip(&t.keys)
                .filter(|(_, k)| f(k))
                .map(|(slot, k)| (*k, slot))
                .collect(),
            Err(_) => return Selected::default(),
        };
        let total = slots.len();
        let page_end = offset.saturating_add(limit).min(total);
        if offset >= page_end {
            return Selected {
                items: Vec::new(),
                total,
            };
        }
        // Only the page is ordered fully; keys keep their slots for good (never removed).
        if page_end < total {
            slots.select_nth_unstable_by_key(page_end, |(k, _)| *k);
            slots.truncate(page_end);
        }
        slots.sort_unstable_by_key(|(k, _)| *k);
        let Ok(t) = self.table.read() else {
            return Selected::default();
        };
        let items = slots[offset..]
            .iter()
            .filter_map(|&(k, slot)| t.latest.get(slot as usize).map(|l| project(&k, l)))
            .collect();
        Selected { items, total }
    }

    /// Every key matching `f`, with its whole state (sorted by key). Copies every matching
    /// key's history under the read lock: for a bounded or internal set of keys only (use
    /// [`Self::select_page`] for what an outsider asks for).
    pub fn select(&self, f: impl Fn(&MetricKey) -> bool) -> Vec<(MetricKey, Latest)> {
        let Ok(t) = self.table.read() else {
            return Vec::new();
        };
        let mut v: Vec<_> = t
            .keys
            .iter()
            .zip(&t.latest)
            .filter(|(k, _)| f(k))
            .map(|(k, l)| (*k, l.clone()))
            .collect();
        v.sort_by_key(|(k, _)| *k);
        v
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.table.read().map(|t| t.keys.len()).unwrap_or(0)
    }

    /// Whether there is no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn keys_differing_in_any_field_hash_apart() {
        let h = |k: MetricKey| rustc_hash::FxBuildHasher.hash_one(k);
        let ia: IsdAsn = "1-ff00:0:a".parse().unwrap();
        let base = MetricKey::queue(ia, 3, 7);
        assert_eq!(h(base), h(MetricKey::queue(ia, 3, 7)));
        for other in [
            MetricKey::queue("1-ff00:0:b".parse().unwrap(), 3, 7),
            MetricKey::queue(ia, 4, 7),
            MetricKey::queue(ia, 3, 8),
            MetricKey::router(ia, 3, Measurement::QueueLen),
            MetricKey::link(ia, 3, Measurement::QueueLen),
        ] {
            assert_ne!(h(base), h(other), "{other:?}");
        }
        let r = MetricKey::router(ia, 3, Measurement::LatencyNs);
        assert_ne!(h(r), h(MetricKey::router(ia, 3, Measurement::EnergyNj)));
    }

    #[test]
    fn hinted_apply_equals_plain_apply_and_corrects_hints() {
        let cfg = DetectionConfig {
            latency_ns: 5.0,
            ..DetectionConfig::default()
        };
        let ia: IsdAsn = "1-ff00:0:a".parse().unwrap();
        let keys: Vec<MetricKey> = (0..6)
            .map(|n| MetricKey::router(ia, n, Measurement::LatencyNs))
            .collect();
        let batch = |round: u64| -> Vec<Point> {
            keys.iter()
                .enumerate()
                .map(|(i, &key)| Point {
                    key,
                    value: (round * 7 + i as u64 * 3) as f64,
                    time_ns: round,
                })
                .collect()
        };
        let (plain, hinted) = (MetricStore::new(), MetricStore::new());
        let mut hints = vec![NO_SLOT; keys.len()];
        for round in 0..5 {
            let obs = batch(round);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            plain.apply(&cfg, &obs, &mut a);
            if round == 3 {
                // Wrong hints (another key's slot, out of range) are looked up, not trusted.
                hints.swap(0, 1);
                hints[2] = 1000;
            }
            let missed = hinted.apply_hinted(&cfg, &obs, &mut hints, &mut b);
            assert_eq!(a, b, "round {round}");
            assert_eq!(missed, round == 0 || round == 3, "round {round}");
            for (k, &h) in keys.iter().zip(&hints) {
                assert_eq!(hinted.get(k).map(|l| l.samples), Some(round + 1));
                assert_eq!(hinted.select(|x| x == k).len(), 1);
                assert!((h as usize) < keys.len());
            }
        }
        assert_eq!(hinted.len(), keys.len());
        let mut sorted = hints.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len(), "one slot per key");
    }

    #[test]
    fn written_when_new_when_beyond_threshold_and_on_refresh() {
        let cfg = DetectionConfig {
            latency_ns: 100.0,
            refresh_ms: 1000,
            ..DetectionConfig::default()
        };
        let s = MetricStore::new();
        let k = MetricKey::router("1-ff00:0:a".parse().unwrap(), 1, Measurement::LatencyNs);
        let p = |v: f64, t: u64| Point {
            key: k,
            value: v,
            time_ns: t,
        };
        let mut out = Vec::new();
        s.apply(&cfg, &[p(1000.0, 1)], &mut out);
        assert_eq!(out.len(), 1, "new key");
        s.apply(&cfg, &[p(1050.0, 2), p(1100.0, 3)], &mut out);
        assert_eq!(out.len(), 1, "within threshold of the written value");
        s.apply(&cfg, &[p(1101.0, 4)], &mut out);
        assert_eq!(out.len(), 2, "beyond the threshold");
        s.apply(&cfg, &[p(1101.0, 4 + 1_000_000_000)], &mut out);
        assert_eq!(out.len(), 3, "refresh");
        let l = s.get(&k).unwrap();
        assert_eq!((l.value, l.samples, l.history.len()), (1101.0, 5, 3));
    }

    #[test]
    fn pages_hold_the_keys_in_order_and_the_total_of_all() {
        let s = MetricStore::new();
        let ia: IsdAsn = "1-ff00:0:a".parse().unwrap();
        // Inserted in reverse key order: the page order is the key order anyway.
        let obs: Vec<Point> = (0..50u32)
            .rev()
            .map(|n| Point {
                key: MetricKey::router(ia, n, Measurement::LatencyNs),
                value: f64::from(n),
                time_ns: 1,
            })
            .collect();
        s.apply(&DetectionConfig::default(), &obs, &mut Vec::new());
        let value = |_: &MetricKey, l: &Latest| l.value;
        let page = s.select_page(|_| true, (10, 5), value);
        assert_eq!(page.total, 50);
        assert_eq!(page.items, vec![10.0, 11.0, 12.0, 13.0, 14.0]);
        let tail = s.select_page(|k| k.ids[1] % 2 == 0, (20, 10), value);
        assert_eq!(
            (tail.total, tail.items),
            (25, vec![40.0, 42.0, 44.0, 46.0, 48.0])
        );
        let past = s.select_page(|_| true, (50, 10), value);
        assert_eq!((past.total, past.items.len()), (50, 0));
        let all = s.select_page(|_| true, (0, usize::MAX), |k, _| *k);
        assert_eq!(
            all.items,
            s.select(|_| true)
                .into_iter()
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        );
    }
}
