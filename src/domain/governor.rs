//! The token governor: which tier a context is in (normal, warn,
//! pointer-only), the limits in force for a namespace and model, the advice
//! an agent can inject, and the compression each tier demands.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use serde_json::Value;

use super::DomainError;
use super::compress::{Accounted, Compressor, Input, Options, Policy, Strategy, account};
use super::ledger::Ledger;

/// Offload threshold of the `warn` tier's compression (characters).
pub const WARN_THRESHOLD_CHARS: usize = 6000;
/// Tool results kept verbatim by the `warn` tier's compression.
pub const WARN_MASK_KEEP: usize = 3;
/// Offload threshold of the `pointer_only` tier's compression (characters).
pub const POINTER_ONLY_THRESHOLD_CHARS: usize = 1000;
/// Tool results kept verbatim by the `pointer_only` tier's compression.
pub const POINTER_ONLY_MASK_KEEP: usize = 1;

/// Token counts where the tiers begin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// `warn` from this many tokens.
    pub warn: u64,
    /// `pointer_only` from this many tokens.
    pub pointer_only: u64,
}

impl Limits {
    fn check(self, what: &str) -> Result<Self, String> {
        if self.warn == 0 || self.warn >= self.pointer_only {
            return Err(format!(
                "{what}: warn ({}) must be at least 1 and below pointer_only ({})",
                self.warn, self.pointer_only
            ));
        }
        Ok(self)
    }
}

/// A governor tier, ordered from `Normal` up to `PointerOnly`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Below the warn limit: nothing to do.
    Normal,
    /// From the warn limit: offload big outputs, fetch small ranges.
    Warn,
    /// From the pointer-only limit: keep only summaries and pointers.
    PointerOnly,
}

impl Tier {
    /// The tier of a context of `tokens` tokens.
    pub fn of(tokens: u64, limits: Limits) -> Self {
        if tokens >= limits.pointer_only {
            Self::PointerOnly
        } else if tokens >= limits.warn {
            Self::Warn
        } else {
            Self::Normal
        }
    }

    /// `normal`, `warn` or `pointer_only`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Warn => "warn",
            Self::PointerOnly => "pointer_only",
        }
    }

    /// The compression this tier demands (None for `normal`); a named
    /// strategy replaces the tier's own choice.
    ///
    /// `warn`: pointer at 6,000 characters plus observation masking keeping
    /// the last 3 tool results. `pointer_only`: pointer at 1,000 characters
    /// plus masking keeping only the last tool result.
    pub fn policy(self, strategy: Option<Strategy>) -> Option<Policy> {
        match (self, strategy) {
            (Self::Normal, _) => None,
            (_, Some(strategy)) => Some(Policy::Strategy(strategy)),
            (Self::Warn, None) => Some(Policy::PointerAndMasking {
                threshold_chars: WARN_THRESHOLD_CHARS,
                mask_keep: WARN_MASK_KEEP,
            }),
            (Self::PointerOnly, None) => Some(Policy::PointerAndMasking {
                threshold_chars: POINTER_ONLY_THRESHOLD_CHARS,
                mask_keep: POINTER_ONLY_MASK_KEEP,
            }),
        }
    }

    /// A short text an agent can put in its context.
    pub fn advice(self, tokens: u64, limits: Limits) -> String {
        let at = kilo(tokens);
        match self {
            Self::Normal => format!(
                "Context is at {at} tokens (warn from {}): no action needed.",
                kilo(limits.warn)
            ),
            Self::Warn => format!(
                "Context is at {at} tokens (warn from {}, pointer-only from {}). Store tool outputs over 6,000 characters with memory_put and keep only the summary and mem:// pointer; fetch small ranges with memory_fetch (at most 200 lines) instead of whole contents.",
                kilo(limits.warn),
                kilo(limits.pointer_only)
            ),
            Self::PointerOnly => format!(
                "Context is at {at} tokens (pointer-only from {}). Keep only summaries and mem:// pointers in context: store every tool output with memory_put, fetch at most 100 lines at a time with memory_fetch, and compress the history (POST /v1/compress).",
                kilo(limits.pointer_only)
            ),
        }
    }
}

/// `27.3k`, `20k`, `950`.
fn kilo(tokens: u64) -> String {
    if tokens < 1000 {
        return tokens.to_string();
    }
    let tenths = (tokens + 50) / 100;
    if tenths.is_multiple_of(10) {
        format!("{}k", tenths / 10)
    } else {
        format!("{}.{}k", tenths / 10, tenths % 10)
    }
}

