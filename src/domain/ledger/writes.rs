//! How the ledger's records reach the store: queued exchanges and expiry,
//! and the batch written at each flush (on failure it stays pending).

use std::sync::Arc;
use std::time::Duration;

use super::{Ledger, pending};
use crate::domain::DomainError;
use crate::storage::meta::ExchangeRow;

impl Ledger {
    /// Queues an exchange's record for the next write.
    pub fn queue_exchange(&self, row: ExchangeRow) {
        if !self.lock().pending.add_exchange(row) {
            tracing::warn!(
                most = pending::MAX_PENDING_EXCHANGES,
                "too many exchanges wait for the store: the oldest was dropped"
            );
        }
    }

    /// Removes, at the next write, the exchange threads idle since before `before_ms`.
    pub fn expire_exchanges(&self, before_ms: i64) {
        self.lock().pending.expire_exchanges(before_ms);
    }

    /// Writes what is pending; on failure it stays pending for the next flush.
    pub async fn flush(&self) -> Result<(), DomainError> {
        let _one_at_a_time = self.flushing.lock().await;
        let batch = self.lock().pending.take();
        if batch.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.meta.write_ledger(batch.clone()).await {
            self.lock().pending.restore(batch);
            return Err(e.into());
        }
        Ok(())
    }

    /// Flushes every `period` until the ledger is dropped elsewhere.
    pub fn spawn_flusher(self: &Arc<Self>, period: Duration) -> tokio::task::JoinHandle<()> {
        let ledger = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(ledger) = ledger.upgrade() else {
                    break;
                };
                if let Err(e) = ledger.flush().await {
                    tracing::warn!(error = %e, "could not write accounting; retrying at the next flush");
                }
            }
        })
    }
}
