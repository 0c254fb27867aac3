//! Liveness and readiness.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::state::AppState;

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
    /// `ready`, `degraded` (the stores answer, the shared cache does not:
    /// requests still succeed, a little slower) or `unavailable`.
    pub status: &'static str,
    /// `ok` or the error of the metadata store.
    pub metadata: String,
    /// `ok` or the error of the blob store.
    pub blobs: String,
    /// The shared cache (Redis/Dragonfly), when configured: `ok` or
    /// `degraded: <why>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
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
    (status = 200, description = "The stores answer (status `degraded` when only the shared cache does not)", body = Readiness),
    (status = 503, description = "A backend does not answer", body = Readiness),
))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Readiness>) {
    let cache = async {
        let cache = state.cache.as_ref()?;
        Some(match (cache.ping().await, cache.degraded()) {
            (Ok(()), None) => "ok".to_owned(),
            (Err(e), _) => format!("degraded: {e}"),
            (Ok(()), Some(why)) => format!("degraded: {why}"),
        })
    };
    let (meta, blobs, cache) = tokio::join!(state.meta.ping(), state.blobs.ping(), cache);
    let ready = meta.is_ok() && blobs.is_ok();
    let degraded = cache.as_deref().is_some_and(|c| c != "ok");
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
            status: match (ready, degraded) {
                (false, _) => "unavailable",
                (true, true) => "degraded",
                (true, false) => "ready",
            },
            metadata: describe(meta),
            blobs: describe(blobs),
            cache,
        }),
    )
}
