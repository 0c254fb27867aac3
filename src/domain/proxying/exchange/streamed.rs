//! Streamed exchanges (`"stream": true`): one well-formed event stream for
//! the client. Text is forwarded event by event as it arrives; from the
//! round's first tool call on, events are held until the round ends (tool
//! calls are short, and only then is it known whether Cairn answers them).
//! A round that calls Cairn's tools is consumed — its calls answered, the
//! upstream asked again — and the next round's events continue the same
//! stream (indexes and sequence numbers carried on, its opening events
//! dropped). The final round's held events and closing events follow, with
//! usage summed over the rounds. An upstream that cuts its stream cuts the
//! client's.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::sync::mpsc;

use super::record::upstream_fault_of_status;
use super::{Exchange, Fault, Reply, Upstream};
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::sse::Parser;
use crate::domain::proxying::wire;
use crate::domain::proxying::wire::stream::{Filter, RoundAnswer};

/// Largest single event Cairn holds while it waits for the event's end.
const MAX_EVENT_BYTES: usize = 16 << 20;

/// Most of an upstream error body read for its message.
const ERROR_BYTES: usize = 64 << 10;

/// One piece of the client's stream; an error ends it without a clean end.
pub type Chunk = Result<Bytes, std::io::Error>;

/// How the exchange's answer begins.
pub enum Started<H> {
    /// Not an event stream, or the upstream's error: it goes to the client
    /// as it comes (the exchange is finished).
    Passed(Reply<H>),
    /// Cairn's stream: the first round's headers and the events to come.
    Streaming {
        /// The first round's headers.
        headers: H,
        /// The client's stream, fed by a task until the exchange ends.
        events: mpsc::Receiver<Chunk>,
    },
}

/// Starts the exchange; answers as soon as the first round's head comes.
/// `wants_usage`: the client asked for usage in its stream itself (`StreamApi::ask_usage`).
pub async fn start<U: Upstream + 'static>(
    x: Exchange,
    upstream: U,
    body: Spliced,
    wants_usage: bool,
) -> Result<Started<U::Headers>, Fault> {
    let asked = Instant::now();
    let first = match upstream.send(body.shared()).await {
        Ok(first) => first,
        Err(fault) => {
            x.upstream_fault(fault.kind());
            x.finish(fault.status(), &format!("failed: {}", fault.message()));
            return Err(fault);
        }
    };
    let waited = asked.elapsed();
    let success = (200..300).contains(&first.status);
    if !success || !first.event_stream {
        x.record_latency(waited);
        let outcome = if success {
            "answered"
        } else {
            x.upstream_fault(upstream_fault_of_status(first.status));
            "upstream_error"
        };
        x.finish(first.status, outcome);
        return Ok(Started::Passed(first));
    }
    let (tx, rx) = mpsc::channel::<Chunk>(64);
    let Reply {
        headers,
        body: events,
        ..
    } = first;
    tokio::spawn(async move {
        let mut rounds = Rounds {
            filter: Filter::new(x.endpoint(), &x.request.ours, wants_usage),
            x,
            upstream,
            body,
            tx,
            waited,
        };
        rounds.drive(events).await;
    });
    Ok(Started::Streaming {
        headers,
        events: rx,
    })
}

/// The task feeding the client's stream.
struct Rounds<U> {
    x: Exchange,
    upstream: U,
    body: Spliced,
    filter: Filter,
    tx: mpsc::Sender<Chunk>,
    waited: Duration,
}

impl<U: Upstream> Rounds<U> {
    async fn drive(&mut self, mut events: BoxStream<'static, Result<Bytes, String>>) {
        let mut rounds = 0;
        let mut first_cache_write = 0;
        loop {
            let Some(answer) = self.pump(events).await else {
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
            if ours.is_empty() || rounds + 1 >= self.x.bounds.max_rounds {
                let events = self.filter.finish(!ours.is_empty());
                // Recorded before the last events go: a client that sends its
                // next turn as soon as this stream ends finds it in the ledger.
                if let Err(e) = self.x.record_saving(first_cache_write).await {
                    tracing::warn!(error = %e, "could not record the proxy's saving");
                }
                self.x.record_latency(self.waited);
                self.x.finish(200, "answered");
                for event in events {
                    if !self.send(event.raw).await {
                        return;
                    }
                }
                return;
            }
            let results = self.x.answer_calls(ours).await;
            let endpoint = self.x.endpoint();
            let next = self.body.edit(|body| {
                wire::of(endpoint).continue_with(body, &answer.message, &results);
            });
            if next.is_err() {
                return self.cut(None, "cannot write the next round").await;
            }
            self.body.lighten();
            self.filter.next_round();
            rounds += 1;
            let asked = Instant::now();
            let next = self.upstream.send(self.body.shared()).await;
            self.waited += asked.elapsed();
            match next {
                Ok(next) if (200..300).contains(&next.status) => events = next.body,
                Ok(next) => return self.refused(next).await,
                Err(fault) => return self.cut(Some(fault.kind()), &fault.message()).await,
            }
        }
    }

    /// Forwards one round's stream through the filter; answers the round's
    /// answer, or None when the stream was cut (the client's is cut too).
    async fn pump(
        &mut self,
        mut bytes: BoxStream<'static, Result<Bytes, String>>,
    ) -> Option<RoundAnswer> {
        let mut parser = Parser::default();
        loop {
            let started = Instant::now();
            let next = tokio::time::timeout(self.x.bounds.idle, bytes.next()).await;
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
                    self.cut(Some("cut"), &e).await;
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
    async fn refused(&mut self, reply: Reply<U::Headers>) {
        let status = reply.status;
        tracing::warn!(status, "upstream refused a retrieval round");
        // The error's own message when it is a JSON error (either provider's
        // shape), read up to ERROR_BYTES.
        let mut rest = reply.body;
        let read = async {
            let mut body = Vec::new();
            while let Some(Ok(chunk)) = rest.next().await {
                body.extend_from_slice(&chunk);
                if body.len() > ERROR_BYTES {
                    break;
                }
            }
            body
        };
        let body = tokio::time::timeout(self.x.bounds.idle, read)
            .await
            .unwrap_or_default();
        let message = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("upstream answered {status}"));
        let message = format!("upstream refused Cairn's retrieval round: {message}");
        let event = self.filter.error_event(status, &message);
        self.x.record_latency(self.waited);
        self.x.upstream_fault("round_refused");
        self.x.finish(200, &format!("refused: {message}"));
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
        self.x.finish(200, &format!("cut: {why}"));
        let _ = self
            .tx
            .send(Err(std::io::Error::other(why.to_owned())))
            .await;
    }
}
