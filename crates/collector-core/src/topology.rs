//! The topology the collector knows, in memory: ISD-ASes, border routers (node ids),
//! interfaces, inter-AS links, AS-internal router-to-router links and paths.
//!
//! Imported from SCION `topology.json` files and from path descriptions; learned from
//! verified reports. Readers (the pipeline workers, the API) hold an immutable
//! [`Topology`] snapshot and re-read it only when [`TopologyHandle::generation`] moves; every
//! change is also handed to the [`TopologySink`] (PostgreSQL, written behind).
//!
//! A report's hop fields map to ASes only through a known path or a walk over imported
//! interfaces (`interface -> neighbour AS`) that ends at the report's destination; anything
//! else stays unknown (recorded, never guessed).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use idint_report::v1;
use idint_wire::IsdAsn;
use serde::{Deserialize, Serialize};

/// Most hop fields a SCION path carries.
pub const MAX_HOPS: usize = 64;

/// One AS hop of a path in travel direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathHop {
    /// The AS.
    #[serde(with = "ia_str")]
    pub ia: IsdAsn,
    /// Interface the packet enters the AS by (0 at the source).
    pub ingress: u16,
    /// Interface the packet leaves the AS by (0 at the destination).
    pub egress: u16,
}

/// Where a path came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathOrigin {
    /// Imported (API or CLI).
    Imported,
    /// Walked over imported interfaces and confirmed by a report's MACs.
    Learned,
}

/// A path: its AS hops and fingerprint (its id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathInfo {
    /// Fingerprint over every hop's AS and interfaces ([`path_id`]; hex in JSON).
    #[serde(with = "hex_u64")]
    pub id: u64,
    /// Source AS.
    #[serde(with = "ia_str")]
    pub src: IsdAsn,
    /// Destination AS.
    #[serde(with = "ia_str")]
    pub dst: IsdAsn,
    /// AS hops in travel direction.
    pub hops: Vec<PathHop>,
    /// Imported or learned.
    pub origin: PathOrigin,
}

/// An interface of an AS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceInfo {
    /// Interface id.
    pub ifid: u16,
    /// Border router owning it (topology key), if known.
    pub router: Option<String>,
    /// The AS on the other side, if known.
    #[serde(with = "opt_ia_str")]
    pub neighbor_ia: Option<IsdAsn>,
    /// The interface on the other side, if known.
    pub neighbor_if: Option<u16>,
    /// Link type (`core`, `child`, `parent`, `peer`), if known.
    pub link_type: Option<String>,
}

/// A border router.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterInfo {
    /// Topology key (or `node-<id>` when learned from reports).
    pub name: String,
    /// Node id written into ID-INT entries, if known.
    pub node_id: Option<u32>,
    /// Interfaces it owns.
    pub interfaces: Vec<u16>,
}

/// An ISD-AS.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AsInfo {
    /// Core AS.
    pub core: bool,
    /// Routers by name.
    pub routers: BTreeMap<String, RouterInfo>,
    /// Interfaces by id.
    pub interfaces: BTreeMap<u16, InterfaceInfo>,
}

/// An inter-AS link (ordered so that `(a, a_if) < (b, b_if)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Link {
    /// One end's AS.
    #[serde(with = "ia_str")]
    pub a: IsdAsn,
    /// One end's interface.
    pub a_if: u16,
    /// Other end's AS.
    #[serde(with = "ia_str")]
    pub b: IsdAsn,
    /// Other end's interface.
    pub b_if: u16,
}

impl Link {
    /// The link between two interfaces, normalised.
    pub fn new(x: (IsdAsn, u16), y: (IsdAsn, u16)) -> Self {
        let (p, q) = if (x.0.to_u64(), x.1) <= (y.0.to_u64(), y.1) {
            (x, y)
        } else {
            (y, x)
        };
        Link {
            a: p.0,
            a_if: p.1,
            b: q.0,
            b_if: q.1,
        }
    }
}

/// A router-to-router link inside an AS, inferred from consecutive entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct InternalLink {
    /// The AS.
    #[serde(with = "ia_str")]
    pub ia: IsdAsn,
    /// Upstream router's node id.
    pub from_node: u32,
    /// Downstream router's node id.
    pub to_node: u32,
}

/// A path seen in reports that could not be mapped to ASes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnknownPath {
    /// Fingerprint of (source, destination, interfaces).
    #[serde(with = "hex_u64")]
    pub id: u64,
    /// Source AS.
    #[serde(with = "ia_str")]
    pub src: IsdAsn,
    /// Destination AS.
    #[serde(with = "ia_str")]
    pub dst: IsdAsn,
    /// (ingress, egress) per AS hop in travel direction.
    pub interfaces: Vec<(u16, u16)>,
    /// Reports seen on it.
    pub reports: u64,
}

/// One change, as handed to the [`TopologySink`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TopologyChange {
    /// An AS was added or its routers/interfaces changed (full record).
    As {
        /// The AS.
        #[serde(with = "ia_str")]
        ia: IsdAsn,
        /// Its record.
        info: AsInfo,
    },
    /// An inter-AS link.
    Link(Link),
    /// An AS-internal link.
    InternalLink(InternalLink),
    /// A path.
    Path(PathInfo),
    /// A path that could not be mapped (first sighting).
    UnknownPath(UnknownPath),
}

/// Where topology changes and quarantined reports go (PostgreSQL, written behind). Must not
/// block.
pub trait TopologySink: Send + Sync {
    /// Takes changes, all or none; an error if they cannot be persisted (a full queue).
    fn changed(&self, changes: &[TopologyChange]) -> Result<(), NotPersisted>;
    /// Takes a rejected report.
    fn quarantined(&self, _q: &crate::counters::Quarantined) {}
    /// Writes out whatever is queued (at shutdown); returns when done.
    fn flush(&self) {}
    /// Appends the sink's own state to a Prometheus text exposition.
    fn prometheus(&self, _out: &mut String) {}
}

/// An immutable topology snapshot.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    /// ASes.
    pub ases: BTreeMap<IsdAsn, AsInfo>,
    /// Inter-AS links.
    pub links: BTreeSet<Link>,
    /// AS-internal links.
    pub internal_links: BTreeSet<InternalLink>,
    /// Paths by id.
    pub paths: BTreeMap<u64, PathInfo>,
    /// Paths by id, as the hot path compares and uses them.
    shapes: rustc_hash::FxHashMap<u64, PathShape>,
    /// Path ids by interface signature (a keyed hash of what a report's path shows: source,
    /// destination and interfaces, without the ASes). Candidates only: a report is taken for
    /// a known path when its whole shape equals the path's ([`PathShape::matches`]).
    by_ifs: rustc_hash::FxHashMap<u64, Vec<u64>>,
    /// The key of the interface signatures, random per process, so that nobody outside can
    /// aim a report's signature at a known path's.
    signature_key: std::hash::RandomState,
    /// Known (ISD-AS, node id) pairs (for the hot path).
    nodes: rustc_hash::FxHashSet<(u64, u32)>,
}

