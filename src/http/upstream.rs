//! Calling the upstream provider: its URL, the headers that go (everything
//! the client sent but hop-by-hop headers, Cairn's own and, with a
//! sidecar-held key, the client's key), the domain's upstream port over
//! reqwest ([`HttpUpstream`]), and faults as 502/504; and the proxy's
//! settings ([`Proxy`]: the upstreams, bounds and HTTP client).

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use bytes::Bytes;
use futures::StreamExt;

use crate::config::Secret;
use crate::domain::proxying::Provider;
use crate::domain::proxying::exchange::{self, Fault, Reply};
use crate::domain::proxying::rewrite::RewriteSettings;
use crate::domain::proxying::tiers::ConversationTiers;
use crate::http::error::AppError;

/// An upstream provider: its base URL and, when the sidecar holds it, its key.
#[derive(Clone, Debug)]
pub struct Upstream {
    /// Base URL (`https://api.openai.com/v1`, `https://api.anthropic.com`).
    pub base_url: String,
    /// The provider key Cairn sends (sidecar-held), if any.
    pub key: Option<Secret>,
}

impl Upstream {
    /// The URL of `path` (with the client's query string, if any).
    pub fn url(&self, path: &str, query: Option<&str>) -> String {
        let base = self.base_url.trim_end_matches('/');
        match query {
            Some(q) if !q.is_empty() => format!("{base}{path}?{q}"),
            _ => format!("{base}{path}"),
        }
    }
}

/// Headers never forwarded in either direction (RFC 9110 hop-by-hop, and
/// lengths and encodings the proxy sets itself: it asks the upstream for
/// gzip, brotli or zstd and reads the answer decoded, whatever the client
/// accepts, so an upstream that compresses regardless reaches the client
/// readable).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",
    "content-encoding",
];

/// The client's headers as they go upstream.
pub fn request_headers(incoming: &HeaderMap, provider: Provider, upstream: &Upstream) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(incoming.len());
    for (name, value) in incoming {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) || n.starts_with("x-cairn-") {
            continue;
        }
        if upstream.key.is_some() && matches!(n, "authorization" | "x-api-key" | "api-key") {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if let Some(key) = &upstream.key
        && let Some((name, value)) = key_header(provider, key)
    {
        out.insert(name, value);
    }
    out
}

fn key_header(provider: Provider, key: &Secret) -> Option<(HeaderName, HeaderValue)> {
    let (name, value) = match provider {
        Provider::OpenAi => (
            HeaderName::from_static("authorization"),
            format!("Bearer {}", key.expose()),
        ),
        Provider::Anthropic => (
            HeaderName::from_static("x-api-key"),
            key.expose().to_owned(),
        ),
    };
    let mut value = HeaderValue::from_str(&value).ok()?;
    value.set_sensitive(true);
    Some((name, value))
}

/// The upstream's answer headers as they go to the client.
pub fn response_headers(upstream: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(upstream.len());
    for (name, value) in upstream {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// One exchange's upstream: the domain's [`exchange::Upstream`] port over
/// reqwest (its URL, the headers that go, the deadline for an answer's head).
pub struct HttpUpstream {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    timeout: Duration,
}

impl HttpUpstream {
    /// Calls of `url` with `headers` through `proxy`'s client and deadline.
    pub fn new(proxy: &Proxy, url: String, headers: HeaderMap) -> Self {
        Self {
            client: proxy.client.clone(),
            url,
            headers,
            timeout: proxy.timeout,
        }
    }
}

#[async_trait::async_trait]
impl exchange::Upstream for HttpUpstream {
    type Headers = HeaderMap;

    async fn send(&self, body: Bytes) -> Result<Reply<HeaderMap>, Fault> {
        let request = self.client.post(&self.url).headers(self.headers.clone());
        let answer = within(self.timeout, request.body(body).send()).await?;
        let event_stream = answer
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        Ok(Reply {
            status: answer.status().as_u16(),
            headers: response_headers(answer.headers()),
            event_stream,
            body: answer
                .bytes_stream()
                .map(|chunk| chunk.map_err(|e| cause(&e)))
                .boxed(),
        })
    }
}

/// Forwards a request with no body rewriting (`GET /v1/models`, ...).
pub async fn forward(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    headers: HeaderMap,
    body: Bytes,
    timeout: Duration,
) -> Result<reqwest::Response, AppError> {
    let request = client.request(method, url).headers(headers).body(body);
    within(timeout, request.send())
        .await
        .map_err(|fault| fault_error(&fault))
}

/// A call's answer head within `timeout`.
async fn within(
    timeout: Duration,
    call: impl std::future::Future<Output = reqwest::Result<reqwest::Response>>,
) -> Result<reqwest::Response, Fault> {
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) if e.is_timeout() => Err(Fault::Timeout(None)),
        Ok(Err(e)) => Err(Fault::Unreachable(cause(&e))),
        Err(_) => Err(Fault::Timeout(Some(timeout))),
    }
}

