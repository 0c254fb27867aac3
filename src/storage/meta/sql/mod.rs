//! The SQL the two metadata stores speak alike, written once over
//! [`sqlx::Database`]: reading memories, objects, the ledger, the admin
//! views and the index queue ([`SharedReads`], on a [`Reads`]); the field
//! filters; row mapping. What differs between SQLite and PostgreSQL is named
//! by a [`Dialect`]. The store's roles are implemented once for every
//! [`Backend`], which holds only what truly differs: its connection,
//! migrations, write path and how its full-text index is fed. The search
//! over that index is written once too ([`search`]).

use sqlx::{Database, Pool};

use super::Layout;
use crate::storage::StorageError;

mod admin;
mod backend;
mod exchanges;
mod filters;
mod memories;
mod reports;
pub(super) mod rows;
pub(super) mod search;
mod statement;

pub(super) use admin::AdminReads;
pub(super) use backend::Backend;
pub(super) use exchanges::ExchangeReads;
pub(super) use filters::{push_filters, push_visible};
pub(super) use memories::MemoryReads;
pub(super) use reports::LedgerReads;
pub(super) use rows::{expiry, fresh_record, to_i64, to_u64};
pub(super) use statement::Statement;

/// `SELECT` of a memory joined with its object, with `$tags` as the
/// expression of its tag list: each dialect's [`Dialect::MEMORY_SELECT`].
macro_rules! memory_select {
    ($tags:literal) => {
        concat!(
            "SELECT m.namespace, m.id, m.type, m.subtype, m.mime, m.title, m.thread, \
             m.checkpoint, m.directory, m.tokens, m.token_method, m.tokens_settling, m.summary, m.created_at, \
             m.updated_at, m.last_accessed_at, m.access_count, m.pinned, m.expires_at, \
             m.corrupt, o.bytes, o.stored_bytes, o.lines, ",
            $tags,
            " AS tags FROM memories m JOIN objects o ON o.hash = m.id"
        )
    };
}
pub(super) use memory_select;

/// What the SQL of one backend spells its own way.
pub(super) trait Dialect: Database {
    /// Columns of a memory joined with its object (`memories m`, `objects o`),
    /// in the shape [`rows::memory_from_row`] reads; ends with the `FROM` clause.
    const MEMORY_SELECT: &'static str;
    /// The function giving the greater of two values.
    const GREATEST: &'static str;
    /// What makes an `ORDER BY` of text compare bytes (SQLite's default).
    const BYTEWISE: &'static str;
    /// What surrounds a bound JSON array of strings to make rows of one
    /// column, `value`: `(SELECT value FROM {0}$n{1})`.
    const JSON_VALUES: (&'static str, &'static str);
    /// The tags of a row selected with [`Dialect::MEMORY_SELECT`], sorted.
    fn tags(row: &Self::Row) -> Result<Vec<String>, StorageError>;
}

/// Every read both backends share, as one object a [`Backend`] hands out.
pub(super) trait SharedReads:
    MemoryReads + LedgerReads + ExchangeReads + AdminReads
{
}

impl<T: MemoryReads + LedgerReads + ExchangeReads + AdminReads> SharedReads for T {}

/// Reads of the metadata through a pool of either backend (the queries:
/// [`MemoryReads`], [`LedgerReads`], [`AdminReads`]); a backend holds one
/// beside its write path.
pub(super) struct Reads<DB: Database> {
    pool: Pool<DB>,
}

impl<DB: Database> Reads<DB> {
    /// Reads through `pool`.
    pub(super) fn new(pool: Pool<DB>) -> Self {
        Self { pool }
    }

    /// The pool, for the backend's own queries.
    pub(super) fn pool(&self) -> &Pool<DB> {
        &self.pool
    }
}

/// A stored layout name, or an error naming it.
pub(super) fn layout(text: &str) -> Result<Layout, StorageError> {
    Layout::parse(text).ok_or_else(|| StorageError::Database(format!("unknown layout `{text}`")))
}
