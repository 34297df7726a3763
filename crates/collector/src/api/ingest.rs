//! Ingest over HTTP (`POST /api/v1/reports`) and the reports it rejected.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ErrorBody, bad};
use super::responses::{QuarantineList, QuarantinedBody, Queued};
use super::{ApiResult, Q};
use crate::state::{AppState, DispatchError};
use collector_core::counters::{MalformedReason, RejectReason, Transport};
use collector_core::pipeline::{Format, decode_batch};

/// Quarantined reports `GET /api/v1/quarantine` lists by default.
const QUARANTINE_DEFAULT_LIMIT: usize = 100;

/// Most quarantined reports one `GET /api/v1/quarantine` lists.
const QUARANTINE_MAX_LIMIT: usize = 10_000;

/// Why a body was not read.
enum ReadError {
    /// Larger than the limit (bytes seen so far).
    TooLarge(usize),
    /// The connection failed (e.g. a body shorter than its Content-Length).
    Failed(String),
}

/// Reads a body of at most `max` bytes, refusing it as soon as it grows larger.
async fn read_body(mut body: Body, max: usize) -> Result<Vec<u8>, ReadError> {
    use axum::body::HttpBody as _;
    let mut out = Vec::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let frame = frame.map_err(|e| ReadError::Failed(e.to_string()))?;
        if let Ok(d) = frame.into_data() {
            let n = out.len().saturating_add(d.len());
            if n > max {
                return Err(ReadError::TooLarge(n));
            }
            out.extend_from_slice(&d);
        }
    }
    Ok(out)
}

/// The batch format of a `Content-Type` (none: protobuf). Media types compare
/// case-insensitively; parameters are allowed.
fn batch_format(h: &HeaderMap) -> Result<Format, ApiError> {
    let Some(v) = h.get(header::CONTENT_TYPE) else {
        return Ok(Format::Protobuf);
    };
    let use_these = "use application/x-protobuf or application/json";
    let ct = v.to_str().map_err(|_| {
        ApiError::UnsupportedMediaType(format!("content type is not ASCII: {use_these}"))
    })?;
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/json" => Ok(Format::Json),
        "" | "application/x-protobuf" | "application/protobuf" | "application/octet-stream" => {
            Ok(Format::Protobuf)
        }
        _ => Err(ApiError::UnsupportedMediaType(format!(
            "content type {ct:?}: {use_these}"
        ))),
    }
}

/// Ingests a `ReportBatch` (protobuf `idint.report.v1.ReportBatch`, or its JSON form).
#[utoipa::path(post, path = "/api/v1/reports", tag = "ingest",
    request_body(description = "a ReportBatch (no Content-Type: protobuf)", content(
        ("application/x-protobuf"), ("application/json"))),
    responses(
        (status = 202, description = "queued for verification", body = Queued),
        (status = 400, description = "malformed batch or unreadable body", body = ErrorBody),
        (status = 413, description = "over ingest.max_batch_bytes or max_batch_reports",
         body = ErrorBody),
        (status = 415, description = "unsupported content type", body = ErrorBody),
        (status = 503, description = "queue full (Retry-After) or shutting down",
         body = ErrorBody)))]
pub(super) async fn ingest(State(s): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    match ingest_batch(&s, &headers, body).await {
        Ok(n) => (
            StatusCode::ACCEPTED,
            axum::Json(Queued { queued_reports: n }),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

/// Checks, decodes and queues a batch; the reports queued.
async fn ingest_batch(s: &AppState, headers: &HeaderMap, body: Body) -> Result<usize, ApiError> {
    let c = &s.shared.counters;
    let too_large = |what: String| {
        c.malformed(Transport::Http, MalformedReason::TooLarge);
        ApiError::PayloadTooLarge(what)
    };
    let max = s.max_batch_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > max as u64) {
        return Err(too_large(format!(
            "batch of {n} bytes exceeds ingest.max_batch_bytes {max}"
        )));
    }
    let format = batch_format(headers)?;
    let body = match read_body(body, max).await {
        Ok(b) => b,
        Err(ReadError::TooLarge(n)) => {
            return Err(too_large(format!(
                "batch of more than {} bytes exceeds ingest.max_batch_bytes {max}",
                n - 1
            )));
        }
        Err(ReadError::Failed(e)) => return Err(bad(format!("reading the body: {e}"))),
    };
    let max_reports = s.max_batch_reports;
    let reports_too_many = |n: usize| {
        format!("batch of {n} reports exceeds ingest.max_batch_reports {max_reports}: split it")
    };
    // Counted before decoding: prost would allocate every report first.
    if format == Format::Protobuf {
        let n = collector_core::wire::count_reports(&body);
        if n > max_reports {
            return Err(too_large(reports_too_many(n)));
        }
    }
    let batch = decode_batch(&body, format).map_err(|(reason, msg)| {
        c.malformed(Transport::Http, reason);
        bad(msg)
    })?;
    drop(body);
    let n = batch.reports.len();
    if n > max_reports {
        return Err(too_large(reports_too_many(n)));
    }
    match s.queue.try_batch(batch) {
        Ok(()) => {
            c.http_batches.fetch_add(1, Relaxed);
            Ok(n)
        }
        Err(DispatchError::Full) => {
            c.http_queue_full.fetch_add(1, Relaxed);
            Err(ApiError::QueueFull)
        }
        Err(DispatchError::Closed) => {
            Err(ApiError::Unavailable("collector is shutting down".into()))
        }
    }
}

/// Filters of `GET /api/v1/quarantine`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
pub(super) struct QuarantineQuery {
    /// Only reports rejected for this reason (e.g. `replayed`).
    reason: Option<String>,
    /// Most entries (default 100, at most 10000).
    limit: Option<usize>,
}

/// Rejected reports with their reasons, newest first, and the rejection counts.
#[utoipa::path(get, path = "/api/v1/quarantine", tag = "ingest", params(QuarantineQuery),
    responses(
        (status = 200, description = "counts and reports", body = QuarantineList),
        (status = 400, description = "unknown reason or parameter", body = ErrorBody)))]
pub(super) async fn quarantine(
    State(s): State<AppState>,
    Q(q): Q<QuarantineQuery>,
) -> ApiResult<QuarantineList> {
    let reason = match q.reason.as_deref() {
        None => None,
        Some(r) => Some(
            RejectReason::ALL
                .into_iter()
                .find(|x| x.name() == r)
                .ok_or_else(|| bad(format!("unknown reason {r:?}")))?,
        ),
    };
    let c = &s.shared.counters;
    let rejected: BTreeMap<_, _> = RejectReason::ALL
        .into_iter()
        .map(|r| (r.name().to_owned(), c.rejected(r)))
        .collect();
    let limit = q
        .limit
        .unwrap_or(QUARANTINE_DEFAULT_LIMIT)
        .min(QUARANTINE_MAX_LIMIT);
    Ok(axum::Json(QuarantineList {
        evicted: s.shared.quarantine.evicted(),
        rejected,
        reports: s
            .shared
            .quarantine
            .list(reason, limit)
            .iter()
            .map(|q| QuarantinedBody::from(&**q))
            .collect(),
    }))
}
