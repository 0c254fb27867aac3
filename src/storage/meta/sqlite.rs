//! SQLite metadata store (the embedded default): WAL, durable commits, group commit.
//!
//! Reads go through a small connection pool; every write goes through one
//! writer task that commits the writes arriving together in one transaction
//! (see [`super::sqlite_writer`]).

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use super::sqlite_writer::{self, WriteCommand};
use super::{
    AccessUpdate, ImportedMemory, Layout, ListQuery, MemoryRecord, MetaStore, NewMemory,
    ObjectRecord, PutOutcome,
};
use super::{
    CalibrationRow, LedgerBatch, LedgerCounter, NamespaceTotals, StoreTotals, UsageQuery, UsageRow,
    sqlite_admin, sqlite_ledger,
};
use super::{FrameBatch, IndexLag, PendingObject, SearchRow, rows, sqlite_search};
use super::{ObjectSummary, PruneFilter, PruneOrder, RetentionRow, UnreferencedObject};
use crate::storage::StorageError;

/// Columns of a memory joined with its object, in the order [`memory_from_row`] reads.
pub(super) const MEMORY_SELECT: &str = "SELECT m.namespace, m.id, m.type, m.subtype, m.mime, m.title, \
     m.thread, m.checkpoint, m.directory, m.tokens, m.token_method, m.summary, m.created_at, m.updated_at, \
     m.last_accessed_at, m.access_count, m.pinned, m.expires_at, m.corrupt, o.bytes, o.stored_bytes, o.lines, \
     (SELECT json_group_array(tag) FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id) AS tags \
     FROM memories m JOIN objects o ON o.hash = m.id";

/// Memories not expired (pinned ones never are); binds the current time.
const VISIBLE: &str = "(m.expires_at IS NULL OR m.pinned = 1 OR m.expires_at > ?)";

/// The SQLite implementation of [`MetaStore`].
pub struct SqliteMetaStore {
    read: SqlitePool,
    writer: mpsc::Sender<WriteCommand>,
    writer_task: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl SqliteMetaStore {
    /// Opens (creating if needed) the database at `url` and applies the migrations.
    pub async fn open(url: &str) -> Result<Self, StorageError> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10))
            .pragma("cache_size", "-16000");
        let read = SqlitePoolOptions::new()
            .max_connections(4)
            .min_connections(1)
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("migrations/sqlite")
            .run(&read)
            .await
            .map_err(|e| StorageError::Database(format!("migration failed: {e}")))?;
        let path = options.get_filename().to_owned();
        let (writer, task) = sqlite_writer::spawn(&path)?;
        Ok(Self {
            read,
            writer,
            writer_task: std::sync::Mutex::new(Some(task)),
        })
    }

    async fn send<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, StorageError>>) -> WriteCommand,
    ) -> Result<T, StorageError> {
        let (tx, rx) = oneshot::channel();
        self.writer
            .send(make(tx))
            .await
            .map_err(|_| StorageError::Unavailable("metadata writer stopped".into()))?;
        rx.await
            .map_err(|_| StorageError::Unavailable("metadata writer stopped".into()))?
    }
}

#[async_trait]
impl MetaStore for SqliteMetaStore {
    async fn put(&self, memory: NewMemory) -> Result<PutOutcome, StorageError> {
        let (namespace, id) = (memory.namespace.clone(), memory.object.hash.clone());
        let written = self
            .send(|reply| WriteCommand::Put(Box::new(memory), reply))
            .await?;
        let record = match written.record {
            Some(record) => record,
            None => self.get(&namespace, &id).await?.ok_or_else(|| {
                StorageError::Unavailable(format!("memory {id} was deleted while it was being put"))
            })?,
        };
        Ok(PutOutcome {
            created: written.created,
            object_created: written.new_object,
            record,
        })
    }

    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError> {
        self.send(|reply| WriteCommand::Import(Box::new(memory), reply))
            .await
    }

