//! The providers' error bodies, so that an SDK raises its usual exception
//! for an error Cairn answers itself. OpenAI:
//! `{"error": {"message", "type", "param", "code"}}`; Anthropic:
//! `{"type": "error", "error": {"type", "message"}}`.

use serde_json::{Value, json};

use crate::domain::proxying::Provider;

/// Cairn's error code for a namespace's spent daily budget: the one 429 a
/// client should not retry soon.
pub const BUDGET_EXCEEDED: &str = "budget_exceeded";

/// The body of an error with HTTP `status`, Cairn's error `code` and
/// `message`, in `provider`'s shape.
pub fn error_body(provider: Provider, status: u16, code: &str, message: &str) -> Value {
    match provider {
        Provider::OpenAi => json!({"error": {
            "message": message,
            "type": openai_type(status, code),
            "param": Value::Null,
            "code": code,
        }}),
        Provider::Anthropic => json!({"type": "error", "error": {
            "type": anthropic_type(status),
            "message": message,
        }}),
    }
}

/// OpenAI's error type for `status` and Cairn's `code`: a spent budget is
/// OpenAI's `insufficient_quota` (which clients take as billing, not to be
/// retried); a rate or concurrency limit is `requests`, as OpenAI types its
/// own requests-per-minute limit.
fn openai_type(status: u16, code: &str) -> &'static str {
    match status {
        400 | 404 | 413 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        429 if code == BUDGET_EXCEEDED => "insufficient_quota",
        429 => "requests",
        _ => "server_error",
    }
}

/// Anthropic's error type for `status`.
fn anthropic_type(status: u16) -> &'static str {
    match status {
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
        let openai = error_body(Provider::OpenAi, 401, "unauthorized", "no key");
        assert_eq!(openai["error"]["type"], "authentication_error");
        assert_eq!(openai["error"]["code"], "unauthorized");
        assert!(openai["error"]["param"].is_null());
        let anthropic = error_body(Provider::Anthropic, 502, "upstream", "down");
        assert_eq!(anthropic["type"], "error");
        assert_eq!(anthropic["error"]["type"], "api_error");
        assert_eq!(anthropic["error"]["message"], "down");
        assert_eq!(anthropic_type(529), "overloaded_error");
        let spent = error_body(Provider::OpenAi, 429, BUDGET_EXCEEDED, "spent");
        assert_eq!(spent["error"]["type"], "insufficient_quota");
        let limited = error_body(Provider::OpenAi, 429, "rate_limited", "later");
        assert_eq!(limited["error"]["type"], "requests");
    }
}
