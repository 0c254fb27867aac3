//! `GET /v1/memories/{id}/content`: the whole content streamed, with `Range`,
//! a strong `ETag` (the id) and `If-None-Match`.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::AppState;
use super::auth::Caller;
use super::error::{AppError, ErrorBody};
use super::extract::ApiPath;
use crate::domain::content;
use crate::domain::ids::IdRef;

/// The whole content (or one `Range`), verified frame by frame as it streams.
#[utoipa::path(
    get, path = "/v1/memories/{id}/content", tag = "slices",
    params(
        ("id" = String, Path, description = "Full id or unique prefix"),
        ("Range" = Option<String>, Header, description = "One byte range: `bytes=a-b`, `bytes=a-` or `bytes=-n`"),
        ("If-None-Match" = Option<String>, Header, description = "The ETag (the quoted id) from an earlier answer"),
    ),
    responses(
        (status = 200, description = "The content, in its media type", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "The requested range", content_type = "application/octet-stream", body = Vec<u8>),
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
    let etag = format!("\"{}\"", record.id);
    let etag_value = HeaderValue::from_str(&etag).map_err(|_| AppError::bad_request("bad id"))?;
    if let Some(wanted) = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        && wanted
            .split(',')
            .map(str::trim)
            .any(|t| t == etag || t == "*" || t.strip_prefix("W/") == Some(&etag))
    {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag_value)]).into_response());
    }
    let size = record.bytes;
    let range = match headers.get(header::RANGE).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(spec) => match parse_range(spec, size) {
            RangeSpec::Satisfiable(start, end) => Some((start, end)),
            RangeSpec::Ignore => None,
            RangeSpec::Unsatisfiable => {
                let mut response = AppError::new(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "range_not_satisfiable",
                    format!("the range is outside the content of {size} bytes"),
                )
                .into_response();
                if let Ok(value) = HeaderValue::from_str(&format!("bytes */{size}")) {
                    response.headers_mut().insert(header::CONTENT_RANGE, value);
                }
                return Ok(response);
            }
        },
    };
    let (start, end) = range.unwrap_or((0, size));
    let stream = content::stream(reader, record.id.clone(), start, end, range.is_none()).await?;
    state.memories.metrics().slice(
        if range.is_some() { "range" } else { "content" },
        &record.fields.kind,
    );
    let body = Body::from_stream(stream.map(|piece| {
        piece.map_err(|e| {
            tracing::error!(error = %e, "content stream aborted");
            std::io::Error::other(e.to_string())
        })
    }));
    let mut response = Response::new(body);
    let out = response.headers_mut();
    out.insert(header::ETAG, etag_value);
    out.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    // Stored content is data, never a page of this origin: a memory put as
    // text/html must not run script that could read the API.
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    out.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    out.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&record.fields.mime)
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    if range.is_some() {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        if let Ok(value) = HeaderValue::from_str(&format!("bytes {start}-{}/{size}", end - 1)) {
            response.headers_mut().insert(header::CONTENT_RANGE, value);
        }
    }
    Ok(response)
}

/// What a `Range` header asks for, against content of a given size.
#[derive(Debug, PartialEq, Eq)]
enum RangeSpec {
    /// Bytes `[start, end)`.
    Satisfiable(u64, u64),
    /// Malformed or several ranges: serve the whole content (RFC 9110 allows it).
    Ignore,
    /// Well-formed but outside the content: 416.
    Unsatisfiable,
}

fn parse_range(spec: &str, size: u64) -> RangeSpec {
    let Some(ranges) = spec.trim().strip_prefix("bytes=") else {
        return RangeSpec::Ignore;
    };
    if ranges.contains(',') {
        return RangeSpec::Ignore;
    }
    let Some((first, last)) = ranges.trim().split_once('-') else {
        return RangeSpec::Ignore;
    };
    let (first, last) = (first.trim(), last.trim());
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !digits(first) || !digits(last) {
        return RangeSpec::Ignore;
    }
    match (first.parse::<u64>(), last.parse::<u64>()) {
        (Ok(a), _) if a >= size => RangeSpec::Unsatisfiable,
        (Ok(a), Ok(b)) if b >= a => RangeSpec::Satisfiable(a, b.saturating_add(1).min(size)),
        (Ok(_), Ok(_)) => RangeSpec::Ignore,
        (Ok(a), Err(_)) if last.is_empty() => RangeSpec::Satisfiable(a, size),
        (Err(_), Ok(n)) if first.is_empty() && n > 0 && size > 0 => {
            RangeSpec::Satisfiable(size.saturating_sub(n), size)
        }
        (Err(_), Ok(_)) if first.is_empty() => RangeSpec::Unsatisfiable,
        _ => RangeSpec::Ignore,
    }
}

#[cfg(test)]
mod tests {
    use super::{RangeSpec::*, parse_range};

    #[test]
    fn ranges_follow_rfc_9110() {
        assert_eq!(parse_range("bytes=0-9", 100), Satisfiable(0, 10));
        assert_eq!(parse_range("bytes=90-200", 100), Satisfiable(90, 100));
        assert_eq!(parse_range("bytes=10-", 100), Satisfiable(10, 100));
        assert_eq!(parse_range("bytes=-5", 100), Satisfiable(95, 100));
        assert_eq!(parse_range("bytes=-500", 100), Satisfiable(0, 100));
        assert_eq!(parse_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Ignore);
        assert_eq!(parse_range("items=0-1", 100), Ignore);
        assert_eq!(parse_range("bytes=5-1", 100), Ignore);
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=+5-9", 100), Ignore);
    }
}
