//! The REST API (axum). Every error is JSON `{"error": "..."}` with a 4xx/5xx status.
//! The OpenAPI document is served at `/openapi.json`.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use idint_wire::IsdAsn;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::state::{AppState, DispatchError, now_ns};
use collector_core::counters::{RejectReason, Transport};
use collector_core::keys::ImportedKey;
use collector_core::metrics::{Latest, Measurement, MetricKey, Scope};
use collector_core::pipeline::{Format, decode_batch};
use collector_core::topology::{ImportError, PathDescription};

/// An API error: status and message, rendered as JSON.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(json!({ "error": self.1 }))).into_response()
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, msg.into())
}

/// A refused import: 400 for bad input, 503 when the store cannot take it now.
fn import_error(e: ImportError) -> ApiError {
    match e {
        ImportError::Invalid(m) => bad(m),
        ImportError::NotPersisted(m) => ApiError(StatusCode::SERVICE_UNAVAILABLE, m),
    }
}

fn not_found(msg: impl Into<String>) -> ApiError {
    ApiError(StatusCode::NOT_FOUND, msg.into())
}

type ApiResult = Result<axum::Json<Value>, ApiError>;

/// Query parameters; a query string that does not parse is a 400 JSON error.
struct Q<T>(T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Q<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Query::try_from_uri(&parts.uri)
            .map(|Query(t)| Q(t))
            .map_err(|e| bad(e.body_text()))
    }
}

/// A path segment as text; one that does not decode (not UTF-8) is a 400 JSON error.
struct Segment(String);

impl<S: Send + Sync> FromRequestParts<S> for Segment {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        Path::<String>::from_request_parts(parts, s)
            .await
            .map(|Path(p)| Segment(p))
            .map_err(|e| ApiError(e.status(), e.body_text()))
    }
}

/// A request body (up to axum's default limit); a body that cannot be read or is too large
/// is a JSON error with the status axum gives it.
struct RawBody(Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, s: &S) -> Result<Self, ApiError> {
        Bytes::from_request(req, s)
            .await
            .map(RawBody)
            .map_err(|e| ApiError(e.status(), e.body_text()))
    }
}

/// The body of an admin request, read only once its bearer token is accepted (a request
/// without the right token is a 401/403 whatever its body, never a 413).
struct AdminBody(Bytes);

impl FromRequest<AppState> for AdminBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, s: &AppState) -> Result<Self, ApiError> {
        admin(s, req.headers())?;
        let RawBody(b) = RawBody::from_request(req, s).await?;
        Ok(AdminBody(b))
    }
}

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

/// The API's routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(prometheus))
        .route("/openapi.json", get(openapi))
        .route("/api/v1/reports", post(ingest))
        .route("/api/v1/ases", get(list_ases))
        .route("/api/v1/ases/{ia}", get(get_as))
        .route("/api/v1/routers", get(list_routers))
        .route("/api/v1/links", get(list_links))
        .route("/api/v1/paths", get(list_paths))
        .route("/api/v1/paths/unknown", get(unknown_paths))
        .route("/api/v1/paths/rank", get(rank_paths))
        .route("/api/v1/paths/{id}", get(get_path))
        .route("/api/v1/telemetry", get(telemetry))
        .route("/api/v1/telemetry/history", get(history))
        .route("/api/v1/sla", get(sla))
        .route("/api/v1/quarantine", get(quarantine))
        .route("/api/v1/admin/topology", post(import_topology))
        .route("/api/v1/admin/paths", post(import_paths))
        .route("/api/v1/admin/keys", post(import_keys))
        .fallback(|| async { not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed on this endpoint (see /openapi.json)".into(),
            )
        })
        .with_state(state)
}

async fn health() -> axum::Json<Value> {
    axum::Json(json!({"status": "ok"}))
}

