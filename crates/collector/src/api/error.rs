//! The API's one error type and the JSON body every error is rendered as.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// Seconds a client is asked to wait (`Retry-After`) when the ingest queue is full.
pub const RETRY_AFTER_SECS: u32 = 1;

/// The message of [`ApiError::QueueFull`].
const QUEUE_FULL: &str = "ingest queue full, retry later";

/// The body of every error answer: `{"error": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for a human.
    pub error: String,
}

/// An API error: each variant is one status; rendered as [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// 400: the request does not parse or names something invalid.
    BadRequest(String),
    /// 401: no bearer token, or the wrong one.
    Unauthorized(String),
    /// 403: the endpoint is disabled.
    Forbidden(String),
    /// 404: no such endpoint or object.
    NotFound(String),
    /// 405: the endpoint exists, the method does not.
    MethodNotAllowed(String),
    /// 413: a body or batch over its limit.
    PayloadTooLarge(String),
    /// 415: a content type the endpoint does not take.
    UnsupportedMediaType(String),
    /// 502: the time-series store failed.
    BadGateway(String),
    /// 504: the time-series store did not answer in time.
    GatewayTimeout(String),
    /// 503: not ready, or shutting down.
    Unavailable(String),
    /// 503 with `Retry-After`: the ingest queue is full.
    QueueFull,
    /// An extractor's rejection, with the status axum gives it.
    Rejected(StatusCode, String),
}

impl ApiError {
    /// The status the error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::GatewayTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Unavailable(_) | ApiError::QueueFull => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Rejected(status, _) => *status,
        }
    }

    /// The message of the error body.
    pub fn message(&self) -> &str {
        match self {
            ApiError::BadRequest(m)
            | ApiError::Unauthorized(m)
            | ApiError::Forbidden(m)
            | ApiError::NotFound(m)
            | ApiError::MethodNotAllowed(m)
            | ApiError::PayloadTooLarge(m)
            | ApiError::UnsupportedMediaType(m)
            | ApiError::BadGateway(m)
            | ApiError::GatewayTimeout(m)
            | ApiError::Unavailable(m)
            | ApiError::Rejected(_, m) => m,
            ApiError::QueueFull => QUEUE_FULL,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status(), self.message())
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = axum::Json(ErrorBody {
            error: self.message().to_owned(),
        });
        match self {
            ApiError::QueueFull => (
                self.status(),
                [(header::RETRY_AFTER, RETRY_AFTER_SECS.to_string())],
                body,
            )
                .into_response(),
            _ => (self.status(), body).into_response(),
        }
    }
}

/// A 400 with this message.
/// A refused import: 400 for bad input, 503 when the store cannot take it now.
pub(crate) fn import_error(e: collector_core::topology::ImportError) -> ApiError {
    use collector_core::topology::ImportError;
    match e {
        ImportError::Invalid(m) => bad(m),
        ImportError::NotPersisted(m) => ApiError::Unavailable(m),
    }
}

pub(crate) fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::BadRequest(msg.into())
}

/// A 404 with this message.
pub(crate) fn not_found(msg: impl Into<String>) -> ApiError {
    ApiError::NotFound(msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn errors_render_their_status_and_message() {
        let r = ApiError::NotFound("path 1 unknown".into()).into_response();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(&body[..], br#"{"error":"path 1 unknown"}"#);
        let r = ApiError::QueueFull.into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        let teapot = ApiError::Rejected(StatusCode::IM_A_TEAPOT, "no".into());
        assert_eq!(teapot.status(), StatusCode::IM_A_TEAPOT);
    }
}
