//! A put through the API, REST or MCP: the content stored, then accounted
//! (the tokens it saves, the put and dedup counters). One function, so a
//! put counts the same whichever surface it came through; puts the domain
//! makes for itself (compress pieces, LLM summaries) are not API puts.

use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;

use crate::domain::DomainError;
use crate::domain::ledger::{Ledger, SavingSource};
use crate::domain::memories::{Memories, Stored};
use crate::model::PutFields;

/// Stores `body` as a memory of `namespace` and accounts the put. A large
/// content's put answers before its exact count
/// ([`Memories::put_answering_first`]); its saving is accounted once that
/// count is in (when it is lost, by the next start: [`settle_left_over`]).
pub async fn put<S, E>(
    memories: &Memories,
    ledger: &Arc<Ledger>,
    namespace: &str,
    fields: PutFields,
    body: S,
) -> Result<Stored, DomainError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let (stored, settling) = memories
        .put_answering_first(namespace, fields, body)
        .await?;
    let put = ledger.record_put(namespace, stored.record.bytes, stored.deduplicated);
    let kind = stored.record.fields.kind.clone();
    match settling {
        None => record_saving(ledger, namespace, &kind, stored.tokens_saved).await,
        Some(settling) => {
            let (ledger, namespace) = (ledger.clone(), namespace.to_owned());
            tokio::spawn(async move {
                if let Ok(Some(saved)) = settling.await {
                    record_saving(&ledger, &namespace, &kind, saved).await;
                }
            });
        }
    }
    if let Err(e) = put.await {
        tracing::warn!(error = %e, "could not account a put");
    }
    Ok(stored)
}

/// Accounts a client's put's saving. A failure is logged and never fails the put.
async fn record_saving(ledger: &Ledger, namespace: &str, kind: &str, tokens_saved: u64) {
    let saving = ledger.record_saving(namespace, SavingSource::Put, kind, None, tokens_saved);
    if let Err(e) = saving.await {
        tracing::warn!(error = %e, "could not account a put's saving");
    }
}

/// Makes the counts a stopped process left unmade in memories created before
/// `put_before` ([`Memories::settle_left_over`]) and accounts the savings of
/// the puts they belong to, which were accounted by no one yet.
pub async fn settle_left_over(memories: &Memories, ledger: &Ledger, put_before: i64) {
    match memories.settle_left_over(put_before).await {
        Ok(settled) => {
            if !settled.is_empty() {
                tracing::info!(
                    memories = settled.len(),
                    "counted the memories a stop had left with their estimates"
                );
            }
            for left in settled {
                record_saving(ledger, &left.namespace, &left.kind, left.tokens_saved).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not look for counts a stop left unmade"),
    }
}