async fn ready(State(s): State<AppState>) -> Result<axum::Json<Value>, ApiError> {
    if s.ready.load(Relaxed) == s.workers {
        Ok(axum::Json(json!({"status": "ready"})))
    } else {
        Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "pipeline workers not running".into(),
        ))
    }
}

async fn prometheus(State(s): State<AppState>) -> Response {
    let mut out = String::with_capacity(4096);
    s.shared.counters.prometheus(&mut out);
    let g = |out: &mut String, name: &str, help: &str, v: usize| {
        use std::fmt::Write as _;
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
    {
        // Only ever grows: a counter (Prometheus `rate()` then works across its samples).
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "# HELP idint_collector_quarantine_evicted_total Quarantined reports pushed out by \
             newer ones\n# TYPE idint_collector_quarantine_evicted_total counter\n\
             idint_collector_quarantine_evicted_total {}",
            s.shared.quarantine.evicted()
        );
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

/// The batch format of a `Content-Type` (none: protobuf). Media types compare
/// case-insensitively; parameters are allowed.
fn batch_format(h: &HeaderMap) -> Result<Format, ApiError> {
    let Some(v) = h.get(header::CONTENT_TYPE) else {
        return Ok(Format::Protobuf);
    };
    let use_these = "use application/x-protobuf or application/json";
    let ct = v.to_str().map_err(|_| {
        ApiError(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content type is not ASCII: {use_these}"),
        )
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
        _ => Err(ApiError(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content type {ct:?}: {use_these}"),
        )),
    }
}

async fn ingest(State(s): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let c = &s.shared.counters;
    let too_large = |what: String| {
        c.malformed(
            Transport::Http,
            collector_core::counters::MalformedReason::TooLarge,
        );
        ApiError(StatusCode::PAYLOAD_TOO_LARGE, what).into_response()
    };
    let max = s.max_batch_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > max as u64) {
        return too_large(format!(
            "batch of {n} bytes exceeds ingest.max_batch_bytes {max}"
        ));
    }
    let format = match batch_format(&headers) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let body = match read_body(body, max).await {
        Ok(b) => b,
        Err(ReadError::TooLarge(n)) => {
            return too_large(format!(
                "batch of more than {} bytes exceeds ingest.max_batch_bytes {max}",
                n - 1
            ));
        }
        Err(ReadError::Failed(e)) => return bad(format!("reading the body: {e}")).into_response(),
    };
    let max_reports = s.max_batch_reports;
    let reports_too_many = |n: usize| {
        format!("batch of {n} reports exceeds ingest.max_batch_reports {max_reports}: split it")
    };
    // Counted before decoding: prost would allocate every report first.
    if format == Format::Protobuf {
        let n = collector_core::wire::count_reports(&body);
        if n > max_reports {
            return too_large(reports_too_many(n));
        }
    }
    let batch = match decode_batch(&body, format) {
        Ok(b) => b,
        Err((reason, msg)) => {
            c.malformed(Transport::Http, reason);
            return bad(msg).into_response();
        }
    };
    drop(body);
    let n = batch.reports.len();
    if n > max_reports {
        return too_large(reports_too_many(n));
    }
    match s.queue.try_batch(batch) {
        Ok(()) => {
            c.http_batches.fetch_add(1, Relaxed);
            (
                StatusCode::ACCEPTED,
                axum::Json(json!({"queued_reports": n})),
            )
                .into_response()
        }
        Err(DispatchError::Full) => {
            c.http_queue_full.fetch_add(1, Relaxed);
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                axum::Json(json!({"error": "ingest queue full, retry later"})),
            )
                .into_response()
        }
        Err(DispatchError::Closed) => ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "collector is shutting down".into(),
        )
        .into_response(),
    }
}

fn parse_ia(s: &str) -> Result<IsdAsn, ApiError> {
    s.parse()
        .map_err(|_| bad(format!("bad ISD-AS {s:?} (want e.g. 1-ff00:0:110)")))
}

