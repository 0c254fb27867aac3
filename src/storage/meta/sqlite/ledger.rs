//! The ledger's tables in SQLite: batched additions on the writer thread
//! (the totals are read by the shared queries, [`super::super::sql`]).

use rusqlite::Connection;

use super::super::LedgerBatch;
use crate::storage::StorageError;

/// Removes the exchanges of every thread whose newest exchange is older
/// than `?1` (a thread goes whole: a body may be a delta of any earlier one).
const EXPIRE_EXCHANGES: &str = "DELETE FROM exchanges WHERE at_ms < ?1 AND NOT EXISTS \
     (SELECT 1 FROM exchanges later WHERE later.namespace = exchanges.namespace \
     AND later.thread = exchanges.thread AND later.at_ms >= ?1)";

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
    let mut exchange = conn.prepare_cached(
        "INSERT INTO exchanges (id, namespace, thread, api, model, at_ms, status, parent, prefix, \
         suffix, body, figures) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
         ON CONFLICT (id) DO NOTHING",
    )?;
    for e in &batch.exchanges {
        exchange.execute(rusqlite::params![
            e.id,
            e.namespace,
            e.thread,
            e.api,
            e.model,
            e.at_ms,
            e.status,
            e.parent,
            e.prefix,
            e.suffix,
            e.body,
            e.figures
        ])?;
    }
    if let Some(before) = batch.expire_exchanges_before {
        conn.execute(EXPIRE_EXCHANGES, [before])?;
    }
    Ok(())
}
