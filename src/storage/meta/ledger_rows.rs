//! Rows of the accounting tables: what the ledger writes in batches and reads back.

/// An addition to one named per-namespace counter.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerCounter {
    /// Owning namespace.
    pub namespace: String,
    /// Counter name, e.g. `tokens_saved.put` or `governor.warn`.
    pub name: String,
    /// Amount (added when written, the total when read).
    pub value: i64,
    /// USD carried with the amount (cost saved), added like `value`.
    pub cost_usd: f64,
}

/// Provider-reported usage of one model in one namespace on one UTC day.
#[derive(Clone, Debug, PartialEq)]
pub struct UsageRow {
    /// Owning namespace.
    pub namespace: String,
    /// Normalized model name.
    pub model: String,
    /// UTC day `YYYY-MM-DD` (when reading totals over several days: the latest).
    pub day: String,
    /// Input (prompt) tokens.
    pub input_tokens: i64,
    /// Output (completion) tokens.
    pub output_tokens: i64,
    /// Their cost in USD.
    pub cost_usd: f64,
    /// Number of reports.
    pub reports: i64,
}

/// Which usage to sum: rows are grouped by namespace and model.
#[derive(Clone, Debug, Default)]
pub struct UsageQuery {
    /// Only this namespace (all when `None`).
    pub namespace: Option<String>,
    /// Only this UTC day `YYYY-MM-DD` (all days when `None`).
    pub day: Option<String>,
}

/// A learned calibration factor (stored as the absolute current value).
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationRow {
    /// Owning namespace.
    pub namespace: String,
    /// Normalized model name.
    pub model: String,
    /// Reported / estimated tokens, a bounded running mean.
    pub factor: f64,
    /// Samples it was learned from.
    pub samples: i64,
    /// Time of the latest sample, Unix milliseconds.
    pub updated_at: i64,
}

/// Everything the ledger writes at one flush, in one transaction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LedgerBatch {
    /// Counter additions.
    pub counters: Vec<LedgerCounter>,
    /// Usage additions.
    pub usage: Vec<UsageRow>,
    /// Calibration factors to set.
    pub calibrations: Vec<CalibrationRow>,
    /// Exchanges to add.
    pub exchanges: Vec<super::ExchangeRow>,
    /// Remove the threads of exchanges whose newest exchange is older than
    /// this (Unix milliseconds): a thread goes whole, never a parent alone.
    pub expire_exchanges_before: Option<i64>,
}

impl LedgerBatch {
    /// True when there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
            && self.usage.is_empty()
            && self.calibrations.is_empty()
            && self.exchanges.is_empty()
            && self.expire_exchanges_before.is_none()
    }
}

/// Totals of a namespace's memories as they are now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NamespaceTotals {
    /// Memories.
    pub memories: u64,
    /// Sum of their content lengths.
    pub bytes: u64,
    /// Sum of the stored (compressed) sizes of the distinct objects they reference.
    pub stored_bytes: u64,
    /// Sum of their token counts.
    pub tokens: u64,
}

/// Totals of the whole store's objects, every namespace together (for gauges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreTotals {
    /// Objects.
    pub objects: u64,
    /// Sum of their content lengths.
    pub bytes: u64,
    /// Sum of their stored (compressed) sizes.
    pub stored_bytes: u64,
}
