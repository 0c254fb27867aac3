//! Settling a count after its put answered: once the exact count of a large
//! content is in (see [`CountLater`](super::ingest::CountLater)), the memory's
//! estimate and the summary stating it are replaced by the exact figure,
//! and its settling mark cleared. A process that stops before leaves the
//! mark; the next start counts what is marked
//! ([`Memories::settle_left_over`]).

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;

use crate::domain::DomainError;
use crate::domain::memories::Memories;
use crate::domain::memories::ingest::Later;
use crate::domain::memories::read::{ObjectReader, content};
use crate::domain::summary;
use crate::storage::meta::{MemoryRecord, MetaStore, SettledTokens};

/// A count settling after its put answered: the tokens the put saves, by its
/// exact count (`None`: the count was lost or could not be recorded, and the
/// memory stays marked for the next start to count and account,
/// [`super::Memories::settle_left_over`]).
pub type Settling = tokio::task::JoinHandle<Option<u64>>;

/// A count recorded.
pub(super) struct Settled {
    /// The tokens the put saves, by the count.
    saved: u64,
    /// Whether this settled the memory (cleared its mark), rather than a
    /// settle of another put of the same content or another process.
    won: bool,
}

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
    /// Waits for the count and settles it (`None`: the count was lost or
    /// could not be recorded, the mark stays).
    pub(super) async fn run(self, later: Later) -> Option<Settled> {
        let Ok(counted) = later.await else {
            tracing::warn!(memory.id = %self.record.id, "the counting thread is gone: the count is left for the next start");
            return None;
        };
        let record = self.record;
        // Not text after all, the estimate stands: the mark goes all the same.
        let summary = if counted.method == record.token_method {
            record.summary
        } else {
            summary::restate_tokens(
                &record.summary,
                (record.tokens, &record.token_method),
                (counted.tokens, counted.method),
                self.summary_chars,
            )
            .unwrap_or(record.summary)
        };
        let saved = counted.tokens.saturating_sub(counted.count_alike(&summary));
        let settled = SettledTokens {
            namespace: self.namespace.clone(),
            id: record.id.clone(),
            estimated_method: record.token_method,
            tokens: counted.tokens,
            token_method: counted.method.to_owned(),
            summary,
        };
        let won = self.meta.settle_tokens(settled).await;
        self.opened.invalidate(&(self.namespace, record.id.clone()));
        match won {
            Ok(won) => Some(Settled { saved, won }),
            Err(e) => {
                tracing::warn!(memory.id = %record.id, error = %e, "could not record the exact count: it is left for the next start");
                None
            }
        }
    }

    /// [`Settle::run`] for a put's own count: the tokens it saves, whoever
    /// cleared the mark (another put of the same content may have).
    pub(super) async fn run_for_put(self, later: Later) -> Option<u64> {
        self.run(later).await.map(|settled| settled.saved)
    }
}

/// A memory whose count a stopped process left unmade, settled since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOver {
    /// The memory's namespace.
    pub namespace: String,
    /// The memory's kind.
    pub kind: String,
    /// The tokens its put saves, by the settled count.
    pub tokens_saved: u64,
}

/// Memories marked settling read per query.
const PAGE: u32 = 100;

impl Memories {
    /// Makes the counts a stopped process left unmade: every memory still
    /// marked settling that was created before `put_before` (Unix ms, taken
    /// before this process took requests) is read and counted on the
    /// counting thread, one at a time, and settled; answers those this
    /// settled (so that their puts' savings are accounted once). A memory
    /// that cannot be read is logged and left marked. Memories put since
    /// (this process's own, settling as their puts go on) are left alone.
    pub async fn settle_left_over(&self, put_before: i64) -> Result<Vec<LeftOver>, DomainError> {
        let mut after = None;
        let mut settled = Vec::new();
        loop {
            let page = self.meta.settling(after.take(), PAGE).await?;
            let full = page.len() == PAGE as usize;
            if let Some(last) = page.last() {
                after = Some((last.namespace.clone(), last.id.clone()));
            }
            for record in page.into_iter().filter(|r| r.created_at < put_before) {
                let id = record.id.clone();
                match self.settle_one(record).await {
                    Ok(Some(left)) => settled.push(left),
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(memory.id = %id, error = %e, "could not count a memory left settling")
                    }
                }
            }
            if !full {
                return Ok(settled);
            }
        }
    }

    /// Counts and settles one memory left settling.
    async fn settle_one(&self, record: MemoryRecord) -> Result<Option<LeftOver>, DomainError> {
        let corrupt = |detail: &str| DomainError::Corrupt {
            id: record.id.clone(),
            detail: detail.to_owned(),
        };
        let digest: [u8; 32] = hex::decode(&record.id)
            .ok()
            .and_then(|digest| digest.try_into().ok())
            .ok_or_else(|| corrupt("its id is not a SHA-256"))?;
        let object = self
            .objects
            .object(&record.id)
            .await?
            .ok_or_else(|| corrupt("its object record is missing"))?;
        let size = object.bytes;
        let reader = ObjectReader::new(object, self.blobs.clone());
        // The whole content, its hash checked: a count of what is stored.
        let frames: Vec<Bytes> = content::stream(reader, record.id.clone(), 0, size, true)
            .await?
            .try_collect()
            .await?;
        let max = self.ingest.exact_tokens_max;
        let Some(pending) = self
            .count_later
            .wait_for_room(frames, size, digest, max)
            .await
        else {
            return Ok(None);
        };
        let (namespace, kind) = (record.namespace.clone(), record.fields.kind.clone());
        let settle = Settle {
            meta: self.meta.clone(),
            opened: self.opened.clone(),
            namespace: namespace.clone(),
            record,
            summary_chars: self.summary_chars,
        };
        let settled = settle.run(pending.start()).await;
        Ok(settled.filter(|s| s.won).map(|s| LeftOver {
            namespace,
            kind,
            tokens_saved: s.saved,
        }))
    }
}
