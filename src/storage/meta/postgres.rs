//! PostgreSQL metadata store, for replicas that share one database: a
//! connection pool, one transaction per write, row locks where two replicas
//! could race (see [`super::postgres_puts`] and [`super::postgres_admin`]).
//! Same tables and meaning as the SQLite store; its own migrations
//! (migrations/postgres).

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Row};

use super::{
    AccessUpdate, ImportedMemory, Layout, ListQuery, MemoryRecord, MetaStore, NewMemory,
    ObjectLease, ObjectRecord, PutOutcome,
};
use super::{
    CalibrationRow, LedgerBatch, LedgerCounter, NamespaceTotals, StoreTotals, UsageQuery, UsageRow,
    postgres_admin, postgres_lease, postgres_ledger, postgres_puts, postgres_search, rows,
};
use super::{FrameBatch, IndexLag, PendingObject, SearchRow};
use super::{ObjectSummary, PruneFilter, PruneOrder, RetentionRow, UnreferencedObject};
use crate::storage::StorageError;

/// Columns of a memory joined with its object, in the order [`memory_from_row`] reads.
pub(super) const MEMORY_SELECT: &str = "SELECT m.namespace, m.id, m.type, m.subtype, m.mime, m.title, \
     m.thread, m.checkpoint, m.directory, m.tokens, m.token_method, m.summary, m.created_at, m.updated_at, \
     m.last_accessed_at, m.access_count, m.pinned, m.expires_at, m.corrupt, o.bytes, o.stored_bytes, o.lines, \
     ARRAY(SELECT t.tag FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id ORDER BY t.tag) AS tags \
     FROM memories m JOIN objects o ON o.hash = m.id";

/// The PostgreSQL implementation of [`MetaStore`].
pub struct PgMetaStore {
    pool: PgPool,
    /// Sessions holding object leases ([`postgres_lease`]).
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
        let leases = postgres_lease::pool(options).await?;
        Ok(Self { pool, leases })
    }
}

#[async_trait]
impl MetaStore for PgMetaStore {
    async fn put(&self, memory: NewMemory) -> Result<PutOutcome, StorageError> {
        postgres_puts::put(&self.pool, &memory).await
    }

    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError> {
        postgres_puts::import(&self.pool, &memory).await
    }

