//! Token counts: exact BPE for OpenAI models, stated estimates for the others.
//!
//! Every count travels with its method (see [`Counter::method`]), so a client
//! always knows whether it holds an exact figure or an estimate.
//!
//! Message lists (OpenAI chat and Anthropic Messages) are counted in
//! [`messages`]; stored contents, frame by frame, in [`stream`]. Counts of
//! large texts are kept by content hash ([`Counter::count_cached`]).

use std::collections::HashMap;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

mod ascii_pieces;
mod fast;
pub mod messages;
mod pieces;
#[cfg(test)]
mod reference_tests;
pub mod stream;

/// How [`estimate`] counts, reported beside every count it makes.
pub const ESTIMATE_METHOD: &str = "estimate:bytes/4";

/// Estimated tokens of content of `bytes` bytes (about 4 bytes a token for English and code).
pub fn estimate(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

/// An OpenAI byte-pair encoding whose tables are compiled into the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// gpt-4o, gpt-4.1, gpt-5 and the o-series.
    O200kBase,
    /// gpt-4 and gpt-3.5.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name as OpenAI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// The method string of exact counts with this encoding (`exact:o200k_base`).
    pub fn exact_method(self) -> &'static str {
        match self {
            Self::O200kBase => "exact:o200k_base",
            Self::Cl100kBase => "exact:cl100k_base",
        }
    }

    /// Tokens of a text whose SHA-256 is `digest`: from the cache, else `count()`
    /// (whose answer is then kept). `count` must count with this encoding.
    pub fn cached(self, digest: [u8; 32], count: impl FnOnce() -> u64) -> u64 {
        let entry = COUNTS.entry((self, digest)).or_insert_with(count);
        note_lookup(entry.is_fresh());
        entry.into_value()
    }

    /// Like [`Encoding::cached`] for a count that may not exist (content that
    /// is not text): only counts that exist are kept.
    pub fn cached_if(self, digest: [u8; 32], count: impl FnOnce() -> Option<u64>) -> Option<u64> {
        let entry = COUNTS
            .entry((self, digest))
            .or_optionally_insert_with(count);
        note_lookup(entry.as_ref().is_none_or(moka::Entry::is_fresh));
        entry.map(moka::Entry::into_value)
    }

    /// Exact tokens of `text`: bpe-openai's figure, counted faster (see [`fast`]).
    pub fn count(self, text: &str) -> usize {
        fast::count(self, text)
    }

    /// Byte offsets in `text` where each of its first `most` tokens ends.
    pub fn token_ends(self, text: &str, most: usize) -> Vec<usize> {
        let tokenizer = self.tokenizer();
        let mut end = 0;
        tokenizer
            .encode(text)
            .into_iter()
            .take(most)
            .map(|token| {
                end += tokenizer.bpe.token_len(token);
                end
            })
            .collect()
    }

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Self::O200kBase => bpe_openai::o200k_base(),
            Self::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
}

/// The SHA-256 digests a caller has already made of texts it holds, so
/// that counting them through the cache ([`Counter::count_digested`]) costs
/// no second pass over them: the compressor hashes each piece it stores
/// once, then counts the request and the pieces again by these digests.
///
/// A text is known by where it is in memory (its address and length), not
/// by its bytes: the holder notes texts it borrows from values it keeps
/// alive and unchanged for as long as it uses the digests, so an address
/// always names the text it was noted for.
#[derive(Debug, Default)]
pub struct Digested(HashMap<(usize, usize), [u8; 32]>);

impl Digested {
    /// Notes that `text`, as it sits in memory, has SHA-256 `digest`.
    pub fn note(&mut self, text: &str, digest: [u8; 32]) {
        self.0.insert((text.as_ptr() as usize, text.len()), digest);
    }

    /// The digest noted for `text`, if this very text was noted.
    fn get(&self, text: &str) -> Option<[u8; 32]> {
        if self.0.is_empty() {
            return None;
        }
        self.0.get(&(text.as_ptr() as usize, text.len())).copied()
    }
}

/// Texts from this size on are counted through the content-hash cache: hashing
/// (~1 GB/s) is two orders of magnitude cheaper than BPE (~10 MB/s), below it
/// the cache bookkeeping is not worth it.
pub const CACHE_MIN_BYTES: usize = 4 << 10;

/// Exact counts of large texts by (encoding, SHA-256 of the text). An entry is
/// ~50 bytes, so 100,000 of them (a few MB) cover many long transcripts.
static COUNTS: LazyLock<moka::sync::Cache<(Encoding, [u8; 32]), u64>> =
    LazyLock::new(|| moka::sync::Cache::new(100_000));

/// Lookups of [`COUNTS`] that found a count, and that had to count.
static CACHE_HITS: AtomicU64 = AtomicU64::new(0);
static CACHE_MISSES: AtomicU64 = AtomicU64::new(0);

fn note_lookup(fresh: bool) {
    let counter = if fresh { &CACHE_MISSES } else { &CACHE_HITS };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Hits and misses of the process-wide token-count cache since start (for metrics).
pub fn cache_lookups() -> (u64, u64) {
    (
        CACHE_HITS.load(Ordering::Relaxed),
        CACHE_MISSES.load(Ordering::Relaxed),
    )
}

/// How tokens of one model are counted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Counter {
    /// Exact counts with the model's own encoding.
    Exact(Encoding),
    /// Characters divided by a provider's published ratio.
    Estimate {
        /// Provider family, part of the method string (`anthropic`, `gemini`, `unknown`).
        family: &'static str,
        /// Characters per token.
        chars_per_token: f64,
    },
}

