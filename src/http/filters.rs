//! The filter listing-like routes share (list, search, grep across; the
//! fields are [`MemoryFilter`]'s), turned into one storage query, and the
//! page size they take.

use super::error::AppError;
use crate::model::MemoryFilter;
use crate::storage::meta::ListQuery;

/// The query over `namespace` that `filter` selects, `limit` rows at most;
/// a 400 naming the field when a time is not one.
pub fn list_query(
    filter: MemoryFilter,
    namespace: String,
    limit: u32,
) -> Result<ListQuery, AppError> {
    Ok(ListQuery {
        namespace,
        kind: filter.kind.map(|k| k.to_ascii_uppercase()),
        subtype: filter.subtype,
        tag: filter.tag,
        thread: filter.thread,
        checkpoint: filter.checkpoint,
        directory: filter.directory,
        since: filter
            .since
            .as_deref()
            .map(|t| parse_time("since", t))
            .transpose()?,
        until: filter
            .until
            .as_deref()
            .map(|t| parse_time("until", t))
            .transpose()?,
        after: None,
        limit,
    })
}

/// The page size a request asks for (`default` when it gives none), or a
/// 400 naming `limit` when it lies outside 1..=`max`.
pub fn limit(given: Option<u32>, default: u32, max: u32) -> Result<u32, AppError> {
    let limit = given.unwrap_or(default);
    if (1..=max).contains(&limit) {
        Ok(limit)
    } else {
        Err(
            AppError::bad_request(format!("`limit` must be between 1 and {max}"))
                .with("field", "limit"),
        )
    }
}

/// A time given as Unix seconds or RFC 3339, in Unix milliseconds.
pub fn parse_time(field: &'static str, text: &str) -> Result<i64, AppError> {
    if let Ok(seconds) = text.parse::<i64>() {
        return Ok(seconds.saturating_mul(1000));
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            AppError::bad_request(format!(
                "`{field}` must be an RFC 3339 time (2026-01-31T12:00:00Z) or Unix seconds"
            ))
            .with("field", field)
        })
}
