//! PostgreSQL metadata store, for replicas that share one database: a
//! connection pool, one transaction per write, row locks where two replicas
//! could race (see [`puts`] and [`admin`]).
//! Same tables and meaning as the SQLite store; its own migrations
//! (migrations/postgres).

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Postgres, Row};

use super::LedgerBatch;
use super::sql::{Backend, Dialect, Reads, SharedReads, memory_select};
use super::{AccessUpdate, ImportedMemory, ListQuery, NewMemory, ObjectLease, PutOutcome};
use super::{FrameBatch, SearchRow};
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
impl Backend for PgMetaStore {
    fn reads(&self) -> &dyn SharedReads {
        &self.read
    }

    async fn put(&self, memory: NewMemory) -> Result<PutOutcome, StorageError> {
        puts::put(self.read.pool(), &memory).await
    }

    async fn delete(&self, namespace: &str, id: &str) -> Result<bool, StorageError> {
        puts::delete(self.read.pool(), namespace, id).await
    }

    async fn record_access(&self, updates: Vec<AccessUpdate>) -> Result<(), StorageError> {
        puts::access(self.read.pool(), &updates).await
    }

    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError> {
        puts::import(self.read.pool(), &memory).await
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

    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError> {
        ledger::write(self.read.pool(), &batch).await
    }

    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError> {
        search::index(self.read.pool(), batch).await
    }

    async fn search(
        &self,
        expression: &str,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError> {
        search::search(self.read.pool(), expression, filter).await
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

    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError> {
        admin::remove_object_if_unreferenced(self.read.pool(), hash, idle_before).await
    }

    async fn ping(&self) -> Result<(), StorageError> {
        sqlx::query("SELECT 1").execute(self.read.pool()).await?;
        Ok(())
    }

    async fn close(&self) {
        self.leases.close().await;
        self.read.pool().close().await;
    }
}
