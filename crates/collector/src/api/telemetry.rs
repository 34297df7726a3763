//! Metric values: the current ones and their history.

use std::collections::BTreeMap;

use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ErrorBody, bad};
use super::responses::{History, HistorySource, LatestValue, Series, TelemetryList, hex_id};
use super::{ApiResult, Page, Q, next_offset, page, paged, parse_ia, parse_path_id};
use crate::state::{AppState, now_ns};
use collector_core::metrics::{HistorySeries, HistoryStore, Measurement, MetricKey, Scope};

/// Most steps per series a bucketed history query may ask for.
pub const MAX_HISTORY_STEPS: u64 = 10_000;

/// Most points one history answer may hold (series times points per series): what one
/// unauthenticated request may make the collector copy, hold and serialise.
pub const MAX_HISTORY_POINTS: u64 = 1_000_000;

/// How long a query to the time-series store may take before the request is answered 504
/// (the store's client gives up after about as long).
pub const STORE_QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How far back a history query reaches without `from`, ns (an hour).
const DEFAULT_HISTORY_NS: u64 = 3_600_000_000_000;

/// Nanoseconds in a millisecond.
const NS_PER_MS: u64 = 1_000_000;

/// The filters of a metric key query.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct KeyQuery {
    /// hop, router, link, queue or path.
    scope: Option<String>,
    /// latency_ns, utilisation_kbps, queue_len, energy_nj or co2_pg.
    measurement: Option<String>,
    /// ISD-AS (router, link, queue).
    ia: Option<String>,
    /// Router node id (router, queue).
    node: Option<u32>,
    /// Interface id (link, queue).
    ifid: Option<u16>,
    /// Path id, 16 hex digits (hop, path).
    #[param(pattern = "^[0-9a-fA-F]{16}$")]
    path: Option<String>,
    /// AS hop index on the path (hop).
    hop: Option<u64>,
    /// Most values (default 1000, at most 10000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Values to skip (default 0; `next_offset` of the previous page).
    offset: Option<usize>,
}

/// A scope from its name.
pub(super) fn parse_scope(s: &str) -> Result<Scope, ApiError> {
    serde_json::from_value(serde_json::Value::String(s.into())).map_err(|_| {
        bad(format!(
            "unknown scope {s:?} (hop, router, link, queue, path)"
        ))
    })
}

/// A measurement from its name.
fn parse_measurement(s: &str) -> Result<Measurement, ApiError> {
    Measurement::from_name(s).ok_or_else(|| {
        bad(format!(
            "unknown measurement {s:?} (latency_ns, utilisation_kbps, queue_len, energy_nj, co2_pg)"
        ))
    })
}

/// Every scope.
const SCOPES: [Scope; 5] = [
    Scope::Hop,
    Scope::Router,
    Scope::Link,
    Scope::Queue,
    Scope::Path,
];

/// The key filters a scope takes.
fn filters_of(scope: Scope) -> &'static [&'static str] {
    match scope {
        Scope::Hop => &["path", "hop"],
        Scope::Path => &["path"],
        Scope::Router => &["ia", "node"],
        Scope::Link => &["ia", "ifid"],
        Scope::Queue => &["ia", "node", "ifid"],
    }
}

