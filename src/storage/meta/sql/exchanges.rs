//! Reading the exchange ledger: a namespace's exchanges newest first (with
//! the filters and the paging cursor), one exchange, a thread's chain.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::super::{ExchangeQuery, ExchangeRow};
use super::{Dialect, Reads, Statement};
use crate::storage::StorageError;

/// Columns of an exchange, its body delta included.
const WITH_BODY: &str = "SELECT id, namespace, thread, api, model, at_ms, status, parent, prefix, \
     suffix, body, figures FROM exchanges WHERE namespace = ";

/// Columns of an exchange in a list: the body is left out.
const LISTED: &str = "SELECT id, namespace, thread, api, model, at_ms, status, parent, prefix, \
     suffix, figures FROM exchanges WHERE namespace = ";

/// Reading the exchange ledger: the same SQL on either backend.
#[async_trait]
pub(in crate::storage::meta) trait ExchangeReads: Send + Sync {
    /// See [`crate::storage::meta::LedgerStore::exchanges`].
    async fn exchanges(&self, query: &ExchangeQuery) -> Result<Vec<ExchangeRow>, StorageError>;
    /// See [`crate::storage::meta::LedgerStore::exchange`].
    async fn exchange(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<ExchangeRow>, StorageError>;
    /// See [`crate::storage::meta::LedgerStore::thread_exchanges`].
    async fn thread_exchanges(
        &self,
        namespace: &str,
        thread: &str,
        up_to: &str,
    ) -> Result<Vec<ExchangeRow>, StorageError>;
}

#[async_trait]
impl<DB> ExchangeReads for Reads<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'r> Vec<u8>: Decode<'r, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn exchanges(&self, query: &ExchangeQuery) -> Result<Vec<ExchangeRow>, StorageError> {
        let mut sql = Statement::new(LISTED);
        sql.push_bind(query.namespace.clone());
        if let Some(thread) = &query.thread {
            sql.push(" AND thread = ").push_bind(thread.clone());
        }
        if let Some(model) = &query.model {
            sql.push(" AND model = ").push_bind(model.clone());
        }
        if let Some(since) = query.since_ms {
            sql.push(" AND at_ms >= ").push_bind(since);
        }
        if let Some(until) = query.until_ms {
            sql.push(" AND at_ms < ").push_bind(until);
        }
        if let Some(before) = &query.before {
            sql.push(" AND id < ").push_bind(before.clone());
        }
        sql.push(" ORDER BY id")
            .push(DB::BYTEWISE)
            .push(" DESC LIMIT ")
            .push_bind(i64::from(query.limit));
        let rows = sql.query().fetch_all(&self.pool).await?;
        rows.iter().map(|r| exchange_row::<DB>(r, false)).collect()
    }

    async fn exchange(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<Option<ExchangeRow>, StorageError> {
        let mut sql = Statement::new(WITH_BODY);
        sql.push_bind(namespace.to_owned())
            .push(" AND id = ")
            .push_bind(id.to_owned());
        let row = sql.query().fetch_optional(&self.pool).await?;
        row.map(|r| exchange_row::<DB>(&r, true)).transpose()
    }

    async fn thread_exchanges(
        &self,
        namespace: &str,
        thread: &str,
        up_to: &str,
    ) -> Result<Vec<ExchangeRow>, StorageError> {
        let mut sql = Statement::new(WITH_BODY);
        sql.push_bind(namespace.to_owned())
            .push(" AND thread = ")
            .push_bind(thread.to_owned())
            .push(" AND id <= ")
            .push_bind(up_to.to_owned())
            .push(" ORDER BY id")
            .push(DB::BYTEWISE);
        let rows = sql.query().fetch_all(&self.pool).await?;
        rows.iter().map(|r| exchange_row::<DB>(r, true)).collect()
    }
}

fn exchange_row<DB>(row: &DB::Row, with_body: bool) -> Result<ExchangeRow, StorageError>
where
    DB: Dialect,
    for<'q> String: Decode<'q, DB> + Type<DB>,
    for<'q> i64: Decode<'q, DB> + Type<DB>,
    for<'r> Vec<u8>: Decode<'r, DB> + Type<DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
{
    Ok(ExchangeRow {
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        thread: row.try_get("thread")?,
        api: row.try_get("api")?,
        model: row.try_get("model")?,
        at_ms: row.try_get("at_ms")?,
        status: row.try_get("status")?,
        parent: row.try_get("parent")?,
        prefix: row.try_get("prefix")?,
        suffix: row.try_get("suffix")?,
        body: if with_body {
            row.try_get("body")?
        } else {
            Vec::new()
        },
        figures: row.try_get("figures")?,
    })
}