/// Hop fields of a report's path mapped to AS hops: for hop field `j`, `hop_of[j]` is the AS
/// hop index.
#[derive(Debug, Clone, Copy)]
pub struct HopLayout {
    /// Number of hop fields.
    pub hop_fields: usize,
    /// AS hop index per hop field.
    pub hop_of: [u8; MAX_HOPS],
    /// Number of AS hops.
    pub as_hops: usize,
    /// (ingress, egress) per AS hop, travel direction.
    pub ifs: [(u16, u16); MAX_HOPS],
}

/// Why a report's path cannot be laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutError {
    /// The report carries no path.
    NoPath,
    /// Segment lengths and hop fields disagree, or too many hops.
    Inconsistent,
    /// An interface ID above 65535 or a segment of more than 63 hop fields: numbers that no
    /// SCION path holds (protobuf carries them in 32 bits).
    OutOfRange,
}

impl HopLayout {
    /// Lays out the report's path in travel direction, one AS hop per hop field except at
    /// segment crossings (the last hop of a segment and the first of the next are one AS).
    pub fn of(path: Option<&v1::Path>) -> Result<Self, LayoutError> {
        let p = path.ok_or(LayoutError::NoPath)?;
        if p.info_fields.len() > 3 || p.hop_fields.len() > MAX_HOPS {
            return Err(LayoutError::Inconsistent);
        }
        let cons: [bool; 3] =
            std::array::from_fn(|i| p.info_fields.get(i).is_some_and(|f| f.cons_dir));
        let mut hops = [(0u32, 0u32); MAX_HOPS];
        for (h, f) in hops.iter_mut().zip(&p.hop_fields) {
            *h = (f.cons_ingress, f.cons_egress);
        }
        Self::build(
            &p.seg_lens,
            &cons[..p.info_fields.len()],
            &hops[..p.hop_fields.len()],
        )
    }

    /// [`Self::of`] from the parts of a path: segment lengths, the ConsDir flag of each info
    /// field, and (ConsIngress, ConsEgress) of each hop field, as decoded.
    pub fn build(
        seg_lens: &[u32],
        cons_dir: &[bool],
        hop_fields: &[(u32, u32)],
    ) -> Result<Self, LayoutError> {
        let n: usize = seg_lens.iter().map(|&l| l as usize).sum();
        if n == 0
            || n > MAX_HOPS
            || n != hop_fields.len()
            || seg_lens.len() > 3
            || cons_dir.len() != seg_lens.len()
        {
            return Err(LayoutError::Inconsistent);
        }
        // Checked before anything is cut to its wire width: a report must not be mapped to
        // the interface its number's low bits happen to name. (After the shape checks, so that
        // both decoders, which check the shape in different places, give the same error.)
        if seg_lens.iter().any(|&l| l > 63)
            || hop_fields
                .iter()
                .any(|&(i, e)| i > u32::from(u16::MAX) || e > u32::from(u16::MAX))
        {
            return Err(LayoutError::OutOfRange);
        }
        let mut l = HopLayout {
            hop_fields: n,
            hop_of: [0; MAX_HOPS],
            as_hops: 0,
            ifs: [(0, 0); MAX_HOPS],
        };
        let mut j = 0;
        for (seg, &len) in seg_lens.iter().enumerate() {
            let cons = cons_dir[seg];
            for k in 0..len as usize {
                let (ci, ce) = (hop_fields[j].0 as u16, hop_fields[j].1 as u16);
                let (ing, eg) = if cons { (ci, ce) } else { (ce, ci) };
                // Crossing: first hop of a later segment continues the previous AS hop.
                if k == 0 && seg > 0 && l.as_hops > 0 && ing == 0 && l.ifs[l.as_hops - 1].1 == 0 {
                    l.ifs[l.as_hops - 1].1 = eg;
                } else {
                    l.ifs[l.as_hops] = (ing, eg);
                    l.as_hops += 1;
                }
                l.hop_of[j] = (l.as_hops - 1) as u8;
                j += 1;
            }
        }
        Ok(l)
    }

    /// The interface fingerprint for `src` -> `dst` over these AS hops (the id of an
    /// unmapped path; known paths are found by it).
    pub fn fingerprint(&self, src: IsdAsn, dst: IsdAsn) -> u64 {
        fingerprint(src, dst, self.ifs[..self.as_hops].iter().copied())
    }
}

/// A known path as the hot path needs it: endpoints, interfaces per AS hop (travel
/// direction) and the AS of each AS hop.
#[derive(Debug, Clone)]
struct PathShape {
    src: IsdAsn,
    dst: IsdAsn,
    ifs: Box<[(u16, u16)]>,
    ases: Arc<[IsdAsn]>,
}

impl PathShape {
    fn of(p: &PathInfo) -> Self {
        PathShape {
            src: p.src,
            dst: p.dst,
            ifs: p.hops.iter().map(|h| (h.ingress, h.egress)).collect(),
            ases: p.hops.iter().map(|h| h.ia).collect(),
        }
    }

    /// Whether a report's path from `src` to `dst` shows exactly this path: same endpoints,
    /// same number of AS hops, same interfaces at every hop.
    fn matches(&self, src: IsdAsn, dst: IsdAsn, layout: &HopLayout) -> bool {
        self.src == src && self.dst == dst && self.ifs[..] == layout.ifs[..layout.as_hops]
    }
}

fn mix(h: u64, v: u64) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let x = (h ^ v).wrapping_mul(K);
    x ^ (x >> 29)
}

/// The interface fingerprint of a path: a 64-bit mix of source, destination and (ingress,
/// egress) per hop, without the ASes in between (what a report's path shows; the id of
/// unmapped paths). Not cryptographic.
pub fn fingerprint(src: IsdAsn, dst: IsdAsn, ifs: impl Iterator<Item = (u16, u16)>) -> u64 {
    let mut h = mix(mix(0xcbf2_9ce4_8422_2325, src.to_u64()), dst.to_u64());
    for (i, e) in ifs {
        h = mix(h, (u64::from(i) << 16) | u64::from(e) | (1 << 40));
    }
    h
}

/// The id of a path: a 64-bit mix of every hop's (ISD-AS, ingress, egress) in travel
/// direction, so paths differing anywhere (middle ASes included) get different ids. Not
/// cryptographic.
pub fn path_id(hops: impl Iterator<Item = (IsdAsn, u16, u16)>) -> u64 {
    let mut h = mix(0x6a09_e667_f3bc_c908, 0);
    for (ia, i, e) in hops {
        h = mix(h, ia.to_u64());
        h = mix(h, (u64::from(i) << 16) | u64::from(e) | (1 << 40));
    }
    h
}

