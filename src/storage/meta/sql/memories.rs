//! Reading memories and objects: one memory, ids by prefix, a page of a
//! listing, an object with its frame index.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::super::{Layout, ListQuery, MemoryRecord, ObjectRecord};
use super::rows::{frame_entry, memory_from_row, to_u64};
use super::{Dialect, Reads, Statement, layout, push_filters, push_visible};
use crate::storage::StorageError;

/// Reading memories and objects: the same SQL on either backend.
#[async_trait]
pub(in crate::storage::meta) trait MemoryReads: Send + Sync {
    /// One memory of a namespace, unless expired at `now`.
    async fn get(
        &self,
        namespace: &str,
        id: &str,
        now: i64,
    ) -> Result<Option<MemoryRecord>, StorageError>;
    /// Up to `limit` ids of the namespace starting with `prefix` (hex).
    async fn ids_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        limit: u32,
        now: i64,
    ) -> Result<Vec<String>, StorageError>;
    /// A page of memories not expired at `now`, newest first.
    async fn list(&self, query: &ListQuery, now: i64) -> Result<Vec<MemoryRecord>, StorageError>;
    /// An object with its frame index and inline data.
    async fn object(&self, hash: &str) -> Result<Option<ObjectRecord>, StorageError>;
    /// Up to `limit` memories whose count is settling, after `after`
    /// (namespace, id), in that order.
    async fn settling(
        &self,
        after: Option<(String, String)>,
        limit: u32,
    ) -> Result<Vec<MemoryRecord>, StorageError>;
}

#[async_trait]
impl<DB> MemoryReads for Reads<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'r> bool: Decode<'r, DB> + Type<DB>,
    for<'r> f64: Decode<'r, DB> + Type<DB>,
    for<'r> Vec<u8>: Decode<'r, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn get(
        &self,
        namespace: &str,
        id: &str,
        now: i64,
    ) -> Result<Option<MemoryRecord>, StorageError> {
        let mut sql = Statement::new(DB::MEMORY_SELECT);
        sql.push(" WHERE m.namespace = ")
            .push_bind(namespace.to_owned())
            .push(" AND m.id = ")
            .push_bind(id.to_owned());
        push_visible(&mut sql, now);
        let row = sql.query().fetch_optional(&self.pool).await?;
        row.as_ref().map(memory_from_row::<DB>).transpose()
    }

    async fn ids_with_prefix(
        &self,
        namespace: &str,
        prefix: &str,
        limit: u32,
        now: i64,
    ) -> Result<Vec<String>, StorageError> {
        // Every id starting with `prefix` sorts in [prefix, prefix + "g"):
        // ids compare bytewise (PostgreSQL's column is COLLATE "C").
        let mut sql = Statement::new("SELECT m.id FROM memories m WHERE m.namespace = ");
        sql.push_bind(namespace.to_owned())
            .push(" AND m.id >= ")
            .push_bind(prefix.to_owned())
            .push(" AND m.id < ")
            .push_bind(format!("{prefix}g"));
        push_visible(&mut sql, now);
        sql.push(" ORDER BY m.id LIMIT ")
            .push_bind(i64::from(limit));
        let rows = sql.query().fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| r.try_get::<String, _>(0).map_err(Into::into))
            .collect()
    }

    async fn list(&self, query: &ListQuery, now: i64) -> Result<Vec<MemoryRecord>, StorageError> {
        let mut sql = Statement::new(DB::MEMORY_SELECT);
        sql.push(" WHERE m.namespace = ")
            .push_bind(query.namespace.clone());
        push_visible(&mut sql, now);
        push_filters(&mut sql, query);
        if let Some((created, id)) = &query.after {
            sql.push(" AND (m.created_at < ")
                .push_bind(*created)
                .push(" OR (m.created_at = ")
                .push_bind(*created)
                .push(" AND m.id < ")
                .push_bind(id.clone())
                .push("))");
        }
        sql.push(" ORDER BY m.created_at DESC, m.id DESC LIMIT ")
            .push_bind(i64::from(query.limit));
        let rows = sql.query().fetch_all(&self.pool).await?;
        rows.iter().map(memory_from_row::<DB>).collect()
    }

    async fn settling(
        &self,
        after: Option<(String, String)>,
        limit: u32,
    ) -> Result<Vec<MemoryRecord>, StorageError> {
        let mut sql = Statement::new(DB::MEMORY_SELECT);
        // The same condition as the partial index `memories_settling`'s.
        sql.push(" WHERE m.tokens_settling = TRUE");
        if let Some((namespace, id)) = after {
            sql.push(" AND (m.namespace > ")
                .push_bind(namespace.clone())
                .push(" OR (m.namespace = ")
                .push_bind(namespace)
                .push(" AND m.id > ")
                .push_bind(id)
                .push("))");
        }
        sql.push(" ORDER BY m.namespace, m.id LIMIT ")
            .push_bind(i64::from(limit));
        let rows = sql.query().fetch_all(&self.pool).await?;
        rows.iter().map(memory_from_row::<DB>).collect()
    }

    async fn object(&self, hash: &str) -> Result<Option<ObjectRecord>, StorageError> {
        let mut sql = Statement::new(
            "SELECT hash, bytes, lines, stored_bytes, layout, data FROM objects WHERE hash = ",
        );
        sql.push_bind(hash.to_owned());
        let Some(row) = sql.query().fetch_optional(&self.pool).await? else {
            return Ok(None);
        };
        let layout = layout(&row.try_get::<String, _>("layout")?)?;
        let frames = if layout == Layout::Raw {
            Vec::new()
        } else {
            let mut sql = Statement::new(
                "SELECT content_offset, content_len, first_line, stored_offset, stored_len, pages \
                 FROM frames WHERE hash = ",
            );
            sql.push_bind(hash.to_owned()).push(" ORDER BY idx");
            let rows = sql.query().fetch_all(&self.pool).await?;
            rows.iter().map(frame_entry).collect::<Result<_, _>>()?
        };
        Ok(Some(ObjectRecord {
            hash: row.try_get("hash")?,
            bytes: to_u64(row.try_get("bytes")?),
            lines: to_u64(row.try_get("lines")?),
            stored_bytes: to_u64(row.try_get("stored_bytes")?),
            layout,
            data: row.try_get("data")?,
            frames,
        }))
    }
}
