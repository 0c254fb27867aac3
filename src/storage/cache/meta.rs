//! A metadata store whose object records (frame index and inline data) are
//! kept in the shared cache, so a replica opening a memory asks Redis before
//! the database. [`MetaStore::stored_object`] (a put's dedup check, GC,
//! verify) always asks the database.
//!
//! An object record never changes while its row exists, so a cached record
//! stays true until GC removes the row; lookups that find nothing are not
//! cached. What must never happen is a record outliving its row (a put would
//! trust it and drop its own copy of the content), so GC invalidates first:
//! it sets a short-lived tombstone and drops the entry in one transaction,
//! fills only store while no tombstone exists (checked in the same script),
//! and while Redis cannot take the tombstone GC keeps the object.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;

use super::object_wire;
use super::redis::{OBJECTS, RedisCache};
use crate::storage::StorageError;
use crate::storage::meta::{
    AccessUpdate, AdminStore, CalibrationRow, ExchangeQuery, ExchangeRow, Expr, FrameBatch,
    FrameWords, ImportedMemory, IndexLag, LedgerBatch, LedgerCounter, LedgerStore, ListQuery,
    MemoryRecord, MemoryStore, MetaStore, NamespaceTotals, NewMemory, ObjectLease, ObjectRecord,
    ObjectStore, ObjectSummary, PendingObject, PruneOrder, PutOutcome, RetentionRow, SearchIndex,
    SearchRow, SettledTokens, StoreTotals, UnreferencedObject, UsageQuery, UsageRow,
};

/// How long a removed object's tombstone keeps fills of its record out: far
/// longer than a fill takes from its database read to its script.
const TOMBSTONE_HOLD: Duration = Duration::from_secs(60);

/// At most one warning per this long about objects GC had to keep.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// A metadata store with object records cached in Redis.
pub struct CachedMetaStore {
    inner: Arc<dyn MetaStore>,
    cache: Arc<RedisCache>,
    /// When GC last warned that it kept objects, and how many it kept since.
    kept: Mutex<(Option<Instant>, u64)>,
}

impl CachedMetaStore {
    /// `inner` with `cache` in front of its object records.
    pub fn new(inner: Arc<dyn MetaStore>, cache: Arc<RedisCache>) -> Self {
        Self {
            inner,
            cache,
            kept: Mutex::new((None, 0)),
        }
    }

    /// Caches `record` in the background: a request never waits for the cache.
    fn fill(&self, record: Arc<ObjectRecord>) {
        let cache = self.cache.clone();
        tokio::spawn(async move {
            let Some(bytes) = object_wire::encode(&record) else {
                return;
            };
            let key = cache.object_key(&record.hash);
            let tombstone = cache.object_gone_key(&record.hash);
            cache.put_unless(&key, &tombstone, Bytes::from(bytes)).await;
        });
    }

    /// Says (at most once per [`WARN_EVERY`]) that GC kept an object because
    /// the shared cache could not be invalidated.
    fn warn_kept(&self, hash: &str) {
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.1 += 1;
        if kept.0.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            tracing::debug!(
                hash,
                "GC keeps the object: the shared cache cannot be invalidated"
            );
            return;
        }
        tracing::warn!(
            hash,
            kept = kept.1,
            "GC keeps unreferenced objects while the shared cache cannot be invalidated (Redis down or slow); the next GC retries"
        );
        *kept = (Some(Instant::now()), 0);
    }
}

#[async_trait]
impl MemoryStore for CachedMetaStore {
    async fn put(&self, memory: NewMemory) -> Result<PutOutcome, StorageError> {
        self.inner.put(memory).await
    }

    async fn get(&self, namespace: &str, id: &str) -> Result<Option<MemoryRecord>, StorageError> {
        self.inner.get(namespace, id).await
    }

    async fn ids_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StorageError> {
        self.inner.ids_with_prefix(namespace, prefix, limit).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>, StorageError> {
        self.inner.list(query).await
    }

    async fn delete(&self, namespace: &str, id: &str) -> Result<bool, StorageError> {
        self.inner.delete(namespace, id).await
    }

    async fn record_access(&self, updates: Vec<AccessUpdate>) -> Result<(), StorageError> {
        self.inner.record_access(updates).await
    }

    async fn settle_tokens(&self, settled: SettledTokens) -> Result<bool, StorageError> {
        self.inner.settle_tokens(settled).await
    }

    async fn settling(
        &self,
        after: Option<(String, String)>,
        limit: u32,
    ) -> Result<Vec<MemoryRecord>, StorageError> {
        self.inner.settling(after, limit).await
    }

    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError> {
        // Inserts the object row only if there is none: no row it could change.
        self.inner.import_memory(memory).await
    }
}

#[async_trait]
impl ObjectStore for CachedMetaStore {
    async fn object(&self, hash: &str) -> Result<Option<Arc<ObjectRecord>>, StorageError> {
        let key = self.cache.object_key(hash);
        if let Some(bytes) = self.cache.get(&key, OBJECTS).await {
            if let Some(record) = object_wire::decode(&bytes, hash) {
                return Ok(Some(Arc::new(record)));
            }
            tracing::warn!(
                hash,
                "cached object record unreadable; dropped, asking the store"
            );
            self.cache.remove(&key).await;
        }
        let found = self.inner.object(hash).await?;
        if let Some(record) = &found {
            self.fill(Arc::clone(record));
        }
        Ok(found)
    }

