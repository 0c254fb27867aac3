//! What an upstream answer says it cost, summed over the rounds of one
//! proxied request, and recorded as `/v1/usage` records a report: cost,
//! budgets, calibration against Cairn's estimate, prompt-cache tokens — and
//! the proxy's saving, net of the cache writes its rewrite caused.

use serde_json::{Map, Value};

use super::{Endpoint, Provider};
use crate::domain::DomainError;
use crate::domain::ledger::{Ledger, SavingSource, UsageReport};

/// Token usage of one answer, in one shape for every provider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// All input tokens, cached ones included.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write: u64,
}

/// Adds a round's usage object into the running total, field by field (numbers
/// add up, nested objects too; anything else takes the later value).
pub fn add_usage(total: &mut Value, round: &Value) {
    match (total, round) {
        (Value::Object(total), Value::Object(round)) => add_fields(total, round),
        (total, round) => *total = round.clone(),
    }
}

fn add_fields(total: &mut Map<String, Value>, round: &Map<String, Value>) {
    for (key, value) in round {
        match (total.get_mut(key), value) {
            (Some(Value::Number(a)), Value::Number(b)) => {
                if let (Some(a64), Some(b64)) = (a.as_u64(), b.as_u64()) {
                    *a = (a64 + b64).into();
                }
            }
            (Some(Value::Object(a)), Value::Object(b)) => add_fields(a, b),
            (Some(slot), value) if !value.is_null() => *slot = value.clone(),
            (None, value) => {
                total.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
}

/// One upstream round to account for.
pub struct Round<'a> {
    /// The endpoint called.
    pub endpoint: Endpoint,
    /// The model that answered (the answer's `model`, else the request's).
    pub model: &'a str,
    /// What the answer's usage said.
    pub usage: Usage,
    /// Cairn's estimate of the input it sent, for calibration.
    pub estimated_input: Option<u64>,
}

/// Records a round's usage in the namespace (cost, today's spend, calibration,
/// prompt-cache tokens). A spent budget does not fail it: the call was made.
pub async fn record_round(ledger: &Ledger, namespace: &str, round: &Round<'_>) {
    let u = round.usage;
    let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let estimate = round.estimated_input.filter(|e| *e > 0).map(to_i64);
    match UsageReport::parse(round.model, to_i64(u.input), to_i64(u.output), estimate) {
        Ok(report) => match ledger
            .record_usage(namespace, &report.with_cache(u.cache_read, u.cache_write))
            .await
        {
            Ok(_) | Err(DomainError::BudgetExceeded { .. }) => {}
            Err(e) => tracing::warn!(error = %e, "could not record proxied usage"),
        },
        Err(e) => tracing::debug!(error = %e, "proxied answer's usage not recorded"),
    }
    ledger.record_prompt_cache(namespace, u.cache_read, u.cache_write);
    let provider = round.endpoint.provider().name();
    let metrics = &ledger.metrics().proxy;
    metrics
        .cache_tokens
        .with_label_values(&[provider, "read"])
        .inc_by(u.cache_read);
    metrics
        .cache_tokens
        .with_label_values(&[provider, "write"])
        .inc_by(u.cache_write);
}

/// The saving of one proxied request: tokens its rewrite kept out, minus the
/// cache writes of its first round when the governor's compression edited it
/// (offloading alone replaces the same content by the same bytes every turn,
/// so it never moves the cached prefix). Recorded and answered.
pub async fn record_saving(
    ledger: &Ledger,
    namespace: &str,
    provider: Provider,
    model: Option<&str>,
    saved: u64,
    caused_cache_writes: u64,
) -> Result<u64, DomainError> {
    let net = saved.saturating_sub(caused_cache_writes);
    ledger
        .record_saving(namespace, SavingSource::Proxy, "CONTEXT", model, net)
        .await?;
    ledger
        .metrics()
        .proxy
        .tokens_saved
        .with_label_values(&[provider.name()])
        .inc_by(net);
    Ok(net)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn usages_add_up_field_by_field() {
        let mut total = json!({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4}, "tier": "a"});
        add_usage(
            &mut total,
            &json!({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1}, "tier": "b", "new": 2}),
        );
        assert_eq!(
            total,
            json!({"prompt_tokens": 15, "prompt_tokens_details": {"cached_tokens": 5}, "tier": "b", "new": 2})
        );
    }
}
