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
use crate::domain::memories::grep::GrepQuery;
use crate::domain::memories::grep::across::{AcrossCursor, grep_across};
use crate::domain::memories::ids::IdRef;
use crate::model::{GrepPattern, MemoryFilter};
use crate::storage::meta::ListQuery;

/// How much of the memory's matches one answer holds, beside a [`GrepPattern`].
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GrepParams {
    /// Most matches to return (1–1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub max_matches: Option<u32>,
    /// Start after this line (default 0: from the top); pass an answer's `next` to continue.
    #[serde(default, deserialize_with = "crate::model::int64::required")]
    pub after: u64,
}

/// The lines of a memory that match a pattern, with context, paged by `after`/`next`.
#[utoipa::path(
    get, path = "/v1/memories/{id}/grep", tag = "slices",
    params(("id" = String, Path, description = "Full id or unique prefix"), GrepPattern, GrepParams),
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
    ApiQuery(what): ApiQuery<GrepPattern>,
    ApiQuery(params): ApiQuery<GrepParams>,
) -> Result<Json<GrepView>, AppError> {
    let query = GrepQuery::new(what, params.max_matches, params.after);
    let (id, result) = state
        .memories
        .grep(&caller.namespace, &IdRef::parse(&id)?, &query)
        .await?;
    Ok(Json(GrepView::new(&id, result)))
}

/// How many matches, and how many of the memories a [`MemoryFilter`]
/// selects, beside a [`GrepPattern`].
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AcrossParams {
    /// Most matches in all (1–1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub max_matches: Option<u32>,
    /// Memories to search, newest first (1–200, default 50).
    #[param(minimum = 1, maximum = 200)]
    pub memories: Option<u32>,
    /// `next_cursor` of the previous answer.
    pub cursor: Option<String>,
}

/// The lines that match a pattern in the caller's memories a filter
/// selects, newest first, grouped by memory; one budget of matches and of
/// bytes scanned for the request, `next_cursor` to continue.
#[utoipa::path(
    get, path = "/v1/grep", tag = "search",
    params(GrepPattern, AcrossParams, MemoryFilter),
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
    ApiQuery(what): ApiQuery<GrepPattern>,
    ApiQuery(filter): ApiQuery<MemoryFilter>,
    ApiQuery(params): ApiQuery<AcrossParams>,
) -> Result<Json<AcrossGrepView>, AppError> {
    let (list, query, cursor) = params.into_parts(what, filter, caller.namespace)?;
    let budget = state.memories.limits().grep_scan_bytes;
    let answer = grep_across(&state.memories, list, &query, cursor, budget).await?;
    Ok(Json(AcrossGrepView::new(answer)))
}

impl AcrossParams {
    /// The memories to search in `namespace`, the grep, and where to start.
    fn into_parts(
        self,
        what: GrepPattern,
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
        let query = GrepQuery::new(what, self.max_matches, 0);
        Ok((list_query(filter, namespace, memories)?, query, cursor))
    }
}
