//! The bodies of the topology answers: ASes, routers, links, paths and rankings.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::{LatestValue, MeasurementName, hex_id};
use collector_core::topology::{
    InterfaceInfo, InternalLink, PathHop, PathInfo, PathOrigin, RouterInfo, UnknownPath,
};

/// Where an AS is known from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KnownFrom {
    /// An imported topology or routers learned from reports: a full record.
    Topology,
    /// Only links and paths name it: its routers and interfaces are unknown.
    Paths,
}

/// One AS of `GET /api/v1/ases`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AsSummary {
    /// Core AS (null: unknown).
    #[schema(required = true)]
    pub core: Option<bool>,
    /// Interfaces known.
    pub interfaces: usize,
    /// The ISD-AS, e.g. `1-ff00:0:110`.
    pub isd_as: String,
    /// Where it is known from.
    pub known_from: KnownFrom,
    /// Border routers known.
    pub routers: usize,
}

/// `GET /api/v1/ases`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AsList {
    /// ASes with a record, then those only links and paths name, each in ISD-AS order.
    pub ases: Vec<AsSummary>,
    /// Items matching in all (this page may hold fewer).
    pub total: usize,
    /// The `offset` of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// An interface of an AS (mirrors `InterfaceInfo`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InterfaceBody {
    /// Interface id.
    pub ifid: u16,
    /// Link type (`core`, `child`, `parent`, `peer`), if known.
    #[schema(required = true)]
    pub link_type: Option<String>,
    /// The AS on the other side, if known.
    #[schema(required = true)]
    pub neighbor_ia: Option<String>,
    /// The interface on the other side, if known.
    #[schema(required = true)]
    pub neighbor_if: Option<u16>,
    /// Border router owning it, if known.
    #[schema(required = true)]
    pub router: Option<String>,
}

impl From<&InterfaceInfo> for InterfaceBody {
    fn from(i: &InterfaceInfo) -> Self {
        InterfaceBody {
            ifid: i.ifid,
            link_type: i.link_type.clone(),
            neighbor_ia: i.neighbor_ia.map(|ia| ia.to_string()),
            neighbor_if: i.neighbor_if,
            router: i.router.clone(),
        }
    }
}

/// A border router of an AS (mirrors `RouterInfo`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RouterBody {
    /// Interfaces it owns.
    pub interfaces: Vec<u16>,
    /// Topology key (or `node-<id>` when learned from reports).
    pub name: String,
    /// Node id written into ID-INT entries, if known.
    #[schema(required = true)]
    pub node_id: Option<u32>,
}

impl From<&RouterInfo> for RouterBody {
    fn from(r: &RouterInfo) -> Self {
        RouterBody {
            interfaces: r.interfaces.clone(),
            name: r.name.clone(),
            node_id: r.node_id,
        }
    }
}

/// `GET /api/v1/ases/{ia}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AsDetail {
    /// Core AS (null: unknown).
    #[schema(required = true)]
    pub core: Option<bool>,
    /// Interfaces by id.
    pub interfaces: BTreeMap<String, InterfaceBody>,
    /// The ISD-AS.
    pub isd_as: String,
    /// Where it is known from.
    pub known_from: KnownFrom,
    /// Routers by name.
    pub routers: BTreeMap<String, RouterBody>,
    /// Current values of its routers, links and queues.
    pub telemetry: Vec<LatestValue>,
}

/// One router of `GET /api/v1/routers`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RouterEntry {
    /// Interfaces it owns.
    pub interfaces: Vec<u16>,
    /// Its AS.
    pub isd_as: String,
    /// Topology key.
    pub name: String,
    /// Node id, if known.
    #[schema(required = true)]
    pub node_id: Option<u32>,
    /// Current values of the router and its queues (none without a node id).
    pub telemetry: Vec<LatestValue>,
}

/// `GET /api/v1/routers`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RouterList {
    /// Routers, by AS then name.
    pub routers: Vec<RouterEntry>,
    /// Items matching in all (this page may hold fewer).
    pub total: usize,
    /// The `offset` of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// One end of an inter-AS link.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkEnd {
    /// Its interface.
    pub ifid: u16,
    /// Its AS.
    pub isd_as: String,
    /// Current values of this side's link.
    pub telemetry: Vec<LatestValue>,
}

/// An inter-AS link.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkBody {
    /// The lower end.
    pub a: LinkEnd,
    /// The higher end.
    pub b: LinkEnd,
}

/// A router-to-router link inside an AS (mirrors `InternalLink`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InternalLinkBody {
    /// Upstream router's node id.
    pub from_node: u32,
    /// The AS.
    pub ia: String,
    /// Downstream router's node id.
    pub to_node: u32,
}

