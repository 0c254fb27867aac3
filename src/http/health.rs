//! Liveness and readiness.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;

/// Liveness answer.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// Always `ok` when the process answers.
    pub status: &'static str,
    /// Server version.
    pub version: &'static str,
}

/// Readiness answer: each backend's state.
#[derive(Serialize, ToSchema)]
pub struct Readiness {
    /// `ready` or `unavailable`.
    pub status: &'static str,
    /// `ok` or the error of the metadata store.
    pub metadata: String,
    /// `ok` or the error of the blob store.
    pub blobs: String,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
    })
}

/// The metadata and blob stores answer.
#[utoipa::path(get, path = "/readyz", tag = "health", responses(
    (status = 200, description = "Every backend answers", body = Readiness),
    (status = 503, description = "A backend does not answer", body = Readiness),
))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Readiness>) {
    let (meta, blobs) = tokio::join!(state.meta.ping(), state.blobs.ping());
    let ready = meta.is_ok() && blobs.is_ok();
    let describe = |r: Result<(), crate::storage::StorageError>| {
        r.map_or_else(|e| e.to_string(), |()| "ok".to_owned())
    };
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(Readiness {
            status: if ready { "ready" } else { "unavailable" },
            metadata: describe(meta),
            blobs: describe(blobs),
        }),
    )
}
