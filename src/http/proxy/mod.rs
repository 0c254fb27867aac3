//! The LLM proxy: OpenAI- and Anthropic-compatible endpoints on Cairn's own
//! port. A client points its base URL here (`OPENAI_BASE_URL=http://cairn:8077/v1`,
//! `ANTHROPIC_BASE_URL=http://cairn:8077`) and changes nothing else: each
//! request is offloaded and governed ([`crate::domain::proxying`]), Cairn's
//! retrieval tools are added when it carries a pointer, and the exchange
//! runs in the domain ([`crate::domain::proxying::exchange`]: the upstream
//! called, Cairn's own tool calls answered and the conversation continued,
//! bounded rounds) over two ports implemented in `http` (the upstream through
//! reqwest, `http/upstream.rs`; the tools as MCP answers them,
//! `http/mcp/proxied.rs`).
//! The client gets the provider's own answer shape — JSON or SSE — with
//! `x-cairn-*` headers saying what was done.

use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use futures::StreamExt;

use crate::domain::proxying::exchange::json::{self, Failure};
use crate::domain::proxying::exchange::streamed::{self, Started};
use crate::domain::proxying::exchange::{self, Bounds, Exchange, Services};
use crate::domain::proxying::rewrite::{Report, Rewriter};
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::{Endpoint, Provider};
use crate::http::error::AppError;
use crate::http::limits::Surface;
use crate::http::mcp::proxied as tools;
use crate::http::state::AppState;
use crate::http::upstream::{HttpUpstream, fault_error};

/// Headers that name the client's session, first found wins: Cairn's own,
/// Claude Code's, Codex's. With the conversation's opening they key the
/// governor's tier, which only rises within a conversation.
const SESSION_HEADERS: [&str; 3] = ["x-cairn-thread", "x-claude-code-session-id", "session-id"];

mod auth;
mod endpoint;

use crate::http::upstream;
pub use crate::http::upstream::{Proxy, Upstream};

/// The proxy's routes (outside the OpenAPI document: their contract is the providers').
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/responses", post(responses).get(responses_socket))
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/models", get(models))
        .route("/v1/models/{*model}", get(models))
}

async fn chat_completions(
    State(s): State<AppState>,
    uri: Uri,
    h: HeaderMap,
    body: Body,
) -> Response {
    proxied(s, Endpoint::Chat, uri, h, body).await
}

async fn responses(State(s): State<AppState>, uri: Uri, h: HeaderMap, body: Body) -> Response {
    proxied(s, Endpoint::Responses, uri, h, body).await
}

/// Codex's built-in OpenAI provider first asks for the Responses WebSocket
/// (`GET /v1/responses` with `upgrade: websocket`); Cairn proxies Responses
/// over HTTP and SSE, so it refuses the upgrade and Codex falls back to them.
async fn responses_socket() -> Response {
    endpoint::app_error(
        Provider::OpenAi,
        AppError::new(
            StatusCode::UPGRADE_REQUIRED,
            "websocket_not_supported",
            "Cairn proxies the Responses API over HTTP with server-sent events, not WebSocket",
        ),
    )
}

async fn messages(State(s): State<AppState>, uri: Uri, h: HeaderMap, body: Body) -> Response {
    proxied(s, Endpoint::Messages, uri, h, body).await
}

async fn count_tokens(State(s): State<AppState>, uri: Uri, h: HeaderMap, body: Body) -> Response {
    passed_through(s, Provider::Anthropic, Method::POST, uri, h, body).await
}

async fn models(State(s): State<AppState>, uri: Uri, h: HeaderMap, body: Body) -> Response {
    passed_through(s, Provider::OpenAi, Method::GET, uri, h, body).await
}

/// The `x-cairn-*` headers of an answer after `rounds` retrieval rounds.
fn cairn_headers(r: &Report, rounds: usize) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut set = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    };
    set("x-cairn-tokens-before", r.tokens_before.to_string());
    set("x-cairn-tokens-after", r.tokens_after.to_string());
    set("x-cairn-offloaded", r.offloaded.to_string());
    set("x-cairn-tier", r.tier.name().to_owned());
    set("x-cairn-rounds", rounds.to_string());
    if !r.method.is_empty() {
        set("x-cairn-token-method", r.method.clone());
    }
    if let Some(why) = &r.skipped {
        let why: String = why
            .chars()
            .filter(|c| c.is_ascii() && !c.is_ascii_control())
            .take(200)
            .collect();
        set("x-cairn-skipped", why);
    }
    headers
}

/// A rewritten endpoint: authenticate, read, check the budget, rewrite, add
/// tools, then answer (JSON or a stream).
async fn proxied(
    state: AppState,
    endpoint: Endpoint,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let provider = endpoint.provider();
    let response = match exchange(&state, endpoint, &uri, headers, body).await {
        Ok(response) => response,
        Err(err) => endpoint::app_error(provider, err),
    };
    count(&state, provider, endpoint.name(), response.status());
    response
}

