//! Who is calling the proxy, and which key goes upstream.
//!
//! Two modes, per provider:
//! - *pass-through* (no `CAIRN_UPSTREAM_*_KEY`): the caller's provider key
//!   (`Authorization: Bearer …` / `x-api-key`) goes upstream untouched; with
//!   Cairn keys configured the caller names its namespace with `X-Cairn-Key`.
//! - *sidecar-held* (`CAIRN_UPSTREAM_*_KEY` set): Cairn sends its own provider
//!   key, and the caller authenticates with its Cairn key in the provider's
//!   usual header (or `X-Cairn-Key`), so a sandbox never holds the provider key.

use axum::http::{HeaderMap, StatusCode};

use crate::domain::proxying::Provider;
use crate::http::auth::{Auth, Caller};
use crate::http::error::AppError;
use crate::http::upstream::Upstream;

/// The header naming the caller's Cairn key when the provider key travels beside it.
pub const CAIRN_KEY: &str = "x-cairn-key";

/// The caller of a proxied request.
pub fn caller(
    auth: &Auth,
    provider: Provider,
    upstream: &Upstream,
    headers: &HeaderMap,
) -> Result<Caller, AppError> {
    if let Some(refusal) = auth.refuse_browser(headers) {
        return Err(refusal);
    }
    if let Some(key) = header(headers, CAIRN_KEY) {
        return auth.key_caller(key);
    }
    if !auth.enabled() {
        return auth.authenticate(None);
    }
    if upstream.key.is_some() {
        let key = provider_key(provider, headers).ok_or_else(|| {
            unauthorized(
                "send your Cairn key as the provider key (Authorization: Bearer <key>, or x-api-key for Anthropic): this proxy holds the provider key",
            )
        })?;
        return auth.key_caller(key);
    }
    Err(unauthorized(
        "this Cairn has API keys: name your namespace with the X-Cairn-Key header (your provider key stays in Authorization / x-api-key and goes upstream)",
    ))
}

/// The key a provider's SDK sends: `x-api-key` (Anthropic) or a bearer token.
fn provider_key(provider: Provider, headers: &HeaderMap) -> Option<&str> {
    let bearer = header(headers, "authorization").and_then(|h| {
        h.strip_prefix("Bearer ")
            .or_else(|| h.strip_prefix("bearer "))
    });
    match provider {
        Provider::Anthropic => header(headers, "x-api-key").or(bearer),
        Provider::OpenAi => bearer.or_else(|| header(headers, "api-key")),
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

fn unauthorized(message: &str) -> AppError {
    AppError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
}
