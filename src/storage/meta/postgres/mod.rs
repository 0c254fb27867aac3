//! PostgreSQL metadata store, for replicas that share one database: a
//! connection pool, one transaction per write, row locks where two replicas
//! could race (see [`puts`] and [`admin`]), and this replica's own
//! full-text index, fed from the shared objects ([`feed`]).
//! Same tables and meaning as the SQLite store (but no index queue); its
//! own migrations (migrations/postgres).

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Postgres, Row};

use super::fulltext::FullText;
use super::sql::search::blocking;
use super::sql::{self, Backend, Dialect, Reads, SharedReads, memory_select};
use super::{AccessUpdate, ImportedMemory, ListQuery, NewMemory, ObjectLease, PutOutcome};
use super::{Expr, LedgerBatch, SettledTokens};
use super::{FrameBatch, FrameWords, IndexLag, PendingObject, SearchRow};
use crate::storage::StorageError;
use feed::Feed;

mod admin;
mod feed;
#[cfg(test)]
mod feed_tests;
mod lease;
mod ledger;
mod puts;
#[cfg(test)]
mod tests;

impl Dialect for Postgres {
    const MEMORY_SELECT: &'static str = memory_select!(
        "ARRAY(SELECT t.tag FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id ORDER BY t.tag)"
    );
    const GREATEST: &'static str = "GREATEST";
    const BYTEWISE: &'static str = " COLLATE \"C\"";
    const JSON_VALUES: (&'static str, &'static str) =
        ("json_array_elements_text(", "::json) AS j(value)");

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
    /// This replica's full-text index and its place in the objects ([`feed`]).
    feed: Arc<Feed>,
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
    ///
    /// `index_dir` holds this replica's full-text index (built from the
    /// database when new, see [`feed`]); `None` keeps it in memory, built
    /// again at each start.
    pub async fn open(url: &str, index_dir: Option<&Path>) -> Result<Self, StorageError> {
        let options = PgConnectOptions::from_str(url)?;
        Self::open_with(options, index_dir).await
    }

    /// Like [`PgMetaStore::open`], with options built by the caller.
    pub async fn open_with(
        options: PgConnectOptions,
        index_dir: Option<&Path>,
    ) -> Result<Self, StorageError> {
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
        let (fulltext, _) = FullText::open(index_dir)?;
        let feed = Arc::new(Feed::open(&pool, fulltext).await?);
        Ok(Self {
            read: Reads::new(pool),
            leases,
            feed,
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

    async fn settle_tokens(&self, settled: SettledTokens) -> Result<bool, StorageError> {
        let done = sqlx::query(
            "UPDATE memories SET tokens = $1, token_method = $2, summary = $3, tokens_settling = FALSE \
             WHERE namespace = $4 AND id = $5 AND token_method = $6 \
             AND (tokens_settling = TRUE OR $2 <> $6)",
        )
        .bind(i64::try_from(settled.tokens).unwrap_or(i64::MAX))
        .bind(&settled.token_method)
        .bind(&settled.summary)
        .bind(&settled.namespace)
        .bind(&settled.id)
        .bind(&settled.estimated_method)
        .execute(self.read.pool())
        .await?;
        Ok(done.rows_affected() > 0)
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

    async fn search_pending(&self, limit: u32) -> Result<Vec<PendingObject>, StorageError> {
        self.feed.pending(self.read.pool(), limit).await
    }

    async fn index_lag(&self) -> Result<IndexLag, StorageError> {
        self.feed.lag(self.read.pool()).await
    }

    async fn index_frames(&self, batch: FrameBatch) -> Result<(), StorageError> {
        let (fulltext, hash, done) = (self.feed.fulltext.clone(), batch.hash.clone(), batch.done);
        blocking(move || fulltext.add(batch)).await?;
        if done {
            self.feed.done(hash);
        }
        // A large memory's text makes commits due on the way: they bound
        // what waits in the writer's queue.
        if self.feed.fulltext.due() {
            self.feed.commit(false).await?;
        }
        Ok(())
    }

    async fn search(
        &self,
        expression: &Expr,
        filter: &ListQuery,
    ) -> Result<Vec<SearchRow>, StorageError> {
        sql::search::search(&self.read, &self.feed.fulltext, expression, filter).await
    }

    async fn frame_words(
        &self,
        hash: &str,
        words: &[String],
    ) -> Result<Option<Vec<FrameWords>>, StorageError> {
        if !self.feed.holds(self.read.pool(), hash).await? {
            // Not indexed yet, or only as an earlier row of the same content
            // (whose frames may have been cut elsewhere): no frame is known.
            return Ok(Some(Vec::new()));
        }
        let (fulltext, hash, words) = (self.feed.fulltext.clone(), hash.to_owned(), words.to_vec());
        blocking(move || fulltext.frame_words(&hash, &words))
            .await
            .map(Some)
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
        let removed =
            admin::remove_object_if_unreferenced(self.read.pool(), hash, idle_before).await?;
        if removed {
            self.feed.forget(self.read.pool(), hash).await?;
        }
        Ok(removed)
    }

    async fn ping(&self) -> Result<(), StorageError> {
        sqlx::query("SELECT 1").execute(self.read.pool()).await?;
        Ok(())
    }

    async fn close(&self) {
        if let Err(e) = self.feed.commit(true).await {
            tracing::warn!(error = %e, "could not commit the full-text index at shutdown");
        }
        self.leases.close().await;
        self.read.pool().close().await;
    }
}
