//! The topology: ASes, routers, links and paths with their current telemetry, and path
//! ranking.

use axum::extract::State;
use idint_wire::IsdAsn;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ErrorBody, bad, not_found};
use super::responses::{
    AsDetail, AsList, AsSummary, InterfaceBody, InternalLinkBody, KnownFrom, LatestValue, LinkBody,
    LinkEnd, LinkList, MeasurementName, PathBody, PathHopBody, PathList, RankedPath, Ranking,
    RouterBody, RouterEntry, RouterList, UnknownPathBody, UnknownPathList, hex_id,
};
use super::{ApiResult, Q, Segment, parse_ia, parse_path_id};
use crate::state::AppState;
use collector_core::metrics::{Measurement, MetricKey, Scope};
use collector_core::topology::PathInfo;

/// The current values of the metric keys `f` selects.
pub(super) fn current(s: &AppState, f: impl Fn(&MetricKey) -> bool) -> Vec<LatestValue> {
    s.shared
        .metrics
        .select(f)
        .iter()
        .map(|(k, l)| LatestValue::new(k, l))
        .collect()
}

/// ASes: those with a record (imported topology or learned routers), then those only links
/// and paths name (`core` unknown: null; `known_from: "paths"`), each list in ISD-AS order.
#[utoipa::path(get, path = "/api/v1/ases", tag = "topology",
    responses((status = 200, description = "ISD-ASes", body = AsList)))]
pub(super) async fn list_ases(State(s): State<AppState>) -> ApiResult<AsList> {
    let t = s.shared.topology.snapshot();
    let mut ases: Vec<AsSummary> = t
        .ases
        .iter()
        .map(|(ia, a)| AsSummary {
            core: Some(a.core),
            interfaces: a.interfaces.len(),
            isd_as: ia.to_string(),
            known_from: KnownFrom::Topology,
            routers: a.routers.len(),
        })
        .collect();
    ases.extend(t.ases_named_only().iter().map(|ia| AsSummary {
        core: None,
        interfaces: 0,
        isd_as: ia.to_string(),
        known_from: KnownFrom::Paths,
        routers: 0,
    }));
    Ok(axum::Json(AsList { ases }))
}

/// One ISD-AS with its routers, interfaces and telemetry (`known_from`: topology, or paths
/// when only links and paths name it: `core` null, no routers or interfaces).
#[utoipa::path(get, path = "/api/v1/ases/{ia}", tag = "topology",
    params(("ia" = String, Path, description = "ISD-AS, e.g. 1-ff00:0:110")),
    responses(
        (status = 200, description = "the AS", body = AsDetail),
        (status = 400, description = "bad ISD-AS", body = ErrorBody),
        (status = 404, description = "unknown AS", body = ErrorBody)))]
pub(super) async fn get_as(State(s): State<AppState>, Segment(ia): Segment) -> ApiResult<AsDetail> {
    let ia = parse_ia(&ia)?;
    let t = s.shared.topology.snapshot();
    let iau = ia.to_u64();
    let telemetry = || {
        current(&s, |k| {
            matches!(k.scope, Scope::Router | Scope::Link | Scope::Queue) && k.ids[0] == iau
        })
    };
    match t.ases.get(&ia) {
        Some(a) => Ok(axum::Json(AsDetail {
            core: Some(a.core),
            // Keyed by the id's text, as JSON objects are.
            interfaces: a
                .interfaces
                .iter()
                .map(|(id, i)| (id.to_string(), InterfaceBody::from(i)))
                .collect(),
            isd_as: ia.to_string(),
            known_from: KnownFrom::Topology,
            routers: a
                .routers
                .iter()
                .map(|(name, r)| (name.clone(), RouterBody::from(r)))
                .collect(),
            telemetry: telemetry(),
        })),
        // Named by links or paths only: it exists, its routers and interfaces are unknown.
        None if t.ases_named_only().contains(&ia) => Ok(axum::Json(AsDetail {
            core: None,
            interfaces: Default::default(),
            isd_as: ia.to_string(),
            known_from: KnownFrom::Paths,
            routers: Default::default(),
            telemetry: telemetry(),
        })),
        None => Err(not_found(format!("AS {ia} unknown"))),
    }
}

