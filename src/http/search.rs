//! `GET /v1/search`: full-text search over the caller's memories.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::ApiQuery;
use super::filters::Filters;
use crate::domain::ids::MemoryId;
use crate::domain::search::{DEFAULT_RESULTS, MAX_RESULTS, SearchResult};
use crate::domain::slicing::line_uri;

/// The query and its filters.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Words (all must match), `"a phrase"`, `prefix*`, `AND`, `OR`, `a NOT b`, parentheses.
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
}

/// A line of a memory holding the query's terms.
#[derive(Serialize, ToSchema)]
pub struct HitView {
    /// 1-based line number.
    pub line: u64,
    /// The line (cut to 200 characters).
    pub text: String,
    /// Pointer to the line: `mem://<id>#L<n>-<n>`.
    pub uri: String,
}

/// A matching memory.
#[derive(Serialize, ToSchema)]
pub struct SearchResultView {
    /// SHA-256 of the content.
    pub id: String,
    /// Pointer: `mem://<id>`.
    pub uri: String,
    /// Title.
    pub title: Option<String>,
    /// Type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Subtype.
    pub subtype: Option<String>,
    /// Relevance (negated BM25 of the best matching frame; higher is better).
    pub score: f64,
    /// Matching lines (at most 5), in line order.
    pub hits: Vec<HitView>,
    /// `exact`: the query as given matched. `fuzzy`: it matched nothing, and
    /// this result matched the looser retry (any of its words, each as the
    /// prefix of its stem).
    #[serde(rename = "match")]
    #[schema(example = "exact")]
    pub matched: String,
}

impl From<SearchResult> for SearchResultView {
    fn from(r: SearchResult) -> Self {
        let id = MemoryId::from_stored(r.record.id);
        Self {
            uri: format!("mem://{id}"),
            hits: r
                .hits
                .into_iter()
                .map(|h| HitView {
                    uri: line_uri(&id, h.line, h.line),
                    line: h.line,
                    text: h.text,
                })
                .collect(),
            id: id.to_string(),
            title: r.record.fields.title,
            kind: r.record.fields.kind,
            subtype: r.record.fields.subtype,
            score: r.score,
            matched: if r.fuzzy { "fuzzy" } else { "exact" }.to_owned(),
        }
    }
}

/// Search results, best first.
#[derive(Serialize, ToSchema)]
pub struct SearchView {
    /// Matching memories, best first.
    pub results: Vec<SearchResultView>,
}

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
    find(&state, caller.namespace, params).await.map(Json)
}

/// A search in `namespace` (the REST route's, MCP's and the proxy's `memory_search`).
pub(crate) async fn find(
    state: &AppState,
    namespace: String,
    params: SearchParams,
) -> Result<SearchView, AppError> {
    let limit = params.limit.unwrap_or(DEFAULT_RESULTS);
    if !(1..=MAX_RESULTS).contains(&limit) {
        return Err(
            AppError::bad_request("`limit` must be between 1 and 100").with("field", "limit")
        );
    }
    let filter = Filters {
        kind: params.kind,
        subtype: params.subtype,
        tag: params.tag,
        thread: params.thread,
        checkpoint: params.checkpoint,
        directory: params.directory,
        since: params.since,
        until: params.until,
    }
    .query(namespace, limit)?;
    let results = state.search.search(&params.q, filter).await?;
    Ok(SearchView {
        results: results.into_iter().map(Into::into).collect(),
    })
}
