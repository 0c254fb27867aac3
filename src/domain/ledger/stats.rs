//! A namespace's accounting as `GET /v1/stats` shows it: its store totals,
//! savings, governor decisions, prompt-cache tokens, usage and calibrations.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};

use super::budget::{Limits, Spend};
use super::calibration::Calibration;
use super::report::UsageTotals;
use super::{Ledger, TIERS, budget};
use crate::domain::DomainError;
use crate::storage::meta::{NamespaceTotals, UsageQuery};

/// A namespace's accounting, for `GET /v1/stats`.
#[derive(Clone, Debug, Default)]
pub struct NamespaceStats {
    /// Its memories as they are now.
    pub totals: NamespaceTotals,
    /// Puts through the API, new or not; and the new ones.
    pub puts: u64,
    /// Puts that created a memory.
    pub puts_new: u64,
    /// Bytes of all puts.
    pub bytes_put: u64,
    /// Bytes of the puts that created a memory.
    pub bytes_put_new: u64,
    /// Tokens saved by source (`put`, `compress`).
    pub tokens_saved: BTreeMap<&'static str, u64>,
    /// Cost those tokens would have cost as input, USD.
    pub cost_saved_usd: f64,
    /// Input tokens the provider read from its prompt cache (proxied calls).
    pub prompt_cache_read: u64,
    /// Input tokens the provider wrote to its prompt cache (proxied calls).
    pub prompt_cache_write: u64,
    /// Governor decisions by tier.
    pub governor: BTreeMap<&'static str, u64>,
    /// The current UTC day.
    pub day: NaiveDate,
    /// Usage reported today.
    pub usage_today: UsageTotals,
    /// Usage reported ever.
    pub usage_all_time: UsageTotals,
    /// Calibration factors by model.
    pub calibrations: Vec<(String, Calibration)>,
    /// Daily limits.
    pub limits: Limits,
    /// Today's spend as budgets count it.
    pub spend: Spend,
    /// When today's spend resets.
    pub resets_at: DateTime<Utc>,
}

impl Ledger {
    /// The namespace's totals, savings, decisions, usage and calibrations.
    pub async fn stats(&self, namespace: &str) -> Result<NamespaceStats, DomainError> {
        self.flush().await?;
        let now = self.clock.now();
        let day = now.date_naive();
        let mut stats = NamespaceStats {
            totals: self.meta.namespace_totals(namespace).await?,
            day,
            limits: self.config.budgets.limits(namespace),
            spend: self.spend_today(namespace, now),
            resets_at: budget::resets_at(now),
            tokens_saved: [("put", 0), ("compress", 0), ("proxy", 0)].into(),
            governor: TIERS.iter().map(|t| (*t, 0)).collect(),
            ..NamespaceStats::default()
        };
        for c in self.meta.ledger_counters(namespace).await? {
            let value = u64::try_from(c.value).unwrap_or(0);
            match c.name.as_str() {
                "puts" => stats.puts = value,
                "puts.new" => stats.puts_new = value,
                "bytes_put" => stats.bytes_put = value,
                "bytes_put.new" => stats.bytes_put_new = value,
                "prompt_cache.read" => stats.prompt_cache_read = value,
                "prompt_cache.write" => stats.prompt_cache_write = value,
                name => {
                    if let Some(source) = name.strip_prefix("tokens_saved.")
                        && let Some(slot) = stats.tokens_saved.get_mut(source)
                    {
                        *slot += value;
                        stats.cost_saved_usd += c.cost_usd;
                    } else if let Some(tier) = name.strip_prefix("governor.")
                        && let Some(slot) = stats.governor.get_mut(tier)
                    {
                        *slot += value;
                    }
                }
            }
        }
        let usage = |day: Option<String>| UsageQuery {
            namespace: Some(namespace.to_owned()),
            day,
        };
        for row in self
            .meta
            .usage_totals(&usage(Some(day.to_string())))
            .await?
        {
            stats.usage_today.add(&row);
        }
        for row in self.meta.usage_totals(&usage(None)).await? {
            stats.usage_all_time.add(&row);
        }
        stats.calibrations = self
            .meta
            .calibrations(Some(namespace))
            .await?
            .into_iter()
            .map(|row| {
                let c = Calibration {
                    factor: row.factor,
                    samples: row.samples,
                };
                (row.model, c)
            })
            .collect();
        Ok(stats)
    }
}
