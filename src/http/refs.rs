//! `GET /v1/refs`: lightweight references to the memories of a thread, checkpoint or directory.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::ApiQuery;
use super::filters::limit;
use super::state::AppState;
use super::views::rfc3339;
use crate::domain::search::MAX_REFS;
use crate::storage::meta::{ListQuery, MemoryRecord};

/// Which link to follow: exactly one of `thread`, `checkpoint`, `directory`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RefsParams {
    /// Memories of this thread.
    pub thread: Option<String>,
    /// Memories of this checkpoint.
    pub checkpoint: Option<String>,
    /// Memories of this directory.
    pub directory: Option<String>,
    /// Refs, 1-200 (default 50).
    pub limit: Option<u32>,
}

/// A reference to a memory: enough to decide whether to fetch it.
#[derive(Serialize, ToSchema)]
pub struct RefView {
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
    /// Tokens of the content.
    pub tokens: u64,
    /// First line of the summary.
    pub summary_line: String,
    /// Creation time (RFC 3339).
    pub created_at: String,
}

impl From<MemoryRecord> for RefView {
    fn from(r: MemoryRecord) -> Self {
        Self {
            uri: format!("mem://{}", r.id),
            summary_line: r.summary.lines().next().unwrap_or_default().to_owned(),
            id: r.id,
            title: r.fields.title,
            kind: r.fields.kind,
            subtype: r.fields.subtype,
            tokens: r.tokens,
            created_at: rfc3339(r.created_at),
        }
    }
}

/// Refs, newest first.
#[derive(Serialize, ToSchema)]
pub struct RefsView {
    /// Newest first.
    pub refs: Vec<RefView>,
}

/// The newest memories linked to one thread, checkpoint or directory, as lightweight refs.
#[utoipa::path(
    get, path = "/v1/refs", tag = "search", params(RefsParams),
    responses((status = 200, body = RefsView), (status = 400, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<RefsParams>,
) -> Result<Json<RefsView>, AppError> {
    let given = [&params.thread, &params.checkpoint, &params.directory]
        .iter()
        .filter(|p| p.is_some())
        .count();
    if given != 1 {
        return Err(AppError::bad_request(
            "give exactly one of `thread`, `checkpoint` or `directory`",
        )
        .with("field", "thread"));
    }
    let limit = limit(params.limit, 50, MAX_REFS)?;
    let filter = ListQuery {
        namespace: caller.namespace,
        thread: params.thread,
        checkpoint: params.checkpoint,
        directory: params.directory,
        limit,
        ..ListQuery::default()
    };
    let records = state.search.refs(filter).await?;
    Ok(Json(RefsView {
        refs: records.into_iter().map(Into::into).collect(),
    }))
}
