//! Token counts: exact BPE for OpenAI models, stated estimates for the others.
//!
//! Every count travels with its method (see [`Counter::method`]), so a client
//! always knows whether it holds an exact figure or an estimate.

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

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Self::O200kBase => bpe_openai::o200k_base(),
            Self::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
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
            Self::Exact(encoding) => encoding.tokenizer().count(text) as u64,
            Self::Estimate {
                chars_per_token, ..
            } => (text.chars().count() as f64 / chars_per_token).ceil() as u64,
        }
    }

    /// True for exact counts.
    pub fn is_exact(&self) -> bool {
        matches!(self, Self::Exact(_))
    }

    /// How this counter counts: `exact:o200k_base`, `estimate:anthropic:chars/3.5`, ...
    pub fn method(&self) -> String {
        match self {
            Self::Exact(encoding) => format!("exact:{}", encoding.name()),
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
