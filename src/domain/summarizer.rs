//! Optional LLM summaries: new memories of some size are queued
//! ([`crate::domain::summary::jobs`]) to a background task that asks a model (through
//! the [`SummaryModel`] port; the HTTP client is an adapter, `crate::llm`)
//! for a summary of a bounded excerpt and stores the answer as a `SUMMARY`
//! memory (subtype `llm`) linked to its source. Failures are logged; a put
//! never waits for this nor fails because of it.

use std::sync::Arc;

use bytes::Bytes;

use crate::domain::memories::Memories;
use crate::domain::summary::jobs::{LLM_SUBTYPE, SUMMARY_TYPE, SummaryJob};
use crate::model::PutFields;

/// The instructions given with every excerpt.
pub const PROMPT: &str = "You summarize tool outputs stored for an AI agent. \
Given an excerpt (head, numbered failed and error lines, tail) of a stored content and its counts, \
write a factual summary of at most 150 words: what the content is, its key facts and figures, \
errors or failures with their line numbers, and what an agent would need to decide whether to read \
more. Do not invent anything the excerpt does not show. Plain text, no preamble.";

/// A model that completes one system prompt and one user message (the LLM
/// endpoint, seen from the domain).
#[async_trait::async_trait]
pub trait SummaryModel: Send + Sync {
    /// The model's text answer.
    async fn complete(&self, system: &str, user: &str) -> anyhow::Result<String>;
}

/// The task side: asks the model and stores the answers.
pub struct Summarizer {
    model: Arc<dyn SummaryModel>,
    jobs: tokio::sync::mpsc::Receiver<SummaryJob>,
}

impl Summarizer {
    /// A summarizer serving `jobs` with `model`.
    pub fn new(
        model: Arc<dyn SummaryModel>,
        jobs: tokio::sync::mpsc::Receiver<SummaryJob>,
    ) -> Self {
        Self { model, jobs }
    }

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

    /// Asks the model for the job's summary; answers its text.
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
        let text = self
            .model
            .complete(PROMPT, &format!("{facts}Excerpt:\n{}", job.excerpt))
            .await?;
        let text = text.trim();
        if text.is_empty() {
            anyhow::bail!("the model answered no text");
        }
        Ok(text.to_owned())
    }
}

/// Stores `text` as the SUMMARY of the job's source; answers the summary's id.
async fn store(memories: &Memories, job: &SummaryJob, text: String) -> anyhow::Result<String> {
    let source = &job.source;
    let short = &source.id[..source.id.len().min(12)];
    let fields = PutFields {
        kind: Some(SUMMARY_TYPE.to_owned()),
        subtype: Some(LLM_SUBTYPE.to_owned()),
        mime: Some("text/plain".to_owned()),
        title: Some(format!("Summary of {short}")),
        tags: vec![format!("source:{}", source.id)],
        thread: source.fields.thread.clone(),
        checkpoint: source.fields.checkpoint.clone(),
        directory: source.fields.directory.clone(),
        ..PutFields::default()
    };
    let body = futures::stream::iter([Ok::<_, std::convert::Infallible>(Bytes::from(text))]);
    let stored = memories.put(&job.namespace, fields, body).await?;
    Ok(stored.record.id)
}
