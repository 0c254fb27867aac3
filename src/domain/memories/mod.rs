//! The memory service: put, read, slice, list and delete, over the storage traits.

use std::sync::Arc;

use crate::domain::memories::access::AccessRecorder;
use crate::domain::memories::ids::{IdRef, MemoryId};
use crate::domain::memories::ingest::{CountLater, IngestConfig};
use crate::domain::memories::locks::ObjectLocks;
use crate::domain::memories::read::ObjectReader;
use crate::domain::memories::read::frame_cache::FrameCache;
use crate::domain::memories::read::slicing::SliceLimits;
pub use crate::domain::memories::settle::{LeftOver, Settling};
use crate::domain::redact;
use crate::domain::summary::jobs::SummaryQueue;
use crate::domain::summary::{self, SUMMARY_CHARS, SummaryFacts};
use crate::domain::tokens::stream::content_tokens;
use crate::domain::{DomainError, now_ms};
use crate::metrics::Metrics;
use crate::storage::blob::BlobStore;
use crate::storage::meta::{ListQuery, MemoryRecord, MetaStore, ObjectStore};

pub mod access;
pub mod fields;
pub mod grep;
pub mod ids;
pub mod ingest;
pub mod jq;
pub mod locks;
pub mod put;
pub mod read;
mod reads;
mod settle;
mod storing;
pub mod together;
pub mod uri;

/// Largest page of a listing.
pub const MAX_PAGE: u32 = 200;

/// What a put answers.
#[derive(Clone, Debug)]
pub struct Stored {
    /// The memory after the put.
    pub record: MemoryRecord,
    /// False when it was new in the namespace.
    pub deduplicated: bool,
    /// Tokens the caller saves by keeping the summary and pointer instead of the content.
    pub tokens_saved: u64,
    /// Secrets replaced in the content before it was stored; `None` when the
    /// content was not scanned (redaction off, or a binary media type).
    pub redacted: Option<redact::Report>,
}

/// What a put would store (see [`Memories::predict`]).
#[derive(Clone, Debug)]
pub struct Predicted {
    /// The id (SHA-256 of the content as stored, after redaction).
    pub id: String,
    /// Content length.
    pub bytes: u64,
    /// Lines of content.
    pub lines: u64,
    /// Tokens of the content.
    pub tokens: u64,
    /// How `tokens` was counted.
    pub token_method: &'static str,
    /// The summary put would store.
    pub summary: String,
}

/// Memories over a metadata store and a blob store.
pub struct Memories {
    meta: Arc<dyn MetaStore>,
    blobs: Arc<dyn BlobStore>,
    ingest: IngestConfig,
    limits: SliceLimits,
    /// Where object records are read: the metadata store, or a cache in
    /// front of it ([`Memories::with_objects`]).
    objects: Arc<dyn ObjectStore>,
    /// Memories recently opened for reading, so that paging through one
    /// memory costs no metadata query per slice. Entries live 2 s and are
    /// dropped at once when this process puts or deletes the memory.
    opened: moka::sync::Cache<(String, String), Arc<MemoryRecord>>,
    access: Arc<AccessRecorder>,
    /// Cap on summaries, in characters.
    summary_chars: usize,
    /// Where new memories go for an LLM summary, when configured.
    summaries: Option<SummaryQueue>,
    /// Whether put replaces secrets in text content (see [`Memories::with_redaction`]).
    redact: bool,
    /// Orders puts against GC's removal of the same object.
    locks: Arc<ObjectLocks>,
    /// Where puts, slices and cache lookups are counted.
    metrics: Arc<Metrics>,
    /// Decoded frames shared by this process's slices (off until configured).
    frame_cache: Option<Arc<FrameCache>>,
    /// Told of every new object, for whoever waits on new content (the
    /// search indexer: [`Memories::with_new_objects`]).
    new_objects: Option<Arc<tokio::sync::Notify>>,
    /// Which puts answering first count after their answer.
    count_later: CountLater,
}