    async fn get(&self, namespace: &str, id: &str) -> Result<Option<MemoryRecord>, StorageError> {
        let sql = format!("{MEMORY_SELECT} WHERE m.namespace = ? AND m.id = ? AND {VISIBLE}");
        let row = sqlx::query(&sql)
            .bind(namespace)
            .bind(id)
            .bind(crate::clock::now_ms())
            .fetch_optional(&self.read)
            .await?;
        row.map(|r| memory_from_row(&r)).transpose()
    }

    async fn ids_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, StorageError> {
        // Hex prefixes: every id starting with `prefix` sorts in [prefix, prefix + "g").
        let upper = format!("{prefix}g");
        let rows = sqlx::query(
            "SELECT id FROM memories m WHERE namespace = ? AND id >= ? AND id < ? AND (m.expires_at IS NULL OR m.pinned = 1 OR m.expires_at > ?) ORDER BY id LIMIT ?",
        )
        .bind(namespace)
        .bind(prefix)
        .bind(upper)
        .bind(crate::clock::now_ms())
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|r| r.try_get::<String, _>(0).map_err(Into::into))
            .collect()
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<MemoryRecord>, StorageError> {
        let mut sql = sqlx::QueryBuilder::new(MEMORY_SELECT);
        sql.push(" WHERE m.namespace = ")
            .push_bind(&query.namespace)
            .push(" AND (m.expires_at IS NULL OR m.pinned = 1 OR m.expires_at > ")
            .push_bind(crate::clock::now_ms())
            .push(")");
        let exact = [
            ("m.type", &query.kind),
            ("m.subtype", &query.subtype),
            ("m.thread", &query.thread),
            ("m.checkpoint", &query.checkpoint),
            ("m.directory", &query.directory),
        ];
        for (column, value) in exact {
            if let Some(value) = value {
                sql.push(format!(" AND {column} = ")).push_bind(value);
            }
        }
        if let Some(tag) = &query.tag {
            sql.push(" AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id AND t.tag = ")
                .push_bind(tag)
                .push(")");
        }
        if let Some(since) = query.since {
            sql.push(" AND m.created_at >= ").push_bind(since);
        }
        if let Some(until) = query.until {
            sql.push(" AND m.created_at < ").push_bind(until);
        }
        if let Some((created, id)) = &query.after {
            sql.push(" AND (m.created_at < ")
                .push_bind(*created)
                .push(" OR (m.created_at = ")
                .push_bind(*created)
                .push(" AND m.id < ")
                .push_bind(id)
                .push("))");
        }
        sql.push(" ORDER BY m.created_at DESC, m.id DESC LIMIT ")
            .push_bind(i64::from(query.limit));
        let rows = sql.build().fetch_all(&self.read).await?;
        rows.iter().map(memory_from_row).collect()
    }

    async fn delete(&self, namespace: &str, id: &str) -> Result<bool, StorageError> {
        let (namespace, id) = (namespace.to_owned(), id.to_owned());
        self.send(|reply| WriteCommand::Delete {
            namespace,
            id,
            reply,
        })
        .await
    }

