//! Slices: `/lines`, `/bytes`, `/chunks/{n}` and `/v1/fetch?uri=mem://…`.
//!
//! JSON by default; with `Accept: application/octet-stream` the exact bytes,
//! with the slice's position in `X-Cairn-*` headers.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::state::AppState;
use super::views::SliceView;
use crate::domain::memories::ids::IdRef;
use crate::domain::memories::read::slicing::Slice;
use crate::domain::memories::read::token_slice::{Start, TokenBudget};
use crate::domain::memories::uri::{MemUri, Selector};

/// A line range, 1-based and inclusive.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LineParams {
    /// First line (default 1).
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub start: Option<u64>,
    /// Last line, inclusive (default start + 199; at most 2,000 lines per slice).
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub end: Option<u64>,
    /// Serve the longest run of whole lines from `start` (up to `end`) whose
    /// exact token count fits (at least 16); a longer first line is cut at a
    /// token boundary, `truncated`, and `next` continues inside it.
    #[param(minimum = 16)]
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub max_tokens: Option<u64>,
    /// Count tokens with this model's encoding (default o200k_base; models
    /// without a public tokenizer get a labelled estimate).
    pub model: Option<String>,
}

/// A byte range.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ByteParams {
    /// First byte (default 0).
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub offset: Option<u64>,
    /// Bytes to read (default and maximum: 65,536).
    #[param(maximum = 65_536)]
    pub length: Option<u64>,
}

/// A pointer to resolve.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FetchParams {
    /// `mem://<id>`, `mem://<id>#L<a>-<b>` (URL-encode `#` as `%23`) or `mem://<id>?offset=<n>&len=<n>` (encode `?`/`&`); a `next` pointer may also carry `max_tokens=<n>`.
    pub uri: String,
    /// Serve the longest run of whole lines from the pointer's start whose
    /// exact token count fits (overrides the pointer's own `max_tokens`).
    #[param(minimum = 16)]
    #[serde(default, deserialize_with = "crate::model::int64::option")]
    pub max_tokens: Option<u64>,
    /// Count tokens with this model's encoding (default o200k_base).
    pub model: Option<String>,
}

/// Lines `start..=end` of a memory.
#[utoipa::path(
    get, path = "/v1/memories/{id}/lines", tag = "slices",
    params(("id" = String, Path, description = "Full id or unique prefix"), LineParams),
    responses(
        (status = 200, description = "The slice (JSON, or raw bytes with Accept: application/octet-stream)", body = SliceView),
        (status = 400, description = "Bad range, or over max_slice_lines", body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 500, description = "Integrity error: stored data failed verification", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn lines(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(range): ApiQuery<LineParams>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let id = IdRef::parse(&id)?;
    let memories = &state.memories;
    let slice = match range.max_tokens {
        Some(max_tokens) => {
            let budget = TokenBudget::new(max_tokens, range.model.as_deref())?;
            let start = Start::Line(range.start.unwrap_or(1));
            memories
                .within_tokens(&caller.namespace, &id, start, range.end, &budget)
                .await?
        }
        None => {
            memories
                .lines(&caller.namespace, &id, range.start, range.end)
                .await?
        }
    };
    Ok(respond(slice, true, &headers))
}

/// Bytes `[offset, offset + length)` of a memory.
#[utoipa::path(
    get, path = "/v1/memories/{id}/bytes", tag = "slices",
    params(("id" = String, Path, description = "Full id or unique prefix"), ByteParams),
    responses(
        (status = 200, body = SliceView),
        (status = 400, description = "Bad range, or over max_slice_bytes", body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 500, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn bytes(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(range): ApiQuery<ByteParams>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let slice = state
        .memories
        .bytes(
            &caller.namespace,
            &IdRef::parse(&id)?,
            range.offset.unwrap_or(0),
            range.length,
        )
        .await?;
    Ok(respond(slice, false, &headers))
}

/// Chunk `n` (from 0): about 32 KiB of content, boundaries moved to line starts.
#[utoipa::path(
    get, path = "/v1/memories/{id}/chunks/{n}", tag = "slices",
    params(("id" = String, Path, description = "Full id or unique prefix"), ("n" = u64, Path, description = "Chunk index from 0")),
    responses(
        (status = 200, body = SliceView),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 500, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn chunk(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath((id, n)): ApiPath<(String, u64)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let slice = state
        .memories
        .chunk(&caller.namespace, &IdRef::parse(&id)?, n)
        .await?;
    Ok(respond(slice, false, &headers))
}

/// Resolves a `mem://` pointer to its slice (a bare pointer gives the first lines).
#[utoipa::path(
    get, path = "/v1/fetch", tag = "slices", params(FetchParams),
    responses(
        (status = 200, body = SliceView),
        (status = 400, description = "Not a pointer, or bad range", body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 500, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn fetch(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<FetchParams>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let mut uri = MemUri::parse(&params.uri)?;
    uri.max_tokens = params.max_tokens.or(uri.max_tokens);
    let lines = !matches!(uri.selector, Selector::Bytes { .. });
    let model = params.model.as_deref();
    let slice = state.memories.fetch(&caller.namespace, &uri, model).await?;
    Ok(respond(slice, lines, &headers))
}

fn wants_raw(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/octet-stream"))
}

fn respond(slice: Slice, lines: bool, headers: &HeaderMap) -> Response {
    if !wants_raw(headers) {
        return Json(SliceView::new(slice, lines)).into_response();
    }
    let mut out = HeaderMap::new();
    let numbers = [
        ("x-cairn-start", slice.start),
        ("x-cairn-end", slice.end),
        ("x-cairn-offset", slice.offset),
        ("x-cairn-total-lines", slice.total_lines),
        ("x-cairn-total-bytes", slice.total_bytes),
    ];
    for (name, value) in numbers {
        out.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
    if let Some(tokens) = &slice.tokens {
        out.insert(
            HeaderName::from_static("x-cairn-tokens"),
            HeaderValue::from(tokens.count),
        );
        if let Ok(method) = HeaderValue::from_str(&tokens.method) {
            out.insert(HeaderName::from_static("x-cairn-token-method"), method);
        }
    }
    out.insert(
        HeaderName::from_static("x-cairn-truncated"),
        HeaderValue::from_static(if slice.truncated { "true" } else { "false" }),
    );
    if let Some(next) = slice
        .next
        .as_deref()
        .and_then(|n| HeaderValue::from_str(n).ok())
    {
        out.insert(HeaderName::from_static("x-cairn-next"), next);
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    (out, slice.content).into_response()
}
