//! The ledger's tables in SQLite: batched additions on the writer thread,
//! totals read through the read pool.

use rusqlite::Connection;
use sqlx::{Row, SqlitePool};

use super::rows;
use super::sqlite::to_u64;
use super::{
    CalibrationRow, LedgerBatch, LedgerCounter, NamespaceTotals, StoreTotals, UsageQuery, UsageRow,
};
use crate::storage::StorageError;

/// Adds counters and usage and sets calibrations (inside the writer's transaction).
pub(super) fn write(conn: &Connection, batch: &LedgerBatch) -> Result<(), StorageError> {
    let mut counter = conn.prepare_cached(
        "INSERT INTO ledger_counters (namespace, name, value, cost_usd) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (namespace, name) DO UPDATE SET value = value + excluded.value, \
         cost_usd = cost_usd + excluded.cost_usd",
    )?;
    for c in &batch.counters {
        counter.execute((&c.namespace, &c.name, c.value, c.cost_usd))?;
    }
    let mut usage = conn.prepare_cached(
        "INSERT INTO ledger_usage (namespace, model, day, input_tokens, output_tokens, cost_usd, reports) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (namespace, model, day) DO UPDATE SET \
         input_tokens = input_tokens + excluded.input_tokens, \
         output_tokens = output_tokens + excluded.output_tokens, \
         cost_usd = cost_usd + excluded.cost_usd, reports = reports + excluded.reports",
    )?;
    for u in &batch.usage {
        usage.execute((
            &u.namespace,
            &u.model,
            &u.day,
            u.input_tokens,
            u.output_tokens,
            u.cost_usd,
            u.reports,
        ))?;
    }
    let mut calibration = conn.prepare_cached(
        "INSERT INTO ledger_calibration (namespace, model, factor, samples, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (namespace, model) DO UPDATE SET \
         factor = excluded.factor, samples = excluded.samples, updated_at = excluded.updated_at",
    )?;
    for c in &batch.calibrations {
        calibration.execute((&c.namespace, &c.model, c.factor, c.samples, c.updated_at))?;
    }
    Ok(())
}

/// The named counters of a namespace.
pub(super) async fn counters(
    pool: &SqlitePool,
    namespace: &str,
) -> Result<Vec<LedgerCounter>, StorageError> {
    let rows = sqlx::query(
        "SELECT namespace, name, value, cost_usd FROM ledger_counters WHERE namespace = ? ORDER BY name",
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
    pool: &SqlitePool,
    query: &UsageQuery,
) -> Result<Vec<UsageRow>, StorageError> {
    let mut sql = sqlx::QueryBuilder::new(
        "SELECT namespace, model, MAX(day) AS day, SUM(input_tokens) AS input_tokens, \
         SUM(output_tokens) AS output_tokens, SUM(cost_usd) AS cost_usd, SUM(reports) AS reports \
         FROM ledger_usage WHERE 1 = 1",
    );
    if let Some(namespace) = &query.namespace {
        sql.push(" AND namespace = ").push_bind(namespace);
    }
    if let Some(day) = &query.day {
        sql.push(" AND day = ").push_bind(day);
    }
    sql.push(" GROUP BY namespace, model ORDER BY namespace, model");
    let rows = sql.build().fetch_all(pool).await?;
    rows.iter().map(rows::usage_row).collect()
}

/// Calibration factors of one namespace, or of all.
pub(super) async fn calibrations(
    pool: &SqlitePool,
    namespace: Option<&str>,
) -> Result<Vec<CalibrationRow>, StorageError> {
    let mut sql = sqlx::QueryBuilder::new(
        "SELECT namespace, model, factor, samples, updated_at FROM ledger_calibration",
    );
    if let Some(namespace) = namespace {
        sql.push(" WHERE namespace = ").push_bind(namespace);
    }
    sql.push(" ORDER BY namespace, model");
    let rows = sql.build().fetch_all(pool).await?;
    rows.iter().map(rows::calibration_row).collect()
}

/// Memory count and sizes of a namespace. Each memory of a namespace is a
/// distinct object (its id is the object's hash), so summing over memories
/// sums over the distinct objects they reference.
pub(super) async fn namespace_totals(
    pool: &SqlitePool,
    namespace: &str,
) -> Result<NamespaceTotals, StorageError> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS memories, COALESCE(SUM(o.bytes), 0) AS bytes, \
         COALESCE(SUM(o.stored_bytes), 0) AS stored_bytes, COALESCE(SUM(m.tokens), 0) AS tokens \
         FROM memories m JOIN objects o ON o.hash = m.id WHERE m.namespace = ?",
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
pub(super) async fn store_totals(pool: &SqlitePool) -> Result<StoreTotals, StorageError> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS objects, COALESCE(SUM(bytes), 0) AS bytes, \
         COALESCE(SUM(stored_bytes), 0) AS stored_bytes FROM objects",
    )
    .fetch_one(pool)
    .await?;
    Ok(StoreTotals {
        objects: to_u64(row.try_get("objects")?),
        bytes: to_u64(row.try_get("bytes")?),
        stored_bytes: to_u64(row.try_get("stored_bytes")?),
    })
}
