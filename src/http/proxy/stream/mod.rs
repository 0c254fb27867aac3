//! Streaming exchanges (`"stream": true`): one well-formed SSE stream for the
//! client. Text is forwarded event by event as it arrives; from the round's
//! first tool call on, events are held until the round ends (tool calls are
//! short, and only then is it known whether Cairn answers them). A round
//! that calls Cairn's tools is consumed — its calls answered, the upstream
//! asked again — and the next round's events continue the same stream
//! (indexes and sequence numbers carried on, its opening events dropped).
//! The final round's held events and closing events follow, with usage
//! summed over the rounds. An upstream that cuts its stream cuts the client's.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

use super::Exchange;
use super::answer::respond;
use super::ledger::{upstream_fault_of, upstream_fault_of_status};
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::sse::Parser;
use crate::domain::proxying::stream::{Filter, RoundAnswer};
use crate::domain::proxying::{Endpoint, wire};
use crate::http::error::AppError;
use crate::http::upstream;

/// Largest single event Cairn holds while it waits for the event's end.
const MAX_EVENT_BYTES: usize = 16 << 20;

/// Most of an upstream error body read for its message.
const ERROR_BYTES: usize = 64 << 10;

type Chunk = Result<Bytes, std::io::Error>;

/// Starts the exchange; answers the stream's head as soon as the first round's comes.
/// `wants_usage`: the client asked for usage in its stream itself ([`ask_usage`]).
pub async fn run(x: Exchange, body: Spliced, wants_usage: bool) -> Result<Response, AppError> {
    let bytes = body.shared();
    let asked = Instant::now();
    let first = match x.send(bytes).await {
        Ok(first) => first,
        Err(e) => {
            if let Some(kind) = upstream_fault_of(e.code()) {
                x.upstream_fault(kind);
            }
            x.finish(e.status(), &format!("failed: {}", e.message()));
            return Err(e);
        }
    };
    let waited = asked.elapsed();
    let status = first.status();
    let mut headers = upstream::response_headers(first.headers());
    headers.extend(x.cairn_headers(0));
    let is_sse = first
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !status.is_success() || !is_sse {
        x.record_latency(waited);
        let outcome = if status.is_success() {
            "answered"
        } else {
            x.upstream_fault(upstream_fault_of_status(status));
            "upstream_error"
        };
        x.finish(status, outcome);
        return Ok(respond(
            status,
            headers,
            Body::from_stream(first.bytes_stream()),
        ));
    }
    let (tx, rx) = mpsc::channel::<Chunk>(64);
    tokio::spawn(async move {
        let mut rounds = Rounds {
            filter: Filter::new(x.endpoint, &x.ours, wants_usage),
            x,
            body,
            tx,
            waited,
        };
        rounds.drive(first).await;
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    Ok(respond(StatusCode::OK, headers, Body::from_stream(stream)))
}

/// Asks a chat stream for its usage, which accounting needs (kept from a
/// client that did not ask); answers whether the client asked itself.
pub fn ask_usage(endpoint: Endpoint, body: &mut Spliced) -> Result<bool, AppError> {
    let wants_usage = body.value()["stream_options"]["include_usage"] == Value::Bool(true);
    if endpoint == Endpoint::Chat && !wants_usage {
        body.edit(|body| body["stream_options"]["include_usage"] = Value::Bool(true))
            .map_err(AppError::internal_error)?;
    }
    Ok(wants_usage)
}

/// The task feeding the client's stream.
struct Rounds {
    x: Exchange,
    body: Spliced,
    filter: Filter,
    tx: mpsc::Sender<Chunk>,
    waited: Duration,
}

impl Rounds {
    async fn drive(&mut self, mut response: reqwest::Response) {
        let mut rounds = 0;
        let mut first_cache_write = 0;
        loop {
            let Some(answer) = self.pump(response).await else {
                return;
            };
            let used = self
                .x
                .account_round(rounds, &answer.usage, answer.model.as_deref())
                .await;
            if rounds == 0 {
                first_cache_write = used.map_or(0, |u| u.cache_write);
            }
            self.filter.add_usage(&answer.usage);
            let ours = self.x.our_calls(&answer.message);
            if ours.is_empty() || rounds + 1 >= self.x.proxy().max_rounds {
                let events = self.filter.finish(!ours.is_empty());
                // Recorded before the last events go: a client that sends its
                // next turn as soon as this stream ends finds it in the ledger.
                if let Err(e) = self.x.record_saving(first_cache_write).await {
                    tracing::warn!(error = e.message(), "could not record the proxy's saving");
                }
                self.x.record_latency(self.waited);
                self.x.finish(StatusCode::OK, "answered");
                for event in events {
                    if !self.send(event.raw).await {
                        return;
                    }
                }
                return;
            }
            let results = self.x.answer_calls(ours).await;
            let endpoint = self.x.endpoint;
            let next = self.body.edit(|body| {
                wire::of(endpoint).continue_with(body, &answer.message, &results);
            });
            if next.is_err() {
                return self.cut(None, "cannot write the next round").await;
            }
            self.filter.next_round();
            rounds += 1;
            let bytes = self.body.shared();
            let asked = Instant::now();
            let next = self.x.send(bytes).await;
            self.waited += asked.elapsed();
            match next {
                Ok(next) if next.status().is_success() => response = next,
                Ok(next) => return self.refused(next).await,
                Err(e) => return self.cut(upstream_fault_of(e.code()), e.message()).await,
            }
        }
    }

    /// Forwards one round's stream through the filter; answers the round's
    /// answer, or None when the stream was cut (the client's is cut too).
    async fn pump(&mut self, response: reqwest::Response) -> Option<RoundAnswer> {
        let mut parser = Parser::default();
        let mut bytes = response.bytes_stream();
        loop {
            let started = Instant::now();
            let next = tokio::time::timeout(self.x.proxy().idle, bytes.next()).await;
            self.waited += started.elapsed();
            match next {
                Ok(Some(Ok(chunk))) => {
                    let events = parser.push(&chunk);
                    if parser.pending() > MAX_EVENT_BYTES {
                        self.cut(
                            Some("too_large"),
                            "an upstream event is larger than Cairn holds",
                        )
                        .await;
                        return None;
                    }
                    for event in events {
                        for out in self.filter.on_event(event) {
                            if !self.send(out.raw).await {
                                return None;
                            }
                        }
                    }
                }
                Ok(Some(Err(e))) => {
                    self.cut(Some("cut"), &e.to_string()).await;
                    return None;
                }
                Ok(None) => break,
                Err(_) => {
                    self.cut(Some("stalled"), "the upstream stream went silent")
                        .await;
                    return None;
                }
            }
        }
        match self.filter.round_answer() {
            Some(answer) if !parser.has_partial() => Some(answer),
            _ => {
                self.cut(
                    Some("cut"),
                    "the upstream stream ended before the answer did",
                )
                .await;
                None
            }
        }
    }

    async fn send(&self, bytes: Vec<u8>) -> bool {
        self.tx.send(Ok(Bytes::from(bytes))).await.is_ok()
    }

    /// Ends the client's stream with the upstream's refusal of a retrieval
    /// round, as the API's error event (then the stream ends).
    async fn refused(&mut self, mut response: reqwest::Response) {
        let status = response.status();
        tracing::warn!(%status, "upstream refused a retrieval round");
        // The error's own message when it is a JSON error (either provider's
        // shape), read up to ERROR_BYTES.
        let read = async {
            let mut body = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() > ERROR_BYTES {
                    break;
                }
            }
            body
        };
        let body = tokio::time::timeout(self.x.proxy().idle, read)
            .await
            .unwrap_or_default();
        let message = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("upstream answered {status}"));
        let message = format!("upstream refused Cairn's retrieval round: {message}");
        let event = self.filter.error_event(status.as_u16(), &message);
        self.x.record_latency(self.waited);
        self.x.upstream_fault("round_refused");
        self.x
            .finish(StatusCode::OK, &format!("refused: {message}"));
        self.send(event.raw).await;
    }

    /// Ends the client's stream with an error: never a clean end. `fault`:
    /// the upstream's fault it was, if any.
    async fn cut(&self, fault: Option<&'static str>, why: &str) {
        tracing::warn!(reason = why, "proxied stream cut");
        if let Some(kind) = fault {
            self.x.upstream_fault(kind);
        }
        self.x.record_latency(self.waited);
        self.x.finish(StatusCode::OK, &format!("cut: {why}"));
        let _ = self
            .tx
            .send(Err(std::io::Error::other(why.to_owned())))
            .await;
    }
}
