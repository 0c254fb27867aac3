//! Retention, GC and verify on PostgreSQL. Removing an object is race-safe
//! against a put of the same content from any replica: the check and the
//! delete run in one transaction holding the object row `FOR UPDATE`, which
//! a put holds `FOR SHARE` (or has just inserted) until it commits.

use sqlx::{PgPool, Row};

use super::super::sql::to_u64;
use super::puts::with_retry;
use crate::storage::StorageError;

/// Deletes the unpinned memories among `ids` of `namespace` (and their tags).
pub(super) async fn remove_memories(
    pool: &PgPool,
    namespace: &str,
    ids: &[String],
) -> Result<u64, StorageError> {
    if ids.is_empty() {
        return Ok(0);
    }
    with_retry(|| async {
        let mut tx = pool.begin().await?;
        let removed: Vec<String> = sqlx::query_scalar(
            "DELETE FROM memories WHERE namespace = $1 AND id = ANY($2) AND NOT pinned RETURNING id",
        )
        .bind(namespace)
        .bind(ids)
        .fetch_all(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM memory_tags WHERE namespace = $1 AND id = ANY($2)")
            .bind(namespace)
            .bind(&removed)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(removed.len() as u64)
    })
    .await
}

/// Deletes unpinned memories expired at `now` (and their tags).
pub(super) async fn expire_memories(pool: &PgPool, now: i64) -> Result<u64, StorageError> {
    with_retry(|| {
        sqlx::query(
            "WITH gone AS (DELETE FROM memories WHERE expires_at <= $1 AND NOT pinned RETURNING namespace, id), \
             tags AS (DELETE FROM memory_tags t USING gone g WHERE t.namespace = g.namespace AND t.id = g.id) \
             SELECT COUNT(*)::BIGINT FROM gone",
        )
        .bind(now)
        .fetch_one(pool)
    })
    .await
    .and_then(|row| Ok(to_u64(row.try_get(0)?)))
}

/// Deletes the object row and frames if still unreferenced and idle since
/// before `idle_before`, holding the row `FOR UPDATE` from check to delete.
pub(super) async fn remove_object_if_unreferenced(
    pool: &PgPool,
    hash: &str,
    idle_before: i64,
) -> Result<bool, StorageError> {
    with_retry(|| async {
        let mut tx = pool.begin().await?;
        // Waits for puts holding the row; then every memory they made is visible below.
        let locked = sqlx::query("SELECT 1 FROM objects WHERE hash = $1 FOR UPDATE")
            .bind(hash)
            .fetch_optional(&mut *tx)
            .await?;
        if locked.is_none() {
            tx.rollback().await?;
            return Ok(false);
        }
        let removed = sqlx::query(
            "DELETE FROM objects o WHERE o.hash = $1 \
             AND GREATEST(o.created_at, COALESCE((SELECT released_at FROM object_releases r WHERE r.hash = $1), 0)) < $2 \
             AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = $1)",
        )
        .bind(hash)
        .bind(idle_before)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if removed > 0 {
            sqlx::query("DELETE FROM frames WHERE hash = $1")
                .bind(hash)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM object_releases WHERE hash = $1")
                .bind(hash)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(removed > 0)
    })
    .await
}