/// Border routers with their current telemetry.
#[utoipa::path(get, path = "/api/v1/routers", tag = "topology",
    responses((status = 200, description = "routers", body = RouterList)))]
pub(super) async fn list_routers(State(s): State<AppState>) -> ApiResult<RouterList> {
    let t = s.shared.topology.snapshot();
    let mut routers = Vec::new();
    for (ia, a) in &t.ases {
        for r in a.routers.values() {
            let telemetry = match r.node_id {
                Some(n) => current(&s, |k| {
                    matches!(k.scope, Scope::Router | Scope::Queue)
                        && k.ids[0] == ia.to_u64()
                        && k.ids[1] == u64::from(n)
                }),
                None => Vec::new(),
            };
            routers.push(RouterEntry {
                interfaces: r.interfaces.clone(),
                isd_as: ia.to_string(),
                name: r.name.clone(),
                node_id: r.node_id,
                telemetry,
            });
        }
    }
    Ok(axum::Json(RouterList { routers }))
}

/// Inter-AS links (with telemetry) and AS-internal links.
#[utoipa::path(get, path = "/api/v1/links", tag = "topology",
    responses((status = 200, description = "links", body = LinkList)))]
pub(super) async fn list_links(State(s): State<AppState>) -> ApiResult<LinkList> {
    let t = s.shared.topology.snapshot();
    let end = |ia: IsdAsn, ifid: u16| LinkEnd {
        ifid,
        isd_as: ia.to_string(),
        telemetry: current(&s, |k| {
            k.scope == Scope::Link && k.ids[0] == ia.to_u64() && k.ids[1] == u64::from(ifid)
        }),
    };
    Ok(axum::Json(LinkList {
        internal_links: t
            .internal_links
            .iter()
            .map(InternalLinkBody::from)
            .collect(),
        links: t
            .links
            .iter()
            .map(|l| LinkBody {
                a: end(l.a, l.a_if),
                b: end(l.b, l.b_if),
            })
            .collect(),
    }))
}

/// Filters of `GET /api/v1/paths`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct PathFilter {
    /// Source ISD-AS.
    src: Option<String>,
    /// Destination ISD-AS.
    dst: Option<String>,
}

/// A path with its path and hop telemetry.
fn path_body(s: &AppState, p: &PathInfo) -> PathBody {
    let telemetry = current(s, |k| {
        matches!(k.scope, Scope::Path | Scope::Hop) && k.ids[0] == p.id
    });
    PathBody::new(p, telemetry)
}

/// Paths with their current telemetry.
#[utoipa::path(get, path = "/api/v1/paths", tag = "topology", params(PathFilter),
    responses(
        (status = 200, description = "paths", body = PathList),
        (status = 400, description = "bad ISD-AS or parameter", body = ErrorBody)))]
pub(super) async fn list_paths(
    State(s): State<AppState>,
    Q(q): Q<PathFilter>,
) -> ApiResult<PathList> {
    let src = q.src.as_deref().map(parse_ia).transpose()?;
    let dst = q.dst.as_deref().map(parse_ia).transpose()?;
    let t = s.shared.topology.snapshot();
    let paths = t
        .paths
        .values()
        .filter(|p| src.is_none_or(|x| p.src == x) && dst.is_none_or(|x| p.dst == x))
        .map(|p| path_body(&s, p))
        .collect();
    Ok(axum::Json(PathList { paths }))
}

/// One path with its per-hop telemetry.
#[utoipa::path(get, path = "/api/v1/paths/{id}", tag = "topology",
    params(("id" = String, Path, description = "path id (16 hex digits)",
            pattern = "^[0-9a-fA-F]{16}$")),
    responses(
        (status = 200, description = "the path", body = PathBody),
        (status = 400, description = "bad path id", body = ErrorBody),
        (status = 404, description = "unknown path", body = ErrorBody)))]
