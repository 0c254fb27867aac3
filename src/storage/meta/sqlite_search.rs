//! Full-text search on SQLite: FTS5 rows per frame (written by the writer
//! thread), the pending queue, and the ranked query joined through the
//! caller's memories (so nothing of another namespace can match).

use rusqlite::Connection;
use sqlx::{QueryBuilder, Row, Sqlite, SqlitePool};

use super::sqlite::{MEMORY_SELECT, memory_from_row, to_u64};
use super::{FrameBatch, IndexLag, ListQuery, PendingObject, SearchRow};
use crate::storage::StorageError;

/// Adds a batch of frames to the index, inside the writer's transaction.
pub(super) fn index(conn: &Connection, batch: &FrameBatch) -> Result<(), StorageError> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM objects WHERE hash = ?1")?
        .exists([&batch.hash])?;
    if exists {
        let mut frame = conn.prepare_cached(
            "INSERT INTO search_frames (hash, idx) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        )?;
        let mut fts =
            conn.prepare_cached("INSERT INTO search_fts (rowid, body) VALUES (?1, ?2)")?;
        for f in &batch.frames {
            // A frame indexed before a restart is not indexed twice.
            if frame.execute((&batch.hash, i64::from(f.idx)))? == 1 {
                fts.execute((conn.last_insert_rowid(), &f.text))?;
            }
        }
    }
    if batch.done || !exists {
        conn.prepare_cached("DELETE FROM search_pending WHERE hash = ?1")?
            .execute([&batch.hash])?;
    }
    Ok(())
}

/// Objects waiting for the index, oldest first.
pub(super) async fn pending(
    pool: &SqlitePool,
    limit: u32,
) -> Result<Vec<PendingObject>, StorageError> {
    let rows =
        sqlx::query("SELECT hash, bytes FROM search_pending ORDER BY queued_at, hash LIMIT ?")
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

/// Objects and bytes waiting.
pub(super) async fn lag(pool: &SqlitePool) -> Result<IndexLag, StorageError> {
    let row = sqlx::query("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM search_pending")
        .fetch_one(pool)
        .await?;
    Ok(IndexLag {
        objects: to_u64(row.try_get(0)?),
        bytes: to_u64(row.try_get(1)?),
    })
}

/// Memories whose frames match `expression` (an FTS5 expression), best BM25 first.
pub(super) async fn search(
    pool: &SqlitePool,
    expression: &str,
    filter: &ListQuery,
) -> Result<Vec<SearchRow>, StorageError> {
    let mut sql: QueryBuilder<Sqlite> = QueryBuilder::new(
        // Materialized, so that bm25() runs in the plain FTS query it needs.
        "WITH hits AS MATERIALIZED (SELECT rowid, bm25(search_fts) AS score \
         FROM search_fts WHERE search_fts MATCH ",
    );
    sql.push_bind(expression.to_owned()).push(
        "), best AS (SELECT f.hash AS hash, MIN(h.score) AS score, \
         group_concat(f.idx, ',' ORDER BY h.score, f.idx) AS frames \
         FROM hits h JOIN search_frames f ON f.rowid = h.rowid GROUP BY f.hash) ",
    );
    sql.push(MEMORY_SELECT.replacen(
        "SELECT ",
        "SELECT b.score AS score, b.frames AS frames, ",
        1,
    ));
    sql.push(" JOIN best b ON b.hash = m.id WHERE m.namespace = ")
        .push_bind(filter.namespace.clone());
    push_filters(&mut sql, filter);
    sql.push(" ORDER BY b.score, m.id LIMIT ")
        .push_bind(i64::from(filter.limit));
    let rows = sql.build().fetch_all(pool).await?;
    rows.iter()
        .map(|row| {
            let frames: String = row.try_get("frames")?;
            Ok(SearchRow {
                record: memory_from_row(row)?,
                score: row.try_get("score")?,
                frames: frames.split(',').filter_map(|i| i.parse().ok()).collect(),
            })
        })
        .collect()
}

/// The field filters of a listing, on memories `m`.
fn push_filters(sql: &mut QueryBuilder<Sqlite>, query: &ListQuery) {
    let exact = [
        ("m.type", &query.kind),
        ("m.subtype", &query.subtype),
        ("m.thread", &query.thread),
        ("m.checkpoint", &query.checkpoint),
        ("m.directory", &query.directory),
    ];
    for (column, value) in exact {
        if let Some(value) = value {
            sql.push(format!(" AND {column} = "))
                .push_bind(value.clone());
        }
    }
    if let Some(tag) = &query.tag {
        sql.push(" AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.namespace = m.namespace AND t.id = m.id AND t.tag = ")
            .push_bind(tag.clone())
            .push(")");
    }
    if let Some(since) = query.since {
        sql.push(" AND m.created_at >= ").push_bind(since);
    }
    if let Some(until) = query.until {
        sql.push(" AND m.created_at < ").push_bind(until);
    }
}

#[cfg(test)]
mod tests {
    use super::super::MetaStore;
    use super::super::sqlite::SqliteMetaStore;
    use super::*;

    #[tokio::test]
    async fn an_empty_index_answers_a_search_with_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("meta.db").display());
        let store = SqliteMetaStore::open(&url).await.unwrap();
        let filter = ListQuery {
            namespace: "n".into(),
            limit: 10,
            ..ListQuery::default()
        };
        assert!(store.search("\"zebra\"", &filter).await.unwrap().is_empty());
        assert_eq!(store.index_lag().await.unwrap(), IndexLag::default());
        let object = super::super::ObjectRecord {
            hash: "ab".repeat(32),
            bytes: 12,
            lines: 1,
            stored_bytes: 12,
            layout: super::super::Layout::Raw,
            data: Some(b"zebra zebra\n".to_vec()),
            frames: Vec::new(),
        };
        store
            .put(super::super::NewMemory {
                namespace: "n".into(),
                fields: super::super::MemoryFields::default(),
                tokens: 3,
                token_method: "x".into(),
                summary: "s".into(),
                now: 1,
                object,
            })
            .await
            .unwrap();
        assert_eq!(store.index_lag().await.unwrap().objects, 1);
        let batch = FrameBatch {
            hash: "ab".repeat(32),
            frames: vec![super::super::IndexedFrame {
                idx: 0,
                text: "zebra zebra".into(),
            }],
            done: true,
        };
        store.index_frames(batch.clone()).await.unwrap();
        store.index_frames(batch).await.unwrap();
        assert_eq!(store.index_lag().await.unwrap().objects, 0);
        let rows = store.search("\"zebra\"", &filter).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].frames, [0]);
        store.close().await;
    }
}