    async fn object(&self, hash: &str) -> Result<Option<ObjectRecord>, StorageError> {
        let Some(row) = sqlx::query(
            "SELECT hash, bytes, lines, stored_bytes, layout, data FROM objects WHERE hash = ?",
        )
        .bind(hash)
        .fetch_optional(&self.read)
        .await?
        else {
            return Ok(None);
        };
        let layout_name: String = row.try_get("layout")?;
        let layout = Layout::parse(&layout_name)
            .ok_or_else(|| StorageError::Database(format!("unknown layout `{layout_name}`")))?;
        let frames = if layout == Layout::Raw {
            Vec::new()
        } else {
            sqlx::query(
                "SELECT content_offset, content_len, first_line, stored_offset, stored_len, pages \
                 FROM frames WHERE hash = ? ORDER BY idx",
            )
            .bind(hash)
            .fetch_all(&self.read)
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
        self.send(|reply| WriteCommand::Access(updates, reply))
            .await
    }

    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError> {
        self.send(|reply| WriteCommand::Ledger(Box::new(batch), reply))
            .await
    }

    async fn ledger_counters(&self, namespace: &str) -> Result<Vec<LedgerCounter>, StorageError> {
        sqlite_ledger::counters(&self.read, namespace).await
    }

    async fn usage_totals(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError> {
        sqlite_ledger::usage_totals(&self.read, query).await
    }

    async fn calibrations(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<CalibrationRow>, StorageError> {
        sqlite_ledger::calibrations(&self.read, namespace).await
    }

    async fn namespace_totals(&self, namespace: &str) -> Result<NamespaceTotals, StorageError> {
        sqlite_ledger::namespace_totals(&self.read, namespace).await
    }

    async fn store_totals(&self) -> Result<StoreTotals, StorageError> {
        sqlite_ledger::store_totals(&self.read).await
    }

    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError> {
        sqlite_search::pending(&self.read, limit).await
    }

    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError> {
        self.send(|reply| WriteCommand::Index(Box::new(batch), reply))
            .await
    }

    async fn index_lag(&self) -> Result<IndexLag, StorageError> {
        sqlite_search::lag(&self.read).await
    }

    async fn search(
        &self,
        expression: &str,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError> {
        sqlite_search::search(&self.read, expression, filter).await
    }

    async fn retention_rows(
        &self,
        filter: &PruneFilter,
        order: PruneOrder,
    ) -> Result<Vec<RetentionRow>, StorageError> {
        sqlite_admin::retention_rows(&self.read, filter, order).await
    }

    async fn remove_memories(
        &self,
        namespace: &str,
        ids: Vec<String>,
    ) -> Result<u64, StorageError> {
        let write = sqlite_admin::remove_memories(namespace.to_owned(), ids);
        self.send(|reply| WriteCommand::Admin(write, reply)).await
    }

    async fn expire_memories(&self, now: i64) -> Result<u64, StorageError> {
        let write = sqlite_admin::expire_memories(now);
        self.send(|reply| WriteCommand::Admin(write, reply)).await
    }

    async fn namespaces(&self) -> Result<Vec<String>, StorageError> {
        sqlite_admin::namespaces(&self.read).await
    }

    async fn unreferenced_objects(&self) -> Result<Vec<UnreferencedObject>, StorageError> {
        sqlite_admin::unreferenced_objects(&self.read).await
    }

    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError> {
        let write = sqlite_admin::remove_object_if_unreferenced(hash.to_owned(), idle_before);
        Ok(self.send(|reply| WriteCommand::Admin(write, reply)).await? > 0)
    }

    async fn objects_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectSummary>, StorageError> {
        sqlite_admin::objects_after(&self.read, after, limit).await
    }

    async fn memories_without_object(&self) -> Result<Vec<(String, String)>, StorageError> {
        sqlite_admin::memories_without_object(&self.read).await
    }

    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError> {
        let write = sqlite_admin::mark_corrupt(hash.to_owned(), detail.to_owned());
        self.send(|reply| WriteCommand::Admin(write, reply)).await
    }

    async fn ping(&self) -> Result<(), StorageError> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        if self.writer.is_closed() {
            return Err(StorageError::Unavailable("metadata writer stopped".into()));
        }
        Ok(())
    }

    async fn close(&self) {
        let task = self.writer_task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let (tx, rx) = oneshot::channel();
            if self.writer.send(WriteCommand::Shutdown(tx)).await.is_ok() {
                let _ = rx.await;
            }
            let _ = tokio::task::spawn_blocking(move || task.join()).await;
        }
        self.read.close().await;
    }
}

/// Reads a memory row selected with [`MEMORY_SELECT`].
pub(super) fn memory_from_row(row: &SqliteRow) -> Result<MemoryRecord, StorageError> {
    let tags_json: Option<String> = row.try_get("tags")?;
    let mut tags: Vec<String> = match tags_json {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| StorageError::Database(format!("bad tag list: {e}")))?,
        None => Vec::new(),
    };
    tags.sort();
    rows::memory_record(row, tags)
}

pub(super) use super::rows::{to_i64, to_u64};
