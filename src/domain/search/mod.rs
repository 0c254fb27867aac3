//! Full-text search over a namespace's memories, and lightweight refs.
//!
//! Objects are indexed once (one row per frame) by a background task; a
//! search ranks the caller's memories by the BM25 score of their best frame
//! and reports the matching lines of their matching frames.

use std::sync::Arc;

use super::DomainError;
use super::foreground::Foreground;
use crate::domain::memories::read::ObjectReader;
use crate::domain::memories::read::frame_cache::FrameCache;
use crate::storage::blob::BlobStore;
use crate::storage::meta::{
    Expr, IndexLag, ListQuery, MemoryRecord, MetaStore, ObjectStore, SearchRow,
};

pub mod hits;
mod indexer;
pub mod query;

pub use hits::Hit;

/// Most results of one search.
pub const MAX_RESULTS: u32 = 100;
/// Results when the caller gives no limit.
pub const DEFAULT_RESULTS: u32 = 10;
/// Most refs of one answer.
pub const MAX_REFS: u32 = 200;
/// Matching frames of one memory whose hit lines a result reports.
const FRAMES_SCANNED: usize = 3;
/// Most matching frames of one memory read while looking for them: frames
/// that only repeat lines already found (a line cut by a frame boundary is in
/// two frames) do not count towards [`FRAMES_SCANNED`].
const FRAMES_READ: usize = 12;

/// A memory that matches a search.
#[derive(Clone, Debug)]
pub struct SearchResult {
    /// The memory.
    pub record: MemoryRecord,
    /// Relevance: the negated BM25 score of its best frame (higher is better).
    pub score: f64,
    /// Matching lines, in line order.
    pub hits: Vec<Hit>,
    /// Found by the looser retry ([`query::relaxed`]) after the query as
    /// given found nothing.
    pub fuzzy: bool,
}

/// The search service and its background indexer.
pub struct Search {
    meta: Arc<dyn MetaStore>,
    /// What the indexer reads each new object's frames from, once.
    blobs: Arc<dyn BlobStore>,
    /// How a result's hit lines are read: as a slice is ([`Search::with_reads`]).
    reads: Reads,
    wake: Arc<tokio::sync::Notify>,
    foreground: Arc<Foreground>,
}

/// The read path of hit lines: object records, blobs and decoded frames.
struct Reads {
    objects: Arc<dyn ObjectStore>,
    blobs: Arc<dyn BlobStore>,
    frames: Option<Arc<FrameCache>>,
}

impl Search {
    /// A service over the given stores (the indexer runs once spawned).
    pub fn new(meta: Arc<dyn MetaStore>, blobs: Arc<dyn BlobStore>) -> Self {
        Self {
            reads: Reads {
                objects: meta.clone(),
                blobs: blobs.clone(),
                frames: None,
            },
            meta,
            blobs,
            wake: Arc::new(tokio::sync::Notify::new()),
            foreground: Arc::default(),
        }
    }

    /// Reads hit lines through the caches slices use: object records
    /// through `objects`, content through `blobs` (the shared cache's
    /// front), decoded frames shared in `frames`. A model usually reads
    /// around a hit next, so its frame is then already decoded. The
    /// indexer still reads each new object from the store, past the caches.
    #[must_use]
    pub fn with_reads(
        mut self,
        objects: Arc<dyn ObjectStore>,
        blobs: Arc<dyn BlobStore>,
        frames: Option<Arc<FrameCache>>,
    ) -> Self {
        self.reads = Reads {
            objects,
            blobs,
            frames,
        };
        self
    }

    /// What wakes the indexer: give it to [`crate::domain::memories::Memories::with_new_objects`]
    /// so that a put's object is indexed at once.
    pub fn waker(&self) -> Arc<tokio::sync::Notify> {
        self.wake.clone()
    }

    /// The requests in flight the indexer gives way to (the HTTP layer counts them).
    pub fn foreground(&self) -> &Arc<Foreground> {
        &self.foreground
    }

    /// Starts the background indexer; it runs until the handle is aborted.
    pub fn spawn_indexer(&self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(indexer::run(
            self.meta.clone(),
            self.blobs.clone(),
            self.wake.clone(),
            self.foreground.clone(),
        ))
    }

