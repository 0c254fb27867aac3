//! Conditional and partial GETs: the strong `ETag` (the id), `If-None-Match`,
//! one `Range` (RFC 9110), and the headers of a whole or partial answer.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use super::error::AppError;

/// The strong ETag of a memory: its quoted id.
pub fn etag(id: &str) -> Result<HeaderValue, AppError> {
    HeaderValue::from_str(&format!("\"{id}\"")).map_err(|_| AppError::bad_request("bad id"))
}

/// True when `If-None-Match` names `etag` (or `*`, or its weak form).
pub fn not_modified(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let etag = etag.to_str().unwrap_or_default();
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|wanted| {
            wanted
                .split(',')
                .map(str::trim)
                .any(|t| t == etag || t == "*" || t.strip_prefix("W/") == Some(etag))
        })
}

/// The byte range `[start, end)` the `Range` header asks for (`None`: the
/// whole content); a range outside `size` bytes is a 416 with `Content-Range`.
pub fn range(headers: &HeaderMap, size: u64) -> Result<Option<(u64, u64)>, AppError> {
    let Some(spec) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    match parse_range(spec, size) {
        RangeSpec::Satisfiable(start, end) => Ok(Some((start, end))),
        RangeSpec::Ignore => Ok(None),
        RangeSpec::Unsatisfiable => {
            let error = AppError::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "range_not_satisfiable",
                format!("the range is outside the content of {size} bytes"),
            );
            Err(match HeaderValue::from_str(&format!("bytes */{size}")) {
                Ok(value) => error.with_header(header::CONTENT_RANGE, value),
                Err(_) => error,
            })
        }
    }
}

/// The headers of a content answer: ETag, ranges, length, media type, the
/// sandboxing of stored content, and 206 with `Content-Range` for a part.
pub fn content_headers(
    response: &mut Response,
    etag: HeaderValue,
    mime: &str,
    (start, end): (u64, u64),
    partial: bool,
    size: u64,
) {
    let out = response.headers_mut();
    out.insert(header::ETAG, etag);
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
        HeaderValue::from_str(mime).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    if partial {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        if let Ok(value) = HeaderValue::from_str(&format!("bytes {start}-{}/{size}", end - 1)) {
            response.headers_mut().insert(header::CONTENT_RANGE, value);
        }
    }
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
