//! What an exchange cost, and what the same request would have cost sent
//! untouched: the provider's usage priced at list prices (cache reads and
//! writes at their own rates), and a model of the untouched request under
//! the provider's caching rules.
//!
//! The untouched request's input is the upstream's own count of what went
//! up, scaled by the bytes the client sent over the bytes Cairn sent up: the
//! provider's own tokens per byte of this very request, so Cairn's tools
//! and markers, the pieces taken out and the provider's tokenizer are all
//! accounted for without a second tokenizer. Its cached part is what it shared with
//! the thread's previous untouched request (the same settings and tools, the
//! same leading messages), if that one was recent enough to be cached:
//! - OpenAI caches any prefix of ≥ 1,024 tokens by itself, in 128-token
//!   steps, for about 5 minutes; writes cost nothing extra.
//! - Anthropic caches only where the client puts `cache_control`
//!   breakpoints (clients such as Claude Code put one on the last message):
//!   the shared part is read, the rest written, for 5 minutes (or an hour
//!   with `"ttl": "1h"`); under 1,024 tokens nothing is cached.

use std::hash::{BuildHasher, Hasher};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::ledger::pricing::Price;
use crate::domain::proxying::Provider;
use crate::domain::proxying::usage::Usage;

/// Smallest prompt either provider caches.
const MIN_CACHED: u64 = 1_024;
/// OpenAI's cache hits come in steps of this many tokens.
const OPENAI_STEP: u64 = 128;
/// How long a cached prefix lives: 5 minutes, or Anthropic's 1-hour TTL.
const SHORT_TTL_MS: i64 = 5 * 60 * 1_000;
const HOUR_TTL_MS: i64 = 60 * 60 * 1_000;

/// The untouched request's modelled usage and cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Counterfactual {
    /// Input tokens, cached ones included.
    pub input: u64,
    /// Of those, read from the prompt cache.
    pub cache_read: u64,
    /// Of those, written to the prompt cache.
    pub cache_write: u64,
    /// Output tokens (the final answer's: without Cairn there are no hidden rounds).
    pub output: u64,
    /// USD at list prices.
    pub usd: f64,
    /// How it was worked out.
    pub method: String,
}

/// How the provider caches this client's requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caching {
    /// Automatic prefix caching.
    OpenAi,
    /// Caching at the client's `cache_control` breakpoints.
    Anthropic {
        /// The request has breakpoints.
        breakpoints: bool,
        /// A breakpoint asks for the 1-hour TTL.
        hour: bool,
    },
}

impl Caching {
    /// The caching that applies to a request as its client wrote it.
    pub fn of(provider: Provider, client: &[u8]) -> Self {
        match provider {
            Provider::OpenAi => Self::OpenAi,
            Provider::Anthropic => Self::Anthropic {
                breakpoints: memchr::memmem::find(client, b"\"cache_control\"").is_some(),
                hour: memchr::memmem::find(client, b"\"1h\"").is_some(),
            },
        }
    }

    /// The caching of a request body read as a value (see [`Caching::of`]).
    pub fn of_value(provider: Provider, body: &Value) -> Self {
        match provider {
            Provider::OpenAi => Self::OpenAi,
            Provider::Anthropic => {
                let mut found = (false, false);
                find_breakpoints(body, &mut found);
                Self::Anthropic {
                    breakpoints: found.0,
                    hour: found.1,
                }
            }
        }
    }

    /// True when the provider caches these requests at all.
    pub fn caches(self) -> bool {
        !matches!(
            self,
            Self::Anthropic {
                breakpoints: false,
                ..
            }
        )
    }

    /// The price per million tokens of a cache write.
    pub fn write_rate(self, price: &Price) -> f64 {
        match self {
            Self::Anthropic { hour: true, .. } => price.cache_write_1h_per_mtok,
            _ => price.cache_write_per_mtok,
        }
    }

    fn ttl_ms(self) -> i64 {
        match self {
            Self::Anthropic { hour: true, .. } => HOUR_TTL_MS,
            _ => SHORT_TTL_MS,
        }
    }

    /// USD of `input` tokens (of which `read` and `write` cached) and `output`.
    pub fn cost(self, price: &Price, input: u64, read: u64, write: u64, output: u64) -> f64 {
        let write_rate = self.write_rate(price);
        let plain = input.saturating_sub(read).saturating_sub(write);
        (plain as f64 * price.input_per_mtok
            + read as f64 * price.cache_read_per_mtok
            + write as f64 * write_rate
            + output as f64 * price.output_per_mtok)
            / 1e6
    }
}

/// Sets `found.0` when `value` holds a `cache_control`, `found.1` when one asks for an hour.
fn find_breakpoints(value: &Value, found: &mut (bool, bool)) {
    match value {
        Value::Object(map) => {
            if let Some(control) = map.get("cache_control") {
                found.0 = true;
                found.1 |= control["ttl"] == "1h";
            }
            for (key, inner) in map {
                if key != "cache_control" && !found.1 {
                    find_breakpoints(inner, found);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                if found.1 {
                    break;
                }
                find_breakpoints(item, found);
            }
        }
        _ => {}
    }
}

/// The fields besides the message list that make up a provider's cached
/// prefix (others — `stream`, `max_tokens`, `temperature` — do not).
const CACHED_SETTINGS: [&str; 7] = [
    "model",
    "system",
    "instructions",
    "tools",
    "tool_choice",
    "thinking",
    "reasoning",
];

/// A request as its client sent it, reduced to what decides a shared
/// prefix: a hash and size of its cached settings ([`CACHED_SETTINGS`]) and
/// of each message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    settings: (u64, u64),
    items: Vec<(u64, u64)>,
}