    /// Tells the indexer that new objects may be waiting (it also polls).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Waits until everything stored so far is searchable (the index lags
    /// by no object), for at most `limit`; answers whether it is. The
    /// proxy's `memory_search` waits so that a model finds what its own
    /// exchange has just offloaded.
    pub async fn caught_up(&self, limit: std::time::Duration) -> bool {
        let started = std::time::Instant::now();
        loop {
            match self.meta.index_lag().await {
                Ok(lag) if lag.objects == 0 => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
            if started.elapsed() >= limit {
                return false;
            }
            self.wake();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Objects and bytes not indexed yet.
    pub async fn lag(&self) -> Result<IndexLag, DomainError> {
        Ok(self.meta.index_lag().await?)
    }

    /// Memories of `filter.namespace` matching `text`, best first, each with its matching lines.
    #[tracing::instrument(skip_all)]
    pub async fn search(
        &self,
        text: &str,
        mut filter: ListQuery,
    ) -> Result<Vec<SearchResult>, DomainError> {
        let mut parsed = query::parse(text).map_err(|e| DomainError::InvalidQuery(e.0))?;
        filter.limit = filter.limit.clamp(1, MAX_RESULTS);
        filter.after = None;
        let mut rows = self.rows(&parsed.expr, &filter).await?;
        let mut fuzzy = false;
        if rows.is_empty()
            && let Some(loose) = query::relaxed(&parsed)
        {
            rows = self.rows(&loose.expr, &filter).await?;
            parsed = loose;
            fuzzy = true;
        }
        // Each result's frames are read and scanned at once, not in turn.
        let hits = futures::future::join_all(
            rows.iter()
                .map(|row| self.hits(&row.record.id, &row.frames, &parsed.terms)),
        )
        .await;
        let results = rows
            .into_iter()
            .zip(hits)
            .map(|(row, hits)| {
                let hits = hits.unwrap_or_else(|e| {
                    tracing::warn!(memory.id = %row.record.id, error = %e, "no hits for a search result");
                    Vec::new()
                });
                SearchResult {
                    score: -row.score,
                    record: row.record,
                    hits,
                    fuzzy,
                }
            })
            .collect();
        Ok(results)
    }

    /// The index rows matching a query's expression.
    async fn rows(&self, expr: &Expr, filter: &ListQuery) -> Result<Vec<SearchRow>, DomainError> {
        Ok(self.meta.search(expr, filter).await?)
    }

    /// The matching lines of the first few matching frames of object `id`.
    async fn hits(
        &self,
        id: &str,
        frames: &[u32],
        terms: &[query::Term],
    ) -> Result<Vec<Hit>, DomainError> {
        let Some(object) = self.reads.objects.object(id).await? else {
            return Ok(Vec::new());
        };
        let mut reader = ObjectReader::new(object, self.reads.blobs.clone());
        if let Some(frames) = &self.reads.frames {
            reader = reader.with_frame_cache(frames.clone());
        }
        let mut found: Vec<Hit> = Vec::new();
        let mut productive = 0;
        for &idx in frames.iter().take(FRAMES_READ) {
            if found.len() >= hits::MAX_HITS || productive >= FRAMES_SCANNED {
                break;
            }
            let before = found.len();
            if let Some(frame) = indexer::frame_text(&mut reader, idx as usize, true).await? {
                let (first_line, text) = (frame.first_line, frame.text);
                for hit in hits::scan(&text, first_line, terms, hits::MAX_HITS - found.len()) {
                    if !found.iter().any(|h| h.line == hit.line) {
                        found.push(hit);
                    }
                }
            }
            if found.len() > before {
                productive += 1;
            }
        }
        found.sort_by_key(|h| h.line);
        Ok(found)
    }

    /// The newest memories linked to one thread, checkpoint or directory
    /// (whichever `filter` names), at most `filter.limit`.
    pub async fn refs(&self, mut filter: ListQuery) -> Result<Vec<MemoryRecord>, DomainError> {
        filter.limit = filter.limit.clamp(1, MAX_REFS);
        filter.after = None;
        Ok(self.meta.list(&filter).await?)
    }
}