/// The governor file: limits per model and per namespace.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct GovernorFile {
    #[serde(default)]
    models: BTreeMap<String, Limits>,
    #[serde(default)]
    namespaces: BTreeMap<String, Limits>,
}

/// Limits in force: global, per model, per namespace (namespace wins over model over global).
#[derive(Clone, Debug)]
pub struct GovernorConfig {
    global: Limits,
    models: BTreeMap<String, Limits>,
    namespaces: BTreeMap<String, Limits>,
}

impl GovernorConfig {
    /// Global limits only.
    pub fn new(global: Limits) -> Result<Self, String> {
        Ok(Self {
            global: global.check("governor limits")?,
            models: BTreeMap::new(),
            namespaces: BTreeMap::new(),
        })
    }

    /// Global limits plus those of a JSON file
    /// `{"models": {"gpt-4.1": {"warn": .., "pointer_only": ..}}, "namespaces": {..}}`.
    pub fn with_file(global: Limits, path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read governor file {}: {e}", path.display()))?;
        Self::with_json(global, &text).map_err(|e| format!("governor file {}: {e}", path.display()))
    }

    /// Global limits plus those of the governor file's JSON text.
    pub fn with_json(global: Limits, json: &str) -> Result<Self, String> {
        let file: GovernorFile = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let mut config = Self::new(global)?;
        for (model, limits) in file.models {
            let limits = limits.check(&format!("models.{model}"))?;
            config.models.insert(model.to_ascii_lowercase(), limits);
        }
        for (namespace, limits) in file.namespaces {
            let limits = limits.check(&format!("namespaces.{namespace}"))?;
            config.namespaces.insert(namespace, limits);
        }
        Ok(config)
    }

    /// The limits for a namespace and model, and where they come from
    /// (`namespace`, `model` or `global`). A model entry applies to the
    /// model of that name and to names it begins (`gpt-4.1` covers
    /// `gpt-4.1-mini`); the longest such entry wins.
    pub fn limits(&self, namespace: &str, model: Option<&str>) -> (Limits, &'static str) {
        if let Some(limits) = self.namespaces.get(namespace) {
            return (*limits, "namespace");
        }
        if let Some(model) = model.map(str::to_ascii_lowercase) {
            let found = self
                .models
                .iter()
                .filter(|(name, _)| model.starts_with(name.as_str()))
                .max_by_key(|(name, _)| name.len());
            if let Some((_, limits)) = found {
                return (*limits, "model");
            }
        }
        (self.global, "global")
    }
}

/// What the governor is asked about: a message list or a token count.
#[derive(Debug)]
pub enum Subject {
    /// Messages to count (and compress when applying).
    Messages(Input),
    /// A count the client already has.
    Tokens(u64),
}

/// A governor decision.
#[derive(Debug)]
pub struct Decision {
    /// Context tokens (calibrated when estimated).
    pub tokens: u64,
    /// How they were counted.
    pub method: String,
    /// The tier.
    pub tier: Tier,
    /// The limits in force.
    pub limits: Limits,
    /// Where the limits come from: `namespace`, `model` or `global`.
    pub limits_from: &'static str,
    /// Tokens once compressed as the tier demands (the count itself when it demands nothing).
    pub tokens_after_compression: u64,
    /// With `apply`, when the tier demands a compression and messages were
    /// given: the compression, stored and accounted.
    pub compressed: Option<Accounted>,
    /// The messages as given (normal tier, or nothing to compress).
    pub unchanged: Option<(Vec<Value>, Option<Value>)>,
}

/// A question to the governor.
#[derive(Debug)]
pub struct Question {
    /// Messages or a token count.
    pub subject: Subject,
    /// The model: picks the counter and the model's limits.
    pub model: Option<String>,
    /// Strategy to use instead of the tier's own compression.
    pub strategy: Option<Strategy>,
    /// Parameters of that compression.
    pub options: Options,
    /// Store and return the compressed messages (else a dry run).
    pub apply: bool,
}

