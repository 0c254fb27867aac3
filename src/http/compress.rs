//! `POST /v1/compress`: compress an OpenAI or Anthropic message list.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::json_body::LimitedJson;
use super::state::AppState;
use crate::domain::DomainError;
use crate::domain::compress::offload::StoredRef;
use crate::domain::compress::{Accounted, Input, Options, Policy, Strategy, account};

/// Anthropic's top-level system prompt as the OpenAPI document writes it: a
/// string, or an array of content blocks (`{"type": "text", "text": ...}`).
/// A schema only: the bodies keep it as JSON.
#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum SystemPrompt {
    /// The prompt as text.
    Text(String),
    /// The prompt as content blocks.
    Blocks(Vec<Value>),
}

/// Shortest and longest summary a marker may carry.
const SUMMARY_CHARS: std::ops::RangeInclusive<usize> = 50..=20_000;

/// A message list and how to compress it.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompressBody {
    /// OpenAI chat messages or Anthropic Messages turns.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
    /// Anthropic system prompt (string or blocks); passed through untouched.
    #[schema(value_type = Option<SystemPrompt>)]
    pub system: Option<Value>,
    /// `openai` or `anthropic`; detected from the shapes when absent.
    pub format: Option<String>,
    /// Model, for token counting (default gpt-4o's o200k_base).
    pub model: Option<String>,
    /// `pointer`, `observation_masking`, `sliding_window`, `selective` or `deletion`.
    #[schema(pattern = "^(pointer|observation_masking|sliding_window|selective|deletion)$")]
    pub strategy: String,
    /// `pointer`: offload texts over this many characters (default 6000).
    pub threshold_chars: Option<usize>,
    /// Longest summary in a marker (default 800, 50-20000).
    pub summary_chars: Option<usize>,
    /// Recent messages left alone (masking: tool results kept). Defaults: pointer 0,
    /// observation_masking 3, sliding_window 20, selective 6, deletion 20.
    pub keep_recent: Option<usize>,
    /// Messages at the start never edited (the cached prompt prefix); default 0.
    pub preserve_prefix: Option<usize>,
    /// Tools whose calls and results are left alone.
    #[serde(default)]
    pub leave_tools: Vec<String>,
    /// Roles left alone (`tool` means tool results in both formats).
    #[serde(default)]
    pub leave_roles: Vec<String>,
    /// Thread link of the stored pieces.
    pub thread: Option<String>,
}

/// Checks the common parameters.
pub fn options(
    threshold_chars: Option<usize>,
    summary_chars: Option<usize>,
    keep_recent: Option<usize>,
    preserve_prefix: Option<usize>,
    leave_tools: Vec<String>,
    leave_roles: Vec<String>,
) -> Result<Options, DomainError> {
    let defaults = Options::default();
    let summary_chars = summary_chars.unwrap_or(defaults.summary_chars);
    if !SUMMARY_CHARS.contains(&summary_chars) {
        return Err(DomainError::field(
            "summary_chars",
            format!(
                "must be between {} and {}",
                SUMMARY_CHARS.start(),
                SUMMARY_CHARS.end()
            ),
        ));
    }
    let threshold_chars = threshold_chars.unwrap_or(defaults.threshold_chars);
    if threshold_chars == 0 {
        return Err(DomainError::field("threshold_chars", "must be at least 1"));
    }
    Ok(Options {
        threshold_chars,
        summary_chars,
        keep_recent,
        preserve_prefix: preserve_prefix.unwrap_or(0),
        leave_tools,
        leave_roles,
        respect_cache_control: true,
    })
}

/// A stored piece the compressed messages point to.
#[derive(Serialize, ToSchema)]
pub struct MemoryRefView {
    /// Memory id.
    pub id: String,
    /// `mem://<id>`.
    pub uri: String,
    /// Title.
    pub title: Option<String>,
    /// Media type.
    pub mime: String,
    /// TOOL_OUTPUT (tool results), CONTEXT (big texts), TRANSCRIPT (folded or dropped runs).
    #[serde(rename = "type")]
    pub kind: String,
    /// Tool name, role, or the format of a transcript.
    pub subtype: Option<String>,
    /// Content bytes.
    pub bytes: u64,
    /// Content lines (a transcript has one message per line).
    pub lines: u64,
    /// Tokens of the content as the store counts them.
    pub tokens: u64,
}

