//! `GET /v1/export` and `POST /v1/import`: a namespace as one streamed tar archive, and back.

use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::state::AppState;
use super::views::Binary;
use crate::domain::portable::{ImportReport, Portable};

fn portable(state: &AppState) -> Portable {
    Portable::new(
        state.meta.clone(),
        state.blobs.clone(),
        state.memories.ingest_config().clone(),
        state.memories.object_locks(),
    )
}

/// Streams the caller's namespace as one tar archive: `manifest.json`,
/// `memories.jsonl` (all metadata, one memory per line) and
/// `objects/<sha256>` (each content, decompressed, verified as it is read).
#[utoipa::path(
    get, path = "/v1/export", tag = "portability",
    responses(
        (status = 200, description = "The archive", content_type = "application/x-tar", body = Binary),
        (status = 500, description = "Storage failure", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn export(State(state): State<AppState>, caller: Caller) -> Result<Response, AppError> {
    let stream = portable(&state).export(&caller.namespace).await?;
    let body = Body::from_stream(
        stream.map(|piece| piece.map_err(|e| std::io::Error::other(e.to_string()))),
    );
    let disposition = format!("attachment; filename=\"cairn-{}.tar\"", caller.namespace);
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-tar"),
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// What an import did.
#[derive(Serialize, ToSchema)]
pub struct ImportView {
    /// Memories in the archive.
    pub memories: u64,
    /// Memories restored.
    pub imported: u64,
    /// Memories the namespace had already (left unchanged).
    pub skipped: u64,
    /// Content bytes read from the archive.
    pub bytes: u64,
}

impl From<ImportReport> for ImportView {
    fn from(r: ImportReport) -> Self {
        Self {
            memories: r.memories,
            imported: r.imported,
            skipped: r.skipped,
            bytes: r.bytes,
        }
    }
}

/// Restores an archive made by `GET /v1/export` into the caller's namespace,
/// streamed: every object's SHA-256 is checked against its name, original
/// metadata is kept, content is not redacted again, and memories already
/// present are skipped (importing twice changes nothing).
#[utoipa::path(
    post, path = "/v1/import", tag = "portability",
    request_body(description = "A tar archive from `GET /v1/export`", content_type = "application/x-tar", content = Binary),
    responses(
        (status = 200, description = "Restored", body = ImportView),
        (status = 400, description = "The body could not be read", body = ErrorBody),
        (status = 422, description = "Corrupt or malformed archive; `item` names the entry", body = ErrorBody),
        (status = 507, description = "Disk full", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn import(
    State(state): State<AppState>,
    caller: Caller,
    request: Request,
) -> Result<impl IntoResponse, AppError> {
    let body = request.into_body().into_data_stream();
    let report = portable(&state).import(&caller.namespace, body).await?;
    Ok(Json(ImportView::from(report)))
}
