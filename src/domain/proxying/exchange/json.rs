//! Whole (not streamed) exchanges: call the upstream, answer Cairn's own
//! tool calls and ask again (at most `max_rounds` calls), then hand the
//! client the last answer with usage summed over the rounds.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use serde_json::Value;

use super::record::upstream_fault_of_status;
use super::{Exchange, Fault, Upstream};
use crate::domain::DomainError;
use crate::domain::proxying::spliced::Spliced;
use crate::domain::proxying::usage;
use crate::domain::proxying::wire::{self, Shown};

/// The answer the client gets.
pub struct Answered<H> {
    /// The upstream's status.
    pub status: u16,
    /// The upstream's headers (of the last round).
    pub headers: H,
    /// The body.
    pub body: Bytes,
    /// Retrieval rounds Cairn answered before it.
    pub rounds: usize,
    /// True when the body is Cairn's JSON (rounds folded in, its tools
    /// stripped); false when it is the upstream's answer as it came (an
    /// error, or a body Cairn cannot read).
    pub rewritten: bool,
}

/// Why an exchange has no answer for its client.
#[derive(Debug)]
pub enum Failure {
    /// The upstream gave none (recorded: the exchange is finished).
    Upstream(Fault),
    /// Cairn could not record or continue it (the caller finishes the
    /// exchange with the status it answers).
    Cairn(DomainError),
}

/// Runs the exchange to its final answer and finishes its record, except
/// after a [`Failure::Cairn`].
pub async fn run<U: Upstream>(
    x: &Exchange,
    upstream: &U,
    body: Spliced,
) -> Result<Answered<U::Headers>, Failure> {
    let answered = rounds(x, upstream, body).await;
    match &answered {
        Ok(a) if (200..300).contains(&a.status) => x.finish(a.status, "answered"),
        Ok(a) => {
            x.upstream_fault(upstream_fault_of_status(a.status));
            x.finish(a.status, "upstream_error");
        }
        Err(Failure::Upstream(fault)) => {
            x.upstream_fault(fault.kind());
            x.finish(fault.status(), &format!("failed: {}", fault.message()));
        }
        Err(Failure::Cairn(_)) => {}
    }
    answered
}

async fn rounds<U: Upstream>(
    x: &Exchange,
    upstream: &U,
    mut body: Spliced,
) -> Result<Answered<U::Headers>, Failure> {
    let mut waited = Duration::ZERO;
    let mut total_usage: Option<Value> = None;
    let mut first_cache_write = 0;
    let mut rounds = 0;
    let endpoint = x.endpoint();
    let wire = wire::of(endpoint);
    let mut shown = Shown::new(endpoint);
    loop {
        let asked = Instant::now();
        let (status, headers, content) = ask(x, upstream, body.shared())
            .await
            .map_err(Failure::Upstream)?;
        waited += asked.elapsed();
        let parsed = (200..300)
            .contains(&status)
            .then(|| Spliced::parse(content.clone()).ok())
            .flatten()
            .filter(|p| p.value().is_object());
        // An error or a body Cairn cannot read goes to the client as it came.
        let Some(mut parsed) = parsed else {
            x.record_latency(waited);
            return Ok(Answered {
                status,
                headers,
                body: content,
                rounds,
                rewritten: false,
            });
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
        if ours.is_empty() || rounds + 1 >= x.bounds.max_rounds {
            let strip = !ours.is_empty();
            let added = &x.request.ours;
            parsed
                .edit(|answer| {
                    if strip {
                        wire.strip_calls(answer, added);
                    }
                    std::mem::replace(&mut shown, Shown::new(endpoint)).prepend_to(answer);
                    wire.strip_tool_echo(answer, added);
                    if rounds > 0
                        && let Some(total) = total_usage.filter(|u| !u.is_null())
                    {
                        answer["usage"] = total;
                    }
                })
                .map_err(|e| Failure::Cairn(DomainError::Internal(e.to_string())))?;
            x.record_saving(first_cache_write)
                .await
                .map_err(Failure::Cairn)?;
            x.record_latency(waited);
            return Ok(Answered {
                status,
                headers,
                body: parsed.shared(),
                rounds,
                rewritten: true,
            });
        }
        shown.keep(answer);
        let results = x.answer_calls(ours).await;
        let answer = parsed.value();
        body.edit(|body| wire.continue_with(body, answer, &results))
            .map_err(|e| Failure::Cairn(DomainError::Internal(e.to_string())))?;
        body.lighten();
        rounds += 1;
    }
}

/// One upstream call: the answer's status, headers and whole body (at most
/// `max_answer_bytes`: a larger answer is a fault, not unbounded memory).
async fn ask<U: Upstream>(
    x: &Exchange,
    upstream: &U,
    bytes: Bytes,
) -> Result<(u16, U::Headers, Bytes), Fault> {
    let reply = upstream.send(bytes).await?;
    let limit = x.bounds.max_answer_bytes;
    let mut body = reply.body;
    let read = async {
        let mut content = BytesMut::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(Fault::Unreachable)?;
            if content.len() + chunk.len() > limit {
                return Err(Fault::TooLarge(limit));
            }
            content.extend_from_slice(&chunk);
        }
        Ok(content.freeze())
    };
    let deadline = x.bounds.timeout;
    let content = tokio::time::timeout(deadline, read)
        .await
        .map_err(|_| Fault::Timeout(Some(deadline)))??;
    Ok((reply.status, reply.headers, content))
}
