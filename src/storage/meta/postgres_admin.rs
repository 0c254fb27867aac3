//! Retention, GC and verify on PostgreSQL. Removing an object is race-safe
//! against a put of the same content from any replica: the check and the
//! delete run in one transaction holding the object row `FOR UPDATE`, which
//! a put holds `FOR SHARE` (or has just inserted) until it commits.

use sqlx::{PgPool, Row};

use super::postgres::{layout, to_u64};
use super::postgres_puts::with_retry;
use super::{ObjectSummary, PruneFilter, PruneOrder, RetentionRow, UnreferencedObject};
use crate::storage::StorageError;

/// Memories of the filter, every one (pinned too), first-to-remove first.
pub(super) async fn retention_rows(
    pool: &PgPool,
    filter: &PruneFilter,
    order: PruneOrder,
) -> Result<Vec<RetentionRow>, StorageError> {
    let mut sql = sqlx::QueryBuilder::new(
        "SELECT m.id, o.bytes, m.created_at, m.last_accessed_at, m.access_count, m.pinned \
         FROM memories m JOIN objects o ON o.hash = m.id WHERE m.namespace = ",
    );
    sql.push_bind(filter.namespace.clone());
    let exact = [
        ("m.type", &filter.kind),
        ("m.subtype", &filter.subtype),
        ("m.thread", &filter.thread),
        ("m.checkpoint", &filter.checkpoint),
        ("m.directory", &filter.directory),
    ];
    for (column, value) in exact {
        if let Some(value) = value {
            sql.push(format!(" AND {column} = "))
                .push_bind(value.clone());
        }
    }
    if let Some(tag) = &filter.tag {
        sql.push(" AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id AND t.tag = ")
            .push_bind(tag.clone())
            .push(")");
    }
    sql.push(match order {
        PruneOrder::Oldest => " ORDER BY m.created_at ASC, m.id ASC",
        PruneOrder::LeastAccessed => {
            " ORDER BY m.access_count ASC, COALESCE(m.last_accessed_at, m.created_at) ASC, m.created_at ASC, m.id ASC"
        }
    });
    let rows = sql.build().fetch_all(pool).await?;
    rows.iter()
        .map(|r| {
            Ok(RetentionRow {
                id: r.try_get("id")?,
                bytes: to_u64(r.try_get("bytes")?),
                created_at: r.try_get("created_at")?,
                last_accessed_at: r.try_get("last_accessed_at")?,
                access_count: r.try_get("access_count")?,
                pinned: r.try_get("pinned")?,
            })
        })
        .collect()
}

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

/// Namespaces that hold memories.
pub(super) async fn namespaces(pool: &PgPool) -> Result<Vec<String>, StorageError> {
    Ok(
        sqlx::query_scalar("SELECT DISTINCT namespace FROM memories ORDER BY namespace")
            .fetch_all(pool)
            .await?,
    )
}

/// Objects no memory refers to.
pub(super) async fn unreferenced_objects(
    pool: &PgPool,
) -> Result<Vec<UnreferencedObject>, StorageError> {
    let rows = sqlx::query(
        "SELECT o.hash, o.layout, o.stored_bytes, GREATEST(o.created_at, COALESCE(r.released_at, 0)) AS idle_since \
         FROM objects o LEFT JOIN object_releases r ON r.hash = o.hash \
         WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = o.hash) ORDER BY o.hash",
    )
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(UnreferencedObject {
                hash: r.try_get("hash")?,
                layout: layout(&r.try_get::<String, _>("layout")?)?,
                stored_bytes: to_u64(r.try_get("stored_bytes")?),
                idle_since: r.try_get("idle_since")?,
            })
        })
        .collect()
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

/// A page of object rows in hash order.
pub(super) async fn objects_after(
    pool: &PgPool,
    after: Option<&str>,
    limit: u32,
) -> Result<Vec<ObjectSummary>, StorageError> {
    let rows = sqlx::query(
        "SELECT hash, layout, stored_bytes FROM objects WHERE hash > $1 ORDER BY hash LIMIT $2",
    )
    .bind(after.unwrap_or(""))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(ObjectSummary {
                hash: r.try_get("hash")?,
                layout: layout(&r.try_get::<String, _>("layout")?)?,
                stored_bytes: to_u64(r.try_get("stored_bytes")?),
            })
        })
        .collect()
}

/// Memories whose object row is missing.
pub(super) async fn memories_without_object(
    pool: &PgPool,
) -> Result<Vec<(String, String)>, StorageError> {
    let rows = sqlx::query(
        "SELECT m.namespace, m.id FROM memories m \
         WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.hash = m.id) ORDER BY m.namespace, m.id",
    )
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect()
}
