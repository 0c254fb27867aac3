//! Whether a governor rewrite pays for itself under prompt caching.
//!
//! Offloading is byte-stable: the same content always becomes the same
//! marker, so the provider's cached prefix survives it. The governor's
//! tiers go further — they take smaller texts out of earlier messages — and
//! the first turn that does so changes bytes inside what the provider had
//! cached: everything from the first edited message on is written to the
//! cache again instead of read from it. It saves the removed tokens on this
//! turn and on every later one. So a rewrite is made only when
//!
//! ```text
//! removed × read × (turns ahead + 1)  >  (tail − removed) × (write − read)
//! ```
//!
//! with `read`/`write` the model's cache prices (no cache: both the input
//! price, and a rewrite costs nothing extra), `tail` the tokens from the
//! first edited message to the end (all of the request and Cairn's tools
//! when the rewrite would be the first to bring them: tools come first in
//! the cache order), and `turns ahead` the turns the
//! conversation has had so far (a conversation is expected to go on about as
//! long as it has gone), at most [`MAX_TURNS_AHEAD`]. The tier says what
//! may be taken out (`warn`: texts over 6,000 characters, `pointer_only`:
//! over 1,000); this says whether it is. Once a conversation is governed it
//! stays governed (undoing it would move the prefix again).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::exchanges::cost::Caching;
use crate::domain::ledger::pricing::Price;

/// The most turns ahead a decision counts on.
pub const MAX_TURNS_AHEAD: u64 = 50;

/// A governor decision and its figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GovernDecision {
    /// True when the rewrite was made.
    pub governed: bool,
    /// Why: `pays` (modelled saving above the cost), `does_not_pay`, or
    /// `governed_before` (the conversation was governed on an earlier turn).
    pub reason: String,
    /// Tokens the rewrite takes out.
    pub removed_tokens: u64,
    /// Tokens from the first edited message to the end (written to the cache again).
    pub tail_tokens: u64,
    /// Turns ahead the saving is counted over.
    pub turns_ahead: u64,
    /// USD the rewrite costs now (cache writes instead of reads).
    pub cost_usd: f64,
    /// USD it saves over this turn and the turns ahead.
    pub saving_usd: f64,
}

/// Weighs a rewrite that removes `removed` tokens and rewrites `tail`.
pub fn weigh(
    caching: Caching,
    price: &Price,
    removed: u64,
    tail: u64,
    turns_so_far: u64,
) -> GovernDecision {
    let (read, write) = if caching.caches() {
        (price.cache_read_per_mtok, caching.write_rate(price))
    } else {
        (price.input_per_mtok, price.input_per_mtok)
    };
    let turns_ahead = turns_so_far.clamp(1, MAX_TURNS_AHEAD);
    let cost_usd = tail.saturating_sub(removed) as f64 * (write - read).max(0.0) / 1e6;
    let saving_usd = removed as f64 * read * (turns_ahead + 1) as f64 / 1e6;
    let governed = saving_usd > cost_usd;
    GovernDecision {
        governed,
        reason: if governed { "pays" } else { "does_not_pay" }.into(),
        removed_tokens: removed,
        tail_tokens: tail,
        turns_ahead,
        cost_usd,
        saving_usd,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ledger::pricing::Pricing;
    use crate::domain::proxying::Provider;

    #[test]
    fn a_rewrite_is_made_only_when_it_pays_under_caching() {
        let sonnet = Pricing::default().price(Some("claude-sonnet-4-5"));
        let cached = Caching::of(Provider::Anthropic, br#"{"cache_control":{}}"#);
        // 2,000 tokens out of a 100,000-token tail, 3 turns in: the cache
        // writes cost more than the reads saved.
        let early = weigh(cached, &sonnet, 2_000, 100_000, 3);
        assert!(
            !early.governed && early.cost_usd > early.saving_usd,
            "{early:?}"
        );
        assert_eq!(early.reason, "does_not_pay");
        // The same rewrite near the end of the history pays.
        let late = weigh(cached, &sonnet, 2_000, 2_500, 3);
        assert!(late.governed, "{late:?}");
        // A long conversation has more turns to earn it back (bounded).
        let long = weigh(cached, &sonnet, 20_000, 100_000, 400);
        assert_eq!(long.turns_ahead, MAX_TURNS_AHEAD);
        assert!(long.governed, "{long:?}");
        // No cache to break: a rewrite always pays.
        let plain = Caching::of(Provider::Anthropic, b"{}");
        let uncached = weigh(plain, &sonnet, 10, 1_000_000, 1);
        assert!(
            uncached.governed && uncached.cost_usd == 0.0,
            "{uncached:?}"
        );
        // OpenAI: a write costs the input price, a read a tenth of it (gpt-5).
        let gpt = Pricing::default().price(Some("gpt-5"));
        let d = weigh(Caching::OpenAi, &gpt, 1_000, 50_000, 4);
        let cost = 49_000.0 * (1.25 - 0.125) / 1e6;
        assert!((d.cost_usd - cost).abs() < 1e-12, "{d:?}");
        assert!(!d.governed);
    }
}
