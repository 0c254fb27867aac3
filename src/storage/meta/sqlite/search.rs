//! The SQLite store's queue of objects waiting for the full-text index
//! (`search_pending`, filled by a trigger on new objects): what the indexer
//! is handed, how far behind it is, and the objects a commit of the index
//! takes off. The search itself is both stores' ([`super::super::sql::search`]).

use rusqlite::Connection;
use sqlx::{Row, SqlitePool};

use super::super::sql::to_u64;
use super::super::{IndexLag, PendingObject};
use crate::storage::StorageError;

/// Takes objects whose frames a commit made durable off the pending queue,
/// inside the writer's transaction.
pub(super) fn dequeue(conn: &Connection, hashes: &[String]) -> Result<(), StorageError> {
    let mut delete = conn.prepare_cached("DELETE FROM search_pending WHERE hash = ?1")?;
    for hash in hashes {
        delete.execute([hash])?;
    }
    Ok(())
}

/// Up to `limit` objects of the queue, oldest first.
pub(super) async fn pending(
    pool: &SqlitePool,
    limit: u32,
) -> Result<Vec<PendingObject>, StorageError> {
    let rows =
        sqlx::query("SELECT hash, bytes FROM search_pending ORDER BY queued_at, hash LIMIT ?1")
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?;
    rows.iter()
        .map(|r| {
            Ok(PendingObject {
                hash: r.try_get("hash")?,
                bytes: to_u64(r.try_get("bytes")?),
            })
        })
        .collect()
}

/// Objects and bytes in the queue.
pub(super) async fn lag(pool: &SqlitePool) -> Result<IndexLag, StorageError> {
    let row = sqlx::query("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM search_pending")
        .fetch_one(pool)
        .await?;
    Ok(IndexLag {
        objects: to_u64(row.try_get(0)?),
        bytes: to_u64(row.try_get(1)?),
    })
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
