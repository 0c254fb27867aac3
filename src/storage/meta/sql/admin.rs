//! Reading for retention, GC and verify: what a prune may remove, the
//! namespaces, objects no memory refers to, object pages, memories without
//! their object.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::super::{ListQuery, ObjectSummary, PruneOrder, RetentionRow, UnreferencedObject};
use super::rows::to_u64;
use super::{Dialect, Reads, Statement, layout, push_filters};
use crate::storage::StorageError;

/// Reading for retention, GC and verify: the same SQL on either backend.
#[async_trait]
pub(in crate::storage::meta) trait AdminReads: Send + Sync {
    /// Memories of the filter, every one (pinned too), first-to-remove first.
    async fn retention_rows(
        &self,
        filter: &ListQuery,
        order: PruneOrder,
    ) -> Result<Vec<RetentionRow>, StorageError>;
    /// Namespaces that hold memories.
    async fn namespaces(&self) -> Result<Vec<String>, StorageError>;
    /// Objects no memory refers to, with the time since which none has.
    async fn unreferenced_objects(&self) -> Result<Vec<UnreferencedObject>, StorageError>;
    /// Up to `limit` object rows with hashes after `after`, in hash order.
    async fn objects_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectSummary>, StorageError>;
    /// (namespace, id) of memories whose object row is missing.
    async fn memories_without_object(&self) -> Result<Vec<(String, String)>, StorageError>;
}

#[async_trait]
impl<DB> AdminReads for Reads<DB>
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
    async fn retention_rows(
        &self,
        filter: &ListQuery,
        order: PruneOrder,
    ) -> Result<Vec<RetentionRow>, StorageError> {
        let mut sql = Statement::new(
            "SELECT m.id, o.bytes, m.created_at, m.last_accessed_at, m.access_count, m.pinned \
             FROM memories m JOIN objects o ON o.hash = m.id WHERE m.namespace = ",
        );
        sql.push_bind(filter.namespace.clone());
        push_filters(&mut sql, filter);
        sql.push(match order {
            PruneOrder::Oldest => " ORDER BY m.created_at ASC, m.id ASC",
            PruneOrder::LeastAccessed => {
                " ORDER BY m.access_count ASC, COALESCE(m.last_accessed_at, m.created_at) ASC, \
                 m.created_at ASC, m.id ASC"
            }
        });
        let rows = sql.query().fetch_all(&self.pool).await?;
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

    async fn namespaces(&self) -> Result<Vec<String>, StorageError> {
        let rows = sqlx::query("SELECT DISTINCT namespace FROM memories ORDER BY namespace")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| r.try_get::<String, _>(0).map_err(Into::into))
            .collect()
    }

    async fn unreferenced_objects(&self) -> Result<Vec<UnreferencedObject>, StorageError> {
        let sql = format!(
            "SELECT o.hash, o.layout, o.stored_bytes, \
             {}(o.created_at, COALESCE(r.released_at, 0)) AS idle_since \
             FROM objects o LEFT JOIN object_releases r ON r.hash = o.hash \
             WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = o.hash) ORDER BY o.hash",
            DB::GREATEST
        );
        let rows = sqlx::query(&sql).fetch_all(&self.pool).await?;
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

    async fn objects_after(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectSummary>, StorageError> {
        let mut sql =
            Statement::new("SELECT hash, layout, stored_bytes FROM objects WHERE hash > ");
        sql.push_bind(after.unwrap_or("").to_owned())
            .push(" ORDER BY hash LIMIT ")
            .push_bind(i64::from(limit));
        let rows = sql.query().fetch_all(&self.pool).await?;
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

    async fn memories_without_object(&self) -> Result<Vec<(String, String)>, StorageError> {
        let rows = sqlx::query(
            "SELECT m.namespace, m.id FROM memories m \
             WHERE NOT EXISTS (SELECT 1 FROM objects o WHERE o.hash = m.id) \
             ORDER BY m.namespace, m.id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }
}
