//! `/v1/memories`: put (JSON or raw streamed body), list, get, delete.

use std::convert::Infallible;

use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::filters::{limit, list_query};
use super::state::AppState;
use super::views::{Binary, ListView, MemoryView, PutView};
use crate::domain::memories::ids::IdRef;
use crate::domain::memories::put;
use crate::model::{MemoryFilter, PutFields};

/// A JSON put: the content and its fields (a raw upload gives the fields as query parameters).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutBody {
    /// The content to store (UTF-8 text; send other bytes as a raw body).
    pub content: String,
    /// What the content is: the fields of the query string, which fill those the body leaves out.
    #[serde(flatten)]
    pub fields: PutFields,
}

/// Stores content. `application/json` bodies are a [`PutBody`]; any other
/// content type is the content itself, streamed, with fields as query parameters.
#[utoipa::path(
    post, path = "/v1/memories", tag = "memories", params(PutFields),
    request_body(description = "A JSON `PutBody`, or the raw content with any other content type", content(
        (PutBody = "application/json"),
        (String = "text/plain"),
        (Binary = "application/octet-stream"),
    )),
    responses(
        (status = 201, description = "Stored as a new memory", body = PutView),
        (status = 200, description = "This namespace already had this content (`deduplicated: true`)", body = PutView),
        (status = 400, description = "Bad field or body", body = ErrorBody),
        (status = 413, description = "Content over the upload limit", body = ErrorBody),
        (status = 507, description = "Disk full", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<PutFields>,
    request: Request,
) -> Result<Response, AppError> {
    let ns = &caller.namespace;
    let stored = match media_type(&request) {
        Some(json) if json == "application/json" => {
            let body = read_json(request.into_body(), state.config.max_json_bytes).await?;
            // The query string's fields are checked even where the body's win.
            query.clone().validate()?;
            let fields = body.fields.or(query);
            let content = body.content;
            let content = futures::stream::iter([Ok::<_, Infallible>(Bytes::from(content))]);
            put::put(&state.memories, &state.ledger, ns, fields, content).await?
        }
        media_type => {
            let fields = PutFields {
                mime: query.mime.or(media_type),
                ..query
            };
            let body = request.into_body().into_data_stream();
            put::put(&state.memories, &state.ledger, ns, fields, body).await?
        }
    };
    let status = if stored.deduplicated {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let location = format!("/v1/memories/{}", stored.record.id);
    let view = PutView::new(stored, state.memories.limits());
    Ok((status, [(header::LOCATION, location)], Json(view)).into_response())
}

/// The request's media type, lower case, without parameters.
fn media_type(request: &Request) -> Option<String> {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
}

/// Reads a JSON put body of at most `limit` bytes.
async fn read_json(body: Body, limit: usize) -> Result<PutBody, AppError> {
    let bytes = http_body_util::Limited::new(body, limit)
        .collect()
        .await
        .map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                AppError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    format!("JSON bodies are limited to {limit} bytes: send large content as a raw body (any non-JSON content type) with fields as query parameters"),
                )
                .with("limit", limit)
            } else {
                AppError::new(StatusCode::BAD_REQUEST, "bad_body", format!("could not read the request body: {e}"))
            }
        })?
        .to_bytes();
    super::json_body::parse(&bytes).map_err(|e| {
        let status = if e.is_data() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        AppError::new(status, "invalid_json", format!("invalid JSON body: {e}"))
    })
}

/// The page of a listing (its filter is a [`MemoryFilter`] beside it).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Page size, 1-200 (default 50).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Lists the caller's memories, newest first.
#[utoipa::path(
    get, path = "/v1/memories", tag = "memories", params(MemoryFilter, ListParams),
    responses((status = 200, body = ListView), (status = 400, body = ErrorBody)),
    security(("bearer" = []))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(filter): ApiQuery<MemoryFilter>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<ListView>, AppError> {
    let limit = limit(params.limit, 50, crate::domain::memories::MAX_PAGE)?;
    let query = list_query(filter, caller.namespace, limit)?;
    let (memories, next_cursor) = page(&state, query, params.cursor.as_deref()).await?;
    Ok(Json(ListView {
        memories,
        next_cursor,
    }))
}

/// One page of the memories `query` selects (its `limit` the page size),
/// after `cursor`; with the cursor of the next page, if there is one.
pub(crate) async fn page(
    state: &AppState,
    mut query: crate::storage::meta::ListQuery,
    cursor: Option<&str>,
) -> Result<(Vec<MemoryView>, Option<String>), AppError> {
    let limit = query.limit as usize;
    query.limit += 1;
    query.after = cursor.map(decode_cursor).transpose()?;
    let mut records = state.memories.list(query).await?;
    let next_cursor = if records.len() > limit {
        records.truncate(limit);
        records.last().map(|r| encode_cursor(r.created_at, &r.id))
    } else {
        None
    };
    let limits = state.memories.limits();
    let views = records
        .into_iter()
        .map(|r| MemoryView::new(r, limits))
        .collect();
    Ok((views, next_cursor))
}

fn encode_cursor(created_at: i64, id: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{created_at}:{id}"))
}

fn decode_cursor(cursor: &str) -> Result<(i64, String), AppError> {
    let invalid = || {
        AppError::bad_request("`cursor` is not a cursor this server issued").with("field", "cursor")
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| invalid())?;
    let text = String::from_utf8(raw).map_err(|_| invalid())?;
    let (created, id) = text.split_once(':').ok_or_else(invalid)?;
    Ok((created.parse().map_err(|_| invalid())?, id.to_owned()))
}

/// Metadata and summary of one memory (id or unique prefix of at least 12 hex characters).
#[utoipa::path(
    get, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "Full id or unique prefix (12+ hex characters)")),
    responses(
        (status = 200, body = MemoryView),
        (status = 400, description = "Not an id", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Ambiguous prefix", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<MemoryView>, AppError> {
    let record = state
        .memories
        .get(&caller.namespace, &IdRef::parse(&id)?)
        .await?;
    Ok(Json(MemoryView::new(record, state.memories.limits())))
}

/// Deletes a memory of the caller's namespace; its object is collected later when unused.
#[utoipa::path(
    delete, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "Full id or unique prefix")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, AppError> {
    state
        .memories
        .delete(&caller.namespace, &IdRef::parse(&id)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
