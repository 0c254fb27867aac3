//! SQLite side of retention, GC and verify: reads through the pool, writes as
//! [`AdminWrite`]s the single writer runs inside its transaction.

use std::sync::Arc;

use rusqlite::Connection;
use sqlx::{Row, SqlitePool};

use super::sqlite::to_u64;
use super::sqlite_writer::AdminWrite;
use super::{Layout, ObjectSummary, PruneFilter, PruneOrder, RetentionRow, UnreferencedObject};
use crate::storage::StorageError;

/// Memories of the filter, every one (pinned too), first-to-remove first.
pub(super) async fn retention_rows(
    pool: &SqlitePool,
    filter: &PruneFilter,
    order: PruneOrder,
) -> Result<Vec<RetentionRow>, StorageError> {
    let mut sql = sqlx::QueryBuilder::new(
        "SELECT m.id, o.bytes, m.created_at, m.last_accessed_at, m.access_count, m.pinned \
         FROM memories m JOIN objects o ON o.hash = m.id WHERE m.namespace = ",
    );
    sql.push_bind(&filter.namespace);
    let exact = [
        ("m.type", &filter.kind),
        ("m.subtype", &filter.subtype),
        ("m.thread", &filter.thread),
        ("m.checkpoint", &filter.checkpoint),
        ("m.directory", &filter.directory),
    ];
    for (column, value) in exact {
        if let Some(value) = value {
            sql.push(format!(" AND {column} = ")).push_bind(value);
        }
    }
    if let Some(tag) = &filter.tag {
        sql.push(" AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id AND t.tag = ")
            .push_bind(tag)
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

/// Deletes the unpinned memories among `ids` of `namespace`.
pub(super) fn remove_memories(namespace: String, ids: Vec<String>) -> AdminWrite {
    Arc::new(move |conn: &Connection| {
        let mut memory = conn.prepare_cached(
            "DELETE FROM memories WHERE namespace = ?1 AND id = ?2 AND pinned = 0",
        )?;
        let mut tags =
            conn.prepare_cached("DELETE FROM memory_tags WHERE namespace = ?1 AND id = ?2")?;
        let mut removed = 0;
        for id in &ids {
            if memory.execute((&namespace, id))? > 0 {
                tags.execute((&namespace, id))?;
                removed += 1;
            }
        }
        Ok(removed)
    })
}

/// Deletes unpinned memories expired at `now`.
pub(super) fn expire_memories(now: i64) -> AdminWrite {
    Arc::new(move |conn: &Connection| {
        conn.prepare_cached(
            "DELETE FROM memory_tags WHERE (namespace, id) IN \
             (SELECT namespace, id FROM memories WHERE expires_at <= ?1 AND pinned = 0)",
        )?
        .execute([now])?;
        let removed = conn
            .prepare_cached("DELETE FROM memories WHERE expires_at <= ?1 AND pinned = 0")?
            .execute([now])?;
        Ok(removed as u64)
    })
}

/// Namespaces that hold memories.
pub(super) async fn namespaces(pool: &SqlitePool) -> Result<Vec<String>, StorageError> {
    let rows = sqlx::query("SELECT DISTINCT namespace FROM memories ORDER BY namespace")
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|r| r.try_get::<String, _>(0).map_err(Into::into))
        .collect()
}

fn layout(text: &str) -> Result<Layout, StorageError> {
    Layout::parse(text).ok_or_else(|| StorageError::Database(format!("unknown layout `{text}`")))
}

/// Objects no memory refers to.
pub(super) async fn unreferenced_objects(
    pool: &SqlitePool,
) -> Result<Vec<UnreferencedObject>, StorageError> {
    let rows = sqlx::query(
        "SELECT o.hash, o.layout, o.stored_bytes, MAX(o.created_at, COALESCE(r.released_at, 0)) AS idle_since \
         FROM objects o LEFT JOIN object_releases r ON r.hash = o.hash WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = o.hash) ORDER BY o.hash",
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

/// Deletes the object row and frames if still unreferenced and idle since before `idle_before`.
pub(super) fn remove_object_if_unreferenced(hash: String, idle_before: i64) -> AdminWrite {
    Arc::new(move |conn: &Connection| {
        let removed = conn
            .prepare_cached(
                "DELETE FROM objects WHERE hash = ?1 \
                 AND MAX(created_at, COALESCE((SELECT released_at FROM object_releases r WHERE r.hash = ?1), 0)) < ?2 \
                 AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = ?1)",
            )?
            .execute((&hash, idle_before))?;
        if removed > 0 {
            conn.prepare_cached("DELETE FROM frames WHERE hash = ?1")?
                .execute([&hash])?;
            conn.prepare_cached("DELETE FROM object_releases WHERE hash = ?1")?
                .execute([&hash])?;
        }
        Ok(removed as u64)
    })
}

/// A page of object rows in hash order.
pub(super) async fn objects_after(
    pool: &SqlitePool,
    after: Option<&str>,
    limit: u32,
) -> Result<Vec<ObjectSummary>, StorageError> {
    let rows = sqlx::query(
        "SELECT hash, layout, stored_bytes FROM objects WHERE hash > ? ORDER BY hash LIMIT ?",
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
    pool: &SqlitePool,
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

/// Marks every memory of `hash` corrupt.
pub(super) fn mark_corrupt(hash: String, detail: String) -> AdminWrite {
    Arc::new(move |conn: &Connection| {
        let marked = conn
            .prepare_cached("UPDATE memories SET corrupt = ?1 WHERE id = ?2")?
            .execute((&detail, &hash))?;
        Ok(marked as u64)
    })
}
