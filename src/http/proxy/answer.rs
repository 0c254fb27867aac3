//! Non-streaming exchanges: call the upstream, answer Cairn's own tool calls
//! and ask again (at most `CAIRN_PROXY_MAX_ROUNDS` calls), then hand the
//! client the last answer with usage summed over the rounds.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use serde_json::Value;

use super::{Exchange, tools, upstream};
use crate::domain::proxying::usage::{self, Round, Usage};
use crate::http::error::AppError;

/// Runs the exchange to its final answer.
pub async fn run(x: &Exchange, mut body: Value, mut bytes: Vec<u8>) -> Result<Response, AppError> {
    let proxy = x.proxy();
    let mut waited = Duration::ZERO;
    let mut total_usage: Option<Value> = None;
    let mut first_cache_write = 0;
    let mut rounds = 0;
    loop {
        let asked = Instant::now();
        let answer = upstream::send(
            &proxy.client,
            &x.url,
            x.headers.clone(),
            bytes,
            proxy.timeout,
        )
        .await?;
        let status = answer.status();
        let mut headers = upstream::response_headers(answer.headers());
        let content = tokio::time::timeout(proxy.timeout, answer.bytes())
            .await
            .map_err(|_| upstream::timed_out(proxy.timeout))?
            .map_err(|e| upstream::failure(&e))?;
        waited += asked.elapsed();
        let parsed = if status.is_success() {
            serde_json::from_slice::<Value>(&content).ok()
        } else {
            None
        };
        // An error or a body Cairn cannot read goes to the client as it came.
        let Some(mut parsed) = parsed else {
            headers.extend(x.cairn_headers(rounds));
            x.record_latency(waited);
            return Ok(respond(status, headers, Body::from(content)));
        };
        let round_usage = Usage::of(x.endpoint, &parsed["usage"]);
        if let Some(u) = round_usage {
            if rounds == 0 {
                first_cache_write = u.cache_write;
            }
            let model = parsed["model"].as_str().unwrap_or(&x.model).to_owned();
            let estimated = (rounds == 0).then_some(x.report.tokens_after);
            usage::record_round(
                &x.state.ledger,
                &x.caller.namespace,
                &Round {
                    endpoint: x.endpoint,
                    model: &model,
                    usage: u,
                    estimated_input: estimated,
                },
            )
            .await;
        }
        match &mut total_usage {
            Some(total) => usage::add_usage(total, &parsed["usage"]),
            None => total_usage = Some(parsed["usage"].clone()),
        }
        let ours: Vec<tools::ToolCall> = tools::calls(x.endpoint, &parsed)
            .into_iter()
            .filter(|c| x.ours.contains(&c.name.as_str()))
            .collect();
        if ours.is_empty() || rounds + 1 >= proxy.max_rounds {
            if !ours.is_empty() {
                tools::strip(x.endpoint, &mut parsed, &x.ours);
            }
            if let Some(total) = total_usage.filter(|u| !u.is_null()) {
                parsed["usage"] = total;
            }
            x.record_saving(first_cache_write).await?;
            headers.extend(x.cairn_headers(rounds));
            let content =
                serde_json::to_vec(&parsed).map_err(|e| AppError::bad_request(e.to_string()))?;
            headers.insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            );
            x.record_latency(waited);
            return Ok(respond(status, headers, Body::from(content)));
        }
        let mut results = Vec::with_capacity(ours.len());
        for call in ours {
            results.push(tools::run(&x.state, &x.caller, call).await);
        }
        tools::continue_with(x.endpoint, &mut body, &parsed, &results);
        bytes = serde_json::to_vec(&body).map_err(|e| AppError::bad_request(e.to_string()))?;
        rounds += 1;
        x.state
            .metrics
            .proxy
            .rounds
            .with_label_values(&[x.endpoint.provider().name()])
            .inc();
    }
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