/// What failed: the error's own text names the URL (never a key) and the cause.
fn cause(err: &reqwest::Error) -> String {
    std::error::Error::source(err).map_or_else(|| err.to_string(), ToString::to_string)
}

/// An upstream fault as the client sees it: 504 for a timeout, else 502.
pub fn fault_error(fault: &Fault) -> AppError {
    let status = StatusCode::from_u16(fault.status()).unwrap_or(StatusCode::BAD_GATEWAY);
    AppError::new(status, fault.code(), fault.message())
}
/// The proxy's settings and the HTTP client it calls upstreams with.
pub struct Proxy {
    pub(super) openai: Option<Upstream>,
    pub(super) anthropic: Option<Upstream>,
    pub(super) rewrite: RewriteSettings,
    pub(super) max_rounds: usize,
    pub(super) timeout: Duration,
    pub(super) idle: Duration,
    pub(super) client: reqwest::Client,
    pub(super) tiers: ConversationTiers,
}

impl Proxy {
    /// A proxy to these upstreams (a provider without one answers 404):
    /// `timeout` for an answer's head (then 504), `idle` for silence inside
    /// a streamed answer (then the client's stream ends with an error).
    pub fn new(
        openai: Option<Upstream>,
        anthropic: Option<Upstream>,
        rewrite: RewriteSettings,
        max_rounds: usize,
        timeout: Duration,
        idle: Duration,
    ) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self {
            openai,
            anthropic,
            rewrite,
            max_rounds: max_rounds.max(1),
            timeout,
            idle,
            client,
            tiers: ConversationTiers::default(),
        })
    }

    /// The upstream of `provider`, when configured.
    pub(super) fn upstream(&self, provider: Provider) -> Option<&Upstream> {
        match provider {
            Provider::OpenAi => self.openai.as_ref(),
            Provider::Anthropic => self.anthropic.as_ref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sidecar_keys_replace_the_callers_and_cairn_headers_stay_home() {
        let mut incoming = HeaderMap::new();
        incoming.insert(
            "authorization",
            HeaderValue::from_static("Bearer cairn-key-123"),
        );
        incoming.insert("x-cairn-key", HeaderValue::from_static("cairn-key-123"));
        incoming.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        incoming.insert("content-length", HeaderValue::from_static("10"));
        let sidecar = Upstream {
            base_url: "http://up/".into(),
            key: Some(
                "sk-ant-real"
                    .parse()
                    .unwrap_or_else(|e: std::convert::Infallible| match e {}),
            ),
        };
        let out = request_headers(&incoming, Provider::Anthropic, &sidecar);
        assert_eq!(out["x-api-key"], "sk-ant-real");
        assert!(out.get("authorization").is_none());
        assert!(out.get("x-cairn-key").is_none());
        assert!(out.get("content-length").is_none());
        assert_eq!(out["anthropic-version"], "2023-06-01");
        let passing = Upstream {
            base_url: "http://up".into(),
            key: None,
        };
        let out = request_headers(&incoming, Provider::OpenAi, &passing);
        assert_eq!(out["authorization"], "Bearer cairn-key-123");
        assert_eq!(
            passing.url("/v1/messages", Some("beta=true")),
            "http://up/v1/messages?beta=true"
        );
        assert_eq!(sidecar.url("/x", None), "http://up/x");
    }
}
