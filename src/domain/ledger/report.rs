//! A provider's usage report as the ledger takes it, what recording it did,
//! and usage summed over days.

use chrono::{DateTime, Utc};

use super::budget::{Limits, Spend};
use super::calibration::Calibration;
use super::{MAX_MODEL_CHARS, MAX_REPORT_TOKENS};
use crate::domain::DomainError;
use crate::domain::ledger::pricing::{Price, normalize};
use crate::storage::meta::UsageRow;

/// A provider's usage report, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct UsageReport {
    /// Normalized model name.
    pub model: String,
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// What Cairn estimated for the same input, if the client knows it.
    pub estimated_input_tokens: Option<u64>,
    /// Of the input tokens, those read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of the input tokens, those written to the provider's prompt cache.
    pub cache_write_tokens: u64,
}

impl UsageReport {
    /// Checks a report as a client sent it.
    pub fn parse(
        model: &str,
        input_tokens: i64,
        output_tokens: i64,
        estimated_input_tokens: Option<i64>,
    ) -> Result<Self, DomainError> {
        let name = normalize(model);
        if name.is_empty() || name.chars().count() > MAX_MODEL_CHARS {
            return Err(DomainError::field(
                "model",
                format!("must name a model in 1-{MAX_MODEL_CHARS} characters"),
            ));
        }
        if name.chars().any(char::is_control) {
            return Err(DomainError::field(
                "model",
                "must not contain control characters",
            ));
        }
        let count = |field: &'static str, value: i64, min: i64| {
            if (min..=MAX_REPORT_TOKENS).contains(&value) {
                Ok(value.unsigned_abs())
            } else {
                Err(DomainError::field(
                    field,
                    format!("must be between {min} and {MAX_REPORT_TOKENS}, got {value}"),
                ))
            }
        };
        Ok(Self {
            model: name,
            input_tokens: count("input_tokens", input_tokens, 0)?,
            output_tokens: count("output_tokens", output_tokens, 0)?,
            estimated_input_tokens: estimated_input_tokens
                .map(|e| count("estimated_input_tokens", e, 1))
                .transpose()?,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        })
    }

    /// The same report with the prompt-cache part of its input (priced at
    /// the cache's rates); capped at the input tokens.
    #[must_use]
    pub fn with_cache(mut self, read: u64, write: u64) -> Self {
        self.cache_read_tokens = read.min(self.input_tokens);
        self.cache_write_tokens = write.min(self.input_tokens - self.cache_read_tokens);
        self
    }
}

/// What recording a usage report did.
#[derive(Clone, Debug)]
pub struct UsageRecorded {
    /// Normalized model name.
    pub model: String,
    /// The price applied.
    pub price: Price,
    /// Cost of this report in USD.
    pub cost_usd: f64,
    /// The namespace's spend today, this report included.
    pub today: Spend,
    /// The namespace's daily limits.
    pub limits: Limits,
    /// When today's spend resets.
    pub resets_at: DateTime<Utc>,
    /// The model's calibration after this report, if it has one.
    pub calibration: Option<Calibration>,
}

/// Provider-reported usage summed over some days.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UsageTotals {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in USD.
    pub cost_usd: f64,
    /// Reports.
    pub reports: u64,
}

impl UsageTotals {
    pub(super) fn add(&mut self, row: &UsageRow) {
        self.input_tokens += u64::try_from(row.input_tokens).unwrap_or(0);
        self.output_tokens += u64::try_from(row.output_tokens).unwrap_or(0);
        self.cost_usd += row.cost_usd;
        self.reports += u64::try_from(row.reports).unwrap_or(0);
    }
}
