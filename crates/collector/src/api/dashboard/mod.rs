//! The operator's dashboard at `/`: one page (HTML, CSS and a small script, compiled into the
//! binary from `assets/`) that polls the REST API and the dashboard's own endpoints below:
//! a summary, recent events and SVG charts drawn on the server with plotters (`charts`).
//! Nothing is loaded from elsewhere.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use collector_core::counters::{MalformedReason, RejectReason, Transport};
use collector_core::metrics::{Measurement, MetricKey};
use collector_core::topology::Topology;
use idint_wire::IsdAsn;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ErrorBody, bad, not_found};
use super::responses::{
    DashboardSummary, EventBody, EventKind, EventList, HopValues, LatestValue, PathHops, hex_id,
};
use super::{ApiResult, Q, parse_path_id};
use crate::state::{AppState, now_ns};

mod charts;

/// The page.
const INDEX_HTML: &str = include_str!("assets/index.html");
/// The page's script.
const APP_JS: &str = include_str!("assets/app.js");
/// The page's style sheet.
const STYLE_CSS: &str = include_str!("assets/style.css");

/// Content type of the page.
const HTML: &str = "text/html; charset=utf-8";
/// Content type of the script.
const JAVASCRIPT: &str = "text/javascript; charset=utf-8";
/// Content type of the style sheet.
const CSS: &str = "text/css; charset=utf-8";
/// Content type of the charts.
const SVG: &str = "image/svg+xml";
/// Charts and the page change with every poll: never cached.
const NO_STORE: &str = "no-store";

/// Events one answer holds when the request names no `limit`.
pub const DEFAULT_EVENTS: usize = 20;
/// Most events one answer may hold.
pub const MAX_EVENTS: usize = 200;
/// Written values looked at per metric key for events (the newest ones).
const EVENTS_PER_KEY: usize = 4;
/// Most ASes the topology graph draws (the rest are counted).
pub const MAX_GRAPH_ASES: usize = 64;
/// Most links the topology graph draws (the rest are counted).
pub const MAX_GRAPH_LINKS: usize = 256;
/// Most paths whose AS hops add links to the graph (where no link is imported).
const MAX_GRAPH_PATHS: usize = 1_000;

/// A static answer of `content_type`, not cached.
fn text(content_type: &'static str, body: impl Into<String>) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, NO_STORE),
        ],
        body.into(),
    )
        .into_response()
}

/// An SVG chart, or a 500 saying why it could not be drawn.
fn svg(drawn: Result<String, String>) -> Result<Response, ApiError> {
    drawn
        .map(|s| text(SVG, s))
        .map_err(|e| ApiError::Rejected(StatusCode::INTERNAL_SERVER_ERROR, e))
}

/// The dashboard page.
#[utoipa::path(get, path = "/", tag = "dashboard", responses(
    (status = 200, description = "the operator's dashboard (HTML)", body = String,
     content_type = "text/html")))]
pub(super) async fn index() -> Response {
    text(HTML, INDEX_HTML)
}

/// The dashboard's script.
#[utoipa::path(get, path = "/dashboard/app.js", tag = "dashboard", responses(
    (status = 200, description = "the page's script", body = String,
     content_type = "text/javascript")))]
pub(super) async fn app_js() -> Response {
    text(JAVASCRIPT, APP_JS)
}

/// The dashboard's style sheet.
#[utoipa::path(get, path = "/dashboard/style.css", tag = "dashboard", responses(
    (status = 200, description = "the page's style sheet", body = String,
     content_type = "text/css")))]
pub(super) async fn style_css() -> Response {
    text(CSS, STYLE_CSS)
}

/// Rejected reports by reason, those with a count.
fn rejected_counts(s: &AppState) -> BTreeMap<String, u64> {
    RejectReason::ALL
        .into_iter()
        .map(|r| (r.name().to_owned(), s.shared.counters.rejected(r)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// What the collector holds and has counted since it started.
#[utoipa::path(get, path = "/dashboard/summary", tag = "dashboard", responses(
    (status = 200, description = "counts", body = DashboardSummary)))]
