//! Cairn in the loop: what the LLM proxy does to a provider request before it
//! goes upstream (offload, govern), the exchange's rounds with the upstream
//! and Cairn's tools behind two ports ([`exchange`]), and the accounting of
//! what comes back. Provider-neutral logic over JSON bodies; the HTTP side
//! (routes, keys, headers, the HTTP client, the tools' answers) is
//! `http::proxy`.

pub mod exchange;
pub mod exchanges;
pub mod first_offload;
pub mod govern_cost;
pub mod rewrite;
pub mod spliced;
pub mod sse;
pub mod tiers;
pub mod usage;
pub mod wire;

/// A provider whose API Cairn speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// OpenAI and OpenAI-compatible servers (vLLM, Ollama, LiteLLM, OpenRouter).
    OpenAi,
    /// Anthropic.
    Anthropic,
}

impl Provider {
    /// `openai` or `anthropic` (metric label).
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// The variable that enables this provider's routes.
    pub fn url_variable(self) -> &'static str {
        match self {
            Self::OpenAi => "CAIRN_UPSTREAM_OPENAI_URL",
            Self::Anthropic => "CAIRN_UPSTREAM_ANTHROPIC_URL",
        }
    }
}

/// A proxied endpoint that Cairn rewrites (the others pass through).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// OpenAI `POST /v1/chat/completions`.
    Chat,
    /// OpenAI `POST /v1/responses`.
    Responses,
    /// Anthropic `POST /v1/messages`.
    Messages,
}

impl Endpoint {
    /// The provider behind the endpoint.
    pub fn provider(self) -> Provider {
        match self {
            Self::Chat | Self::Responses => Provider::OpenAi,
            Self::Messages => Provider::Anthropic,
        }
    }

    /// The path after the upstream base URL.
    pub fn upstream_path(self) -> &'static str {
        match self {
            Self::Chat => "/chat/completions",
            Self::Responses => "/responses",
            Self::Messages => "/v1/messages",
        }
    }

    /// Metric label.
    pub fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat_completions",
            Self::Responses => "responses",
            Self::Messages => "messages",
        }
    }
}
