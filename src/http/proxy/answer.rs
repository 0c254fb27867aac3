//! Non-streaming exchanges: call the upstream, answer Cairn's own tool calls
//! and ask again (at most `CAIRN_PROXY_MAX_ROUNDS` calls), then hand the
//! client the last answer with usage summed over the rounds.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;

use super::Exchange;
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::usage;
use crate::domain::proxying::wire::{self, Shown};
use crate::http::error::AppError;
use crate::http::upstream;

/// Runs the exchange to its final answer.
pub async fn run(x: &Exchange, mut body: Spliced) -> Result<Response, AppError> {
    let mut waited = Duration::ZERO;
    let mut total_usage: Option<Value> = None;
    let mut first_cache_write = 0;
    let mut rounds = 0;
    let wire = wire::of(x.endpoint);
    let mut shown = Shown::new(x.endpoint);
    loop {
        let asked = Instant::now();
        let (status, mut headers, content) = ask(x, body.shared()).await?;
        waited += asked.elapsed();
        let parsed = status
            .is_success()
            .then(|| Spliced::parse(content.clone()).ok())
            .flatten()
            .filter(|p| p.value().is_object());
        // An error or a body Cairn cannot read goes to the client as it came.
        let Some(mut parsed) = parsed else {
            headers.extend(x.cairn_headers(rounds));
            x.record_latency(waited);
            return Ok(respond(status, headers, Body::from(content)));
        };
        let answer = parsed.value();
        let used = x
            .account_round(rounds, &answer["usage"], answer["model"].as_str())
            .await;
        if rounds == 0 {
            first_cache_write = used.map_or(0, |u| u.cache_write);
        }
        match &mut total_usage {
            Some(total) => usage::add_usage(total, &answer["usage"]),
            None => total_usage = Some(answer["usage"].clone()),
        }
        let ours = x.our_calls(answer);
        if ours.is_empty() || rounds + 1 >= x.proxy().max_rounds {
            let strip = !ours.is_empty();
            parsed
                .edit(|answer| {
                    if strip {
                        wire.strip_calls(answer, &x.ours);
                    }
                    std::mem::replace(&mut shown, Shown::new(x.endpoint)).prepend_to(answer);
                    wire.strip_tool_echo(answer, &x.ours);
                    if rounds > 0
                        && let Some(total) = total_usage.filter(|u| !u.is_null())
                    {
                        answer["usage"] = total;
                    }
                })
                .map_err(AppError::internal_error)?;
            x.record_saving(first_cache_write).await?;
            headers.extend(x.cairn_headers(rounds));
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            x.record_latency(waited);
            return Ok(respond(status, headers, Body::from(parsed.shared())));
        }
        shown.keep(answer);
        let results = x.answer_calls(ours).await;
        let answer = parsed.value();
        body.edit(|body| wire.continue_with(body, answer, &results))
            .map_err(AppError::internal_error)?;
        rounds += 1;
    }
}

/// One upstream call: the answer's status, headers and whole body (at most
/// `CAIRN_MAX_JSON_BYTES`: a larger answer is a 502, not unbounded memory).
async fn ask(x: &Exchange, bytes: Bytes) -> Result<(StatusCode, HeaderMap, Bytes), AppError> {
    let proxy = x.proxy();
    let mut answer = x.send(bytes).await?;
    let status = answer.status();
    let headers = upstream::response_headers(answer.headers());
    let limit = x.state.config.max_json_bytes;
    let read = async {
        let mut content = bytes::BytesMut::new();
        while let Some(chunk) = answer.chunk().await.map_err(|e| upstream::failure(&e))? {
            if content.len() + chunk.len() > limit {
                return Err(upstream::too_large(limit));
            }
            content.extend_from_slice(&chunk);
        }
        Ok(content.freeze())
    };
    let content = tokio::time::timeout(proxy.timeout, read)
        .await
        .map_err(|_| upstream::timed_out(proxy.timeout))??;
    Ok((status, headers, content))
}

/// A response with a status, headers and body.
pub fn respond(
    status: axum::http::StatusCode,
    headers: axum::http::HeaderMap,
    body: Body,
) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

impl Exchange {
    /// Records the exchange's saving (net of the cache writes its rewrite caused).
    pub(super) async fn record_saving(&self, first_cache_write: u64) -> Result<u64, AppError> {
        let caused = if self.report.governed {
            first_cache_write
        } else {
            0
        };
        let model = Some(self.model.as_str()).filter(|m| !m.is_empty());
        Ok(usage::record_saving(
            &self.state.ledger,
            &self.caller.namespace,
            self.endpoint.provider(),
            model,
            self.report.saved(),
            caused,
        )
        .await?)
    }
}