    async fn stored_object(&self, hash: &str) -> Result<Option<ObjectRecord>, StorageError> {
        self.inner.stored_object(hash).await
    }

    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError> {
        let marked = self.inner.mark_corrupt(hash, detail).await?;
        self.cache.remove(&self.cache.object_key(hash)).await;
        Ok(marked)
    }

    async fn lease_object(&self, hash: &str) -> Result<Option<ObjectLease>, StorageError> {
        self.inner.lease_object(hash).await
    }
}

#[async_trait]
impl LedgerStore for CachedMetaStore {
    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError> {
        self.inner.write_ledger(batch).await
    }

    async fn ledger_counters(&self, namespace: &str) -> Result<Vec<LedgerCounter>, StorageError> {
        self.inner.ledger_counters(namespace).await
    }

    async fn usage_totals(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError> {
        self.inner.usage_totals(query).await
    }

    async fn calibrations(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<CalibrationRow>, StorageError> {
        self.inner.calibrations(namespace).await
    }

    async fn namespace_totals(&self, namespace: &str) -> Result<NamespaceTotals, StorageError> {
        self.inner.namespace_totals(namespace).await
    }

    async fn store_totals(&self) -> Result<StoreTotals, StorageError> {
        self.inner.store_totals().await
    }

    async fn exchanges(&self, query: &ExchangeQuery) -> Result<Vec<ExchangeRow>, StorageError> {
        self.inner.exchanges(query).await
    }

    async fn exchange(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<ExchangeRow>, StorageError> {
        self.inner.exchange(namespace, id).await
    }

    async fn thread_exchanges(
        &self,
        namespace: &str,
        thread: &str,
        up_to: &str,
    ) -> Result<Vec<ExchangeRow>, StorageError> {
        self.inner.thread_exchanges(namespace, thread, up_to).await
    }
}

#[async_trait]
impl SearchIndex for CachedMetaStore {
    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError> {
        self.inner.search_pending(limit).await
    }

    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError> {
        self.inner.index_frames(batch).await
    }

    async fn index_lag(&self) -> Result<IndexLag, StorageError> {
        self.inner.index_lag().await
    }

    async fn frame_words(
        &self,
        hash: &str,
        words: &[String],
    ) -> Result<Option<Vec<FrameWords>>, StorageError> {
        self.inner.frame_words(hash, words).await
    }

    async fn search(
        &self,
        expression: &Expr,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError> {
        self.inner.search(expression, filter).await
    }
}

#[async_trait]
impl AdminStore for CachedMetaStore {
    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError> {
        let key = self.cache.object_key(hash);
        let tombstone = self.cache.object_gone_key(hash);
        if !self
            .cache
            .invalidate(&key, &tombstone, TOMBSTONE_HOLD)
            .await
        {
            self.warn_kept(hash);
            return Ok(false);
        }
        self.inner
            .remove_object_if_unreferenced(hash, idle_before)
            .await
    }

    async fn retention_rows(
        &self,
        filter: &ListQuery,
        order: PruneOrder,
    ) -> Result<Vec<RetentionRow>, StorageError> {
        self.inner.retention_rows(filter, order).await
    }

    async fn remove_memories(
        &self,
        namespace: &str,
        ids: Vec<String>,
    ) -> Result<u64, StorageError> {
        self.inner.remove_memories(namespace, ids).await
    }

    async fn expire_memories(&self, now: i64) -> Result<u64, StorageError> {
        self.inner.expire_memories(now).await
    }

    async fn namespaces(&self) -> Result<Vec<String>, StorageError> {
        self.inner.namespaces().await
    }

    async fn unreferenced_objects(&self) -> Result<Vec<UnreferencedObject>, StorageError> {
        self.inner.unreferenced_objects().await
    }

    async fn objects_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectSummary>, StorageError> {
        self.inner.objects_after(after, limit).await
    }

    async fn memories_without_object(&self) -> Result<Vec<(String, String)>, StorageError> {
        self.inner.memories_without_object().await
    }
}

#[async_trait]
impl MetaStore for CachedMetaStore {
    async fn ping(&self) -> Result<(), StorageError> {
        self.inner.ping().await
    }

    async fn close(&self) {
        self.inner.close().await;
    }
}
