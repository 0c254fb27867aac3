//! The filter listing-like routes share (list, search, grep across; the
//! fields are [`MemoryFilter`]'s), turned into one storage query, and the
//! page size they take.

use std::sync::LazyLock;

use regex::Regex;

use super::error::AppError;
use crate::model::MemoryFilter;
use crate::model::filter::TIME_PATTERN;
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

/// A time given as Unix seconds or RFC 3339 ([`TIME_PATTERN`], which the
/// OpenAPI document states), in Unix milliseconds.
pub fn parse_time(field: &'static str, text: &str) -> Result<i64, AppError> {
    static DOCUMENTED: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(TIME_PATTERN).ok());
    let documented = DOCUMENTED.as_ref().is_none_or(|r| r.is_match(text));
    if documented && let Ok(seconds) = text.parse::<i64>() {
        return Ok(seconds.saturating_mul(1000));
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .filter(|_| documented)
        .map(|t| t.timestamp_millis())
        .ok_or_else(|| {
            AppError::bad_request(format!(
                "`{field}` must be an RFC 3339 time (2026-01-31T12:00:00Z) or Unix seconds"
            ))
            .with("field", field)
        })
}
