//! Reads of one memory: line, byte, chunk and token-budgeted slices, grep,
//! and pointer resolution.

use super::Memories;
use crate::domain::DomainError;
use crate::domain::memories::grep::words;
use crate::domain::memories::grep::{self, GrepQuery, GrepResult};
use crate::domain::memories::ids::{IdRef, MemoryId};
use crate::domain::memories::jq::{self, JqLimits, JqResult};
use crate::domain::memories::read::ObjectReader;
use crate::domain::memories::read::slicing::{self, Slice};
use crate::domain::memories::read::token_slice::{self, Start, TokenBudget};
use crate::domain::memories::uri::{MemUri, Selector};
use crate::storage::meta::SearchIndex;

impl Memories {
    /// Lines `start..=end` of a memory.
    pub async fn lines(
        &self,
        namespace: &str,
        id: &IdRef,
        start: Option<u64>,
        end: Option<u64>,
    ) -> Result<Slice, DomainError> {
        let (record, mut reader) = self.open(namespace, id).await?;
        let id = MemoryId::from_stored(record.id);
        let slice = slicing::lines(&mut reader, &id, start, end, &self.limits).await?;
        self.metrics.slice("lines", &record.fields.kind);
        Ok(slice)
    }

    /// Bytes `[offset, offset + len)` of a memory.
    pub async fn bytes(
        &self,
        namespace: &str,
        id: &IdRef,
        offset: u64,
        len: Option<u64>,
    ) -> Result<Slice, DomainError> {
        let (record, mut reader) = self.open(namespace, id).await?;
        let id = MemoryId::from_stored(record.id);
        let slice = slicing::bytes(&mut reader, &id, offset, len, &self.limits).await?;
        self.metrics.slice("bytes", &record.fields.kind);
        Ok(slice)
    }

    /// Chunk `n` of a memory.
    pub async fn chunk(&self, namespace: &str, id: &IdRef, n: u64) -> Result<Slice, DomainError> {
        let (record, mut reader) = self.open(namespace, id).await?;
        let id = MemoryId::from_stored(record.id);
        let slice = slicing::chunk(&mut reader, &id, n, &self.limits).await?;
        self.metrics.slice("chunk", &record.fields.kind);
        Ok(slice)
    }

    /// The lines of a memory that match `query` (see [`grep::grep`]).
    pub async fn grep(
        &self,
        namespace: &str,
        id: &IdRef,
        query: &GrepQuery,
    ) -> Result<(MemoryId, GrepResult), DomainError> {
        grep::validate(query)?;
        // What cannot compile is refused before it is read for words.
        grep::compile(query)?;
        let words = words::required_words(
            &query.what.pattern,
            query.what.fixed,
            query.what.ignore_case,
        );
        let (record, reader) = self.open(namespace, id).await?;
        let answer = self
            .grep_reader(reader, query, &words, self.limits.grep_scan_bytes)
            .await?;
        self.metrics.slice("grep", &record.fields.kind);
        Ok((MemoryId::from_stored(record.id), answer))
    }

    /// Greps an opened memory's content, reading only the frames the
    /// full-text index shows may hold `words` (the pattern's
    /// [`words::required_words`]; see [`grep::grep`]).
    pub async fn grep_reader(
        &self,
        reader: ObjectReader,
        query: &GrepQuery,
        words: &[String],
        max_scan_bytes: u64,
    ) -> Result<GrepResult, DomainError> {
        let known = if words.is_empty() || reader.frame_count() < 2 {
            None
        } else {
            // The index only saves work: without it, every frame is read.
            let index: &dyn SearchIndex = self.meta.as_ref();
            match index.frame_words(reader.hash(), words).await {
                Ok(Some(frames)) => {
                    let result = if frames.is_empty() {
                        "not_indexed"
                    } else {
                        "used"
                    };
                    self.metrics.grep_index_lookup(result);
                    Some(frames)
                }
                Ok(None) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "grep goes without the full-text index");
                    self.metrics.grep_index_lookup("failed");
                    None
                }
            }
        };
        grep::grep(reader, query, max_scan_bytes, known.as_deref()).await
    }

    /// The slice a pointer URI names (a bare pointer gives the first lines);
    /// with `max_tokens` in the pointer, the lines from its start that fit,
    /// counted for `model`.
    pub async fn fetch(
        &self,
        namespace: &str,
        uri: &MemUri,
        model: Option<&str>,
    ) -> Result<Slice, DomainError> {
        if let Some(max_tokens) = uri.max_tokens {
            let budget = TokenBudget::new(max_tokens, model)?;
            let (start, end) = match uri.selector {
                Selector::Whole => (Start::Line(1), None),
                Selector::Lines { start, end } => (Start::Line(start), end),
                Selector::Bytes { offset, .. } => (Start::Offset(offset), None),
            };
            return self
                .within_tokens(namespace, &uri.id, start, end, &budget)
                .await;
        }
        match uri.selector {
            Selector::Whole => self.lines(namespace, &uri.id, None, None).await,
            Selector::Lines { start, end } => {
                self.lines(namespace, &uri.id, Some(start), end).await
            }
            Selector::Bytes { offset, len } => self.bytes(namespace, &uri.id, offset, len).await,
        }
    }

    /// The longest run of lines from `start` (up to line `end`) that fits
    /// `budget` (see [`token_slice::within`]).
    pub async fn within_tokens(
        &self,
        namespace: &str,
        id: &IdRef,
        start: Start,
        end: Option<u64>,
        budget: &TokenBudget,
    ) -> Result<Slice, DomainError> {
        let (record, mut reader) = self.open(namespace, id).await?;
        let id = MemoryId::from_stored(record.id);
        let slice = token_slice::within(&mut reader, &id, start, end, budget, &self.limits).await?;
        self.metrics.slice("tokens", &record.fields.kind);
        Ok(slice)
    }

    /// Runs a jq program on a memory's JSON (see [`jq::query`]).
    pub async fn query(
        &self,
        namespace: &str,
        id: &IdRef,
        program: &str,
        limits: &JqLimits,
    ) -> Result<(MemoryId, JqResult), DomainError> {
        let (record, reader) = self.open(namespace, id).await?;
        let result = jq::query(reader, program, limits).await?;
        self.metrics.slice("query", &record.fields.kind);
        Ok((MemoryId::from_stored(record.id), result))
    }
}