/// A filter over metric keys from query parameters. A key matches when its scope takes every
/// filter given and the filters match; a filter the requested scope does not take, or
/// filters no scope takes together, are a 400 (the same rule for every source).
fn key_filter(q: &KeyQuery) -> Result<impl Fn(&MetricKey) -> bool + use<>, ApiError> {
    let scope = q.scope.as_deref().map(parse_scope).transpose()?;
    let m = q
        .measurement
        .as_deref()
        .map(parse_measurement)
        .transpose()?;
    let given: Vec<&str> = [
        ("ia", q.ia.is_some()),
        ("node", q.node.is_some()),
        ("ifid", q.ifid.is_some()),
        ("path", q.path.is_some()),
        ("hop", q.hop.is_some()),
    ]
    .into_iter()
    .filter_map(|(n, g)| g.then_some(n))
    .collect();
    let takes = |s: Scope| given.iter().all(|g| filters_of(s).contains(g));
    match scope {
        Some(sc) => {
            if let Some(g) = given.iter().find(|g| !filters_of(sc).contains(g)) {
                return Err(bad(format!(
                    "{g} does not apply to scope {} (it takes {})",
                    crate::storage::scope_name(sc),
                    filters_of(sc).join(", ")
                )));
            }
        }
        None => {
            if !SCOPES.into_iter().any(takes) {
                return Err(bad(format!(
                    "no scope takes {} together (hop: path, hop; path: path; router: ia, node; \
                     link: ia, ifid; queue: ia, node, ifid)",
                    given.join(", ")
                )));
            }
        }
    }
    let applies: [bool; 5] = SCOPES.map(takes);
    let ia =
        q.ia.as_deref()
            .map(parse_ia)
            .transpose()?
            .map(|i| i.to_u64());
    let path = q.path.as_deref().map(parse_path_id).transpose()?;
    let (node, ifid, hop) = (q.node, q.ifid, q.hop);
    Ok(move |k: &MetricKey| {
        let [a, b, c] = k.ids;
        scope.is_none_or(|s| k.scope == s)
            && m.is_none_or(|m| k.measurement == m)
            && SCOPES
                .iter()
                .position(|s| *s == k.scope)
                .is_some_and(|i| applies[i])
            && match k.scope {
                Scope::Hop => path.is_none_or(|p| a == p) && hop.is_none_or(|h| b == h),
                Scope::Path => path.is_none_or(|p| a == p),
                Scope::Router => {
                    ia.is_none_or(|x| a == x) && node.is_none_or(|n| b == u64::from(n))
                }
                Scope::Link => ia.is_none_or(|x| a == x) && ifid.is_none_or(|f| b == u64::from(f)),
                Scope::Queue => {
                    ia.is_none_or(|x| a == x)
                        && node.is_none_or(|n| b == u64::from(n))
                        && ifid.is_none_or(|f| c == u64::from(f))
                }
            }
    })
}

/// Current values of the matching metric keys.
#[utoipa::path(get, path = "/api/v1/telemetry", tag = "telemetry", params(KeyQuery),
    responses(
        (status = 200, description = "current values", body = TelemetryList),
        (status = 400, description = "bad filter or limit", body = ErrorBody)))]
pub(super) async fn telemetry(
    State(s): State<AppState>,
    Q(q): Q<KeyQuery>,
) -> ApiResult<TelemetryList> {
    let f = key_filter(&q)?;
    let pg = page(q.limit, q.offset)?;
    let sel = s.shared.metrics.select_page(f, pg, LatestValue::new);
    Ok(axum::Json(TelemetryList {
        next_offset: next_offset(pg, sel.total),
        telemetry: sel.items,
        total: sel.total,
    }))
}

/// Parameters of `GET /api/v1/telemetry/history`: the key filters and a time range.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct HistoryQuery {
    /// hop, router, link, queue or path.
    scope: Option<String>,
    /// latency_ns, utilisation_kbps, queue_len, energy_nj or co2_pg.
    measurement: Option<String>,
    /// ISD-AS (router, link, queue).
    ia: Option<String>,
    /// Router node id (router, queue).
    node: Option<u32>,
    /// Interface id (link, queue).
    ifid: Option<u16>,
    /// Path id, 16 hex digits (hop, path).
    #[param(pattern = "^[0-9a-fA-F]{16}$")]
    path: Option<String>,
    /// AS hop index on the path (hop).
    hop: Option<u64>,
    /// Start, Unix ns (default: an hour before `to`).
    from: Option<u64>,
    /// End, Unix ns (default: now).
    to: Option<u64>,
    /// Bucket width, ms (> 0; at most 10000 buckets; default: one bucket per written value).
    #[param(minimum = 1)]
    step_ms: Option<u64>,
    /// avg, min, max or last (default avg).
    agg: Option<String>,
    /// Most series (default 1000, at most 10000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Series to skip (default 0; `next_offset` of the previous page).
    offset: Option<usize>,
}

