//! Reading the ledger and the size totals: named counters, usage per model
//! and day, calibrations, a namespace's and the whole store's sizes.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

use super::super::{
    CalibrationRow, LedgerCounter, NamespaceTotals, StoreTotals, UsageQuery, UsageRow,
};
use super::rows::{calibration_row, to_u64, usage_row};
use super::{Dialect, Reads, Statement};
use crate::storage::StorageError;

/// Reading the ledger and the size totals: the same SQL on either backend.
#[async_trait]
pub(in crate::storage::meta) trait LedgerReads: Send + Sync {
    /// The named counters of a namespace, by name.
    async fn ledger_counters(&self, namespace: &str) -> Result<Vec<LedgerCounter>, StorageError>;
    /// Usage summed per namespace and model over the days the query selects.
    async fn usage_totals(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError>;
    /// Calibration factors of one namespace, or of all.
    async fn calibrations(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<CalibrationRow>, StorageError>;
    /// Memory count and sizes of a namespace. Each memory of a namespace is
    /// a distinct object (its id is the object's hash), so summing over
    /// memories sums over the distinct objects they reference.
    async fn namespace_totals(&self, namespace: &str) -> Result<NamespaceTotals, StorageError>;
    /// Object count and sizes of the whole store.
    async fn store_totals(&self) -> Result<StoreTotals, StorageError>;
}

#[async_trait]
impl<DB> LedgerReads for Reads<DB>
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
    async fn ledger_counters(&self, namespace: &str) -> Result<Vec<LedgerCounter>, StorageError> {
        let mut sql = Statement::new(
            "SELECT namespace, name, value, cost_usd FROM ledger_counters WHERE namespace = ",
        );
        sql.push_bind(namespace.to_owned())
            .push(" ORDER BY name")
            .push(DB::BYTEWISE);
        let rows = sql.query().fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| {
                Ok(LedgerCounter {
                    namespace: r.try_get("namespace")?,
                    name: r.try_get("name")?,
                    value: r.try_get("value")?,
                    cost_usd: r.try_get("cost_usd")?,
                })
            })
            .collect()
    }

    async fn usage_totals(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError> {
        let mut sql = Statement::new(
            "SELECT namespace, model, MAX(day) AS day, \
             CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
             CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, SUM(cost_usd) AS cost_usd, \
             CAST(SUM(reports) AS BIGINT) AS reports FROM ledger_usage WHERE 1 = 1",
        );
        if let Some(namespace) = &query.namespace {
            sql.push(" AND namespace = ").push_bind(namespace.clone());
        }
        if let Some(day) = &query.day {
            sql.push(" AND day = ").push_bind(day.clone());
        }
        sql.push(" GROUP BY namespace, model ORDER BY namespace, model")
            .push(DB::BYTEWISE);
        let rows = sql.query().fetch_all(&self.pool).await?;
        rows.iter().map(usage_row).collect()
    }

    async fn calibrations(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<CalibrationRow>, StorageError> {
        let mut sql = Statement::new(
            "SELECT namespace, model, factor, samples, updated_at FROM ledger_calibration",
        );
        if let Some(namespace) = namespace {
            sql.push(" WHERE namespace = ")
                .push_bind(namespace.to_owned());
        }
        sql.push(" ORDER BY namespace, model").push(DB::BYTEWISE);
        let rows = sql.query().fetch_all(&self.pool).await?;
        rows.iter().map(calibration_row).collect()
    }

    async fn namespace_totals(&self, namespace: &str) -> Result<NamespaceTotals, StorageError> {
        let mut sql = Statement::new(
            "SELECT COUNT(*) AS memories, CAST(COALESCE(SUM(o.bytes), 0) AS BIGINT) AS bytes, \
             CAST(COALESCE(SUM(o.stored_bytes), 0) AS BIGINT) AS stored_bytes, \
             CAST(COALESCE(SUM(m.tokens), 0) AS BIGINT) AS tokens \
             FROM memories m JOIN objects o ON o.hash = m.id WHERE m.namespace = ",
        );
        sql.push_bind(namespace.to_owned());
        let row = sql.query().fetch_one(&self.pool).await?;
        Ok(NamespaceTotals {
            memories: to_u64(row.try_get("memories")?),
            bytes: to_u64(row.try_get("bytes")?),
            stored_bytes: to_u64(row.try_get("stored_bytes")?),
            tokens: to_u64(row.try_get("tokens")?),
        })
    }

    async fn store_totals(&self) -> Result<StoreTotals, StorageError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS objects, CAST(COALESCE(SUM(bytes), 0) AS BIGINT) AS bytes, \
             CAST(COALESCE(SUM(stored_bytes), 0) AS BIGINT) AS stored_bytes FROM objects",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(StoreTotals {
            objects: to_u64(row.try_get("objects")?),
            bytes: to_u64(row.try_get("bytes")?),
            stored_bytes: to_u64(row.try_get("stored_bytes")?),
        })
    }
}