impl MemoryRefView {
    fn new(stored: &StoredRef) -> Self {
        Self {
            uri: format!("mem://{}", stored.id),
            id: stored.id.clone(),
            title: stored.title.clone(),
            mime: stored.mime.clone(),
            kind: stored.kind.clone(),
            subtype: stored.subtype.clone(),
            bytes: stored.bytes,
            lines: stored.lines,
            tokens: stored.tokens,
        }
    }
}

/// One offloaded text or folded run.
#[derive(Serialize, ToSchema)]
pub struct OffloadedView {
    /// Index of the (first) message in the request.
    pub index: usize,
    /// Messages folded or dropped (0 for one offloaded text).
    pub messages: usize,
    /// Memory id.
    pub id: String,
    /// `mem://<id>`.
    pub uri: String,
    /// Tokens taken out.
    pub tokens: u64,
}

/// What compressing did.
#[derive(Serialize, ToSchema)]
pub struct ReportView {
    /// Tokens of the request's messages (and system).
    pub tokens_before: u64,
    /// Tokens of the answer's messages (and system).
    pub tokens_after: u64,
    /// `tokens_before - tokens_after`.
    pub tokens_saved: u64,
    /// How tokens were counted.
    pub method: String,
    /// The strategy applied.
    pub strategy: String,
    /// What was offloaded, in message order.
    pub offloaded: Vec<OffloadedView>,
}

/// A compressed message list.
#[derive(Serialize, ToSchema)]
pub struct CompressView {
    /// The compressed messages.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
    /// The Anthropic system prompt, unchanged (when given).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<SystemPrompt>)]
    pub system: Option<Value>,
    /// `openai` or `anthropic`.
    pub format: String,
    /// The memories the markers point to.
    pub memory_refs: Vec<MemoryRefView>,
    /// Counts and what was offloaded.
    pub report: ReportView,
}

impl From<Accounted> for CompressView {
    fn from(accounted: Accounted) -> Self {
        let Accounted {
            outcome,
            tokens_before,
            tokens_after,
            tokens_saved,
            method,
        } = accounted;
        Self {
            memory_refs: outcome.refs.iter().map(|r| MemoryRefView::new(r)).collect(),
            report: ReportView {
                tokens_before,
                tokens_after,
                tokens_saved,
                method,
                strategy: outcome.strategy.to_owned(),
                offloaded: outcome
                    .offloaded
                    .into_iter()
                    .map(|o| OffloadedView {
                        index: o.index,
                        messages: o.messages,
                        uri: format!("mem://{}", o.id),
                        id: o.id,
                        tokens: o.tokens,
                    })
                    .collect(),
            },
            format: outcome.format.name().to_owned(),
            messages: outcome.messages,
            system: outcome.system,
        }
    }
}

/// Compresses a message list: whatever is taken out is stored first and
/// replaced by a marker `[cairn: … · mem://<id> · N lines, M tokens]` and a
/// summary. Tool calls stay paired, the cached prefix (`preserve_prefix`,
/// `cache_control`) is untouched, existing markers are left as they are, and
/// compressing the answer again changes nothing.
#[utoipa::path(
    post, path = "/v1/compress", tag = "context",
    request_body = CompressBody,
    responses(
        (status = 200, description = "The compressed list and a report", body = CompressView),
        (status = 400, description = "Bad shape (`invalid_messages` with its `path`), unknown strategy or format", body = ErrorBody),
        (status = 422, description = "The body is not a compress request", body = ErrorBody),
        (status = 429, description = "The namespace's daily budget is spent", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn compress(
    State(state): State<AppState>,
    caller: Caller,
    LimitedJson(body): LimitedJson<CompressBody>,
) -> Result<Json<CompressView>, AppError> {
    state.ledger.check_budget(&caller.namespace).await?;
    let strategy = Strategy::parse(&body.strategy)?;
    let options = options(
        body.threshold_chars,
        body.summary_chars,
        body.keep_recent,
        body.preserve_prefix,
        body.leave_tools,
        body.leave_roles,
    )?;
    let model = body.model.clone();
    let input = Input {
        messages: body.messages,
        system: body.system,
        format: body.format,
        model: body.model,
        thread: body.thread,
    };
    let outcome = state
        .compressor
        .compress(
            &caller.namespace,
            input,
            Policy::Strategy(strategy),
            options,
            false,
        )
        .await?;
    let accounted = account(outcome, &state.ledger, &caller.namespace, model.as_deref()).await?;
    Ok(Json(accounted.into()))
}
