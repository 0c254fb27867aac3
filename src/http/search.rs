//! `GET /v1/search`: full-text search over the caller's memories.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::ApiQuery;
use super::filters::{Filters, limit};
use super::state::AppState;
use super::views::SearchView;
use crate::domain::DomainError;
use crate::domain::search::{DEFAULT_RESULTS, MAX_RESULTS};

/// The query and its filters.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Words (all must match), `"a phrase"`, `prefix*`, `typo~` (a word that may be misspelt),
    /// `AND`, `OR`, `a NOT b`, parentheses.
    pub q: String,
    /// Only this type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kind: Option<String>,
    /// Only this subtype.
    pub subtype: Option<String>,
    /// Only memories with this tag.
    pub tag: Option<String>,
    /// Only this thread.
    pub thread: Option<String>,
    /// Only this checkpoint.
    pub checkpoint: Option<String>,
    /// Only this directory.
    pub directory: Option<String>,
    /// Created at or after (RFC 3339 or Unix seconds).
    pub since: Option<String>,
    /// Created before (RFC 3339 or Unix seconds).
    pub until: Option<String>,
    /// Results, 1-100 (default 10).
    pub limit: Option<u32>,
    /// Wait up to this many milliseconds (at most 10000) until the index
    /// holds everything stored before the search, as Elasticsearch's
    /// `refresh=wait_for`: read your own writes. The answer's `indexed` says
    /// whether it did.
    pub wait_ms: Option<u64>,
}

/// The longest `wait_ms`.
const MAX_WAIT_MS: u64 = 10_000;

/// Searches the caller's memories: ranked by BM25, with the matching lines.
/// Content is indexed in the background: see `search_index` in `/v1/stats`.
#[utoipa::path(
    get, path = "/v1/search", tag = "search", params(SearchParams),
    responses((status = 200, body = SearchView), (status = 400, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<SearchParams>,
) -> Result<Json<SearchView>, AppError> {
    let wait = params.wait_ms;
    if wait.is_some_and(|ms| ms > MAX_WAIT_MS) {
        return Err(DomainError::field("wait_ms", format!("is at most {MAX_WAIT_MS}")).into());
    }
    let (q, given, filters) = params.into_parts();
    let limit = limit(given, DEFAULT_RESULTS, MAX_RESULTS)?;
    let filter = filters.query(caller.namespace, limit)?;
    let indexed = match wait {
        Some(ms) => Some(state.search.caught_up(Duration::from_millis(ms)).await),
        None => None,
    };
    let results = state.search.search(&q, filter).await?;
    let mut view = SearchView::from(results);
    view.indexed = indexed;
    Ok(Json(view))
}

impl SearchParams {
    /// The query, the page size and the filter fields, as given.
    fn into_parts(self) -> (String, Option<u32>, Filters) {
        let filters = Filters {
            kind: self.kind,
            subtype: self.subtype,
            tag: self.tag,
            thread: self.thread,
            checkpoint: self.checkpoint,
            directory: self.directory,
            since: self.since,
            until: self.until,
        };
        (self.q, self.limit, filters)
    }
}