fn parse_path_id(s: &str) -> Result<u64, ApiError> {
    if s.len() != 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad(format!("bad path id {s:?} (16 hex digits)")));
    }
    u64::from_str_radix(s, 16).map_err(|_| bad(format!("bad path id {s:?} (16 hex digits)")))
}

fn latest_json(k: &MetricKey, l: &Latest) -> Value {
    let tags: BTreeMap<_, _> = k.tags().into_iter().collect();
    json!({
        "scope": k.scope,
        "tags": tags,
        "measurement": k.measurement.name(),
        "value": l.value,
        "time_ns": l.time_ns,
        "samples": l.samples,
    })
}

fn current(s: &AppState, f: impl Fn(&MetricKey) -> bool) -> Vec<Value> {
    s.shared
        .metrics
        .select(f)
        .iter()
        .map(|(k, l)| latest_json(k, l))
        .collect()
}

/// ASes: those with a record (imported topology or learned routers), then those only links
/// and paths name (`core` unknown: null; `known_from: "paths"`), each list in ISD-AS order.
async fn list_ases(State(s): State<AppState>) -> ApiResult {
    let t = s.shared.topology.snapshot();
    let mut v: Vec<Value> = t
        .ases
        .iter()
        .map(|(ia, a)| json!({"isd_as": ia.to_string(), "core": a.core, "routers": a.routers.len(), "interfaces": a.interfaces.len(), "known_from": "topology"}))
        .collect();
    v.extend(t.ases_named_only().iter().map(|ia| {
        json!({"isd_as": ia.to_string(), "core": null, "routers": 0, "interfaces": 0, "known_from": "paths"})
    }));
    Ok(axum::Json(json!({ "ases": v })))
}

async fn get_as(State(s): State<AppState>, Segment(ia): Segment) -> ApiResult {
    let ia = parse_ia(&ia)?;
    let t = s.shared.topology.snapshot();
    let iau = ia.to_u64();
    let telemetry = || {
        current(&s, |k| {
            matches!(k.scope, Scope::Router | Scope::Link | Scope::Queue) && k.ids[0] == iau
        })
    };
    match t.ases.get(&ia) {
        Some(a) => Ok(axum::Json(json!({
            "isd_as": ia.to_string(),
            "core": a.core,
            "routers": a.routers,
            "interfaces": a.interfaces,
            "known_from": "topology",
            "telemetry": telemetry(),
        }))),
        // Named by links or paths only: it exists, its routers and interfaces are unknown.
        None if t.ases_named_only().contains(&ia) => Ok(axum::Json(json!({
            "isd_as": ia.to_string(),
            "core": null,
            "routers": {},
            "interfaces": {},
            "known_from": "paths",
            "telemetry": telemetry(),
        }))),
        None => Err(not_found(format!("AS {ia} unknown"))),
    }
}

async fn list_routers(State(s): State<AppState>) -> ApiResult {
    let t = s.shared.topology.snapshot();
    let mut v = Vec::new();
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
            v.push(json!({
                "isd_as": ia.to_string(),
                "name": r.name,
                "node_id": r.node_id,
                "interfaces": r.interfaces,
                "telemetry": telemetry,
            }));
        }
    }
    Ok(axum::Json(json!({ "routers": v })))
}

async fn list_links(State(s): State<AppState>) -> ApiResult {
    let t = s.shared.topology.snapshot();
    let side = |ia: IsdAsn, ifid: u16| {
        current(&s, |k| {
            k.scope == Scope::Link && k.ids[0] == ia.to_u64() && k.ids[1] == u64::from(ifid)
        })
    };
    let links: Vec<Value> = t
        .links
        .iter()
        .map(|l| {
            json!({
                "a": {"isd_as": l.a.to_string(), "ifid": l.a_if, "telemetry": side(l.a, l.a_if)},
                "b": {"isd_as": l.b.to_string(), "ifid": l.b_if, "telemetry": side(l.b, l.b_if)},
            })
        })
        .collect();
    Ok(axum::Json(json!({
        "links": links,
        "internal_links": t.internal_links,
    })))
}

