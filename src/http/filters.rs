//! The filters listing-like routes share (list, search): type, subtype, tag,
//! thread, checkpoint, directory and a time window, turned into one query.

use super::error::AppError;
use crate::storage::meta::ListQuery;

/// The filter fields of a request, as given.
#[derive(Default)]
pub struct Filters {
    /// Exact type (matched upper-cased).
    pub kind: Option<String>,
    /// Exact subtype.
    pub subtype: Option<String>,
    /// Memories with this tag.
    pub tag: Option<String>,
    /// Exact thread.
    pub thread: Option<String>,
    /// Exact checkpoint.
    pub checkpoint: Option<String>,
    /// Exact directory.
    pub directory: Option<String>,
    /// Created at or after (RFC 3339 or Unix seconds).
    pub since: Option<String>,
    /// Created before (RFC 3339 or Unix seconds).
    pub until: Option<String>,
}

impl Filters {
    /// The query over `namespace` these filters select, `limit` rows at most.
    pub fn query(self, namespace: String, limit: u32) -> Result<ListQuery, AppError> {
        Ok(ListQuery {
            namespace,
            kind: self.kind.map(|k| k.to_ascii_uppercase()),
            subtype: self.subtype,
            tag: self.tag,
            thread: self.thread,
            checkpoint: self.checkpoint,
            directory: self.directory,
            since: self
                .since
                .as_deref()
                .map(|t| parse_time("since", t))
                .transpose()?,
            until: self
                .until
                .as_deref()
                .map(|t| parse_time("until", t))
                .transpose()?,
            after: None,
            limit,
        })
    }
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
