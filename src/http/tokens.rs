//! `POST /v1/tokens`: the token count of a text or a message list, with its method.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::json_body::LimitedJson;
use super::state::AppState;
use crate::domain::DomainError;
use crate::domain::tokens::{Counter, messages};

/// What to count: a `text`, or `messages` (with an optional Anthropic `system`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokensBody {
    /// A text to count.
    pub text: Option<String>,
    /// A message list, OpenAI chat or Anthropic Messages: an array of message objects.
    #[schema(value_type = Option<Vec<Object>>)]
    pub messages: Option<Value>,
    /// Anthropic's top-level system prompt, a string or text blocks (with `messages` only).
    #[schema(value_type = Option<super::compress::SystemPrompt>)]
    pub system: Option<Value>,
    /// The model whose tokenizer counts (default: gpt-4o's `o200k_base`).
    pub model: Option<String>,
}

/// A token count and how it was made.
#[derive(Serialize, ToSchema)]
pub struct TokensView {
    /// The count (for messages: with the per-message overhead).
    pub tokens: u64,
    /// How it was counted: `exact:o200k_base`, `estimate:anthropic:chars/3.5`, …;
    /// message counts add the overhead (`;overhead:3/message,1/name,3/reply`).
    pub method: String,
    /// The model asked for, if any.
    pub model: Option<String>,
    /// The BPE encoding of exact counts (`o200k_base`, `cl100k_base`); null for estimates.
    pub encoding: Option<String>,
    /// True for exact counts.
    pub exact: bool,
}

/// Input checked at the edge.
enum Input {
    Text(String),
    Messages {
        messages: Vec<Value>,
        system: Option<Value>,
    },
}

impl Input {
    fn parse(body: TokensBody) -> Result<Self, AppError> {
        match (body.text, body.messages) {
            (Some(text), None) => {
                if body.system.is_some() {
                    return Err(DomainError::field(
                        "system",
                        "`system` goes with `messages`, not with `text`",
                    )
                    .into());
                }
                Ok(Self::Text(text))
            }
            (None, Some(messages)) => {
                let messages = match messages {
                    Value::Array(items) if items.iter().all(Value::is_object) => items,
                    _ => {
                        return Err(DomainError::field(
                            "messages",
                            "must be an array of message objects",
                        )
                        .into());
                    }
                };
                let system = body.system.filter(|s| !s.is_null());
                if system
                    .as_ref()
                    .is_some_and(|s| !(s.is_string() || s.is_array()))
                {
                    return Err(DomainError::field(
                        "system",
                        "must be a string or an array of blocks",
                    )
                    .into());
                }
                Ok(Self::Messages { messages, system })
            }
            (text, _) => Err(AppError::bad_request(if text.is_some() {
                "give either `text` or `messages`, not both"
            } else {
                "give `text` (a string) or `messages` (a message list) to count"
            })
            .with("fields", vec!["text", "messages"])),
        }
    }

    fn count(&self, counter: Counter) -> u64 {
        match self {
            Self::Text(text) => counter.count_cached(text),
            Self::Messages { messages, system } => {
                counter.count_messages(messages, system.as_ref())
            }
        }
    }
}

/// Counts the tokens of a text or of a message list (OpenAI chat or Anthropic
/// Messages), exactly for OpenAI models and as a stated estimate for others.
#[utoipa::path(
    post, path = "/v1/tokens", tag = "tokens",
    request_body = TokensBody,
    responses(
        (status = 200, body = TokensView),
        (status = 400, description = "Neither or both of `text` and `messages`, or a malformed list", body = ErrorBody),
        (status = 413, description = "Body over the JSON limit", body = ErrorBody),
        (status = 422, description = "A field of the wrong type", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn count(
    State(state): State<AppState>,
    caller: Caller,
    LimitedJson(body): LimitedJson<TokensBody>,
) -> Result<Json<TokensView>, AppError> {
    let model = body.model.clone();
    let counter = Counter::for_model(model.as_deref());
    let input = Input::parse(body)?;
    let messages = matches!(input, Input::Messages { .. });
    // BPE runs ~10 MB/s: off the async workers.
    let tokens = tokio::task::spawn_blocking(move || input.count(counter))
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "token counting failed");
            AppError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error; see the server log",
            )
        })?;
    let calibrated = state
        .ledger
        .calibrate(&caller.namespace, model.as_deref(), counter, tokens)
        .await;
    let method = if messages {
        format!("{};{}", calibrated.method, messages::OVERHEAD_METHOD)
    } else {
        calibrated.method
    };
    Ok(Json(TokensView {
        tokens: calibrated.tokens,
        method,
        model,
        encoding: counter.encoding().map(|e| e.name().to_owned()),
        exact: counter.is_exact(),
    }))
}
