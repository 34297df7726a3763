//! Phase "measure": verified, decoded entries turned into metric values and topology facts.

use super::*;

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
    pub(super) fn of(
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
    pub(super) fn last(&self, s: Option<usize>) -> bool {
        s.is_some_and(|s| self.functions[s] == AggregationFunction::Last)
    }

    /// Whether slot `s` was aggregated with "sum".
    #[inline]
    pub(super) fn summed(&self, s: Option<usize>) -> bool {
        s.is_some_and(|s| self.functions[s] == AggregationFunction::Sum)
    }
}

/// The value of slot `s` of an entry, if the entry has it.
#[inline]
pub(super) fn slot_value(md: &idint_wire::idint::Metadata, s: Option<usize>) -> Option<u64> {
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
    pub(super) fn new(path: u64, time_ns: u64) -> Self {
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
    pub(super) fn push(&self, obs: &mut Vec<Point>, key: MetricKey, value: f64) {
        obs.push(Point {
            key,
            value,
            time_ns: self.time_ns,
        })
    }

    /// Phase "AS hop": entering AS hop `k` closes the previous one (its hop latency, and the
    /// latency of the link between them); another router of the same AS is an internal link.
    #[inline]
    pub(super) fn step_as_hop(
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
    pub(super) fn close_as_hop(&mut self, obs: &mut Vec<Point>) {
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
    pub(super) fn note_timestamps(&mut self, k: usize, ing: Option<u64>, eg: Option<u64>) {
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
    pub(super) fn router_values(
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
    pub(super) fn link_values(
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
    pub(super) fn add_path_shares(&mut self, slots: &SlotMap, e: &DecodedEntry) {
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
    pub(super) fn close(mut self, obs: &mut Vec<Point>, src_ts: u64) {
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

pub(super) const WRAP48: u64 = 1 << 48;

/// `a - b` of two 48-bit timestamps, signed (differences beyond ±2^47 wrap).
pub(super) fn diff48(a: u64, b: u64) -> i64 {
    let d = a.wrapping_sub(b) % WRAP48;
    if d >= WRAP48 / 2 {
        d as i64 - WRAP48 as i64
    } else {
        d as i64
    }
}

/// Whether every AS hop of `layout` has a verified router entry among `entries` (a source
/// entry alone proves nothing about the ASes a path crosses).
pub(super) fn every_as_hop_verified(entries: &[DecodedEntry], layout: &HopLayout) -> bool {
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

impl Pipeline {
    /// Phase "learn": a path walked over imported interfaces whose report verified becomes a
    /// learned path (applied to the topology with the batch).
    pub(super) fn learn_walked_path(
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

    /// Turns the verified, decoded entries of one report on `path` into metric values
    /// (written to the observation buffer with their slot hints) and topology facts learned
    /// on the way: hop, link, router, queue and path values.
    pub(super) fn measure(
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
    pub(super) fn record_report(&mut self, path: u64, first: usize, learned: Vec<Learned>) {
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
