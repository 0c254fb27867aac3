//! `POST /v1/usage`: provider-reported usage → cost, today's spend, budget, calibration.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::json_body::LimitedJson;
use super::state::AppState;
use super::views::{BudgetView, CalibrationView};
use crate::domain::DomainError;
use crate::domain::ledger::budget::round_usd;
use crate::domain::ledger::pricing::Price;
use crate::domain::ledger::{MAX_REPORT_TOKENS, UsageReport};

/// Usage as the provider reported it for one call.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageBody {
    /// The model that served the call (`gpt-4o-2024-08-06`, `claude-sonnet-4-5`, `openai/gpt-4.1`).
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^/\\s\\u0000-\\u001F\\u007F-\\u009F][ \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub model: String,
    /// Input (prompt) tokens the provider billed.
    #[schema(value_type = u64, minimum = 0, maximum = 100_000_000)]
    pub input_tokens: Number,
    /// Output (completion) tokens the provider billed.
    #[schema(value_type = u64, minimum = 0, maximum = 100_000_000)]
    pub output_tokens: Number,
    /// What Cairn (`/v1/tokens`, the governor) estimated for the same input; when
    /// given, the namespace learns a calibration factor for the model.
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 100_000_000)]
    pub estimated_input_tokens: Option<Number>,
    /// Of the input tokens, those read from the provider's prompt cache
    /// (priced at the cache-read rate).
    #[schema(value_type = Option<u64>, minimum = 0, maximum = 100_000_000)]
    pub cache_read_tokens: Option<Number>,
    /// Of the input tokens, those written to the provider's prompt cache
    /// (priced at the cache-write rate).
    #[schema(value_type = Option<u64>, minimum = 0, maximum = 100_000_000)]
    pub cache_write_tokens: Option<Number>,
}

/// A price per million tokens.
#[derive(Serialize, ToSchema)]
pub struct PriceView {
    /// The price-table entry used (a model-name prefix; the longest match wins).
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
    /// True when the model is not in the table and the default model's price was used.
    pub fallback: bool,
}

impl From<Price> for PriceView {
    fn from(price: Price) -> Self {
        Self {
            entry: price.entry,
            input_per_mtok: price.input_per_mtok,
            output_per_mtok: price.output_per_mtok,
            cache_read_per_mtok: price.cache_read_per_mtok,
            cache_write_per_mtok: price.cache_write_per_mtok,
            cache_write_1h_per_mtok: price.cache_write_1h_per_mtok,
            fallback: price.fallback,
        }
    }
}

/// A namespace's spend today (UTC).
#[derive(Serialize, ToSchema)]
pub struct TodayView {
    /// Input plus output tokens reported today.
    pub tokens: u64,
    /// Their cost, USD.
    pub cost_usd: f64,
}

/// What a usage report was recorded as.
#[derive(Serialize, ToSchema)]
pub struct UsageView {
    /// The model, normalized (lowercase, provider path removed).
    pub model: String,
    /// Cost of this call, USD: uncached input × input price + cache reads ×
    /// cache-read price + cache writes × cache-write price + output × output
    /// price, per million.
    pub cost_usd: f64,
    /// The price used.
    pub price: PriceView,
    /// The namespace's spend today, this call included.
    pub today: TodayView,
    /// The namespace's daily budget.
    pub budget: BudgetView,
    /// The model's calibration in this namespace.
    pub calibration: CalibrationView,
}

/// Records actual usage reported by a provider, for cost tracking, budgets and
/// calibration of estimates. Once the namespace's daily budget is spent the
/// report is still recorded, and answered 429 `budget_exceeded` with `Retry-After`.
#[utoipa::path(
    post, path = "/v1/usage", tag = "usage",
    request_body = UsageBody,
    responses(
        (status = 200, description = "Recorded", body = UsageView),
        (status = 400, description = "Negative, fractional or absurd counts; bad model name", body = ErrorBody),
        (status = 422, description = "Missing field or wrong JSON type", body = ErrorBody),
        (status = 429, description = "Recorded, and the daily budget is spent: `budget_exceeded` with `budget`, `limit`, `spent`, `resets_at`; `Retry-After` header", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn post(
    State(state): State<AppState>,
    caller: Caller,
    LimitedJson(body): LimitedJson<UsageBody>,
) -> Result<Json<UsageView>, AppError> {
    // The name as written is held to what the document states (the domain
    // checks the name it keeps: the part after the last `/`).
    if body.model.chars().count() > 128 || body.model.chars().any(char::is_control) {
        return Err(DomainError::field(
            "model",
            "must name a model in 1-128 characters, without control characters",
        )
        .into());
    }
    let report = UsageReport::parse(
        &body.model,
        whole("input_tokens", &body.input_tokens)?,
        whole("output_tokens", &body.output_tokens)?,
        body.estimated_input_tokens
            .as_ref()
            .map(|n| whole("estimated_input_tokens", n))
            .transpose()?,
    )?;
    let cached = |field: &'static str, n: Option<&Number>| {
        n.map_or(Ok(0), |n| {
            let n = whole(field, n)?;
            u64::try_from(n)
                .ok()
                .filter(|_| n <= MAX_REPORT_TOKENS)
                .ok_or_else(|| {
                    DomainError::field(
                        field,
                        format!(
                            "must be a whole number between 0 and {MAX_REPORT_TOKENS}, got {n}"
                        ),
                    )
                })
        })
    };
    let report = report.with_cache(
        cached("cache_read_tokens", body.cache_read_tokens.as_ref())?,
        cached("cache_write_tokens", body.cache_write_tokens.as_ref())?,
    );
    let recorded = state
        .ledger
        .record_usage(&caller.namespace, &report)
        .await?;
    Ok(Json(UsageView {
        model: recorded.model,
        cost_usd: round_usd(recorded.cost_usd),
        price: recorded.price.into(),
        today: TodayView {
            tokens: recorded.today.tokens,
            cost_usd: round_usd(recorded.today.cost_usd),
        },
        budget: BudgetView::new(recorded.limits, recorded.today, recorded.resets_at),
        calibration: recorded.calibration.unwrap_or_default().into(),
    }))
}

/// A JSON number that must be a whole number in i64 range (others are 400, not 422).
fn whole(field: &'static str, number: &Number) -> Result<i64, DomainError> {
    // A whole number written with a fraction (`2.0`) is one (as JSON Schema counts it).
    let integral = || {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    };
    number.as_i64().or_else(integral).ok_or_else(|| {
        DomainError::field(
            field,
            format!("must be a whole number between 0 and {MAX_REPORT_TOKENS}, got {number}"),
        )
    })
}
