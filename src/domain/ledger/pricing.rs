//! Model prices (USD per million input, output and prompt-cache tokens): a
//! built-in table of common models (list prices as of [`TABLE_DATE`]),
//! extendable and overridable by a JSON file, looked up by the longest
//! matching prefix of the model name.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// Built-in list prices, USD per million tokens (input, output), standard tier,
/// prompts under 200k tokens. Keys are model-name prefixes; the longest wins.
const BUILT_IN: &[(&str, f64, f64)] = &[
    // OpenAI
    ("gpt-5", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.40),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4o", 2.50, 10.0),
    ("gpt-4o-mini", 0.15, 0.60),
    ("chatgpt-4o", 5.0, 15.0),
    ("gpt-4-turbo", 10.0, 30.0),
    ("gpt-4", 30.0, 60.0),
    ("gpt-3.5-turbo", 0.50, 1.50),
    ("o1", 15.0, 60.0),
    ("o1-mini", 1.10, 4.40),
    ("o3", 2.0, 8.0),
    ("o3-mini", 1.10, 4.40),
    ("o3-pro", 20.0, 80.0),
    ("o4-mini", 1.10, 4.40),
    // Anthropic
    ("claude-opus-4", 15.0, 75.0),
    ("claude-opus-4-1", 15.0, 75.0),
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-sonnet-4-5", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-3-5-haiku", 0.80, 4.0),
    ("claude-3-opus", 15.0, 75.0),
    ("claude-3-haiku", 0.25, 1.25),
    // Google
    ("gemini-2.5-pro", 1.25, 10.0),
    ("gemini-2.5-flash", 0.30, 2.50),
    ("gemini-2.5-flash-lite", 0.10, 0.40),
    ("gemini-2.0-flash", 0.10, 0.40),
    ("gemini-2.0-flash-lite", 0.075, 0.30),
    ("gemini-1.5-pro", 1.25, 5.0),
    ("gemini-1.5-flash", 0.075, 0.30),
];

/// The day the built-in table was last checked against the providers' price lists.
pub const TABLE_DATE: &str = "2026-11-27";

/// Cache prices as multiples of the input price, by model-name prefix (the
/// longest wins): (cache read, cache write for 5 minutes, for 1 hour).
/// Anthropic bills writes at 1.25× (5 min) or 2× (1 h) and reads at 0.1×;
/// OpenAI and Google bill writes as plain input and discount reads.
const CACHE_MULTIPLES: &[(&str, f64, f64, f64)] = &[
    ("claude", 0.1, 1.25, 2.0),
    ("gpt-5", 0.1, 1.0, 1.0),
    ("gpt-4.1", 0.25, 1.0, 1.0),
    ("gpt-4o", 0.5, 1.0, 1.0),
    ("chatgpt-4o", 0.5, 1.0, 1.0),
    ("o1", 0.5, 1.0, 1.0),
    ("o3", 0.25, 1.0, 1.0),
    ("o4", 0.25, 1.0, 1.0),
    ("gemini", 0.25, 1.0, 1.0),
];

/// The cache multiples of a model-name prefix; no discount when unknown.
fn cache_multiples(entry: &str) -> (f64, f64, f64) {
    CACHE_MULTIPLES
        .iter()
        .filter(|(prefix, ..)| entry.starts_with(prefix))
        .max_by_key(|(prefix, ..)| prefix.len())
        .map_or((1.0, 1.0, 1.0), |(_, read, write, hour)| {
            (*read, *write, *hour)
        })
}

/// Highest price per million tokens a pricing file may state.
const MAX_PRICE: f64 = 10_000.0;

/// A price and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Price {
    /// The table entry that matched (a model-name prefix).
    pub entry: String,
    /// USD per million input tokens.
    pub input_per_mtok: f64,
    /// USD per million output tokens.
    pub output_per_mtok: f64,
    /// USD per million input tokens read from the prompt cache.
    pub cache_read_per_mtok: f64,
    /// USD per million input tokens written to the prompt cache (5-minute TTL).
    pub cache_write_per_mtok: f64,
    /// USD per million input tokens written to the prompt cache (1-hour TTL).
    pub cache_write_1h_per_mtok: f64,
    /// True when the model matched no entry and the default model's price was used.
    pub fallback: bool,
}

