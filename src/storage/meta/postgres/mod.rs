//! PostgreSQL metadata store, for replicas that share one database: a
//! connection pool, one transaction per write, row locks where two replicas
//! could race (see [`puts`] and [`admin`]).
//! Same tables and meaning as the SQLite store; its own migrations
//! (migrations/postgres).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Postgres, Row};

use super::sql::{Dialect, Reads, memory_select};
use super::{
    AccessUpdate, ImportedMemory, ListQuery, MemoryRecord, MetaStore, NewMemory, ObjectLease,
    ObjectRecord, PutOutcome,
};
use super::{AdminStore, LedgerStore, MemoryStore, ObjectStore, SearchIndex};
use super::{
    CalibrationRow, LedgerBatch, LedgerCounter, NamespaceTotals, StoreTotals, UsageQuery, UsageRow,
};
use super::{FrameBatch, IndexLag, PendingObject, SearchRow};
use super::{ObjectSummary, PruneFilter, PruneOrder, RetentionRow, UnreferencedObject};
use crate::clock::now_ms;
use crate::storage::StorageError;

mod admin;
mod lease;
mod ledger;
mod puts;
mod search;
#[cfg(test)]
mod search_tests;
#[cfg(test)]
mod tests;
mod tsquery;

impl Dialect for Postgres {
    const MEMORY_SELECT: &'static str = memory_select!(
        "ARRAY(SELECT t.tag FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id ORDER BY t.tag)"
    );
    const GREATEST: &'static str = "GREATEST";
    const BYTEWISE: &'static str = " COLLATE \"C\"";

    fn tags(row: &PgRow) -> Result<Vec<String>, StorageError> {
        Ok(row.try_get("tags")?)
    }
}

/// The PostgreSQL implementation of [`MetaStore`].
pub struct PgMetaStore {
    /// The pool, with the queries both stores share.
    read: Reads<Postgres>,
    /// Sessions holding object leases ([`lease`]).
    leases: PgPool,
}

impl PgMetaStore {
    /// Connects to the database at `url` (`postgres://` or `postgresql://`)
    /// and applies the migrations.
    ///
    /// The tables live in the first schema of the connection's `search_path`
    /// (normally `public`). To keep a store in a schema of its own, name it in
    /// the URL with libpq's `options` parameter, URL-encoded:
    /// `postgres://user@host/db?options=-c%20search_path%3Dmyschema`, or with
    /// `?options[search_path]=myschema`. The schema must exist.
    pub async fn open(url: &str) -> Result<Self, StorageError> {
        let options = PgConnectOptions::from_str(url)?;
        Self::open_with(options).await
    }

    /// Like [`PgMetaStore::open`], with options built by the caller.
    pub async fn open_with(options: PgConnectOptions) -> Result<Self, StorageError> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("./migrations/postgres")
            .run(&pool)
            .await
            .map_err(|e| StorageError::Database(format!("migration failed: {e}")))?;
        let leases = lease::pool(options).await?;
        Ok(Self {
            read: Reads::new(pool),
            leases,
        })
    }
}

#[async_trait]
impl MemoryStore for PgMetaStore {
    async fn put(&self, memory: NewMemory) -> Result<PutOutcome, StorageError> {
        puts::put(self.read.pool(), &memory).await
    }

    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError> {
        puts::import(self.read.pool(), &memory).await
    }

    async fn get(&self, namespace: &str, id: &str) -> Result<Option<MemoryRecord>, StorageError> {
        self.read.get(namespace, id, now_ms()).await
    }

    async fn ids_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StorageError> {
        self.read
            .ids_with_prefix(namespace, prefix, limit, now_ms())
            .await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>, StorageError> {
        self.read.list(query, now_ms()).await
    }

    async fn delete(&self, namespace: &str, id: &str) -> Result<bool, StorageError> {
        puts::delete(self.read.pool(), namespace, id).await
    }

    async fn record_access(&self, updates: Vec<AccessUpdate>) -> Result<(), StorageError> {
        puts::access(self.read.pool(), &updates).await
    }
}

#[async_trait]
impl ObjectStore for PgMetaStore {
    async fn object(&self, hash: &str) -> Result<Option<Arc<ObjectRecord>>, StorageError> {
        Ok(self.read.object(hash).await?.map(Arc::new))
    }

    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError> {
        let marked = sqlx::query("UPDATE memories SET corrupt = $1 WHERE id = $2")
            .bind(detail)
            .bind(hash)
            .execute(self.read.pool())
            .await?;
        Ok(marked.rows_affected())
    }

    async fn lease_object(&self, hash: &str) -> Result<Option<ObjectLease>, StorageError> {
        lease::acquire(&self.leases, hash).await.map(Some)
    }
}

#[async_trait]
impl LedgerStore for PgMetaStore {
    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError> {
        ledger::write(self.read.pool(), &batch).await
    }

    async fn ledger_counters(&self, namespace: &str) -> Result<Vec<LedgerCounter>, StorageError> {
        self.read.ledger_counters(namespace).await
    }

    async fn usage_totals(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError> {
        self.read.usage_totals(query).await
    }

    async fn calibrations(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<CalibrationRow>, StorageError> {
        self.read.calibrations(namespace).await
    }

    async fn namespace_totals(&self, namespace: &str) -> Result<NamespaceTotals, StorageError> {
        self.read.namespace_totals(namespace).await
    }

    async fn store_totals(&self) -> Result<StoreTotals, StorageError> {
        self.read.store_totals().await
    }
}

#[async_trait]
impl SearchIndex for PgMetaStore {
    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError> {
        self.read.search_pending(limit).await
    }

    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError> {
        search::index(self.read.pool(), batch).await
    }

    async fn index_lag(&self) -> Result<IndexLag, StorageError> {
        self.read.index_lag().await
    }

    async fn search(
        &self,
        expression: &str,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError> {
        search::search(self.read.pool(), expression, filter).await
    }
}

#[async_trait]
impl AdminStore for PgMetaStore {
    async fn retention_rows(
        &self,
        filter: &PruneFilter,
        order: PruneOrder,
    ) -> Result<Vec<RetentionRow>, StorageError> {
        self.read.retention_rows(filter, order).await
    }

    async fn remove_memories(
        &self,
        namespace: &str,
        ids: Vec<String>,
    ) -> Result<u64, StorageError> {
        admin::remove_memories(self.read.pool(), namespace, &ids).await
    }

    async fn expire_memories(&self, now: i64) -> Result<u64, StorageError> {
        admin::expire_memories(self.read.pool(), now).await
    }

    async fn namespaces(&self) -> Result<Vec<String>, StorageError> {
        self.read.namespaces().await
    }

    async fn unreferenced_objects(&self) -> Result<Vec<UnreferencedObject>, StorageError> {
        self.read.unreferenced_objects().await
    }

    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError> {
        admin::remove_object_if_unreferenced(self.read.pool(), hash, idle_before).await
    }

    async fn objects_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectSummary>, StorageError> {
        self.read.objects_after(after, limit).await
    }

    async fn memories_without_object(&self) -> Result<Vec<(String, String)>, StorageError> {
        self.read.memories_without_object().await
    }
}

#[async_trait]
impl MetaStore for PgMetaStore {
    async fn ping(&self) -> Result<(), StorageError> {
        sqlx::query("SELECT 1").execute(self.read.pool()).await?;
        Ok(())
    }

    async fn close(&self) {
        self.leases.close().await;
        self.read.pool().close().await;
    }
}
