//! Admin imports (bearer `api.admin_token`): topology, path descriptions and level-1 keys.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, header};
use serde_json::Value;

use super::error::{ApiError, ErrorBody, bad, import_error};
use super::responses::{KeysImported, PathsImported, TopologyImported, hex_id};
use super::{ApiResult, RawBody};
use crate::state::AppState;
use collector_core::keys::ImportedKey;
use collector_core::topology::PathDescription;

/// The body of an admin request, read only once its bearer token is accepted (a request
/// without the right token is a 401/403 whatever its body, never a 413).
pub(super) struct AdminBody(Bytes);

impl FromRequest<AppState> for AdminBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, s: &AppState) -> Result<Self, ApiError> {
        admin(s, req.headers())?;
        let RawBody(b) = RawBody::from_request(req, s).await?;
        Ok(AdminBody(b))
    }
}

/// Accepts a request bearing the admin token.
fn admin(s: &AppState, h: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = &s.admin_token else {
        return Err(ApiError::Forbidden(
            "admin endpoints are disabled (no api.admin_token configured)".into(),
        ));
    };
    let given = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| ApiError::Unauthorized("bearer token required".into()))?;
    // Constant time over the token's length.
    let (a, b) = (given.as_bytes(), token.as_bytes());
    let diff = a.len() ^ b.len()
        | a.iter()
            .zip(b.iter())
            .fold(0usize, |d, (x, y)| d | usize::from(x ^ y));
    if diff != 0 {
        return Err(ApiError::Unauthorized("wrong bearer token".into()));
    }
    Ok(())
}

/// Imports a SCION `topology.json` (scionproto or appliance format).
#[utoipa::path(post, path = "/api/v1/admin/topology", tag = "admin",
    security(("bearer" = [])),
    request_body(description = "a topology.json", content_type = "application/json"),
    responses(
        (status = 200, description = "imported", body = TopologyImported),
        (status = 400, description = "not a valid, complete topology", body = ErrorBody),
        (status = 401, description = "no or wrong bearer token", body = ErrorBody),
        (status = 403, description = "no api.admin_token configured", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 503, description = "not persisted: the store's queue is full (nothing changed)", body = ErrorBody)))]
pub(super) async fn import_topology(
    State(s): State<AppState>,
    AdminBody(body): AdminBody,
) -> ApiResult<TopologyImported> {
    let text = std::str::from_utf8(&body).map_err(|_| bad("body is not UTF-8"))?;
    let changes = s
        .shared
        .topology
        .import_topology_json(text)
        .map_err(import_error)?;
    Ok(axum::Json(TopologyImported { changes }))
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

/// Imports path descriptions: `{"hops": [{"ia", "ingress", "egress"}]}` or an array of them.
#[utoipa::path(post, path = "/api/v1/admin/paths", tag = "admin",
    security(("bearer" = [])),
    request_body(description = "path description(s)", content_type = "application/json"),
    responses(
        (status = 200, description = "imported", body = PathsImported),
        (status = 400, description = "a description that does not parse or fit", body = ErrorBody),
        (status = 401, description = "no or wrong bearer token", body = ErrorBody),
        (status = 403, description = "no api.admin_token configured", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody),
        (status = 503, description = "not persisted: the store's queue is full (nothing changed)", body = ErrorBody)))]
pub(super) async fn import_paths(
    State(s): State<AppState>,
    AdminBody(body): AdminBody,
) -> ApiResult<PathsImported> {
    let ds = parse_path_descriptions(&body).map_err(bad)?;
    let paths = s
        .shared
        .topology
        .import_paths(&ds)
        .map_err(import_error)?
        .iter()
        .map(|p| hex_id(p.id))
        .collect();
    Ok(axum::Json(PathsImported { paths }))
}

/// Imports level-1 keys:
/// `[{"src_ia", "dst_ia", "protocol", "epoch_begin", "epoch_end", "key_hex"}]`.
#[utoipa::path(post, path = "/api/v1/admin/keys", tag = "admin",
    security(("bearer" = [])),
    request_body(description = "level-1 keys", content_type = "application/json"),
    responses(
        (status = 200, description = "imported", body = KeysImported),
        (status = 400, description = "keys that do not parse or fit", body = ErrorBody),
        (status = 401, description = "no or wrong bearer token", body = ErrorBody),
        (status = 403, description = "no api.admin_token configured", body = ErrorBody),
        (status = 413, description = "body too large", body = ErrorBody)))]
pub(super) async fn import_keys(
    State(s): State<AppState>,
    AdminBody(body): AdminBody,
) -> ApiResult<KeysImported> {
    let keys: Vec<ImportedKey> =
        serde_json::from_slice(&body).map_err(|e| bad(format!("keys: {e}")))?;
    let imported = s.imported.import(&keys).map_err(bad)?;
    Ok(axum::Json(KeysImported {
        imported,
        local_ia: s.local_ia.to_string(),
    }))
}
