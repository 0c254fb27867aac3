//! `AppError`: every failure as `{"error": {"code", "message", ...}}` with a fitting status.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::domain::DomainError;
use crate::domain::proxying::wire::errors::BUDGET_EXCEEDED;
use crate::storage::StorageError;

/// An error answer.
#[derive(Debug)]
pub struct AppError {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Map<String, Value>,
    /// Extra response headers (boxed: most errors have none, and errors travel in `Result`s).
    headers: Option<Box<HeaderMap>>,
    /// What really went wrong, for the log (never sent).
    cause: Option<String>,
}

/// The cause of a 5xx answer, carried in the response's extensions to
/// [`log_server_errors`], which logs it once (it is never in the body).
#[derive(Clone, Debug)]
pub struct ServerErrorCause(pub String);

/// Middleware: logs every 5xx answer once, with its cause, inside the
/// request's span (route and request id).
pub async fn log_server_errors(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let response = next.run(request).await;
    if response.status().is_server_error() {
        let cause = response
            .extensions()
            .get::<ServerErrorCause>()
            .map_or("", |c| c.0.as_str());
        tracing::error!(status = response.status().as_u16(), cause, "request failed");
    }
    response
}

/// The JSON body of every error answer.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `invalid_id`, `slice_too_large`.
    pub code: String,
    /// A sentence for humans (and models).
    pub message: String,
}

impl AppError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: Map::new(),
            headers: None,
            cause: None,
        }
    }

    /// Keeps `cause` for the log (a 5xx's cause is logged once, never sent).
    pub fn caused_by(mut self, cause: impl std::fmt::Display) -> Self {
        self.cause = Some(cause.to_string());
        self
    }

    /// The cause kept for the log, taken out of the error.
    pub fn take_cause(&mut self) -> Option<String> {
        self.cause.take()
    }

    /// Adds a detail field beside code and message.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// Adds a response header (e.g. `Retry-After`).
    pub fn with_header(mut self, name: header::HeaderName, value: HeaderValue) -> Self {
        self.headers
            .get_or_insert_with(Default::default)
            .insert(name, value);
        self
    }

    /// The answer's status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The stable error code (`invalid_id`, `budget_exceeded`, ...).
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The sentence for humans (and models).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The extra response headers (`Retry-After`, ...), taken out of the error.
    pub fn take_headers(&mut self) -> HeaderMap {
        self.headers.take().map(|h| *h).unwrap_or_default()
    }

    /// 400 with code `invalid_request`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// A 500 whose cause is logged, not sent.
    fn internal(cause: &dyn std::fmt::Display) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the server log",
        )
        .caused_by(cause)
    }
}

impl AppError {
    /// The JSON body of the answer: `{"error": {"code", "message", ...}}`.
    pub fn into_body(self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), Value::from(self.code));
        error.insert("message".into(), Value::from(self.message));
        error.extend(self.details);
        let mut body = Map::new();
        body.insert("error".into(), Value::Object(error));
        Value::Object(body)
    }

    /// A 500 whose cause is logged, not sent (for `map_err`).
    pub fn internal_error(cause: impl std::fmt::Display) -> Self {
        Self::internal(&cause)
    }

    /// The body of a 500 whose cause is logged here (it is no HTTP answer of
    /// its own: an MCP tool result), not sent.
    pub fn internal_value(cause: &dyn std::fmt::Display) -> Value {
        tracing::error!(error = %cause, "internal error");
        Self::internal(cause).into_body()
    }
}

impl IntoResponse for AppError {
    fn into_response(mut self) -> Response {
        let status = self.status;
        let headers = self.headers.take().map(|h| *h).unwrap_or_default();
        let cause = self.cause.take().unwrap_or_else(|| self.message.clone());
        let mut response = (status, headers, Json(self.into_body())).into_response();
        if status.is_server_error() {
            response.extensions_mut().insert(ServerErrorCause(cause));
        }
        response
    }
}

impl From<DomainError> for AppError {
    fn from(err: DomainError) -> Self {
        let message = err.to_string();
        match err {
            DomainError::InvalidId(_) => Self::new(StatusCode::BAD_REQUEST, "invalid_id", message),
            DomainError::AmbiguousId(prefix) => {
                Self::new(StatusCode::CONFLICT, "ambiguous_id", message).with("prefix", prefix)
            }
            DomainError::NotFound(id) => {
                Self::new(StatusCode::NOT_FOUND, "not_found", message).with("id", id)
            }
            DomainError::InvalidUri(_) => {
                Self::new(StatusCode::BAD_REQUEST, "invalid_uri", message)
            }
            DomainError::InvalidRange(_) => {
                Self::new(StatusCode::BAD_REQUEST, "invalid_range", message)
            }
            DomainError::SliceTooLarge {
                limit,
                max,
                requested,
                ..
            } => Self::new(StatusCode::BAD_REQUEST, "slice_too_large", message)
                .with("limit", limit)
                .with("max", max)
                .with("requested", requested),
            DomainError::InvalidField { field, .. } => {
                Self::new(StatusCode::BAD_REQUEST, "invalid_field", message).with("field", field)
            }
            DomainError::InvalidMessages { path, .. } => {
                Self::new(StatusCode::BAD_REQUEST, "invalid_messages", message).with("path", path)
            }
            DomainError::PayloadTooLarge { limit } => {
                Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
                    .with("limit", limit)
            }
            DomainError::Body(_) => Self::new(StatusCode::BAD_REQUEST, "bad_body", message),
            DomainError::Corrupt { id, .. } => {
                let cause = format!("integrity check failed: {message}");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "integrity_error",
                    message,
                )
                .with("id", id)
                .caused_by(cause)
            }
            DomainError::BudgetExceeded {
                budget,
                limit,
                spent,
                resets_at,
                retry_after_secs,
                ..
            } => Self::new(StatusCode::TOO_MANY_REQUESTS, BUDGET_EXCEEDED, message)
                .with("budget", budget)
                .with("limit", limit)
                .with("spent", spent)
                .with(
                    "resets_at",
                    resets_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                )
                .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after_secs)),
            DomainError::InvalidArchive { item, .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_archive", message)
                    .with("item", item)
            }
            DomainError::InvalidQuery(_) => {
                Self::new(StatusCode::BAD_REQUEST, "invalid_query", message).with("field", "q")
            }
            DomainError::Unprocessable { code, .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
            }
            DomainError::Storage(e) => e.into(),
            DomainError::Internal(cause) => Self::internal(&cause),
        }
    }
}

impl From<StorageError> for AppError {
    fn from(err: StorageError) -> Self {
        match err {
            StorageError::Full => Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "insufficient_storage",
                "no space left to store the content",
            )
            .caused_by("storage full"),
            StorageError::Unavailable(why) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "storage is unavailable; retry later",
            )
            .caused_by(format!("storage unavailable: {why}")),
            other => Self::internal(&other),
        }
    }
}

impl From<JsonRejection> for AppError {
    fn from(rejection: JsonRejection) -> Self {
        let status = match rejection {
            JsonRejection::JsonDataError(_) => StatusCode::UNPROCESSABLE_ENTITY,
            JsonRejection::MissingJsonContentType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            JsonRejection::BytesRejection(_) => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::BAD_REQUEST,
        };
        Self::new(status, "invalid_json", rejection.body_text())
    }
}

impl From<QueryRejection> for AppError {
    fn from(rejection: QueryRejection) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            rejection.body_text(),
        )
    }
}

impl From<PathRejection> for AppError {
    fn from(rejection: PathRejection) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_path",
            rejection.body_text(),
        )
    }
}
