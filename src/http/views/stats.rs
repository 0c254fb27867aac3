//! Figures of a namespace (`/v1/stats`, MCP's `memory_stats`) and the
//! budget and calibration views the usage answers share.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::ledger::budget::round_usd;
use crate::domain::ledger::{Calibration, Limits, NamespaceStats, Spend, UsageTotals};
use crate::storage::meta::IndexLag;

/// A namespace's daily budget and what is left of it (null: no such budget).
#[derive(Serialize, ToSchema)]
pub struct BudgetView {
    /// Daily token limit.
    pub tokens_limit: Option<u64>,
    /// Tokens left today.
    pub tokens_remaining: Option<u64>,
    /// Daily cost limit, USD.
    pub cost_limit_usd: Option<f64>,
    /// USD left today.
    pub cost_remaining_usd: Option<f64>,
    /// When the budget resets: the next UTC midnight (RFC 3339).
    pub resets_at: String,
}

impl BudgetView {
    /// The budget view of `limits` after `spent`.
    pub fn new(limits: Limits, spent: Spend, resets_at: chrono::DateTime<chrono::Utc>) -> Self {
        Self {
            tokens_limit: limits.tokens,
            tokens_remaining: limits.tokens.map(|l| l.saturating_sub(spent.tokens)),
            cost_limit_usd: limits.cost_usd,
            cost_remaining_usd: limits
                .cost_usd
                .map(|l| round_usd((l - spent.cost_usd).max(0.0))),
            resets_at: resets_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }
    }
}

/// A learned calibration factor (reported / estimated input tokens).
#[derive(Serialize, ToSchema)]
pub struct CalibrationView {
    /// Multiplies Cairn's estimates for this model (1 until learned).
    pub factor: f64,
    /// Reports it was learned from.
    pub samples: i64,
}

impl From<Calibration> for CalibrationView {
    fn from(c: Calibration) -> Self {
        Self {
            factor: (c.factor * 1e4).round() / 1e4,
            samples: c.samples,
        }
    }
}

/// Tokens saved, in total and by where the saving came from.
#[derive(Serialize, ToSchema)]
pub struct SavedView {
    /// All savings.
    pub total: u64,
    /// Puts answered with a summary and pointer instead of the content.
    pub put: u64,
    /// `POST /v1/compress` and the governor applying it.
    pub compress: u64,
    /// By the LLM proxy's offloading, net of the prompt-cache writes its rewrites caused.
    pub proxy: u64,
}

/// Governor decisions by tier.
#[derive(Serialize, ToSchema)]
pub struct GovernorTiersView {
    /// Below the warn limit.
    pub normal: u64,
    /// Between the warn and pointer-only limits.
    pub warn: u64,
    /// At or over the pointer-only limit.
    pub pointer_only: u64,
}

/// Provider-reported usage over some days.
#[derive(Serialize, ToSchema)]
pub struct UsageTotalsView {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input plus output.
    pub tokens: u64,
    /// Cost, USD.
    pub cost_usd: f64,
    /// Reports received.
    pub reports: u64,
}

impl From<&UsageTotals> for UsageTotalsView {
    fn from(u: &UsageTotals) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            tokens: u.input_tokens + u.output_tokens,
            cost_usd: round_usd(u.cost_usd),
            reports: u.reports,
        }
    }
}

/// Usage today and ever.
#[derive(Serialize, ToSchema)]
pub struct UsageStatsView {
    /// The current UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// Reported today.
    pub today: UsageTotalsView,
    /// Reported ever.
    pub all_time: UsageTotalsView,
}

/// A model's calibration factor.
#[derive(Serialize, ToSchema)]
pub struct ModelCalibrationView {
    /// Normalized model name.
    pub model: String,
    /// The factor and its samples.
    #[serde(flatten)]
    pub calibration: CalibrationView,
}

/// Puts through `POST /v1/memories`.
#[derive(Serialize, ToSchema)]
pub struct PutsView {
    /// All puts, repeats included.
    pub total: u64,
    /// Puts that created a memory.
    pub new: u64,
    /// Puts of content the namespace already had.
    pub deduplicated: u64,
    /// Content bytes of all puts.
    pub bytes: u64,
    /// Content bytes of the puts that created a memory.
    pub new_bytes: u64,
}

