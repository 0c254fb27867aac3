//! Errors in the provider's own shape ([`wire::errors`]), so an SDK raises
//! its usual exception.

use axum::Json;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::domain::proxying::Provider;
use crate::domain::proxying::wire;
use crate::http::error::AppError;

/// An error answer in the provider's own shape.
pub fn error_response(
    provider: Provider,
    status: StatusCode,
    code: &str,
    message: &str,
    mut headers: HeaderMap,
) -> Response {
    let body = wire::errors::error_body(provider, status.as_u16(), code, message);
    if code == wire::errors::BUDGET_EXCEEDED {
        // A spent budget does not come back in seconds: SDKs must not retry.
        // A rate or concurrency limit (429 with `Retry-After`) does: the
        // SDKs' own retry waits as long as it says.
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
        let limited = error_response(
            Provider::Anthropic,
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "retry later",
            HeaderMap::new(),
        );
        assert!(!limited.headers().contains_key("x-should-retry"));
    }
}