pub(super) async fn summary(State(s): State<AppState>) -> ApiResult<DashboardSummary> {
    use std::sync::atomic::Ordering::Relaxed;
    let c = &s.shared.counters;
    let t = s.shared.topology.snapshot();
    let rejected = rejected_counts(&s);
    let malformed = MalformedReason::ALL
        .into_iter()
        .map(|r| c.malformed_count(Transport::Udp, r) + c.malformed_count(Transport::Http, r))
        .sum();
    Ok(axum::Json(DashboardSummary {
        accepted: c.accepted.load(Relaxed),
        ases: t.ases.len() + t.ases_named_only().len(),
        internal_links: t.internal_links.len(),
        links: t.links.len(),
        local_ia: s.local_ia.to_string(),
        malformed,
        metric_keys: s.shared.metrics.len(),
        now_ns: now_ns(),
        paths: t.paths.len(),
        points_written: c.points_written.load(Relaxed),
        rejected_total: rejected.values().sum(),
        rejected,
        reports: c.reports.load(Relaxed),
        started_ns: s.started_ns,
        unknown_paths: s.shared.topology.unknown_paths().len(),
        workers_ready: s.ready.load(Relaxed),
        workers: s.workers,
    }))
}

/// Parameters of `GET /dashboard/events`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct EventQuery {
    /// Most events (default 20, at most 200).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<usize>,
}

/// The events among a key's newest written values: its first value (when still kept) and
/// every value that moved beyond the threshold (values written by the periodic refresh are
/// no events).
fn events_of(
    k: &MetricKey,
    l: &collector_core::metrics::Latest,
    threshold: f64,
    out: &mut Vec<EventBody>,
) {
    let kept = l.history.len();
    let from = kept.saturating_sub(EVENTS_PER_KEY + 1);
    let event = |kind, previous, (time_ns, value): (u64, f64)| {
        let v = LatestValue::new(k, l);
        EventBody {
            kind,
            measurement: v.measurement,
            previous,
            scope: v.scope,
            tags: v.tags,
            time_ns,
            value,
        }
    };
    if from == 0
        && l.forgotten_ns.is_none()
        && let Some(&first) = l.history.front()
    {
        out.push(event(EventKind::New, None, first));
    }
    let newest: Vec<(u64, f64)> = l.history.iter().skip(from).copied().collect();
    for w in newest.windows(2) {
        if (w[1].1 - w[0].1).abs() > threshold {
            out.push(event(EventKind::Change, Some(w[0].1), w[1]));
        }
    }
}

/// Newest first, at most `limit`.
fn keep_newest(events: &mut Vec<EventBody>, limit: usize) {
    events.sort_by_key(|e| std::cmp::Reverse(e.time_ns));
    events.truncate(limit);
}

/// The most recent events of event detection (new keys, changes beyond the thresholds),
/// from the written values kept in memory (`detection.history` per key).
#[utoipa::path(get, path = "/dashboard/events", tag = "dashboard", params(EventQuery),
    responses(
        (status = 200, description = "events, newest first", body = EventList),
        (status = 400, description = "bad limit or parameter", body = ErrorBody)))]
pub(super) async fn events(State(s): State<AppState>, Q(q): Q<EventQuery>) -> ApiResult<EventList> {
    let limit = q.limit.unwrap_or(DEFAULT_EVENTS);
    if limit == 0 || limit > MAX_EVENTS {
        return Err(bad(format!(
            "limit {limit} is out of range: 1 to {MAX_EVENTS}"
        )));
    }
    let det = s.shared.detection.clone();
    let mut events = Vec::new();
    // One pass under the read lock; what is kept stays within twice the limit.
    s.shared.metrics.select_page(
        |_| true,
        (0, usize::MAX),
        |k, l| {
            events_of(k, l, det.threshold(k.measurement), &mut events);
            if events.len() > 2 * limit {
                keep_newest(&mut events, limit);
            }
        },
    );
    keep_newest(&mut events, limit);
    Ok(axum::Json(EventList { events }))
}

/// The measurement when none is given.
fn default_measurement() -> String {
    Measurement::LatencyNs.name().into()
}

/// A measurement from its name.
fn measurement(name: &str) -> Result<Measurement, ApiError> {
    Measurement::from_name(name).ok_or_else(|| {
        bad(format!(
            "unknown measurement {name:?} (latency_ns, utilisation_kbps, queue_len, energy_nj, co2_pg)"
        ))
    })
}

