//! SQLite side of retention, GC and verify: the writes, as [`AdminWrite`]s
//! the single writer runs inside its transaction (the reads are shared,
//! [`super::super::sql`]).

use std::sync::Arc;

use rusqlite::Connection;

use super::writer::AdminWrite;
use crate::storage::meta::SettledTokens;

/// Sets a memory's settled token count ([`SettledTokens`]).
pub(super) fn settle_tokens(settled: SettledTokens) -> AdminWrite {
    Arc::new(move |conn: &Connection| {
        let settled_rows = conn
            .prepare_cached(
                "UPDATE memories SET tokens = ?1, token_method = ?2, summary = ?3, tokens_settling = 0 \
                 WHERE namespace = ?4 AND id = ?5 AND token_method = ?6 \
                 AND (tokens_settling = TRUE OR ?2 <> ?6)",
            )?
            .execute((
                i64::try_from(settled.tokens).unwrap_or(i64::MAX),
                &settled.token_method,
                &settled.summary,
                &settled.namespace,
                &settled.id,
                &settled.estimated_method,
            ))?;
        Ok(settled_rows as u64)
    })
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

/// Queues object `hash` for the full-text index again if it is stored
/// (answers 1 then): for an object collected and put again while its
/// documents were being deleted, which may have taken the new ones too.
pub(super) fn requeue_if_stored(hash: String) -> AdminWrite {
    Arc::new(move |conn: &Connection| {
        let queued = conn
            .prepare_cached(
                "INSERT INTO search_pending (hash, bytes, queued_at) \
                 SELECT hash, bytes, created_at FROM objects WHERE hash = ?1 \
                 ON CONFLICT DO NOTHING",
            )?
            .execute([&hash])?;
        Ok(queued as u64)
    })
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