impl Memories {
    /// A service over the given stores.
    pub fn new(
        meta: Arc<dyn MetaStore>,
        blobs: Arc<dyn BlobStore>,
        ingest: IngestConfig,
        limits: SliceLimits,
        access: Arc<AccessRecorder>,
    ) -> Self {
        let opened = moka::sync::Cache::builder()
            .max_capacity(10_000)
            .time_to_live(std::time::Duration::from_secs(2))
            .build();
        Self {
            count_later: CountLater::new(ingest.exact_tokens_after),
            objects: meta.clone(),
            meta,
            blobs,
            ingest,
            limits,
            opened,
            access,
            summary_chars: SUMMARY_CHARS,
            summaries: None,
            redact: true,
            locks: Arc::new(ObjectLocks::default()),
            metrics: Arc::new(Metrics::new()),
            frame_cache: None,
            new_objects: None,
        }
    }

    /// Notifies `signal` after each put that stored a new object, so the
    /// search indexer starts on it at once instead of at its next poll.
    #[must_use]
    pub fn with_new_objects(mut self, signal: Arc<tokio::sync::Notify>) -> Self {
        self.new_objects = Some(signal);
        self
    }

    /// Shares decoded frames between slices through `cache`.
    #[must_use]
    pub fn with_frame_cache(mut self, cache: Arc<FrameCache>) -> Self {
        self.frame_cache = Some(cache);
        self
    }

    /// Reads object records through `objects` (a cache in front of the
    /// metadata store) instead of the store itself.
    #[must_use]
    pub fn with_objects(mut self, objects: Arc<dyn ObjectStore>) -> Self {
        self.objects = objects;
        self
    }

    /// Counts into `metrics` (by default a private set nobody reads).
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The metrics this service counts into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The object locks puts take, for GC to take the same.
    pub fn object_locks(&self) -> Arc<ObjectLocks> {
        self.locks.clone()
    }

    /// Drops what this process remembers of a memory that maintenance removed.
    pub fn forget(&self, namespace: &str, id: &str) {
        self.opened
            .invalidate(&(namespace.to_owned(), id.to_owned()));
    }

    /// Turns secret redaction at put on (the default) or off.
    #[must_use]
    pub fn with_redaction(mut self, on: bool) -> Self {
        self.redact = on;
        self
    }

    /// Sets the summary cap and, if given, the queue for LLM summaries.
    pub fn with_summaries(mut self, summary_chars: usize, queue: Option<SummaryQueue>) -> Self {
        self.summary_chars = summary_chars;
        self.summaries = queue;
        self
    }

    /// How content is framed and stored (export/import ingests the same way).
    pub fn ingest_config(&self) -> &IngestConfig {
        &self.ingest
    }

    /// The slice guardrails in force.
    pub fn limits(&self) -> &SliceLimits {
        &self.limits
    }

    /// What a put of `content` with media type `mime` would store, without
    /// storing it: id, counts and summary derived exactly as [`Memories::put`]
    /// derives them (redaction, token counting, summary). For dry runs.
    pub fn predict(&self, content: &str, mime: &str) -> Predicted {
        let redacted = if self.redact && redact::scans_media_type(mime) {
            redact::redact_text(content).0
        } else {
            content.to_owned()
        };
        let bytes = redacted.as_bytes();
        let id = MemoryId::of_content(bytes);
        let tokens = content_tokens(&[bytes], None, self.ingest.exact_tokens_max);
        let lines = ingest::line_count(
            memchr::memchr_iter(b'\n', bytes).count() as u64,
            bytes.last().copied(),
        );
        let facts = SummaryFacts {
            uri: id.uri(),
            mime: mime.to_owned(),
            bytes: bytes.len() as u64,
            lines,
            tokens: tokens.tokens,
            token_method: tokens.method.to_owned(),
        };
        let summary = summary::summarize(bytes, &facts, self.summary_chars).replace('\0', " ");
        Predicted {
            id: id.as_str().to_owned(),
            bytes: facts.bytes,
            lines,
            tokens: tokens.tokens,
            token_method: tokens.method,
            summary,
        }
    }

