//! `POST /v1/compress` latency on a 100-message agent transcript of about
//! 200k tokens: the first call (every big tool result is stored) and repeat
//! calls of the same transcript (every piece is already known).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::api::Api;
use crate::generate::TextGenerator;

/// Messages in the transcript.
pub const MESSAGES: usize = 100;
/// Tool calls in it (each with its result): 2 × 32 of the 100 messages.
const TOOL_CALLS: usize = 32;
/// Bytes of each tool result: this log-like text runs ~2.9 bytes a token,
/// so the transcript comes to about 200k o200k tokens.
const RESULT_BYTES: usize = 18 << 10;

/// What the compress measure found.
#[derive(Debug)]
pub struct Compress {
    /// Request body size.
    pub body_bytes: usize,
    /// `report.tokens_before` of the first answer.
    pub tokens_before: u64,
    /// `report.tokens_after` of the first answer.
    pub tokens_after: u64,
    /// Pieces stored by the first call.
    pub offloaded: usize,
    /// Latency of the first call.
    pub first: Duration,
    /// Latencies of the repeat calls.
    pub repeats: Vec<Duration>,
    /// Whether every repeat answered exactly what the first did.
    pub repeats_identical: bool,
}

/// The transcript: a system prompt, a task, 32 tool calls with ~24 KiB
/// results of log-like text, and short assistant/user chatter in between.
pub fn transcript(seed: u64) -> Vec<Value> {
    let mut text = TextGenerator::new(seed);
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent. Use the tools; keep answers short."}),
        json!({"role": "user", "content": "The nightly build is red: find out why and fix it."}),
    ];
    let mut call = 0;
    while messages.len() < MESSAGES {
        if call < TOOL_CALLS && messages.len() + 2 <= MESSAGES {
            call += 1;
            let id = format!("call_{call:03}");
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "run", "arguments": format!("{{\"step\": {call}}}")}}]}));
            let mut out = Vec::with_capacity(RESULT_BYTES + 256);
            text.fill(&mut out, RESULT_BYTES);
            messages.push(json!({"role": "tool", "tool_call_id": id,
                "content": String::from_utf8_lossy(&out).into_owned()}));
        }
        if messages.len() < MESSAGES {
            let mut line = Vec::new();
            text.push_line(&mut line);
            let role = if messages.len() % 2 == 0 {
                "assistant"
            } else {
                "user"
            };
            messages.push(
                json!({"role": role, "content": String::from_utf8_lossy(&line).trim().to_owned()}),
            );
        }
    }
    messages
}

/// Compresses the transcript once on a fresh server, then `repeats` more times.
pub async fn run(api: &Api, seed: u64, repeats: usize) -> anyhow::Result<Compress> {
    let body = json!({"messages": transcript(seed), "model": "gpt-4.1", "strategy": "pointer"})
        .to_string();
    let post = || async {
        let started = Instant::now();
        let response = api
            .client
            .post(api.url("/v1/compress"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .context("POST /v1/compress")?;
        let status = response.status();
        let answer = response
            .bytes()
            .await
            .context("reading the compress answer")?;
        let elapsed = started.elapsed();
        if !status.is_success() {
            bail!(
                "compress answered {status}: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        anyhow::Ok((elapsed, answer))
    };
    let (first, first_answer) = post().await?;
    let parsed: Value = serde_json::from_slice(&first_answer).context("compress answer")?;
    let report = &parsed["report"];
    let mut durations = Vec::with_capacity(repeats);
    let mut repeats_identical = true;
    for _ in 0..repeats {
        let (elapsed, answer) = post().await?;
        durations.push(elapsed);
        repeats_identical &= answer == first_answer;
    }
    Ok(Compress {
        body_bytes: body.len(),
        tokens_before: report["tokens_before"].as_u64().unwrap_or(0),
        tokens_after: report["tokens_after"].as_u64().unwrap_or(0),
        offloaded: report["offloaded"].as_array().map_or(0, Vec::len),
        first,
        repeats: durations,
        repeats_identical,
    })
}