/// [`path_id`] of a path's hops.
pub fn path_id_of(hops: &[PathHop]) -> u64 {
    path_id(hops.iter().map(|h| (h.ia, h.ingress, h.egress)))
}

/// How a report's hops map to ASes.
#[derive(Debug, Clone)]
pub enum Mapping {
    /// A known path.
    Known {
        /// Path id.
        id: u64,
        /// AS per AS hop.
        ases: Arc<[IsdAsn]>,
    },
    /// Walked over imported interfaces; becomes a learned path once a report verifies.
    Walked {
        /// Path id.
        id: u64,
        /// AS per AS hop.
        ases: Arc<[IsdAsn]>,
    },
    /// Not mappable.
    Unknown {
        /// Path id.
        id: u64,
    },
}

impl Topology {
    /// ASes that only links and paths name (no imported topology, no router learned from a
    /// report): known to exist, nothing more.
    pub fn ases_named_only(&self) -> std::collections::BTreeSet<IsdAsn> {
        let links = self.links.iter().flat_map(|l| [l.a, l.b]);
        let paths = self
            .paths
            .values()
            .flat_map(|p| p.hops.iter().map(|h| h.ia));
        links
            .chain(paths)
            .filter(|ia| !self.ases.contains_key(ia))
            .collect()
    }

    /// Maps a laid-out path from `src` to `dst`: a known path with these interfaces (when
    /// several known paths share them, the one the imported interfaces lead along), else a
    /// walk over the imported interfaces, else unknown (id: the interface fingerprint).
    pub fn map(&self, src: IsdAsn, dst: IsdAsn, layout: &HopLayout) -> Mapping {
        let ifs = &layout.ifs[..layout.as_hops];
        let signature = self.signature(src, dst, ifs.iter().copied());
        let candidates = self.by_ifs.get(&signature).map_or(&[][..], Vec::as_slice);
        // Only paths of exactly this shape (a signature is a hash: equal ones may differ).
        let shape_of = |id: &u64| {
            self.shapes
                .get(id)
                .filter(|shape| shape.matches(src, dst, layout))
        };
        let mut known = candidates
            .iter()
            .filter_map(|id| Some((*id, shape_of(id)?)));
        if let (Some((id, shape)), None) = (known.next(), known.next()) {
            return Mapping::Known {
                id,
                ases: shape.ases.clone(),
            };
        }
        let unknown = || Mapping::Unknown {
            id: layout.fingerprint(src, dst),
        };
        let Some(ases) = self.walk(src, dst, layout) else {
            return unknown();
        };
        let id = path_id(ases.iter().zip(ifs).map(|(a, (i, e))| (*a, *i, *e)));
        match self.shapes.get(&id) {
            Some(shape) if shape.matches(src, dst, layout) && shape.ases[..] == ases[..] => {
                Mapping::Known {
                    id,
                    ases: shape.ases.clone(),
                }
            }
            Some(_) => unknown(),
            None => Mapping::Walked {
                id,
                ases: ases.into(),
            },
        }
    }

    /// The keyed interface signature of a path from `src` to `dst` over `ifs` (the index of
    /// known paths).
    fn signature(&self, src: IsdAsn, dst: IsdAsn, ifs: impl Iterator<Item = (u16, u16)>) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = self.signature_key.build_hasher();
        h.write_u64(src.to_u64());
        h.write_u64(dst.to_u64());
        let mut hops = 0;
        for (i, e) in ifs {
            h.write_u32((u32::from(i) << 16) | u32::from(e));
            hops += 1;
        }
        h.write_usize(hops);
        h.finish()
    }

    /// The ASes of a walk from `src` along the imported interfaces: every hop's egress
    /// leads to the next hop's AS (and to its ingress, where the link's far end is known),
    /// and the path starts and ends in an AS (ingress 0 at the first hop, egress 0 at the
    /// last), so that a path learned from it records no made-up interface at its ends.
    fn walk(&self, src: IsdAsn, dst: IsdAsn, layout: &HopLayout) -> Option<Vec<IsdAsn>> {
        let n = layout.as_hops;
        if n == 0 || layout.ifs[0].0 != 0 || layout.ifs[n - 1].1 != 0 {
            return None;
        }
        let mut out = Vec::with_capacity(n);
        let mut ia = src;
        for k in 0..n {
            out.push(ia);
            let (_, eg) = layout.ifs[k];
            if k + 1 == n {
                break;
            }
            let next = self.ases.get(&ia)?.interfaces.get(&eg)?;
            let nia = next.neighbor_ia?;
            // A path visits an AS once: a walk that comes back is no path.
            if out.contains(&nia) {
                return None;
            }
            if let Some(nif) = next.neighbor_if
                && nif != layout.ifs[k + 1].0
            {
                return None;
            }
            ia = nia;
        }
        (ia == dst).then_some(out)
    }

    /// Router name for a node id in an AS, if known.
    pub fn router_name(&self, ia: IsdAsn, node_id: u32) -> Option<&str> {
        self.ases.get(&ia).and_then(|a| {
            a.routers
                .values()
                .find(|r| r.node_id == Some(node_id))
                .map(|r| r.name.as_str())
        })
    }

    /// Whether a router with this node id is known.
    pub fn has_router(&self, ia: IsdAsn, node_id: u32) -> bool {
        self.nodes.contains(&(ia.to_u64(), node_id))
    }

    fn reindex(&mut self) {
        self.nodes = self
            .ases
            .iter()
            .flat_map(|(ia, a)| {
                a.routers
                    .values()
                    .filter_map(move |r| r.node_id.map(|n| (ia.to_u64(), n)))
            })
            .collect();
    }

    /// Adds a path; the first path of an id wins (hops are immutable per id, as in
    /// PostgreSQL), only its origin may change.
    fn insert_path(&mut self, p: PathInfo) -> bool {
        match self.paths.get(&p.id) {
            Some(old) if *old == p || old.hops != p.hops => return false,
            _ => {}
        }
        self.shapes.insert(p.id, PathShape::of(&p));
        let key = self.signature(p.src, p.dst, p.hops.iter().map(|h| (h.ingress, h.egress)));
        let ids = self.by_ifs.entry(key).or_default();
        if !ids.contains(&p.id) {
            ids.push(p.id);
        }
        // The links along the path.
        for w in p.hops.windows(2) {
            self.links
                .insert(Link::new((w[0].ia, w[0].egress), (w[1].ia, w[1].ingress)));
        }
        self.paths.insert(p.id, p);
        true
    }
}

/// Why an import was refused; either way nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportError {
    /// The input is refused.
    Invalid(String),
    /// The input is valid but the store could not take the changes now (its queue is
    /// full): try again later.
    NotPersisted(String),
}

impl ImportError {
    /// What went wrong, for people.
    pub fn message(&self) -> &str {
        match self {
            ImportError::Invalid(m) | ImportError::NotPersisted(m) => m,
        }
    }
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// The sink could not take changes (its queue is full): they were not persisted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPersisted(pub String);

impl std::error::Error for ImportError {}

/// A path description for import: ASes in travel order with their interfaces.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathDescription {
    /// Hops; the first's ingress and the last's egress are 0.
    pub hops: Vec<PathHop>,
}

