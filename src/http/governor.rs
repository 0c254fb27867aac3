//! `POST /v1/governor`: the context's tier, advice, and compression on demand.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::Caller;
use super::compress::{CompressView, MemoryRefView, ReportView, options};
use super::error::{AppError, ErrorBody};
use super::json_body::LimitedJson;
use super::state::AppState;
use crate::domain::DomainError;
use crate::domain::compress::{Input, Strategy};
use crate::domain::governor::{self, Decision, Question, Subject};

/// A context to judge: messages, or a token count.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GovernorBody {
    /// OpenAI chat messages or Anthropic turns (give these or `tokens`).
    #[schema(value_type = Option<Vec<Object>>)]
    pub messages: Option<Vec<Value>>,
    /// A token count the client already has (give this or `messages`).
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub tokens: Option<u64>,
    /// Anthropic system prompt.
    #[schema(value_type = Option<super::compress::SystemPrompt>)]
    pub system: Option<Value>,
    /// `openai` or `anthropic`; detected when absent.
    pub format: Option<String>,
    /// Model: picks the token counter and the model's limits.
    pub model: Option<String>,
    /// Return the messages compressed as the tier demands (stores the pieces).
    #[serde(default)]
    pub apply: bool,
    /// A compress strategy to use instead of the tier's own
    /// (warn: pointer at 6000 chars + masking keeping 3 tool results;
    /// pointer_only: pointer at 1000 chars + masking keeping 1).
    pub strategy: Option<String>,
    /// Longest summary in a marker (default 800).
    pub summary_chars: Option<usize>,
    /// Messages at the start never edited.
    pub preserve_prefix: Option<usize>,
    /// Tools whose calls and results are left alone.
    #[serde(default)]
    pub leave_tools: Vec<String>,
    /// Roles left alone.
    #[serde(default)]
    pub leave_roles: Vec<String>,
    /// Thread link of stored pieces.
    pub thread: Option<String>,
}

/// Where the tiers begin.
#[derive(Serialize, ToSchema)]
pub struct LimitsView {
    /// `warn` from this many tokens.
    pub warn: u64,
    /// `pointer_only` from this many tokens.
    pub pointer_only: u64,
    /// Where these limits come from: `namespace`, `model` or `global`.
    pub source: String,
}

/// The governor's answer.
#[derive(Serialize, ToSchema)]
pub struct GovernorView {
    /// Context tokens.
    pub tokens: u64,
    /// How they were counted (`reported` when the client gave `tokens`).
    pub method: String,
    /// `normal`, `warn` or `pointer_only`.
    pub tier: String,
    /// The limits in force.
    pub limits: LimitsView,
    /// A short text an agent can inject into its context.
    pub advice: String,
    /// Tokens once compressed as the tier demands (a dry run unless `apply`).
    pub tokens_after_compression: u64,
    /// With `apply`: the messages as the tier wants them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub messages: Option<Vec<Value>>,
    /// With `apply` and an Anthropic system prompt: that prompt, unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<super::compress::SystemPrompt>)]
    pub system: Option<Value>,
    /// With `apply`, when something was compressed: the memories the markers point to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_refs: Option<Vec<MemoryRefView>>,
    /// With `apply`, when something was compressed: the compress report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<ReportView>,
}

/// Judges a context by its tokens: `normal` below the warn limit (20k by
/// default), `warn` from it, `pointer_only` from the pointer-only limit
/// (40k). Limits come from the namespace, else the model, else the global
/// settings. Always answers the tokens the tier's compression would leave;
/// with `apply: true` also the compressed messages.
#[utoipa::path(
    post, path = "/v1/governor", tag = "context",
    request_body = GovernorBody,
    responses(
        (status = 200, description = "Tier, limits, advice", body = GovernorView),
        (status = 400, description = "Neither or both of messages and tokens, bad messages, unknown strategy", body = ErrorBody),
        (status = 429, description = "The namespace's daily budget is spent", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn governor(
    State(state): State<AppState>,
    caller: Caller,
    LimitedJson(body): LimitedJson<GovernorBody>,
) -> Result<Json<GovernorView>, AppError> {
    state.ledger.check_budget(&caller.namespace).await?;
    let apply = body.apply;
    let decision = governor::decide(
        &state.compressor,
        &state.ledger,
        &state.governor,
        &caller.namespace,
        body.question()?,
    )
    .await?;
    Ok(Json(GovernorView::new(decision, apply)))
}

impl GovernorBody {
    /// The question this body asks: messages or a token count, and how to compress.
    fn question(self) -> Result<Question, DomainError> {
        let subject = match (self.messages, self.tokens) {
            (Some(messages), None) => Subject::Messages(Input {
                messages,
                system: self.system,
                format: self.format,
                model: self.model.clone(),
                thread: self.thread,
            }),
            (None, Some(_)) if self.apply => {
                return Err(DomainError::field("apply", "applying needs `messages`"));
            }
            (None, Some(tokens)) => Subject::Tokens(tokens),
            _ => {
                return Err(DomainError::field(
                    "messages",
                    "give either `messages` or `tokens`",
                ));
            }
        };
        Ok(Question {
            subject,
            model: self.model,
            strategy: self.strategy.as_deref().map(Strategy::parse).transpose()?,
            options: options(
                None,
                self.summary_chars,
                None,
                self.preserve_prefix,
                self.leave_tools,
                self.leave_roles,
            )?,
            apply: self.apply,
        })
    }
}

impl GovernorView {
    /// The view of a decision (with the compressed list when `apply`).
    fn new(decision: Decision, apply: bool) -> Self {
        let mut view = Self {
            tokens: decision.tokens,
            method: decision.method,
            tier: decision.tier.name().to_owned(),
            advice: decision.tier.advice(decision.tokens, decision.limits),
            limits: LimitsView {
                warn: decision.limits.warn,
                pointer_only: decision.limits.pointer_only,
                source: decision.limits_from.to_owned(),
            },
            tokens_after_compression: decision.tokens_after_compression,
            messages: None,
            system: None,
            memory_refs: None,
            report: None,
        };
        if !apply {
            return view;
        }
        match (decision.compressed, decision.unchanged) {
            (Some(accounted), _) => {
                let compressed = CompressView::from(accounted);
                view.messages = Some(compressed.messages);
                view.system = compressed.system;
                view.memory_refs = Some(compressed.memory_refs);
                view.report = Some(compressed.report);
            }
            (None, Some((messages, system))) => {
                view.messages = Some(messages);
                view.system = system;
            }
            (None, None) => {}
        }
        view
    }
}