/// Prompt-cache tokens the provider reported for calls through the proxy.
#[derive(Serialize, ToSchema)]
pub struct PromptCacheView {
    /// Input tokens read from the provider's prompt cache.
    pub read_tokens: u64,
    /// Input tokens written to it.
    pub write_tokens: u64,
}

/// How far the full-text index is behind: content put but not yet searchable.
/// Server-wide (objects are indexed once for every namespace).
#[derive(Serialize, ToSchema, Default)]
pub struct SearchIndexView {
    /// Objects waiting to be indexed.
    pub pending_objects: u64,
    /// Their content bytes.
    pub pending_bytes: u64,
}

/// The caller's namespace in figures. Nothing here counts another namespace.
#[derive(Serialize, ToSchema)]
pub struct StatsView {
    /// The namespace.
    pub namespace: String,
    /// Memories now.
    pub memories: u64,
    /// Sum of their content lengths.
    pub bytes_in: u64,
    /// Stored (compressed) bytes of the distinct objects they reference. An object
    /// shared with another namespace counts in full in each.
    pub bytes_stored: u64,
    /// `bytes_in / bytes_stored` (1 when empty).
    pub compression_ratio: f64,
    /// Bytes sent by puts per byte that was new: `puts.bytes / puts.new_bytes`
    /// (1 when nothing was sent twice or nothing was put; 2 when every content was sent twice).
    pub dedup_ratio: f64,
    /// Puts through the API.
    pub puts: PutsView,
    /// Sum of the memories' token counts.
    pub tokens: u64,
    /// Tokens saved.
    pub tokens_saved: SavedView,
    /// What the saved tokens would have cost as input, USD (each saving priced
    /// for its model, or the default model, when it was recorded).
    pub cost_saved_usd: f64,
    /// Governor decisions by tier.
    pub governor: GovernorTiersView,
    /// Prompt-cache tokens the provider reported for proxied calls.
    pub prompt_cache: PromptCacheView,
    /// Provider-reported usage.
    pub usage: UsageStatsView,
    /// The daily budget and what is left of it.
    pub budget: BudgetView,
    /// Learned calibration factors by model.
    pub calibration: Vec<ModelCalibrationView>,
    /// Full-text index lag.
    pub search_index: SearchIndexView,
}

impl StatsView {
    /// The figures of `namespace`, with the full-text index's lag.
    pub fn new(namespace: String, s: NamespaceStats, lag: IndexLag) -> Self {
        let ratio = |num: u64, den: u64| {
            if num == 0 || den == 0 {
                1.0
            } else {
                (num as f64 / den as f64 * 1e4).round() / 1e4
            }
        };
        let saved = |source: &str| s.tokens_saved.get(source).copied().unwrap_or(0);
        let tier = |t: &str| s.governor.get(t).copied().unwrap_or(0);
        Self {
            namespace,
            memories: s.totals.memories,
            bytes_in: s.totals.bytes,
            bytes_stored: s.totals.stored_bytes,
            compression_ratio: ratio(s.totals.bytes, s.totals.stored_bytes),
            dedup_ratio: ratio(s.bytes_put, s.bytes_put_new),
            puts: PutsView {
                total: s.puts,
                new: s.puts_new,
                deduplicated: s.puts.saturating_sub(s.puts_new),
                bytes: s.bytes_put,
                new_bytes: s.bytes_put_new,
            },
            tokens: s.totals.tokens,
            tokens_saved: SavedView {
                total: s.tokens_saved.values().sum(),
                put: saved("put"),
                compress: saved("compress"),
                proxy: saved("proxy"),
            },
            prompt_cache: PromptCacheView {
                read_tokens: s.prompt_cache_read,
                write_tokens: s.prompt_cache_write,
            },
            cost_saved_usd: round_usd(s.cost_saved_usd),
            governor: GovernorTiersView {
                normal: tier("normal"),
                warn: tier("warn"),
                pointer_only: tier("pointer_only"),
            },
            usage: UsageStatsView {
                day: s.day.to_string(),
                today: (&s.usage_today).into(),
                all_time: (&s.usage_all_time).into(),
            },
            budget: BudgetView::new(s.limits, s.spend, s.resets_at),
            calibration: s
                .calibrations
                .into_iter()
                .map(|(model, c)| ModelCalibrationView {
                    model,
                    calibration: c.into(),
                })
                .collect(),
            search_index: SearchIndexView {
                pending_objects: lag.objects,
                pending_bytes: lag.bytes,
            },
        }
    }
}
