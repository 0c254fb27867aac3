//! The embedded full-text index (tantivy): one document per frame of an
//! object, with the object's hash, the frame's index, a number ordering
//! the hashes ([`hash_key`], to break ties in score) and how the frame's
//! lines stand in its text ([`FrameLines`](super::FrameLines), for grep) as fast fields.
//!
//! It holds no namespace: a search ranks frames here and keeps the
//! caller's memories among them (see `sql/search.rs`). Objects are added
//! by the background indexer; they become searchable at the next commit,
//! which happens at most [`COMMIT_EVERY`] after they are done, and only then
//! does the store count them as indexed (SQLite takes them off its persisted
//! queue; a PostgreSQL replica records its place in the commit's payload,
//! see `postgres/feed.rs`), so a crash loses no work: an object re-indexed
//! after a restart first has its old documents deleted.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tantivy::collector::{DocSetCollector, TopDocs};
use tantivy::directory::MmapDirectory;
use tantivy::indexer::{IndexWriterOptions, LogMergePolicy};
use tantivy::query::{BooleanQuery, EnableScoring, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term,
};

use self::columns::Columns;
use self::fields::{
    KEY, LINES, PAIRS, STARTS_LINE, WHOLE_LINES, hash_key, line_bits, open_dir, schema,
};
use super::expression::Expr;
use super::{FrameBatch, IndexedFrame};
use crate::storage::StorageError;

mod columns;
mod fields;
mod frame_words;
mod niceness;
mod pairs;
mod translate;
mod words;

/// Longest time an indexed object waits for its commit.
pub(crate) const COMMIT_EVERY: Duration = Duration::from_secs(1);
/// Objects that make a commit due at once.
const COMMIT_OBJECTS: usize = 1024;
/// Text added since the last commit that makes a commit due. The writer's
/// queue holds each added frame's text (twice: words and pairs) until its
/// thread takes it, up to 10,000 frames, and a commit waits for the queue:
/// without this bound, a 1 GiB memory queued ~2 GB while it was indexed.
const COMMIT_TEXT: usize = 32 << 20;
/// Merges run at once (tantivy's default is 4, on a machine of any size).
const MERGE_THREADS: usize = 2;
/// The writer's indexing memory (tantivy flushes a segment when it is full).
const WRITER_MEMORY: usize = 32 << 20;
/// Segments of up to this many documents (frames) share the merge policy's
/// lowest level. tantivy's default, 10,000, keeps a segment on that level
/// until it holds 10,000 frames, so while it grows it is rewritten each time
/// seven new segments join it — and each put that empties the indexer's
/// queue makes one (bench/REPORT.md, "LLM proxy soak").
const MIN_LAYER_DOCS: u32 = 1_000;

/// One matching frame: its object, its index, its BM25 score (higher is better).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FrameHit {
    /// The object's hash.
    pub hash: String,
    /// The frame's index in the object.
    pub idx: u32,
    /// BM25 score.
    pub score: f32,
}

/// The index, its reader and its (lazily opened) writer.
pub(crate) struct FullText {
    index: Index,
    reader: IndexReader,
    /// The directory of an index on disk, to forget its files' old mappings.
    mapped: Option<MmapDirectory>,
    writer: Mutex<Option<IndexWriter>>,
    body: Field,
    hash: Field,
    idx: Field,
    key: Field,
    lines: Field,
    /// The fields a query reads.
    fields: translate::Fields,
    pending: Mutex<Uncommitted>,
}

/// What the writer holds that no commit has made durable yet.
struct Uncommitted {
    /// Objects fully added.
    done: Vec<String>,
    /// Objects deleted: their documents stay visible until the commit, so
    /// searches leave them out meanwhile.
    removed: HashSet<String>,
    /// Anything added or deleted.
    dirty: bool,
    /// Text bytes added.
    text: usize,
    last_commit: Instant,
}

impl Uncommitted {
    /// A second since the last commit, or enough objects or text waiting.
    fn is_due(&self) -> bool {
        self.last_commit.elapsed() >= COMMIT_EVERY
            || self.done.len() >= COMMIT_OBJECTS
            || self.text >= COMMIT_TEXT
    }
}