#[derive(Deserialize)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
struct PathFilter {
    src: Option<String>,
    dst: Option<String>,
}

fn path_json(s: &AppState, p: &collector_core::topology::PathInfo) -> Value {
    let telemetry = current(s, |k| {
        matches!(k.scope, Scope::Path | Scope::Hop) && k.ids[0] == p.id
    });
    let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
    v["telemetry"] = Value::Array(telemetry);
    v
}

async fn list_paths(State(s): State<AppState>, Q(q): Q<PathFilter>) -> ApiResult {
    let src = q.src.as_deref().map(parse_ia).transpose()?;
    let dst = q.dst.as_deref().map(parse_ia).transpose()?;
    let t = s.shared.topology.snapshot();
    let v: Vec<Value> = t
        .paths
        .values()
        .filter(|p| src.is_none_or(|x| p.src == x) && dst.is_none_or(|x| p.dst == x))
        .map(|p| path_json(&s, p))
        .collect();
    Ok(axum::Json(json!({ "paths": v })))
}

async fn get_path(State(s): State<AppState>, Segment(id): Segment) -> ApiResult {
    let id = parse_path_id(&id)?;
    let t = s.shared.topology.snapshot();
    let p = t
        .paths
        .get(&id)
        .ok_or_else(|| not_found(format!("path {id:016x} unknown")))?;
    Ok(axum::Json(path_json(&s, p)))
}

async fn unknown_paths(State(s): State<AppState>) -> ApiResult {
    Ok(axum::Json(
        json!({ "unknown_paths": s.shared.topology.unknown_paths() }),
    ))
}

/// Path ranking objectives and the path measurement each minimises.
fn objective(name: &str) -> Result<Measurement, ApiError> {
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

#[derive(Deserialize)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
struct RankQuery {
    src: String,
    dst: String,
    #[serde(default = "default_objective")]
    objective: String,
}

fn default_objective() -> String {
    "latency".into()
}

async fn rank_paths(State(s): State<AppState>, Q(q): Q<RankQuery>) -> ApiResult {
    let (src, dst) = (parse_ia(&q.src)?, parse_ia(&q.dst)?);
    let m = objective(&q.objective)?;
    let t = s.shared.topology.snapshot();
    let mut ranked: Vec<(Option<f64>, &collector_core::topology::PathInfo)> = t
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
    let v: Vec<Value> = ranked
        .iter()
        .enumerate()
        .map(|(i, (val, p))| {
            json!({"rank": i + 1, "path": format!("{:016x}", p.id), "value": val, "hops": p.hops})
        })
        .collect();
    Ok(axum::Json(json!({
        "src": src.to_string(), "dst": dst.to_string(),
        "objective": q.objective, "measurement": m.name(), "paths": v,
    })))
}

#[derive(Deserialize)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
struct KeyQuery {
    scope: Option<String>,
    measurement: Option<String>,
    ia: Option<String>,
    node: Option<u32>,
    ifid: Option<u16>,
    path: Option<String>,
    hop: Option<u64>,
}

fn parse_scope(s: &str) -> Result<Scope, ApiError> {
    serde_json::from_value(Value::String(s.into())).map_err(|_| {
        bad(format!(
            "unknown scope {s:?} (hop, router, link, queue, path)"
        ))
    })
}

fn parse_measurement(s: &str) -> Result<Measurement, ApiError> {
    Measurement::from_name(s).ok_or_else(|| {
        bad(format!(
            "unknown measurement {s:?} (latency_ns, utilisation_kbps, queue_len, energy_nj, co2_pg)"
        ))
    })
}

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

async fn telemetry(State(s): State<AppState>, Q(q): Q<KeyQuery>) -> ApiResult {
    let f = key_filter(&q)?;
    Ok(axum::Json(json!({ "telemetry": current(&s, f) })))
}

#[derive(Deserialize)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
struct HistoryQuery {
    scope: Option<String>,
    measurement: Option<String>,
    ia: Option<String>,
    node: Option<u32>,
    ifid: Option<u16>,
    path: Option<String>,
    hop: Option<u64>,
    /// Start, Unix ns (default: an hour ago).
    from: Option<u64>,
    /// End, Unix ns (default: now).
    to: Option<u64>,
    /// Bucket width, ms (default: one bucket per written value).
    step_ms: Option<u64>,
    /// avg, min, max, last (default avg).
    agg: Option<String>,
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
        }
    }
}