impl Price {
    /// USD of `input` input tokens and `output` output tokens.
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input_per_mtok + output as f64 * self.output_per_mtok) / 1e6
    }

    /// USD of a call whose `input` tokens (all of them) include `cache_read`
    /// read from and `cache_write` written to the prompt cache (5-minute TTL).
    pub fn cost_cached(&self, input: u64, cache_read: u64, cache_write: u64, output: u64) -> f64 {
        let plain = input.saturating_sub(cache_read).saturating_sub(cache_write);
        (plain as f64 * self.input_per_mtok
            + cache_read as f64 * self.cache_read_per_mtok
            + cache_write as f64 * self.cache_write_per_mtok
            + output as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// Prices of one table entry, USD per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rates {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
    cache_write_1h: f64,
}

impl Rates {
    /// An entry's rates with the cache priced by its provider's rules.
    fn listed(entry: &str, input: f64, output: f64) -> Self {
        let (read, write, hour) = cache_multiples(entry);
        Self {
            input,
            output,
            cache_read: input * read,
            cache_write: input * write,
            cache_write_1h: input * hour,
        }
    }
}

/// One entry of a pricing file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    input_per_mtok: f64,
    output_per_mtok: f64,
    /// Defaults to the provider's rule for the name (see [`CACHE_MULTIPLES`]).
    #[serde(default)]
    cache_read_per_mtok: Option<f64>,
    #[serde(default)]
    cache_write_per_mtok: Option<f64>,
    #[serde(default)]
    cache_write_1h_per_mtok: Option<f64>,
}

/// The price table in force.
#[derive(Clone, Debug)]
pub struct Pricing {
    /// Prefix → USD per million tokens.
    prices: BTreeMap<String, Rates>,
    /// Normalized name of the model used when none is named or the named one is unknown.
    default_model: String,
}

impl Default for Pricing {
    /// The built-in table with gpt-4o as the default model.
    fn default() -> Self {
        Self {
            prices: BUILT_IN
                .iter()
                .map(|(name, input, output)| {
                    ((*name).to_owned(), Rates::listed(name, *input, *output))
                })
                .collect(),
            default_model: "gpt-4o".to_owned(),
        }
    }
}

