//! The REST API (axum). Every answer is a typed body ([`responses`]); every error is an
//! [`ApiError`], JSON `{"error": "..."}` with a 4xx/5xx status. The OpenAPI document,
//! generated from the handlers and the body types, is served at `/openapi.json`.
//!
//! Modules: [`error`] (the error type), [`responses`] (the bodies), the handlers by area
//! (`ops`, `ingest`, `topology`, `telemetry`, `sla`, `admin`), the operator's page
//! (`dashboard`, at `/`) and `openapi` (the document).
//! Nothing else in the crate but `service` uses this module.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::handler::Handler;
use axum::http::Method;
use axum::http::request::Parts;
use axum::routing::{self, MethodRouter};
use idint_wire::IsdAsn;
use serde::de::DeserializeOwned;

use crate::state::AppState;

mod admin;
mod dashboard;
pub mod error;
mod ingest;
mod openapi;
mod ops;
pub mod responses;
mod sla;
mod telemetry;
mod topology;

pub use admin::parse_path_descriptions;
pub use error::{ApiError, ErrorBody};
pub use openapi::{ApiDoc, openapi_document};
pub use telemetry::MAX_HISTORY_STEPS;

use error::bad;

/// One route: its method, its path and what serves it.
pub(crate) type Route = (Method, &'static str, MethodRouter<AppState>);

/// A `GET` route.
fn get<H: Handler<T, AppState>, T: 'static>(path: &'static str, handler: H) -> Route {
    (Method::GET, path, routing::get(handler))
}

/// A `POST` route.
fn post<H: Handler<T, AppState>, T: 'static>(path: &'static str, handler: H) -> Route {
    (Method::POST, path, routing::post(handler))
}

/// Every route of the API (each also in the OpenAPI document).
pub(crate) fn routes() -> Vec<Route> {
    vec![
        get("/health", ops::health),
        get("/ready", ops::ready),
        get("/metrics", ops::prometheus),
        get("/openapi.json", openapi::openapi),
        post("/api/v1/reports", ingest::ingest),
        get("/api/v1/ases", topology::list_ases),
        get("/api/v1/ases/{ia}", topology::get_as),
        get("/api/v1/routers", topology::list_routers),
        get("/api/v1/links", topology::list_links),
        get("/api/v1/paths", topology::list_paths),
        get("/api/v1/paths/unknown", topology::unknown_paths),
        get("/api/v1/paths/rank", topology::rank_paths),
        get("/api/v1/paths/{id}", topology::get_path),
        get("/api/v1/telemetry", telemetry::telemetry),
        get("/api/v1/telemetry/history", telemetry::history),
        get("/api/v1/sla", sla::sla),
        get("/api/v1/quarantine", ingest::quarantine),
        post("/api/v1/admin/topology", admin::import_topology),
        post("/api/v1/admin/paths", admin::import_paths),
        post("/api/v1/admin/keys", admin::import_keys),
        get("/", dashboard::index),
        get("/dashboard/app.js", dashboard::app_js),
        get("/dashboard/style.css", dashboard::style_css),
        get("/dashboard/summary", dashboard::summary),
        get("/dashboard/events", dashboard::events),
        get("/dashboard/hops", dashboard::hops),
        get("/dashboard/topology.svg", dashboard::topology_svg),
        get("/dashboard/charts/hops.svg", dashboard::hops_chart),
        get("/dashboard/charts/history.svg", dashboard::history_chart),
    ]
}

/// The API's routes.
pub fn router(state: AppState) -> Router {
    routes()
        .into_iter()
        .fold(Router::new(), |r, (_, path, m)| r.route(path, m))
        .fallback(|| async { error::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::MethodNotAllowed(
                "method not allowed on this endpoint (see /openapi.json)".into(),
            )
        })
        .with_state(state)
}

/// A handler's answer: a typed JSON body or an [`ApiError`].
type ApiResult<T> = Result<axum::Json<T>, ApiError>;

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

/// A path segment as text; one that does not decode (not UTF-8) is a JSON error.
struct Segment(String);

impl<S: Send + Sync> FromRequestParts<S> for Segment {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        Path::<String>::from_request_parts(parts, s)
            .await
            .map(|Path(p)| Segment(p))
            .map_err(|e| ApiError::Rejected(e.status(), e.body_text()))
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
            .map_err(|e| ApiError::Rejected(e.status(), e.body_text()))
    }
}

/// An ISD-AS from text (`1-ff00:0:110`).
fn parse_ia(s: &str) -> Result<IsdAsn, ApiError> {
    s.parse()
        .map_err(|_| bad(format!("bad ISD-AS {s:?} (want e.g. 1-ff00:0:110)")))
}

/// Items a list answer holds when the request names no `limit`.
pub const DEFAULT_PAGE_LIMIT: usize = 1_000;

/// Most items one list answer holds (`limit` above it is a 400): what one unauthenticated
/// request may make the collector copy and serialise.
pub const MAX_PAGE_LIMIT: usize = 10_000;

/// A validated page of a list: (offset, limit).
type Page = (usize, usize);

/// The page `limit` and `offset` query parameters ask for: `limit` in 1..=[`MAX_PAGE_LIMIT`]
/// (default [`DEFAULT_PAGE_LIMIT`]), `offset` from 0.
fn page(limit: Option<usize>, offset: Option<usize>) -> Result<Page, ApiError> {
    let limit = limit.unwrap_or(DEFAULT_PAGE_LIMIT);
    if limit == 0 || limit > MAX_PAGE_LIMIT {
        return Err(bad(format!(
            "limit {limit} is out of range: 1 to {MAX_PAGE_LIMIT} (page on with offset)"
        )));
    }
    Ok((offset.unwrap_or(0), limit))
}

/// Where the page after `(offset, limit)` of `total` items starts, if there is one.
fn next_offset((offset, limit): Page, total: usize) -> Option<usize> {
    let end = offset.saturating_add(limit);
    (end < total).then_some(end)
}

/// Items `offset..offset + limit` of `items`.
fn paged<T>(items: impl Iterator<Item = T>, (offset, limit): Page) -> Vec<T> {
    items.skip(offset).take(limit).collect()
}

/// The `limit` and `offset` query parameters of the list endpoints that take nothing else.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
// A misspelt parameter is an error, not a filter silently left out.
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// Most items (default 1000, at most 10000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Items to skip (default 0; `next_offset` of the previous page).
    offset: Option<usize>,
}

/// Hex digits of a path id.
const PATH_ID_DIGITS: usize = 16;

/// A path id from its 16 hex digits.
fn parse_path_id(s: &str) -> Result<u64, ApiError> {
    let fault = || bad(format!("bad path id {s:?} ({PATH_ID_DIGITS} hex digits)"));
    if s.len() != PATH_ID_DIGITS || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(fault());
    }
    u64::from_str_radix(s, 16).map_err(|_| fault())
}