    /// Resolves an id or unique prefix within the namespace.
    pub async fn resolve(&self, namespace: &str, id: &IdRef) -> Result<MemoryId, DomainError> {
        match id {
            IdRef::Full(id) => Ok(id.clone()),
            IdRef::Prefix(prefix) => {
                let found = self.meta.ids_with_prefix(namespace, prefix, 2).await?;
                match found.as_slice() {
                    [] => Err(DomainError::NotFound(prefix.clone())),
                    [one] => Ok(MemoryId::from_stored(one.clone())),
                    _ => Err(DomainError::AmbiguousId(prefix.clone())),
                }
            }
        }
    }

    /// Metadata and summary of one memory.
    pub async fn get(&self, namespace: &str, id: &IdRef) -> Result<MemoryRecord, DomainError> {
        let id = self.resolve(namespace, id).await?;
        self.meta
            .get(namespace, id.as_str())
            .await?
            .ok_or_else(|| DomainError::NotFound(id.to_string()))
    }

    /// A page of the namespace's memories, newest first.
    pub async fn list(&self, mut query: ListQuery) -> Result<Vec<MemoryRecord>, DomainError> {
        // One more than a page, so the caller can tell whether another page follows.
        query.limit = query.limit.clamp(1, MAX_PAGE + 1);
        Ok(self.meta.list(&query).await?)
    }

    /// Deletes one memory (its object goes at the next GC if nothing else uses it).
    pub async fn delete(&self, namespace: &str, id: &IdRef) -> Result<MemoryId, DomainError> {
        let id = self.resolve(namespace, id).await?;
        let deleted = self.meta.delete(namespace, id.as_str()).await?;
        // After the delete: an open racing it cannot put the memory back in the cache.
        self.opened
            .invalidate(&(namespace.to_owned(), id.to_string()));
        if deleted {
            Ok(id)
        } else {
            Err(DomainError::NotFound(id.to_string()))
        }
    }

    /// A reader over a memory of the namespace; counts as a read.
    pub async fn open(
        &self,
        namespace: &str,
        id: &IdRef,
    ) -> Result<(MemoryRecord, ObjectReader), DomainError> {
        let cached = match id {
            IdRef::Full(full) => {
                let cached = self.opened.get(&(namespace.to_owned(), full.to_string()));
                self.metrics.cache("memory_meta", cached.is_some());
                cached
            }
            IdRef::Prefix(_) => None,
        };
        let record = match cached {
            Some(record) => MemoryRecord::clone(&record),
            None => {
                let record = self.get(namespace, id).await?;
                let key = (namespace.to_owned(), record.id.clone());
                self.opened.insert(key, Arc::new(record.clone()));
                record
            }
        };
        let object =
            self.objects
                .object(&record.id)
                .await?
                .ok_or_else(|| DomainError::Corrupt {
                    id: record.id.clone(),
                    detail: "its object record is missing".into(),
                })?;
        if let Some(detail) = &record.corrupt {
            return Err(DomainError::Corrupt {
                id: record.id.clone(),
                detail: format!("verify found its object corrupt: {detail}"),
            });
        }
        if record
            .expires_at
            .is_some_and(|at| at <= now_ms() && !record.fields.pinned)
        {
            return Err(DomainError::NotFound(record.id.clone()));
        }
        self.access.record(namespace, &record.id, now_ms());
        let mut reader = ObjectReader::new(object, self.blobs.clone());
        if let Some(cache) = &self.frame_cache {
            reader = reader.with_frame_cache(cache.clone());
        }
        Ok((record, reader))
    }
}
