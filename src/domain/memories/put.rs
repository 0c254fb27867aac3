//! A put through the API, REST or MCP: the content stored, then accounted
//! (the tokens it saves, the put and dedup counters). One function, so a
//! put counts the same whichever surface it came through; puts the domain
//! makes for itself (compress pieces, LLM summaries) are not API puts.

use bytes::Bytes;
use futures::Stream;

use super::DomainError;
use super::fields::FieldsInput;
use super::ledger::Ledger;
use super::memories::{Memories, Stored};

/// Stores `body` as a memory of `namespace` and accounts the put.
pub async fn put<S, E>(
    memories: &Memories,
    ledger: &Ledger,
    namespace: &str,
    fields: FieldsInput,
    body: S,
) -> Result<Stored, DomainError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
    E: std::fmt::Display,
{
    let stored = memories.put(namespace, fields, body).await?;
    ledger.account_put(namespace, &stored).await;
    Ok(stored)
}