/// A measurement's name in a chart title.
fn title_of(m: Measurement) -> &'static str {
    match m {
        Measurement::LatencyNs => "Latency",
        Measurement::UtilisationKbps => "Utilisation",
        Measurement::QueueLen => "Queue",
        Measurement::EnergyNj => "Energy per packet",
        Measurement::Co2Pg => "CO2 per packet",
    }
}

/// Parameters of the path charts.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct ChartQuery {
    /// Path id (16 hex digits).
    #[param(pattern = "^[0-9a-fA-F]{16}$")]
    path: String,
    /// latency_ns (default), utilisation_kbps, queue_len, energy_nj or co2_pg.
    #[serde(default = "default_measurement")]
    #[param(required = false)]
    measurement: String,
    /// Ignored: a page adds it to make each refresh's URL unique (any number).
    #[serde(rename = "t")]
    #[param(rename = "t")]
    _refresh: Option<u64>,
}

/// The path and measurement a chart query names (400: bad, 404: unknown path).
fn chart_target(t: &Topology, q: &ChartQuery) -> Result<(u64, Measurement), ApiError> {
    let id = parse_path_id(&q.path)?;
    let m = measurement(&q.measurement)?;
    if !t.paths.contains_key(&id) {
        return Err(not_found(format!("path {} unknown", hex_id(id))));
    }
    Ok((id, m))
}

/// The current values of each AS hop of path `id` (known to be in `t`).
fn hop_values(s: &AppState, t: &Topology, id: u64) -> Vec<HopValues> {
    let Some(p) = t.paths.get(&id) else {
        return Vec::new();
    };
    let metrics = &s.shared.metrics;
    let value = |k: MetricKey| metrics.get_with(&k, |l| l.value);
    let sum = |vs: Vec<f64>| (!vs.is_empty()).then(|| vs.iter().sum());
    p.hops
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let ends = [h.ingress, h.egress];
            let routers: Vec<u32> = t
                .ases
                .get(&h.ia)
                .map(|a| {
                    a.routers
                        .values()
                        .filter(|r| r.interfaces.iter().any(|f| *f != 0 && ends.contains(f)))
                        .filter_map(|r| r.node_id)
                        .collect()
                })
                .unwrap_or_default();
            let of_routers = |m: Measurement| {
                sum(routers
                    .iter()
                    .filter_map(|&n| value(MetricKey::router(h.ia, n, m)))
                    .collect())
            };
            let egress = (h.egress != 0).then_some(h.egress);
            HopValues {
                co2_pg: of_routers(Measurement::Co2Pg),
                egress: h.egress,
                energy_nj: of_routers(Measurement::EnergyNj),
                ia: h.ia.to_string(),
                ingress: h.ingress,
                latency_ns: value(MetricKey::hop(id, i, Measurement::LatencyNs)),
                queue_len: egress.and_then(|f| {
                    routers
                        .iter()
                        .filter_map(|&n| value(MetricKey::queue(h.ia, n, f)))
                        .reduce(f64::max)
                }),
                routers,
                utilisation_kbps: egress
                    .and_then(|f| value(MetricKey::link(h.ia, f, Measurement::UtilisationKbps))),
            }
        })
        .collect()
}

/// One measurement of a hop.
fn hop_value(h: &HopValues, m: Measurement) -> Option<f64> {
    match m {
        Measurement::LatencyNs => h.latency_ns,
        Measurement::UtilisationKbps => h.utilisation_kbps,
        Measurement::QueueLen => h.queue_len,
        Measurement::EnergyNj => h.energy_nj,
        Measurement::Co2Pg => h.co2_pg,
    }
}

/// Parameters of `GET /dashboard/hops`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct HopsQuery {
    /// Path id (16 hex digits).
    #[param(pattern = "^[0-9a-fA-F]{16}$")]
    path: String,
}

/// The AS hops of a path with their current latency, utilisation, queue, energy and CO2:
/// the hop's latency, the egress link's utilisation, and the queue, energy and CO2 of the
/// routers owning the hop's interfaces (energy and CO2 summed, the longest queue).
#[utoipa::path(get, path = "/dashboard/hops", tag = "dashboard", params(HopsQuery),
    responses(
        (status = 200, description = "the path's hops", body = PathHops),
        (status = 400, description = "bad path id or parameter", body = ErrorBody),
        (status = 404, description = "unknown path", body = ErrorBody)))]
