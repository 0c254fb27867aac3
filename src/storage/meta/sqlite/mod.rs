//! SQLite metadata store (the embedded default): WAL, durable commits, group commit.
//!
//! Reads go through a small connection pool; every write goes through one
//! writer task that commits the writes arriving together in one transaction
//! (see [`writer`]).

use std::collections::HashSet;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, Sqlite};
use tokio::sync::{mpsc, oneshot};

use super::LedgerBatch;
use super::MemoryStore;
use super::fulltext::FullText;
use super::sql::search::blocking;
use super::sql::{self, Backend, Dialect, Reads, SharedReads, memory_select};
use super::{AccessUpdate, ImportedMemory, ListQuery, NewMemory, PutOutcome, SettledTokens};
use super::{Expr, FrameBatch, FrameWords, IndexLag, PendingObject, SearchRow};
use crate::storage::StorageError;
use writer::WriteCommand;

mod admin;
mod ledger;
mod portable;
mod puts;
mod search;
#[cfg(test)]
mod tests;
mod writer;

impl Dialect for Sqlite {
    const MEMORY_SELECT: &'static str = memory_select!(
        "(SELECT json_group_array(tag) FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id)"
    );
    const GREATEST: &'static str = "MAX";
    const BYTEWISE: &'static str = "";
    const JSON_VALUES: (&'static str, &'static str) = ("json_each(", ")");

    fn tags(row: &SqliteRow) -> Result<Vec<String>, StorageError> {
        let text: Option<String> = row.try_get("tags")?;
        let mut tags: Vec<String> = match text {
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| StorageError::Database(format!("bad tag list: {e}")))?,
            None => Vec::new(),
        };
        tags.sort();
        Ok(tags)
    }
}

/// Where the full-text index of the database at `path` lives: a directory
/// beside it (`meta.db` → `meta.db-fulltext`); `None` (in memory) for an
/// in-memory database.
fn fulltext_dir(path: &std::path::Path) -> Option<PathBuf> {
    let name = path.to_str().unwrap_or_default();
    if name.is_empty() || name == ":memory:" || name.starts_with("file::memory:") {
        return None;
    }
    let mut dir = path.as_os_str().to_owned();
    dir.push("-fulltext");
    Some(PathBuf::from(dir))
}

