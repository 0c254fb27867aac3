//! A metadata store over SQL: the five roles and [`MetaStore`] implemented
//! once for every backend, from the reads both share ([`SharedReads`]) and
//! what a backend does its own way ([`Backend`]: its writes, how it feeds
//! its full-text index, leases, liveness).

use std::sync::Arc;

use async_trait::async_trait;

use super::SharedReads;
use crate::clock::now_ms;
use crate::storage::StorageError;
use crate::storage::meta::{
    AccessUpdate, AdminStore, CalibrationRow, ExchangeQuery, ExchangeRow, Expr, FrameBatch,
    FrameWords, ImportedMemory, IndexLag, LedgerBatch, LedgerCounter, LedgerStore, ListQuery,
    MemoryRecord, MemoryStore, MetaStore, NamespaceTotals, NewMemory, ObjectLease, ObjectRecord,
    ObjectStore, ObjectSummary, PendingObject, PruneOrder, PutOutcome, RetentionRow, SearchIndex,
    SearchRow, SettledTokens, StoreTotals, UnreferencedObject, UsageQuery, UsageRow,
};

/// What one SQL backend does its own way; each method is the role method
/// of the same name ([`MemoryStore`], [`ObjectStore`], [`LedgerStore`],
/// [`SearchIndex`], [`AdminStore`], [`MetaStore`]), which see.
#[async_trait]
pub(in crate::storage::meta) trait Backend: Send + Sync {
    /// The queries both backends share, on this backend's pool.
    fn reads(&self) -> &dyn SharedReads;
    /// See [`MemoryStore::put`].
    async fn put(&self, memory: NewMemory) -> Result<PutOutcome, StorageError>;
    /// See [`MemoryStore::delete`].
    async fn delete(&self, namespace: &str, id: &str) -> Result<bool, StorageError>;
    /// See [`MemoryStore::record_access`].
    async fn record_access(&self, updates: Vec<AccessUpdate>) -> Result<(), StorageError>;
    /// See [`MemoryStore::import_memory`].
    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError>;
    /// See [`MemoryStore::settle_tokens`].
    async fn settle_tokens(&self, settled: SettledTokens) -> Result<bool, StorageError>;
    /// See [`ObjectStore::mark_corrupt`].
    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError>;
    /// See [`ObjectStore::lease_object`]: `None` unless other processes share the store.
    async fn lease_object(&self, _hash: &str) -> Result<Option<ObjectLease>, StorageError> {
        Ok(None)
    }
    /// See [`LedgerStore::write_ledger`].
    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError>;
    /// See [`SearchIndex::search_pending`].
    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError>;
    /// See [`SearchIndex::index_lag`].
    async fn index_lag(&self) -> Result<IndexLag, StorageError>;
    /// See [`SearchIndex::index_frames`].
    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError>;
    /// See [`SearchIndex::frame_words`].
    async fn frame_words(
        &self,
        hash: &str,
        words: &[String],
    ) -> Result<Option<Vec<FrameWords>>, StorageError>;
    /// See [`SearchIndex::search`].
    async fn search(
        &self,
        expression: &Expr,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError>;
    /// See [`AdminStore::remove_memories`].
    async fn remove_memories(&self, namespace: &str, ids: Vec<String>)
    -> Result<u64, StorageError>;
    /// See [`AdminStore::expire_memories`].
    async fn expire_memories(&self, now: i64) -> Result<u64, StorageError>;
    /// See [`AdminStore::remove_object_if_unreferenced`].
    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError>;
    /// See [`MetaStore::ping`].
    async fn ping(&self) -> Result<(), StorageError>;
    /// See [`MetaStore::close`].
    async fn close(&self);
}

#[async_trait]
impl<B: Backend> MemoryStore for B {
    async fn put(&self, memory: NewMemory) -> Result<PutOutcome, StorageError> {
        Backend::put(self, memory).await
    }

    async fn get(&self, namespace: &str, id: &str) -> Result<Option<MemoryRecord>, StorageError> {
        self.reads().get(namespace, id, now_ms()).await
    }

