//! The ledger's tables and the size totals on PostgreSQL: batched additions
//! in one transaction, totals read through the pool.

use sqlx::{PgPool, Row};

use super::postgres::to_u64;
use super::postgres_puts::with_retry;
use super::rows;
use super::{
    CalibrationRow, LedgerBatch, LedgerCounter, NamespaceTotals, StoreTotals, UsageQuery, UsageRow,
};
use crate::storage::StorageError;

/// Adds counters and usage and sets calibrations, in one transaction.
pub(super) async fn write(pool: &PgPool, batch: &LedgerBatch) -> Result<(), StorageError> {
    if batch.is_empty() {
        return Ok(());
    }
    with_retry(|| async {
        let mut tx = pool.begin().await?;
        for c in &batch.counters {
            sqlx::query(
                "INSERT INTO ledger_counters (namespace, name, value, cost_usd) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (namespace, name) DO UPDATE SET value = ledger_counters.value + excluded.value, \
                 cost_usd = ledger_counters.cost_usd + excluded.cost_usd",
            )
            .bind(&c.namespace)
            .bind(&c.name)
            .bind(c.value)
            .bind(c.cost_usd)
            .execute(&mut *tx)
            .await?;
        }
        for u in &batch.usage {
            sqlx::query(
                "INSERT INTO ledger_usage (namespace, model, day, input_tokens, output_tokens, cost_usd, reports) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (namespace, model, day) DO UPDATE SET \
                 input_tokens = ledger_usage.input_tokens + excluded.input_tokens, \
                 output_tokens = ledger_usage.output_tokens + excluded.output_tokens, \
                 cost_usd = ledger_usage.cost_usd + excluded.cost_usd, \
                 reports = ledger_usage.reports + excluded.reports",
            )
            .bind(&u.namespace)
            .bind(&u.model)
            .bind(&u.day)
            .bind(u.input_tokens)
            .bind(u.output_tokens)
            .bind(u.cost_usd)
            .bind(u.reports)
            .execute(&mut *tx)
            .await?;
        }
        for c in &batch.calibrations {
            sqlx::query(
                "INSERT INTO ledger_calibration (namespace, model, factor, samples, updated_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (namespace, model) DO UPDATE SET \
                 factor = excluded.factor, samples = excluded.samples, updated_at = excluded.updated_at",
            )
            .bind(&c.namespace)
            .bind(&c.model)
            .bind(c.factor)
            .bind(c.samples)
            .bind(c.updated_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await
    })
    .await
}

/// The named counters of a namespace.
pub(super) async fn counters(
    pool: &PgPool,
    namespace: &str,
) -> Result<Vec<LedgerCounter>, StorageError> {
    let rows = sqlx::query(
        "SELECT namespace, name, value, cost_usd FROM ledger_counters WHERE namespace = $1 \
         ORDER BY name COLLATE \"C\"",
    )
    .bind(namespace)
    .fetch_all(pool)
    .await?;
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

/// Usage summed per namespace and model.
pub(super) async fn usage_totals(
    pool: &PgPool,
    query: &UsageQuery,
) -> Result<Vec<UsageRow>, StorageError> {
    let mut sql = sqlx::QueryBuilder::new(
        "SELECT namespace, model, MAX(day) AS day, SUM(input_tokens)::BIGINT AS input_tokens, \
         SUM(output_tokens)::BIGINT AS output_tokens, SUM(cost_usd) AS cost_usd, \
         SUM(reports)::BIGINT AS reports FROM ledger_usage WHERE TRUE",
    );
    if let Some(namespace) = &query.namespace {
        sql.push(" AND namespace = ").push_bind(namespace.clone());
    }
    if let Some(day) = &query.day {
        sql.push(" AND day = ").push_bind(day.clone());
    }
    sql.push(" GROUP BY namespace, model ORDER BY namespace, model COLLATE \"C\"");
    let rows = sql.build().fetch_all(pool).await?;
    rows.iter().map(rows::usage_row).collect()
}

/// Calibration factors of one namespace, or of all.
pub(super) async fn calibrations(
    pool: &PgPool,
    namespace: Option<&str>,
) -> Result<Vec<CalibrationRow>, StorageError> {
    let mut sql = sqlx::QueryBuilder::new(
        "SELECT namespace, model, factor, samples, updated_at FROM ledger_calibration",
    );
    if let Some(namespace) = namespace {
        sql.push(" WHERE namespace = ")
            .push_bind(namespace.to_owned());
    }
    sql.push(" ORDER BY namespace, model COLLATE \"C\"");
    let rows = sql.build().fetch_all(pool).await?;
    rows.iter().map(rows::calibration_row).collect()
}

/// Memory count and sizes of a namespace (each memory is a distinct object).
pub(super) async fn namespace_totals(
    pool: &PgPool,
    namespace: &str,
) -> Result<NamespaceTotals, StorageError> {
    let row = sqlx::query(
        "SELECT COUNT(*)::BIGINT AS memories, COALESCE(SUM(o.bytes), 0)::BIGINT AS bytes, \
         COALESCE(SUM(o.stored_bytes), 0)::BIGINT AS stored_bytes, \
         COALESCE(SUM(m.tokens), 0)::BIGINT AS tokens \
         FROM memories m JOIN objects o ON o.hash = m.id WHERE m.namespace = $1",
    )
    .bind(namespace)
    .fetch_one(pool)
    .await?;
    Ok(NamespaceTotals {
        memories: to_u64(row.try_get("memories")?),
        bytes: to_u64(row.try_get("bytes")?),
        stored_bytes: to_u64(row.try_get("stored_bytes")?),
        tokens: to_u64(row.try_get("tokens")?),
    })
}

/// Object count and sizes of the whole store.
pub(super) async fn store_totals(pool: &PgPool) -> Result<StoreTotals, StorageError> {
    let row = sqlx::query(
        "SELECT COUNT(*)::BIGINT AS objects, COALESCE(SUM(bytes), 0)::BIGINT AS bytes, \
         COALESCE(SUM(stored_bytes), 0)::BIGINT AS stored_bytes FROM objects",
    )
    .fetch_one(pool)
    .await?;
    Ok(StoreTotals {
        objects: to_u64(row.try_get("objects")?),
        bytes: to_u64(row.try_get("bytes")?),
        stored_bytes: to_u64(row.try_get("stored_bytes")?),
    })
}
