//! Writes of memories on PostgreSQL: put, import, delete and read statistics,
//! each one transaction, retried when PostgreSQL aborts it for a deadlock or
//! a race it lost.
//!
//! A put and a garbage collection of the same object serialize on the object
//! row: the put inserts it (`ON CONFLICT DO NOTHING`) or holds it `FOR SHARE`
//! until it commits, the GC takes it `FOR UPDATE` before it checks for
//! memories (see [`super::admin::remove_object_if_unreferenced`]).

use std::future::Future;

use sqlx::{PgConnection, PgPool, Postgres};

use super::super::sql::{Dialect, expiry, fresh_record, rows::memory_from_row, to_i64};
use super::super::{AccessUpdate, ImportedMemory, MemoryRecord, NewMemory, PageEntry, PutOutcome};
use crate::storage::StorageError;

/// Attempts of a transaction PostgreSQL aborted for a race before giving up.
const ATTEMPTS: u32 = 5;

/// True for the errors a retry can get past: serialization failure,
/// deadlock, and a unique violation lost to a concurrent insert.
fn retryable(err: &sqlx::Error) -> bool {
    matches!(
        err,
        sqlx::Error::Database(db)
            if matches!(db.code().as_deref(), Some("40001" | "40P01" | "23505"))
    )
}

/// A database error as the store reports it (a full disk as [`StorageError::Full`]).
pub(super) fn storage_error(err: sqlx::Error) -> StorageError {
    match &err {
        // disk_full
        sqlx::Error::Database(db) if db.code().as_deref() == Some("53100") => StorageError::Full,
        _ => err.into(),
    }
}

/// Runs `attempt` (one whole transaction) again while it fails for a race.
pub(super) async fn with_retry<T, F, Fut>(mut attempt: F) -> Result<T, StorageError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, sqlx::Error>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(e) if tries < ATTEMPTS && retryable(&e) => {
                tracing::debug!(error = %e, tries, "metadata transaction lost a race; retrying");
                tries += 1;
            }
            result => return result.map_err(storage_error),
        }
    }
}

/// Stores the object if new and creates the memory, or merges into it.
pub(super) async fn put(pool: &PgPool, memory: &NewMemory) -> Result<PutOutcome, StorageError> {
    with_retry(|| async {
        let mut tx = pool.begin().await?;
        let (created, object_created) = write(&mut tx, memory).await?;
        let record = if created && object_created {
            fresh_record(memory)
        } else {
            read_back(&mut tx, &memory.namespace, &memory.object.hash).await?
        };
        tx.commit().await?;
        Ok(PutOutcome {
            created,
            object_created,
            record,
        })
    })
    .await
}

