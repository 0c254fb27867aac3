//! One put, as the SQLite writer thread runs it inside its batch transaction.

use rusqlite::{Connection, OptionalExtension, Row};

use super::sqlite::{MEMORY_SELECT, to_i64, to_u64};
use super::{MemoryFields, MemoryRecord, NewMemory, PageEntry, PutOutcome};
use crate::storage::StorageError;

/// Stores the object if new, then creates the memory or merges into it.
pub(super) fn put(conn: &Connection, memory: &NewMemory) -> Result<PutOutcome, StorageError> {
    let object = &memory.object;
    let new_object =
        conn.prepare_cached(
            "INSERT INTO objects (hash, bytes, lines, stored_bytes, layout, data, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (hash) DO NOTHING",
        )?
        .execute((
            &object.hash,
            to_i64(object.bytes),
            to_i64(object.lines),
            to_i64(object.stored_bytes),
            object.layout.as_str(),
            object.data.as_deref(),
            memory.now,
        ))? == 1;
    if new_object {
        let mut insert = conn.prepare_cached(
            "INSERT INTO frames (hash, idx, content_offset, content_len, first_line, stored_offset, stored_len, pages) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (idx, frame) in object.frames.iter().enumerate() {
            insert.execute((
                &object.hash,
                to_i64(idx as u64),
                to_i64(frame.content_offset),
                i64::from(frame.content_len),
                to_i64(frame.first_line),
                to_i64(frame.stored_offset),
                i64::from(frame.stored_len),
                PageEntry::encode(&frame.pages),
            ))?;
        }
    }
    let (ns, id, f) = (&memory.namespace, &object.hash, &memory.fields);
    let created = conn
        .prepare_cached(
            "INSERT INTO memories (namespace, id, type, subtype, mime, title, thread, checkpoint, directory, \
             tokens, summary, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12) \
             ON CONFLICT (namespace, id) DO NOTHING",
        )?
        .execute(rusqlite::params![
            ns,
            id,
            f.kind,
            f.subtype,
            f.mime,
            f.title,
            f.thread,
            f.checkpoint,
            f.directory,
            to_i64(memory.tokens),
            memory.summary,
            memory.now,
        ])?
        == 1;
    if !created {
        // Same content again: keep what was said first, fill what was missing.
        conn.prepare_cached(
            "UPDATE memories SET updated_at = ?1, subtype = COALESCE(subtype, ?2), title = COALESCE(title, ?3), \
             thread = COALESCE(thread, ?4), checkpoint = COALESCE(checkpoint, ?5), directory = COALESCE(directory, ?6) \
             WHERE namespace = ?7 AND id = ?8",
        )?
        .execute(rusqlite::params![memory.now, f.subtype, f.title, f.thread, f.checkpoint, f.directory, ns, id])?;
    }
    let mut tag = conn.prepare_cached(
        "INSERT INTO memory_tags (namespace, id, tag) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
    )?;
    for t in &f.tags {
        tag.execute((ns, id, t))?;
    }
    let record = if created && new_object {
        fresh_record(memory)
    } else {
        read_back(conn, ns, id)?
    };
    Ok(PutOutcome { created, record })
}

/// The record of a memory created over a new object: everything is known already.
fn fresh_record(put: &NewMemory) -> MemoryRecord {
    MemoryRecord {
        namespace: put.namespace.clone(),
        id: put.object.hash.clone(),
        fields: put.fields.clone(),
        bytes: put.object.bytes,
        stored_bytes: put.object.stored_bytes,
        lines: put.object.lines,
        tokens: put.tokens,
        summary: put.summary.clone(),
        created_at: put.now,
        updated_at: put.now,
        last_accessed_at: None,
        access_count: 0,
    }
}

fn read_back(conn: &Connection, ns: &str, id: &str) -> Result<MemoryRecord, StorageError> {
    let sql = format!("{MEMORY_SELECT} WHERE m.namespace = ?1 AND m.id = ?2");
    conn.prepare_cached(&sql)?
        .query_row((ns, id), record_from_row)
        .optional()?
        .ok_or_else(|| {
            StorageError::Database(format!("memory {id} vanished inside its own transaction"))
        })
}

/// Reads a row selected with [`MEMORY_SELECT`] (the writer's twin of `sqlite::memory_from_row`).
fn record_from_row(row: &Row<'_>) -> rusqlite::Result<MemoryRecord> {
    let tags_json: Option<String> = row.get("tags")?;
    let mut tags: Vec<String> = tags_json
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    tags.sort();
    Ok(MemoryRecord {
        namespace: row.get("namespace")?,
        id: row.get("id")?,
        fields: MemoryFields {
            kind: row.get("type")?,
            subtype: row.get("subtype")?,
            mime: row.get("mime")?,
            title: row.get("title")?,
            tags,
            thread: row.get("thread")?,
            checkpoint: row.get("checkpoint")?,
            directory: row.get("directory")?,
        },
        bytes: to_u64(row.get("bytes")?),
        stored_bytes: to_u64(row.get("stored_bytes")?),
        lines: to_u64(row.get("lines")?),
        tokens: to_u64(row.get("tokens")?),
        summary: row.get("summary")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
        last_accessed_at: row.get("last_accessed_at")?,
        access_count: row.get("access_count")?,
    })
}
