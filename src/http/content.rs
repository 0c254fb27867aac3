//! `GET /v1/memories/{id}/content`: the whole content streamed, with `Range`,
//! a strong `ETag` (the id) and `If-None-Match`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::auth::Caller;
use super::conditional;
use super::error::{AppError, ErrorBody};
use super::extract::ApiPath;
use super::state::AppState;
use super::views::Binary;
use crate::domain::memories::ids::IdRef;
use crate::domain::memories::read::content;

/// The whole content (or one `Range`), verified frame by frame as it streams.
#[utoipa::path(
    get, path = "/v1/memories/{id}/content", tag = "slices",
    params(
        ("id" = String, Path, description = "Full id or unique prefix"),
        ("Range" = Option<String>, Header, description = "One byte range: `bytes=a-b`, `bytes=a-` or `bytes=-n`"),
        ("If-None-Match" = Option<String>, Header, description = "The ETag (the quoted id) from an earlier answer"),
    ),
    responses(
        (status = 200, description = "The content, in the media type it was stored with", content_type = "*/*", body = Binary),
        (status = 206, description = "The requested range, in the media type it was stored with", content_type = "*/*", body = Binary),
        (status = 304, description = "Not modified (content is immutable: same id, same bytes)"),
        (status = 404, body = ErrorBody),
        (status = 416, description = "Range outside the content", body = ErrorBody),
        (status = 500, description = "Integrity error", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let (record, reader) = state
        .memories
        .open(&caller.namespace, &IdRef::parse(&id)?)
        .await?;
    let etag = conditional::etag(&record.id)?;
    if conditional::not_modified(&headers, &etag) {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response());
    }
    let size = record.bytes;
    let range = conditional::range(&headers, size)?;
    let (start, end) = range.unwrap_or((0, size));
    let stream = content::stream(reader, record.id.clone(), start, end, range.is_none()).await?;
    let kind = if range.is_some() { "range" } else { "content" };
    state.memories.metrics().slice(kind, &record.fields.kind);
    let body = Body::from_stream(stream.map(|piece| {
        piece.map_err(|e| {
            tracing::error!(error = %e, "content stream aborted");
            std::io::Error::other(e.to_string())
        })
    }));
    let mut response = Response::new(body);
    conditional::content_headers(
        &mut response,
        etag,
        &record.fields.mime,
        (start, end),
        range.is_some(),
        size,
    );
    Ok(response)
}
