//! Asking the searches and timing each answer.

use std::time::Instant;

use anyhow::Context;
use reqwest::StatusCode;

use super::{LIMIT, QueryKind, Sample, Search};
use crate::api::Api;
use crate::api::snippet;

/// Runs the queries one after the other on one keep-alive connection.
pub(super) async fn search_all(
    api: &Api,
    queries: &[(QueryKind, String)],
    warmup: usize,
    deadline: Option<Instant>,
    result: &mut Search,
) -> anyhow::Result<()> {
    let loaded = deadline.is_some();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .context("cannot build the HTTP client")?;
    let limit = LIMIT.to_string();
    for (round, (kind, query)) in queries.iter().enumerate() {
        if deadline.is_some_and(|d| Instant::now() > d) {
            break;
        }
        let url = reqwest::Url::parse_with_params(
            &api.url("/v1/search"),
            [("q", query.as_str()), ("limit", limit.as_str())],
        )
        .context("search URL")?;
        let started = Instant::now();
        let answer = match client.get(url).send().await {
            Ok(response) => {
                let status = response.status();
                response.bytes().await.map(|body| (status, body))
            }
            Err(e) => Err(e),
        };
        let latency = started.elapsed();
        let found = match answer {
            Ok((StatusCode::OK, body)) => serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|answer| answer["results"].as_array().map(Vec::len))
                .ok_or_else(|| format!("answer without `results`: {}", snippet(&body))),
            Ok((status, body)) => Err(format!("answered {status}: {}", snippet(&body))),
            Err(e) => Err(format!("request failed: {e}")),
        };
        if round < warmup {
            continue;
        }
        let results = match found {
            Ok(results) => results,
            Err(problem) => {
                result.errors += 1;
                result.error(format!("search {query}: {problem}"));
                0
            }
        };
        result.samples.push(Sample {
            kind: *kind,
            query: query.clone(),
            latency,
            results,
            loaded,
        });
    }
    Ok(())
}