/// Writes an archived memory unless the namespace has it already; true when written.
pub(super) async fn import(pool: &PgPool, memory: &ImportedMemory) -> Result<bool, StorageError> {
    let put = memory.as_put();
    with_retry(|| async {
        let mut tx = pool.begin().await?;
        let (created, _) = write(&mut tx, &put).await?;
        if !created {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query(
            "UPDATE memories SET updated_at = $1, last_accessed_at = $2, access_count = $3, \
             expires_at = $4 WHERE namespace = $5 AND id = $6",
        )
        .bind(memory.updated_at)
        .bind(memory.last_accessed_at)
        .bind(memory.access_count)
        .bind(memory.expires_at)
        .bind(&memory.namespace)
        .bind(&memory.object.hash)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    })
    .await
}

/// The put itself, inside the caller's transaction: (memory created, object created).
async fn write(conn: &mut PgConnection, memory: &NewMemory) -> Result<(bool, bool), sqlx::Error> {
    let object_created = store_object(conn, memory).await?;
    let (ns, id, f) = (&memory.namespace, &memory.object.hash, &memory.fields);
    let expires_at = expiry(memory.now, f.ttl_seconds);
    let created = sqlx::query(
        "INSERT INTO memories (namespace, id, type, subtype, mime, title, thread, checkpoint, directory, \
         tokens, summary, created_at, updated_at, token_method, pinned, expires_at, tokens_settling) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14, $15, $16) \
         ON CONFLICT (namespace, id) DO NOTHING",
    )
    .bind(ns)
    .bind(id)
    .bind(&f.kind)
    .bind(&f.subtype)
    .bind(&f.mime)
    .bind(&f.title)
    .bind(&f.thread)
    .bind(&f.checkpoint)
    .bind(&f.directory)
    .bind(to_i64(memory.tokens))
    .bind(&memory.summary)
    .bind(memory.now)
    .bind(&memory.token_method)
    .bind(f.pinned)
    .bind(expires_at)
    .bind(memory.tokens_settling)
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1;
    if !created {
        // Same content again: keep what was said first, fill what was missing.
        sqlx::query(
            "UPDATE memories SET updated_at = $1, subtype = COALESCE(subtype, $2), title = COALESCE(title, $3), \
             thread = COALESCE(thread, $4), checkpoint = COALESCE(checkpoint, $5), \
             directory = COALESCE(directory, $6), pinned = pinned OR $9, \
             expires_at = CASE WHEN expires_at IS NULL OR $10::BIGINT IS NULL THEN NULL \
             ELSE GREATEST(expires_at, $10::BIGINT) END \
             WHERE namespace = $7 AND id = $8",
        )
        .bind(memory.now)
        .bind(&f.subtype)
        .bind(&f.title)
        .bind(&f.thread)
        .bind(&f.checkpoint)
        .bind(&f.directory)
        .bind(ns)
        .bind(id)
        .bind(f.pinned)
        .bind(expires_at)
        .execute(&mut *conn)
        .await?;
    }
    if !f.tags.is_empty() {
        sqlx::query(
            "INSERT INTO memory_tags (namespace, id, tag) SELECT $1, $2, t FROM UNNEST($3::TEXT[]) AS t \
             ON CONFLICT DO NOTHING",
        )
        .bind(ns)
        .bind(id)
        .bind(&f.tags)
        .execute(&mut *conn)
        .await?;
    }
    Ok((created, object_created))
}

/// Inserts the object row and its frames if new (true), or locks the existing
/// row until the transaction ends so that no GC deletes it under the put.
async fn store_object(conn: &mut PgConnection, memory: &NewMemory) -> Result<bool, sqlx::Error> {
    let object = &memory.object;
    for _ in 0..ATTEMPTS {
        let inserted = sqlx::query(
            "INSERT INTO objects (hash, bytes, lines, stored_bytes, layout, data, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (hash) DO NOTHING",
        )
        .bind(&object.hash)
        .bind(to_i64(object.bytes))
        .bind(to_i64(object.lines))
        .bind(to_i64(object.stored_bytes))
        .bind(object.layout.as_str())
        .bind(object.data.as_deref())
        .bind(memory.now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
            == 1;
        if inserted {
            insert_frames(conn, memory).await?;
            return Ok(true);
        }
        // Waits for a GC holding the row; gone afterwards means it was collected: insert again.
        let held = sqlx::query("SELECT 1 FROM objects WHERE hash = $1 FOR SHARE")
            .bind(&object.hash)
            .fetch_optional(&mut *conn)
            .await?;
        if held.is_some() {
            return Ok(false);
        }
    }
    Err(sqlx::Error::Protocol(format!(
        "object {} kept disappearing while it was being put",
        object.hash
    )))
}

async fn insert_frames(conn: &mut PgConnection, memory: &NewMemory) -> Result<(), sqlx::Error> {
    let frames = &memory.object.frames;
    if frames.is_empty() {
        return Ok(());
    }
    let idx: Vec<i64> = (0..frames.len()).map(|i| to_i64(i as u64)).collect();
    let content_offset: Vec<i64> = frames.iter().map(|f| to_i64(f.content_offset)).collect();
    let content_len: Vec<i64> = frames.iter().map(|f| i64::from(f.content_len)).collect();
    let first_line: Vec<i64> = frames.iter().map(|f| to_i64(f.first_line)).collect();
    let stored_offset: Vec<i64> = frames.iter().map(|f| to_i64(f.stored_offset)).collect();
    let stored_len: Vec<i64> = frames.iter().map(|f| i64::from(f.stored_len)).collect();
    let pages: Vec<Vec<u8>> = frames.iter().map(|f| PageEntry::encode(&f.pages)).collect();
    sqlx::query(
        "INSERT INTO frames (hash, idx, content_offset, content_len, first_line, stored_offset, stored_len, pages) \
         SELECT $1, * FROM UNNEST($2::BIGINT[], $3::BIGINT[], $4::BIGINT[], $5::BIGINT[], $6::BIGINT[], \
         $7::BIGINT[], $8::BYTEA[])",
    )
    .bind(&memory.object.hash)
    .bind(idx)
    .bind(content_offset)
    .bind(content_len)
    .bind(first_line)
    .bind(stored_offset)
    .bind(stored_len)
    .bind(pages)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The memory as the transaction sees it.
async fn read_back(
    conn: &mut PgConnection,
    namespace: &str,
    id: &str,
) -> Result<MemoryRecord, sqlx::Error> {
    let sql = format!(
        "{} WHERE m.namespace = $1 AND m.id = $2",
        Postgres::MEMORY_SELECT
    );
    let row = sqlx::query(&sql)
        .bind(namespace)
        .bind(id)
        .fetch_one(&mut *conn)
        .await?;
    memory_from_row::<Postgres>(&row).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// Deletes one memory and its tags; false when there was none.
pub(super) async fn delete(pool: &PgPool, namespace: &str, id: &str) -> Result<bool, StorageError> {
    with_retry(|| async {
        let mut tx = pool.begin().await?;
        let removed = sqlx::query("DELETE FROM memories WHERE namespace = $1 AND id = $2")
            .bind(namespace)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("DELETE FROM memory_tags WHERE namespace = $1 AND id = $2")
            .bind(namespace)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(removed > 0)
    })
    .await
}

/// Adds read statistics, all in one statement (several updates of one memory add up).
pub(super) async fn access(pool: &PgPool, updates: &[AccessUpdate]) -> Result<(), StorageError> {
    if updates.is_empty() {
        return Ok(());
    }
    let namespaces: Vec<&str> = updates.iter().map(|u| u.namespace.as_str()).collect();
    let ids: Vec<&str> = updates.iter().map(|u| u.id.as_str()).collect();
    let counts: Vec<i64> = updates.iter().map(|u| u.count).collect();
    let ats: Vec<i64> = updates.iter().map(|u| u.at).collect();
    with_retry(|| {
        sqlx::query(
            "UPDATE memories m SET access_count = m.access_count + u.count, \
             last_accessed_at = GREATEST(COALESCE(m.last_accessed_at, 0), u.at) \
             FROM (SELECT namespace, id, SUM(count)::BIGINT AS count, MAX(at) AS at \
                   FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::BIGINT[]) AS x(namespace, id, count, at) \
                   GROUP BY namespace, id) u \
             WHERE m.namespace = u.namespace AND m.id = u.id",
        )
        .bind(&namespaces)
        .bind(&ids)
        .bind(&counts)
        .bind(&ats)
        .execute(pool)
    })
    .await?;
    Ok(())
}
