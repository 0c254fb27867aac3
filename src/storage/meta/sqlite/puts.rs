//! One put, as the SQLite writer thread runs it inside its batch transaction.
//! Records that are not known in full are read back by the store after the
//! commit, through the read pool, so that rows are mapped in one place.

use rusqlite::Connection;

use super::super::sql::{expiry, fresh_record, to_i64};
use super::super::{MemoryRecord, NewMemory, PageEntry};
use crate::storage::StorageError;

/// What a put wrote: whether the memory is new, and its record when it is
/// fully known without reading it back (a new memory over a new object).
pub(super) struct Written {
    /// The memory did not exist in the namespace before.
    pub created: bool,
    /// The object was not stored before this put.
    pub new_object: bool,
    /// The record, unless it has to be read back after the commit.
    pub record: Option<MemoryRecord>,
}

/// Stores the object if new, then creates the memory or merges into it.
pub(super) fn put(conn: &Connection, memory: &NewMemory) -> Result<Written, StorageError> {
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
    let expires_at = expiry(memory.now, f.ttl_seconds);
    let created = conn
        .prepare_cached(
            "INSERT INTO memories (namespace, id, type, subtype, mime, title, thread, checkpoint, directory, \
             tokens, summary, created_at, updated_at, token_method, pinned, expires_at, tokens_settling) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13, ?14, ?15, ?16) \
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
            memory.token_method,
            f.pinned,
            expires_at,
            memory.tokens_settling,
        ])?
        == 1;
    if !created {
        // Same content again: keep what was said first, fill what was missing.
        conn.prepare_cached(
            "UPDATE memories SET updated_at = ?1, subtype = COALESCE(subtype, ?2), title = COALESCE(title, ?3), \
             thread = COALESCE(thread, ?4), checkpoint = COALESCE(checkpoint, ?5), directory = COALESCE(directory, ?6), \
             pinned = MAX(pinned, ?9), \
             expires_at = CASE WHEN expires_at IS NULL OR ?10 IS NULL THEN NULL ELSE MAX(expires_at, ?10) END \
             WHERE namespace = ?7 AND id = ?8",
        )?
        .execute(rusqlite::params![memory.now, f.subtype, f.title, f.thread, f.checkpoint, f.directory, ns, id, f.pinned, expires_at])?;
    }
    let mut tag = conn.prepare_cached(
        "INSERT INTO memory_tags (namespace, id, tag) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
    )?;
    for t in &f.tags {
        tag.execute((ns, id, t))?;
    }
    let record = (created && new_object).then(|| fresh_record(memory));
    Ok(Written {
        created,
        new_object,
        record,
    })
}
