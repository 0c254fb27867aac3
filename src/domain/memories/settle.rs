//! Settling a count after its put answered: once the exact count of a large
//! content is in (see [`CountLater`](super::ingest::CountLater)), the memory's
//! estimate and the summary stating it are replaced by the exact figure.

use std::sync::Arc;

use crate::domain::memories::ingest::Later;
use crate::domain::summary;
use crate::storage::meta::{MemoryRecord, MetaStore, SettledTokens};

/// A count settling after its put answered: the tokens the put saves, by the
/// exact count (`None`: no exact count, the estimate stands).
pub type Settling = tokio::task::JoinHandle<Option<u64>>;

/// What settling one memory's count needs.
pub(super) struct Settle {
    /// Where the memory is.
    pub meta: Arc<dyn MetaStore>,
    /// The records opened for reading, one of which may be this memory's.
    pub opened: moka::sync::Cache<(String, String), Arc<MemoryRecord>>,
    /// The memory's namespace.
    pub namespace: String,
    /// The memory as its put stored it (with the estimate).
    pub record: MemoryRecord,
    /// The summary cap.
    pub summary_chars: usize,
}

impl Settle {
    /// Waits for the count and settles it; answers the tokens saved.
    pub(super) async fn run(self, later: Later) -> Option<u64> {
        let Ok(exact) = later.await else {
            tracing::warn!(memory.id = %self.record.id, "the counting thread is gone: the estimate stands");
            return None;
        };
        let record = self.record;
        if exact.method == record.token_method {
            return None; // not text after all: the estimate stands
        }
        let summary = summary::restate_tokens(
            &record.summary,
            (record.tokens, &record.token_method),
            (exact.tokens, exact.method),
            self.summary_chars,
        )
        .unwrap_or(record.summary);
        let saved = exact.tokens.saturating_sub(exact.count_alike(&summary));
        let settled = SettledTokens {
            namespace: self.namespace.clone(),
            id: record.id.clone(),
            estimated_method: record.token_method,
            tokens: exact.tokens,
            token_method: exact.method.to_owned(),
            summary,
        };
        if let Err(e) = self.meta.settle_tokens(settled).await {
            tracing::warn!(memory.id = %record.id, error = %e, "could not record the exact count");
        }
        self.opened.invalidate(&(self.namespace, record.id));
        Some(saved)
    }
}