pub(super) async fn get_path(
    State(s): State<AppState>,
    Segment(id): Segment,
) -> ApiResult<PathBody> {
    let id = parse_path_id(&id)?;
    let t = s.shared.topology.snapshot();
    let p = t
        .paths
        .get(&id)
        .ok_or_else(|| not_found(format!("path {} unknown", hex_id(id))))?;
    Ok(axum::Json(path_body(&s, p)))
}

/// Paths seen in reports that map to no known ASes.
#[utoipa::path(get, path = "/api/v1/paths/unknown", tag = "topology",
    responses((status = 200, description = "unmapped paths", body = UnknownPathList)))]
pub(super) async fn unknown_paths(State(s): State<AppState>) -> ApiResult<UnknownPathList> {
    Ok(axum::Json(UnknownPathList {
        unknown_paths: s
            .shared
            .topology
            .unknown_paths()
            .iter()
            .map(UnknownPathBody::from)
            .collect(),
    }))
}

/// Path ranking objectives and the path measurement each minimises.
pub(super) fn objective(name: &str) -> Result<Measurement, ApiError> {
    match name {
        "latency" => Ok(Measurement::LatencyNs),
        "utilisation" | "utilization" => Ok(Measurement::UtilisationKbps),
        "queue" => Ok(Measurement::QueueLen),
        "carbon" | "co2" => Ok(Measurement::Co2Pg),
        "energy" => Ok(Measurement::EnergyNj),
        o => Err(bad(format!(
            "unknown objective {o:?} (latency, utilisation, queue, carbon, energy)"
        ))),
    }
}

/// The objective when none is given.
pub(super) fn default_objective() -> String {
    "latency".into()
}

/// Parameters of `GET /api/v1/paths/rank`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct RankQuery {
    /// Source ISD-AS.
    src: String,
    /// Destination ISD-AS.
    dst: String,
    /// latency (default), utilisation, queue, carbon or energy.
    #[serde(default = "default_objective")]
    #[param(required = false)]
    objective: String,
}

/// Paths between two ISD-ASes ranked by an objective: measured paths first, lowest value
/// first; unmeasured ones last.
#[utoipa::path(get, path = "/api/v1/paths/rank", tag = "topology", params(RankQuery),
    responses(
        (status = 200, description = "the ranking", body = Ranking),
        (status = 400, description = "bad ISD-AS, objective or parameter", body = ErrorBody)))]
pub(super) async fn rank_paths(
    State(s): State<AppState>,
    Q(q): Q<RankQuery>,
) -> ApiResult<Ranking> {
    let (src, dst) = (parse_ia(&q.src)?, parse_ia(&q.dst)?);
    let m = objective(&q.objective)?;
    let t = s.shared.topology.snapshot();
    let mut ranked: Vec<(Option<f64>, &PathInfo)> = t
        .paths
        .values()
        .filter(|p| p.src == src && p.dst == dst)
        .map(|p| {
            (
                s.shared
                    .metrics
                    .get(&MetricKey::path(p.id, m))
                    .map(|l| l.value),
                p,
            )
        })
        .collect();
    // Measured paths first, best (lowest) value first; unmeasured ones last.
    ranked.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.1.id.cmp(&b.1.id),
    });
    let paths = ranked
        .iter()
        .enumerate()
        .map(|(i, (value, p))| RankedPath {
            hops: p.hops.iter().map(PathHopBody::from).collect(),
            path: hex_id(p.id),
            rank: i + 1,
            value: *value,
        })
        .collect();
    Ok(axum::Json(Ranking {
        dst: dst.to_string(),
        measurement: MeasurementName::from(m),
        objective: q.objective,
        paths,
        src: src.to_string(),
    }))
}
