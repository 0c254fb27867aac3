//! Puts while searching, and waiting for the indexer: the load around the searches.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use anyhow::{Context, bail};
use reqwest::StatusCode;

use super::{Background, INDEX_TIMEOUT, KEPT_ERRORS, POLL, POLL_SHARE, Search};
use crate::api::Api;
use crate::api::json_body;

/// Most paced puts in flight at once.
pub(super) const PACED_IN_FLIGHT: usize = 64;

/// Puts one memory every `1/rate` s until `stop`: the stored texts again,
/// each behind a first line of its own, so that every put is new content the
/// indexer must index.
pub(super) async fn paced_puts(
    api: Api,
    texts: Arc<Vec<String>>,
    rate: u32,
    stop: Arc<AtomicBool>,
) -> (Background, Vec<String>) {
    let mut ticks = tokio::time::interval(Duration::from_secs(1) / rate.max(1));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let slots = Arc::new(tokio::sync::Semaphore::new(PACED_IN_FLIGHT));
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        ticks.tick().await;
        let Ok(slot) = slots.clone().acquire_owned().await else {
            break;
        };
        let body = format!("search load put {i}\n{}", texts[i % texts.len()]);
        let api = api.clone();
        tasks.spawn(async move {
            let asked = Instant::now();
            let answer = api.put_raw(reqwest::Body::from(body), "text/plain").await;
            drop(slot);
            answer
                .map(|_| asked.elapsed())
                .map_err(|e| format!("load put {i}: {e:#}"))
        });
        i += 1;
    }
    let mut background = Background {
        rate,
        ..Background::default()
    };
    let mut errors = Vec::new();
    while let Some(outcome) = tasks.join_next().await {
        match outcome {
            Ok(Ok(latency)) => {
                background.done += 1;
                background.latencies.push(latency);
            }
            Ok(Err(problem)) => {
                background.errors += 1;
                errors.push(problem);
            }
            Err(e) => {
                background.errors += 1;
                errors.push(format!("a load put panicked: {e}"));
            }
        }
    }
    background.elapsed = started.elapsed();
    errors.truncate(KEPT_ERRORS);
    (background, errors)
}

/// What one put client did.
#[derive(Default)]
pub(super) struct PutOutcome {
    pub(super) latencies: Vec<Duration>,
    pub(super) last_answer: Option<Instant>,
    pub(super) errors: Vec<String>,
}

/// Puts memories `texts[next++]` until none is left.
pub(super) async fn put_client(api: &Api, texts: &[String], next: &AtomicUsize) -> PutOutcome {
    let mut outcome = PutOutcome::default();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(text) = texts.get(i) else {
            return outcome;
        };
        let started = Instant::now();
        let answer = api
            .put_raw(reqwest::Body::from(text.clone()), "text/plain")
            .await;
        let answered = Instant::now();
        outcome.last_answer = Some(answered);
        match answer {
            Ok(_) => outcome.latencies.push(answered - started),
            Err(e) => outcome.errors.push(format!("memory {i}: {e:#}")),
        }
    }
}

/// The figures of `/v1/stats` the measure uses.
pub(super) struct Lag {
    pub(super) objects: u64,
    pub(super) bytes: u64,
    pub(super) memories: u64,
}

pub(super) async fn lag(api: &Api) -> anyhow::Result<Lag> {
    let response = api
        .client
        .get(api.url("/v1/stats"))
        .send()
        .await
        .context("GET /v1/stats")?;
    let status = response.status();
    let stats = json_body(response).await?;
    if status != StatusCode::OK {
        bail!("GET /v1/stats answered {status}: {stats}");
    }
    let field = |path: &[&str]| {
        path.iter()
            .fold(&stats, |value, key| &value[*key])
            .as_u64()
            .with_context(|| format!("/v1/stats answered without `{}`", path.join(".")))
    };
    Ok(Lag {
        objects: field(&["search_index", "pending_objects"])?,
        bytes: field(&["search_index", "pending_bytes"])?,
        memories: field(&["memories"])?,
    })
}

type PutTask = tokio::task::JoinHandle<Vec<Result<PutOutcome, tokio::task::JoinError>>>;

/// Polls `/v1/stats` until the index queue is empty — with `puts`, an empty
/// queue seen after the last put answered (the puts queue their content as
/// they are answered), whose moment goes into `result`. Records the puts'
/// figures. `/v1/stats` grows costly with the namespace (it sums over its
/// memories), so each look waits [`POLL`] or [`POLL_SHARE`] times as long as
/// the previous one took, whichever is longer: the looks may not slow the
/// indexer they watch.
pub(super) async fn wait_for_index(
    api: &Api,
    result: &mut Search,
    mut puts: Option<(Instant, PutTask)>,
) -> anyhow::Result<Lag> {
    let started = Instant::now();
    let mut last_put = None;
    let mut first_look_after = true;
    let mut previous_look: Option<Instant> = None;
    loop {
        if let Some((puts_started, task)) = puts.take_if(|(_, task)| task.is_finished()) {
            let mut last = puts_started;
            for outcome in task.await.context("the put clients panicked")? {
                let outcome = outcome.context("a put client panicked")?;
                result.put_latencies.extend(outcome.latencies);
                result.put_errors += outcome.errors.len() as u64;
                for error in outcome.errors {
                    result.error(error);
                }
                last = last.max(outcome.last_answer.unwrap_or(puts_started));
            }
            result.put_elapsed = last - puts_started;
            last_put = Some(last);
        }
        let asked = Instant::now();
        let now = lag(api).await?;
        let answered = Instant::now();
        result.polls += 1;
        result.poll_time += answered - asked;
        result.peak_pending_bytes = result.peak_pending_bytes.max(now.bytes);
        if let Some(last) = last_put {
            if first_look_after {
                first_look_after = false;
                result.pending_at_last_put = (now.objects, now.bytes);
            }
            if now.objects == 0 {
                result.caught_up = Some(answered);
                result.catch_up = answered - last;
                // Still behind when the previous look was asked: the moment lies in between.
                result.resolution = answered - previous_look.unwrap_or(last).max(last);
                return Ok(now);
            }
        } else if puts.is_none() && now.objects == 0 {
            return Ok(now);
        }
        if started.elapsed() > INDEX_TIMEOUT {
            bail!(
                "the search index is still {} objects ({} bytes) behind after {} s: \
                 is CAIRN_SEARCH_INDEX off?",
                now.objects,
                now.bytes,
                INDEX_TIMEOUT.as_secs()
            );
        }
        previous_look = Some(asked);
        tokio::time::sleep(POLL.max((answered - asked) * POLL_SHARE)).await;
    }
}