pub(super) async fn hops(State(s): State<AppState>, Q(q): Q<HopsQuery>) -> ApiResult<PathHops> {
    let t = s.shared.topology.snapshot();
    let id = parse_path_id(&q.path)?;
    if !t.paths.contains_key(&id) {
        return Err(not_found(format!("path {} unknown", hex_id(id))));
    }
    Ok(axum::Json(PathHops {
        hops: hop_values(&s, &t, id),
        path: hex_id(id),
    }))
}

/// A bar chart of one measurement's current value at each AS hop of a path (as
/// `/dashboard/hops` has them).
#[utoipa::path(get, path = "/dashboard/charts/hops.svg", tag = "dashboard", params(ChartQuery),
    responses(
        (status = 200, description = "the chart (SVG)", body = String, content_type = "image/svg+xml"),
        (status = 400, description = "bad path id, measurement or parameter", body = ErrorBody),
        (status = 404, description = "unknown path", body = ErrorBody)))]
pub(super) async fn hops_chart(
    State(s): State<AppState>,
    Q(q): Q<ChartQuery>,
) -> Result<Response, ApiError> {
    let t = s.shared.topology.snapshot();
    let (id, m) = chart_target(&t, &q)?;
    let bars: Vec<(String, Option<f64>)> = hop_values(&s, &t, id)
        .into_iter()
        .map(|h| {
            let v = hop_value(&h, m);
            (h.ia, v)
        })
        .collect();
    svg(charts::bars(
        &format!("{} per AS hop", title_of(m)),
        m,
        &bars,
    ))
}

/// A line chart of one measurement of a path over the values kept in memory (written values
/// and the peaks between them, `detection.history` per key) and the current one.
#[utoipa::path(get, path = "/dashboard/charts/history.svg", tag = "dashboard", params(ChartQuery),
    responses(
        (status = 200, description = "the chart (SVG)", body = String, content_type = "image/svg+xml"),
        (status = 400, description = "bad path id, measurement or parameter", body = ErrorBody),
        (status = 404, description = "unknown path", body = ErrorBody)))]
pub(super) async fn history_chart(
    State(s): State<AppState>,
    Q(q): Q<ChartQuery>,
) -> Result<Response, ApiError> {
    let t = s.shared.topology.snapshot();
    let (id, m) = chart_target(&t, &q)?;
    let points = s
        .shared
        .metrics
        .get_with(&MetricKey::path(id, m), |l| {
            let mut p = l.kept_since(0);
            if p.last().is_none_or(|last| last.0 < l.time_ns) {
                p.push((l.time_ns, l.value));
            }
            p
        })
        .unwrap_or_default();
    svg(charts::line(
        &format!("Path {}", title_of(m).to_lowercase()),
        m,
        &points,
        now_ns(),
    ))
}

/// Parameters of `GET /dashboard/topology.svg`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct TopologyQuery {
    /// A path to highlight (16 hex digits).
    #[param(pattern = "^[0-9a-fA-F]{16}$")]
    path: Option<String>,
    /// Ignored: a page adds it to make each refresh's URL unique (any number).
    #[serde(rename = "t")]
    #[param(rename = "t")]
    _refresh: Option<u64>,
}

/// The two ends of a link: (ISD-AS, interface id) each.
type LinkEnds = [(IsdAsn, u16); 2];

/// A link's latency and utilisation as text (each from whichever end measured it as the
/// sender), nothing when neither is measured.
fn link_values(s: &AppState, ends: LinkEnds) -> Vec<String> {
    [Measurement::LatencyNs, Measurement::UtilisationKbps]
        .into_iter()
        .filter_map(|m| {
            let v = ends.iter().find_map(|&(ia, ifid)| {
                s.shared
                    .metrics
                    .get_with(&MetricKey::link(ia, ifid, m), |l| l.value)
            })?;
            let (div, unit) = charts::display_unit(m, v);
            Some(format!("{} {unit}", charts::short(v / div)))
        })
        .collect()
}

