//! `GET /v1/search`: full-text search over the caller's memories.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::ApiQuery;
use super::filters::{limit, list_query};
use super::state::AppState;
use super::views::SearchView;
use crate::domain::DomainError;
use crate::domain::search::{DEFAULT_RESULTS, MAX_RESULTS};
use crate::model::MemoryFilter;

/// The query and its page (its filter is a [`MemoryFilter`] beside it).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Words (all must match), `"a phrase"`, `prefix*`, `typo~` (a word that may be misspelt),
    /// `AND`, `OR`, `a NOT b`, parentheses.
    #[param(min_length = 1)]
    pub q: String,
    /// Results, 1-100 (default 10).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// Wait up to this many milliseconds (at most 10000) until the index
    /// holds everything stored before the search, as Elasticsearch's
    /// `refresh=wait_for`: read your own writes. The answer's `indexed` says
    /// whether it did.
    #[param(maximum = 10_000)]
    pub wait_ms: Option<u64>,
}

/// The longest `wait_ms`.
const MAX_WAIT_MS: u64 = 10_000;

/// Searches the caller's memories: ranked by BM25, with the matching lines.
/// Content is indexed in the background: see `search_index` in `/v1/stats`.
#[utoipa::path(
    get, path = "/v1/search", tag = "search", params(SearchParams, MemoryFilter),
    responses((status = 200, body = SearchView), (status = 400, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(filter): ApiQuery<MemoryFilter>,
    ApiQuery(params): ApiQuery<SearchParams>,
) -> Result<Json<SearchView>, AppError> {
    let wait = params.wait_ms;
    if wait.is_some_and(|ms| ms > MAX_WAIT_MS) {
        return Err(DomainError::field("wait_ms", format!("is at most {MAX_WAIT_MS}")).into());
    }
    let limit = limit(params.limit, DEFAULT_RESULTS, MAX_RESULTS)?;
    let filter = list_query(filter, caller.namespace, limit)?;
    let indexed = match wait {
        Some(ms) => Some(state.search.caught_up(Duration::from_millis(ms)).await),
        None => None,
    };
    let results = state.search.search(&params.q, filter).await?;
    let mut view = SearchView::from(results);
    view.indexed = indexed;
    Ok(Json(view))
}
