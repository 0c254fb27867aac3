//! Per-namespace accounting: tokens and cost saved, governor decisions,
//! provider-reported usage, calibration of estimates and daily budgets.
//!
//! Everything is counted in memory and written in batches (about once a
//! second, and at shutdown), so accounting costs a request no database write.
//! Today's spend per namespace is kept in memory (loaded at start), so budgets
//! are enforced at once, not at the next flush.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, NaiveDate, Utc};

use crate::domain::DomainError;
use crate::domain::ledger::pricing::{Pricing, normalize};
use crate::domain::tokens::Counter;
use crate::metrics::{Metrics, type_label};
use crate::storage::cache::spend::SharedSpend;
use crate::storage::meta::{CalibrationRow, LedgerStore, UsageQuery, UsageRow};

pub mod budget;
pub mod calibration;
mod pending;
pub mod pricing;
mod report;
mod stats;
mod writes;

pub use budget::{Budgets, Limits, Spend};
pub use calibration::Calibration;
use pending::Pending;
pub use report::{UsageRecorded, UsageReport, UsageTotals};
pub use stats::NamespaceStats;

/// Governor tiers, as counted.
pub const TIERS: [&str; 3] = ["normal", "warn", "pointer_only"];
/// Most tokens one usage report may state (larger is a client bug, refused).
pub const MAX_REPORT_TOKENS: i64 = 100_000_000;
/// Longest model name accepted in a usage report.
const MAX_MODEL_CHARS: usize = 128;

/// Where a saving came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SavingSource {
    /// A put answered with a summary and pointer instead of the content.
    Put,
    /// `POST /v1/compress` (or the governor applying it) offloaded or folded messages.
    Compress,
    /// The LLM proxy offloaded tool results and big texts of a request (net of
    /// the prompt-cache writes its rewrite caused).
    Proxy,
}

impl SavingSource {
    /// The source's label value: `put` or `compress`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Put => "put",
            Self::Compress => "compress",
            Self::Proxy => "proxy",
        }
    }

    fn counter(self) -> &'static str {
        match self {
            Self::Put => "tokens_saved.put",
            Self::Compress => "tokens_saved.compress",
            Self::Proxy => "tokens_saved.proxy",
        }
    }
}

/// A token count and how it was made, after calibration.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibrated {
    /// The count.
    pub tokens: u64,
    /// How it was counted (`exact:o200k_base`, `estimate:anthropic:chars/3.5`, with
    /// `;calibrated:x1.07` appended when a learned factor was applied).
    pub method: String,
}

/// The time, injectable so that tests can cross midnight.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Prices and budgets.
#[derive(Clone, Debug, Default)]
pub struct LedgerConfig {
    /// Model prices.
    pub pricing: Pricing,
    /// Daily budgets.
    pub budgets: Budgets,
}

struct State {
    pending: Pending,
    day: NaiveDate,
    spend: HashMap<String, Spend>,
    calibrations: HashMap<(String, String), Calibration>,
}

impl State {
    /// Today's spend of every namespace, emptied when the UTC day has changed.
    fn spend_on(&mut self, day: NaiveDate) -> &mut HashMap<String, Spend> {
        if day != self.day {
            self.day = day;
            self.spend.clear();
        }
        &mut self.spend
    }
}

/// The accounting service.
pub struct Ledger {
    meta: Arc<dyn LedgerStore>,
    config: LedgerConfig,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Serializes flushes, so that a read after `flush` sees every earlier record.
    flushing: tokio::sync::Mutex<()>,
    /// Savings and governor decisions are also counted here.
    metrics: Arc<Metrics>,
    /// Today's spend shared by every replica (Redis), when configured.
    shared: Option<Arc<dyn SharedSpend>>,
}

impl Ledger {
    /// A ledger with built-in prices and no budgets that starts empty (see [`Ledger::open`]).
    pub fn new(meta: Arc<dyn LedgerStore>) -> Self {
        Self::empty(meta, LedgerConfig::default(), Arc::new(SystemClock))
    }

    fn empty(meta: Arc<dyn LedgerStore>, config: LedgerConfig, clock: Arc<dyn Clock>) -> Self {
        let day = clock.now().date_naive();
        Self {
            meta,
            config,
            clock,
            state: Mutex::new(State {
                pending: Pending::default(),
                day,
                spend: HashMap::new(),
                calibrations: HashMap::new(),
            }),
            flushing: tokio::sync::Mutex::new(()),
            metrics: Arc::new(Metrics::new()),
            shared: None,
        }
    }