/// The topology as a graph: ASes (bounded), imported links between them (labelled with
/// their interfaces, latency and utilisation) and, dashed, AS hops of paths no imported
/// link covers.
fn graph(s: &AppState, t: &Topology, highlight: Option<u64>) -> charts::Graph {
    let named_only = t.ases_named_only();
    let all: Vec<(IsdAsn, Option<bool>)> = t
        .ases
        .iter()
        .map(|(ia, a)| (*ia, Some(a.core)))
        .chain(named_only.iter().map(|ia| (*ia, None)))
        .collect();
    let mut left_out = all.len().saturating_sub(MAX_GRAPH_ASES);
    let on_path: Vec<IsdAsn> = highlight
        .and_then(|id| t.paths.get(&id))
        .map(|p| p.hops.iter().map(|h| h.ia).collect())
        .unwrap_or_default();
    let nodes: Vec<charts::Node> = all
        .iter()
        .take(MAX_GRAPH_ASES)
        .map(|&(ia, core)| charts::Node {
            label: ia.to_string(),
            isd: ia.isd().0,
            core,
            local: ia == s.local_ia,
            highlighted: on_path.contains(&ia),
        })
        .collect();
    let index: BTreeMap<IsdAsn, usize> = all
        .iter()
        .take(MAX_GRAPH_ASES)
        .enumerate()
        .map(|(i, (ia, _))| (*ia, i))
        .collect();
    let pair = |a: IsdAsn, b: IsdAsn| if a <= b { (a, b) } else { (b, a) };
    let path_pairs: Vec<(IsdAsn, IsdAsn)> = on_path.windows(2).map(|w| pair(w[0], w[1])).collect();
    // Imported links by AS pair.
    let mut by_pair: BTreeMap<(IsdAsn, IsdAsn), Vec<LinkEnds>> = BTreeMap::new();
    for l in &t.links {
        by_pair
            .entry(pair(l.a, l.b))
            .or_default()
            .push([(l.a, l.a_if), (l.b, l.b_if)]);
    }
    let mut from_paths = std::collections::BTreeSet::new();
    for p in t.paths.values().take(MAX_GRAPH_PATHS) {
        for w in p.hops.windows(2) {
            let k = pair(w[0].ia, w[1].ia);
            if !by_pair.contains_key(&k) {
                from_paths.insert(k);
            }
        }
    }
    let mut edges = Vec::new();
    let wanted = by_pair
        .iter()
        .map(|(k, ls)| (*k, Some(ls)))
        .chain(from_paths.iter().map(|k| (*k, None)));
    for ((a, b), links) in wanted {
        let (Some(&ia), Some(&ib)) = (index.get(&a), index.get(&b)) else {
            left_out += 1;
            continue;
        };
        if edges.len() == MAX_GRAPH_LINKS {
            left_out += 1;
            continue;
        }
        let label = match links.map(Vec::as_slice) {
            Some([ends]) => {
                let mut parts = vec![format!("{}–{}", ends[0].1, ends[1].1)];
                parts.extend(link_values(s, *ends));
                parts.join(" · ")
            }
            Some(several) => format!("{} links", several.len()),
            None => String::new(),
        };
        edges.push(charts::Edge {
            a: ia,
            b: ib,
            label,
            from_paths: links.is_none(),
            highlighted: path_pairs.contains(&(a, b)),
        });
    }
    charts::Graph {
        nodes,
        edges,
        left_out,
    }
}

/// The topology as an SVG graph: ASes in one column per ISD (core ASes on top, the
/// collector's own AS framed), links with their interfaces and latency, links known only
/// from paths dashed, and optionally one path highlighted.
#[utoipa::path(get, path = "/dashboard/topology.svg", tag = "dashboard", params(TopologyQuery),
    responses(
        (status = 200, description = "the graph (SVG)", body = String, content_type = "image/svg+xml"),
        (status = 400, description = "bad path id or parameter", body = ErrorBody),
        (status = 404, description = "unknown path", body = ErrorBody)))]
pub(super) async fn topology_svg(
    State(s): State<AppState>,
    Q(q): Q<TopologyQuery>,
) -> Result<Response, ApiError> {
    let t = s.shared.topology.snapshot();
    let highlight = q.path.as_deref().map(parse_path_id).transpose()?;
    if let Some(id) = highlight.filter(|id| !t.paths.contains_key(id)) {
        return Err(not_found(format!("path {} unknown", hex_id(id))));
    }
    svg(charts::topology(&graph(&s, &t, highlight)))
}