/// Counts, finds the tier and compresses as it demands: for real with
/// `apply` (stored, its saving recorded), as a dry run (nothing stored)
/// otherwise. The decision is counted in the ledger and the metrics.
pub async fn decide(
    compressor: &Compressor,
    ledger: &Ledger,
    config: &GovernorConfig,
    namespace: &str,
    question: Question,
) -> Result<Decision, DomainError> {
    let decision = judge(compressor, ledger, config, namespace, question).await?;
    ledger
        .record_governor(namespace, decision.tier.name())
        .await?;
    #[allow(clippy::cast_precision_loss)]
    ledger
        .metrics()
        .context_tokens
        .with_label_values(&["governor"])
        .observe(decision.tokens as f64);
    Ok(decision)
}

async fn judge(
    compressor: &Compressor,
    ledger: &Ledger,
    config: &GovernorConfig,
    namespace: &str,
    question: Question,
) -> Result<Decision, DomainError> {
    let Question {
        subject,
        model,
        strategy,
        options,
        apply,
    } = question;
    let (limits, limits_from) = config.limits(namespace, model.as_deref());
    let input = match subject {
        Subject::Tokens(tokens) => {
            return Ok(Decision {
                tokens,
                method: "reported".to_owned(),
                tier: Tier::of(tokens, limits),
                limits,
                limits_from,
                tokens_after_compression: tokens,
                compressed: None,
                unchanged: None,
            });
        }
        Subject::Messages(input) => input,
    };
    let (input, raw, counter) = compressor.count(input).await?;
    let counted = ledger
        .calibrate(namespace, model.as_deref(), counter, raw)
        .await;
    let tier = Tier::of(counted.tokens, limits);
    let mut decision = Decision {
        tokens: counted.tokens,
        method: counted.method,
        tier,
        limits,
        limits_from,
        tokens_after_compression: counted.tokens,
        compressed: None,
        unchanged: None,
    };
    let Some(policy) = tier.policy(strategy) else {
        decision.unchanged = Some((input.messages, input.system));
        return Ok(decision);
    };
    let outcome = compressor
        .compress(namespace, input, policy, options, !apply)
        .await?;
    if apply {
        let accounted = account(outcome, ledger, namespace, model.as_deref()).await?;
        decision.tokens_after_compression = accounted.tokens_after;
        decision.compressed = Some(accounted);
    } else {
        let m = model.as_deref();
        let after = ledger
            .calibrate(namespace, m, outcome.counter, outcome.tokens_after)
            .await;
        decision.tokens_after_compression = after.tokens;
    }
    Ok(decision)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GLOBAL: Limits = Limits {
        warn: 20_000,
        pointer_only: 40_000,
    };

    #[test]
    fn tiers_begin_at_their_limits() {
        assert_eq!(Tier::of(19_999, GLOBAL), Tier::Normal);
        assert_eq!(Tier::of(20_000, GLOBAL), Tier::Warn);
        assert_eq!(Tier::of(40_000, GLOBAL), Tier::PointerOnly);
        assert_eq!(kilo(27_345), "27.3k");
        assert_eq!(kilo(20_000), "20k");
        assert!(
            Tier::Warn
                .advice(27_345, GLOBAL)
                .starts_with("Context is at 27.3k tokens (warn from 20k, pointer-only from 40k).")
        );
    }

    #[test]
    fn namespace_wins_over_model_over_global() {
        let config = GovernorConfig::with_json(
            GLOBAL,
            r#"{"models": {"gpt-4.1": {"warn": 50000, "pointer_only": 90000},
                           "gpt-4.1-mini": {"warn": 10000, "pointer_only": 20000}},
                "namespaces": {"tight": {"warn": 1000, "pointer_only": 2000}}}"#,
        )
        .unwrap();
        assert_eq!(config.limits("tight", Some("gpt-4.1")).1, "namespace");
        assert_eq!(config.limits("x", Some("GPT-4.1")).0.warn, 50_000);
        assert_eq!(config.limits("x", Some("gpt-4.1-mini-2025")).0.warn, 10_000);
        assert_eq!(config.limits("x", Some("gpt-4o")), (GLOBAL, "global"));
    }

    #[test]
    fn bad_files_are_refused_with_the_entry_named() {
        let err = GovernorConfig::with_json(
            GLOBAL,
            r#"{"models": {"m": {"warn": 5, "pointer_only": 5}}}"#,
        )
        .unwrap_err();
        assert!(err.starts_with("models.m: warn (5)"), "{err}");
        assert!(GovernorConfig::with_json(GLOBAL, r#"{"model": {}}"#).is_err());
        assert!(
            GovernorConfig::new(Limits {
                warn: 10,
                pointer_only: 5
            })
            .is_err()
        );
    }
}
