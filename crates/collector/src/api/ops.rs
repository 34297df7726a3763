//! Operations: liveness, readiness and the Prometheus counters.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorBody};
use super::responses::{Status, StatusBody};
use super::{ApiResult, AppState};

/// The content type of the Prometheus text exposition format.
pub(super) const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4";

/// Bytes reserved up front for the Prometheus text.
const PROMETHEUS_CAPACITY: usize = 4096;

/// Liveness.
#[utoipa::path(get, path = "/health", tag = "operations",
    responses((status = 200, description = "alive", body = StatusBody)))]
pub(super) async fn health() -> axum::Json<StatusBody> {
    axum::Json(StatusBody { status: Status::Ok })
}

/// Readiness (every pipeline worker running).
#[utoipa::path(get, path = "/ready", tag = "operations", responses(
    (status = 200, description = "ready", body = StatusBody),
    (status = 503, description = "pipeline workers not running", body = ErrorBody)))]
pub(super) async fn ready(State(s): State<AppState>) -> ApiResult<StatusBody> {
    if s.ready.load(Relaxed) == s.workers {
        Ok(axum::Json(StatusBody {
            status: Status::Ready,
        }))
    } else {
        Err(ApiError::Unavailable("pipeline workers not running".into()))
    }
}

/// The collector's own counters and gauges.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, description = "Prometheus text exposition", body = String,
     content_type = "text/plain")))]
pub(super) async fn prometheus(State(s): State<AppState>) -> Response {
    let mut out = String::with_capacity(PROMETHEUS_CAPACITY);
    s.shared.counters.prometheus(&mut out);
    let g = |out: &mut String, name: &str, help: &str, v: usize| {
        let _ = writeln!(
            out,
            "# HELP idint_collector_{name} {help}\n# TYPE idint_collector_{name} gauge\nidint_collector_{name} {v}"
        );
    };
    g(
        &mut out,
        "queue_free",
        "Free slots in the ingest queue",
        s.queue.free(),
    );
    g(
        &mut out,
        "metric_keys",
        "Metric keys in memory",
        s.shared.metrics.len(),
    );
    // What `/ready` answers, for alerting: ready when every started worker runs.
    g(&mut out, "workers", "Pipeline workers started", s.workers);
    g(
        &mut out,
        "workers_ready",
        "Pipeline workers running (ready when equal to workers)",
        s.ready.load(Relaxed),
    );
    // Only ever grows: a counter (Prometheus `rate()` then works across its samples).
    let _ = writeln!(
        out,
        "# HELP idint_collector_quarantine_evicted_total Quarantined reports pushed out by \
         newer ones\n# TYPE idint_collector_quarantine_evicted_total counter\n\
         idint_collector_quarantine_evicted_total {}",
        s.shared.quarantine.evicted()
    );
    if let Some(sink) = &s.shared.sink {
        sink.prometheus(&mut out);
    }
    if let Some(sink) = s.shared.topology.sink() {
        sink.prometheus(&mut out);
    }
    ([(header::CONTENT_TYPE, PROMETHEUS_TEXT)], out).into_response()
}