impl From<&InternalLink> for InternalLinkBody {
    fn from(l: &InternalLink) -> Self {
        InternalLinkBody {
            from_node: l.from_node,
            ia: l.ia.to_string(),
            to_node: l.to_node,
        }
    }
}

/// `GET /api/v1/links`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkList {
    /// AS-internal links.
    pub internal_links: Vec<InternalLinkBody>,
    /// Inter-AS links with telemetry.
    pub links: Vec<LinkBody>,
    /// Inter-AS links in all, and AS-internal links in all (each list is paged alike: this
    /// page may hold fewer).
    pub total: usize,
    /// AS-internal links in all.
    pub internal_total: usize,
    /// The `offset` of the next page, when either list has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// One AS hop of a path (mirrors `PathHop`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PathHopBody {
    /// Interface the packet leaves the AS by (0 at the destination).
    pub egress: u16,
    /// The AS.
    pub ia: String,
    /// Interface the packet enters the AS by (0 at the source).
    pub ingress: u16,
}

impl From<&PathHop> for PathHopBody {
    fn from(h: &PathHop) -> Self {
        PathHopBody {
            egress: h.egress,
            ia: h.ia.to_string(),
            ingress: h.ingress,
        }
    }
}

/// Where a path came from (mirrors `PathOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathOriginName {
    /// Imported (API or CLI).
    Imported,
    /// Walked over imported interfaces and confirmed by a report's MACs.
    Learned,
}

impl From<PathOrigin> for PathOriginName {
    fn from(o: PathOrigin) -> Self {
        match o {
            PathOrigin::Imported => PathOriginName::Imported,
            PathOrigin::Learned => PathOriginName::Learned,
        }
    }
}

/// A path with its current telemetry.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PathBody {
    /// Destination AS.
    pub dst: String,
    /// AS hops in travel direction.
    pub hops: Vec<PathHopBody>,
    /// Path id (16 hex digits).
    pub id: String,
    /// Imported or learned.
    pub origin: PathOriginName,
    /// Source AS.
    pub src: String,
    /// Current values of the path and its hops.
    pub telemetry: Vec<LatestValue>,
}

impl PathBody {
    /// A path and its telemetry.
    pub fn new(p: &PathInfo, telemetry: Vec<LatestValue>) -> Self {
        PathBody {
            dst: p.dst.to_string(),
            hops: p.hops.iter().map(PathHopBody::from).collect(),
            id: hex_id(p.id),
            origin: p.origin.into(),
            src: p.src.to_string(),
            telemetry,
        }
    }
}

/// `GET /api/v1/paths`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PathList {
    /// Matching paths, by id.
    pub paths: Vec<PathBody>,
    /// Items matching in all (this page may hold fewer).
    pub total: usize,
    /// The `offset` of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// A path seen in reports that maps to no known ASes (mirrors `UnknownPath`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UnknownPathBody {
    /// Destination AS.
    pub dst: String,
    /// Fingerprint of (source, destination, interfaces), 16 hex digits.
    pub id: String,
    /// `[ingress, egress]` per AS hop in travel direction.
    #[schema(value_type = Vec<Vec<u16>>)]
    pub interfaces: Vec<(u16, u16)>,
    /// Reports seen on it.
    pub reports: u64,
    /// Source AS.
    pub src: String,
}

impl From<&UnknownPath> for UnknownPathBody {
    fn from(u: &UnknownPath) -> Self {
        UnknownPathBody {
            dst: u.dst.to_string(),
            id: hex_id(u.id),
            interfaces: u.interfaces.clone(),
            reports: u.reports,
            src: u.src.to_string(),
        }
    }
}

/// `GET /api/v1/paths/unknown`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UnknownPathList {
    /// The unmapped paths.
    pub unknown_paths: Vec<UnknownPathBody>,
    /// Items matching in all (this page may hold fewer).
    pub total: usize,
    /// The `offset` of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// One path of a ranking.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RankedPath {
    /// AS hops in travel direction.
    pub hops: Vec<PathHopBody>,
    /// Path id (16 hex digits).
    pub path: String,
    /// 1 for the best.
    pub rank: usize,
    /// The objective's current value (null: not measured; such paths rank last).
    #[schema(required = true)]
    pub value: Option<f64>,
}

/// `GET /api/v1/paths/rank`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Ranking {
    /// Destination AS.
    pub dst: String,
    /// The measurement the objective minimises.
    pub measurement: MeasurementName,
    /// The objective as asked for.
    pub objective: String,
    /// Paths, best first.
    pub paths: Vec<RankedPath>,
    /// Source AS.
    pub src: String,
}