/// The SQLite implementation of [`MetaStore`].
pub struct SqliteMetaStore {
    read: Reads<Sqlite>,
    fulltext: Arc<FullText>,
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
            // 8 MB of pages per read connection (SQLite's default is 2 MB);
            // the kernel's page cache holds the rest of the file.
            .pragma("cache_size", "-8000");
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
        let (fulltext, created) = FullText::open(fulltext_dir(&path).as_deref())?;
        if created {
            // A new index (a new store, or one upgraded from the FTS5 index):
            // every object already stored is indexed again.
            sqlx::query(
                "INSERT INTO search_pending (hash, bytes, queued_at) \
                 SELECT hash, bytes, created_at FROM objects WHERE true ON CONFLICT DO NOTHING",
            )
            .execute(&read)
            .await?;
        }
        let (writer, task) = writer::spawn(&path)?;
        Ok(Self {
            read: Reads::new(read),
            fulltext: Arc::new(fulltext),
            writer,
            writer_task: std::sync::Mutex::new(Some(task)),
        })
    }

    /// Commits the full-text index when due (or whenever something waits,
    /// with `force`) and takes what it made durable off the pending queue.
    async fn commit_index(&self, force: bool) -> Result<(), StorageError> {
        let fulltext = self.fulltext.clone();
        let done = blocking(move || fulltext.commit(force, || None)).await?;
        if !done.is_empty() {
            self.send(|reply| WriteCommand::Dequeue(done, reply))
                .await?;
        }
        Ok(())
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
impl Backend for SqliteMetaStore {
    fn reads(&self) -> &dyn SharedReads {
        &self.read
    }

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

    async fn settle_tokens(&self, settled: SettledTokens) -> Result<bool, StorageError> {
        let write = admin::settle_tokens(settled);
        Ok(self.send(|reply| WriteCommand::Admin(write, reply)).await? > 0)
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

    async fn record_access(&self, updates: Vec<AccessUpdate>) -> Result<(), StorageError> {
        self.send(|reply| WriteCommand::Access(updates, reply))
            .await
    }

    async fn import_memory(&self, memory: ImportedMemory) -> Result<bool, StorageError> {
        self.send(|reply| WriteCommand::Import(Box::new(memory), reply))
            .await
    }

    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError> {
        let write = admin::mark_corrupt(hash.to_owned(), detail.to_owned());
        self.send(|reply| WriteCommand::Admin(write, reply)).await
    }

    async fn write_ledger(&self, batch: LedgerBatch) -> Result<(), StorageError> {
        self.send(|reply| WriteCommand::Ledger(Box::new(batch), reply))
            .await
    }

    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError> {
        self.commit_index(false).await?;
        let waiting: HashSet<String> = self.fulltext.uncommitted().into_iter().collect();
        let wanted = limit.saturating_add(u32::try_from(waiting.len()).unwrap_or(u32::MAX));
        let mut rows = search::pending(self.read.pool(), wanted).await?;
        rows.retain(|row| !waiting.contains(&row.hash));
        if rows.is_empty() && !waiting.is_empty() {
            // Nothing else to do: make the waiting objects searchable now.
            self.commit_index(true).await?;
            rows = search::pending(self.read.pool(), limit).await?;
        }
        rows.truncate(limit as usize);
        Ok(rows)
    }

    async fn index_lag(&self) -> Result<IndexLag, StorageError> {
        search::lag(self.read.pool()).await
    }

    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError> {
        let fulltext = self.fulltext.clone();
        blocking(move || fulltext.add(batch)).await?;
        // A large memory's text makes commits due on the way: they bound
        // what waits in the writer's queue.
        if self.fulltext.due() {
            self.commit_index(false).await?;
        }
        Ok(())
    }

    async fn search(
        &self,
        expression: &Expr,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError> {
        sql::search::search(&self.read, &self.fulltext, expression, filter).await
    }

    async fn frame_words(
        &self,
        hash: &str,
        words: &[String],
    ) -> Result<Option<Vec<FrameWords>>, StorageError> {
        let (fulltext, hash, words) = (self.fulltext.clone(), hash.to_owned(), words.to_vec());
        blocking(move || fulltext.frame_words(&hash, &words))
            .await
            .map(Some)
    }

    async fn remove_memories(
        &self,
        namespace: &str,
        ids: Vec<String>,
    ) -> Result<u64, StorageError> {
        let write = admin::remove_memories(namespace.to_owned(), ids);
        self.send(|reply| WriteCommand::Admin(write, reply)).await
    }

    async fn expire_memories(&self, now: i64) -> Result<u64, StorageError> {
        let write = admin::expire_memories(now);
        self.send(|reply| WriteCommand::Admin(write, reply)).await
    }

    async fn remove_object_if_unreferenced(
        &self,
        hash: &str,
        idle_before: i64,
    ) -> Result<bool, StorageError> {
        let write = admin::remove_object_if_unreferenced(hash.to_owned(), idle_before);
        let removed = self.send(|reply| WriteCommand::Admin(write, reply)).await? > 0;
        if removed {
            let (fulltext, gone) = (self.fulltext.clone(), hash.to_owned());
            blocking(move || fulltext.remove(&gone)).await?;
            // The same content put again (and indexed) since the row went
            // lost its new documents too: index it once more.
            let write = admin::requeue_if_stored(hash.to_owned());
            self.send(|reply| WriteCommand::Admin(write, reply)).await?;
        }
        Ok(removed)
    }

    async fn ping(&self) -> Result<(), StorageError> {
        sqlx::query("SELECT 1").execute(self.read.pool()).await?;
        if self.writer.is_closed() {
            return Err(StorageError::Unavailable("metadata writer stopped".into()));
        }
        Ok(())
    }

    async fn close(&self) {
        if let Err(e) = self.commit_index(true).await {
            tracing::warn!(error = %e, "could not commit the full-text index at shutdown");
        }
        let task = self.writer_task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let (tx, rx) = oneshot::channel();
            if self.writer.send(WriteCommand::Shutdown(tx)).await.is_ok() {
                let _ = rx.await;
            }
            let _ = tokio::task::spawn_blocking(move || task.join()).await;
        }
        self.read.pool().close().await;
    }
}
