//! `GET /v1/stats`: the caller's namespace totals, savings and usage.

use axum::Json;
use axum::extract::State;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::state::AppState;
use super::views::StatsView;

/// Totals of the caller's namespace: memories, bytes in and stored, compression
/// and dedup ratios, tokens and cost saved, governor decisions, usage, budget,
/// calibration.
#[utoipa::path(
    get, path = "/v1/stats", tag = "usage",
    responses((status = 200, body = StatsView), (status = 503, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<StatsView>, AppError> {
    let stats = state.ledger.stats(&caller.namespace).await?;
    let lag = state.search.lag().await?;
    Ok(Json(StatsView::new(caller.namespace, stats, lag)))
}
