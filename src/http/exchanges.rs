//! `GET /v1/exchanges` and `GET /v1/exchanges/{id}`: the exchange ledger —
//! every proxied request of the caller's namespace with its tokens, pieces,
//! rounds, retrievals, billed and counterfactual cost, and (one at a time)
//! the body the model saw.

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::filters::{limit, parse_time};
use super::state::AppState;
use crate::domain::proxying::exchanges::{ExchangeFilter, ExchangeRecord, Figures};

/// Most exchanges on one page.
const MAX_PAGE: u32 = 500;

/// Filters and paging of `GET /v1/exchanges`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ExchangeParams {
    /// Only this thread: the client's `X-Cairn-Thread` or session id, or
    /// Cairn's `c-…` key of a conversation it recognised by its opening.
    pub thread: Option<String>,
    /// Only this model (as the request named it).
    pub model: Option<String>,
    /// Only exchanges at or after this time (RFC 3339 or Unix seconds).
    pub since: Option<String>,
    /// Only exchanges before this time (RFC 3339 or Unix seconds).
    pub until: Option<String>,
    /// Page size, 1-500 (default 50).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// One proxied exchange.
#[derive(Serialize, ToSchema)]
pub struct ExchangeView {
    /// Sortable id (`ex_…`).
    pub id: String,
    /// The conversation it belongs to.
    pub thread: String,
    /// `chat_completions`, `responses` or `messages`.
    pub api: String,
    /// The model the request named.
    pub model: String,
    /// When it arrived (RFC 3339).
    pub at: String,
    /// The HTTP status the client got (0: the client went away first).
    pub status: u16,
    /// What happened: tokens, pieces, rounds, retrievals, costs.
    #[serde(flatten)]
    pub figures: Figures,
}

impl From<ExchangeRecord> for ExchangeView {
    fn from(r: ExchangeRecord) -> Self {
        let at = DateTime::<Utc>::from_timestamp_millis(r.at_ms)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Millis, true);
        Self {
            id: r.id,
            thread: r.thread,
            api: r.api,
            model: r.model,
            at,
            status: r.status,
            figures: r.figures,
        }
    }
}

/// A page of exchanges, newest first.
#[derive(Serialize, ToSchema)]
pub struct ExchangePage {
    /// The exchanges.
    pub exchanges: Vec<ExchangeView>,
    /// Pass as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// One exchange with the body the model saw.
#[derive(Serialize, ToSchema)]
pub struct ExchangeDetailView {
    /// The exchange.
    #[serde(flatten)]
    pub exchange: ExchangeView,
    /// The first round's request body as it went upstream (JSON; a string
    /// when it was not JSON). Null when the thread's earlier exchange it
    /// was stored against has expired.
    #[schema(value_type = Object)]
    pub upstream_body: Option<Value>,
}

/// Lists the namespace's proxied exchanges, newest first: what each request
/// cost against the same request sent untouched, what was taken out and what
/// the model fetched back.
#[utoipa::path(
    get, path = "/v1/exchanges", tag = "exchanges",
    params(ExchangeParams),
    responses(
        (status = 200, description = "A page of exchanges", body = ExchangePage),
        (status = 400, description = "Bad time, limit or cursor", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ExchangeParams>,
) -> Result<Json<ExchangePage>, AppError> {
    let limit = limit(params.limit, 50, MAX_PAGE)?;
    let before = params
        .cursor
        .map(|cursor| {
            if is_id(&cursor) {
                Ok(cursor)
            } else {
                Err(
                    AppError::bad_request("`cursor` is not a cursor this server gave")
                        .with("field", "cursor"),
                )
            }
        })
        .transpose()?;
    let filter = ExchangeFilter {
        thread: params.thread,
        model: params.model,
        since_ms: params
            .since
            .as_deref()
            .map(|t| parse_time("since", t))
            .transpose()?,
        until_ms: params
            .until
            .as_deref()
            .map(|t| parse_time("until", t))
            .transpose()?,
    };
    let mut records = state
        .exchanges
        .list(&caller.namespace, filter, before, limit + 1)
        .await?;
    let next_cursor = if records.len() > limit as usize {
        records.truncate(limit as usize);
        records.last().map(|r| r.id.clone())
    } else {
        None
    };
    Ok(Json(ExchangePage {
        exchanges: records.into_iter().map(ExchangeView::from).collect(),
        next_cursor,
    }))
}

/// One exchange of the namespace, with the request body the model saw
/// (rebuilt byte for byte from the thread's stored deltas).
#[utoipa::path(
    get, path = "/v1/exchanges/{id}", tag = "exchanges",
    params(("id" = String, Path, description = "The exchange's id (`ex_…`)")),
    responses(
        (status = 200, description = "The exchange", body = ExchangeDetailView),
        (status = 404, description = "No such exchange in this namespace", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ExchangeDetailView>, AppError> {
    let not_found = || {
        AppError::new(
            axum::http::StatusCode::NOT_FOUND,
            "not_found",
            format!("no exchange `{id}` in this namespace"),
        )
        .with("id", id.clone())
    };
    if !is_id(&id) {
        return Err(not_found());
    }
    let detail = state
        .exchanges
        .get(&caller.namespace, &id)
        .await?
        .ok_or_else(not_found)?;
    let upstream_body = detail.body.map(|bytes| {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    });
    Ok(Json(ExchangeDetailView {
        exchange: detail.record.into(),
        upstream_body,
    }))
}

/// True for text shaped like an exchange id (`ex_` and hex digits).
fn is_id(text: &str) -> bool {
    text.strip_prefix("ex_").is_some_and(|hex| {
        !hex.is_empty() && hex.len() <= 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
    })
}
