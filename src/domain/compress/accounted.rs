//! A compression's side effects, owned by the domain: its counts calibrated
//! for the namespace, its saving recorded in the ledger, its metrics counted.
//! `POST /v1/compress`, the governor applying a tier and any other caller go
//! through [`account`], so they always agree.

use super::Outcome;
use crate::domain::DomainError;
use crate::domain::ledger::{Ledger, SavingSource};

/// A compression with its calibrated counts and its recorded saving.
#[derive(Debug)]
pub struct Accounted {
    /// What compressing did.
    pub outcome: Outcome,
    /// Tokens of the input (calibrated).
    pub tokens_before: u64,
    /// Tokens of the output (calibrated).
    pub tokens_after: u64,
    /// `tokens_before - tokens_after`.
    pub tokens_saved: u64,
    /// How tokens were counted.
    pub method: String,
}

/// Calibrates the outcome's counts for `namespace` and `model`, counts the
/// call in the metrics and records its saving.
pub async fn account(
    outcome: Outcome,
    ledger: &Ledger,
    namespace: &str,
    model: Option<&str>,
) -> Result<Accounted, DomainError> {
    let before = ledger
        .calibrate(namespace, model, outcome.counter, outcome.tokens_before)
        .await;
    let after = ledger
        .calibrate(namespace, model, outcome.counter, outcome.tokens_after)
        .await;
    let saved = before.tokens.saturating_sub(after.tokens);
    let metrics = ledger.metrics();
    let strategy = [outcome.strategy];
    metrics.compress_calls.with_label_values(&strategy).inc();
    metrics
        .compress_offloaded
        .with_label_values(&strategy)
        .inc_by(outcome.offloaded.len() as u64);
    #[allow(clippy::cast_precision_loss)]
    metrics
        .context_tokens
        .with_label_values(&["compress"])
        .observe(before.tokens as f64);
    if saved > 0 {
        ledger
            .record_saving(namespace, SavingSource::Compress, "CONTEXT", model, saved)
            .await?;
    }
    Ok(Accounted {
        outcome,
        tokens_before: before.tokens,
        tokens_after: after.tokens,
        tokens_saved: saved,
        method: before.method,
    })
}
