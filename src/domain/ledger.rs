//! Per-namespace accounting: tokens and cost saved, governor decisions,
//! provider-reported usage, calibration of estimates and daily budgets.
//!
//! INTERFACE STUB: the signatures are the contract other modules call; the
//! ledger issue work replaces the bodies with persistent accounting.

use std::sync::Arc;

use super::DomainError;
use super::tokens::Counter;
use crate::storage::meta::MetaStore;

/// Where a saving came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SavingSource {
    /// A put answered with a summary and pointer instead of the content.
    Put,
    /// `POST /v1/compress` (or the governor applying it) offloaded or folded messages.
    Compress,
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

/// The accounting service.
pub struct Ledger {
    #[allow(dead_code)]
    meta: Arc<dyn MetaStore>,
}

impl Ledger {
    /// A ledger over the metadata store.
    pub fn new(meta: Arc<dyn MetaStore>) -> Self {
        Self { meta }
    }

    /// Records tokens saved in `namespace` (and their cost, priced for `model`).
    pub async fn record_saving(
        &self,
        _namespace: &str,
        _source: SavingSource,
        _model: Option<&str>,
        _tokens_saved: u64,
    ) -> Result<(), DomainError> {
        Ok(())
    }

    /// Records one governor decision (`normal`, `warn` or `pointer_only`).
    pub async fn record_governor(&self, _namespace: &str, _tier: &str) -> Result<(), DomainError> {
        Ok(())
    }

    /// Fails with a budget error once the namespace's daily token or cost budget is spent.
    pub async fn check_budget(&self, _namespace: &str) -> Result<(), DomainError> {
        Ok(())
    }

    /// Applies the namespace's learned calibration factor for `model` to an estimate
    /// (exact counts pass through unchanged).
    pub async fn calibrate(
        &self,
        _namespace: &str,
        _model: Option<&str>,
        counter: Counter,
        tokens: u64,
    ) -> Calibrated {
        Calibrated {
            tokens,
            method: counter.method(),
        }
    }
}
