//! Slice latency: sequential 100-line slices at random places of one large
//! memory, over one keep-alive connection.

use std::time::{Duration, Instant};

use anyhow::Context;
use reqwest::StatusCode;

use crate::api::snippet;
use crate::generate::Rng;

/// Lines per slice.
pub const SLICE_LINES: u64 = 100;

/// Error messages kept for the report.
const KEPT_ERRORS: usize = 5;

/// `GET /healthz` requests timed as the floor of HTTP round trips.
const BASELINE_REQUESTS: usize = 200;

/// What the slice measure found.
#[derive(Debug, Default)]
pub struct Slices {
    /// Latency of `GET /healthz` over the same connection: the HTTP floor.
    pub baseline: Vec<Duration>,
    /// Latency of each measured request (status and body included), in order.
    pub latencies: Vec<Duration>,
    /// Answers cut short by the byte cap (allowed, counted).
    pub truncated: u64,
    /// Answers that were not a 200 with the asked lines.
    pub errors: u64,
    /// The first few of those.
    pub error_samples: Vec<String>,
}

/// Fetches `warmup` then `count` slices of [`SLICE_LINES`] lines at uniformly
/// random starts in a memory of `total_lines` lines.
pub async fn run(
    base_url: &str,
    id: &str,
    total_lines: u64,
    warmup: usize,
    count: usize,
    seed: u64,
) -> anyhow::Result<Slices> {
    // One idle connection kept: sequential requests all reuse it.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .context("cannot build the HTTP client")?;
    let mut rng = Rng::new(seed);
    let highest_start = total_lines.saturating_sub(SLICE_LINES - 1).max(1);
    let mut result = Slices::default();
    let health = format!("{base_url}/healthz");
    for _ in 0..BASELINE_REQUESTS {
        let started = Instant::now();
        let (status, _) = fetch(&client, &health).await?;
        result.baseline.push(started.elapsed());
        anyhow::ensure!(status == StatusCode::OK, "GET /healthz answered {status}");
    }
    eprintln!("slices: {warmup} warm-up + {count} measured requests…");
    for round in 0..warmup + count {
        let start = 1 + rng.below(highest_start);
        let end = (start + SLICE_LINES - 1).min(total_lines.max(1));
        let url = format!("{base_url}/v1/memories/{id}/lines?start={start}&end={end}");
        let started = Instant::now();
        let answer = fetch(&client, &url).await;
        let elapsed = started.elapsed();
        let problem = match answer {
            Ok((status, body)) => check(status, &body, start, end, &mut result.truncated),
            Err(e) => Some(format!("{e:#}")),
        };
        if round < warmup {
            continue;
        }
        result.latencies.push(elapsed);
        if let Some(problem) = problem {
            result.errors += 1;
            if result.error_samples.len() < KEPT_ERRORS {
                result
                    .error_samples
                    .push(format!("lines {start}-{end}: {problem}"));
            }
        }
    }
    Ok(result)
}

async fn fetch(client: &reqwest::Client, url: &str) -> anyhow::Result<(StatusCode, bytes::Bytes)> {
    let response = client.get(url).send().await.context("request failed")?;
    let status = response.status();
    let body = response.bytes().await.context("cannot read the answer")?;
    Ok((status, body))
}

/// What is wrong with a slice answer, if anything.
fn check(
    status: StatusCode,
    body: &[u8],
    start: u64,
    end: u64,
    truncated: &mut u64,
) -> Option<String> {
    if status != StatusCode::OK {
        return Some(format!("answered {status}: {}", snippet(body)));
    }
    let answer: serde_json::Value = match serde_json::from_slice(body) {
        Ok(answer) => answer,
        Err(e) => return Some(format!("answer is not JSON ({e}): {}", snippet(body))),
    };
    let got_start = answer["start"].as_u64();
    let got_end = answer["end"].as_u64();
    let text_lines = answer["text"]
        .as_str()
        .map(|text| text.lines().count() as u64);
    if answer["truncated"].as_bool() == Some(true) {
        *truncated += 1;
        return (got_start != Some(start))
            .then(|| format!("truncated answer starts at {got_start:?}"));
    }
    let expected = end - start + 1;
    match (got_start, got_end, text_lines) {
        (Some(s), Some(e), Some(n)) if s == start && e == end && n == expected => None,
        _ => Some(format!(
            "asked {start}-{end}, got start {got_start:?}, end {got_end:?}, {text_lines:?} lines of text"
        )),
    }
}