async fn exchange(
    state: &AppState,
    endpoint: Endpoint,
    uri: &Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, AppError> {
    let started = Instant::now();
    let provider = endpoint.provider();
    let upstream = state
        .proxy
        .upstream(provider)
        .ok_or_else(|| not_enabled(provider))?;
    let caller = auth::caller(&state.auth, provider, upstream, &headers)?;
    let admitted = state.limits.admit(&caller.namespace, Surface::Proxy)?;
    let mut body = read_json(body, state.config.max_json_bytes).await?;
    state.ledger.check_budget(&caller.namespace).await?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let opening = exchange::Opening {
        rewriter: Rewriter {
            compressor: &state.compressor,
            ledger: &state.ledger,
            governor: &state.governor,
            settings: &state.proxy.rewrite,
            tiers: &state.proxy.tiers,
        },
        exchanges: &state.exchanges,
        namespace: &caller.namespace,
        endpoint,
        thread: header("x-cairn-thread"),
        session: SESSION_HEADERS.iter().find_map(|name| header(name)),
        tools: tools::definitions(),
    };
    let opened = exchange::open(opening, &mut body, started).await?;
    let upstream = HttpUpstream::new(
        &state.proxy,
        upstream.url(endpoint.upstream_path(), uri.query()),
        upstream::request_headers(&headers, provider, upstream),
    );
    let services = Services {
        ledger: state.ledger.clone(),
        exchanges: state.exchanges.clone(),
    };
    let bounds = Bounds {
        max_rounds: state.proxy.max_rounds,
        timeout: state.proxy.timeout,
        idle: state.proxy.idle,
        max_answer_bytes: state.config.max_json_bytes,
    };
    let tools = tools::ProxyTools {
        state: state.clone(),
        caller: caller.clone(),
    };
    let held = Box::new(admitted);
    let tools = Box::new(tools);
    let x = Exchange::new(services, bounds, opened.request, tools, opened.trace, held);
    if opened.streamed {
        return stream(x, upstream, body, opened.wants_usage).await;
    }
    match json::run(&x, &upstream, body).await {
        Ok(answer) => {
            let mut headers = answer.headers;
            headers.extend(cairn_headers(x.report(), answer.rounds));
            if answer.rewritten {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            }
            Ok(respond(
                status(answer.status),
                headers,
                Body::from(answer.body),
            ))
        }
        Err(Failure::Upstream(fault)) => Err(fault_error(&fault)),
        Err(Failure::Cairn(e)) => {
            let e = AppError::from(e);
            x.finish(e.status().as_u16(), &format!("failed: {}", e.message()));
            Err(e)
        }
    }
}

/// A streamed exchange: the upstream's answer as it came when it is not a
/// stream of events (or an error), else Cairn's stream of the rounds.
async fn stream(
    x: Exchange,
    upstream: HttpUpstream,
    body: Spliced,
    wants_usage: bool,
) -> Result<Response, AppError> {
    let cairn = cairn_headers(x.report(), 0);
    match streamed::start(x, upstream, body, wants_usage).await {
        Err(fault) => Err(fault_error(&fault)),
        Ok(Started::Passed(reply)) => {
            let mut headers = reply.headers;
            headers.extend(cairn);
            let body = reply.body.map(|chunk| chunk.map_err(std::io::Error::other));
            Ok(respond(
                status(reply.status),
                headers,
                Body::from_stream(body),
            ))
        }
        Ok(Started::Streaming {
            mut headers,
            events,
        }) => {
            headers.extend(cairn);
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            let events = tokio_stream::wrappers::ReceiverStream::new(events);
            Ok(respond(StatusCode::OK, headers, Body::from_stream(events)))
        }
    }
}

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY)
}

/// A response with a status, headers and body.
fn respond(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// A route passed through as it is (`/v1/models`, `count_tokens`).
async fn passed_through(
    state: AppState,
    provider: Provider,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let name = if provider == Provider::OpenAi {
        "models"
    } else {
        "count_tokens"
    };
    let response = forward(&state, provider, method, &uri, &headers, body)
        .await
        .unwrap_or_else(|err| endpoint::app_error(provider, err));
    count(&state, provider, name, response.status());
    response
}

async fn forward(
    state: &AppState,
    provider: Provider,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, AppError> {
    let upstream = state
        .proxy
        .upstream(provider)
        .ok_or_else(|| not_enabled(provider))?;
    auth::caller(&state.auth, provider, upstream, headers)?;
    let body = axum::body::to_bytes(body, state.config.max_json_bytes)
        .await
        .map_err(|_| too_large(state.config.max_json_bytes))?;
    let path = match provider {
        // The OpenAI base URL ends in /v1 already.
        Provider::OpenAi => uri.path().trim_start_matches("/v1"),
        Provider::Anthropic => uri.path(),
    };
    let answer = upstream::forward(
        &state.proxy.client,
        method,
        &upstream.url(path, uri.query()),
        upstream::request_headers(headers, provider, upstream),
        body,
        state.proxy.timeout,
    )
    .await?;
    let status = answer.status();
    let headers = upstream::response_headers(answer.headers());
    Ok(respond(
        status,
        headers,
        Body::from_stream(answer.bytes_stream()),
    ))
}

fn count(state: &AppState, provider: Provider, endpoint: &str, status: StatusCode) {
    state
        .metrics
        .proxy
        .requests
        .with_label_values(&[provider.name(), endpoint, status.as_str()])
        .inc();
}

/// The body as a JSON object (bounded by `CAIRN_MAX_JSON_BYTES`), with its bytes.
async fn read_json(body: Body, limit: usize) -> Result<Spliced, AppError> {
    let bytes = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| too_large(limit))?;
    let body = Spliced::parse(bytes)
        .map_err(|e| AppError::bad_request(format!("the body is not valid JSON: {e}")))?;
    if !body.value().is_object() {
        return Err(AppError::bad_request("the body must be a JSON object"));
    }
    Ok(body)
}

fn too_large(limit: usize) -> AppError {
    AppError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("the body is larger than {limit} bytes (CAIRN_MAX_JSON_BYTES)"),
    )
}

fn not_enabled(provider: Provider) -> AppError {
    AppError::new(
        StatusCode::NOT_FOUND,
        "proxy_not_enabled",
        format!(
            "the {} proxy is not enabled: set {} to the upstream's base URL",
            provider.name(),
            provider.url_variable()
        ),
    )
}