/// Most steps per series a bucketed history query may ask for.
pub const MAX_HISTORY_STEPS: u64 = 10_000;

/// The validated time range of a history query: (from, to, step in ns, aggregation). The
/// same rules hold for the in-memory and the time-series store source.
fn history_range(q: &HistoryQuery) -> Result<(u64, u64, Option<u64>, String), ApiError> {
    let to = q.to.unwrap_or_else(now_ns);
    let from = q.from.unwrap_or(to.saturating_sub(3_600_000_000_000));
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
                .checked_mul(1_000_000)
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

async fn history(State(s): State<AppState>, Q(q): Q<HistoryQuery>) -> ApiResult {
    let f = key_filter(&q.key())?;
    let (from, to, step, agg) = history_range(&q)?;
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
        return store_history(store.as_ref(), &q, range).await;
    }
    let series: Vec<Value> = s
        .shared
        .metrics
        .select(f)
        .iter()
        .map(|(k, l)| {
            let pts = l
                .history
                .iter()
                .filter(|(t, _)| (from..=to).contains(t))
                .copied();
            let values: Vec<(u64, f64)> = match step {
                None => pts.collect(),
                Some(st) => bucket(pts, from, st, &agg),
            };
            let tags: BTreeMap<_, _> = k.tags().into_iter().collect();
            json!({
                "scope": k.scope, "tags": tags, "measurement": k.measurement.name(),
                "points": values.iter().map(|(t, v)| json!([t, v])).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(axum::Json(json!({
        "from": from, "to": to, "source": "memory (values written by event detection)",
        "series": series,
    })))
}

/// History from the time-series store (every written value, not only the recent ones kept in
/// memory); `range` is validated, its tags are filled in here from the key filters.
async fn store_history(
    store: &dyn collector_core::metrics::HistoryStore,
    q: &HistoryQuery,
    mut range: collector_core::metrics::HistoryQuery,
) -> ApiResult {
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
        tags.push(("path".into(), format!("{:016x}", parse_path_id(p)?)));
    }
    if let Some(h) = k.hop {
        tags.push(("hop".into(), h.to_string()));
    }
    let (scope, m, from, to) = (range.scope, range.measurement, range.from_ns, range.to_ns);
    let series = store
        .query(range)
        .await
        .map_err(|e| ApiError(StatusCode::BAD_GATEWAY, format!("time-series store: {e}")))?;
    let series: Vec<Value> = series
        .iter()
        .map(|x| {
            json!({
                "scope": scope, "tags": x.tags, "measurement": m.name(),
                "points": x.points.iter().map(|(t, v)| json!([t, v])).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(axum::Json(json!({
        "from": from, "to": to, "source": "time-series store", "series": series,
    })))
}

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

#[derive(Deserialize)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
struct SlaQuery {
    path: String,
    #[serde(default = "default_objective")]
    objective: String,
    /// The objective's bound (in the measurement's unit); values above it violate.
    max: f64,
    /// Window, seconds back from now (default 300).
    window_s: Option<u64>,
}

async fn sla(State(s): State<AppState>, Q(q): Q<SlaQuery>) -> ApiResult {
    let id = parse_path_id(&q.path)?;
    let m = objective(&q.objective)?;
    if !q.max.is_finite() {
        return Err(bad(format!("max must be a finite number, not {}", q.max)));
    }
    if !s.shared.topology.snapshot().paths.contains_key(&id) {
        return Err(not_found(format!("path {id:016x} unknown")));
    }
    let now = now_ns();
    let from = now.saturating_sub(q.window_s.unwrap_or(300).saturating_mul(1_000_000_000));
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
    let mut sources = vec!["memory"];
    if let (true, Some(store)) = (from < memory_from, &s.history) {
        let earlier = collector_core::metrics::HistoryQuery {
            scope: collector_core::metrics::Scope::Path,
            measurement: m,
            tags: vec![("path".into(), format!("{id:016x}"))],
            from_ns: from,
            to_ns: memory_from - 1,
            step_ns: 0,
            agg: "max".into(),
        };
        let series = store
            .query(earlier)
            .await
            .map_err(|e| ApiError(StatusCode::BAD_GATEWAY, format!("time-series store: {e}")))?;
        pts.extend(series.iter().flat_map(|x| x.points.iter().copied()));
        pts.sort_by_key(|p| p.0);
        covered_from = from;
        sources.insert(0, "time-series store");
    }
    pts.extend(
        l.as_ref()
            .map(|l| l.kept_since(from.max(memory_from)))
            .unwrap_or_default(),
    );
    let violations: Vec<Value> = pts
        .iter()
        .filter(|(_, v)| *v > q.max)
        .map(|(t, v)| json!({"time_ns": t, "value": v}))
        .collect();
    let current = l.as_ref().map(|l| (l.time_ns, l.value));
    // The latest value counts against the objective only if it was measured in the window.
    let current_in_window = current.filter(|(t, _)| *t >= from).map(|(_, v)| v);
    Ok(axum::Json(json!({
        "path": format!("{id:016x}"),
        "measurement": m.name(),
        "max": q.max,
        "window": {"from": from, "to": now},
        // Values from `covered_from` on were seen (`sources`); before it (a window reaching
        // back before this process started, or before the oldest value memory still keeps,
        // without a time-series store) nothing is known.
        "covered_from": covered_from,
        "complete": covered_from <= from,
        "sources": sources,
        "samples": pts.len(),
        "current": current.map(|(_, v)| v),
        "violations": violations,
        "compliant": violations.is_empty() && current_in_window.is_none_or(|c| c <= q.max),
    })))
}

#[derive(Deserialize)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
struct QuarantineQuery {
    reason: Option<String>,
    limit: Option<usize>,
}

async fn quarantine(State(s): State<AppState>, Q(q): Q<QuarantineQuery>) -> ApiResult {
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
    let counts: BTreeMap<_, _> = RejectReason::ALL
        .into_iter()
        .map(|r| (r.name(), c.rejected(r)))
        .collect();
    Ok(axum::Json(json!({
        "rejected": counts,
        "evicted": s.shared.quarantine.evicted(),
        "reports": s.shared.quarantine.list(reason, q.limit.unwrap_or(100).min(10_000)),
    })))
}

fn admin(s: &AppState, h: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = &s.admin_token else {
        return Err(ApiError(
            StatusCode::FORBIDDEN,
            "admin endpoints are disabled (no api.admin_token configured)".into(),
        ));
    };
    let given = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| ApiError(StatusCode::UNAUTHORIZED, "bearer token required".into()))?;
    // Constant time over the token's length.
    let (a, b) = (given.as_bytes(), token.as_bytes());
    let diff = a.len() ^ b.len()
        | a.iter()
            .zip(b.iter())
            .fold(0usize, |d, (x, y)| d | usize::from(x ^ y));
    if diff != 0 {
        return Err(ApiError(
            StatusCode::UNAUTHORIZED,
            "wrong bearer token".into(),
        ));
    }
    Ok(())
}

async fn import_topology(State(s): State<AppState>, AdminBody(body): AdminBody) -> ApiResult {
    let text = std::str::from_utf8(&body).map_err(|_| bad("body is not UTF-8"))?;
    let n = s
        .shared
        .topology
        .import_topology_json(text)
        .map_err(import_error)?;
    Ok(axum::Json(json!({"changes": n})))
}

/// Path descriptions from JSON: one object or an array of them (each element's error named).
pub fn parse_path_descriptions(body: &[u8]) -> Result<Vec<PathDescription>, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("path description(s): {e}"))?;
    match v {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, x)| serde_json::from_value(x).map_err(|e| format!("path {i}: {e}")))
            .collect(),
        Value::Object(_) => serde_json::from_value(v)
            .map(|d| vec![d])
            .map_err(|e| format!("path description: {e}")),
        _ => Err("want a path description ({\"hops\": [...]}) or an array of them".into()),
    }
}

async fn import_paths(State(s): State<AppState>, AdminBody(body): AdminBody) -> ApiResult {
    let ds = parse_path_descriptions(&body).map_err(bad)?;
    let ids: Vec<String> = s
        .shared
        .topology
        .import_paths(&ds)
        .map_err(import_error)?
        .iter()
        .map(|p| format!("{:016x}", p.id))
        .collect();
    Ok(axum::Json(json!({"paths": ids})))
}

async fn import_keys(State(s): State<AppState>, AdminBody(body): AdminBody) -> ApiResult {
    let keys: Vec<ImportedKey> =
        serde_json::from_slice(&body).map_err(|e| bad(format!("keys: {e}")))?;
    let n = s.imported.import(&keys).map_err(bad)?;
    Ok(axum::Json(
        json!({"imported": n, "local_ia": s.local_ia.to_string()}),
    ))
}

async fn openapi() -> axum::Json<Value> {
    axum::Json(openapi_document())
}

/// The OpenAPI 3.0 document of this API.
pub fn openapi_document() -> Value {
    let q = |name: &str, desc: &str, required: bool| json!({"name": name, "in": "query", "required": required, "description": desc, "schema": {"type": "string"}});
    let qt = |name: &str, desc: &str, required: bool, schema: Value| json!({"name": name, "in": "query", "required": required, "description": desc, "schema": schema});
    let uint =
        |max: u64| json!({"type": "integer", "format": "int64", "minimum": 0, "maximum": max});
    let p = |name: &str, desc: &str| json!({"name": name, "in": "path", "required": true, "description": desc, "schema": {"type": "string"}});
    let ok = |desc: &str| json!({"200": {"description": desc}, "4XX": {"$ref": "#/components/responses/Error"}});
    let get = |summary: &str, params: Vec<Value>, resp: Value| json!({"get": {"summary": summary, "parameters": params, "responses": resp}});
    let admin_post = |summary: &str, ct: &str| {
        json!({"post": {"summary": summary, "security": [{"bearer": []}],
            "requestBody": {"required": true, "content": {ct: {}}},
            "responses": {"200": {"description": "imported"}, "4XX": {"$ref": "#/components/responses/Error"}}}})
    };
    let key_params = || {
        vec![
            q("scope", "hop, router, link, queue or path", false),
            q(
                "measurement",
                "latency_ns, utilisation_kbps, queue_len, energy_nj, co2_pg",
                false,
            ),
            q("ia", "ISD-AS (router, link, queue)", false),
            qt("node", "router node id", false, uint(u64::from(u32::MAX))),
            qt("ifid", "interface id", false, uint(u64::from(u16::MAX))),
            qt(
                "path",
                "path id (16 hex digits)",
                false,
                json!({"type": "string", "pattern": "^[0-9a-fA-F]{16}$"}),
            ),
            qt("hop", "AS hop index on the path", false, uint(u64::MAX)),
        ]
    };
    let mut hist = key_params();
    hist.extend([
        qt("from", "start, Unix ns", false, uint(u64::MAX)),
        qt("to", "end, Unix ns", false, uint(u64::MAX)),
        qt(
            "step_ms",
            &format!("bucket width, ms (> 0; at most {MAX_HISTORY_STEPS} buckets)"),
            false,
            json!({"type": "integer", "format": "int64", "minimum": 1}),
        ),
        q("agg", "avg, min, max or last", false),
    ]);
    json!({
        "openapi": "3.0.3",
        "info": {"title": "ID-INT collector", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Verified ID-INT telemetry: topology, current and historical metrics, path ranking, SLA checks."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {"Error": {"description": "error", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}}}}}
        },
        "paths": {
            "/health": get("Liveness", vec![], ok("alive")),
            "/ready": get("Readiness (pipeline running)", vec![], json!({"200": {"description": "ready"}, "503": {"$ref": "#/components/responses/Error"}})),
            "/metrics": get("Prometheus counters", vec![], ok("text exposition")),
            "/openapi.json": get("This document", vec![], ok("OpenAPI 3")),
            "/api/v1/reports": {"post": {"summary": "Ingest a ReportBatch (protobuf idint.report.v1.ReportBatch, or JSON)",
                "requestBody": {"required": true, "content": {"application/x-protobuf": {}, "application/json": {}}},
                "responses": {"202": {"description": "queued"}, "400": {"$ref": "#/components/responses/Error"},
                              "413": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"},
                              "503": {"$ref": "#/components/responses/Error"}}}},
            "/api/v1/ases": get("ISD-ASes", vec![], ok("list")),
            "/api/v1/ases/{ia}": get("One ISD-AS with its routers, interfaces and telemetry (known_from: topology, or paths when only links and paths name it: core null)", vec![p("ia", "ISD-AS")], ok("AS")),
            "/api/v1/routers": get("Border routers with current telemetry", vec![], ok("list")),
            "/api/v1/links": get("Inter-AS links (with telemetry) and AS-internal links", vec![], ok("list")),
            "/api/v1/paths": get("Paths with current telemetry", vec![q("src", "source ISD-AS", false), q("dst", "destination ISD-AS", false)], ok("list")),
            "/api/v1/paths/unknown": get("Paths seen in reports that map to no known ASes", vec![], ok("list")),
            "/api/v1/paths/rank": get("Paths between two ISD-ASes ranked by an objective", vec![q("src", "source ISD-AS", true), q("dst", "destination ISD-AS", true), q("objective", "latency, utilisation, queue, carbon or energy", false)], ok("ranking")),
            "/api/v1/paths/{id}": get("One path with per-hop telemetry", vec![json!({"name": "id", "in": "path", "required": true, "description": "path id (16 hex digits)", "schema": {"type": "string", "pattern": "^[0-9a-fA-F]{16}$"}})], ok("path")),
            "/api/v1/telemetry": get("Current values of matching metric keys", key_params(), ok("values")),
            "/api/v1/telemetry/history": get("Written values of matching keys over a time range, optionally bucketed", hist, ok("series")),
            "/api/v1/sla": get("Violations of a path objective over a window (memory since the collector started, the time-series store before; `complete` is false when part of the window was not covered)", vec![qt("path", "path id (16 hex digits)", true, json!({"type": "string", "pattern": "^[0-9a-fA-F]{16}$"})), q("objective", "latency, utilisation, queue, carbon or energy", false), qt("max", "bound in the measurement's unit (finite)", true, json!({"type": "number"})), qt("window_s", "window, s (default 300)", false, uint(u64::MAX))], ok("check")),
            "/api/v1/quarantine": get("Rejected reports with reasons", vec![q("reason", "reject reason", false), qt("limit", "most entries (default 100, at most 10000)", false, uint(u64::MAX))], ok("list")),
            "/api/v1/admin/topology": admin_post("Import a SCION topology.json", "application/json"),
            "/api/v1/admin/paths": admin_post("Import path descriptions ({hops: [{ia, ingress, egress}]})", "application/json"),
            "/api/v1/admin/keys": admin_post("Import level-1 keys ([{src_ia, dst_ia, protocol, epoch_begin, epoch_end, key_hex}])", "application/json"),
        }
    })
}
