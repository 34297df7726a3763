//! SLA checks: violations of a path objective over a window.

use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ErrorBody, bad, not_found};
use super::responses::{SlaCheck, SlaSource, Violation, Window, hex_id};
use super::telemetry::{MAX_HISTORY_POINTS, query_store};
use super::topology::{default_objective, objective};
use super::{ApiResult, Q, parse_path_id};
use crate::state::{AppState, now_ns};
use collector_core::metrics::{HistoryQuery, MetricKey, Scope};

/// The window judged without `window_s`, seconds.
const DEFAULT_WINDOW_S: u64 = 300;

/// Nanoseconds in a second.
const NS_PER_S: u64 = 1_000_000_000;

/// Parameters of `GET /api/v1/sla`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct SlaQuery {
    /// Path id (16 hex digits).
    #[param(pattern = "^[0-9a-fA-F]{16}$")]
    path: String,
    /// latency (default), utilisation, queue, carbon or energy.
    #[serde(default = "default_objective")]
    objective: String,
    /// The objective's bound (in the measurement's unit, finite); values above it violate.
    max: f64,
    /// Window, seconds back from now (default 300).
    window_s: Option<u64>,
}

/// Violations of a path objective over a window: memory since the collector started, the
/// time-series store before (`complete` is false when part of the window was not covered).
#[utoipa::path(get, path = "/api/v1/sla", tag = "telemetry", params(SlaQuery),
    responses(
        (status = 200, description = "the check", body = SlaCheck),
        (status = 400, description = "bad path id, objective, bound or parameter",
         body = ErrorBody),
        (status = 404, description = "unknown path", body = ErrorBody),
        (status = 502, description = "the time-series store failed", body = ErrorBody),
        (status = 504, description = "the time-series store did not answer in time",
            body = ErrorBody)))]
pub(super) async fn sla(State(s): State<AppState>, Q(q): Q<SlaQuery>) -> ApiResult<SlaCheck> {
    let id = parse_path_id(&q.path)?;
    let m = objective(&q.objective)?;
    if !q.max.is_finite() {
        return Err(bad(format!("max must be a finite number, not {}", q.max)));
    }
    if !s.shared.topology.snapshot().paths.contains_key(&id) {
        return Err(not_found(format!("path {} unknown", hex_id(id))));
    }
    let now = now_ns();
    let window_s = q.window_s.unwrap_or(DEFAULT_WINDOW_S);
    let from = now.saturating_sub(window_s.saturating_mul(NS_PER_S));
    // One key's state, its bounded history included.
    let l = s.shared.metrics.get(&MetricKey::path(id, m));
    // Since this process started, memory: the written values and the largest unwritten value
    // between them (a value event detection did not write, being within its threshold of the
    // last written one, may still exceed the bound), as far back as memory still keeps them
    // (it keeps `detection.history` of each). Before, what the time-series store holds (the
    // written values; the unwritten peaks of an earlier process are gone).
    let memory_from = match l.as_ref().and_then(|l| l.forgotten_ns) {
        Some(t) => s.started_ns.max(t.saturating_add(1)),
        None => s.started_ns,
    };
    let mut pts: Vec<(u64, f64)> = Vec::new();
    let mut covered_from = from.max(memory_from);
    let mut sources = vec![SlaSource::Memory];
    if let (true, Some(store)) = (from < memory_from, &s.history) {
        let earlier = HistoryQuery {
            scope: Scope::Path,
            measurement: m,
            tags: vec![("path".into(), hex_id(id))],
            from_ns: from,
            to_ns: memory_from - 1,
            step_ns: 0,
            agg: "max".into(),
        };
        let series = query_store(store.as_ref(), earlier).await?;
        let points: usize = series.iter().map(|x| x.points.len()).sum();
        if points as u64 > MAX_HISTORY_POINTS {
            return Err(bad(format!(
                "the window holds {points} points in the store, at most {MAX_HISTORY_POINTS}: \
                 use a shorter window_s"
            )));
        }
        pts.extend(series.iter().flat_map(|x| x.points.iter().copied()));
        pts.sort_by_key(|p| p.0);
        covered_from = from;
        sources.insert(0, SlaSource::Store);
    }
    pts.extend(
        l.as_ref()
            .map(|l| l.kept_since(from.max(memory_from)))
            .unwrap_or_default(),
    );
    let violations: Vec<Violation> = pts
        .iter()
        .filter(|(_, v)| *v > q.max)
        .map(|&(time_ns, value)| Violation { time_ns, value })
        .collect();
    let current = l.as_ref().map(|l| (l.time_ns, l.value));
    // The latest value counts against the objective only if it was measured in the window.
    let current_in_window = current.filter(|(t, _)| *t >= from).map(|(_, v)| v);
    Ok(axum::Json(SlaCheck {
        // Values from `covered_from` on were seen (`sources`); before it (a window reaching
        // back before this process started, or before the oldest value memory still keeps,
        // without a time-series store) nothing is known.
        complete: covered_from <= from,
        compliant: violations.is_empty() && current_in_window.is_none_or(|c| c <= q.max),
        covered_from,
        current: current.map(|(_, v)| v),
        max: q.max,
        measurement: m.into(),
        path: hex_id(id),
        samples: pts.len(),
        sources,
        violations,
        window: Window { from, to: now },
    }))
}
