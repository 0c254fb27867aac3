//! `GET /v1/memories/{id}/grep`: `grep -n` inside one memory.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::AppState;
use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::views::GrepView;
use crate::domain::grep::{DEFAULT_MATCHES, GrepQuery};
use crate::domain::ids::IdRef;

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
