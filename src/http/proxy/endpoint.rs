//! Errors in the provider's own shape, so an SDK raises its usual exception.

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::domain::proxying::Provider;
use crate::http::error::AppError;

/// An error answer in the provider's own shape. OpenAI:
/// `{"error": {"message", "type", "param", "code"}}`; Anthropic:
/// `{"type": "error", "error": {"type", "message"}}`.
pub fn error_response(
    provider: Provider,
    status: StatusCode,
    code: &str,
    message: &str,
    mut headers: HeaderMap,
) -> Response {
    let body = match provider {
        Provider::OpenAi => json!({"error": {
            "message": message,
            "type": openai_type(status),
            "param": Value::Null,
            "code": code,
        }}),
        Provider::Anthropic => json!({"type": "error", "error": {
            "type": anthropic_type(status),
            "message": message,
        }}),
    };
    if status == StatusCode::TOO_MANY_REQUESTS {
        // A spent budget does not come back in seconds: SDKs must not retry.
        headers.insert("x-should-retry", HeaderValue::from_static("false"));
    }
    (status, headers, Json(body)).into_response()
}

/// A Cairn error (bad body, budget, storage) in the provider's shape.
pub fn app_error(provider: Provider, mut err: AppError) -> Response {
    let headers = err.take_headers();
    let message = format!("cairn: {}", err.message());
    let cause = err.take_cause().unwrap_or_else(|| message.clone());
    let mut response = error_response(provider, err.status(), err.code(), &message, headers);
    if err.status().is_server_error() {
        response
            .extensions_mut()
            .insert(crate::http::error::ServerErrorCause(cause));
    }
    response
}

fn openai_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 404 | 413 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        429 => "insufficient_quota",
        _ => "server_error",
    }
}

fn anthropic_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_take_each_providers_shape() {
        let openai = error_response(
            Provider::OpenAi,
            StatusCode::TOO_MANY_REQUESTS,
            "budget_exceeded",
            "spent",
            HeaderMap::new(),
        );
        assert_eq!(openai.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(openai.headers()["x-should-retry"], "false");
        assert_eq!(anthropic_type(StatusCode::BAD_GATEWAY), "api_error");
        assert_eq!(
            openai_type(StatusCode::UNAUTHORIZED),
            "authentication_error"
        );
    }
}