/// A tantivy failure as a storage error.
pub(super) fn failed(e: tantivy::TantivyError) -> StorageError {
    StorageError::Database(format!("full-text index: {e}"))
}

impl FullText {
    /// Opens the index in `dir` (creating it), or a fresh one in memory
    /// when `dir` is `None`. Also answers whether it was created empty now
    /// (so the caller can queue what it already holds).
    pub(crate) fn open(dir: Option<&Path>) -> Result<(Self, bool), StorageError> {
        let (schema, body, hash, idx) = schema();
        let (index, created, mapped) = match dir {
            None => (Index::create_in_ram(schema), true, None),
            Some(dir) => match open_dir(dir, schema.clone())? {
                Some((index, created, mapped)) => (index, created, Some(mapped)),
                None => {
                    // Built by another version: it is derived data, built again.
                    tracing::warn!(dir = %dir.display(), "the full-text index has another schema; rebuilding it");
                    std::fs::remove_dir_all(dir)?;
                    let (index, created, mapped) = open_dir(dir, schema)?.ok_or_else(|| {
                        StorageError::Database(
                            "full-text index: schema mismatch after a rebuild".into(),
                        )
                    })?;
                    (index, created, Some(mapped))
                }
            },
        };
        index.tokenizers().register(words::NAME, words::Words);
        index
            .tokenizers()
            .register(pairs::NAME, pairs::Pairs::default());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            // No field is stored: a cache of the document store's blocks
            // would only be allocated for each segment at each reload.
            .doc_store_cache_num_blocks(0)
            .try_into()
            .map_err(failed)?;
        let key = index.schema().get_field(KEY).map_err(failed)?;
        let lines = index.schema().get_field(LINES).map_err(failed)?;
        let fields = translate::Fields {
            body,
            pairs: index.schema().get_field(PAIRS).map_err(failed)?,
        };
        Ok((
            Self {
                index,
                reader,
                mapped,
                writer: Mutex::new(None),
                body,
                hash,
                idx,
                key,
                lines,
                fields,
                pending: Mutex::new(Uncommitted {
                    done: Vec::new(),
                    removed: HashSet::new(),
                    dirty: false,
                    text: 0,
                    last_commit: Instant::now(),
                }),
            },
            created,
        ))
    }

