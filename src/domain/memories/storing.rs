//! Putting content into the store: the content ingested (redacted,
//! framed, compressed, counted), summarized, and its memory recorded, for
//! each way of putting it — answering after its count, before it, or with
//! the other puts of a proxied request ([`super::together`]).

use bytes::Bytes;
use futures::Stream;

use super::ingest::{self, CountLater};
use super::settle::{Settle, Settling};
use super::{Memories, Stored, together};
use crate::domain::redact;
use crate::domain::summary::SummaryFacts;
use crate::domain::summary::jobs::{EXCERPT_BYTES, SummaryJob};
use crate::domain::{DomainError, now_ms};
use crate::model::PutFields;
use crate::storage::meta::NewMemory;

impl Memories {
    /// Streams `body` into the store and records the memory in `namespace`.
    pub async fn put<S, E>(
        &self,
        namespace: &str,
        fields: PutFields,
        body: S,
    ) -> Result<Stored, DomainError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        Ok(self.store(namespace, fields, body, None, None).await?.0)
    }

    /// [`Memories::put`] that answers before the exact count of a content
    /// over `CAIRN_EXACT_TOKENS_AFTER_BYTES`: the memory then says
    /// `estimate:bytes/4` ([`MemoryRecord::tokens_settling`]) until its count,
    /// under way, settles it moments later. The handle answers the tokens the
    /// put saves by the exact count. For a client's own puts: the markers of
    /// compress and the proxy state their pieces' exact counts at once.
    pub async fn put_answering_first<S, E>(
        &self,
        namespace: &str,
        fields: PutFields,
        body: S,
    ) -> Result<(Stored, Option<Settling>), DomainError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        self.store(namespace, fields, body, Some(&self.count_later), None)
            .await
    }

    /// [`Memories::put`] whose metadata commits together with the other
    /// puts holding passes of the same [`together::passes`].
    pub async fn put_together<S, E>(
        &self,
        namespace: &str,
        fields: PutFields,
        body: S,
        pass: together::Pass,
    ) -> Result<Stored, DomainError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        Ok(self
            .store(namespace, fields, body, None, Some(pass))
            .await?
            .0)
    }

    #[tracing::instrument(skip_all, fields(memory.id))]
    async fn store<S, E>(
        &self,
        namespace: &str,
        fields: PutFields,
        body: S,
        later: Option<&CountLater>,
        pass: Option<together::Pass>,
    ) -> Result<(Stored, Option<Settling>), DomainError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        let fields = fields.validate()?;
        // Ids are hashes of what is stored: of the redacted content.
        let scan = self.redact && redact::scans_media_type(&fields.mime);
        let mut ingested = ingest::ingest(
            body,
            scan,
            self.blobs.as_ref(),
            self.meta.as_ref(),
            &self.locks,
            &self.ingest,
            later,
        )
        .await?;
        // Held until the metadata commit: GC must not remove the object file before.
        let object_guard = ingested.guard.take();
        let ingested_redacted = ingested.redacted.take();
        let count_later = ingested.later.take();
        tracing::Span::current().record("memory.id", ingested.id.as_str());
        let object = &ingested.object;
        let facts = SummaryFacts {
            uri: ingested.id.uri(),
            mime: fields.mime.clone(),
            bytes: object.bytes,
            lines: object.lines,
            tokens: ingested.tokens.tokens,
            token_method: ingested.tokens.method.to_owned(),
        };
        let excerpt_bytes = self
            .summaries
            .as_ref()
            .filter(|q| q.wants(object.bytes, &fields.kind))
            .map(|_| EXCERPT_BYTES);
        let (mut summary, excerpt) = ingested
            .summary
            .finish_off_executor(facts, self.summary_chars, excerpt_bytes)
            .await
            .map_err(|e| DomainError::Storage(e.into()))?;
        if memchr::memchr(0, summary.as_bytes()).is_some() {
            summary = summary.replace('\0', " ");
        }
        // The summary carries the pointer: it is all the caller keeps.
        let summary_tokens = ingested.tokens.count_alike(&summary);
        // With the others' metadata, unless it holds an object's lock.
        if let Some(pass) = pass.filter(|_| object_guard.is_none()) {
            pass.arrive().await;
        }
        let outcome = self
            .meta
            .put(NewMemory {
                namespace: namespace.to_owned(),
                fields,
                tokens: ingested.tokens.tokens,
                token_method: ingested.tokens.method.to_owned(),
                tokens_settling: count_later.is_some(),
                summary,
                now: now_ms(),
                object: ingested.object,
            })
            .await?;
        drop(object_guard);
        self.metrics.record_put(
            &outcome.record.fields.kind,
            !outcome.created,
            outcome.record.bytes,
            outcome
                .object_created
                .then_some(outcome.record.stored_bytes),
        );
        self.opened
            .invalidate(&(namespace.to_owned(), outcome.record.id.clone()));
        if let (Some(signal), true) = (&self.new_objects, outcome.object_created) {
            signal.notify_one();
        }
        if let (Some(queue), Some(excerpt), true) = (&self.summaries, excerpt, outcome.created) {
            queue.offer(SummaryJob {
                namespace: namespace.to_owned(),
                source: outcome.record.clone(),
                excerpt,
            });
        }
        // Settled unless the memory was there already with its count made.
        let settling = count_later
            .filter(|_| outcome.record.token_method == ingested.tokens.method)
            .map(|later| {
                let settle = Settle {
                    meta: self.meta.clone(),
                    opened: self.opened.clone(),
                    namespace: namespace.to_owned(),
                    record: outcome.record.clone(),
                    summary_chars: self.summary_chars,
                };
                tokio::spawn(settle.run_for_put(later.start()))
            });
        let mut record = outcome.record;
        // A memory put before with its estimate standing settles now too.
        record.tokens_settling = settling.is_some();
        let stored = Stored {
            tokens_saved: record.tokens.saturating_sub(summary_tokens),
            record,
            deduplicated: !outcome.created,
            redacted: ingested_redacted,
        };
        Ok((stored, settling))
    }
}
