//! The topology: ASes, routers, links and paths with their current telemetry, and path
//! ranking.

use std::collections::{BTreeMap, BTreeSet};

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
use super::{ApiResult, PageQuery, Q, Segment, next_offset, page, paged, parse_ia, parse_path_id};
use crate::state::AppState;
use collector_core::metrics::{Measurement, MetricKey, Scope};
use collector_core::topology::PathInfo;

/// The current values of the metric keys `f` selects (copying no history).
pub(super) fn current(s: &AppState, f: impl Fn(&MetricKey) -> bool) -> Vec<LatestValue> {
    s.shared
        .metrics
        .select_page(f, (0, usize::MAX), LatestValue::new)
        .items
}

/// The current values of the keys `group` assigns to one of `wanted`, by item: one pass over
/// the metric store for a whole page of items (not one per item), copying no history.
fn telemetry_by<K: Ord + Copy>(
    s: &AppState,
    wanted: &BTreeSet<K>,
    group: impl Fn(&MetricKey) -> Option<K>,
) -> BTreeMap<K, Vec<LatestValue>> {
    let mut by: BTreeMap<K, Vec<LatestValue>> = BTreeMap::new();
    let selected = s.shared.metrics.select_page(
        |k| group(k).is_some_and(|g| wanted.contains(&g)),
        (0, usize::MAX),
        |k, l| (group(k), LatestValue::new(k, l)),
    );
    for (g, v) in selected.items {
        if let Some(g) = g {
            by.entry(g).or_default().push(v);
        }
    }
    by
}

/// ASes: those with a record (imported topology or learned routers), then those only links
/// and paths name (`core` unknown: null; `known_from: "paths"`), each list in ISD-AS order.
#[utoipa::path(get, path = "/api/v1/ases", tag = "topology", params(PageQuery),
    responses(
        (status = 200, description = "ISD-ASes", body = AsList),
        (status = 400, description = "bad limit or parameter", body = ErrorBody)))]
pub(super) async fn list_ases(State(s): State<AppState>, Q(q): Q<PageQuery>) -> ApiResult<AsList> {
    let pg = page(q.limit, q.offset)?;
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
    let total = ases.len();
    Ok(axum::Json(AsList {
        ases: paged(ases.into_iter(), pg),
        next_offset: next_offset(pg, total),
        total,
    }))
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

/// Border routers with their current telemetry, by AS then name, a page at a time.
#[utoipa::path(get, path = "/api/v1/routers", tag = "topology", params(PageQuery),
    responses(
        (status = 200, description = "routers", body = RouterList),
        (status = 400, description = "bad limit or parameter", body = ErrorBody)))]
pub(super) async fn list_routers(
    State(s): State<AppState>,
    Q(q): Q<PageQuery>,
) -> ApiResult<RouterList> {
    let pg = page(q.limit, q.offset)?;
    let t = s.shared.topology.snapshot();
    let all = t
        .ases
        .iter()
        .flat_map(|(ia, a)| a.routers.values().map(move |r| (*ia, r)));
    let total = all.clone().count();
    let routers = paged(all, pg);
    let wanted: BTreeSet<(u64, u64)> = routers
        .iter()
        .filter_map(|(ia, r)| r.node_id.map(|n| (ia.to_u64(), u64::from(n))))
        .collect();
    let mut telemetry = telemetry_by(&s, &wanted, |k| {
        matches!(k.scope, Scope::Router | Scope::Queue).then_some((k.ids[0], k.ids[1]))
    });
    let routers = routers
        .into_iter()
        .map(|(ia, r)| RouterEntry {
            interfaces: r.interfaces.clone(),
            isd_as: ia.to_string(),
            name: r.name.clone(),
            node_id: r.node_id,
            telemetry: r
                .node_id
                .and_then(|n| telemetry.remove(&(ia.to_u64(), u64::from(n))))
                .unwrap_or_default(),
        })
        .collect();
    Ok(axum::Json(RouterList {
        next_offset: next_offset(pg, total),
        routers,
        total,
    }))
}