    /// The writer, opened on first use (it takes the directory's lock).
    fn writer(&self) -> Result<MutexGuard<'_, Option<IndexWriter>>, StorageError> {
        let mut writer = lock(&self.writer);
        if writer.is_none() {
            let options = IndexWriterOptions::builder()
                .num_worker_threads(1)
                .memory_budget_per_thread(WRITER_MEMORY)
                .num_merge_threads(MERGE_THREADS)
                .build();
            let opened = self.index.writer_with_options(options).map_err(failed)?;
            niceness::lower_index_threads();
            let mut policy = LogMergePolicy::default();
            policy.set_min_layer_size(MIN_LAYER_DOCS);
            opened.set_merge_policy(Box::new(policy));
            *writer = Some(opened);
        }
        Ok(writer)
    }

    /// Adds a batch of an object's frames; the object's first batch first
    /// deletes whatever an earlier try left.
    pub(crate) fn add(&self, batch: FrameBatch) -> Result<(), StorageError> {
        let guard = self.writer()?;
        let writer = guard.as_ref().ok_or_else(no_writer)?;
        if batch.first {
            writer.delete_term(Term::from_field_text(self.hash, &batch.hash));
        }
        let mut added = 0;
        for IndexedFrame { idx, text, lines } in batch.frames {
            added += text.len();
            let mut doc = TantivyDocument::new();
            doc.add_text(self.body, &text);
            doc.add_text(self.fields.pairs, text);
            doc.add_text(self.hash, &batch.hash);
            doc.add_u64(self.idx, u64::from(idx));
            doc.add_u64(self.key, hash_key(&batch.hash));
            doc.add_u64(self.lines, line_bits(lines));
            writer.add_document(doc).map_err(failed)?;
        }
        let mut pending = lock(&self.pending);
        pending.dirty = true;
        pending.text += added;
        if batch.done {
            pending.done.push(batch.hash);
        }
        Ok(())
    }

    /// Deletes an object's frames (at the next commit).
    pub(crate) fn remove(&self, hash: &str) -> Result<(), StorageError> {
        let guard = self.writer()?;
        let writer = guard.as_ref().ok_or_else(no_writer)?;
        writer.delete_term(Term::from_field_text(self.hash, hash));
        let mut pending = lock(&self.pending);
        pending.removed.insert(hash.to_owned());
        pending.dirty = true;
        Ok(())
    }

    /// Whether [`FullText::commit`] without `force` would commit now: a
    /// cheap look, so a caller hands work to a thread only when it will.
    pub(crate) fn due(&self) -> bool {
        let pending = lock(&self.pending);
        pending.dirty && pending.is_due()
    }

    /// Objects added but not committed yet.
    pub(crate) fn uncommitted(&self) -> Vec<String> {
        lock(&self.pending).done.clone()
    }

    /// The payload of the last commit (see [`FullText::commit`]).
    pub(crate) fn payload(&self) -> Result<Option<String>, StorageError> {
        Ok(self.index.load_metas().map_err(failed)?.payload)
    }

    /// Deletes every document (at the next commit).
    pub(crate) fn clear(&self) -> Result<(), StorageError> {
        let guard = self.writer()?;
        let writer = guard.as_ref().ok_or_else(no_writer)?;
        writer.delete_all_documents().map_err(failed)?;
        lock(&self.pending).dirty = true;
        Ok(())
    }

    /// Commits when a commit is due (or anything waits and `force`), makes
    /// it searchable, and answers the objects it made durable. `payload`,
    /// asked for once the writer is held (so it describes no document added
    /// after the commit), is kept with the commit: [`FullText::payload`].
    pub(crate) fn commit(
        &self,
        force: bool,
        payload: impl FnOnce() -> Option<String>,
    ) -> Result<Vec<String>, StorageError> {
        {
            let pending = lock(&self.pending);
            if !pending.dirty || !(force || pending.is_due()) {
                return Ok(Vec::new());
            }
        }
        let mut guard = self.writer()?;
        let writer = guard.as_mut().ok_or_else(no_writer)?;
        // Taken before the commit: whatever is added meanwhile waits for the next.
        let done = {
            let mut pending = lock(&self.pending);
            pending.dirty = false;
            pending.text = 0;
            pending.last_commit = Instant::now();
            std::mem::take(&mut pending.done)
        };
        let committed = match payload() {
            None => writer.commit(),
            Some(payload) => writer.prepare_commit().and_then(|mut prepared| {
                prepared.set_payload(&payload);
                prepared.commit()
            }),
        };
        if let Err(e) = committed {
            let mut pending = lock(&self.pending);
            pending.dirty = true;
            pending.done.extend(done);
            return Err(failed(e));
        }
        // A commit starts the writer's indexing thread afresh.
        niceness::lower_index_threads();
        self.reader.reload().map_err(failed)?;
        self.forget_unmapped();
        lock(&self.pending).removed.clear();
        Ok(done)
    }

    /// Forgets the files no segment maps any more. tantivy's `MmapDirectory`
    /// remembers every file it maps (its path and a weak reference) and
    /// forgets one only when the same path is mapped again or when its cache
    /// is read (`get_cache_info`) — not when the file is deleted. Each commit
    /// maps ~12 files that a merge or a later commit deletes: with a commit a
    /// second, the heap grew by ~1.1 KB a second for as long as the process
    /// ran (bench/REPORT.md, "LLM proxy soak").
    fn forget_unmapped(&self) {
        if let Some(directory) = &self.mapped {
            drop(directory.get_cache_info());
        }
    }

    /// The best `count` frames matching `expr`, best first (ties in index
    /// order), and whether they are all the matching frames.
    pub(crate) fn top(
        &self,
        expr: &Expr,
        count: usize,
    ) -> Result<(Vec<FrameHit>, bool), StorageError> {
        let searcher = self.reader.searcher();
        let query = translate::query(expr, self.fields, &searcher)?;
        let count = count.max(1);
        let found = searcher
            .search(&query, &TopDocs::with_limit(count).order_by_score())
            .map_err(failed)?;
        let all = found.len() < count;
        Ok((self.hits(&searcher, found)?, all))
    }

    /// The frames matching `expr` that score `min_score` or more, best
    /// first and, among equal scores, by object hash: the first `max` of
    /// them (and any tied with the last in score and hash), and whether that
    /// is all. For the frames tied with a top-k's last one: BM25 over
    /// quantized lengths ties often (tens of thousands of near-identical
    /// pages), so the tie is ordered by a fast field holding each hash's
    /// leading digits, and only the frames kept are resolved to hashes.
    pub(crate) fn at_least(
        &self,
        expr: &Expr,
        min_score: f32,
        max: usize,
    ) -> Result<(Vec<FrameHit>, bool), StorageError> {
        let searcher = self.reader.searcher();
        let query = translate::query(expr, self.fields, &searcher)?;
        let weight = query
            .weight(EnableScoring::enabled_from_searcher(&searcher))
            .map_err(failed)?;
        // The callback sees the documents scoring strictly above it.
        let below = min_score.next_down();
        let mut found: Vec<(f32, u64, DocAddress)> = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let alive = segment.alive_bitset();
            let keys = segment.fast_fields().u64(KEY).map_err(failed)?;
            let segment_ord = u32::try_from(ord).unwrap_or(u32::MAX);
            weight
                .for_each_pruning(below, segment, &mut |doc, score| {
                    if alive.is_none_or(|bits| bits.is_alive(doc)) {
                        let key = keys.first(doc).unwrap_or(0);
                        found.push((score, key, DocAddress::new(segment_ord, doc)));
                    }
                    below
                })
                .map_err(failed)?;
        }
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut end = max.min(found.len());
        while end > 0
            && end < found.len()
            && (found[end].0, found[end].1) == (found[end - 1].0, found[end - 1].1)
        {
            end += 1;
        }
        let complete = end == found.len();
        found.truncate(end);
        let mut hits = self.hits(
            &searcher,
            found.into_iter().map(|(s, _, a)| (s, a)).collect(),
        )?;
        // Hashes sharing their leading digits: the text decides.
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.hash.cmp(&b.hash))
                .then(a.idx.cmp(&b.idx))
        });
        Ok((hits, complete))
    }

    /// The object and frame of each document, leaving out objects deleted
    /// since the last commit.
    fn hits(
        &self,
        searcher: &Searcher,
        found: Vec<(f32, DocAddress)>,
    ) -> Result<Vec<FrameHit>, StorageError> {
        let removed = lock(&self.pending).removed.clone();
        let mut columns = Columns::new(searcher);
        let mut hits = Vec::with_capacity(found.len());
        for (score, address) in found {
            let (hash, idx) = columns.read(address)?;
            if !removed.contains(&hash) {
                hits.push(FrameHit { hash, idx, score });
            }
        }
        Ok(hits)
    }

    /// Every frame of object `hash` matching `expr`, in frame order; or
    /// `None` when the object has no more than `known` frames in the index
    /// (so those already found are all).
    pub(crate) fn frames_of(
        &self,
        expr: &Expr,
        hash: &str,
        known: usize,
    ) -> Result<Option<Vec<u32>>, StorageError> {
        let searcher = self.reader.searcher();
        let object = Term::from_field_text(self.hash, hash);
        // Documents holding the hash (deleted ones count until a merge): a
        // look-up in each segment's term dictionary.
        let mut docs = 0u64;
        for segment in searcher.segment_readers() {
            let index = segment.inverted_index(self.hash).map_err(failed)?;
            docs += u64::from(index.doc_freq(&object)?);
        }
        if docs <= known as u64 {
            return Ok(None);
        }
        let query = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(TermQuery::new(object, IndexRecordOption::Basic)) as Box<dyn Query>,
            ),
            (Occur::Must, translate::query(expr, self.fields, &searcher)?),
        ]);
        let found = searcher.search(&query, &DocSetCollector).map_err(failed)?;
        let mut columns = Columns::new(&searcher);
        let mut frames = found
            .into_iter()
            .map(|address| Ok(columns.read(address)?.1))
            .collect::<Result<Vec<u32>, StorageError>>()?;
        frames.sort_unstable();
        frames.dedup();
        Ok(Some(frames))
    }
}

fn no_writer() -> StorageError {
    StorageError::Internal("full-text index writer missing".into())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