impl Profile {
    /// The profile of `body`, whose message list is under `list`.
    pub fn of(body: &Value, list: &str) -> Self {
        let Value::Object(fields) = body else {
            return Self::default();
        };
        let mut settings = HashingWriter::default();
        let mut items = Vec::new();
        for (key, value) in fields {
            match value {
                Value::Array(list_items) if key == list => {
                    items = list_items.iter().map(HashingWriter::of_message).collect();
                }
                _ if CACHED_SETTINGS.contains(&key.as_str()) => {
                    settings.add(key.as_bytes());
                    let _ = serde_json::to_writer(&mut settings, value);
                }
                _ => {}
            }
        }
        Self {
            settings: settings.finish(),
            items,
        }
    }

    fn bytes(&self) -> u64 {
        self.settings.1 + self.items.iter().map(|(_, n)| n).sum::<u64>()
    }

    /// The share (0 to 1, by bytes) of `earlier` that starts this request too.
    pub fn shared_with(&self, earlier: &Self) -> f64 {
        if self.settings != earlier.settings || earlier.bytes() == 0 {
            return 0.0;
        }
        let shared: u64 = self
            .items
            .iter()
            .zip(&earlier.items)
            .take_while(|(a, b)| a == b)
            .map(|(_, (_, n))| n)
            .sum();
        (self.settings.1 + shared) as f64 / earlier.bytes() as f64
    }
}

fn contains_cache_control(value: &Value) -> bool {
    let mut found = (false, false);
    find_breakpoints(value, &mut found);
    found.0
}

fn strip_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

/// Hashes what is written to it and counts the bytes. The hash is
/// foldhash's with fixed seeds (several times SipHash's speed on long
/// texts): profiles are compared within this process only, never stored.
struct HashingWriter {
    hasher: foldhash::fast::FoldHasher<'static>,
    bytes: u64,
}

impl Default for HashingWriter {
    fn default() -> Self {
        Self {
            hasher: foldhash::fast::FixedState::default().build_hasher(),
            bytes: 0,
        }
    }
}

impl HashingWriter {
    /// The hash and size of a message, its `cache_control` breakpoints left
    /// out: clients move them from turn to turn and the provider's cached
    /// prefix does not depend on where they sit.
    fn of_message(value: &Value) -> (u64, u64) {
        let mut writer = Self::default();
        if contains_cache_control(value) {
            let mut stripped = value.clone();
            strip_cache_control(&mut stripped);
            let _ = serde_json::to_writer(&mut writer, &stripped);
        } else {
            let _ = serde_json::to_writer(&mut writer, value);
        }
        writer.finish()
    }

    fn add(&mut self, bytes: &[u8]) {
        self.hasher.write(bytes);
        self.bytes += bytes.len() as u64;
    }

    fn finish(&self) -> (u64, u64) {
        (self.hasher.finish(), self.bytes)
    }
}

impl std::io::Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.add(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The thread's previous untouched request, as the model of this one needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Previous {
    /// Its modelled input tokens.
    pub input: u64,
    /// The share of it this request starts with.
    pub shared: f64,
    /// How long before this request it was sent, in milliseconds.
    pub age_ms: i64,
}

/// The untouched request's input tokens: the upstream's count of the first
/// round (`upstream_bytes` sent up) scaled to the `client_bytes` the client sent.
pub fn untouched_input(first_input: u64, client_bytes: usize, upstream_bytes: usize) -> u64 {
    if upstream_bytes == 0 {
        return first_input;
    }
    (first_input as f64 * client_bytes as f64 / upstream_bytes as f64).round() as u64
}

/// What the untouched request would have cost: `first` is the upstream's
/// usage of the first round (what Cairn sent), `input` the untouched
/// request's input tokens ([`untouched_input`]), `output` the final
/// answer's output tokens.
pub fn counterfactual(
    caching: Caching,
    price: &Price,
    first: Usage,
    input: u64,
    output: u64,
    previous: Option<Previous>,
) -> Counterfactual {
    let cached = previous
        .filter(|p| p.age_ms <= caching.ttl_ms())
        .map_or(0, |p| {
            ((p.input as f64 * p.shared).floor() as u64).min(input)
        });
    let (cache_read, cache_write, rule) = match caching {
        Caching::OpenAi if cached >= MIN_CACHED => (
            cached - (cached - MIN_CACHED) % OPENAI_STEP,
            0,
            "OpenAI automatic prefix cache",
        ),
        Caching::OpenAi => (0, 0, "OpenAI automatic prefix cache"),
        Caching::Anthropic {
            breakpoints: true, ..
        } if input >= MIN_CACHED => (
            cached,
            input - cached,
            "Anthropic cache_control breakpoints",
        ),
        Caching::Anthropic {
            breakpoints: true, ..
        } => (0, 0, "Anthropic: under 1,024 tokens nothing is cached"),
        Caching::Anthropic { .. } => (0, 0, "Anthropic, no cache_control breakpoint"),
    };
    Counterfactual {
        input,
        cache_read,
        cache_write,
        output,
        usd: caching.cost(price, input, cache_read, cache_write, output),
        method: format!(
            "modelled: the upstream's input count of round 1 ({}) scaled by the bytes the client \
             sent over the bytes sent up; cached: the prefix shared with the thread's previous \
             untouched request ({rule})",
            first.input
        ),
    }
}

/// The counterfactual of a request that went up as the client sent it, in
/// one round: what was billed.
pub fn as_billed(caching: Caching, price: &Price, first: Usage) -> Counterfactual {
    Counterfactual {
        input: first.input,
        cache_read: first.cache_read,
        cache_write: first.cache_write,
        output: first.output,
        usd: caching.cost(
            price,
            first.input,
            first.cache_read,
            first.cache_write,
            first.output,
        ),
        method: "as billed: the request went upstream untouched".into(),
    }
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
