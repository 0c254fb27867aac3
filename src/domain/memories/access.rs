//! Batched read statistics: reads are counted in memory and flushed to the
//! metadata store once a second, so a slice costs no extra write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::storage::meta::{AccessUpdate, MemoryStore};

/// Pending (last read, read count) per (namespace, id).
#[derive(Default)]
pub struct AccessRecorder {
    pending: Mutex<HashMap<(String, String), (i64, i64)>>,
}

impl AccessRecorder {
    /// Notes one read of a memory.
    pub fn record(&self, namespace: &str, id: &str, at: i64) {
        if let Ok(mut pending) = self.pending.lock() {
            let entry = pending
                .entry((namespace.to_owned(), id.to_owned()))
                .or_insert((at, 0));
            entry.0 = entry.0.max(at);
            entry.1 += 1;
        }
    }

    /// Writes what is pending.
    pub async fn flush(&self, meta: &dyn MemoryStore) {
        let updates: Vec<AccessUpdate> = match self.pending.lock() {
            Ok(mut pending) => pending
                .drain()
                .map(|((namespace, id), (at, count))| AccessUpdate {
                    namespace,
                    id,
                    at,
                    count,
                })
                .collect(),
            Err(_) => return,
        };
        if updates.is_empty() {
            return;
        }
        if let Err(e) = meta.record_access(updates).await {
            tracing::warn!(error = %e, "could not record read statistics");
        }
    }

    /// Flushes every `period` until the recorder is dropped elsewhere.
    pub fn spawn_flusher(
        self: &Arc<Self>,
        meta: Arc<dyn MemoryStore>,
        period: Duration,
    ) -> tokio::task::JoinHandle<()> {
        let recorder = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(recorder) = recorder.upgrade() else {
                    break;
                };
                recorder.flush(meta.as_ref()).await;
            }
        })
    }
}
