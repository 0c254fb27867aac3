//! A panic in a handler answers a JSON 500 instead of dropping the connection.

use std::any::Any;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error::AppError;

/// Logs the panic and answers an opaque 500.
pub fn respond(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = detail, "handler panicked");
    AppError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "internal error; see the server log",
    )
    .into_response()
}
