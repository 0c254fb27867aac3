//! A put through the API, REST or MCP: the content stored, then accounted
//! (the tokens it saves, the put and dedup counters). One function, so a
//! put counts the same whichever surface it came through; puts the domain
//! makes for itself (compress pieces, LLM summaries) are not API puts.

use bytes::Bytes;
use futures::Stream;

use crate::domain::DomainError;
use crate::domain::ledger::{Ledger, SavingSource};
use crate::domain::memories::{Memories, Stored};
use crate::model::PutFields;

/// Stores `body` as a memory of `namespace` and accounts the put.
pub async fn put<S, E>(
    memories: &Memories,
    ledger: &Ledger,
    namespace: &str,
    fields: PutFields,
    body: S,
) -> Result<Stored, DomainError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let stored = memories.put(namespace, fields, body).await?;
    account(ledger, namespace, &stored).await;
    Ok(stored)
}

/// Accounts a client's put: its saving and its bytes for the dedup ratio. A
/// failure is logged and never fails the put.
async fn account(ledger: &Ledger, namespace: &str, stored: &Stored) {
    let saving = ledger.record_saving(
        namespace,
        SavingSource::Put,
        &stored.record.fields.kind,
        None,
        stored.tokens_saved,
    );
    let put = ledger.record_put(namespace, stored.record.bytes, stored.deduplicated);
    for result in [saving.await, put.await] {
        if let Err(e) = result {
            tracing::warn!(error = %e, "could not account a put");
        }
    }
}