    async fn ids_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StorageError> {
        let reads = self.reads();
        reads
            .ids_with_prefix(namespace, prefix, limit, now_ms())
            .await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>, StorageError> {
        self.reads().list(query, now_ms()).await
    }

    async fn delete(&self, namespace: &str, id: &str) -> Result<bool, StorageError> {
        Backend::delete(self, namespace, id).await
    }

    async fn record_access(&self, updates: Vec<AccessUpdate>) -> Result<(), StorageError> {
        Backend::record_access(self, updates).await
    }

    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError> {
        Backend::import_memory(self, memory).await
    }

    async fn settle_tokens(&self, settled: SettledTokens) -> Result<bool, StorageError> {
        Backend::settle_tokens(self, settled).await
    }

    async fn settling(
        &self,
        after: Option<(String, String)>,
        limit: u32,
    ) -> Result<Vec<MemoryRecord>, StorageError> {
        self.reads().settling(after, limit).await
    }
}

#[async_trait]
impl<B: Backend> ObjectStore for B {
    async fn object(&self, hash: &str) -> Result<Option<Arc<ObjectRecord>>, StorageError> {
        Ok(self.reads().object(hash).await?.map(Arc::new))
    }

    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError> {
        Backend::mark_corrupt(self, hash, detail).await
    }

    async fn lease_object(&self, hash: &str) -> Result<Option<ObjectLease>, StorageError> {
        Backend::lease_object(self, hash).await
    }
}

#[async_trait]
impl<B: Backend> LedgerStore for B {
    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError> {
        Backend::write_ledger(self, batch).await
    }

    async fn ledger_counters(&self, namespace: &str) -> Result<Vec<LedgerCounter>, StorageError> {
        self.reads().ledger_counters(namespace).await
    }

    async fn usage_totals(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError> {
        self.reads().usage_totals(query).await
    }

    async fn calibrations(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<CalibrationRow>, StorageError> {
        self.reads().calibrations(namespace).await
    }

    async fn namespace_totals(&self, namespace: &str) -> Result<NamespaceTotals, StorageError> {
        self.reads().namespace_totals(namespace).await
    }

    async fn store_totals(&self) -> Result<StoreTotals, StorageError> {
        self.reads().store_totals().await
    }

    async fn exchanges(&self, query: &ExchangeQuery) -> Result<Vec<ExchangeRow>, StorageError> {
        self.reads().exchanges(query).await
    }

    async fn exchange(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<ExchangeRow>, StorageError> {
        self.reads().exchange(namespace, id).await
    }

    async fn thread_exchanges(
        &self,
        namespace: &str,
        thread: &str,
        up_to: &str,
    ) -> Result<Vec<ExchangeRow>, StorageError> {
        self.reads()
            .thread_exchanges(namespace, thread, up_to)
            .await
    }
}

#[async_trait]
impl<B: Backend> SearchIndex for B {
    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError> {
        Backend::search_pending(self, limit).await
    }

    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError> {
        Backend::index_frames(self, batch).await
    }

    async fn index_lag(&self) -> Result<IndexLag, StorageError> {
        Backend::index_lag(self).await
    }

    async fn frame_words(
        &self,
        hash: &str,
        words: &[String],
    ) -> Result<Option<Vec<FrameWords>>, StorageError> {
        Backend::frame_words(self, hash, words).await
    }

    async fn search(
        &self,
        expression: &Expr,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError> {
        Backend::search(self, expression, filter).await
    }
}

#[async_trait]
impl<B: Backend> AdminStore for B {
    async fn retention_rows(
        &self,
        filter: &ListQuery,
        order: PruneOrder,
    ) -> Result<Vec<RetentionRow>, StorageError> {
        self.reads().retention_rows(filter, order).await
    }

    async fn remove_memories(
        &self,
        namespace: &str,
        ids: Vec<String>,
    ) -> Result<u64, StorageError> {
        Backend::remove_memories(self, namespace, ids).await
    }

    async fn expire_memories(&self, now: i64) -> Result<u64, StorageError> {
        Backend::expire_memories(self, now).await
    }

    async fn namespaces(&self) -> Result<Vec<String>, StorageError> {
        self.reads().namespaces().await
    }

    async fn unreferenced_objects(&self) -> Result<Vec<UnreferencedObject>, StorageError> {
        self.reads().unreferenced_objects().await
    }

    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError> {
        Backend::remove_object_if_unreferenced(self, hash, idle_before).await
    }

    async fn objects_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectSummary>, StorageError> {
        self.reads().objects_after(after, limit).await
    }

    async fn memories_without_object(&self) -> Result<Vec<(String, String)>, StorageError> {
        self.reads().memories_without_object().await
    }
}

#[async_trait]
impl<B: Backend> MetaStore for B {
    async fn ping(&self) -> Result<(), StorageError> {
        Backend::ping(self).await
    }

    async fn close(&self) {
        Backend::close(self).await;
    }
}
