//! The metadata store: memories, objects, frame indexes and inline content.

use std::sync::Arc;

use async_trait::async_trait;

use super::StorageError;

mod admin_rows;
#[cfg(test)]
mod contract;
mod exchange_rows;
pub mod expression;

pub use expression::Expr;
mod fulltext;
mod ledger_rows;
pub mod postgres;
mod records;
mod search_rows;
mod sql;
pub mod sqlite;

pub use admin_rows::{ObjectSummary, PruneOrder, RetentionRow, UnreferencedObject};
pub use exchange_rows::{ExchangeQuery, ExchangeRow};
pub use ledger_rows::{
    CalibrationRow, LedgerBatch, LedgerCounter, NamespaceTotals, StoreTotals, UsageQuery, UsageRow,
};
pub use records::{
    AccessUpdate, FrameEntry, ImportedMemory, Layout, ListQuery, MemoryFields, MemoryRecord,
    NewMemory, ObjectLease, ObjectRecord, PAGE_BYTES, PageEntry, PutOutcome, SettledTokens,
};
pub use search_rows::{
    FrameBatch, FrameLines, FrameWords, IndexLag, IndexedFrame, PendingObject, SearchRow,
};

/// The memories of each namespace: put, read, list, delete, import, read counts.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Stores the object if new and creates the memory, or merges into it.
    async fn put(&self, memory: NewMemory) -> Result<PutOutcome, StorageError>;
    /// One memory of a namespace.
    async fn get(&self, namespace: &str, id: &str) -> Result<Option<MemoryRecord>, StorageError>;
    /// Up to `limit` ids of the namespace starting with `prefix`.
    async fn ids_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StorageError>;
    /// A page of memories, newest first.
    async fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>, StorageError>;
    /// Deletes a memory; false when there was none.
    async fn delete(&self, namespace: &str, id: &str) -> Result<bool, StorageError>;
    /// Adds batched read statistics.
    async fn record_access(&self, updates: Vec<AccessUpdate>) -> Result<(), StorageError>;
    /// Sets the exact count (and the summary stating it) of a memory still
    /// counted by `settled.estimated_method`, and clears its settling mark;
    /// false when there is no such memory. A count by the same method (not
    /// text after all) only clears the mark, and is false when there is none:
    /// of two processes settling one memory, one is answered true.
    async fn settle_tokens(&self, settled: SettledTokens) -> Result<bool, StorageError>;
    /// Up to `limit` memories still marked settling ([`MemoryRecord::tokens_settling`]),
    /// expired or not, after `after` (namespace, id) in that order: the
    /// counts a stopped process left to make.
    async fn settling(
        &self,
        after: Option<(String, String)>,
        limit: u32,
    ) -> Result<Vec<MemoryRecord>, StorageError>;
    /// Restores an archived memory with its original metadata, in one
    /// transaction; false (and nothing written) when the namespace has it already.
    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError>;
}

/// Objects (the stored form of a content, shared by the memories of it):
/// their records with frame indexes, leases across processes, corruption marks.
#[async_trait]
pub trait ObjectStore: Send + Sync {
    /// An object with its frame index and inline data (possibly from a
    /// cache, shared with its other readers).
    async fn object(&self, hash: &str) -> Result<Option<Arc<ObjectRecord>>, StorageError>;
    /// The object as the store itself holds it now, never from a cache: for
    /// decisions a stale answer would make unsafe (a put relying on a stored
    /// object instead of its own file, GC, verify).
    async fn stored_object(&self, hash: &str) -> Result<Option<ObjectRecord>, StorageError> {
        Ok(self.object(hash).await?.map(Arc::unwrap_or_clone))
    }
    /// Marks every memory of this object corrupt; answers how many.
    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError>;
    /// Locks object `hash` against puts and GC in *other processes* sharing
    /// the store, until the lease is dropped (within one process the domain's
    /// `ObjectLocks` orders them). `None` for a store only one process opens.
    async fn lease_object(&self, _hash: &str) -> Result<Option<ObjectLease>, StorageError> {
        Ok(None)
    }
}

