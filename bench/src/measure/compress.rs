//! `POST /v1/compress` latency on a 100-message agent transcript of about
//! 200k tokens: the first call (every big tool result is stored) and repeat
//! calls of the same transcript (every piece is already known).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::api::Api;

pub use crate::generate::transcript::{MESSAGES, transcript};

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