impl Counter {
    /// The counter for `model`; no model means the default, gpt-4o's `o200k_base`.
    pub fn for_model(model: Option<&str>) -> Self {
        let Some(model) = model else {
            return Self::Exact(Encoding::O200kBase);
        };
        let model = model.trim().to_ascii_lowercase();
        let model = model.rsplit('/').next().unwrap_or(&model);
        let o200k = [
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "chatgpt-4o",
            "o1",
            "o3",
            "o4",
        ];
        if o200k.iter().any(|p| model.starts_with(p)) {
            return Self::Exact(Encoding::O200kBase);
        }
        let cl100k = ["gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada"];
        if cl100k.iter().any(|p| model.starts_with(p)) {
            return Self::Exact(Encoding::Cl100kBase);
        }
        if model.starts_with("claude") {
            return Self::Estimate {
                family: "anthropic",
                chars_per_token: 3.5,
            };
        }
        if model.starts_with("gemini") || model.starts_with("gemma") {
            return Self::Estimate {
                family: "gemini",
                chars_per_token: 4.0,
            };
        }
        Self::Estimate {
            family: "unknown",
            chars_per_token: 4.0,
        }
    }

    /// Tokens of `text`.
    pub fn count(&self, text: &str) -> u64 {
        match self {
            Self::Exact(encoding) => encoding.count(text) as u64,
            Self::Estimate {
                chars_per_token, ..
            } => (text.chars().count() as f64 / chars_per_token).ceil() as u64,
        }
    }

    /// Tokens of `text`, kept by content hash when the text is at least
    /// [`CACHE_MIN_BYTES`] long, so counting the same large text again costs a
    /// SHA-256 pass instead of a BPE pass.
    ///
    /// Only exact counts are cached: an estimate counts characters, which is
    /// faster than hashing them.
    pub fn count_cached(&self, text: &str) -> u64 {
        self.count_digested(text, &Digested::default())
    }

    /// Like [`Counter::count_cached`], taking the text's SHA-256 from `known`
    /// when it holds it instead of hashing the text again.
    pub fn count_digested(&self, text: &str, known: &Digested) -> u64 {
        match self {
            Self::Exact(encoding) if text.len() >= CACHE_MIN_BYTES => {
                let digest = known
                    .get(text)
                    .unwrap_or_else(|| Sha256::digest(text.as_bytes()).into());
                encoding.cached(digest, || self.count(text))
            }
            _ => self.count(text),
        }
    }

    /// Tokens of a message list, OpenAI chat or Anthropic Messages, with the
    /// per-message overhead of [`messages`] (3 a message, 1 more for a `name`,
    /// 3 priming the reply) and an Anthropic top-level `system` (string or
    /// blocks) counted as one more message. Large strings go through
    /// [`Counter::count_cached`].
    pub fn count_messages(
        &self,
        messages: &[serde_json::Value],
        system: Option<&serde_json::Value>,
    ) -> u64 {
        messages::count(self, messages, system, &Digested::default())
    }

    /// Like [`Counter::count_messages`], taking the SHA-256 of the texts
    /// `known` holds from it ([`Counter::count_digested`]).
    pub fn count_messages_digested(
        &self,
        messages: &[serde_json::Value],
        system: Option<&serde_json::Value>,
        known: &Digested,
    ) -> u64 {
        messages::count(self, messages, system, known)
    }

    /// The method of a message-list count: [`Counter::method`] and the overhead
    /// applied (`exact:o200k_base;overhead:3/message,1/name,3/reply`).
    pub fn messages_method(&self) -> String {
        format!("{};{}", self.method(), messages::OVERHEAD_METHOD)
    }

    /// The encoding of exact counts; `None` for estimates.
    pub fn encoding(&self) -> Option<Encoding> {
        match self {
            Self::Exact(encoding) => Some(*encoding),
            Self::Estimate { .. } => None,
        }
    }

    /// True for exact counts.
    pub fn is_exact(&self) -> bool {
        matches!(self, Self::Exact(_))
    }

    /// How this counter counts: `exact:o200k_base`, `estimate:anthropic:chars/3.5`, ...
    pub fn method(&self) -> String {
        match self {
            Self::Exact(encoding) => encoding.exact_method().to_owned(),
            Self::Estimate {
                family,
                chars_per_token,
            } => format!("estimate:{family}:chars/{chars_per_token}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_map_to_their_encodings() {
        assert_eq!(
            Counter::for_model(Some("gpt-4o-mini")),
            Counter::Exact(Encoding::O200kBase)
        );
        assert_eq!(
            Counter::for_model(Some("gpt-4-turbo")),
            Counter::Exact(Encoding::Cl100kBase)
        );
        assert_eq!(
            Counter::for_model(Some("o3-mini")),
            Counter::Exact(Encoding::O200kBase)
        );
        assert!(!Counter::for_model(Some("claude-sonnet-4")).is_exact());
        assert_eq!(Counter::for_model(None).method(), "exact:o200k_base");
    }

    #[test]
    fn exact_counts_match_the_reference() {
        // tiktoken: enc.encode("hello world") has 2 tokens in both encodings.
        let text = "hello world";
        assert_eq!(Counter::Exact(Encoding::O200kBase).count(text), 2);
        assert_eq!(Counter::Exact(Encoding::Cl100kBase).count(text), 2);
    }
}