/// Unknown paths remembered at most.
pub const UNKNOWN_PATHS_KEPT: usize = 4096;

/// Shared, versioned topology: one writer lock, lock-free generation check for readers.
pub struct TopologyHandle {
    writer: Mutex<Topology>,
    snapshot: RwLock<Arc<Topology>>,
    generation: AtomicU64,
    unknown: Mutex<BTreeMap<u64, UnknownPath>>,
    unknown_capacity: usize,
    sink: RwLock<Option<Arc<dyn TopologySink>>>,
}

impl Default for TopologyHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl TopologyHandle {
    /// An empty topology.
    pub fn new() -> Self {
        TopologyHandle {
            writer: Mutex::new(Topology::default()),
            snapshot: RwLock::new(Arc::new(Topology::default())),
            generation: AtomicU64::new(0),
            unknown: Mutex::new(BTreeMap::new()),
            unknown_capacity: UNKNOWN_PATHS_KEPT,
            sink: RwLock::new(None),
        }
    }

    /// Sets where changes are written behind.
    pub fn set_sink(&self, sink: Arc<dyn TopologySink>) {
        if let Ok(mut s) = self.sink.write() {
            *s = Some(sink);
        }
    }

    /// Changes since start; readers refresh their snapshot when it moves.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Topology> {
        self.snapshot.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// Paths that could not be mapped.
    pub fn unknown_paths(&self) -> Vec<UnknownPath> {
        self.unknown
            .lock()
            .map(|u| u.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Hands changes learned from reports to the sink; one that cannot take them counts the
    /// refusal (the facts stay known in memory and are learned again from later reports).
    fn emit(&self, changes: &[TopologyChange]) {
        if let Ok(s) = self.sink.read()
            && let Some(s) = s.as_ref()
        {
            let _ = s.changed(changes);
        }
    }

    /// Hands a rejected report to the sink.
    pub fn quarantined(&self, q: &crate::counters::Quarantined) {
        if let Ok(s) = self.sink.read()
            && let Some(s) = s.as_ref()
        {
            s.quarantined(q);
        }
    }

    /// The sink, if any.
    pub fn sink(&self) -> Option<Arc<dyn TopologySink>> {
        self.sink.read().ok().and_then(|s| s.clone())
    }

    /// Applies `f` to the topology; publishes a new snapshot and writes the changes behind if
    /// it returned any.
    pub fn update<R>(&self, f: impl FnOnce(&mut Topology, &mut Vec<TopologyChange>) -> R) -> R {
        let mut changes = Vec::new();
        let r = {
            let mut w = match self.writer.lock() {
                Ok(w) => w,
                Err(p) => p.into_inner(),
            };
            let r = f(&mut w, &mut changes);
            if !changes.is_empty() {
                w.reindex();
                let snap = Arc::new(w.clone());
                if let Ok(mut s) = self.snapshot.write() {
                    *s = snap;
                }
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
            r
        };
        self.emit(&changes);
        r
    }

    /// As [`Self::update`] for changes that must be persisted (imports): `f` works on a copy,
    /// which replaces the topology only if the sink took every change; otherwise nothing
    /// changes and the import fails with [`ImportError::NotPersisted`].
    pub fn update_persisted<R>(
        &self,
        f: impl FnOnce(&mut Topology, &mut Vec<TopologyChange>) -> Result<R, ImportError>,
    ) -> Result<R, ImportError> {
        let mut w = match self.writer.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        let mut next = w.clone();
        let mut changes = Vec::new();
        let r = f(&mut next, &mut changes)?;
        if changes.is_empty() {
            return Ok(r);
        }
        if let Some(sink) = self.sink() {
            sink.changed(&changes)
                .map_err(|e| ImportError::NotPersisted(format!("not persisted: {}", e.0)))?;
        }
        next.reindex();
        *w = next;
        let snap = Arc::new(w.clone());
        if let Ok(mut s) = self.snapshot.write() {
            *s = snap;
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(r)
    }

    /// Loads a persisted topology (for example rows read back from PostgreSQL at start) as
    /// the changes that built it; nothing is written back to the sink.
    pub fn restore<'a>(&self, changes: impl IntoIterator<Item = &'a TopologyChange>) {
        let mut w = match self.writer.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        for c in changes {
            match c {
                TopologyChange::As { ia, info } => {
                    w.ases.insert(*ia, info.clone());
                }
                TopologyChange::Link(l) => {
                    w.links.insert(*l);
                }
                TopologyChange::InternalLink(l) => {
                    w.internal_links.insert(*l);
                }
                TopologyChange::Path(p) => {
                    w.insert_path(p.clone());
                }
                TopologyChange::UnknownPath(u) => {
                    if let Ok(mut m) = self.unknown.lock()
                        && m.len() < self.unknown_capacity
                    {
                        m.insert(u.id, u.clone());
                    }
                }
            }
        }
        w.reindex();
        let snap = Arc::new(w.clone());
        if let Ok(mut s) = self.snapshot.write() {
            *s = snap;
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Imports a SCION `topology.json` (every AS it describes, all or nothing; see
    /// `scion_topology::Topology::parse` for what is refused); returns the number of changes. Routers
    /// known before and not in the file are kept, without the interfaces and node ids the
    /// file gives to others. An AS seen for the first time is a change even when empty.
    pub fn import_topology_json(&self, text: &str) -> Result<usize, ImportError> {
        let ases = parse_topology_json(text)?;
        self.update_persisted(|t, ch| {
            for (ia, info) in &ases {
                merge_as(t, ch, *ia, info);
            }
            Ok(ch.len())
        })
    }

    /// Imports a path description; returns the path.
    pub fn import_path(&self, d: &PathDescription) -> Result<PathInfo, ImportError> {
        let mut v = self.import_paths(std::slice::from_ref(d))?;
        v.pop()
            .ok_or_else(|| ImportError::Invalid("no path imported".into()))
    }

    /// Imports path descriptions, all or nothing: every one is checked before any is
    /// applied. Returns the paths, in order.
    pub fn import_paths(&self, ds: &[PathDescription]) -> Result<Vec<PathInfo>, ImportError> {
        let paths = ds
            .iter()
            .enumerate()
            .map(|(k, d)| {
                check_path(d).map_err(|e| {
                    if ds.len() == 1 {
                        e
                    } else {
                        ImportError::Invalid(format!("path {k}: {e}"))
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.update_persisted(|t, ch| {
            // Ids are 64-bit hashes: refuse (whole) an import whose id is taken by other hops.
            for (k, p) in paths.iter().enumerate() {
                if let Some(old) = t.paths.get(&p.id)
                    && old.hops != p.hops
                {
                    return Err(ImportError::Invalid(format!(
                        "path {k}: id {:016x} is taken by another path",
                        p.id
                    )));
                }
            }
            for p in &paths {
                add_path(t, ch, p.clone());
            }
            Ok(())
        })?;
        Ok(paths)
    }

    /// Records a path that could not be mapped, counting sightings; at capacity the path
    /// seen least often is forgotten. The pipeline records only paths of reports whose source
    /// entry verified.
    pub fn record_unknown(&self, src: IsdAsn, dst: IsdAsn, id: u64, layout: &HopLayout) {
        let first = {
            let Ok(mut u) = self.unknown.lock() else {
                return;
            };
            if let Some(e) = u.get_mut(&id) {
                e.reports += 1;
                None
            } else {
                if u.len() >= self.unknown_capacity {
                    // Full: the path seen least often makes room (ties: the smallest id).
                    let least = u.values().min_by_key(|e| (e.reports, e.id)).map(|e| e.id);
                    if let Some(least) = least {
                        u.remove(&least);
                    }
                }
                let e = UnknownPath {
                    id,
                    src,
                    dst,
                    interfaces: layout.ifs[..layout.as_hops].to_vec(),
                    reports: 1,
                };
                u.insert(id, e.clone());
                Some(e)
            }
        };
        if let Some(e) = first {
            self.emit(&[TopologyChange::UnknownPath(e)]);
        }
    }
}

/// Merges the AS `ia` as a topology file describes it into `t`: the file's routers and
/// interfaces replace what they name (a known router with one of the file's node ids is the
/// file's router now), other known routers stay with the interfaces the file does not claim;
/// the file's links are added.
fn merge_as(t: &mut Topology, ch: &mut Vec<TopologyChange>, ia: IsdAsn, info: &AsInfo) {
    let new = !t.ases.contains_key(&ia);
    let entry = t.ases.entry(ia).or_default();
    let mut merged = info.clone();
    let numbered: BTreeSet<u32> = info.routers.values().filter_map(|r| r.node_id).collect();
    for (name, r) in entry.routers.iter() {
        if merged.routers.contains_key(name) || r.node_id.is_some_and(|n| numbered.contains(&n)) {
            continue;
        }
        let mut r = r.clone();
        // Interfaces the file defines belong to the file's routers now.
        r.interfaces.retain(|i| !info.interfaces.contains_key(i));
        for i in &r.interfaces {
            if let Some(x) = entry.interfaces.get(i) {
                merged.interfaces.insert(*i, x.clone());
            }
        }
        merged.routers.insert(name.clone(), r);
    }
    if new || *entry != merged {
        *entry = merged.clone();
        ch.push(TopologyChange::As { ia, info: merged });
    }
    for i in info.interfaces.values() {
        if let (Some(n), Some(nif)) = (i.neighbor_ia, i.neighbor_if) {
            let l = Link::new((ia, i.ifid), (n, nif));
            if t.links.insert(l) {
                ch.push(TopologyChange::Link(l));
            }
        }
    }
}

/// Adds a path and its links; records the changes.
pub fn add_path(t: &mut Topology, ch: &mut Vec<TopologyChange>, p: PathInfo) {
    let before = t.links.clone();
    if t.insert_path(p.clone()) {
        ch.push(TopologyChange::Path(p));
        for l in t.links.difference(&before) {
            ch.push(TopologyChange::Link(*l));
        }
    }
}

/// Records a router learned from a report's node id (if not yet known).
pub fn add_router(t: &mut Topology, ch: &mut Vec<TopologyChange>, ia: IsdAsn, node_id: u32) {
    if t.has_router(ia, node_id) {
        return;
    }
    let a = t.ases.entry(ia).or_default();
    let name = format!("node-{node_id}");
    a.routers.insert(
        name.clone(),
        RouterInfo {
            name,
            node_id: Some(node_id),
            interfaces: Vec::new(),
        },
    );
    ch.push(TopologyChange::As {
        ia,
        info: a.clone(),
    });
}

/// Records an AS-internal link (if new).
pub fn add_internal_link(t: &mut Topology, ch: &mut Vec<TopologyChange>, l: InternalLink) {
    if t.internal_links.insert(l) {
        ch.push(TopologyChange::InternalLink(l));
    }
}

/// Checks a path description and makes the path of it.
fn check_path(d: &PathDescription) -> Result<PathInfo, ImportError> {
    let e = |m: String| Err(ImportError::Invalid(m));
    let (Some(first), Some(last)) = (d.hops.first(), d.hops.last()) else {
        return e("a path needs at least one hop".into());
    };
    if d.hops.len() > MAX_HOPS {
        return e(format!("more than {MAX_HOPS} hops"));
    }
    if first.ingress != 0 || last.egress != 0 {
        return e("the first hop's ingress and the last hop's egress must be 0".into());
    }
    let n = d.hops.len();
    for (k, h) in d.hops.iter().enumerate() {
        if k > 0 && h.ingress == 0 {
            return e(format!(
                "hop {k} ({}): ingress 0 is only allowed at the first hop",
                h.ia
            ));
        }
        if k + 1 < n && h.egress == 0 {
            return e(format!(
                "hop {k} ({}): egress 0 is only allowed at the last hop",
                h.ia
            ));
        }
        if let Some(j) = d.hops[..k].iter().position(|x| x.ia == h.ia) {
            return e(format!(
                "hops {j} and {k} are both in {} (a path visits an AS once)",
                h.ia
            ));
        }
    }
    Ok(PathInfo {
        id: path_id_of(&d.hops),
        src: first.ia,
        dst: last.ia,
        hops: d.hops.clone(),
        origin: PathOrigin::Imported,
    })
}

/// The ASes of a `topology.json` file (scionproto or appliance format, read by
/// `scion-topology`), as the collector keeps them. The file must be a valid topology; the
/// collector adds one rule: an interface does not lead back into its own AS.
fn parse_topology_json(text: &str) -> Result<Vec<(IsdAsn, AsInfo)>, ImportError> {
    let topo = scion_topology::Topology::parse(text, "topology.json")
        .map_err(|e| ImportError::Invalid(e.to_string()))?;
    topo.ases.iter().map(as_info).collect()
}

/// One AS of a topology file: its routers (by name, with their node ids) and interfaces.
fn as_info(a: &scion_topology::AsTopology) -> Result<(IsdAsn, AsInfo), ImportError> {
    let mut info = AsInfo {
        core: a.core,
        ..AsInfo::default()
    };
    for r in &a.routers {
        let mut ifids = Vec::with_capacity(r.interfaces.len());
        for i in &r.interfaces {
            if i.neighbor_ia == a.ia {
                return Err(ImportError::Invalid(format!(
                    "topology.json: interface {} links {} to itself",
                    i.id, a.ia
                )));
            }
            ifids.push(i.id);
            info.interfaces.insert(
                i.id,
                InterfaceInfo {
                    ifid: i.id,
                    router: Some(r.id.clone()),
                    neighbor_ia: Some(i.neighbor_ia),
                    neighbor_if: i.remote_interface_id,
                    link_type: Some(i.link_type.name().to_string()),
                },
            );
        }
        ifids.sort_unstable();
        info.routers.insert(
            r.id.clone(),
            RouterInfo {
                name: r.id.clone(),
                node_id: r.node_id,
                interfaces: ifids,
            },
        );
    }
    Ok((a.ia, info))
}

/// Serde helpers: ISD-AS as its text form.
pub mod ia_str {
    use idint_wire::IsdAsn;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialises as `1-ff00:0:110`.
    pub fn serialize<S: Serializer>(ia: &IsdAsn, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(ia)
    }

    /// Parses `1-ff00:0:110`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<IsdAsn, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|_| serde::de::Error::custom(format!("bad ISD-AS {s:?}")))
    }
}

/// Serde helpers: optional ISD-AS as text.
pub mod opt_ia_str {
    use idint_wire::IsdAsn;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialises as `1-ff00:0:110` or null.
    pub fn serialize<S: Serializer>(ia: &Option<IsdAsn>, s: S) -> Result<S::Ok, S::Error> {
        match ia {
            Some(ia) => s.collect_str(ia),
            None => s.serialize_none(),
        }
    }

    /// Parses `1-ff00:0:110` or null.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IsdAsn>, D::Error> {
        let s = Option::<String>::deserialize(d)?;
        s.map(|s| {
            s.parse()
                .map_err(|_| serde::de::Error::custom(format!("bad ISD-AS {s:?}")))
        })
        .transpose()
    }
}

/// Serde helpers: u64 as 16 hex digits.
pub mod hex_u64 {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialises as 16 hex digits.
    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{v:016x}"))
    }

    /// Parses hex digits.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let s = String::deserialize(d)?;
        u64::from_str_radix(&s, 16).map_err(|_| serde::de::Error::custom("bad hex id"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid non-core `topology.json` of AS `ia` with these routers (the test kit's).
    fn topo(ia: &str, routers: &[test_kit::chain::TopoRouter<'_>]) -> String {
        test_kit::chain::topology_json(ia, false, routers)
    }

    fn ia(s: &str) -> IsdAsn {
        s.parse().unwrap()
    }

    fn hf(i: u32, e: u32) -> v1::HopField {
        v1::HopField {
            cons_ingress: i,
            cons_egress: e,
            exp_time: 63,
        }
    }

    fn info(cons_dir: bool) -> v1::InfoField {
        v1::InfoField {
            cons_dir,
            ..Default::default()
        }
    }

    #[test]
    fn up_and_down_segments_merge_at_the_crossing() {
        // Up segment A(leaf) -> B(core), against construction; down segment B -> C.
        let p = v1::Path {
            seg_lens: vec![2, 2],
            info_fields: vec![info(false), info(true)],
            hop_fields: vec![hf(1, 0), hf(0, 2), hf(0, 3), hf(4, 0)],
            ..Default::default()
        };
        let l = HopLayout::of(Some(&p)).unwrap();
        assert_eq!(l.as_hops, 3);
        assert_eq!(&l.ifs[..3], &[(0, 1), (2, 3), (4, 0)]);
        assert_eq!(&l.hop_of[..4], &[0, 1, 1, 2]);
        let mut bad = p.clone();
        bad.seg_lens = vec![2, 3];
        assert_eq!(HopLayout::of(Some(&bad)), Err(LayoutError::Inconsistent));
        assert!(matches!(HopLayout::of(None), Err(LayoutError::NoPath)));
    }

    #[test]
    fn numbers_no_scion_path_holds_are_refused_not_truncated() {
        let p = v1::Path {
            seg_lens: vec![2],
            info_fields: vec![info(true)],
            hop_fields: vec![hf(0, 1), hf(1, 0)],
            ..Default::default()
        };
        assert!(HopLayout::of(Some(&p)).is_ok());
        // 65537 would be interface 1 cut to 16 bits.
        for (k, ingress) in [(0, false), (1, true)] {
            let mut bad = p.clone();
            if ingress {
                bad.hop_fields[k].cons_ingress = 65_537;
            } else {
                bad.hop_fields[k].cons_egress = 65_537;
            }
            assert_eq!(HopLayout::of(Some(&bad)), Err(LayoutError::OutOfRange));
        }
        assert_eq!(
            HopLayout::build(&[64], &[true], &[(0, 1); 64]),
            Err(LayoutError::OutOfRange)
        );
    }

    impl PartialEq for HopLayout {
        fn eq(&self, o: &Self) -> bool {
            self.as_hops == o.as_hops && self.ifs == o.ifs && self.hop_of == o.hop_of
        }
    }

    struct Recording(Mutex<Vec<TopologyChange>>);
    impl TopologySink for Recording {
        fn changed(&self, c: &[TopologyChange]) -> Result<(), NotPersisted> {
            self.0.lock().unwrap().extend_from_slice(c);
            Ok(())
        }
    }

    /// A sink whose queue is full.
    struct Full;

    impl TopologySink for Full {
        fn changed(&self, _: &[TopologyChange]) -> Result<(), NotPersisted> {
            Err(NotPersisted("queue full".into()))
        }
    }

    #[test]
    fn an_import_the_store_cannot_take_fails_and_changes_nothing() {
        let t = TopologyHandle::new();
        t.set_sink(Arc::new(Full));
        let e = t
            .import_topology_json(&topo(
                "1-ff00:0:a",
                &[("ra", Some(1), &[(1, "1-ff00:0:b", Some(2))])],
            ))
            .unwrap_err();
        assert!(matches!(e, ImportError::NotPersisted(_)), "{e}");
        let (a, b) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"));
        let hop = |ia, ingress, egress| PathHop {
            ia,
            ingress,
            egress,
        };
        let e = t
            .import_path(&PathDescription {
                hops: vec![hop(a, 0, 1), hop(b, 2, 0)],
            })
            .unwrap_err();
        assert!(matches!(e, ImportError::NotPersisted(_)), "{e}");
        let snap = t.snapshot();
        assert!(snap.ases.is_empty() && snap.paths.is_empty() && snap.links.is_empty());
        assert_eq!(t.generation(), 0);
    }

    #[test]
    fn changes_written_behind_rebuild_the_same_topology() {
        let t = TopologyHandle::new();
        let sink = Arc::new(Recording(Mutex::new(Vec::new())));
        t.set_sink(sink.clone());
        t.import_topology_json(&topo(
            "1-ff00:0:a",
            &[("ra", Some(1), &[(1, "1-ff00:0:b", Some(2))])],
        ))
        .unwrap();
        let (a, b) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"));
        let p = t
            .import_path(&PathDescription {
                hops: vec![
                    PathHop {
                        ia: a,
                        ingress: 0,
                        egress: 1,
                    },
                    PathHop {
                        ia: b,
                        ingress: 2,
                        egress: 0,
                    },
                ],
            })
            .unwrap();
        // Re-importing the same thing changes nothing and writes nothing.
        let n = sink.0.lock().unwrap().len();
        t.import_path(&PathDescription {
            hops: p.hops.clone(),
        })
        .unwrap();
        assert_eq!(sink.0.lock().unwrap().len(), n);
        let restored = TopologyHandle::new();
        restored.restore(sink.0.lock().unwrap().iter());
        let (x, y) = (t.snapshot(), restored.snapshot());
        assert_eq!(x.ases, y.ases);
        assert_eq!(x.links, y.links);
        assert_eq!(x.paths, y.paths);
        assert!(y.has_router(a, 1));
        let l = HopLayout::of(Some(&v1::Path {
            seg_lens: vec![2],
            info_fields: vec![info(true)],
            hop_fields: vec![hf(0, 1), hf(2, 0)],
            ..Default::default()
        }))
        .unwrap();
        assert!(matches!(y.map(a, b, &l), Mapping::Known { id, .. } if id == p.id));
    }

    fn hop(s: &str, ingress: u16, egress: u16) -> PathHop {
        PathHop {
            ia: ia(s),
            ingress,
            egress,
        }
    }

    #[test]
    fn path_ids_cover_every_hop_and_shared_interfaces_map_by_walking() {
        let t = TopologyHandle::new();
        let via = |m: &str| PathDescription {
            hops: vec![
                hop("1-ff00:0:a", 0, 1),
                hop(m, 2, 3),
                hop("1-ff00:0:c", 4, 0),
            ],
        };
        let (p1, p2) = (via("1-ff00:0:b"), via("1-ff00:0:e"));
        let ps = t.import_paths(&[p1.clone(), p2.clone()]).unwrap();
        assert_ne!(ps[0].id, ps[1].id, "paths differing in a middle AS");
        assert_eq!(t.snapshot().paths.len(), 2);
        assert_eq!(t.snapshot().paths[&ps[0].id].hops, p1.hops);
        // A report's path shows only interfaces: ambiguous until the interfaces say which.
        let l = HopLayout::of(Some(&v1::Path {
            seg_lens: vec![3],
            info_fields: vec![info(true)],
            hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 0)],
            ..Default::default()
        }))
        .unwrap();
        let (a, c) = (ia("1-ff00:0:a"), ia("1-ff00:0:c"));
        assert!(matches!(
            t.snapshot().map(a, c, &l),
            Mapping::Unknown { .. }
        ));
        t.import_topology_json(&topo(
            "1-ff00:0:a",
            &[("ra", Some(1), &[(1, "1-ff00:0:e", Some(2))])],
        ))
        .unwrap();
        t.import_topology_json(&topo(
            "1-ff00:0:e",
            &[("re", Some(1), &[(3, "1-ff00:0:c", None)])],
        ))
        .unwrap();
        match t.snapshot().map(a, c, &l) {
            Mapping::Known { id, .. } => assert_eq!(id, ps[1].id),
            m => panic!("{m:?}"),
        }
        // One bad path refuses the whole import.
        let bad = PathDescription {
            hops: vec![hop("1-ff00:0:a", 0, 0), hop("1-ff00:0:f", 0, 0)],
        };
        let e = t.import_paths(&[via("1-ff00:0:f"), bad]).unwrap_err();
        assert!(e.message().starts_with("path 1:"), "{e}");
        assert_eq!(t.snapshot().paths.len(), 2);
    }

    #[test]
    fn a_topology_file_replaces_what_it_names_and_keeps_the_rest_consistent() {
        let t = TopologyHandle::new();
        let x = ia("1-ff00:0:a");
        // Learned from a report, then named by the file.
        t.update(|t, ch| add_router(t, ch, x, 7));
        assert_eq!(
            t.import_topology_json(&topo(
                "1-ff00:0:a",
                &[
                    ("r1", Some(1), &[(1, "1-ff00:0:b", None)]),
                    ("r2", Some(2), &[(2, "1-ff00:0:c", None)]),
                ],
            ))
            .unwrap(),
            1
        );
        t.import_topology_json(&topo(
            "1-ff00:0:a",
            &[("br7", Some(7), &[(2, "1-ff00:0:c", None)])],
        ))
        .unwrap();
        let s = t.snapshot();
        let a = &s.ases[&x];
        let names: Vec<&str> = a.routers.keys().map(String::as_str).collect();
        assert_eq!(names, ["br7", "r1", "r2"], "node-7 is br7 now");
        assert_eq!(
            a.routers["r2"].interfaces,
            Vec::<u16>::new(),
            "2 moved to br7"
        );
        assert_eq!(a.interfaces[&2].router.as_deref(), Some("br7"));
        assert_eq!(a.interfaces[&1].router.as_deref(), Some("r1"));
        // Re-importing an empty AS is no change; a new one is.
        assert_eq!(t.import_topology_json(&topo("1-ff00:0:b", &[])).unwrap(), 1);
        assert_eq!(t.import_topology_json(&topo("1-ff00:0:b", &[])).unwrap(), 0);
    }

    #[test]
    fn every_as_of_an_appliance_file_is_imported_and_incomplete_files_are_refused() {
        let t = TopologyHandle::new();
        let text = r#"{ "isd_as": {
  "1-ff00:0:a": { "router": { "id": 1, "internal_address": "10.0.0.1:30042", "interfaces": {
    "1": { "address": "192.0.2.1:50000", "remote_address": "192.0.2.2:50000",
           "remote_isd_as": "1-ff00:0:b", "link_type": "CORE", "remote_interface_id": 2 } } } },
  "1-ff00:0:b": { "router": { "internal_address": "10.0.1.1:30042", "interfaces": {
    "2": { "address": "192.0.2.2:50000", "remote_address": "192.0.2.1:50000",
           "remote_isd_as": "1-ff00:0:a", "link_type": "core", "remote_interface_id": 1 } } } } } }"#;
        assert_eq!(
            t.import_topology_json(text).unwrap(),
            3,
            "two ASes, one link"
        );
        let s = t.snapshot();
        let (a, b) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"));
        let ra = &s.ases[&a].routers["br1-ff00_0_a-1"];
        assert_eq!((ra.node_id, &ra.interfaces[..]), (Some(1), &[1][..]));
        assert!(s.ases[&a].core, "an AS with a core link is core");
        assert_eq!(s.ases[&b].routers["br1-ff00_0_b-1"].node_id, None);
        assert_eq!(s.ases[&a].interfaces[&1].link_type.as_deref(), Some("core"));
        assert!(s.links.contains(&Link::new((a, 1), (b, 2))));
        // One bad AS refuses the file; incomplete routers and interfaces are refused.
        let bad = text.replace(
            r#""remote_isd_as": "1-ff00:0:a""#,
            r#""remote_isd_as": "1-ff00:0:b""#,
        );
        let e = t.import_topology_json(&bad).unwrap_err();
        assert!(e.message().contains("links 1-ff00:0:b to itself"), "{e}");
        for (text, field) in [
            (r#"{"isd_as":"1-ff00:0:c"}"#, "border_routers"),
            (
                r#"{"isd_as":"1-ff00:0:c","border_routers":{"r":{"interfaces":{}}}}"#,
                "border_routers.r.internal_addr",
            ),
            (
                r#"{"isd_as":"1-ff00:0:c","border_routers":{"r":{"internal_addr":"10.0.0.1:30042","interfaces":{"1":{"isd_as":"1-ff00:0:a"}}}}}"#,
                "border_routers.r.interfaces.1.link_to",
            ),
        ] {
            let e = t.import_topology_json(text).unwrap_err();
            assert!(e.message().starts_with("topology.json: field `"), "{e}");
            assert!(e.message().contains(&format!("`{field}`")), "{e}");
        }
        assert!(!t.snapshot().ases.contains_key(&ia("1-ff00:0:c")));
    }

    #[test]
    fn a_signature_shared_with_a_known_path_of_another_shape_maps_to_nothing() {
        let (a, b, c) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"), ia("1-ff00:0:c"));
        let hop = |ia, ingress, egress| PathHop {
            ia,
            ingress,
            egress,
        };
        let known = PathDescription {
            hops: vec![hop(a, 0, 1), hop(b, 2, 3), hop(c, 4, 0)],
        };
        let t = TopologyHandle::new();
        let known_id = t.import_path(&known).unwrap().id;
        // A report's path of four AS hops, whose signature is made to name the known path
        // (as a hash collision would): it must not be taken for it.
        let p = v1::Path {
            seg_lens: vec![4],
            info_fields: vec![info(true)],
            hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 5), hf(6, 0)],
            ..Default::default()
        };
        let l = HopLayout::of(Some(&p)).unwrap();
        let mut topo = Topology::clone(&t.snapshot());
        let sig = topo.signature(a, c, l.ifs[..l.as_hops].iter().copied());
        topo.by_ifs.entry(sig).or_default().push(known_id);
        assert!(matches!(topo.map(a, c, &l), Mapping::Unknown { .. }));
        // The same interfaces towards another destination are not the known path either.
        let three = v1::Path {
            seg_lens: vec![3],
            hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 0)],
            ..p
        };
        let l = HopLayout::of(Some(&three)).unwrap();
        let sig = topo.signature(a, b, l.ifs[..l.as_hops].iter().copied());
        topo.by_ifs.entry(sig).or_default().push(known_id);
        assert!(matches!(topo.map(a, b, &l), Mapping::Unknown { .. }));
        // The known path itself still maps.
        assert!(matches!(topo.map(a, c, &l), Mapping::Known { id, .. } if id == known_id));
    }

    #[test]
    fn a_walk_that_comes_back_to_an_as_is_no_path() {
        let (a, b) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"));
        let t = TopologyHandle::new();
        t.import_topology_json(&topo(
            "1-ff00:0:a",
            &[(
                "ra",
                Some(1),
                &[(1, "1-ff00:0:b", Some(2)), (4, "1-ff00:0:b", Some(3))],
            )],
        ))
        .unwrap();
        t.import_topology_json(&topo(
            "1-ff00:0:b",
            &[(
                "rb",
                Some(2),
                &[(2, "1-ff00:0:a", Some(1)), (3, "1-ff00:0:a", Some(4))],
            )],
        ))
        .unwrap();
        // A -1-> B -3-> A: the interfaces connect, but the walk visits A twice.
        let p = v1::Path {
            seg_lens: vec![3],
            info_fields: vec![info(true)],
            hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 0)],
            ..Default::default()
        };
        let l = HopLayout::of(Some(&p)).unwrap();
        assert!(matches!(
            t.snapshot().map(a, a, &l),
            Mapping::Unknown { .. }
        ));
        // Without the return, the same interfaces walk.
        let p = v1::Path {
            seg_lens: vec![2],
            hop_fields: vec![hf(0, 1), hf(2, 0)],
            ..p
        };
        let l = HopLayout::of(Some(&p)).unwrap();
        assert!(matches!(t.snapshot().map(a, b, &l), Mapping::Walked { .. }));
    }

    #[test]
    fn paths_map_by_import_or_by_walking_imported_interfaces() {
        let t = TopologyHandle::new();
        let p = v1::Path {
            seg_lens: vec![3],
            info_fields: vec![info(true)],
            hop_fields: vec![hf(0, 1), hf(2, 3), hf(4, 0)],
            ..Default::default()
        };
        let l = HopLayout::of(Some(&p)).unwrap();
        let (a, b, c) = (ia("1-ff00:0:a"), ia("1-ff00:0:b"), ia("1-ff00:0:c"));
        assert!(matches!(
            t.snapshot().map(a, c, &l),
            Mapping::Unknown { .. }
        ));
        // Interfaces of A and B lead to C.
        t.import_topology_json(&topo(
            "1-ff00:0:a",
            &[("ra", Some(1), &[(1, "1-ff00:0:b", Some(2))])],
        ))
        .unwrap();
        assert!(matches!(
            t.snapshot().map(a, c, &l),
            Mapping::Unknown { .. }
        ));
        t.import_topology_json(&topo(
            "1-ff00:0:b",
            &[(
                "rb",
                Some(2),
                &[(2, "1-ff00:0:a", None), (3, "1-ff00:0:c", None)],
            )],
        ))
        .unwrap();
        match t.snapshot().map(a, c, &l) {
            Mapping::Walked { ases, .. } => assert_eq!(&ases[..], &[a, b, c]),
            m => panic!("{m:?}"),
        }
        // Walking to the wrong destination fails.
        assert!(matches!(
            t.snapshot().map(a, b, &l),
            Mapping::Unknown { .. }
        ));
        let imported = t
            .import_path(&PathDescription {
                hops: vec![
                    PathHop {
                        ia: a,
                        ingress: 0,
                        egress: 1,
                    },
                    PathHop {
                        ia: b,
                        ingress: 2,
                        egress: 3,
                    },
                    PathHop {
                        ia: c,
                        ingress: 4,
                        egress: 0,
                    },
                ],
            })
            .unwrap();
        match t.snapshot().map(a, c, &l) {
            Mapping::Known { id, ases } => {
                assert_eq!(id, imported.id);
                assert_eq!(&ases[..], &[a, b, c]);
            }
            m => panic!("{m:?}"),
        }
        assert!(t.snapshot().links.contains(&Link::new((b, 3), (c, 4))));
        assert_eq!(t.snapshot().router_name(a, 1), Some("ra"));
        assert!(t.import_topology_json("{}").is_err());
        assert!(t.import_path(&PathDescription { hops: vec![] }).is_err());
    }
}
