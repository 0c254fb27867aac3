//! The ledger's tables and the size totals on PostgreSQL: batched additions
//! in one transaction, totals read through the pool.

use sqlx::PgPool;

use super::super::LedgerBatch;
use super::puts::with_retry;
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
        for e in &batch.exchanges {
            sqlx::query(
                "INSERT INTO exchanges (id, namespace, thread, api, model, at_ms, status, parent, \
                 prefix, suffix, body, figures) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
                 $11, $12) ON CONFLICT (id) DO NOTHING",
            )
            .bind(&e.id)
            .bind(&e.namespace)
            .bind(&e.thread)
            .bind(&e.api)
            .bind(&e.model)
            .bind(e.at_ms)
            .bind(e.status)
            .bind(&e.parent)
            .bind(e.prefix)
            .bind(e.suffix)
            .bind(&e.body)
            .bind(&e.figures)
            .execute(&mut *tx)
            .await?;
        }
        if let Some(before) = batch.expire_exchanges_before {
            sqlx::query(
                "DELETE FROM exchanges WHERE at_ms < $1 AND NOT EXISTS \
                 (SELECT 1 FROM exchanges later WHERE later.namespace = exchanges.namespace \
                 AND later.thread = exchanges.thread AND later.at_ms >= $1)",
            )
            .bind(before)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await
    })
    .await
}