impl Pricing {
    /// The built-in table, extended and overridden by the JSON file at `file` if
    /// given (`{"model-prefix": {"input_per_mtok": 2.5, "output_per_mtok": 10}}`,
    /// optionally with `cache_read_per_mtok`, `cache_write_per_mtok` and
    /// `cache_write_1h_per_mtok`),
    /// with `default_model` priced for unnamed or unknown models.
    pub fn load(file: Option<&Path>, default_model: &str) -> Result<Self, String> {
        let mut pricing = Self::default();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read pricing file {}: {e}", path.display()))?;
            pricing
                .extend_from_json(&text)
                .map_err(|e| format!("pricing file {}: {e}", path.display()))?;
        }
        let default_model = normalize(default_model);
        if pricing.matching(&default_model).is_none() {
            return Err(format!(
                "default model `{default_model}` has no price: add it to the pricing file or pick a priced model"
            ));
        }
        pricing.default_model = default_model;
        Ok(pricing)
    }

    /// Adds or replaces the entries of a pricing file's JSON text.
    pub fn extend_from_json(&mut self, text: &str) -> Result<(), String> {
        let entries: BTreeMap<String, FileEntry> = serde_json::from_str(text).map_err(|e| {
            format!(
                "{e}; expected {{\"model-prefix\": {{\"input_per_mtok\": 2.5, \"output_per_mtok\": 10}}, ...}}"
            )
        })?;
        for (name, entry) in entries {
            let key = normalize(&name);
            if key.is_empty() {
                return Err("a model name is empty".into());
            }
            let mut rates = Rates::listed(&key, entry.input_per_mtok, entry.output_per_mtok);
            rates.cache_read = entry.cache_read_per_mtok.unwrap_or(rates.cache_read);
            rates.cache_write = entry.cache_write_per_mtok.unwrap_or(rates.cache_write);
            rates.cache_write_1h = entry
                .cache_write_1h_per_mtok
                .unwrap_or(rates.cache_write_1h);
            for (what, value) in [
                ("input_per_mtok", rates.input),
                ("output_per_mtok", rates.output),
                ("cache_read_per_mtok", rates.cache_read),
                ("cache_write_per_mtok", rates.cache_write),
                ("cache_write_1h_per_mtok", rates.cache_write_1h),
            ] {
                if !value.is_finite() || !(0.0..=MAX_PRICE).contains(&value) {
                    return Err(format!(
                        "`{name}`: {what} must be between 0 and {MAX_PRICE} USD per million tokens, got {value}"
                    ));
                }
            }
            self.prices.insert(key, rates);
        }
        Ok(())
    }

    /// The default model's name.
    pub fn default_model(&self) -> &str {
        &self.default_model
    }

    /// The price of `model` (no model or an unknown one: the default model's, marked `fallback`).
    pub fn price(&self, model: Option<&str>) -> Price {
        let named = model.map(normalize).filter(|m| !m.is_empty());
        if let Some(price) = named.as_deref().and_then(|m| self.matching(m)) {
            return price;
        }
        let mut price = self.matching(&self.default_model).unwrap_or(Price {
            entry: self.default_model.clone(),
            input_per_mtok: 0.0,
            output_per_mtok: 0.0,
            cache_read_per_mtok: 0.0,
            cache_write_per_mtok: 0.0,
            cache_write_1h_per_mtok: 0.0,
            fallback: true,
        });
        price.fallback = named.is_some();
        price
    }

    /// The longest entry that prefixes the normalized `model`.
    fn matching(&self, model: &str) -> Option<Price> {
        self.prices
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(name, rates)| Price {
                entry: name.clone(),
                input_per_mtok: rates.input,
                output_per_mtok: rates.output,
                cache_read_per_mtok: rates.cache_read,
                cache_write_per_mtok: rates.cache_write,
                cache_write_1h_per_mtok: rates.cache_write_1h,
                fallback: false,
            })
    }
}