    /// Keeps today's spend in counters every replica shares too, so that
    /// budgets hold across replicas; while they cannot answer, this replica's
    /// own view decides.
    #[must_use]
    pub fn with_shared_spend(mut self, shared: Arc<dyn SharedSpend>) -> Self {
        self.shared = Some(shared);
        self
    }

    /// The metrics the ledger counts into.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Counts savings and governor decisions into `metrics` as well.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// A ledger that resumes from the store: today's spend and the calibrations.
    pub async fn open(
        meta: Arc<dyn LedgerStore>,
        config: LedgerConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, DomainError> {
        let ledger = Self::empty(meta, config, clock);
        let day = ledger.clock.now().date_naive();
        let today = ledger
            .meta
            .usage_totals(&UsageQuery {
                namespace: None,
                day: Some(day.to_string()),
            })
            .await?;
        let calibrations = ledger.meta.calibrations(None).await?;
        {
            let mut state = ledger.lock();
            state.day = day;
            for row in today {
                let spend = state.spend.entry(row.namespace).or_default();
                spend.tokens += u64::try_from(row.input_tokens + row.output_tokens).unwrap_or(0);
                spend.cost_usd += row.cost_usd;
            }
            for row in calibrations {
                state.calibrations.insert(
                    (row.namespace, row.model),
                    Calibration {
                        factor: row.factor,
                        samples: row.samples,
                    },
                );
            }
        }
        Ok(ledger)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The price table in force.
    pub fn pricing(&self) -> &Pricing {
        &self.config.pricing
    }

    /// Records tokens saved in `namespace` (and their cost, priced for
    /// `model`); `kind` is the memory type saved (for metrics).
    pub async fn record_saving(
        &self,
        namespace: &str,
        source: SavingSource,
        kind: &str,
        model: Option<&str>,
        tokens_saved: u64,
    ) -> Result<(), DomainError> {
        if tokens_saved == 0 {
            return Ok(());
        }
        let price = self.config.pricing.price(model);
        let cost = price.cost(tokens_saved, 0);
        self.metrics
            .tokens_saved
            .with_label_values(&[source.name(), type_label(kind)])
            .inc_by(tokens_saved);
        self.metrics
            .cost_saved
            .with_label_values(&[price.entry.as_str()])
            .inc_by(cost);
        let tokens = i64::try_from(tokens_saved).unwrap_or(i64::MAX);
        self.lock()
            .pending
            .add_counter(namespace, source.counter(), tokens, cost);
        Ok(())
    }

    /// Records one put through the API: its content length and whether it was new
    /// (the figures of the dedup ratio).
    pub async fn record_put(
        &self,
        namespace: &str,
        bytes: u64,
        deduplicated: bool,
    ) -> Result<(), DomainError> {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        let mut state = self.lock();
        state.pending.add_counter(namespace, "puts", 1, 0.0);
        state
            .pending
            .add_counter(namespace, "bytes_put", bytes, 0.0);
        if !deduplicated {
            state.pending.add_counter(namespace, "puts.new", 1, 0.0);
            state
                .pending
                .add_counter(namespace, "bytes_put.new", bytes, 0.0);
        }
        Ok(())
    }

    /// Records the prompt-cache tokens a provider reported for a proxied call.
    pub fn record_prompt_cache(&self, namespace: &str, read: u64, write: u64) {
        let mut state = self.lock();
        for (name, value) in [("prompt_cache.read", read), ("prompt_cache.write", write)] {
            if value > 0 {
                let value = i64::try_from(value).unwrap_or(i64::MAX);
                state.pending.add_counter(namespace, name, value, 0.0);
            }
        }
    }

    /// Records one governor decision (`normal`, `warn` or `pointer_only`).
    pub async fn record_governor(&self, namespace: &str, tier: &str) -> Result<(), DomainError> {
        let Some(tier) = TIERS.iter().find(|t| **t == tier) else {
            return Err(DomainError::field(
                "tier",
                format!("`{tier}` is not a tier (normal, warn, pointer_only)"),
            ));
        };
        self.metrics
            .governor_decisions
            .with_label_values(&[tier])
            .inc();
        self.lock()
            .pending
            .add_counter(namespace, &format!("governor.{tier}"), 1, 0.0);
        Ok(())
    }

    /// Fails with a budget error once the namespace's daily token or cost budget is spent.
    pub async fn check_budget(&self, namespace: &str) -> Result<(), DomainError> {
        let now = self.clock.now();
        let limits = self.config.budgets.limits(namespace);
        if limits.tokens.is_none() && limits.cost_usd.is_none() {
            return Ok(());
        }
        let mut spent = self.spend_today(namespace, now);
        if let Some(shared) = &self.shared {
            let day = now.date_naive().to_string();
            spent = budget::at_least(spent, shared.get(namespace, &day).await);
        }
        budget::check(limits, spent, now)
    }

    fn spend_today(&self, namespace: &str, now: DateTime<Utc>) -> Spend {
        self.lock()
            .spend_on(now.date_naive())
            .get(namespace)
            .copied()
            .unwrap_or_default()
    }

    /// Records a provider's usage report: its cost, today's spend, and (when the
    /// report carries Cairn's estimate) the model's calibration. Fails with a budget
    /// error, after recording, once the namespace's daily budget is spent.
    pub async fn record_usage(
        &self,
        namespace: &str,
        report: &UsageReport,
    ) -> Result<UsageRecorded, DomainError> {
        let now = self.clock.now();
        let price = self.config.pricing.price(Some(&report.model));
        let cost = price.cost_cached(
            report.input_tokens,
            report.cache_read_tokens,
            report.cache_write_tokens,
            report.output_tokens,
        );
        let (today, calibration) = {
            let mut state = self.lock();
            let spend = state
                .spend_on(now.date_naive())
                .entry(namespace.to_owned())
                .or_default();
            spend.tokens = spend
                .tokens
                .saturating_add(report.input_tokens + report.output_tokens);
            spend.cost_usd += cost;
            let today = *spend;
            state.pending.add_usage(UsageRow {
                namespace: namespace.to_owned(),
                model: report.model.clone(),
                day: now.date_naive().to_string(),
                input_tokens: i64::try_from(report.input_tokens).unwrap_or(i64::MAX),
                output_tokens: i64::try_from(report.output_tokens).unwrap_or(i64::MAX),
                cost_usd: cost,
                reports: 1,
            });
            let key = (namespace.to_owned(), report.model.clone());
            if let Some(estimated) = report.estimated_input_tokens {
                let learned = state.calibrations.entry(key.clone()).or_default();
                learned.learn(report.input_tokens, estimated);
                let learned = *learned;
                state.pending.set_calibration(CalibrationRow {
                    namespace: key.0.clone(),
                    model: key.1.clone(),
                    factor: learned.factor,
                    samples: learned.samples,
                    updated_at: now.timestamp_millis(),
                });
            }
            (today, state.calibrations.get(&key).copied())
        };
        let today = match &self.shared {
            Some(shared) => {
                let day = now.date_naive().to_string();
                let expire_at =
                    budget::resets_at(now).timestamp() + budget::SHARED_SPEND_MARGIN_SECS;
                let tokens = report.input_tokens + report.output_tokens;
                let totals = shared.add(namespace, &day, (tokens, cost), expire_at);
                budget::at_least(today, totals.await)
            }
            None => today,
        };
        let limits = self.config.budgets.limits(namespace);
        budget::check(limits, today, now)?;
        Ok(UsageRecorded {
            model: report.model.clone(),
            price,
            cost_usd: cost,
            today,
            limits,
            resets_at: budget::resets_at(now),
            calibration,
        })
    }

    /// Applies the namespace's learned calibration factor for `model` to an estimate
    /// (exact counts pass through unchanged).
    pub async fn calibrate(
        &self,
        namespace: &str,
        model: Option<&str>,
        counter: Counter,
        tokens: u64,
    ) -> Calibrated {
        let method = counter.method();
        if counter.is_exact() {
            return Calibrated { tokens, method };
        }
        let model = model
            .map(normalize)
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| self.config.pricing.default_model().to_owned());
        let learned = self
            .lock()
            .calibrations
            .get(&(namespace.to_owned(), model))
            .copied()
            .filter(|c| c.samples > 0);
        match learned {
            Some(c) => Calibrated {
                tokens: c.apply(tokens),
                method: method + &c.method_suffix(),
            },
            None => Calibrated { tokens, method },
        }
    }
}

#[cfg(test)]
mod tests;
