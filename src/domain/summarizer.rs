//! Optional LLM summaries: new memories of some size are queued to a
//! background task that asks an OpenAI-compatible endpoint for a summary of a
//! bounded excerpt and stores the answer as a `SUMMARY` memory (subtype
//! `llm`) linked to its source. Failures are logged; a put never waits for
//! this nor fails because of it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;

use super::fields::FieldsInput;
use super::memories::Memories;
use crate::storage::meta::MemoryRecord;

/// Type of the memories this task stores (never summarized themselves).
pub const SUMMARY_TYPE: &str = "SUMMARY";
/// Subtype of LLM summaries.
pub const LLM_SUBTYPE: &str = "llm";
/// Most bytes of content sent to the model.
pub const EXCERPT_BYTES: usize = 24 << 10;

/// The instructions given with every excerpt.
const PROMPT: &str = "You summarize tool outputs stored for an AI agent. \
Given an excerpt (head, numbered failed and error lines, tail) of a stored content and its counts, \
write a factual summary of at most 150 words: what the content is, its key facts and figures, \
errors or failures with their line numbers, and what an agent would need to decide whether to read \
more. Do not invent anything the excerpt does not show. Plain text, no preamble.";

/// An API key whose `Debug` never shows it.
#[derive(Clone)]
pub struct ApiKey(String);

impl std::str::FromStr for ApiKey {
    type Err = std::convert::Infallible;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self(text.to_owned()))
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Where and how to ask for summaries.
#[derive(Clone, Debug)]
pub struct SummarizerConfig {
    /// OpenAI-compatible base URL; requests go to `{url}/chat/completions`.
    pub url: String,
    /// Model name sent with each request.
    pub model: String,
    /// Bearer key, if the endpoint needs one.
    pub api_key: Option<ApiKey>,
    /// Content smaller than this is not worth a summary.
    pub min_bytes: u64,
    /// Time allowed for one answer.
    pub timeout: Duration,
    /// Memories waiting at most; more are skipped (and logged).
    pub queue: usize,
}

/// A memory waiting for its summary.
#[derive(Debug)]
pub struct SummaryJob {
    /// Namespace of the source.
    pub namespace: String,
    /// The source memory.
    pub source: MemoryRecord,
    /// What the model reads (at most about [`EXCERPT_BYTES`]).
    pub excerpt: String,
}

/// The put side: decides what deserves a summary and queues it without waiting.
#[derive(Clone, Debug)]
pub struct SummaryQueue {
    jobs: tokio::sync::mpsc::Sender<SummaryJob>,
    min_bytes: u64,
}

impl SummaryQueue {
    /// True for content big enough, that is not itself a summary (the
    /// caller queues it only if the put created the memory).
    pub fn wants(&self, bytes: u64, kind: &str) -> bool {
        bytes >= self.min_bytes && kind != SUMMARY_TYPE
    }

    /// Queues `job`, or logs and drops it when the queue is full.
    pub fn offer(&self, job: SummaryJob) {
        if let Err(e) = self.jobs.try_send(job) {
            let id = match &e {
                tokio::sync::mpsc::error::TrySendError::Full(job)
                | tokio::sync::mpsc::error::TrySendError::Closed(job) => job.source.id.clone(),
            };
            tracing::warn!(memory.id = %id, reason = %e, "LLM summary skipped");
        }
    }
}

/// The task side: asks the endpoint and stores the answers.
pub struct Summarizer {
    config: SummarizerConfig,
    client: reqwest::Client,
    jobs: tokio::sync::mpsc::Receiver<SummaryJob>,
}

/// A queue and the summarizer that serves it.
pub fn channel(config: SummarizerConfig) -> anyhow::Result<(SummaryQueue, Summarizer)> {
    let (tx, rx) = tokio::sync::mpsc::channel(config.queue.max(1));
    let client = reqwest::Client::builder().timeout(config.timeout).build()?;
    Ok((
        SummaryQueue {
            jobs: tx,
            min_bytes: config.min_bytes,
        },
        Summarizer {
            config,
            client,
            jobs: rx,
        },
    ))
}

impl Summarizer {
    /// Serves the queue one job at a time until every sender is gone.
    pub fn spawn(mut self, memories: Arc<Memories>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Some(job) = self.jobs.recv().await {
                let id = job.source.id.clone();
                match self.summarize(&job).await {
                    Ok(text) => match store(&memories, &job, text).await {
                        Ok(summary_id) => {
                            tracing::info!(memory.id = %id, summary.id = %summary_id, "LLM summary stored");
                        }
                        Err(e) => {
                            tracing::warn!(memory.id = %id, error = %e, "LLM summary not stored")
                        }
                    },
                    Err(e) => tracing::warn!(memory.id = %id, error = %e, "LLM summary failed"),
                }
            }
        })
    }

    /// One request to `{url}/chat/completions`; answers the model's text.
    async fn summarize(&self, job: &SummaryJob) -> anyhow::Result<String> {
        let source = &job.source;
        let facts = format!(
            "Content mem://{} ({} bytes, {} lines, type {}{}, mime {}{}).\n\n",
            source.id,
            source.bytes,
            source.lines,
            source.fields.kind,
            source
                .fields
                .subtype
                .as_deref()
                .map(|s| format!("/{s}"))
                .unwrap_or_default(),
            source.fields.mime,
            source
                .fields
                .title
                .as_deref()
                .map(|t| format!(", title {t:?}"))
                .unwrap_or_default(),
        );
        let body = json!({
            "model": self.config.model,
            "temperature": 0,
            "max_tokens": 512,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": format!("{facts}Excerpt:\n{}", job.excerpt)},
            ],
        });
        let url = format!("{}/chat/completions", self.config.url.trim_end_matches('/'));
        let mut request = self.client.post(url).json(&body);
        if let Some(ApiKey(key)) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let answer: serde_json::Value = request.send().await?.error_for_status()?.json().await?;
        let text = answer["choices"][0]["message"]["content"]
            .as_str()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| anyhow::anyhow!("the answer has no choices[0].message.content"))?;
        Ok(text.to_owned())
    }
}

/// Stores `text` as the SUMMARY of the job's source; answers the summary's id.
async fn store(memories: &Memories, job: &SummaryJob, text: String) -> anyhow::Result<String> {
    let source = &job.source;
    let short = &source.id[..source.id.len().min(12)];
    let fields = FieldsInput {
        kind: Some(SUMMARY_TYPE.to_owned()),
        subtype: Some(LLM_SUBTYPE.to_owned()),
        mime: Some("text/plain".to_owned()),
        title: Some(format!("Summary of {short}")),
        tags: vec![format!("source:{}", source.id)],
        thread: source.fields.thread.clone(),
        checkpoint: source.fields.checkpoint.clone(),
        directory: source.fields.directory.clone(),
        ..FieldsInput::default()
    };
    let body = futures::stream::iter([Ok::<_, std::convert::Infallible>(Bytes::from(text))]);
    let stored = memories.put(&job.namespace, fields, body).await?;
    Ok(stored.record.id)
}
