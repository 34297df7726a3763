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

mod handle;
mod import;
mod layout;

use import::*;
pub use import::{add_internal_link, add_path, add_router};
pub use layout::{fingerprint, path_id, path_id_of};

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

/// A known path as the hot path needs it: endpoints, interfaces per AS hop (travel
/// direction) and the AS of each AS hop.
#[derive(Debug, Clone)]
struct PathShape {
    src: IsdAsn,
    dst: IsdAsn,
    ifs: Box<[(u16, u16)]>,
    ases: Arc<[IsdAsn]>,
}

/// A walk over the imported interfaces (see `Topology::walk`).
#[derive(Debug, Clone)]
pub(super) struct Walk {
    /// The AS of each AS hop.
    pub(super) ases: Vec<IsdAsn>,
    /// Whether the topology knows every interface the walk took (no ingress is only the
    /// report's word).
    pub(super) confirmed: bool,
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
    /// Walked over imported interfaces, every one of them known to the topology; becomes a
    /// learned path once every AS on it vouched in a verified report.
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
mod tests;