impl HistoryQuery {
    /// The key part (serde's `flatten` would turn the numbers into strings).
    fn key(&self) -> KeyQuery {
        KeyQuery {
            scope: self.scope.clone(),
            measurement: self.measurement.clone(),
            ia: self.ia.clone(),
            node: self.node,
            ifid: self.ifid,
            path: self.path.clone(),
            hop: self.hop,
            limit: self.limit,
            offset: self.offset,
        }
    }
}

/// The validated time range of a history query: (from, to, step in ns, aggregation). The
/// same rules hold for the in-memory and the time-series store source.
fn history_range(q: &HistoryQuery) -> Result<(u64, u64, Option<u64>, String), ApiError> {
    let to = q.to.unwrap_or_else(now_ns);
    let from = q.from.unwrap_or(to.saturating_sub(DEFAULT_HISTORY_NS));
    if from > to {
        return Err(bad("from is after to"));
    }
    let agg = q.agg.clone().unwrap_or_else(|| "avg".into());
    if !matches!(agg.as_str(), "avg" | "min" | "max" | "last") {
        return Err(bad(format!(
            "unknown aggregation {agg:?} (avg, min, max, last)"
        )));
    }
    let step = match q.step_ms {
        None => None,
        Some(0) => return Err(bad("step_ms must be > 0")),
        Some(ms) => {
            let ns = ms
                .checked_mul(NS_PER_MS)
                .ok_or_else(|| bad(format!("step_ms {ms} is too large")))?;
            let steps = (to - from) / ns + 1;
            if steps > MAX_HISTORY_STEPS {
                return Err(bad(format!(
                    "from..to in steps of {ms} ms is {steps} steps; at most \
                     {MAX_HISTORY_STEPS}: use a larger step_ms or a shorter range"
                )));
            }
            Some(ns)
        }
    };
    Ok((from, to, step, agg))
}

/// Written values of the matching keys over a time range, optionally bucketed: from the
/// time-series store when one is configured and both scope and measurement are given, else
/// from memory.
#[utoipa::path(get, path = "/api/v1/telemetry/history", tag = "telemetry", params(HistoryQuery),
    responses(
        (status = 200, description = "one series per key", body = History),
        (status = 400, description = "bad filter or range", body = ErrorBody),
        (status = 502, description = "the time-series store failed", body = ErrorBody),
        (status = 504, description = "the time-series store did not answer in time",
            body = ErrorBody)))]
pub(super) async fn history(
    State(s): State<AppState>,
    Q(q): Q<HistoryQuery>,
) -> ApiResult<History> {
    let f = key_filter(&q.key())?;
    let (from, to, step, agg) = history_range(&q)?;
    let pg = page(q.limit, q.offset)?;
    if let (Some(store), Some(scope), Some(m)) =
        (&s.history, q.scope.as_deref(), q.measurement.as_deref())
    {
        let range = collector_core::metrics::HistoryQuery {
            scope: parse_scope(scope)?,
            measurement: parse_measurement(m)?,
            tags: Vec::new(),
            from_ns: from,
            to_ns: to,
            step_ns: step.unwrap_or(0),
            agg,
        };
        return store_history(store.as_ref(), &q, range, pg).await;
    }
    // Points one series from memory may hold: no more than memory keeps of a key, nor more
    // than its steps (the store's answers are counted when they come).
    let kept = s.shared.detection.history as u64;
    let per_series = step.map_or(kept, |st| kept.min((to - from) / st + 1));
    if per_series.saturating_mul(pg.1 as u64) > MAX_HISTORY_POINTS {
        return Err(bad(format!(
            "{} series of up to {per_series} points each may exceed {MAX_HISTORY_POINTS} \
             points: ask for fewer series (limit) or fewer steps (step_ms, from, to)",
            pg.1
        )));
    }
    // Only the range's points of the page's keys are copied under the lock; they are
    // bucketed after it.
    let sel = s.shared.metrics.select_page(f, pg, |k, l| {
        let pts: Vec<(u64, f64)> = l
            .history
            .iter()
            .filter(|(t, _)| (from..=to).contains(t))
            .copied()
            .collect();
        (*k, pts)
    });
    let series = sel
        .items
        .into_iter()
        .map(|(k, pts)| {
            let points = match step {
                None => pts,
                Some(st) => bucket(pts.into_iter(), from, st, &agg),
            };
            Series::of_key(&k, points)
        })
        .collect();
    Ok(axum::Json(History {
        from,
        next_offset: next_offset(pg, sel.total),
        series,
        source: HistorySource::Memory,
        to,
        total: sel.total,
    }))
}