    async fn get(&self, namespace: &str, id: &str) -> Result<Option<MemoryRecord>, StorageError> {
        let sql = format!(
            "{MEMORY_SELECT} WHERE m.namespace = $1 AND m.id = $2 \
             AND (m.expires_at IS NULL OR m.pinned OR m.expires_at > $3)"
        );
        let row = sqlx::query(&sql)
            .bind(namespace)
            .bind(id)
            .bind(crate::clock::now_ms())
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| memory_from_row(&r)).transpose()
    }

    async fn ids_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StorageError> {
        // Hex prefixes: every id starting with `prefix` sorts in [prefix, prefix + "g")
        // (ids compare bytewise: the column is COLLATE "C").
        let upper = format!("{prefix}g");
        let rows = sqlx::query(
            "SELECT id FROM memories m WHERE namespace = $1 AND id >= $2 AND id < $3 \
             AND (m.expires_at IS NULL OR m.pinned OR m.expires_at > $4) ORDER BY id LIMIT $5",
        )
        .bind(namespace)
        .bind(prefix)
        .bind(upper)
        .bind(crate::clock::now_ms())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| r.try_get::<String, _>(0).map_err(Into::into))
            .collect()
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>, StorageError> {
        let mut sql = sqlx::QueryBuilder::new(MEMORY_SELECT);
        sql.push(" WHERE m.namespace = ")
            .push_bind(query.namespace.clone())
            .push(" AND (m.expires_at IS NULL OR m.pinned OR m.expires_at > ")
            .push_bind(crate::clock::now_ms())
            .push(")");
        postgres_search::push_filters(&mut sql, query);
        if let Some((created, id)) = &query.after {
            sql.push(" AND (m.created_at < ")
                .push_bind(*created)
                .push(" OR (m.created_at = ")
                .push_bind(*created)
                .push(" AND m.id < ")
                .push_bind(id.clone())
                .push("))");
        }
        sql.push(" ORDER BY m.created_at DESC, m.id DESC LIMIT ")
            .push_bind(i64::from(query.limit));
        let rows = sql.build().fetch_all(&self.pool).await?;
        rows.iter().map(memory_from_row).collect()
    }

    async fn delete(&self, namespace: &str, id: &str) -> Result<bool, StorageError> {
        postgres_puts::delete(&self.pool, namespace, id).await
    }

    async fn object(&self, hash: &str) -> Result<Option<ObjectRecord>, StorageError> {
        let Some(row) = sqlx::query(
            "SELECT hash, bytes, lines, stored_bytes, layout, data FROM objects WHERE hash = $1",
        )
        .bind(hash)
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let layout = layout(&row.try_get::<String, _>("layout")?)?;
        let frames = if layout == Layout::Raw {
            Vec::new()
        } else {
            sqlx::query(
                "SELECT content_offset, content_len, first_line, stored_offset, stored_len, pages \
                 FROM frames WHERE hash = $1 ORDER BY idx",
            )
            .bind(hash)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(rows::frame_entry)
            .collect::<Result<_, _>>()?
        };
        Ok(Some(ObjectRecord {
            hash: row.try_get("hash")?,
            bytes: to_u64(row.try_get("bytes")?),
            lines: to_u64(row.try_get("lines")?),
            stored_bytes: to_u64(row.try_get("stored_bytes")?),
            layout,
            data: row.try_get("data")?,
            frames,
        }))
    }

    async fn record_access(&self, updates: Vec<AccessUpdate>) -> Result<(), StorageError> {
        postgres_puts::access(&self.pool, &updates).await
    }

    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError> {
        postgres_ledger::write(&self.pool, &batch).await
    }

    async fn ledger_counters(&self, namespace: &str) -> Result<Vec<LedgerCounter>, StorageError> {
        postgres_ledger::counters(&self.pool, namespace).await
    }

    async fn usage_totals(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError> {
        postgres_ledger::usage_totals(&self.pool, query).await
    }

    async fn calibrations(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<CalibrationRow>, StorageError> {
        postgres_ledger::calibrations(&self.pool, namespace).await
    }

    async fn namespace_totals(&self, namespace: &str) -> Result<NamespaceTotals, StorageError> {
        postgres_ledger::namespace_totals(&self.pool, namespace).await
    }

    async fn store_totals(&self) -> Result<StoreTotals, StorageError> {
        postgres_ledger::store_totals(&self.pool).await
    }

    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError> {
        postgres_search::pending(&self.pool, limit).await
    }

    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError> {
        postgres_search::index(&self.pool, batch).await
    }

    async fn index_lag(&self) -> Result<IndexLag, StorageError> {
        postgres_search::lag(&self.pool).await
    }

    async fn search(
        &self,
        expression: &str,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError> {
        postgres_search::search(&self.pool, expression, filter).await
    }

    async fn retention_rows(
        &self,
        filter: &PruneFilter,
        order: PruneOrder,
    ) -> Result<Vec<RetentionRow>, StorageError> {
        postgres_admin::retention_rows(&self.pool, filter, order).await
    }

    async fn remove_memories(
        &self,
        namespace: &str,
        ids: Vec<String>,
    ) -> Result<u64, StorageError> {
        postgres_admin::remove_memories(&self.pool, namespace, &ids).await
    }

    async fn expire_memories(&self, now: i64) -> Result<u64, StorageError> {
        postgres_admin::expire_memories(&self.pool, now).await
    }

    async fn namespaces(&self) -> Result<Vec<String>, StorageError> {
        postgres_admin::namespaces(&self.pool).await
    }

    async fn unreferenced_objects(&self) -> Result<Vec<UnreferencedObject>, StorageError> {
        postgres_admin::unreferenced_objects(&self.pool).await
    }

    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError> {
        postgres_admin::remove_object_if_unreferenced(&self.pool, hash, idle_before).await
    }

    async fn objects_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectSummary>, StorageError> {
        postgres_admin::objects_after(&self.pool, after, limit).await
    }

    async fn memories_without_object(&self) -> Result<Vec<(String, String)>, StorageError> {
        postgres_admin::memories_without_object(&self.pool).await
    }

    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError> {
        let marked = sqlx::query("UPDATE memories SET corrupt = $1 WHERE id = $2")
            .bind(detail)
            .bind(hash)
            .execute(&self.pool)
            .await?;
        Ok(marked.rows_affected())
    }

    async fn lease_object(&self, hash: &str) -> Result<Option<ObjectLease>, StorageError> {
        postgres_lease::acquire(&self.leases, hash).await.map(Some)
    }

    async fn ping(&self) -> Result<(), StorageError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn close(&self) {
        self.leases.close().await;
        self.pool.close().await;
    }
}

/// Reads a memory row selected with [`MEMORY_SELECT`].
pub(super) fn memory_from_row(row: &PgRow) -> Result<MemoryRecord, StorageError> {
    rows::memory_record(row, row.try_get("tags")?)
}

/// Parses a stored layout name.
pub(super) fn layout(text: &str) -> Result<Layout, StorageError> {
    Layout::parse(text).ok_or_else(|| StorageError::Database(format!("unknown layout `{text}`")))
}

pub(super) use super::rows::{to_i64, to_u64};
