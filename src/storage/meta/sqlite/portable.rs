//! Import of an archived memory, as the SQLite writer thread runs it inside
//! its batch transaction: the object (if new) and the memory with the
//! archive's metadata, or nothing when the memory is already there.

use rusqlite::{Connection, OptionalExtension};

use super::super::ImportedMemory;
use super::puts;
use crate::storage::StorageError;

/// Writes an archived memory unless the namespace has it already; true when written.
pub(super) fn import(conn: &Connection, memory: &ImportedMemory) -> Result<bool, StorageError> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM memories WHERE namespace = ?1 AND id = ?2")?
        .query_row((&memory.namespace, &memory.object.hash), |_| Ok(()))
        .optional()?
        .is_some();
    if exists {
        return Ok(false);
    }
    puts::put(conn, &memory.as_put())?;
    conn.prepare_cached(
        "UPDATE memories SET updated_at = ?1, last_accessed_at = ?2, access_count = ?3, expires_at = ?6 \
         WHERE namespace = ?4 AND id = ?5",
    )?
    .execute(rusqlite::params![
        memory.updated_at,
        memory.last_accessed_at,
        memory.access_count,
        memory.namespace,
        memory.object.hash,
        memory.expires_at,
    ])?;
    Ok(true)
}