/// Series from the time-series store, given up after [`STORE_QUERY_TIMEOUT`] (504); a store
/// failure is a 502.
pub(super) async fn query_store(
    store: &dyn HistoryStore,
    q: collector_core::metrics::HistoryQuery,
) -> Result<Vec<HistorySeries>, ApiError> {
    tokio::time::timeout(STORE_QUERY_TIMEOUT, store.query(q))
        .await
        .map_err(|_| store_timed_out())?
        .map_err(store_failed)
}

/// A time-series store that did not answer within [`STORE_QUERY_TIMEOUT`]: a 504.
fn store_timed_out() -> ApiError {
    ApiError::GatewayTimeout(format!(
        "time-series store: no answer within {} s",
        STORE_QUERY_TIMEOUT.as_secs()
    ))
}

/// A time-series store failure: a 502.
fn store_failed(e: impl std::fmt::Display) -> ApiError {
    ApiError::BadGateway(format!("time-series store: {e}"))
}

/// History from the time-series store (every written value, not only the recent ones kept in
/// memory); `range` is validated, its tags are filled in here from the key filters.
async fn store_history(
    store: &dyn HistoryStore,
    q: &HistoryQuery,
    mut range: collector_core::metrics::HistoryQuery,
    pg: Page,
) -> ApiResult<History> {
    let k = &q.key();
    let tags = &mut range.tags;
    if let Some(ia) = &k.ia {
        tags.push(("ia".to_string(), parse_ia(ia)?.to_string()));
    }
    if let Some(n) = k.node {
        tags.push(("node".into(), n.to_string()));
    }
    if let Some(f) = k.ifid {
        tags.push(("ifid".into(), f.to_string()));
    }
    if let Some(p) = &k.path {
        tags.push(("path".into(), hex_id(parse_path_id(p)?)));
    }
    if let Some(h) = k.hop {
        tags.push(("hop".into(), h.to_string()));
    }
    let (scope, m, from, to) = (range.scope, range.measurement, range.from_ns, range.to_ns);
    let series = query_store(store, range).await?;
    let total = series.len();
    let points: usize = series
        .iter()
        .skip(pg.0)
        .take(pg.1)
        .map(|x| x.points.len())
        .sum();
    if points as u64 > MAX_HISTORY_POINTS {
        return Err(bad(format!(
            "the range holds {points} points in the store for the page's series, at most \
             {MAX_HISTORY_POINTS}: use step_ms, a shorter range or a smaller limit"
        )));
    }
    let series = paged(series.into_iter(), pg)
        .into_iter()
        .map(|x| Series {
            measurement: m.into(),
            points: x.points,
            scope: scope.into(),
            tags: x.tags,
        })
        .collect();
    Ok(axum::Json(History {
        from,
        next_offset: next_offset(pg, total),
        series,
        source: HistorySource::Store,
        to,
        total,
    }))
}

/// Points bucketed by `step` from `from`, each bucket aggregated by `agg`.
fn bucket(
    pts: impl Iterator<Item = (u64, f64)>,
    from: u64,
    step: u64,
    agg: &str,
) -> Vec<(u64, f64)> {
    let mut buckets: BTreeMap<u64, (f64, f64, f64, f64, u32)> = BTreeMap::new();
    for (t, v) in pts {
        let b = from + (t - from) / step * step;
        let e = buckets.entry(b).or_insert((0.0, f64::MAX, f64::MIN, v, 0));
        e.0 += v;
        e.1 = e.1.min(v);
        e.2 = e.2.max(v);
        e.3 = v;
        e.4 += 1;
    }
    buckets
        .into_iter()
        .map(|(b, (sum, min, max, last, n))| {
            let v = match agg {
                "min" => min,
                "max" => max,
                "last" => last,
                _ => sum / f64::from(n),
            };
            (b, v)
        })
        .collect()
}
