//! `GET /v1/memories/{id}/grep`: `grep -n` inside one memory; `GET /v1/grep`:
//! the same across the memories a filter selects.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::filters::list_query;
use super::state::AppState;
use super::views::{AcrossGrepView, GrepView};
use crate::domain::grep::{DEFAULT_MATCHES, GrepQuery};
use crate::domain::grep_across::{AcrossCursor, grep_across};
use crate::domain::ids::IdRef;
use crate::model::MemoryFilter;
use crate::storage::meta::ListQuery;

/// What to look for in the memory.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GrepParams {
    /// A regex (Rust `regex` syntax: linear time, no backreferences), matched against each line.
    pub pattern: String,
    /// Take `pattern` as a literal string.
    #[serde(default)]
    pub fixed: bool,
    /// Match regardless of case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Lines of context before and after each match (0–10, default 0).
    #[serde(default)]
    pub context: u32,
    /// Most matches to return (1–1000, default 100).
    pub max_matches: Option<u32>,
    /// Start after this line (default 0: from the top); pass an answer's `next` to continue.
    #[serde(default)]
    pub after: u64,
}

impl From<GrepParams> for GrepQuery {
    fn from(p: GrepParams) -> Self {
        Self {
            pattern: p.pattern,
            fixed: p.fixed,
            ignore_case: p.ignore_case,
            context: p.context,
            max_matches: p.max_matches.unwrap_or(DEFAULT_MATCHES),
            after: p.after,
        }
    }
}

/// The lines of a memory that match a pattern, with context, paged by `after`/`next`.
#[utoipa::path(
    get, path = "/v1/memories/{id}/grep", tag = "slices",
    params(("id" = String, Path, description = "Full id or unique prefix"), GrepParams),
    responses(
        (status = 200, description = "Matching lines", body = GrepView),
        (status = 400, description = "Bad pattern (or one too big to compile), context or max_matches", body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 500, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn grep(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<GrepParams>,
) -> Result<Json<GrepView>, AppError> {
    let query = GrepQuery::from(params);
    let (id, result) = state
        .memories
        .grep(&caller.namespace, &IdRef::parse(&id)?, &query)
        .await?;
    Ok(Json(GrepView::new(&id, result)))
}

/// What to look for, and how many of the memories a [`MemoryFilter`] beside it selects.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AcrossParams {
    /// A regex (Rust `regex` syntax), matched against each line.
    pub pattern: String,
    /// Take `pattern` as a literal string.
    #[serde(default)]
    pub fixed: bool,
    /// Match regardless of case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Lines of context before and after each match (0–10, default 0).
    #[serde(default)]
    pub context: u32,
    /// Most matches in all (1–1000, default 100).
    pub max_matches: Option<u32>,
    /// Memories to search, newest first (1–200, default 50).
    pub memories: Option<u32>,
    /// `next_cursor` of the previous answer.
    pub cursor: Option<String>,
}

/// The lines that match a pattern in the caller's memories a filter
/// selects, newest first, grouped by memory; one budget of matches and of
/// bytes scanned for the request, `next_cursor` to continue.
#[utoipa::path(
    get, path = "/v1/grep", tag = "search",
    params(AcrossParams, MemoryFilter),
    responses(
        (status = 200, description = "Matching lines by memory", body = AcrossGrepView),
        (status = 400, description = "Bad pattern, option, filter or cursor", body = ErrorBody),
        (status = 404, description = "The cursor's memory is gone", body = ErrorBody),
        (status = 500, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn across(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(filter): ApiQuery<MemoryFilter>,
    ApiQuery(params): ApiQuery<AcrossParams>,
) -> Result<Json<AcrossGrepView>, AppError> {
    let (list, query, cursor) = params.into_parts(filter, caller.namespace)?;
    let budget = state.memories.limits().grep_scan_bytes;
    let answer = grep_across(&state.memories, list, &query, cursor, budget).await?;
    Ok(Json(AcrossGrepView::new(answer)))
}

impl AcrossParams {
    /// The memories to search in `namespace`, the grep, and where to start.
    fn into_parts(
        self,
        filter: MemoryFilter,
        namespace: String,
    ) -> Result<(ListQuery, GrepQuery, Option<AcrossCursor>), AppError> {
        let memories = self.memories.unwrap_or(50);
        if !(1..=200).contains(&memories) {
            return Err(AppError::bad_request("`memories` must be 1-200").with("field", "memories"));
        }
        let cursor = match self.cursor.as_deref() {
            Some(text) => Some(AcrossCursor::decode(text).ok_or_else(|| {
                AppError::bad_request("`cursor` is not a cursor this server issued")
                    .with("field", "cursor")
            })?),
            None => None,
        };
        let query = GrepQuery {
            pattern: self.pattern,
            fixed: self.fixed,
            ignore_case: self.ignore_case,
            context: self.context,
            max_matches: self.max_matches.unwrap_or(DEFAULT_MATCHES),
            after: 0,
        };
        Ok((list_query(filter, namespace, memories)?, query, cursor))
    }
}
