//! Ledger writes waiting for the next flush, merged in memory so that a busy
//! namespace costs one row update per flush, not one per request.

use std::collections::HashMap;

use crate::storage::meta::{CalibrationRow, ExchangeRow, LedgerBatch, LedgerCounter, UsageRow};

/// Most exchanges waiting for a flush: beyond, the oldest are dropped (and
/// counted) rather than memory growing while the store cannot be written.
pub(super) const MAX_PENDING_EXCHANGES: usize = 10_000;

/// Additions and settings not yet written.
#[derive(Default)]
pub(super) struct Pending {
    counters: HashMap<(String, String), (i64, f64)>,
    usage: HashMap<(String, String, String), UsageRow>,
    calibrations: HashMap<(String, String), CalibrationRow>,
    exchanges: Vec<ExchangeRow>,
    expire_exchanges_before: Option<i64>,
}

impl Pending {
    /// Adds to a named counter of a namespace.
    pub fn add_counter(&mut self, namespace: &str, name: &str, value: i64, cost_usd: f64) {
        let entry = self
            .counters
            .entry((namespace.to_owned(), name.to_owned()))
            .or_default();
        entry.0 = entry.0.saturating_add(value);
        entry.1 += cost_usd;
    }

    /// Adds usage of a (namespace, model, day).
    pub fn add_usage(&mut self, row: UsageRow) {
        let key = (row.namespace.clone(), row.model.clone(), row.day.clone());
        match self.usage.get_mut(&key) {
            Some(sum) => {
                sum.input_tokens = sum.input_tokens.saturating_add(row.input_tokens);
                sum.output_tokens = sum.output_tokens.saturating_add(row.output_tokens);
                sum.cost_usd += row.cost_usd;
                sum.reports = sum.reports.saturating_add(row.reports);
            }
            None => {
                self.usage.insert(key, row);
            }
        }
    }

    /// Sets the calibration of a (namespace, model) (the newest setting wins).
    pub fn set_calibration(&mut self, row: CalibrationRow) {
        let key = (row.namespace.clone(), row.model.clone());
        match self.calibrations.get(&key) {
            Some(newer) if newer.updated_at > row.updated_at => {}
            _ => {
                self.calibrations.insert(key, row);
            }
        }
    }

    /// Adds an exchange; answers false when the queue was full and the
    /// oldest waiting exchange was dropped to make room.
    pub fn add_exchange(&mut self, row: ExchangeRow) -> bool {
        let room = self.exchanges.len() < MAX_PENDING_EXCHANGES;
        if !room {
            self.exchanges.remove(0);
        }
        self.exchanges.push(row);
        room
    }

    /// Removes, at the next write, the threads whose newest exchange is older than `before_ms`.
    pub fn expire_exchanges(&mut self, before_ms: i64) {
        self.expire_exchanges_before = Some(before_ms);
    }

    /// Everything pending, leaving nothing behind.
    pub fn take(&mut self) -> LedgerBatch {
        LedgerBatch {
            counters: self
                .counters
                .drain()
                .map(|((namespace, name), (value, cost_usd))| LedgerCounter {
                    namespace,
                    name,
                    value,
                    cost_usd,
                })
                .collect(),
            usage: self.usage.drain().map(|(_, row)| row).collect(),
            calibrations: self.calibrations.drain().map(|(_, row)| row).collect(),
            exchanges: std::mem::take(&mut self.exchanges),
            expire_exchanges_before: self.expire_exchanges_before.take(),
        }
    }

    /// Puts back a batch whose write failed, merged with what came since.
    pub fn restore(&mut self, batch: LedgerBatch) {
        for c in batch.counters {
            self.add_counter(&c.namespace, &c.name, c.value, c.cost_usd);
        }
        for row in batch.usage {
            self.add_usage(row);
        }
        for row in batch.calibrations {
            self.set_calibration(row);
        }
        let newer = std::mem::take(&mut self.exchanges);
        for row in batch.exchanges.into_iter().chain(newer) {
            self.add_exchange(row);
        }
        if let Some(before) = batch.expire_exchanges_before {
            let later = self.expire_exchanges_before.unwrap_or(before).max(before);
            self.expire_exchanges_before = Some(later);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(tokens: i64) -> UsageRow {
        UsageRow {
            namespace: "ns".into(),
            model: "gpt-4o".into(),
            day: "2026-01-01".into(),
            input_tokens: tokens,
            output_tokens: 1,
            cost_usd: 0.5,
            reports: 1,
        }
    }

    #[test]
    fn additions_merge_and_a_failed_batch_comes_back() {
        let mut pending = Pending::default();
        pending.add_counter("ns", "puts", 1, 0.0);
        pending.add_counter("ns", "puts", 2, 0.0);
        pending.add_usage(usage(10));
        pending.add_usage(usage(5));
        let batch = pending.take();
        assert_eq!(batch.counters.len(), 1);
        assert_eq!(batch.counters[0].value, 3);
        assert_eq!(batch.usage[0].input_tokens, 15);
        assert_eq!(batch.usage[0].reports, 2);
        assert!(pending.take().is_empty());
        pending.add_counter("ns", "puts", 4, 0.0);
        pending.restore(batch);
        let again = pending.take();
        assert_eq!(again.counters[0].value, 7);
        assert_eq!(again.usage[0].input_tokens, 15);
    }
}