/// The ledger's tables (counters, usage, calibrations) and the size totals.
#[async_trait]
pub trait LedgerStore: Send + Sync {
    /// Adds the ledger's batched counters and usage, and sets its calibrations, in one transaction.
    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError>;
    /// The named counters of a namespace.
    async fn ledger_counters(&self, namespace: &str) -> Result<Vec<LedgerCounter>, StorageError>;
    /// Usage summed per namespace and model over the days the query selects.
    async fn usage_totals(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError>;
    /// Calibration factors of one namespace, or of all.
    async fn calibrations(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<CalibrationRow>, StorageError>;
    /// Memory count, bytes, stored bytes and tokens of a namespace.
    async fn namespace_totals(&self, namespace: &str) -> Result<NamespaceTotals, StorageError>;
    /// Object count and sizes of the whole store (every namespace).
    async fn store_totals(&self) -> Result<StoreTotals, StorageError>;
    /// Exchanges of a namespace, newest first, without their bodies.
    async fn exchanges(&self, query: &ExchangeQuery) -> Result<Vec<ExchangeRow>, StorageError>;
    /// One exchange of a namespace, with its body delta.
    async fn exchange(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<ExchangeRow>, StorageError>;
    /// The exchanges of a thread up to and including `up_to`, oldest first,
    /// with their body deltas (to rebuild a body from its parents).
    async fn thread_exchanges(
        &self,
        namespace: &str,
        thread: &str,
        up_to: &str,
    ) -> Result<Vec<ExchangeRow>, StorageError>;
}

/// The full-text index: its queue, its frames, and the ranked query.
#[async_trait]
pub trait SearchIndex: Send + Sync {
    /// Up to `limit` objects waiting for the full-text index, oldest first.
    /// An index that commits in groups makes the objects it was given durable
    /// (and takes them off the queue) when it is asked again, at the latest.
    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError>;
    /// Adds frames of one object to the full-text index (idempotent per
    /// frame). The object counts as indexed (off [`Self::index_lag`], found
    /// by [`Self::search`]) once its `done` batch is in and, for an index
    /// that commits in groups, the next [`Self::search_pending`] has run.
    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError>;
    /// Objects and bytes waiting for the full-text index.
    async fn index_lag(&self) -> Result<IndexLag, StorageError>;
    /// For a grep inside object `hash`: each of its frames the index holds
    /// (searchable now), whether its text holds every one of `words`
    /// ([`crate::text::words`] of the pattern) and how its lines stand there.
    /// A frame not listed is unknown to the index. `None` when this index
    /// keeps nothing a grep can go by.
    async fn frame_words(
        &self,
        hash: &str,
        words: &[String],
    ) -> Result<Option<Vec<FrameWords>>, StorageError>;
    /// Memories of `filter.namespace` whose frames match the full-text
    /// `expression`, best first, at most `filter.limit`, within the
    /// filter's fields (`after` is ignored).
    async fn search(
        &self,
        expression: &Expr,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError>;
}

/// What retention, GC and verify read and remove.
#[async_trait]
pub trait AdminStore: Send + Sync {
    /// Every memory of a namespace the filter selects (pinned ones too, the
    /// expired too), in `order`; the query's page (`after`, `limit`) is not used.
    async fn retention_rows(
        &self,
        filter: &ListQuery,
        order: PruneOrder,
    ) -> Result<Vec<RetentionRow>, StorageError>;
    /// Deletes these memories of a namespace unless pinned; answers how many went.
    async fn remove_memories(&self, namespace: &str, ids: Vec<String>)
    -> Result<u64, StorageError>;
    /// Deletes unpinned memories that expired at or before `now` (Unix ms); answers how many.
    async fn expire_memories(&self, now: i64) -> Result<u64, StorageError>;
    /// Namespaces that hold memories.
    async fn namespaces(&self) -> Result<Vec<String>, StorageError>;
    /// Objects that no memory of any namespace refers to.
    async fn unreferenced_objects(&self) -> Result<Vec<UnreferencedObject>, StorageError>;
    /// Deletes an object row (and its frames) only if, inside the writer's
    /// transaction, no memory refers to it and it has been idle since before
    /// `idle_before` (Unix ms). True when it was deleted.
    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError>;
    /// Up to `limit` object rows with hashes after `after`, in hash order.
    async fn objects_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectSummary>, StorageError>;
    /// (namespace, id) of memories whose object row is missing.
    async fn memories_without_object(&self) -> Result<Vec<(String, String)>, StorageError>;
}

/// Metadata storage, every role together: what the application wires and
/// hands around. Implementations: SQLite (default, [`sqlite`]) and PostgreSQL
/// (for replicas sharing one database, [`postgres`]); the Redis object cache
/// wraps either ([`crate::storage::cache`]). Callers name the roles they use.
#[async_trait]
pub trait MetaStore: MemoryStore + ObjectStore + LedgerStore + SearchIndex + AdminStore {
    /// Checks that the store answers.
    async fn ping(&self) -> Result<(), StorageError>;
    /// Flushes and closes.
    async fn close(&self);
}
