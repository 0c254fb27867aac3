//! The put side of LLM summaries: which new memories deserve one, and the
//! bounded queue they wait in (a put never waits for it).

use crate::storage::meta::MemoryRecord;

/// Type of the memories the summarizer stores (never summarized themselves).
pub const SUMMARY_TYPE: &str = "SUMMARY";
/// Subtype of LLM summaries.
pub const LLM_SUBTYPE: &str = "llm";
/// Most bytes of content sent to the model.
pub const EXCERPT_BYTES: usize = 24 << 10;

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

/// A queue of at most `capacity` jobs for content of at least `min_bytes`, and its receiving end.
pub fn queue(
    capacity: usize,
    min_bytes: u64,
) -> (SummaryQueue, tokio::sync::mpsc::Receiver<SummaryJob>) {
    let (jobs, rx) = tokio::sync::mpsc::channel(capacity.max(1));
    (SummaryQueue { jobs, min_bytes }, rx)
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
