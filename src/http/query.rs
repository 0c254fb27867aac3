//! `GET /v1/memories/{id}/query?jq=`: a jq program over a JSON memory.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::state::AppState;
use super::views::QueryView;
use crate::domain::memories::ids::IdRef;

/// The program to run.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct QueryParams {
    /// A jq program (jaq's dialect of jq 1.7, with its standard library), at most 4 KiB.
    #[param(min_length = 1, max_length = 4096)]
    pub jq: String,
}

/// Runs a jq program on a memory's JSON: one document, or JSON lines (each
/// value is an input, as for `jq`). The program runs in a worker process
/// with a CPU, memory and wall-clock limit.
#[utoipa::path(
    get, path = "/v1/memories/{id}/query", tag = "slices",
    params(("id" = String, Path, description = "Full id or unique prefix"), QueryParams),
    responses(
        (status = 200, description = "The program's outputs", body = QueryView),
        (status = 400, description = "The program does not compile (jaq's message)", body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 422, description = "not_json, jq_error (a runtime error), query_too_large or query_limit", body = ErrorBody),
        (status = 500, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn query(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<QueryParams>,
) -> Result<Json<QueryView>, AppError> {
    let (id, result) = state
        .memories
        .query(
            &caller.namespace,
            &IdRef::parse(&id)?,
            &params.jq,
            &state.jq,
        )
        .await?;
    Ok(Json(QueryView::new(&id, result)))
}