/// A model name as the table keys it: trimmed, lowercase, without a provider
/// path (`openai/gpt-4o` → `gpt-4o`).
pub fn normalize(model: &str) -> String {
    let model = model.trim().to_ascii_lowercase();
    match model.rsplit_once('/') {
        Some((_, name)) => name.to_owned(),
        None => model,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_longest_prefix_wins() {
        let pricing = Pricing::default();
        let mini = pricing.price(Some("gpt-4o-mini-2024-07-18"));
        assert_eq!(mini.entry, "gpt-4o-mini");
        assert_eq!((mini.input_per_mtok, mini.output_per_mtok), (0.15, 0.60));
        assert_eq!(pricing.price(Some("gpt-4o-2024-08-06")).entry, "gpt-4o");
        assert_eq!(pricing.price(Some("gpt-4.1-nano")).entry, "gpt-4.1-nano");
        assert_eq!(pricing.price(Some("gpt-4-0613")).entry, "gpt-4");
        assert_eq!(pricing.price(Some("o3-mini-high")).entry, "o3-mini");
        assert_eq!(pricing.price(Some("o3")).entry, "o3");
        assert_eq!(
            pricing.price(Some("claude-sonnet-4-5-20250929")).entry,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            pricing.price(Some("claude-3-5-haiku-latest")).entry,
            "claude-3-5-haiku"
        );
        assert_eq!(
            pricing.price(Some("Google/Gemini-2.5-Flash-Lite")).entry,
            "gemini-2.5-flash-lite"
        );
        assert!(!pricing.price(Some("gpt-5-mini")).fallback);
    }

    #[test]
    fn unknown_and_missing_models_take_the_default_price() {
        let pricing = Pricing::load(None, "claude-haiku-4-5").unwrap();
        let unknown = pricing.price(Some("llama-3-70b"));
        assert_eq!(unknown.entry, "claude-haiku-4-5");
        assert!(unknown.fallback);
        let none = pricing.price(None);
        assert_eq!(none.entry, "claude-haiku-4-5");
        assert!(!none.fallback);
    }

    #[test]
    fn cost_is_tokens_times_price_per_million() {
        let price = Pricing::default().price(Some("gpt-4o"));
        // 1,000 input tokens at $2.50/M plus 500 output at $10/M.
        let cost = price.cost(1_000, 500);
        assert!((cost - (0.0025 + 0.005)).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn the_cache_is_priced_by_the_providers_rules() {
        let pricing = Pricing::default();
        let sonnet = pricing.price(Some("claude-sonnet-4-5"));
        assert!((sonnet.cache_read_per_mtok - 0.3).abs() < 1e-9);
        assert!((sonnet.cache_write_per_mtok - 3.75).abs() < 1e-9);
        assert!((sonnet.cache_write_1h_per_mtok - 6.0).abs() < 1e-9);
        let mini = pricing.price(Some("gpt-4o-mini"));
        assert!((mini.cache_read_per_mtok - 0.075).abs() < 1e-9);
        assert!((mini.cache_write_per_mtok - 0.15).abs() < 1e-9);
        // 1,000 input of which 600 read and 100 written, 10 output, at Sonnet's prices.
        let cost = sonnet.cost_cached(1_000, 600, 100, 10);
        let expected = (300.0 * 3.0 + 600.0 * 0.3 + 100.0 * 3.75 + 10.0 * 15.0) / 1e6;
        assert!((cost - expected).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn a_pricing_file_overrides_and_extends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(
            &path,
            r#"{"gpt-4o": {"input_per_mtok": 2.0, "output_per_mtok": 8.0},
                "my-llm": {"input_per_mtok": 0.5, "output_per_mtok": 1, "cache_read_per_mtok": 0.05}}"#,
        )
        .unwrap();
        let pricing = Pricing::load(Some(&path), "my-llm").unwrap();
        assert_eq!(pricing.price(Some("gpt-4o")).input_per_mtok, 2.0);
        // Other entries stay as built in.
        assert_eq!(pricing.price(Some("gpt-4o-mini")).input_per_mtok, 0.15);
        let mine = pricing.price(Some("my-llm-7b"));
        assert_eq!((mine.entry.as_str(), mine.output_per_mtok), ("my-llm", 1.0));
        assert_eq!(mine.cache_read_per_mtok, 0.05);
        // Not stated: no discount, no surcharge for an unknown provider.
        assert_eq!(mine.cache_write_per_mtok, 0.5);
        assert_eq!(pricing.price(Some("nobody-knows")).entry, "my-llm");
    }

    #[test]
    fn bad_pricing_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        let cases = [
            (
                r#"{"x": {"input_per_mtok": -1, "output_per_mtok": 1}}"#,
                "between 0",
            ),
            (r#"{"x": {"input_per_mtok": 1}}"#, "output_per_mtok"),
            (
                r#"{"x": {"input_per_mtok": 1, "output_per_mtok": 1, "typo": 2}}"#,
                "typo",
            ),
            (r#"["gpt-4o"]"#, "expected"),
            (
                r#"{" ": {"input_per_mtok": 1, "output_per_mtok": 1}}"#,
                "empty",
            ),
        ];
        for (text, needle) in cases {
            std::fs::write(&path, text).unwrap();
            let err = Pricing::load(Some(&path), "gpt-4o").unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(err.contains("prices.json"), "{err}");
        }
        let missing = Pricing::load(Some(&dir.path().join("nope.json")), "gpt-4o").unwrap_err();
        assert!(missing.contains("cannot read"), "{missing}");
        let unpriced = Pricing::load(None, "llama-3").unwrap_err();
        assert!(unpriced.contains("no price"), "{unpriced}");
    }
}