/// Inter-AS links (with telemetry) and AS-internal links, both lists paged alike.
#[utoipa::path(get, path = "/api/v1/links", tag = "topology", params(PageQuery),
    responses(
        (status = 200, description = "links", body = LinkList),
        (status = 400, description = "bad limit or parameter", body = ErrorBody)))]
pub(super) async fn list_links(
    State(s): State<AppState>,
    Q(q): Q<PageQuery>,
) -> ApiResult<LinkList> {
    let pg = page(q.limit, q.offset)?;
    let t = s.shared.topology.snapshot();
    let (total, internal_total) = (t.links.len(), t.internal_links.len());
    let links = paged(t.links.iter(), pg);
    let wanted: BTreeSet<(u64, u64)> = links
        .iter()
        .flat_map(|l| [(l.a, l.a_if), (l.b, l.b_if)])
        .map(|(ia, ifid)| (ia.to_u64(), u64::from(ifid)))
        .collect();
    let telemetry = telemetry_by(&s, &wanted, |k| {
        (k.scope == Scope::Link).then_some((k.ids[0], k.ids[1]))
    });
    let end = |ia: IsdAsn, ifid: u16| LinkEnd {
        ifid,
        isd_as: ia.to_string(),
        telemetry: telemetry
            .get(&(ia.to_u64(), u64::from(ifid)))
            .cloned()
            .unwrap_or_default(),
    };
    Ok(axum::Json(LinkList {
        internal_links: paged(t.internal_links.iter().map(InternalLinkBody::from), pg),
        internal_total,
        links: links
            .into_iter()
            .map(|l| LinkBody {
                a: end(l.a, l.a_if),
                b: end(l.b, l.b_if),
            })
            .collect(),
        next_offset: next_offset(pg, total.max(internal_total)),
        total,
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
    /// Most paths (default 1000, at most 10000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Paths to skip (default 0; `next_offset` of the previous page).
    offset: Option<usize>,
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
        (status = 400, description = "bad ISD-AS, limit or parameter", body = ErrorBody)))]
pub(super) async fn list_paths(
    State(s): State<AppState>,
    Q(q): Q<PathFilter>,
) -> ApiResult<PathList> {
    let pg = page(q.limit, q.offset)?;
    let src = q.src.as_deref().map(parse_ia).transpose()?;
    let dst = q.dst.as_deref().map(parse_ia).transpose()?;
    let t = s.shared.topology.snapshot();
    let matching = t
        .paths
        .values()
        .filter(|p| src.is_none_or(|x| p.src == x) && dst.is_none_or(|x| p.dst == x));
    let total = matching.clone().count();
    let page_paths = paged(matching, pg);
    let wanted: BTreeSet<u64> = page_paths.iter().map(|p| p.id).collect();
    let mut telemetry = telemetry_by(&s, &wanted, |k| {
        matches!(k.scope, Scope::Path | Scope::Hop).then_some(k.ids[0])
    });
    let paths = page_paths
        .into_iter()
        .map(|p| PathBody::new(p, telemetry.remove(&p.id).unwrap_or_default()))
        .collect();
    Ok(axum::Json(PathList {
        next_offset: next_offset(pg, total),
        paths,
        total,
    }))
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

/// Paths seen in reports that map to no known ASes, a page at a time.
#[utoipa::path(get, path = "/api/v1/paths/unknown", tag = "topology", params(PageQuery),
    responses(
        (status = 200, description = "unmapped paths", body = UnknownPathList),
        (status = 400, description = "bad limit or parameter", body = ErrorBody)))]
pub(super) async fn unknown_paths(
    State(s): State<AppState>,
    Q(q): Q<PageQuery>,
) -> ApiResult<UnknownPathList> {
    let pg = page(q.limit, q.offset)?;
    let all = s.shared.topology.unknown_paths();
    Ok(axum::Json(UnknownPathList {
        next_offset: next_offset(pg, all.len()),
        total: all.len(),
        unknown_paths: paged(all.iter().map(UnknownPathBody::from), pg),
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
                    .get_with(&MetricKey::path(p.id, m), |l| l.value),
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
