//! `GET /metrics` (Prometheus text format) and the middleware that counts
//! every request by route template, method and status.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::state::AppState;
use crate::domain::foreground::Foreground;
use crate::metrics::Metrics;

/// The server's metrics in the Prometheus text format. Store gauges are
/// read from the metadata store at each scrape.
pub async fn get(State(state): State<AppState>) -> Response {
    match state.meta.store_totals().await {
        Ok(totals) => {
            let metrics = &state.metrics;
            metrics.store_objects.set(gauge(totals.objects));
            metrics.store_bytes.set(gauge(totals.stored_bytes));
            metrics.store_content_bytes.set(gauge(totals.bytes));
        }
        Err(e) => tracing::warn!(error = %e, "could not read store totals for /metrics"),
    }
    state
        .metrics
        .catch_up_token_cache(crate::domain::tokens::cache_lookups());
    (
        [(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)],
        state.metrics.render(),
    )
        .into_response()
}

fn gauge(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Counts the request and times it until the response head, labelled by the
/// route template (`unmatched` for unknown paths: raw paths never become labels).
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = method_label(request.method());
    let started = Instant::now();
    let response = next.run(request).await;
    metrics
        .http_duration
        .with_label_values(&[&route, method])
        .observe(started.elapsed().as_secs_f64());
    metrics
        .http_requests
        .with_label_values(&[&route, method, response.status().as_str()])
        .inc();
    response
}

/// Counts the request as in flight until its response head, for the
/// background work that gives way to requests (the search indexer).
pub async fn foreground(
    State(foreground): State<Arc<Foreground>>,
    request: Request,
    next: Next,
) -> Response {
    // A proxied exchange waits on its upstream for seconds: the indexer
    // should use that time (its next round may search what it offloaded).
    // So does a search waiting for the index to catch up (`wait_ms`).
    let path = request.uri().path();
    let waits = path == "/v1/search"
        && request
            .uri()
            .query()
            .is_some_and(|q| q.contains("wait_ms="));
    if PROXIED.contains(&path) || waits {
        return next.run(request).await;
    }
    let _busy = foreground.enter();
    next.run(request).await
}

/// The proxy's exchanges, which do not hold the indexer back.
const PROXIED: [&str; 3] = ["/v1/chat/completions", "/v1/responses", "/v1/messages"];

/// Standard methods keep their name; anything else is `other`.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}
